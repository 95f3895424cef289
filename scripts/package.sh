#!/usr/bin/env bash
# Builds cuprobe's packages, offline, from this checkout:
#
#   scripts/package.sh OUTDIR [--build-dir DIR [--no-build]]
#
# writes into OUTDIR
#   cuprobe-VERSION-py3-none-manylinux_2_28_ARCH.whl   pip install it: `cuprobe` on PATH, `python -m cuprobe`,
#                                                      `import cuprobe` (python/cuprobe/__init__.py)
#   cuprobe_VERSION_DEBARCH.deb                        /usr/bin/cuprobe, /usr/lib/cuprobe/libcuprobe.so,
#                                                      /usr/share/cuprobe/rules
#   cuprobe-dbgsym_VERSION_DEBARCH.deb                 their debug information (/usr/lib/debug/.build-id)
#   cuprobe-VERSION-linux-ARCH.tar.gz                  relocatable: unpack anywhere, run bin/cuprobe
#   cuprobe-VERSION-linux-ARCH-debug.tar.gz            lib/debug/.build-id of the same binaries
#
# Without --build-dir it configures build-package/ (no tests, no benchmarks) and builds the two
# binaries; with it, it brings the two binaries of that build directory up to date and installs
# from it; with --no-build as well, it installs what the directory holds as it is (the test command
# packages the build it tested: rebuilding it would relink binaries other tests are running).
# Every ELF is checked to need nothing newer than glibc 2.28
# (tests/packaging/check_elf.py) before the packages are written. Needs cmake, ninja, g++, binutils,
# dpkg-deb and a python3 with the build, setuptools and wheel modules (Debian: python3-build,
# python3-setuptools, python3-wheel; scripts/deps.sh --package installs what is missing).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
glibc=2.28

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
out="" build="" no_build=0
while (($#)); do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --build-dir) [ $# -ge 2 ] || { echo "package.sh: --build-dir needs a directory" >&2; exit 2; }; build="$2"; shift 2 ;;
    --build-dir=*) build="${1#*=}"; shift ;;
    --no-build) no_build=1; shift ;;
    -*) echo "package.sh: unknown option '$1'; see scripts/package.sh --help" >&2; exit 2 ;;
    *) [ -z "$out" ] || { echo "package.sh: one OUTDIR only ('$out', then '$1')" >&2; exit 2; }; out="$1"; shift ;;
  esac
done
[ -n "$out" ] || { usage >&2; exit 2; }
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# A python3 that can build wheels offline: Debian's own first (where apt-get put the modules).
python=""
for p in /usr/bin/python3 python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import build, setuptools, wheel' 2>/dev/null; then python="$p"; break; fi
done
if [ -z "$python" ] || ! command -v dpkg-deb >/dev/null || ! command -v objdump >/dev/null; then
  "$root/scripts/deps.sh" --package
  python=/usr/bin/python3
fi

if [ -z "$build" ]; then
  build="$root/build-package"
  "$root/scripts/build.sh" "$build" -DCUPROBE_BUILD_TESTS=OFF -DCUPROBE_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    --target cuprobe cuprobe_shim
fi
[ -f "$build/CMakeCache.txt" ] || { echo "package.sh: $build is not a configured build directory" >&2; exit 2; }
if [ "$no_build" = 1 ]; then
  [ -x "$build/bin/cuprobe" ] || { echo "package.sh: --no-build, and $build has no bin/cuprobe: build it first" >&2; exit 2; }
else
  cmake --build "$build" --target cuprobe cuprobe_shim >/dev/null
fi

