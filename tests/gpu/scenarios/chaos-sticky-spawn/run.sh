#!/usr/bin/env bash
# chaos-sticky-spawn (issue 32): chaos-sticky-torchrun under torch.multiprocessing.spawn, which
# sets no RANK variable: rank=1 is the NCCL communicator's rank, so NCCL (one rank per GPU) and
# two GPUs are needed (on one GPU the job would use gloo, and no rank would be known).
: "${CUPROBE:?}" "${TRACE_DIR:?}" "${SCEN:?}"
timeout -k 10 120 "$CUPROBE" record -q -o "$TRACE_DIR" \
  --fault 'cudaDeviceSynchronize:cudaErrorIllegalAddress,nth=3,sticky,rank=1' -- \
  python3 tests/gpu/ddp_loop.py --spawn 2 --port 29517 --steps 60 --timeout 15
