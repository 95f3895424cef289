#!/usr/bin/env bash
# drift-benchmark
# Run by run_corpus.sh: cwd = repo root; CUPROBE, TRACE_DIR, SCEN set.
: "${CUPROBE:?}" "${TRACE_DIR:?}" "${SCEN:?}"
timeout -k 10 90 "$CUPROBE" record -q -o "$TRACE_DIR" -- python3 -m torch.distributed.run --nproc_per_node 2 --master_addr 127.0.0.1 --master_port 29513 "$SCEN/prog.py"
