#!/usr/bin/env bash
# Real-GPU validation of fault mode: the five chaos scenarios of examples/faults (plus a replay),
# what the real CUDA runtime does with a cudaMalloc it refuses (so injected failures can do the
# same), and the error state PyTorch reads after an injected failure. Run from the repository root
# on the GPU machine:
#   tests/gpu/validate_faults.sh BUILD_DIR OUT_DIR
# Prints a summary (also OUT_DIR/faults.log); reports, job outputs and traces go to
# OUT_DIR/faults.tar.gz. ONLY_LATER=1 runs only the determinism and cost sections; SKIP_BENCH=1
# leaves out the cost.
set -uo pipefail
build="$(cd "${1:?build dir}" && pwd)"
out="$(mkdir -p "${2:?out dir}" && cd "$2" && pwd)"
work="$(mktemp -d)"
export CUPROBE="$build/bin/cuprobe"
cuprobe="$CUPROBE"
section() { echo; echo "== $* ($(date -u +%T))"; }
{
  section "machine"
  date -u +%FT%TZ
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())'

  if [ -z "${ONLY_LATER:-}" ]; then
  section "what the real runtime leaves in *devPtr when cudaMalloc fails, and what an injected failure leaves"
  cat >"$work/ptr.py" <<'PY'
import ctypes, torch
torch.zeros(1, device="cuda")  # loads libcudart into the global scope, creates the context
rt = ctypes.CDLL(None)         # the global scope: under LD_PRELOAD, the shim's cudaMalloc
def attempt(size):
    p = ctypes.c_void_p(0x5e5e5e5e)
    r = rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(size))
    state = "kept" if p.value == 0x5e5e5e5e else ("null" if not p.value else "set")
    last = rt.cudaGetLastError()
    again = rt.cudaGetLastError()
    print(f"cudaMalloc({size}) -> {r}, pointer {state}; cudaGetLastError -> {last}, then {again}")
attempt(1 << 50)   # more than any GPU has: a genuine failure (the rule's 1st match, not fired)
attempt(3 << 30)   # the rule's 2nd match: failed on purpose
attempt(3 << 30)   # its 3rd: a real 3 GiB allocation
PY
  "$cuprobe" record -q -o "$work/ptr" --fault "cudaMalloc:OOM,size>=3GiB,at=2" -- python3 "$work/ptr.py"
  "$cuprobe" dump "$work/ptr" --api cudaMalloc,cudaGetLastError | grep '"type":"call"' | grep -v '"ret":0,' | cut -c1-220

  section "chaos scenarios (examples/faults/run.sh)"
  examples/faults/run.sh -o "$work/chaos"
  for f in "$work"/chaos/*.json; do
    python3 - "$f" <<'PY'
import json, sys, os
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(os.path.basename(sys.argv[1]), "unreadable:", e); sys.exit()
name = os.path.basename(sys.argv[1])[:-5]
for f in r["summary"].get("faults", []):
    print(f"{name}: rule {f['rule']}: matched {f['matched']}, injected {f['injected']}, next: {json.dumps(f['outcomes'])}")
for f in r["findings"]:
    print(f"{name}: [{f['severity']}] {f['rule']}: {f['message'][:500]}")
PY
  done
  section "the fallback run's plan for the first convolution, against a run without faults"
  "$cuprobe" record -q -o "$work/nofault" -- python3 examples/pytorch/chaos_train.py >/dev/null 2>&1
  for d in nofault chaos/fallback; do
    echo "$d:"; "$cuprobe" dump "$work/$d" --searches | grep '"type":"search"' | grep 'conv_fwd x\[64,3,' |
      python3 -c 'import sys, json
for l in sys.stdin:
    s = json.loads(l); w = s["candidates"][s["winner"]] if s.get("winner", -1) >= 0 else None
    print("  ", s["mode"], "candidates", len(s["candidates"]), "failed", sum(1 for c in s["candidates"] if c["exec_status"] not in (0, -1)),
          "winner engine", w and w["engine"], "knobs", w and w["knobs"])'
  done
  fi  # ONLY_LATER

  section "determinism: the same seeded plan twice on PyTorch"
  injected_calls='import sys, json
print(" ".join("{}#{}:{}".format(j["api"], j["fault_k"], j.get("size", "")) for j in map(json.loads, sys.stdin)))'
  for i in 1 2; do
    "$cuprobe" record -q -o "$work/seeded$i" --fault "alloc:OOM,p=0.25,seed=9,name=seeded" -- \
      python3 examples/pytorch/chaos_train.py --steps 3 >"$work/seeded$i.out" 2>&1
    "$cuprobe" dump "$work/seeded$i" | grep '"type":"call"' | grep '"injected"' | python3 -c "$injected_calls" >"$work/seeded$i.faults"
    echo "run $i: $(cat "$work/seeded$i.faults") | $(grep result: "$work/seeded$i.out")"
  done
  cmp -s "$work/seeded1.faults" "$work/seeded2.faults" && echo "same injected calls in both runs" || echo "RUNS DIFFER"

  if [ -z "${SKIP_BENCH:-}" ]; then
    section "shim cost per call with and without a fault plan (bench/overhead.sh)"
    for plan in "" "cudnn-execute:NOT_SUPPORTED" "sync:EXECUTION_FAILED,nth=999999999999"; do
      echo "plan: '${plan:-none}'"
      CUPROBE_FAULTS="$plan" LD_LIBRARY_PATH="$build/extra-libs" bench/overhead.sh "$build" | grep -E "call|StreamSynchronize +1 |MemGetInfo|LaunchKernel +1 "
    done
  fi
} 2>&1 | tee "$out/faults.log"
cp "$out/faults.log" "$work/"
tar -C "$work" -czf "$out/../faults.tar.gz" . 2>/dev/null; mv "$out/../faults.tar.gz" "$out/"
ls -la "$out"
