#!/usr/bin/env bash
# The long fuzzing run of issue 11's "done when": every libFuzzer target for SECONDS on W
# parallel workers each, all targets at once, on a machine with cores to spare (the GPU machine
# has 16). Needs build-fuzz/bin (scripts/fuzz.sh builds it) and the seeds (build-fuzz/seeds,
# tests/fuzz/corpus). Prints executions per target and any crash, hang or OOM input.
# Usage: tests/gpu/fuzz_long.sh OUT_DIR [SECONDS] [WORKERS]
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$(mkdir -p "${1:?out dir}" && cd "$1" && pwd)"
seconds="${2:-600}"
workers="${3:-5}"
export UBSAN_OPTIONS=print_stacktrace=1
for bin in "$root"/build-fuzz/bin/*_fuzz; do
  t=$(basename "$bin")
  mkdir -p "$out/$t/corpus" "$out/$t/crashes"
  seeds=()
  for d in "$root/build-fuzz/seeds/$t" "$root/tests/fuzz/corpus/$t" "$root/build-fuzz/corpus/$t"; do
    [ -d "$d" ] && seeds+=("$d")
  done
  ( cd "$out/$t" && timeout $((seconds + 60)) "$bin" -jobs="$workers" -workers="$workers" -max_total_time="$seconds" \
      -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/$t/crashes/" \
      corpus "${seeds[@]}" >"$out/$t/run.log" 2>&1 ) &
done
wait
for d in "$out"/*_fuzz; do
  t=$(basename "$d")
  execs=$(cat "$d"/fuzz-*.log 2>/dev/null | awk '/stat::number_of_executed_units/ {s += $2} END {print s + 0}')
  found=$(ls "$d/crashes" | wc -l)
  echo "$t: $execs executions on $workers workers x ${seconds} s; crash/timeout/oom inputs: $found $(ls "$d/crashes" | head -5 | tr '\n' ' ')"
  rm -rf "$d/corpus"
done
