"""Where the wheel keeps the `cuprobe` command, the shim and the rules.

The package holds an install prefix of its own (cuprobe/_prefix/), laid out by `cmake --install`
as a .deb or a tarball is, so the command finds the shim and the rules beside itself exactly as
there. The paths from the command to the shim and the rules are the build's own (the top-level
CMakeLists.txt decides them); scripts/package.sh writes them into _layout.py.
"""
import os

from . import _layout

_PREFIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_prefix")
_BIN = os.path.join(_PREFIX, "bin")


def executable():
    """Path of the bundled `cuprobe` command."""
    path = os.path.join(_BIN, "cuprobe")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"the cuprobe command is missing from this installation ({path}); reinstall the wheel")
    if not os.access(path, os.X_OK):
        # An installer that dropped the executable bit (pip keeps it; some unzip-based ones do not).
        try:
            os.chmod(path, 0o755)
        except OSError as e:
            raise PermissionError(f"{path} is not executable and cannot be made so ({e}); reinstall the wheel") from e
    return path


def shim_path():
    """Path of libcuprobe.so, for LD_PRELOAD under launchers `cuprobe record` cannot wrap."""
    return os.path.normpath(os.path.join(_BIN, _layout.SHIM_FROM_BIN, "libcuprobe.so"))


def rules_dir():
    """Directory of the analyzer's rule files."""
    return os.path.normpath(os.path.join(_BIN, _layout.RULES_FROM_BIN))
