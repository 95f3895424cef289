#!/usr/bin/env bash
# Issue 29's benchmark (docs/dev/performance.md, "The search budget"), side by side in one run on
# one GPU:
# - storms (images, sequence lengths, audio, a detection model; BENCH_STORMS): cudnn.benchmark on
#   and off (plain python, no cuprobe), and benchmark on under `cuprobe record --search-budget PCT`.
#   The budget's wall time should be at most 1.1x the faster of on and off. BENCH_REPEAT=N
#   alternates the three arms N times and prints medians; a discarded warm-up run comes first
#   (BENCH_WARMUP=0: none).
# - fixed-shape jobs (the corpus's healthy-fixed, torchvision's ResNet-50 and ViT-B/16, DDP with two
#   ranks under torchrun; BENCH_FIXED): benchmark on plain, traced twice without the budget, and
#   under the budget. The budget should never apply (no pin records), with the steady step time of
#   the plain run and the plans of the traced runs (beside how much two traced runs differ on their
#   own: the benchmark's winners are not stable between processes).
# - same plans pinned on both sides (BENCH_PAIRS, PAIRS alternations): the budget's own cost.
# - the deferred-search check (tests/gpu/budget/deferred_check.py under --search-budget 20; skip
#   with BENCH_CHECK=0): swapped plans compute what PyTorch's own convolution computes.
#   tests/gpu/bench_search_budget.sh PREFIX OUT [PCT [TOTAL_SECONDS]]
# PREFIX: a build or the wheel's _prefix (bin/cuprobe). OUT/results.txt: one line per run
# ("NAME ARM rc=.. wall_ms=.. steady_ms=.."), the budget lines of the analyses, the plan checks.
# Programs read STEPS where they take it (storm-detection: 24 by default).
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

# The command that runs program NAME, into the array CMD.
command_of() {
  case "$1" in
    resnet50 | vit) CMD=(python3 "$here/budget/fixed.py" "$1") ;;
    ddp) CMD=(python3 -m torch.distributed.run --nproc_per_node 2 --master_addr 127.0.0.1
              --master_port $((29600 + RANDOM % 300)) "$scen/ddp-torchrun/prog.py") ;;
    *) CMD=(python3 "$scen/$1/prog.py") ;;
  esac
}

run_arm() {  # NAME ARM [COMMAND PREFIX...]: runs NAME's program after the prefix
  local name="$1" arm="$2"
  shift 2
  local guard
  guard=$(left)
  if [ "$guard" -lt 20 ]; then echo "$name $arm skipped (time)" >>"$res"; return; fi
  [ "$guard" -gt 240 ] && guard=240
  command_of "$name"
  local s e rc
  s=$(now_ms)
  SCENARIO_STEP_TIMES=1 timeout -k 5 "$guard" "$@" "${CMD[@]}" >"$out/$name-$arm.log" 2>&1
  rc=$?
  e=$(now_ms)
  local steady
  steady=$(grep -o 'steady: [0-9.]* ms/step' "$out/$name-$arm.log" | awk '{print $2}' | paste -sd/ -)
  echo "$name $arm rc=$rc wall_ms=$((e - s)) steady_ms=${steady:--}" >>"$res"
}

budget_lines() {  # NAME: the budget's line and research-storm findings of NAME's budget run
  "$cuprobe" analyze "$out/t-$1-budget" >"$out/$1-budget.analysis" 2>&1
  grep -E "search budget|\] research-storm|\] algo-divergence" "$out/$1-budget.analysis" | sed "s/^/$1 budget: /" >>"$res"
}

# The first benchmark searches on a machine load every candidate engine's kernels cold (storm-audio
# on an H100: 5.25 s for its 8 warm-up searches, 0.6 s in later runs), so a discarded warm-up run
# comes first (BENCH_WARMUP=0: none); BENCH_REPEAT=N alternates the arms N times (off, budget, on)
# and prints the medians and their ratios (one pass is not enough at the spread seen: 1.09-1.22x).
medians() {  # NAME: the medians of NAME's storm arms and the budget's ratios
  python3 - "$1" "$res" <<'PY'
import re, statistics, sys
name, res = sys.argv[1], sys.argv[2]
wall = {}
for line in open(res):
    m = re.match(r"(\S+) (on|off|budget)\d* rc=0 wall_ms=(\d+)", line)
    if m and m.group(1) == name:
        wall.setdefault(m.group(2), []).append(int(m.group(3)) / 1e3)
med = {k: statistics.median(v) for k, v in wall.items()}
parts = ["%s %.2f s (%d)" % (k, med[k], len(wall[k])) for k in ("off", "budget", "on") if k in med]
if "budget" in med and ("on" in med or "off" in med):
    faster = min(med[k] for k in ("on", "off") if k in med)
    parts.append("budget / faster of on and off %.2fx" % (med["budget"] / faster))
    if "on" in med:
        parts.append("on / budget %.2fx" % (med["on"] / med["budget"]))
print("%s medians: %s" % (name, "; ".join(parts)))
PY
}

