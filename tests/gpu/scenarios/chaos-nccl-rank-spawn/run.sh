#!/usr/bin/env bash
# chaos-nccl-rank-spawn (issue 32): mp.spawn with an NCCL process group of one rank per GPU (one
# GPU here: a world of one): a rule aimed at rank 0, which only the NCCL communicator names (no
# RANK variable), fails that rank's third all_reduce with ncclRemoteError.
: "${CUPROBE:?}" "${TRACE_DIR:?}" "${SCEN:?}"
timeout -k 10 90 "$CUPROBE" record -q -o "$TRACE_DIR" \
  --fault 'ncclAllReduce:ncclRemoteError,nth=3,rank=0' -- python3 tests/gpu/nccl_rank.py --all-reduces 10
