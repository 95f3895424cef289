#!/usr/bin/env bash
# chaos-allreduce-hang (issue 32): rank 1's 20th allreduce held for 60 s (DELAY) in a two-rank
# NCCL DDP job with a 10 s process-group timeout: rank 0's collective waits on the GPU until the
# NCCL watchdog gives up. Needs two GPUs (NCCL refuses two ranks on one).
: "${CUPROBE:?}" "${TRACE_DIR:?}" "${SCEN:?}"
timeout -k 10 120 "$CUPROBE" record -q -o "$TRACE_DIR" \
  --fault 'ncclAllReduce:DELAY,delay=60s,nth=20,rank=1' -- \
  python3 -m torch.distributed.run --nproc_per_node 2 --master_addr 127.0.0.1 --master_port 29518 \
  tests/gpu/ddp_loop.py --steps 60 --timeout 10
