#!/usr/bin/env bash
# A training step that runs out of GPU memory, and the analyzer's explanation of it.
# Usage: examples/oom/run.sh [TRACE_DIR]
set -uo pipefail
source "$(dirname "$0")/../common.sh"
"$cuprobe" record -o "$out" -- python3 "$root/examples/pytorch/oom_step.py"
echo "(the job's exit status: $?; an out-of-memory crash is what this example shows)"
"$cuprobe" analyze "$out"
