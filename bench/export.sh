#!/usr/bin/env bash
# Export and report speed: records one process of EVENTS events (bench/gen_job under the shim,
# against the test doubles) and a job of PROCESSES such processes, then times, pinned to one core
# (taskset -c 0), `cuprobe analyze` (the baseline: every export analyzes first), `cuprobe export`
# in each format and `cuprobe report`: best of three, events per second, peak resident memory,
# output size; then what SQLite alone takes to insert as many rows (bench/sqlite_rows). The SQLite
# export runs twice: as shipped (the large tables' pages written by cuprobe) and with every row
# through SQL (CUPROBE_SQLITE_ROWS=sql).
# Usage: bench/export.sh [BUILD_DIR] [EVENTS] [PROCESSES]
set -euo pipefail
build="${1:-$(cd "$(dirname "$0")/.." && pwd)/build}"
events="${2:-2000000}"
procs="${3:-4}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cuprobe="$build/bin/cuprobe"
export FAKECUDNN_ENGINE_US="0:0,1:0,2:0,3:0,4:0,5:0,6:0,7:0,8:0,9:0,10:0,11:0"
"$cuprobe" record -q -o "$out/one" -- "$build/bin/gen_job" "$events" >/dev/null
for i in $(seq 1 "$procs"); do
  "$cuprobe" record -q -o "$out/job" --append -- "$build/bin/gen_job" "$events" >/dev/null &
  if (( i % 2 == 0 )); then wait; fi
done
wait
count() {
  "$cuprobe" dump --no-events "$1" |
    python3 -c 'import json,sys; print(sum(l["events"] for l in map(json.loads,sys.stdin) if l["type"]=="process"))'
}
# label, input: best-of-three seconds, peak RSS (MiB) and output bytes of each command.
measure() {
  local input="$1" n
  n=$(count "$input")
  printf '%s: %d events, %s of traces\n' "$input" "$n" "$(du -sh "$input" | cut -f1)"
  for what in analyze perfetto chrome sqlite sqlite-sql report; do
    local cmd file="$out/x.$what" rows=pages
    case $what in
      analyze) cmd=(analyze --threads 1 --json "$input"); file="" ;;
      report) cmd=(report -q -o "$file" "$input") ;;
      # The SQLite export with every row through SQL (its reference path) for comparison.
      sqlite-sql) cmd=(export -q --format sqlite -o "$file" "$input"); rows=sql ;;
      *) cmd=(export -q --format "$what" -o "$file" "$input") ;;
    esac
    CUPROBE_SQLITE_ROWS=$rows python3 - "$n" "$what" "$file" taskset -c 0 "$cuprobe" "${cmd[@]}" <<'PY'
import os, resource, subprocess, sys, time
n, what, file, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
best = 1e9
for _ in range(3):
    # The previous command's output (up to GBs for Chrome JSON) is written back first, not while
    # this one is timed.
    os.sync()
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    best = min(best, time.perf_counter() - t)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
print(f"  {what:9s} {best:7.2f} s  {n / best / 1e6:6.2f} M events/s on one core  peak RSS {rss:5d} MiB"
      + (f"  output {os.path.getsize(file) / 2**20:7.1f} MiB" if file else ""))
PY
  done
}
measure "$out/one"
measure "$out/job"
# What SQLite alone needs for as many rows as the one process has calls (bench/sqlite_rows.cpp).
taskset -c 0 "$build/bin/sqlite_rows" "$out/floor.sqlite" "$(count "$out/one")"
