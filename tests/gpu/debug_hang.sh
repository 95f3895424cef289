#!/usr/bin/env bash
# Diagnoses a traced job that does not finish: runs it plainly, with the shim loaded but disabled,
# and traced; when the traced run is still going after a while, prints every thread's stack
# (cuda-gdb attaches; the GPU machine has no gdb). tests/gpu/debug_hang.sh BUILD_DIR OUT_DIR CMD...
set -uo pipefail
build="$(cd "${1:?build dir}" && pwd)"; shift
out="$(mkdir -p "${1:?out dir}" && cd "$1" && pwd)"; shift
shim="$build/lib/cuprobe/libcuprobe.so"
{
  echo "== plain"; timeout 120 "$@" 2>&1 | tail -2; echo "exit ${PIPESTATUS[0]}"
  echo "== shim loaded, CUPROBE_DISABLE=1"; CUPROBE_DISABLE=1 LD_PRELOAD="$shim" timeout 120 "$@" 2>&1 | tail -2; echo "exit ${PIPESTATUS[0]}"
  echo "== traced"
  CUPROBE_OUT=/tmp/hang-trace LD_PRELOAD="$shim" "$@" >/tmp/hang.out 2>&1 &
  pid=$!
  for i in $(seq 60); do sleep 1; kill -0 $pid 2>/dev/null || break; done
  if kill -0 $pid 2>/dev/null; then
    echo "still running after 60 s; stacks:"
    timeout 120 cuda-gdb -batch -p $pid -ex "info threads" -ex "thread apply all bt 25" 2>&1 | grep -v "^\[New\|^warning" | head -300
    kill -9 $pid
  else
    wait $pid; echo "exit $?"
  fi
  tail -3 /tmp/hang.out
} 2>&1 | tee "$out/hang.log"
