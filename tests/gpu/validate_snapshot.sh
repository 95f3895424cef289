#!/usr/bin/env bash
# Real-GPU validation of `cuprobe snapshot` (issue 15): runs a two-rank scenario of the corpus
# (default ddp-torchrun: torchrun, two ranks sharing GPU 0), snapshots its run directory and,
# separately, the launcher's pid while it trains, analyzes the snapshots, then the finished run.
#   tests/gpu/validate_snapshot.sh BUILD_DIR OUT_DIR [SCENARIO]
set -uo pipefail
build="$(cd "${1:?build dir}" && pwd)"
out="${2:?out dir}"
scen="${3:-ddp-torchrun}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
export CUPROBE="$build/bin/cuprobe" SCEN="$here/scenarios/$scen" TRACE_DIR="$work/run"
cat >"$work/summary.py" <<'PY'
import json, sys
r = json.load(sys.stdin)
s = r["summary"]
print(f"  {s['processes']} processes, {s['events']} events, {s['searches']} searches")
for p in s["per_process"]:
    print(f"    pid {p['pid']} rank {p.get('rank')}: {p.get('events')} events, {p['state']}")
for f in r["findings"]:
    print(f"  [{f['severity']}] {f['rule']}: {f['title']}")
PY
summary() {  # analyze --json of $1: processes, their states, findings
  "$CUPROBE" analyze --json "$1" 2>/dev/null | python3 "$work/summary.py"
}
{
  echo "== $(date -u +%FT%TZ) $scen"
  start=$EPOCHREALTIME
  bash "$SCEN/run.sh" >"$out/run.log" 2>&1 &
  job=$!
  # Until both ranks have traces and have trained a few seconds.
  for i in $(seq 1 120); do
    n=$(ls "$TRACE_DIR"/*.cuprobe 2>/dev/null | wc -l)
    [ "$n" -ge 3 ] && break
    sleep 0.5
  done
  # Until the ranks train (the first seconds are imports and set-up): snapshots every second
  # until one holds SNAPSHOT_MIN_CALLS calls (default 4000).
  for i in $(seq 1 60); do
    rm -rf "$work/probe"
    calls=$("$CUPROBE" snapshot -o "$work/probe" "$TRACE_DIR" 2>&1 | sed -n 's/.*(\([0-9]*\) calls.*/\1/p')
    [ "${calls:-0}" -ge "${SNAPSHOT_MIN_CALLS:-4000}" ] && break
    kill -0 $job 2>/dev/null || break
    sleep 1
  done
  printf 'snapshot by directory at %.1f s:\n' "$(awk "BEGIN{print $EPOCHREALTIME - $start}")"
  "$CUPROBE" snapshot -o "$work/snap-dir" "$TRACE_DIR"
  summary "$work/snap-dir"
  launcher=$(pgrep -f "record -q -o $TRACE_DIR" | head -1)
  printf 'snapshot by the launcher pid %s at %.1f s:\n' "$launcher" "$(awk "BEGIN{print $EPOCHREALTIME - $start}")"
  "$CUPROBE" snapshot -o "$work/snap-pid" "$launcher"
  summary "$work/snap-pid"
  wait $job
  printf 'job exit %d at %.1f s; the finished run:\n' $? "$(awk "BEGIN{print $EPOCHREALTIME - $start}")"
  summary "$TRACE_DIR"
} 2>&1 | tee "$out/snapshot.log"
rm -rf "$work"
