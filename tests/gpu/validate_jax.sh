#!/usr/bin/env bash
# A program this project did not write that takes its memory through the CUDA driver: JAX.
# Run from the repository root on the GPU machine: tests/gpu/validate_jax.sh BUILD_DIR OUT_DIR
set -uo pipefail
build="$(cd "${1:?build dir}" && pwd)"
out="$(mkdir -p "${2:?out dir}" && cd "$2" && pwd)"
work="$(mktemp -d)"
cuprobe="$build/bin/cuprobe"
{
  python3 -c 'import jax, jaxlib; print("jax", jax.__version__, "jaxlib", jaxlib.__version__)'
  timeout 300 "$cuprobe" record -q -o "$work/jax" -- python3 tests/gpu/jax_alloc.py 2>&1 | tail -3
  echo "exit ${PIPESTATUS[0]}"
  timeout 120 "$cuprobe" analyze --json "$work/jax" >"$work/jax.json" 2>"$work/jax.err"
  python3 tests/gpu/summarize_driver.py "$work/jax.json"
  timeout 120 "$cuprobe" analyze "$work/jax" 2>&1 | head -12
  timeout 120 "$cuprobe" dump "$work/jax" 2>/dev/null | python3 -c '
import json, sys, collections
n = collections.Counter()
for line in sys.stdin:
    j = json.loads(line)
    if j.get("type") == "call" and j["api"].startswith(("cu", "cuda")) and not j["api"].startswith("cudnn"):
        n[j["api"] + (" (sample)" if j.get("sample") else "") + (" FAILED" if j["ret"] else "")] += 1
print("  calls:", ", ".join(f"{k} {v}" for k, v in sorted(n.items())))'
} 2>&1 | tee "$out/jax.log"
tar -czf "$out/jax.tar.gz" -C "$work" . 2>/dev/null
