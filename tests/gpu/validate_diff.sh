#!/usr/bin/env bash
# `cuprobe diff` on real pairs (issue 31; docs/dev/validation.md "cuprobe diff on the GPU"):
# ResNet-50 (tests/gpu/budget/fixed.py, bf16 autocast, channels-last, cudnn.benchmark on) recorded
# as A, then runs that differ from A in exactly one thing:
#   A2   nothing (the same job again: no cause may come out above the noise)
#   OFF  cudnn.benchmark off (SCENARIO_CUDNN_BENCHMARK=0)
#   B32  batch 32 instead of 64
#   EXP  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
#   PIN  --pin-plans with A's exported plans
# each compared with A in text and JSON (the first cause is what the pair differs in), the
# library versions the shim recorded, A's plan file against the PIN and OFF runs, A's and A2's
# plan files compared, the report's section for OFF, diff of facts files against diff of
# runs, and `diff --ranks` of the corpus's drift-benchmark (two torchrun ranks, one with
# benchmark off).
# Usage: tests/gpu/validate_diff.sh PREFIX OUT_DIR   (PREFIX/bin/cuprobe). Every step is bounded;
# logs go to OUT_DIR as they are written.
set -u
prefix="$1"
out="$2"
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cp="$prefix/bin/cuprobe"
mkdir -p "$out"
work="$(mktemp -d)"
log="$out/log.txt"
step() { echo "== $(date -u +%T) $*" >>"$log"; }
export STEPS="${STEPS:-20}"

step "versions"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import torch,torchvision;print("torch", torch.__version__, "torchvision", torchvision.__version__, "cudnn", torch.backends.cudnn.version(), "nccl", torch.cuda.nccl.version())'
  echo "cuDNN libraries on this machine (another version would be a pair of its own):"
  find / -xdev -name 'libcudnn.so*' 2>/dev/null | grep -v '/proc/' | sort | head -20
} >>"$log" 2>&1

rec() { # NAME [env…] -- cuprobe record options…
  local name=$1
  shift
  step "record $name"
  timeout 180 env "$@" >"$out/$name.out" 2>&1
  echo "rc $? $(grep -o 'steady[^,]*' "$out/$name.out" | tail -1)" >>"$log"
}
first_cause() { # the first cause of a cuprobe-diff/1 file, one line
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = d["causes"]
st = d["step_time"]
print("step %.2f -> %.2f ms, peak %+.0f MiB, %d causes, unattributed %s; first: %s" % (
    1e3 * (st["a_s"] or 0), 1e3 * (st["b_s"] or 0), (d["peak_memory"]["delta"] or 0) / 2**20, len(c),
    d["unattributed_s_per_step"], (c[0]["kind"] + ": " + c[0]["what"]) if c else "none"))' "$1"
}
diff_a() { # X: A against X, text and JSON, as soon as X is recorded (a run cut short keeps what it has)
  step "diff A $1"
  timeout 120 "$cp" diff "$work/A" "$work/$1" >"$out/diff-A-$1.txt" 2>&1
  echo "rc $?" >>"$log"
  timeout 120 "$cp" diff --json "$work/A" "$work/$1" >"$out/diff-A-$1.json" 2>>"$log"
  first_cause "$out/diff-A-$1.json" >>"$log" 2>&1
}
rec A "$cp" record -q -o "$work/A" -- python3 "$repo/tests/gpu/budget/fixed.py" resnet50
timeout 60 "$cp" plans export -o "$out/A.plans.json" "$work/A" >>"$log" 2>&1
step "library versions the shim recorded (A; drift-benchmark's ranks below)"
versions() {
  timeout 120 "$cp" dump "$1" 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    j = json.loads(line)
    if j.get("type") == "process":
        print(j.get("pid"), j.get("rank"), j.get("library_versions"), "cuda_driver", j.get("cuda_driver_version"))'
}
versions "$work/A" >>"$log" 2>&1
rec OFF SCENARIO_CUDNN_BENCHMARK=0 "$cp" record -q -o "$work/OFF" -- python3 "$repo/tests/gpu/budget/fixed.py" resnet50
diff_a OFF
rec A2 "$cp" record -q -o "$work/A2" -- python3 "$repo/tests/gpu/budget/fixed.py" resnet50
diff_a A2
rec B32 BATCH=32 "$cp" record -q -o "$work/B32" -- python3 "$repo/tests/gpu/budget/fixed.py" resnet50
diff_a B32
rec EXP PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "$cp" record -q -o "$work/EXP" -- python3 "$repo/tests/gpu/budget/fixed.py" resnet50
diff_a EXP
rec PIN "$cp" record -q -o "$work/PIN" --pin-plans "$out/A.plans.json" -- python3 "$repo/tests/gpu/budget/fixed.py" resnet50
diff_a PIN


step "a plan file against a run: A's plans against PIN's (pinned: the same) and OFF's"
timeout 120 "$cp" diff "$out/A.plans.json" "$work/PIN" >"$out/diff-plans-A-PIN.txt" 2>&1
echo "rc $?" >>"$log"
head -3 "$out/diff-plans-A-PIN.txt" >>"$log"
timeout 120 "$cp" diff "$out/A.plans.json" "$work/OFF" >"$out/diff-plans-A-OFF.txt" 2>&1
echo "rc $?" >>"$log"
head -3 "$out/diff-plans-A-OFF.txt" >>"$log"

step "plan files A and A2"
timeout 60 "$cp" plans export -o "$out/A2.plans.json" "$work/A2" >>"$log" 2>&1
timeout 60 "$cp" diff "$out/A.plans.json" "$out/A2.plans.json" >"$out/diff-plans-A-A2.txt" 2>&1
echo "rc $?" >>"$log"
head -5 "$out/diff-plans-A-A2.txt" >>"$log"

step "report --compare-with A, for OFF"
timeout 120 "$cp" report --compare-with "$work/A" -o "$out/OFF-vs-A.html" "$work/OFF" >>"$log" 2>&1
echo "rc $? $(grep -c 'cudnn.benchmark' "$out/OFF-vs-A.html" 2>/dev/null) mentions of cudnn.benchmark" >>"$log"

step "facts files: diff A OFF from facts equals diff of the runs"
timeout 120 "$cp" facts -o "$work/fA/%h.facts" "$work/A" >>"$log" 2>&1
timeout 120 "$cp" facts -o "$work/fOFF/%h.facts" "$work/OFF" >>"$log" 2>&1
timeout 120 "$cp" diff --json "$work/fA" "$work/fOFF" >"$out/diff-facts-A-OFF.json" 2>>"$log"
python3 -c '
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
strip = lambda d: {k: v for k, v in d.items() if k not in ("a", "b")}
print("facts vs runs: equal apart from paths:", strip(a) == strip(b))' "$out/diff-A-OFF.json" "$out/diff-facts-A-OFF.json" >>"$log" 2>&1

step "diff --ranks of drift-benchmark"
CUPROBE="$cp" TRACE_DIR="$work/drift" SCEN="$repo/tests/gpu/scenarios/drift-benchmark" timeout 120 \
  bash "$repo/tests/gpu/scenarios/drift-benchmark/run.sh" >"$out/drift.out" 2>&1
echo "rc $?" >>"$log"
timeout 120 "$cp" diff --ranks "$work/drift" >"$out/diff-ranks-drift.txt" 2>&1
echo "rc $?" >>"$log"
head -12 "$out/diff-ranks-drift.txt" >>"$log"
versions "$work/drift" >>"$log" 2>&1
step "done"
rm -rf "$work"
