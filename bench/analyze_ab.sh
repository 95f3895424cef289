#!/usr/bin/env bash
# Analyzer speed, before/after in one run: records one synthetic process of EVENTS events
# (bench/gen_job under the shim of BUILD_DIR, against the test doubles), then analyzes it on one
# thread with two cuprobe binaries alternately, ROUNDS times each, and prints each one's best and
# median events per second and the ratio (docs/dev/performance.md).
# Usage: bench/analyze_ab.sh BUILD_DIR OLD_CUPROBE NEW_CUPROBE [EVENTS] [ROUNDS]
set -euo pipefail
build="$(cd "${1:?build dir (gen_job, shim)}" && pwd)"
old="${2:?old cuprobe}"
new="${3:?new cuprobe}"
events="${4:-2000000}"
rounds="${5:-5}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
export FAKECUDNN_ENGINE_US="0:0,1:0,2:0,3:0,4:0,5:0,6:0,7:0,8:0,9:0,10:0,11:0"
"$build/bin/cuprobe" record -q -o "$out/job" -- "$build/bin/gen_job" "$events" >/dev/null
trace="$(ls "$out"/job/*.cuprobe | head -1)"
n=$("$new" dump --no-events "$trace" | python3 -c 'import json,sys; print(sum(l["events"] for l in map(json.loads,sys.stdin) if l["type"]=="process"))')
for r in $(seq 1 "$rounds"); do
  for which in old new; do
    bin="$old"; [ "$which" = new ] && bin="$new"
    s=$(date +%s.%N); "$bin" analyze --threads 1 "$trace" >/dev/null || true; e=$(date +%s.%N)
    echo "$which $(python3 -c "print($e - $s)")"
  done
done | python3 -c '
import statistics, sys
n = int(sys.argv[1])
t = {"old": [], "new": []}
for line in sys.stdin:
    k, v = line.split()
    t[k].append(float(v))
for k in ("old", "new"):
    print(f"{k}: best {t[k] and min(t[k]):.3f} s ({n / min(t[k]) / 1e6:.2f} M events/s), median {statistics.median(t[k]):.3f} s ({n / statistics.median(t[k]) / 1e6:.2f} M events/s) over {len(t[k])} runs")
ratio = statistics.median(t["new"]) / statistics.median(t["old"])
print(f"new/old time, medians: {ratio:.3f}; events: {n}")
' "$n"
