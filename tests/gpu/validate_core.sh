#!/usr/bin/env bash
# Real-GPU validation of the core shim (issue: core shim). Run from the repository root on the
# GPU machine with a Release build tree: tests/gpu/validate_core.sh BUILD_DIR OUT_DIR
# Writes logs and a summary under OUT_DIR; prints the summary last.
set -uo pipefail
build="${1:?build dir}"
out="${2:?out dir}"
mkdir -p "$out"
cuprobe="$build/bin/cuprobe"
log="$out/core.log"
{
  echo "== date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch, platform; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "python", platform.python_version())'
  ldd --version | head -1
  uname -r
  echo "== ldd of the shim"
  ldd "$build/lib/cuprobe/libcuprobe.so"
  echo "== unit and shim tests (test doubles) on this machine"
  "$build/bin/cuprobe_tests" --gtest_brief=1 2>&1 | tail -5
} >"$log" 2>&1

# Same output with and without the shim.
python3 tests/gpu/conv_alloc.py 30 >"$out/plain.out" 2>"$out/plain.err"
"$cuprobe" record -o "$out/run" -- python3 tests/gpu/conv_alloc.py 30 >"$out/traced.out" 2>"$out/traced.err"
echo "record exit: $?" >>"$log"
if cmp -s "$out/plain.out" "$out/traced.out"; then echo "output identical with and without the shim" >>"$log"; else echo "OUTPUT DIFFERS" >>"$log"; diff "$out/plain.out" "$out/traced.out" >>"$log"; fi
cat "$out/plain.err" "$out/traced.err" >>"$log"
"$cuprobe" dump "$out/run" >"$out/run.jsonl"
python3 - "$out/run.jsonl" >>"$log" <<'PY'
import collections, json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
procs = [l for l in lines if l["type"] == "process"]
calls = [l for l in lines if l["type"] == "call"]
print("processes:", len(procs), "calls:", len(calls))
for p in procs:
    print(" pid", p["pid"], "state", p["state"], "events", p["events"], "threads", p["threads"],
          "runtime", p.get("cuda_runtime_version"), "driver", p.get("cuda_driver_version"),
          "devices", [(d["name"], d["total_mem"], d["uuid"], d["pci_bus_id"]) for d in p["devices"]],
          "stats", p["stats"], "cmd", " ".join(p["cmdline"])[:80])
print("calls by api:", dict(collections.Counter(c["api"] for c in calls).most_common()))
print("cudaMalloc sizes (MiB):", [round(c["size"] / 2**20, 2) for c in calls if c["api"] == "cudaMalloc"])
print("failed calls:", collections.Counter((c["api"], c["ret"]) for c in calls if c["ret"] != 0))
syncs = [c for c in calls if c["api"] in ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize")]
print("sync calls:", len(syncs), "total ms:", round(sum(c["dur_ns"] for c in syncs) / 1e6, 3))
counts = [l for l in lines if l["type"] == "count"]
print("counted:", {(c["api"], c["device"]): c["calls"] for c in counts})
print("driver entry points:", sorted({c["symbol"] for c in calls if c["api"].startswith("cudaGetDriverEntryPoint")})[:40])
PY
# Overhead per call against the test double, on this machine.
LD_LIBRARY_PATH="$build/extra-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" bench/overhead.sh "$build" >"$out/overhead.txt" 2>&1
cat "$out/overhead.txt" >>"$log"
# SIGKILL of a traced PyTorch process leaves a readable trace.
( "$cuprobe" record -o "$out/killed" -- python3 -c '
import torch, os, signal
x = torch.ones(1 << 20, device="cuda"); torch.cuda.synchronize()
os.kill(os.getpid(), signal.SIGKILL)' ) >/dev/null 2>&1
"$cuprobe" dump --no-events "$out/killed" | python3 -c 'import json,sys; [print("killed process:", l["state"], l["events"], "events") for l in map(json.loads, sys.stdin) if l["type"]=="process"]' >>"$log" 2>&1
rm -rf "$out/run" "$out/killed"
gzip -f "$out/run.jsonl"
cat "$log"
