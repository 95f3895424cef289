#!/usr/bin/env python3
"""Checks that shipped ELF files load on the oldest glibc cuprobe promises.

Usage: check_elf.py [--glibc 2.28] PATH...

Each PATH is an ELF file, a directory (searched recursively), a wheel (.whl), a .deb or a
.tar.gz. Every ELF found is read with `objdump -p -T` and the check fails (exit 1) when one

  - needs a GLIBC_ symbol version newer than --glibc (for a wheel: the glibc of its
    manylinux_X_Y platform tag, which must then be no newer than --glibc either);
  - needs a GLIBCXX_, CXXABI_ or GCC_ version newer than the manylinux policy of that glibc
    allows (PEP 600; cuprobe links its C++ runtime statically, so none are expected);
  - names a shared library (NEEDED) outside the manylinux policy's list.

It prints one line per ELF: its path, the newest version of each kind it needs, its libraries.
"""
import argparse
import io
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile

# The libraries every manylinux policy allows (PEP 599/600), and the newest C++ runtime
# versions the manylinux_2_28 policy allows (auditwheel's policy table).
ALLOWED_LIBS = {
    "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libgcc_s.so.1",
    "libstdc++.so.6", "libutil.so.1", "libcrypt.so.1", "libnsl.so.1", "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
}
CXX_LIMITS = {"GLIBCXX": (3, 4, 25), "CXXABI": (1, 3, 11), "GCC": (7, 0, 0)}


def version_tuple(text):
    return tuple(int(x) for x in text.split("."))


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def extract(path, into):
    """Unpacks a wheel, .deb or tarball into `into`; returns the wheel's glibc tag or None."""
    if path.endswith(".whl"):
        with zipfile.ZipFile(path) as z:
            z.extractall(into)
        m = re.search(r"manylinux_(\d+)_(\d+)_", os.path.basename(path))
        if not m:
            sys.exit(f"check_elf: {path}: no manylinux_X_Y platform tag in the file name")
        return (int(m.group(1)), int(m.group(2)))
    if path.endswith(".deb"):
        subprocess.run(["dpkg-deb", "-x", path, into], check=True)
        return None
    if path.endswith((".tar.gz", ".tgz")):
        with tarfile.open(path) as t:
            t.extractall(into, filter="data") if hasattr(tarfile, "data_filter") else t.extractall(into)
        return None
    sys.exit(f"check_elf: {path}: not an ELF file, directory, wheel, .deb or .tar.gz")


def elf_files(root):
    if os.path.isfile(root):
        return [root] if is_elf(root) else []
    found = []
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            if not os.path.islink(p) and is_elf(p):
                found.append(p)
    return sorted(found)


def needs(path):
    out = subprocess.run(["objdump", "-p", "-T", path], capture_output=True, text=True, check=True).stdout
    versions = {}
    for kind, ver in re.findall(r"\b(GLIBC|GLIBCXX|CXXABI|GCC)_(\d+(?:\.\d+)*)\b", out):
        v = version_tuple(ver)
        versions[kind] = max(versions.get(kind, v), v)
    libs = re.findall(r"^\s*NEEDED\s+(\S+)", out, re.M)
    return versions, libs


def check(path, shown, glibc):
    versions, libs = needs(path)
    problems = []
    if "GLIBC" in versions and versions["GLIBC"] > glibc:
        problems.append(f"needs GLIBC_{'.'.join(map(str, versions['GLIBC']))}, newer than {'.'.join(map(str, glibc))}")
    for kind, limit in CXX_LIMITS.items():
        if kind in versions and versions[kind] > limit:
            problems.append(f"needs {kind}_{'.'.join(map(str, versions[kind]))}, newer than the policy's "
                            f"{'.'.join(map(str, limit))}")
    for lib in libs:
        if lib not in ALLOWED_LIBS:
            problems.append(f"needs {lib}, which a manylinux system need not have")
    summary = ", ".join(f"{k}_{'.'.join(map(str, v))}" for k, v in sorted(versions.items())) or "no symbol versions"
    print(f"{shown}: {summary}; libraries: {', '.join(libs) or 'none (static)'}")
    for p in problems:
        print(f"  FAIL: {p}")
    return not problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--glibc", default="2.28", help="the oldest glibc promised (default 2.28)")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    promised = version_tuple(a.glibc)
    ok = True
    count = 0
    for path in a.paths:
        glibc = promised
        with tempfile.TemporaryDirectory() as tmp:
            root = path
            if os.path.isfile(path) and not is_elf(path):
                tag = extract(path, tmp)
                root = tmp
                if tag is not None:
                    if tag > promised:
                        print(f"{path}: FAIL: tagged for glibc {tag[0]}.{tag[1]}, newer than {a.glibc}")
                        ok = False
                    glibc = min(tag, promised)
            files = elf_files(root)
            if not files:
                print(f"{path}: FAIL: no ELF file in it")
                ok = False
            for f in files:
                shown = path if f == path else os.path.join(path, os.path.relpath(f, root))
                ok = check(f, shown, glibc) and ok
                count += 1
    print(f"check_elf: {count} ELF files, {'all load on glibc ' + a.glibc if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
