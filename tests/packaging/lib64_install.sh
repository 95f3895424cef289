#!/usr/bin/env bash
# An install with CMAKE_INSTALL_LIBDIR=lib64 (RHEL's layout) records and analyzes:
#
#   tests/packaging/lib64_install.sh BUILD_DIR
#
# configures BUILD_DIR with lib64, builds the command, the shim and the storm example, installs
# into a temporary prefix and runs that install's cuprobe: the shim must be found in lib64/cuprobe
# (and nowhere else), the rules in share/cuprobe/rules, and the example's storm found.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:?usage: lib64_install.sh BUILD_DIR}"
fail() { echo "lib64_install: FAIL: $*" >&2; exit 1; }
# Unoptimized, without debug information: a layout test, built in a third of the normal time.
"$root/scripts/build.sh" "$build" -DCMAKE_INSTALL_LIBDIR=lib64 -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
  -DCMAKE_C_FLAGS_DEBUG=-O0 -DCUPROBE_BUILD_TESTS=OFF -DCUPROBE_BUILD_BENCH=OFF \
  -DCUPROBE_BUILD_EXAMPLES=ON --target cuprobe cuprobe_shim simulated_storm
work="$(mktemp -d "${TMPDIR:-/tmp}/cuprobe-lib64.XXXXXX")"
trap 'rm -rf "$work"' EXIT
unset CUPROBE_RULES CUPROBE_SHIM CUPROBE_OUT LD_PRELOAD
cmake --install "$build" --prefix "$work/prefix" >/dev/null
[ -f "$work/prefix/lib64/cuprobe/libcuprobe.so" ] || fail "no lib64/cuprobe/libcuprobe.so in the install"
[ ! -e "$work/prefix/lib/cuprobe" ] || fail "the install also has lib/cuprobe"
[ "$("$work/prefix/bin/cuprobe" --shim-path)" = "$work/prefix/lib64/cuprobe/libcuprobe.so" ] ||
  fail "the installed cuprobe looks for its shim at $("$work/prefix/bin/cuprobe" --shim-path)"
"$work/prefix/bin/cuprobe" record -o "$work/run" -- "$build/examples/simulated_storm" --benchmark --bwd --shapes 12 \
  --steps 20 >/dev/null
rc=0
"$work/prefix/bin/cuprobe" analyze "$work/run" >"$work/analysis.txt" || rc=$?
[ "$rc" -eq 1 ] && grep -q research-storm "$work/analysis.txt" || { cat "$work/analysis.txt"; fail "no storm found (exit $rc)"; }
echo "lib64_install: a lib64 install records and analyzes (shim in lib64/cuprobe)"