for name in ${BENCH_STORMS-storm-images storm-seqlen storm-audio storm-detection}; do
  [ "${BENCH_WARMUP:-1}" = 1 ] && SCENARIO_CUDNN_BENCHMARK=1 run_arm "$name" warmup
  for i in $(seq "${BENCH_REPEAT:-1}"); do
    sfx=""
    [ "${BENCH_REPEAT:-1}" -gt 1 ] && sfx=$i
    SCENARIO_CUDNN_BENCHMARK=0 run_arm "$name" "off$sfx"
    run_arm "$name" "budget$sfx" "$cuprobe" record -q -o "$out/t-$name-budget$sfx" --search-budget "$pct" --
    SCENARIO_CUDNN_BENCHMARK=1 run_arm "$name" "on$sfx"
  done
  [ -d "$out/t-$name-budget" ] || ln -s "t-$name-budget1" "$out/t-$name-budget"
  budget_lines "$name"
  medians "$name" >>"$res"
done

for name in ${BENCH_FIXED-healthy-fixed resnet50 vit ddp}; do
  run_arm "$name" on
  run_arm "$name" traced "$cuprobe" record -q -o "$out/t-$name-traced" --
  run_arm "$name" traced2 "$cuprobe" record -q -o "$out/t-$name-traced2" --
  run_arm "$name" budget "$cuprobe" record -q -o "$out/t-$name-budget" --search-budget "$pct" --
  budget_lines "$name"
  for arm in traced traced2 budget; do "$cuprobe" plans export -q -o "$out/plans-$name-$arm.json" "$out/t-$name-$arm"; done
  "$cuprobe" dump "$out/t-$name-budget" | grep -c '"type":"pin"' | sed "s/^/$name budget: pin records: /" >>"$res"
  python3 - "$name" "$out/plans-$name-traced.json" "$out/plans-$name-traced2.json" "$out/plans-$name-budget.json" >>"$res" <<'PY'
import json, sys
def plans(p):
    try:
        return {(x["hash"], x["api"]): (x["engine"], x.get("knobs")) for x in json.load(open(p))["plans"]}
    except (OSError, ValueError) as e:
        print("%s: %s" % (p, e))
        return {}
a, b, c = (plans(p) for p in sys.argv[2:5])
same = lambda x, y: sum(1 for k in x if y.get(k) == x[k])
print("%s plans: %d problems; traced vs traced2 %d the same; traced vs budget %d; traced2 vs budget %d"
      % (sys.argv[1], len(a), same(a, b), same(a, c), same(b, c)))
PY
done

# Same plans on both sides (BENCH_PAIRS, PAIRS times each): the plans of one traced run pinned in
# every run, alternately without and with the budget, so that what differs is the budget alone
# (the benchmark's winners differ from run to run on their own, and with them the step time).
for name in ${BENCH_PAIRS-}; do
  run_arm "$name" ref "$cuprobe" record -q -o "$out/t-$name-ref" --
  "$cuprobe" plans export -q -o "$out/plans-$name-ref.json" "$out/t-$name-ref"
  for i in $(seq "${PAIRS:-3}"); do
    run_arm "$name" "pinned$i" "$cuprobe" record -q -o "$out/t-$name-pinned$i" --pin-plans "$out/plans-$name-ref.json" --
    run_arm "$name" "pinned-budget$i" "$cuprobe" record -q -o "$out/t-$name-pinned-budget$i" \
      --pin-plans "$out/plans-$name-ref.json" --search-budget "$pct" --
    "$cuprobe" dump "$out/t-$name-pinned-budget$i" | grep -o '"outcome":"[a-z-]*"' | sort | uniq -c | tr -s ' ' |
      paste -sd, - | sed "s/^/$name pinned-budget$i: pin records:/" >>"$res"
  done
  grep -E "^$name pinned" "$res" | grep -o 'pinned[-a-z]*[0-9]* rc=[0-9]* wall_ms=[0-9]* steady_ms=[0-9.]*' |
    awk -v n="$name" '{split($4, s, "="); arm = ($1 ~ /budget/) ? "budget" : "plain"; v[arm] = v[arm] " " s[2]}
      END {for (a in v) print n " pinned " a " steady:" v[a]}' >>"$res"
done

if [ "${BENCH_CHECK:-1}" = 1 ] && [ "$(left)" -gt 60 ]; then
  s=$(now_ms)
  timeout -k 5 $(( $(left) > 180 ? 180 : $(left) )) "$cuprobe" record -q -o "$out/t-deferred-check" --search-budget 20 -- \
    python3 "$here/budget/deferred_check.py" >"$out/deferred-check.log" 2>&1
  echo "deferred-check rc=$? wall_ms=$(( $(now_ms) - s ))" >>"$res"
  grep -o 'deferred-check: .*' "$out/deferred-check.log" >>"$res"
  "$cuprobe" analyze "$out/t-deferred-check" 2>&1 | grep -E "search budget|\] algo-divergence" | sed "s/^/deferred-check: /" >>"$res"
  "$cuprobe" dump "$out/t-deferred-check" | grep '"outcome":"searched-later"' | head -20 >"$out/deferred-pins.jsonl"
fi
echo "done after $(( $(date +%s) - start )) s" >>"$res"
cat "$res"
