#!/usr/bin/env bash
# A real cuDNN workspace blowup (see prog.py) on a device of 8 GiB (cuprobe's memory cap).
: "${CUPROBE:?}" "${TRACE_DIR:?}" "${SCEN:?}"
timeout -k 10 90 "$CUPROBE" record -q -o "$TRACE_DIR" --mem-cap 8GiB -- python3 "$SCEN/prog.py"
