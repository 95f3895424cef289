#!/usr/bin/env bash
# Issues 27 and 28 on the GPU in one device call: the wheel as a user installs it
# (validate_wheel.sh: pytorch/examples imagenet, the bundled storm example, the Python API, the
# scenario corpus once), then more passes of the corpus with the wheel's own binary while time
# remains (issue 28 asks for three runs; each pass is scored on its own).
#   tests/gpu/validate_issue28.sh WHEEL OUT [TOTAL_SECONDS [SCENARIO...]]
# SCENARIO...: only these in the later passes (default all). WHEEL_CORPUS_GUARD: the corpus guard
# of validate_wheel.sh's own pass (default 300; 0 skips it, leaving the time to the later passes).
# WHEEL_SKIP=1: no validate_wheel.sh at all (the wheel already checked), only corpus passes.
# OUT/summary.txt: one line per step; OUT/wheel/ (validate_wheel's), OUT/passN/ (device_corpus's).
set -u
wheel="$(readlink -f "${1:?wheel}")"
out="${2:?out dir}"
total="${3:-560}"
shift 3 2>/dev/null || shift $#
start=$(date +%s)
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
elapsed() { echo $(( $(date +%s) - start )); }
if [ "${WHEEL_SKIP:-0}" = 1 ]; then
  echo "validate_wheel skipped (WHEEL_SKIP=1): corpus passes only" >>"$out/summary.txt"
else
  timeout -k 10 $((total - 30)) bash "$here/validate_wheel.sh" "$wheel" "$out/wheel" "${WHEEL_CORPUS_GUARD:-300}" >"$out/wheel.stdout" 2>&1
  echo "validate_wheel exit $? after $(elapsed) s" >>"$out/summary.txt"
  grep -E 'corpus:|imagenet analyze|storm found|STORM NOT|findings above info' "$out/wheel/wheel.log" >>"$out/summary.txt" 2>/dev/null
fi
# The wheel's prefix (bin/cuprobe, lib/cuprobe/libcuprobe.so, share/cuprobe/rules) is a build dir
# for device_corpus.sh.
unpacked="$(mktemp -d)"
python3 -m zipfile -e "$wheel" "$unpacked" && chmod +x "$unpacked/cuprobe/_prefix/bin/cuprobe"
n=2
while :; do
  left=$(( total - $(elapsed) ))
  [ "$left" -gt 150 ] || break
  guard=$(( left - 20 ))
  [ "$guard" -gt 330 ] && guard=330
  "$here/scenarios/device_corpus.sh" "$unpacked/cuprobe/_prefix" "$out/pass$n" "$guard" "$@" >/dev/null 2>&1
  echo "pass $n after $(elapsed) s: $(tail -1 "$out/pass$n/score.txt" 2>/dev/null)" >>"$out/summary.txt"
  # The device returns 8 files: the score is in summary.txt and in the pass's results.tar.gz.
  rm -f "$out/pass$n/score.txt"
  n=$((n + 1))
done
echo "done after $(elapsed) s" >>"$out/summary.txt"
cat "$out/summary.txt"
