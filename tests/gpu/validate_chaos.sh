#!/usr/bin/env bash
# Chaos II on the GPU (issue 32; docs/faults.md): what PyTorch does under the faults cuprobe
# injects, and what the analysis says of it.
#  1. one process (ResNet-50, tests/gpu/budget/fixed.py, a torch.cuda.synchronize per step): an
#     illegal address at its 10th cudaDeviceSynchronize (step 10), sticky (a corrupted context)
#     and not sticky;
#  2. two DDP ranks under torchrun (tests/gpu/ddp_loop.py, a synchronize every 10 steps; on one
#     GPU they use gloo, with two or more NCCL): rank 1 gets a sticky illegal address at step 30
#     (rank=1), and then rank=random with a seed;
#  3. with NCCL (two GPUs or more): rank 1's 20th allreduce held for 60 s (DELAY) under a
#     process-group timeout of 15 s, for the watchdog.
# Usage: tests/gpu/validate_chaos.sh PREFIX OUT_DIR (PREFIX/bin/cuprobe). Every run is bounded.
set -u
prefix="$1"
out="$2"
here="$(cd "$(dirname "$0")" && pwd)"
cp="$prefix/bin/cuprobe"
mkdir -p "$out"
work="$(mktemp -d)"
log="$out/log.txt"
step() { echo "== $(date -u +%T) $*" >>"$log"; }
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
echo "GPUs: $gpus" >>"$log"

chaos() { # NAME SECONDS cuprobe-record-options... -- command...
  local name=$1 limit=$2
  shift 2
  step "$name"
  timeout -k 10 "$limit" "$cp" record -o "$work/$name" "$@" >"$out/$name.out" 2>&1
  echo "rc $?" >>"$log"
  grep -E "Error|error|Traceback|watchdog|Watchdog|timed out|Timeout|SIGABRT|exitcode|done after" "$out/$name.out" |
    cut -c1-300 | sort | uniq -c | sort -rn | head -12 >>"$log"
  timeout 120 "$cp" analyze "$work/$name" >"$out/$name.analysis.txt" 2>&1
  sed -n '/fault injection/,/^$/p' "$out/$name.analysis.txt" | cut -c1-400 >>"$log"
  grep -E "^  rank|^  pid|state|signaled|exited" "$out/$name.analysis.txt" | cut -c1-200 | head -8 >>"$log"
}

export STEPS=20 SCENARIO_STEP_TIMES=1
chaos sticky 120 --fault 'cudaDeviceSynchronize:cudaErrorIllegalAddress,nth=10,sticky' -- python3 "$here/budget/fixed.py" resnet50
chaos once 120 --fault 'cudaDeviceSynchronize:cudaErrorIllegalAddress,nth=10' -- python3 "$here/budget/fixed.py" resnet50
ddp=(python3 -m torch.distributed.run --nproc_per_node 2 --master_addr 127.0.0.1 --master_port 29541
  "$here/ddp_loop.py" --steps 60 --timeout 15)
chaos ddp-sticky-rank1 150 --fault 'cudaDeviceSynchronize:cudaErrorIllegalAddress,nth=3,sticky,rank=1' -- "${ddp[@]}"
chaos ddp-random-rank 150 --fault 'cudaDeviceSynchronize:cudaErrorIllegalAddress,nth=3,sticky,rank=random,seed=11' -- "${ddp[@]}"
if [ "$gpus" -ge 2 ]; then
  chaos ddp-allreduce-hang 150 --fault 'ncclAllReduce:DELAY,delay=60s,nth=20,rank=1' -- "${ddp[@]}"
else
  step "ddp-allreduce-hang: skipped, one GPU (NCCL refuses two ranks on one GPU; gloo has no ncclAllReduce)"
fi
step "done"
rm -rf "$work"
