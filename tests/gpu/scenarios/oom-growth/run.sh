#!/usr/bin/env bash
# oom-growth: tests/gpu/scenarios/oom-growth/prog.py
# Run by run_corpus.sh: cwd = repo root; CUPROBE, TRACE_DIR, SCEN set.
: "${CUPROBE:?}" "${TRACE_DIR:?}" "${SCEN:?}"
timeout -k 10 90 "$CUPROBE" record -q -o "$TRACE_DIR" -- python3 "$SCEN/../oom-growth/prog.py"
