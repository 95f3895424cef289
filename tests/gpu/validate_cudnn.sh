#!/usr/bin/env bash
# Real-GPU validation of cuDNN capture (and the core shim's leftovers). Run from the repository
# root on the GPU machine: tests/gpu/validate_cudnn.sh BUILD_DIR OUT_DIR
# Prints a summary (also in OUT_DIR/cudnn.log); compressed dumps and log samples go to
# OUT_DIR/artifacts.tar.gz.
set -uo pipefail
build="${1:?build dir}"
out="${2:?out dir}"
work="$(mktemp -d)"
mkdir -p "$out"
cuprobe="$build/bin/cuprobe"
log="$out/cudnn.log"
py=tests/gpu
section() { echo; echo "== $*"; }
{
  section "date $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())'

  for mode in benchmark heuristic; do
    flag=""; [ "$mode" = benchmark ] && flag="--benchmark"
    section "backend API, $mode: Conv2d(64,64,3) fwd+bwd, 3 input sizes, with cuDNN's API log as oracle"
    CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG="$work/$mode.cudnnlog" \
      "$cuprobe" record -q -o "$work/$mode" -- python3 $py/cudnn_conv.py $flag --shapes 3
    "$cuprobe" dump "$work/$mode" >"$work/$mode.jsonl"
    python3 $py/check_cudnn_log.py "$work/$mode.jsonl" "$work/$mode.cudnnlog"
    python3 $py/summarize_dump.py "$work/$mode.jsonl"
    ls -la "$work/$mode.cudnnlog" | awk '{print "cuDNN log size:", $5}'
  done

  for mode in benchmark heuristic; do
    flag=""; [ "$mode" = benchmark ] && flag="--benchmark"
    section "legacy API (TORCH_CUDNN_V8_API_DISABLED=1), $mode"
    TORCH_CUDNN_V8_API_DISABLED=1 CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG="$work/legacy-$mode.cudnnlog" \
      "$cuprobe" record -q -o "$work/legacy-$mode" -- python3 $py/cudnn_conv.py $flag --shapes 3
    "$cuprobe" dump "$work/legacy-$mode" >"$work/legacy-$mode.jsonl"
    python3 $py/summarize_dump.py "$work/legacy-$mode.jsonl"
    grep -c "function cudnnConvolution" "$work/legacy-$mode.cudnnlog" | sed 's/^/cuDNN log legacy convolution executions: /'
  done

  section "torchvision ResNet-18 training, batch 64, benchmark on (BatchNorm via the legacy API)"
  "$cuprobe" record -q -o "$work/resnet18" -- python3 examples/pytorch/resnet_train.py --arch resnet18 --benchmark --steps 10
  "$cuprobe" dump "$work/resnet18" >"$work/resnet18.jsonl"
  python3 $py/summarize_dump.py "$work/resnet18.jsonl"

  section "added time per training step: ResNet-50, batch 64, bf16 autocast, channels_last, benchmark on"
  for i in 1 2; do
    python3 examples/pytorch/resnet_train.py --arch resnet50 --benchmark --amp --channels-last --steps 40 | sed 's/^/plain:  /'
    "$cuprobe" record -q -o "$work/r50-$i" -- python3 examples/pytorch/resnet_train.py --arch resnet50 --benchmark --amp --channels-last --steps 40 | sed 's/^/traced: /'
    du -sb "$work/r50-$i" | awk '{print "trace bytes:", $1}'
  done
  "$cuprobe" dump --no-events "$work/r50-1" | python3 -c 'import json,sys; [print("r50 process:", l["events"], "events,", l["stats"]) for l in map(json.loads, sys.stdin) if l["type"]=="process"]'

  section "shim overhead per call (test double), this machine"
  LD_LIBRARY_PATH="$build/extra-libs" bench/overhead.sh "$build"
} 2>&1 | tee "$log"
tar -C "$work" -czf "$out/artifacts.tar.gz" --exclude='*.cudnnlog' --exclude='*.cuprobe' . 2>/dev/null
for f in "$work"/*.cudnnlog; do head -c 3000000 "$f" | gzip >"$out/$(basename "$f").head.gz"; done 2>/dev/null
ls -la "$out"
