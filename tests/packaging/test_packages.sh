#!/usr/bin/env bash
# The packages of a build, installed and used as a user would (ctest: Packages):
#
#   tests/packaging/test_packages.sh BUILD_DIR
#
# scripts/package.sh packages BUILD_DIR; then
#   - the wheel goes into a fresh venv with `pip install --no-index`, and `cuprobe record`,
#     `analyze`, `report`, `python -m cuprobe` and the Python API run from there against the test
#     doubles (the bundled storm example), giving the findings the build tree's cuprobe gives;
#   - the .deb's contents and control fields are checked, and the cuprobe of the unpacked .deb
#     records and analyzes; likewise the relocatable tarball, unpacked elsewhere;
#   - shipped binaries carry no debug information, and the debug packages hold it for exactly
#     their build ids.
set -euo pipefail
# Under pipefail a `producer | grep -q` fails when grep exits at its first match and the producer,
# still writing, dies of SIGPIPE: outputs are captured first, then searched (`<<<`).
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:?usage: test_packages.sh BUILD_DIR}" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/cuprobe-packages.XXXXXX")"
trap 'rm -rf "$work"' EXIT
unset CUPROBE_RULES CUPROBE_SHIM CUPROBE_OUT LD_PRELOAD
fail() { echo "test_packages: FAIL: $*" >&2; exit 1; }
storm=("$build/examples/simulated_storm" --benchmark --bwd --shapes 12 --steps 20)
[ -x "${storm[0]}" ] || fail "${storm[0]} is not built"

# As built: the tree is not rebuilt under the tests that run from it at the same time.
"$root/scripts/package.sh" "$work/out" --build-dir "$build" --no-build
python=/usr/bin/python3
[ -x "$python" ] || python="$(command -v python3)"
whl="$(ls "$work"/out/cuprobe-*-py3-none-manylinux_2_28_*.whl)"
deb="$(ls "$work"/out/cuprobe_*.deb)"
dbg="$(ls "$work"/out/cuprobe-dbgsym_*.deb)"
tgz="$(ls "$work"/out/cuprobe-*-linux-*[0-9a-z].tar.gz | grep -v -- '-debug\.tar\.gz$')"
dtgz="$(ls "$work"/out/cuprobe-*-debug.tar.gz)"

# The findings the build tree's own cuprobe gives for the example: every package must agree.
"$build/bin/cuprobe" record -o "$work/run-build" -- "${storm[@]}" >/dev/null
expected="$("$build/bin/cuprobe" analyze --json "$work/run-build" | "$python" -c \
  'import json,sys; print(" ".join(sorted(f["rule"] for f in json.load(sys.stdin)["findings"])))' || true)"
case " $expected " in *" research-storm "*) ;; *) fail "the build tree's cuprobe does not find the example's storm: '$expected'" ;; esac

# Records the example with CUPROBE ($1) into $2, analyzes and reports it, checks the findings.
use() {
  local cuprobe="$1" run="$2" rc=0 found
  "$cuprobe" record -o "$run" -- "${storm[@]}" >/dev/null || fail "$cuprobe record failed"
  "$cuprobe" analyze "$run" >"$run.txt" || rc=$?
  [ "$rc" -eq 1 ] || fail "$cuprobe analyze exited $rc (findings expected: 1)"
  found="$("$cuprobe" analyze --json "$run" | "$python" -c \
    'import json,sys; print(" ".join(sorted(f["rule"] for f in json.load(sys.stdin)["findings"])))' || true)"
  [ "$found" = "$expected" ] || fail "$cuprobe finds '$found', the build tree's cuprobe '$expected'"
  "$cuprobe" report -o "$run.html" "$run" >/dev/null || fail "$cuprobe report failed"
  grep -q research-storm "$run.html" || fail "$run.html does not name research-storm"
  echo "  $cuprobe: recorded, analyzed ($found), reported"
}

# No debug information in what ships; the debug packages have it under the same build ids.
check_stripped() {
  local dir="$1" f
  for f in "$dir/bin/cuprobe" "$dir/lib/cuprobe/libcuprobe.so"; do
    [ -f "$f" ] || fail "$f missing"
    local sections
    sections="$(readelf -S "$f")"
    if grep -q '\.debug_info' <<<"$sections"; then fail "$f is not stripped"; fi
    local id
    id="$(readelf -n "$f" | sed -n 's/.*Build ID: //p')"
    [ -n "$id" ] || fail "$f has no build id"
    echo "$id"
  done
}

