#!/usr/bin/env bash
# thirdparty-dcgan
# Run by run_corpus.sh: cwd = repo root; CUPROBE, TRACE_DIR, SCEN set.
: "${CUPROBE:?}" "${TRACE_DIR:?}" "${SCEN:?}"
out="$(mktemp -d)"
timeout -k 10 90 "$CUPROBE" record -q -o "$TRACE_DIR" -- python3 tests/gpu/thirdparty/pytorch-examples-dcgan/main.py --dataset fake --niter 1 --accel --workers 2 --outf "$out"
rm -rf "$out"
