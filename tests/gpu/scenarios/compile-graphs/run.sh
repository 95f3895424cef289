#!/usr/bin/env bash
# compile-graphs
# Run by run_corpus.sh: cwd = repo root; CUPROBE, TRACE_DIR, SCEN set. Compilation takes a while:
# 130 s for the python process (run_corpus.sh allows 150 s for the scenario).
: "${CUPROBE:?}" "${TRACE_DIR:?}" "${SCEN:?}"
timeout -k 10 130 "$CUPROBE" record -q -o "$TRACE_DIR" -- python3 "$SCEN/prog.py"
