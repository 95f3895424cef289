#!/usr/bin/env bash
# healthy-mallocasync
# Run by run_corpus.sh: cwd = repo root; CUPROBE, TRACE_DIR, SCEN set.
: "${CUPROBE:?}" "${TRACE_DIR:?}" "${SCEN:?}"
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync timeout -k 10 90 "$CUPROBE" record -q -o "$TRACE_DIR" -- python3 "$SCEN/prog.py"
