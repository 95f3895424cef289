#!/usr/bin/env bash
# cudnn.benchmark re-search storm: a conv net on images of 12 different sizes, benchmark on.
# Usage: examples/storm/run.sh [TRACE_DIR]
set -uo pipefail
source "$(dirname "$0")/../common.sh"
"$cuprobe" record -o "$out" -- python3 "$root/examples/pytorch/convnet.py" --sizes random --steps "${STEPS:-30}"
"$cuprobe" analyze "$out"
