#!/usr/bin/env bash
# rejections-routine
# Run by run_corpus.sh: cwd = repo root; CUPROBE, TRACE_DIR, SCEN set.
: "${CUPROBE:?}" "${TRACE_DIR:?}" "${SCEN:?}"
timeout -k 10 90 "$CUPROBE" record -q -o "$TRACE_DIR" --fault 'cudnn-execute:NOT_SUPPORTED,first=2,name=first-search' --fault 'cudnn-execute:NOT_SUPPORTED,problem=conv_wgrad,first=2,name=first-wgrad' -- python3 "$SCEN/prog.py"
