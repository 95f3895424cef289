#!/usr/bin/env bash
# notsupported-app
# Run by run_corpus.sh: cwd = repo root; CUPROBE, TRACE_DIR, SCEN set.
: "${CUPROBE:?}" "${TRACE_DIR:?}" "${SCEN:?}"
timeout -k 10 90 "$CUPROBE" record -q -o "$TRACE_DIR" --fault 'cudnn-execute:NOT_SUPPORTED,problem=conv_fwd x[64\,3\,,name=every-plan' -- python3 "$SCEN/prog.py"
