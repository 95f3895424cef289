#!/usr/bin/env bash
# storm-long
# Run by run_corpus.sh: cwd = repo root; CUPROBE, TRACE_DIR, SCEN set.
: "${CUPROBE:?}" "${TRACE_DIR:?}" "${SCEN:?}"
timeout -k 10 90 "$CUPROBE" record -q -o "$TRACE_DIR" -- python3 "$SCEN/prog.py"
