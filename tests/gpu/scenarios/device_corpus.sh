#!/usr/bin/env bash
# One device call for the scenario corpus: records, analyzes and scores every scenario with
# run_corpus.sh under a time guard, then copies what comes back into OUT (the device tool's
# $OUT: at most 8 files). The traces come back even when the guard cut the run short, so the
# analysis can be redone offline (score.py --cuprobe BIN --traces DIR).
#   tests/gpu/scenarios/device_corpus.sh BUILD_DIR OUT [GUARD_SECONDS] [SCENARIO...]
set -u
build="$(cd "${1:?build dir}" && pwd)"
out="${2:?out dir}"
guard="${3:-480}"
shift 3 2>/dev/null || shift $#
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d /tmp/corpus.XXXXXX)"
mkdir -p "$out"
timeout -k 15 "$guard" "$here/run_corpus.sh" "$build/bin/cuprobe" "$work" "$@" >"$out/corpus.stdout" 2>&1
echo "run_corpus exit status: $?" >>"$out/corpus.stdout"
if ls "$work"/traces-*.tar.gz >/dev/null 2>&1; then
  cp "$work"/traces-*.tar.gz "$out/"
else
  # Cut short before packing: everything recorded so far, in parts under 15 MiB.
  tar -C "$work/work" -czf "$work/all-traces.tgz" traces 2>/dev/null
  split -b 15M -d "$work/all-traces.tgz" "$out/all-traces.tgz.part"
fi
[ -f "$work/results.tar.gz" ] && cp "$work/results.tar.gz" "$out/" ||
  tar -C "$work" -czf "$out/results.tar.gz" logs findings corpus.log score.txt score.json 2>/dev/null
cp "$work/score.txt" "$out/" 2>/dev/null
cat "$work/corpus.log" 2>/dev/null | tail -60
