#!/usr/bin/env bash
# Real-GPU validation of the analyzer and the examples, plus re-checks of cuDNN capture and the
# shim's cost. Run from the repository root on the GPU machine:
#   tests/gpu/validate_examples.sh BUILD_DIR OUT_DIR
# Prints a summary (also OUT_DIR/examples.log); analyzer reports (text and JSON) and the job
# outputs go to OUT_DIR/reports.tar.gz, the example traces to OUT_DIR/traces.tar.gz so rules can
# be re-run offline. SKIP_ORACLE=1, SKIP_BENCH=1 and R50_ORDER="plain traced" shorten it.
set -uo pipefail
build="$(cd "${1:?build dir}" && pwd)"
out="${2:?out dir}"
mkdir -p "$out"
work="$(mktemp -d)"
export CUPROBE="$build/bin/cuprobe"
cuprobe="$CUPROBE"
log="$out/examples.log"
section() { echo; echo "== $* ($(date -u +%T))"; }
analyze() {  # name: text and JSON reports of $work/name
  "$cuprobe" analyze --no-color "$work/$1" >"$out/$1.txt" 2>&1
  echo "analyze exit status: $?"
  "$cuprobe" analyze --json "$work/$1" >"$out/$1.json" 2>/dev/null
  python3 - "$out/$1.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
print(f"summary: {s['processes']} processes, {s['events']} events, {s['searches']} searches, {s['duration_s']:.1f} s")
for f in r["findings"]:
    print(f"  [{f['severity']}] {f['rule']}: {f['message'][:400]}")
PY
}
{
  section "machine"
  date -u +%FT%TZ
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())'

  section "file-cache warm-up (untimed): convnet.py --sizes random"
  python3 examples/pytorch/convnet.py --sizes random --steps 30

  section "storm: convnet.py --sizes random, plain and traced alternating"
  for i in 1 2; do
    python3 examples/pytorch/convnet.py --sizes random --steps 30 | sed 's/^/plain:  /'
    rm -rf "$work/storm-ab"
    "$cuprobe" record -q -o "$work/storm-ab" -- python3 examples/pytorch/convnet.py --sizes random --steps 30 | sed 's/^/traced: /'
  done

  section "storm example (examples/storm/run.sh)"
  examples/storm/run.sh "$work/storm" >"$out/storm.run.txt" 2>&1
  grep "^sizes" "$out/storm.run.txt"
  analyze storm

  section "healthy example (examples/healthy/run.sh: fixed size, 10 s)"
  examples/healthy/run.sh "$work/healthy" >"$out/healthy.run.txt" 2>&1
  grep "^sizes" "$out/healthy.run.txt"
  analyze healthy

  section "oom example (examples/oom/run.sh)"
  examples/oom/run.sh "$work/oom" >"$out/oom.run.txt" 2>&1
  grep -E "^batch|OutOfMemoryError|exit status" "$out/oom.run.txt" | cut -c1-300
  analyze oom

  section "divergence example (examples/divergence/run.sh: torchrun, 2 processes, ResNet-50)"
  examples/divergence/run.sh "$work/divergence" >"$out/divergence.run.txt" 2>&1
  grep -E "^rank|Error|error" "$out/divergence.run.txt" | head -20
  analyze divergence
  tar -C "$work" -czf "$out/traces.tar.gz" storm healthy oom divergence 2>/dev/null

  if [ -z "${SKIP_ORACLE:-}" ]; then section "cuDNN capture against cuDNN's own API log"; fi
  for mode in $([ -z "${SKIP_ORACLE:-}" ] && echo benchmark heuristic); do
    flag=""; [ "$mode" = benchmark ] && flag="--benchmark"
    CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG="$work/$mode.cudnnlog" \
      "$cuprobe" record -q -o "$work/oracle-$mode" -- python3 tests/gpu/cudnn_conv.py $flag --shapes 3
    "$cuprobe" dump "$work/oracle-$mode" >"$work/oracle-$mode.jsonl"
    echo "-- $mode"
    python3 tests/gpu/check_cudnn_log.py "$work/oracle-$mode.jsonl" "$work/$mode.cudnnlog"
    python3 tests/gpu/summarize_dump.py "$work/oracle-$mode.jsonl" | grep -E "search records|without a problem|failed calls"
    rm -f "$work/$mode.cudnnlog"
  done

  section "added time per training step, ResNet-50 batch 64 bf16 channels-last benchmark on, alternating"
  for order in ${R50_ORDER:-plain traced traced plain plain traced}; do
    if [ $order = plain ]; then
      python3 examples/pytorch/resnet_train.py --arch resnet50 --benchmark --amp --channels-last --steps 30 | sed 's/^/plain:  /'
    else
      rm -rf "$work/r50"
      "$cuprobe" record -q -o "$work/r50" -- python3 examples/pytorch/resnet_train.py --arch resnet50 --benchmark --amp --channels-last --steps 30 | sed 's/^/traced: /'
    fi
  done
  du -sb "$work/r50" | awk '{print "r50 trace bytes:", $1}'
  "$cuprobe" dump --no-events "$work/r50" | python3 -c 'import json,sys; [print("r50 process:", l["events"], "events,", l["stats"]) for l in map(json.loads, sys.stdin) if l["type"]=="process"]'
  s=$(date +%s.%N); "$cuprobe" analyze "$work/r50" >/dev/null; e=$(date +%s.%N)
  python3 -c "print(f'analyze of the ResNet-50 trace: {$e - $s:.3f} s')"

  if [ -z "${SKIP_BENCH:-}" ]; then
    section "shim overhead per call (test double), this machine"
    LD_LIBRARY_PATH="$build/extra-libs" bench/overhead.sh "$build"
    section "analyzer speed on generated traces, this machine"
    LD_LIBRARY_PATH="$build/extra-libs" bench/analyze.sh "$build" 16 2000000
  fi
} 2>&1 | tee "$log"
tar -C "$work" -czf "$out/more-traces.tar.gz" r50 oracle-benchmark.jsonl oracle-heuristic.jsonl 2>/dev/null
# Reports in one archive: the device tool brings back a limited number of files.
tar -C "$out" -czf "$out/reports.tar.gz" --exclude='*.tar.gz' --exclude=examples.log . && \
  find "$out" -maxdepth 1 -type f ! -name '*.tar.gz' ! -name examples.log -delete
ls -la "$out"
