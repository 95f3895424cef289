#!/usr/bin/env bash
# torch.multiprocessing.spawn with an NCCL process group (one rank per GPU; one GPU here): no RANK
# variable is set, so the rank must come from the NCCL communicator cuprobe saw created.
: "${CUPROBE:?}" "${TRACE_DIR:?}" "${SCEN:?}"
timeout -k 10 90 "$CUPROBE" record -q -o "$TRACE_DIR" -- python3 tests/gpu/nccl_rank.py
