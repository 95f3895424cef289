#!/usr/bin/env bash
# chaos-sticky-torchrun (issue 32): a sticky illegal address on rank 1 of a two-rank DDP job
# (torchrun; gloo, both ranks on one GPU), at its third synchronization (step 30).
# Run by run_corpus.sh: cwd = repo root; CUPROBE, TRACE_DIR, SCEN set.
: "${CUPROBE:?}" "${TRACE_DIR:?}" "${SCEN:?}"
timeout -k 10 120 "$CUPROBE" record -q -o "$TRACE_DIR" \
  --fault 'cudaDeviceSynchronize:cudaErrorIllegalAddress,nth=3,sticky,rank=1' -- \
  python3 -m torch.distributed.run --nproc_per_node 2 --master_addr 127.0.0.1 --master_port 29516 \
  tests/gpu/ddp_loop.py --steps 60 --timeout 15
