#!/usr/bin/env bash
# thirdparty-imagenet
# Run by run_corpus.sh: cwd = repo root; CUPROBE, TRACE_DIR, SCEN set.
: "${CUPROBE:?}" "${TRACE_DIR:?}" "${SCEN:?}"
timeout -k 20 -s INT 40 "$CUPROBE" record -q -o "$TRACE_DIR" -- python3 tests/gpu/thirdparty/pytorch-examples-imagenet/main.py --dummy -a resnet18 -b 64 --epochs 1 --gpu 0 -j 4 -p 50
