#!/usr/bin/env bash
# chaos-ecc-step (issue 32): an uncorrectable ECC error at step 20 of a single-GPU training job
# (healthy-fixed's program with a synchronize each step, SCENARIO_STEP_TIMES=1: the 20th fails;
# sticky: the context is lost from then on).
: "${CUPROBE:?}" "${TRACE_DIR:?}" "${SCEN:?}"
SCENARIO_STEP_TIMES=1 timeout -k 10 90 "$CUPROBE" record -q -o "$TRACE_DIR" \
  --fault 'cudaDeviceSynchronize:cudaErrorECCUncorrectable,nth=20,sticky' -- python3 "$SCEN/../healthy-fixed/prog.py"
