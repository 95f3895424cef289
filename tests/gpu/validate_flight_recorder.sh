#!/usr/bin/env bash
# Real-GPU validation of the flight recorder (issue 15): the same training job that dies of an
# out-of-memory error at its end (tests/gpu/long_oom.py), recorded with every kernel launch an
# event so that its trace outgrows a small limit:
#   all     --keep all with room for everything (the reference)
#   auto    --max-mb 16: every event up to 12 MiB, then a 4 MiB ring (the default's behaviour)
#   last    --keep last:8MiB --max-mb 64: a flight recorder from the start
#   limit   --keep all --max-mb 16: the old behaviour, the end (the OOM) lost
#   window  --delay 14 --duration 4: routine calls only in a capture window
#   nvtx    --window-nvtx cuprobe-steps, the job pushing that range around steps 400-409
# and compares their OOM post-mortems and findings (each run is a run of its own: live bytes differ
# a little from run to run), shows what each stream of the ring traces holds
# (tests/gpu/trace_streams.py); then the job's median step time without the shim, with the plain
# trace and with the ring (cost on a real job).
#   tests/gpu/validate_flight_recorder.sh BUILD_DIR OUT_DIR [STEPS]
set -uo pipefail
build="$(cd "${1:?build dir}" && pwd)"
out="${2:?out dir}"
steps="${3:-800}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
cuprobe="$build/bin/cuprobe"
py="${PYTHON:-python3}"
run() {  # NAME RECORD-OPTIONS...
  local name=$1; shift
  local t0=$EPOCHREALTIME
  timeout 150 "$cuprobe" record -q --launch-events --alerts off -o "$work/$name" "$@" -- \
    "$py" "$here/long_oom.py" "$steps" >"$out/$name.log" 2>&1
  local rc=$?
  local bytes=$(du -b "$work/$name"/*.cuprobe 2>/dev/null | awk '{s+=$1} END {print s+0}')
  printf '%-6s exit %d in %.1f s, trace %d bytes, %s\n' "$name" $rc "$(awk "BEGIN{print $EPOCHREALTIME - $t0}")" \
    "$bytes" "$(grep -h STEP_MS "$out/$name.log")"
  timeout 120 "$cuprobe" analyze --json "$work/$name" >"$out/$name.json" 2>"$out/$name.analyze.err"
  timeout 120 "$cuprobe" analyze "$work/$name" >"$out/$name.txt" 2>&1
}
{
  echo "== $(date -u +%FT%TZ) flight recorder, $steps steps"
  "$py" -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name())'
  runs="${FR_RUNS:-all auto last limit window nvtx}"  # FR_RUNS picks some (all is the reference)
  for r in $runs; do
    case $r in
      all) run all --keep all --max-mb 65536 ;;
      auto) run auto --max-mb 16 ;;
      last) run last --keep last:8MiB --max-mb 64 ;;
      limit) run limit --keep all --max-mb 16 ;;
      window) run window --delay 14 --duration 4 ;;
      nvtx) export NVTX_STEPS=400:410; run nvtx --window-nvtx cuprobe-steps; unset NVTX_STEPS ;;
    esac
  done
  args=()
  for r in $runs; do args+=("$out/$r.json"); done
  "$py" "$here/compare_ring.py" "${args[@]}"
  # The NVTX window's calls against the whole trace's.
  [ -f "$out/nvtx.json" ] && "$py" - "$out" <<'PY'
import json, sys
d = sys.argv[1]
for name in ("all", "nvtx"):
    s = json.load(open(f"{d}/{name}.json"))["summary"]
    p = s["per_process"][0]
    print(f"{name}: {s['events']} events, cudnnBackendExecute {s['calls_by_api'].get('cudnnBackendExecute')}, "
          f"cudaGetDevice {s['calls_by_api'].get('cudaGetDevice')}, coverage {(p.get('coverage') or {}).get('text')}")
PY
  for name in auto last window; do
    [ -d "$work/$name" ] || continue
    echo "streams of $name:"
    "$py" "$here/trace_streams.py" "$work/$name"/*.cuprobe
  done
  echo "== cost on the job (median step ms of the second half; launch events on)"
  for rep in $(seq 1 "${FR_COST_REPS:-2}"); do
    t=$(timeout 120 "$py" "$here/long_oom.py" "$steps" 2>/dev/null | sed -n 's/STEP_MS.*: //p')
    printf 'rep %d: none %s' $rep "$t"
    for mode in all last:8MiB; do
      rm -rf "$work/cost"
      t=$(timeout 150 "$cuprobe" record -q --launch-events --alerts off --max-mb 65536 --keep $mode -o "$work/cost" -- \
        "$py" "$here/long_oom.py" "$steps" 2>/dev/null | sed -n 's/STEP_MS.*: //p')
      printf ', %s %s' "$mode" "$t"
    done
    echo
  done
} 2>&1 | tee "$out/flight_recorder.log"
rm -rf "$work"
