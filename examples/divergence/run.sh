#!/usr/bin/env bash
# Two processes (torchrun, one per GPU; both on GPU 0 when there is only one) train ResNet-50
# with cudnn.benchmark on; the analyzer compares the plans each chose for the same problems.
# Usage: examples/divergence/run.sh [TRACE_DIR]
set -uo pipefail
source "$(dirname "$0")/../common.sh"
"$cuprobe" record -o "$out" -- python3 -m torch.distributed.run --standalone --nproc_per_node 2 \
  "$root/examples/pytorch/resnet_train.py" --arch resnet50 --benchmark --amp --channels-last --steps "${STEPS:-10}"
"$cuprobe" analyze "$out"
