"""Platform-specific parts of the cuprobe wheel that pyproject.toml cannot say.

The package carries native programs (the `cuprobe` command, libcuprobe.so) but no Python
extension, so setuptools would call it pure; the tag says what the programs need instead:
py3-none-<platform>, with the platform given by scripts/package.sh (CUPROBE_WHEEL_PLATFORM,
e.g. manylinux_2_28_x86_64), which checks that every ELF inside needs no newer glibc
(tests/packaging/check_elf.py).
"""
import os

from setuptools import setup
from setuptools.dist import Distribution

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70: the wheel package's
    from wheel.bdist_wheel import bdist_wheel


def required(name):
    value = os.environ.get(name)
    if not value:
        raise SystemExit(f"{name} is not set: build the wheel with scripts/package.sh")
    return value


class PlatformWheel(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        return "py3", "none", required("CUPROBE_WHEEL_PLATFORM")


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(version=required("CUPROBE_VERSION"), cmdclass={"bdist_wheel": PlatformWheel}, distclass=BinaryDistribution)
