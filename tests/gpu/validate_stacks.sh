#!/usr/bin/env bash
# Real-GPU validation of call-site capture: the storm and out-of-memory examples recorded with
# the default stack mode, their findings' call sites (the scripts' own lines expected), and the
# cost of each stack mode on ResNet-50 training (alternating order). Run from the repository
# root on the GPU machine: tests/gpu/validate_stacks.sh BUILD_DIR OUT_DIR [ROUNDS]
# ONLY_COST=1 skips the examples; MODES="plain off alloc" picks the runs of the cost section.
set -uo pipefail
build="$(cd "${1:?build dir}" && pwd)"
out="$(mkdir -p "${2:?out dir}" && cd "$2" && pwd)"
rounds="${3:-2}"
work="$(mktemp -d)"
cuprobe="$build/bin/cuprobe"
section() { echo; echo "== $* ($(date -u +%T))"; }
cat >"$work/sites.py" <<'PY'
import json, sys
r = json.load(sys.stdin)
for f in r["findings"]:
    print("[%s] %s: %s" % (f["severity"], f["rule"], f["message"][:160]))
    for c in f.get("call_sites", []):
        print("    at", c[:400])
PY
cat >"$work/stacks.py" <<'PY'
import json, sys
stacks = [json.loads(l) for l in sys.stdin if l.startswith('{"type":"stack"')]
print(len(stacks), "distinct stacks;", sum(1 for s in stacks if s["python"]), "with Python frames")
for s in stacks[:2]:
    print("  python:", ["%s:%d %s" % (f["file"].split("/")[-1], f["line"], f["function"]) for f in s["python"]][:3])
    print("  native:", [f.get("text", "")[:90] for f in s["native"]][:5])
PY
sites() { "$cuprobe" analyze --json "$1" | python3 "$work/sites.py"; }
{
  section "machine"
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cudnn", torch.backends.cudnn.version())'

  if [ -z "${ONLY_COST:-}" ]; then
  section "storm (convnet.py --sizes random), default stacks"
  "$cuprobe" record -q -o "$work/storm" -- python3 examples/pytorch/convnet.py --sizes random --steps 30
  sites "$work/storm"
  "$cuprobe" dump "$work/storm" | python3 "$work/stacks.py"
  section "oom (oom_step.py), default stacks"
  "$cuprobe" record -q -o "$work/oom" -- python3 examples/pytorch/oom_step.py >/dev/null 2>&1
  sites "$work/oom"

  fi  # ONLY_COST

  section "cost per training step: ResNet-50, plain and each stack mode, alternating ($rounds rounds)"
  r50=(python3 examples/pytorch/resnet_train.py --arch resnet50 --benchmark --amp --channels-last --steps 50)
  "${r50[@]}" >/dev/null 2>&1  # warm-up: file cache, cuDNN kernels
  for i in $(seq 1 "$rounds"); do
    order="${MODES:-plain off alloc all}"
    (( i % 2 )) || order="$(echo $order | tr ' ' '\n' | tac | tr '\n' ' ')"
    for k in $order; do
      if [ "$k" = plain ]; then "${r50[@]}"
      else rm -rf "$work/r50"; "$cuprobe" record -q -o "$work/r50" --stacks "$k" -- "${r50[@]}"; fi | sed "s/^/$k /"
      if [ "$k" = alloc ]; then
        "$cuprobe" dump "$work/r50" | grep -c '"type":"stack"' | sed 's/^/alloc: distinct stacks /'
        "$cuprobe" dump "$work/r50" | grep '"type":"call"' | grep -c '"stack":' | sed 's/^/alloc: calls with a stack /'
      fi
      if [ "$k" = all ]; then
        "$cuprobe" dump "$work/r50" --no-events | head -1 | python3 -c 'import sys, json; print("all: events", json.loads(sys.stdin.readline())["events"])'
        ls -la "$work/r50" | tail -1
      fi
    done
  done
} 2>&1 | tee "$out/stacks.log"
python3 - "$out/stacks.log" <<'PY'
import re, statistics, sys, collections
v = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"(plain|off|alloc|all) .*median_step_ms ([\d.]+)", line)
    if m: v[m.group(1)].append(float(m.group(2)))
base = statistics.median(v["plain"]) if v["plain"] else None
for k in ("plain", "off", "alloc", "all"):
    if v[k]:
        med = statistics.median(v[k])
        print(f"{k:6} median step {med:.2f} ms over {v[k]}" + (f", {med / base:.3f} x plain" if base else ""))
PY
[ -n "${ONLY_COST:-}" ] || tar -C "$work" -czf "$out/stack-traces.tar.gz" storm oom 2>/dev/null
