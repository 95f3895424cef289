#!/usr/bin/env bash
# Real-GPU validation of `cuprobe report` and `cuprobe export` (issue 14). Run from the repository
# root on the GPU machine:
#   tests/gpu/validate_export.sh BUILD_DIR OUT_DIR
# Records the storm and OOM examples, the benchmark-drift two-rank scenario (torchrun; both ranks
# share GPU 0 when there is one) and a conv net under torch.profiler; writes for each the HTML
# report, the Perfetto trace, the SQLite database and (small runs) Chrome JSON into OUT_DIR, with
# sizes and times; checks that the profiler's (Kineto) trace and cuprobe's export line up
# (tests/gpu/compare_alignment.py). Log: OUT_DIR/export.log.
set -uo pipefail
build="$(cd "${1:?build dir}" && pwd)"
out="${2:?out dir}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$(mktemp -d)"
chmod 700 "$work"
export CUPROBE="$build/bin/cuprobe"
cuprobe="$CUPROBE"
log="$out/export.log"
section() { echo; echo "== $* ($(date -u +%T))"; }
# name: every output of $work/name into $out/name.*, timed.
exports() {
  local n="$1" t0 t1
  "$cuprobe" analyze --json "$work/$n" >"$out/$n.analyze.json" 2>/dev/null
  python3 - "$out/$n.analyze.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
print(f"analysis: {s['processes']} processes, {s['events']} events, {s['searches']} searches")
for f in r["findings"]:
    print(f"  [{f['severity']}] {f['rule']}: {f['title']}")
PY
  for fmt in report perfetto sqlite chrome; do
    local file args
    case $fmt in
      report) file="$out/$n.html"; args=(report -q -o "$file") ;;
      perfetto) file="$out/$n.pftrace"; args=(export -q --format perfetto -o "$file") ;;
      sqlite) file="$out/$n.sqlite"; args=(export -q --format sqlite -o "$file") ;;
      chrome) file="$out/$n.chrome.json"; args=(export -q --format chrome -o "$file") ;;
    esac
    t0=$EPOCHREALTIME
    timeout -k 5 120 "$cuprobe" "${args[@]}" "$work/$n" 2>"$out/$n.$fmt.err"
    local rc=$?
    t1=$EPOCHREALTIME
    printf '%-9s exit %d  %8.2f s  %s  %s\n' "$fmt" "$rc" "$(awk "BEGIN{print $t1 - $t0}")" \
      "$(stat -c %s "$file" 2>/dev/null || echo missing) bytes" "$(tail -1 "$out/$n.$fmt.err")"
  done
  python3 - "$out/$n.sqlite" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
tables = [r[0] for r in db.execute("select name from sqlite_master where type='table' order by name")]
print("sqlite tables:", ", ".join(f"{t} {db.execute(f'select count(*) from {t}').fetchone()[0]}" for t in tables))
PY
}
{
  section "machine"
  date -u +%FT%TZ
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())'
  "$cuprobe" --version

  section "storm example (examples/storm/run.sh, 30 steps)"
  timeout -k 10 240 examples/storm/run.sh "$work/storm" >"$out/storm.run.txt" 2>&1
  exports storm

  section "oom example (examples/oom/run.sh)"
  timeout -k 10 240 examples/oom/run.sh "$work/oom" >"$out/oom.run.txt" 2>&1
  exports oom

  section "two ranks, one with cudnn.benchmark off (scenario drift-benchmark, torchrun)"
  TRACE_DIR="$work/divergence" SCEN=tests/gpu/scenarios/drift-benchmark \
    timeout -k 10 150 bash tests/gpu/scenarios/drift-benchmark/run.sh >"$out/divergence.run.txt" 2>&1
  exports divergence

  section "torch.profiler beside cuprobe (tests/gpu/profiler_align.py)"
  timeout -k 10 240 "$cuprobe" record -q -o "$work/profiler" -- \
    python3 tests/gpu/profiler_align.py "$out/profiler.kineto.json" >"$out/profiler.run.txt" 2>&1
  tail -2 "$out/profiler.run.txt"
  exports profiler
  python3 tests/gpu/compare_alignment.py "$out/profiler.kineto.json" "$out/profiler.chrome.json" \
    cudaDeviceSynchronize
  python3 scripts/overlay_profiler.py "$out/profiler.kineto.json" "$out/profiler.chrome.json" -o "$out/profiler.overlay.json"
  gzip -f "$out/profiler.kineto.json" "$out/profiler.overlay.json"

  section "sizes"
  ls -l "$out" | awk '{print $5, $9}'
  # What comes back is size-limited: the biggest outputs stay on the machine.
  for f in "$out"/*.sqlite "$out"/*.chrome.json; do
    [ "$(stat -c %s "$f")" -gt $((20 << 20)) ] && { echo "dropped (size) $f"; rm -f "$f"; }
  done
  section "done"
} 2>&1 | tee "$log"
rm -rf "$work"
# One file to bring back (a device call returns a few files only).
tar czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
