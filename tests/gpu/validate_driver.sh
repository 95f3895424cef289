#!/usr/bin/env bash
# Real-GPU validation of driver-API capture (issue 10): the same out-of-memory program under the
# default allocator, expandable_segments:True and backend:cudaMallocAsync (oom-postmortem's request
# against PyTorch's own message), the memory cap on an expandable-segments job, NCCL's memory on
# two GPUs, memory cuprobe cannot see (memory-coverage), and the wrappers' cost. Run from the
# repository root on the GPU machine:
#   tests/gpu/validate_driver.sh BUILD_DIR OUT_DIR
# Prints a summary (also OUT_DIR/driver.log); reports and job outputs go to OUT_DIR/driver.tar.gz.
set -uo pipefail
build="$(cd "${1:?build dir}" && pwd)"
out="$(mkdir -p "${2:?out dir}" && cd "$2" && pwd)"
work="$(mktemp -d)"
cuprobe="$build/bin/cuprobe"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
section() { echo; echo "== $* ($(date -u +%T))"; }
summary() { timeout 120 "$cuprobe" analyze --json "$1" >"$work/$2.json" 2>"$work/$2.err"; python3 tests/gpu/summarize_driver.py "$work/$2.json"; }
{
  section "machine"
  date -u +%FT%TZ
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
  c10="$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libc10.so"))')"
  nm -D --defined-only "$c10" | grep -c reportOutOfMemoryToProfiler | sed 's/^/libc10.so exports reportOutOfMemoryToProfiler: /'

  for mode in default expandable async; do
    case $mode in
      default) conf="" ;;
      expandable) conf="expandable_segments:True" ;;
      async) conf="backend:cudaMallocAsync" ;;
    esac
    section "out of memory, allocator: ${conf:-default}"
    PYTORCH_CUDA_ALLOC_CONF="$conf" timeout 300 "$cuprobe" record -q -o "$work/oom-$mode" -- \
      python3 tests/gpu/oom_request.py 120 30 >"$work/oom-$mode.out" 2>&1
    echo "exit $?"; grep -E "PYTORCH_OOM|carried|no OOM|Error" "$work/oom-$mode.out" | cut -c1-260
    summary "$work/oom-$mode" "oom-$mode"
    timeout 120 "$cuprobe" dump "$work/oom-$mode" 2>/dev/null | python3 -c '
import json, sys, collections
n = collections.Counter()
for line in sys.stdin:
    j = json.loads(line)
    if j.get("type") == "call":
        n[j["api"] + (" (sample)" if j.get("sample") else "") + (" FAILED" if j["ret"] else "")] += 1
print("  calls:", ", ".join(f"{k} {v}" for k, v in sorted(n.items()) if k.startswith(("cuMem", "cudaMalloc", "cudaFree", "cudaMemGetInfo", "cudaGetDriverEntry", "_ZN3c10"))))'
  done

  section "memory cap 8GiB on an expandable-segments job"
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True timeout 300 "$cuprobe" record -q --mem-cap 8GiB -o "$work/cap" -- \
    python3 tests/gpu/oom_request.py 4 8 >"$work/cap.out" 2>&1
  echo "exit $?"; grep -E "PYTORCH_OOM|carried|no OOM" "$work/cap.out" | cut -c1-260
  summary "$work/cap" cap

  section "memory cuprobe cannot see (cudaMalloc through dlopen+dlsym of libcudart)"
  timeout 300 "$cuprobe" record -q -o "$work/unseen" -- python3 tests/gpu/unseen_alloc.py 10 >"$work/unseen.out" 2>&1
  echo "exit $?"; cat "$work/unseen.out"
  summary "$work/unseen" unseen

  if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
    section "NCCL all-reduce on two GPUs"
    timeout 300 "$cuprobe" record -q -o "$work/nccl" -- torchrun --nproc-per-node 2 tests/gpu/nccl_allreduce.py \
      >"$work/nccl.out" 2>&1
    echo "exit $?"; grep -E "rank|Error" "$work/nccl.out" | head
    summary "$work/nccl" nccl
  fi

  section "healthy training job (examples/pytorch/convnet.py, expandable segments): no findings expected from memory rules"
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True timeout 300 "$cuprobe" record -q -o "$work/healthy" -- \
    python3 examples/pytorch/convnet.py --sizes fixed --steps 60 >"$work/healthy.out" 2>&1
  echo "exit $?"; tail -2 "$work/healthy.out"
  summary "$work/healthy" healthy

  section "cuDNN capture still intact: random input sizes with benchmark on (research-storm expected)"
  timeout 300 "$cuprobe" record -q -o "$work/storm" -- python3 examples/pytorch/convnet.py --sizes random --steps 20 \
    >"$work/storm.out" 2>&1
  echo "exit $?"; tail -1 "$work/storm.out"
  summary "$work/storm" storm

  section "driver wrapper cost (bench/driver_calls.sh)"
  timeout 240 bench/driver_calls.sh "$build" 3

  if [ -n "${AB_ROUNDS:-}" ]; then
    section "ResNet-50 A/B with expandable segments (tests/gpu/overhead_ab.sh, $AB_ROUNDS rounds)"
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True timeout 400 tests/gpu/overhead_ab.sh "$build" "$work/ab" "$AB_ROUNDS"
  fi
} 2>&1 | tee "$out/driver.log"
tar -czf "$out/driver.tar.gz" -C "$work" . 2>/dev/null
