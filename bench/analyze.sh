#!/usr/bin/env bash
# Analyzer speed: records a job of PROCESSES processes with EVENTS events each (bench/gen_job
# under the shim, against the test doubles), then times `cuprobe analyze` on one process with
# one thread (events per second on one core) and on the whole job with two threads.
# Usage: bench/analyze.sh [BUILD_DIR] [PROCESSES] [EVENTS]
set -euo pipefail
build="${1:-$(cd "$(dirname "$0")/.." && pwd)/build}"
procs="${2:-16}"
events="${3:-2000000}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cuprobe="$build/bin/cuprobe"
export FAKECUDNN_ENGINE_US="0:0,1:0,2:0,3:0,4:0,5:0,6:0,7:0,8:0,9:0,10:0,11:0"
for i in $(seq 1 "$procs"); do
  "$cuprobe" record -q -o "$out/job" --append -- "$build/bin/gen_job" "$events" >/dev/null &
  if (( i % 2 == 0 )); then wait; fi
done
wait
one="$(ls "$out"/job/*.cuprobe | head -1)"
n=$("$cuprobe" dump --no-events "$one" | python3 -c 'import json,sys; print(sum(l["events"] for l in map(json.loads,sys.stdin) if l["type"]=="process"))')
total=$("$cuprobe" dump --no-events "$out/job" | python3 -c 'import json,sys; print(sum(l["events"] for l in map(json.loads,sys.stdin) if l["type"]=="process"))')
bytes=$(du -sb "$out/job" | cut -f1)
time_it() {  # best of three, seconds
  best=999999
  for _ in 1 2 3; do
    s=$(date +%s.%N); "$@" >/dev/null || true; e=$(date +%s.%N)
    best=$(python3 -c "print(min($best, $e - $s))")
  done
  echo "$best"
}
t1=$(time_it "$cuprobe" analyze --threads 1 "$one")
tj=$(time_it "$cuprobe" analyze --threads 2 "$out/job")
rss() {  # peak resident set of one run, MiB
  python3 -c 'import resource,subprocess,sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' "$@"
}
rss1=$(rss "$cuprobe" analyze --threads 1 "$one")
rssj=$(rss "$cuprobe" analyze --threads 2 "$out/job")
python3 - "$n" "$t1" "$total" "$tj" "$bytes" "$procs" "$rss1" "$rssj" <<'PY'
import sys
n, t1, total, tj, size, procs = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
rss1, rssj = int(sys.argv[7]), int(sys.argv[8])
print(f"one process: {n} events analyzed in {t1:.2f} s on one thread: {n / t1 / 1e6:.2f} M events/s")
print(f"job: {procs} processes, {total} events, {size / 2**20:.0f} MiB of traces, analyzed in {tj:.2f} s on two threads "
      f"({total / tj / 1e6:.2f} M events/s)")
print(f"peak resident memory: {rss1} MiB for one process, {rssj} MiB for the job (trace pages mapped and read count)")
PY
