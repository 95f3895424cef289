#!/usr/bin/env bash
# Issue 29's benchmark (docs/performance.md, "The search budget"): each program three ways, side by
# side in one run on one GPU: cudnn.benchmark on and off (plain python, no cuprobe), and benchmark
# on under `cuprobe record --search-budget PCT`. Storms (images, sequence lengths, audio, a
# detection model) should run with the budget at most 1.1x the faster of on and off; the healthy
# fixed-shape job should never reach the budget, with the same plans and steady step time as a
# traced run without it (arm "traced").
#   tests/gpu/bench_search_budget.sh PREFIX OUT [PCT [TOTAL_SECONDS]]
# PREFIX: a build or the wheel's _prefix (bin/cuprobe). OUT/results.txt: one line per run
# ("NAME ARM rc=.. wall_ms=.. steady_ms=.."), the budget lines of the analyses, the plan check.
set -u
prefix="$(readlink -f "${1:?prefix}")"
out="${2:?out dir}"
pct="${3:-5}"
total="${4:-540}"
cuprobe="$prefix/bin/cuprobe"
here="$(cd "$(dirname "$0")" && pwd)"
scen="$here/scenarios"
mkdir -p "$out"
res="$out/results.txt"
start=$(date +%s)
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
left() { echo $(( total - ($(date +%s) - start) )); }
run_arm() {  # NAME ARM COMMAND...
  local name="$1" arm="$2"
  shift 2
  local guard
  guard=$(left)
  if [ "$guard" -lt 20 ]; then echo "$name $arm skipped (time)" >>"$res"; return; fi
  [ "$guard" -gt 240 ] && guard=240
  local s e rc
  s=$(now_ms)
  SCENARIO_STEP_TIMES=1 timeout -k 5 "$guard" "$@" >"$out/$name-$arm.log" 2>&1
  rc=$?
  e=$(now_ms)
  local steady
  steady=$(grep -o 'steady: [0-9.]* ms/step' "$out/$name-$arm.log" | awk '{print $2}')
  echo "$name $arm rc=$rc wall_ms=$((e - s)) steady_ms=${steady:--}" >>"$res"
}
for name in ${BENCH_SCENARIOS:-healthy-fixed storm-images storm-seqlen storm-audio storm-detection}; do
  prog="$scen/$name/prog.py"
  SCENARIO_CUDNN_BENCHMARK=1 run_arm "$name" on python3 "$prog"
  SCENARIO_CUDNN_BENCHMARK=0 run_arm "$name" off python3 "$prog"
  run_arm "$name" budget "$cuprobe" record -q -o "$out/t-$name-budget" --search-budget "$pct" -- python3 "$prog"
  "$cuprobe" analyze "$out/t-$name-budget" >"$out/$name-budget.analysis" 2>&1
  grep -E "search budget|\] research-storm" "$out/$name-budget.analysis" | sed "s/^/$name budget: /" >>"$res"
  if [ "$name" = healthy-fixed ]; then
    # Two traced runs without the budget: how much the benchmark's winners differ from run to run
    # on their own, beside how much they differ with the budget.
    run_arm "$name" traced "$cuprobe" record -q -o "$out/t-$name-traced" -- python3 "$prog"
    run_arm "$name" traced2 "$cuprobe" record -q -o "$out/t-$name-traced2" -- python3 "$prog"
    for arm in traced traced2 budget; do "$cuprobe" plans export -q -o "$out/plans-$arm.json" "$out/t-$name-$arm"; done
    "$cuprobe" dump "$out/t-$name-budget" | grep -c '"type":"pin"' | sed "s/^/$name budget: pin records: /" >>"$res"
    python3 - "$out"/plans-traced.json "$out"/plans-traced2.json "$out"/plans-budget.json >>"$res" <<'PY'
import json, sys
def plans(p):
    return {(x["hash"], x["api"]): (x["engine"], x.get("knobs")) for x in json.load(open(p))["plans"]}
a, b, c = (plans(p) for p in sys.argv[1:4])
same = lambda x, y: sum(1 for k in x if y.get(k) == x[k])
print("healthy-fixed plans: %d problems; traced vs traced2 %d the same; traced vs budget %d; traced2 vs budget %d"
      % (len(a), same(a, b), same(a, c), same(b, c)))
PY
  fi
done
echo "done after $(( $(date +%s) - start )) s" >>"$res"
cat "$res"