echo "== wheel: $(basename "$whl")"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --no-index --no-cache-dir --disable-pip-version-check "$whl"
(
  cd "$work"
  export PATH="$work/venv/bin:$PATH"
  [ "$(command -v cuprobe)" = "$work/venv/bin/cuprobe" ] || fail "pip did not put cuprobe on the venv's PATH"
  version="$(cuprobe --version)"
  grep -q '^cuprobe ' <<<"$version" || fail "cuprobe --version"
  [ "$(python -m cuprobe --version)" = "$(cuprobe --version)" ] || fail "python -m cuprobe differs from cuprobe"
  shim="$(cuprobe --shim-path)"
  case "$shim" in "$work"/venv/lib/python3*/site-packages/cuprobe/*) ;; *) fail "the wheel's shim is at $shim" ;; esac
  [ -f "$shim" ] || fail "the wheel's shim $shim is missing"
  use "$work/venv/bin/cuprobe" "$work/run-wheel"
  python -m cuprobe record -o "$work/run-module" -- "${storm[@]}" >/dev/null || fail "python -m cuprobe record"
  python - "$work" "${storm[@]}" <<'EOF' || fail "the Python API"
import os, sys
import cuprobe
work, storm = sys.argv[1], sys.argv[2:]
assert os.path.samefile(cuprobe.shim_path(), os.popen("cuprobe --shim-path").read().strip()), cuprobe.shim_path()
assert os.path.isfile(os.path.join(cuprobe.rules_dir(), "research-storm.json")), cuprobe.rules_dir()
status = cuprobe.record(storm, out=os.path.join(work, "run-api"), stacks="off", quiet=True)
assert status == 0, status
report = cuprobe.analyze(os.path.join(work, "run-api"))
assert report["format"].startswith("cuprobe-analyze/"), report["format"]
rules = {f["rule"] for f in report["findings"]}
assert "research-storm" in rules, rules
assert cuprobe.report(os.path.join(work, "run-api"), out=os.path.join(work, "api.html")).endswith("api.html")
try:
    cuprobe.analyze(os.path.join(work, "no-such-run"))
    raise AssertionError("analyze of a missing run did not raise")
except cuprobe.CuprobeError as e:
    assert "no-such-run" in str(e), str(e)
print("  Python API: record, analyze (%s), report, CuprobeError" % ", ".join(sorted(rules)))
EOF
)

echo "== .deb: $(basename "$deb")"
contents="$(dpkg-deb -c "$deb" | awk '{print $NF}')"
for p in ./usr/bin/cuprobe ./usr/lib/cuprobe/libcuprobe.so ./usr/share/cuprobe/rules/research-storm.json \
         ./usr/share/doc/cuprobe/README.md; do
  grep -qx -- "$p" <<<"$contents" || fail "the .deb lacks $p"
done
if grep -q '^\./usr/lib/debug' <<<"$contents"; then fail "the .deb carries debug information (it belongs in -dbgsym)"; fi
if grep -q 'fixtures' <<<"$contents"; then fail "the .deb carries the rules' test fixtures"; fi
depends="$(dpkg-deb -f "$deb" Depends)"
grep -Eq '^libc6 \(>= 2\.([0-9]|1[0-9]|2[0-8])(\.[0-9]+)?\)$' <<<"$depends" ||
  fail "the .deb's dependency is '$depends', not libc6 (>= 2.28 or older)"
description="$(dpkg-deb -f "$deb" Description)"
grep -q 'errors; `cuprobe analyze` explains' <<<"$description" ||
  fail "the .deb's description lost its text: $(tr '\n' ' ' <<<"$description")"
dpkg-deb -x "$deb" "$work/debroot"
ids="$(check_stripped "$work/debroot/usr")"
dpkg-deb -x "$dbg" "$work/dbgroot"
for id in $ids; do
  [ -f "$work/dbgroot/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" ] || fail "-dbgsym lacks the debug file of build id $id"
done
use "$work/debroot/usr/bin/cuprobe" "$work/run-deb"

echo "== tarball: $(basename "$tgz")"
mkdir "$work/elsewhere"
tar -C "$work/elsewhere" -xzf "$tgz"
prefix="$(ls -d "$work"/elsewhere/cuprobe-*)"
tids="$(check_stripped "$prefix")"
[ "$tids" = "$ids" ] || fail "the tarball's binaries are not the .deb's"
mkdir "$work/dtgz"
tar -C "$work/dtgz" -xzf "$dtgz"
for id in $ids; do
  ls "$work"/dtgz/*/lib/debug/.build-id/"${id:0:2}/${id:2}.debug" >/dev/null || fail "the debug tarball lacks build id $id"
done
use "$prefix/bin/cuprobe" "$work/run-tarball"

"$python" "$root/tests/packaging/check_elf.py" "$whl" "$deb" "$tgz"
echo "test_packages: the wheel, the .deb and the tarball install and work"
