#!/usr/bin/env bash
# The storm example's network on one fixed image size: searches happen once, during warm-up.
# Usage: examples/healthy/run.sh [TRACE_DIR]
set -uo pipefail
source "$(dirname "$0")/../common.sh"
"$cuprobe" record -o "$out" -- python3 "$root/examples/pytorch/convnet.py" --sizes fixed --seconds "${SECONDS_TO_TRAIN:-10}"
"$cuprobe" analyze "$out"