version="$(sed -n 's/^#define CUPROBE_VERSION "\(.*\)"/\1/p' "$build/analyzer/version.h")"
arch="$(uname -m)"
debarch="$(dpkg --print-architecture 2>/dev/null || echo "$arch")"
work="$(mktemp -d "${TMPDIR:-/tmp}/cuprobe-package.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# One staged install (prefix-relative layout, binaries stripped, debug information under lib/debug).
stage="$work/stage"
cmake --install "$build" --prefix "$stage" >/dev/null
[ -x "$stage/bin/cuprobe" ] || { echo "package.sh: the install has no bin/cuprobe" >&2; exit 1; }
shim="$("$stage/bin/cuprobe" --shim-path)"
case "$shim" in "$stage"/*) ;; *) echo "package.sh: the installed cuprobe looks for its shim outside the install: $shim" >&2; exit 1 ;; esac
[ -f "$shim" ] || { echo "package.sh: the installed cuprobe looks for its shim at $shim, which the install lacks" >&2; exit 1; }
debug="$work/debug"
mkdir -p "$debug/lib"
mv "$stage/lib/debug" "$debug/lib/debug"
rmdir "$stage/lib" 2>/dev/null || true
"$python" "$root/tests/packaging/check_elf.py" --glibc "$glibc" "$stage"
# The newest glibc symbol version any shipped ELF needs: the .deb's dependency says exactly that.
needs_glibc="$(objdump -T "$stage"/bin/cuprobe "$shim" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)"
needs_glibc="${needs_glibc:-2.2.5}"

# Relocatable tarball.
tarname="cuprobe-$version-linux-$arch"
cp -a "$stage" "$work/$tarname"
tar -C "$work" --owner=0 --group=0 -czf "$out/$tarname.tar.gz" "$tarname"
cp -a "$debug" "$work/$tarname-debug"
tar -C "$work" --owner=0 --group=0 -czf "$out/$tarname-debug.tar.gz" "$tarname-debug"

# Debian packages: the same files under /usr, the debug information in a -dbgsym package.
deb="$work/deb"
mkdir -p "$deb/DEBIAN" "$deb/usr"
cp -a "$stage/." "$deb/usr/"
mkdir -p "$deb/usr/share/doc/cuprobe"
cp "$root/README.md" "$deb/usr/share/doc/cuprobe/README.md"
cat >"$deb/DEBIAN/control" <<EOF
Package: cuprobe
Version: $version
Architecture: $debarch
Maintainer: cuprobe developers <cuprobe@localhost>
Depends: libc6 (>= $needs_glibc)
Section: devel
Priority: optional
Installed-Size: $(du -sk "$deb/usr" | cut -f1)
Homepage: https://github.com/cuprobe/cuprobe
Description: trace and explain CUDA, cuDNN and NCCL calls of unmodified GPU jobs
 cuprobe attaches to GPU jobs (PyTorch training and inference first of all) through
 LD_PRELOAD and records cuDNN problems, plans, workspaces and benchmark searches, device
 memory with its owners, synchronizations and errors; \`cuprobe analyze\` explains re-search
 storms, workspace blowups, plans diverging across ranks and out-of-memory failures.
EOF
dpkg-deb --root-owner-group -Zgzip --build "$deb" "$out/cuprobe_${version}_${debarch}.deb" >/dev/null
dbg="$work/dbg"
mkdir -p "$dbg/DEBIAN" "$dbg/usr"
cp -a "$debug/." "$dbg/usr/"
cat >"$dbg/DEBIAN/control" <<EOF
Package: cuprobe-dbgsym
Version: $version
Architecture: $debarch
Maintainer: cuprobe developers <cuprobe@localhost>
Depends: cuprobe (= $version)
Section: debug
Priority: optional
Installed-Size: $(du -sk "$dbg/usr" | cut -f1)
Description: debug symbols for cuprobe
 Debug information of /usr/bin/cuprobe and libcuprobe.so, by GNU build id.
EOF
dpkg-deb --root-owner-group -Zgzip --build "$dbg" "$out/cuprobe-dbgsym_${version}_${debarch}.deb" >/dev/null

# The wheel: the python/ package with the staged install inside it as cuprobe/_prefix.
wheelsrc="$work/wheel"
cp -a "$root/python" "$wheelsrc"
rm -rf "$wheelsrc/cuprobe/_prefix" "$wheelsrc/build" "$wheelsrc"/*.egg-info
cp -a "$stage" "$wheelsrc/cuprobe/_prefix"
cp "$root/README.md" "$wheelsrc/README.md"
bindir="$stage/bin"
"$python" - "$wheelsrc/cuprobe/_layout.py" "$bindir" "$shim" "$stage" <<'EOF'
import os, sys
target, bindir, shim, stage = sys.argv[1:]
rules = os.path.join(stage, "share", "cuprobe", "rules")
with open(target, "w") as f:
    f.write('"""Generated by scripts/package.sh: where the shim and the rules are, relative to bin/."""\n')
    f.write(f"SHIM_FROM_BIN = {os.path.relpath(os.path.dirname(shim), bindir)!r}\n")
    f.write(f"RULES_FROM_BIN = {os.path.relpath(rules, bindir)!r}\n")
EOF
rm -f "$out"/cuprobe-*.whl
(cd "$wheelsrc" && CUPROBE_VERSION="$version" CUPROBE_WHEEL_PLATFORM="manylinux_${glibc/./_}_$arch" \
  "$python" -m build --wheel --no-isolation --outdir "$out" . >"$work/wheel.log" 2>&1) ||
  { cat "$work/wheel.log" >&2; echo "package.sh: building the wheel failed" >&2; exit 1; }

"$python" "$root/tests/packaging/check_elf.py" --glibc "$glibc" "$out"/cuprobe-*.whl "$out/cuprobe_${version}_${debarch}.deb" \
  "$out/$tarname.tar.gz" >/dev/null
echo "cuprobe $version packages in $out (every ELF needs glibc $needs_glibc at most):"
(cd "$out" && ls -l cuprobe-*.whl "cuprobe_${version}_${debarch}.deb" "cuprobe-dbgsym_${version}_${debarch}.deb" \
  "$tarname.tar.gz" "$tarname-debug.tar.gz" | awk '{printf "  %-60s %8.1f MB\n", $NF, $5/1048576}')
