#!/usr/bin/env bash
# Installs what is missing, builds, records the bundled example and prints what was captured.
# With a GPU and PyTorch present it records examples/pytorch/conv_train.py; otherwise the
# simulated training loop in examples/simulated runs against cuprobe's CUDA test double.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/deps.sh"
"$root/scripts/build.sh" "$root/build"
cuprobe="$root/build/bin/cuprobe"
run="$root/build/demo-run"
rm -rf "$run"
if command -v nvidia-smi >/dev/null 2>&1 && python3 -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "== recording examples/pytorch/conv_train.py on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  "$cuprobe" record -o "$run" -- python3 "$root/examples/pytorch/conv_train.py"
else
  echo "== no GPU with PyTorch here: recording the simulated training loop against the CUDA test double"
  "$cuprobe" record -o "$run" -- "$root/build/examples/simulated_train"
fi
echo
echo "== what was captured (cuprobe dump, first lines; the whole trace: $cuprobe dump $run)"
"$cuprobe" dump "$run" | head -n 25 | cut -c1-240
