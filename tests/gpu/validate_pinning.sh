#!/usr/bin/env bash
# Plan pinning on a real GPU with PyTorch (issue 16; docs/dev/validation.md "Plan pinning"):
#  1. ResNet-50, cudnn.benchmark on: a run records and exports its plans; a second run pins them:
#     first-step and median step times of both, searches and candidates, and a bitwise probe (the
#     pinned plans compute what the searched ones did). Then three rounds of a normal run (no
#     cuprobe) and a pinned run, for the first-step ratio over several runs.
#  2. The same plan file marked for another GPU model: every selection steps aside, the job runs
#     as without pinning.
#  3. Two DDP ranks (spawned; on one GPU they share it): without and with a plan file learned
#     from the first run; analyze's algo-divergence and a bitwise probe of both ranks.
#  4. A dynamic-shape ResNet-18 (five input sides): a learning run, a pinned run, and benchmark
#     off without cuprobe for comparison.
# Usage: tests/gpu/validate_pinning.sh BUILD_DIR OUT_DIR. Every step is bounded; logs go to OUT_DIR
# as they are written, and the whole of OUT_DIR is packed into OUT_DIR/all.tgz at the end.
set -u
build="$1"
out="$2"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
cp="$build/bin/cuprobe"
work="$(mktemp -d)"
log="$out/log.txt"
step() { echo "== $(date +%T) $*" >>"$log"; }
train() { python3 "$here/pin_train.py" "$@"; }
pack() { tar -C "$out" -czf "$work/all.tgz" . 2>/dev/null && mv "$work/all.tgz" "$out/"; }
trap pack EXIT

step "versions"
python3 -c 'import torch,torchvision;print(torch.__version__, torchvision.__version__, torch.backends.cudnn.version(), torch.cuda.get_device_name(0))' >>"$log" 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$log" 2>&1

step "1a resnet50 benchmark, recorded"
timeout 120 "$cp" record -q -o "$work/r50a" -- python3 "$here/pin_train.py" --model resnet50 --steps 6 --probe >"$out/r50a.txt" 2>&1
echo "rc $?" >>"$log"
timeout 60 "$cp" plans export -o "$out/plans.json" "$work/r50a" >>"$log" 2>&1
step "1b resnet50 benchmark, pinned"
timeout 120 "$cp" record -q -o "$work/r50b" --pin-plans "$out/plans.json" -- python3 "$here/pin_train.py" --model resnet50 --steps 6 --probe >"$out/r50b.txt" 2>&1
echo "rc $?" >>"$log"
timeout 60 "$cp" analyze --json "$work/r50a" >"$out/r50a.json" 2>>"$log"
timeout 60 "$cp" analyze --json "$work/r50b" >"$out/r50b.json" 2>>"$log"
timeout 60 "$cp" analyze "$work/r50b" >"$out/r50b.analysis.txt" 2>&1
timeout 60 "$cp" dump --searches "$work/r50a" >"$out/r50a.searches.jsonl" 2>>"$log"
timeout 60 "$cp" dump --searches "$work/r50b" >"$out/r50b.searches.jsonl" 2>>"$log"
timeout 60 "$cp" dump --no-events "$work/r50b" | grep '"type":"pin"' >"$out/r50b.pins.jsonl" 2>>"$log"

step "2 another GPU model in the plan file"
sed -E 's/ g=[0-9a-f]{8}/ g=0badc0de/' "$out/plans.json" >"$work/other-gpu.json"
timeout 120 "$cp" record -q -o "$work/r50c" --pin-plans "$work/other-gpu.json" -- python3 "$here/pin_train.py" --model resnet50 --steps 3 >"$out/r50c.txt" 2>&1
echo "rc $?" >>"$log"
timeout 60 "$cp" analyze "$work/r50c" >"$out/r50c.analysis.txt" 2>&1
timeout 60 "$cp" dump --no-events "$work/r50c" | grep '"type":"pin"' >"$out/r50c.pins.jsonl" 2>>"$log"

step "3a ddp 2 ranks, benchmark, no pins"
timeout 150 "$cp" record -q -o "$work/ddpa" -- python3 "$here/pin_train.py" --model resnet18 --batch 32 --sizes 128 --steps 3 --ranks 2 --probe >"$out/ddpa.txt" 2>&1
echo "rc $?" >>"$log"
timeout 60 "$cp" plans export -o "$out/ddp-plans.json" "$work/ddpa" >>"$log" 2>&1
step "3b ddp 2 ranks, pinned"
timeout 150 "$cp" record -q -o "$work/ddpb" --pin-plans "$out/ddp-plans.json" -- python3 "$here/pin_train.py" --model resnet18 --batch 32 --sizes 128 --steps 3 --ranks 2 --probe --port 29542 >"$out/ddpb.txt" 2>&1
echo "rc $?" >>"$log"
timeout 60 "$cp" analyze --json "$work/ddpa" >"$out/ddpa.json" 2>>"$log"
timeout 60 "$cp" analyze --json "$work/ddpb" >"$out/ddpb.json" 2>>"$log"
timeout 60 "$cp" analyze "$work/ddpb" >"$out/ddpb.analysis.txt" 2>&1

step "4a dynamic shapes, learning"
sizes=160,192,224,256,288
timeout 150 "$cp" record -q -o "$work/dyna" --pin-plans "$out/dyn-plans.json" --pin-plans-learn -- python3 "$here/pin_train.py" --model resnet18 --batch 32 --sizes $sizes --steps 10 >"$out/dyna.txt" 2>&1
echo "rc $?" >>"$log"
step "4b dynamic shapes, pinned"
timeout 150 "$cp" record -q -o "$work/dynb" --pin-plans "$out/dyn-plans.json" -- python3 "$here/pin_train.py" --model resnet18 --batch 32 --sizes $sizes --steps 10 >"$out/dynb.txt" 2>&1
echo "rc $?" >>"$log"
timeout 60 "$cp" analyze --json "$work/dynb" >"$out/dynb.json" 2>>"$log"
step "4c dynamic shapes, benchmark off, no cuprobe"
timeout 120 python3 "$here/pin_train.py" --model resnet18 --batch 32 --sizes $sizes --steps 10 --benchmark 0 >"$out/dync.txt" 2>&1
echo "rc $?" >>"$log"
for round in 1 2 3; do
  step "1c round $round: resnet50 benchmark, no cuprobe"
  timeout 120 python3 "$here/pin_train.py" --model resnet50 --steps 6 >"$out/r50n$round.txt" 2>&1
  echo "rc $?" >>"$log"
  step "1d round $round: resnet50 benchmark, pinned"
  timeout 120 "$cp" record -q -o "$work/r50p$round" --pin-plans "$out/plans.json" -- python3 "$here/pin_train.py" --model resnet50 --steps 6 >"$out/r50p$round.txt" 2>&1
  echo "rc $?" >>"$log"
done
step "traces of the smaller runs, for analysis here"
(cd "$work" && timeout 60 tar -czf "$out/traces.tgz" ddpa ddpb r50b r50c dynb 2>>"$log")
ls -la "$out" >>"$log"
step "done"
