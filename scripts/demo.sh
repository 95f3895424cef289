#!/usr/bin/env bash
# Installs what is missing, builds what the demo needs (the `cuprobe` command, the shim, the test
# doubles and the example: no tests), records the bundled example and prints the analysis.
# With a GPU and PyTorch present it records examples/pytorch/convnet.py (a conv net with
# cudnn.benchmark on and changing image sizes: a re-search storm); otherwise the same cuDNN
# traffic replayed by examples/simulated against cuprobe's CUDA and cuDNN test doubles.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/deps.sh" --demo
# -O1 without debug information: a quarter less compile time than -O2 (docs/testing.md), for a
# command that reads a small trace here; the example keeps its debug information for the call
# sites it shows. scripts/test.sh and scripts/package.sh build with -O2 (RelWithDebInfo).
"$root/scripts/build.sh" "$root/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" -DCUPROBE_BUILD_TESTS=OFF -DCUPROBE_BUILD_BENCH=OFF -DCUPROBE_BUILD_EXAMPLES=ON \
  --target cuprobe cuprobe_shim simulated_storm
cuprobe="$root/build/bin/cuprobe"
run="$root/build/demo-run"
rm -rf "$run"
if command -v nvidia-smi >/dev/null 2>&1 && python3 -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "== recording examples/pytorch/convnet.py on $(nvidia-smi --query-gpu=name --format=csv,noheader | sed -n 1p)"
  "$cuprobe" record -o "$run" -- python3 "$root/examples/pytorch/convnet.py" --sizes random --steps 30
else
  echo "== no GPU with PyTorch here: replaying a convolution's cuDNN traffic with a new input shape"
  echo "   every 20 steps (cudnn.benchmark on) against cuprobe's CUDA and cuDNN test doubles"
  "$cuprobe" record -o "$run" -- "$root/build/examples/simulated_storm" --benchmark --bwd --shapes 12 --steps 20 >/dev/null
fi
echo
echo "== cuprobe analyze $run"
# Findings make analyze exit 1 (for CI gates); here they are the expected result.
"$cuprobe" analyze "$run" || [ $? -eq 1 ]
echo
echo "== cuprobe report -o $root/build/demo-report.html $run"
"$cuprobe" report -o "$root/build/demo-report.html" "$run"
echo "Open build/demo-report.html in a browser (one file, no network needed); docs/export.md has the other views."
