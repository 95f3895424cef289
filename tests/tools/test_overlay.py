"""scripts/overlay_profiler.py on a made-up Kineto trace and cuprobe export: cuprobe's events move
onto Kineto's base time, get their own process ids and names, and are cut to the profiler's
window; bad inputs are named."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "overlay_profiler.py")
BASE_NS = 1_790_000_000_000_000_000  # Kineto's baseTimeNanoseconds


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def main():
    d = tempfile.mkdtemp()
    kineto = {"baseTimeNanoseconds": BASE_NS, "traceEvents": [
        {"ph": "X", "name": "aten::cudnn_convolution", "pid": 42, "tid": 42, "ts": 1000.0, "dur": 50.0},
        {"ph": "X", "name": "cudaDeviceSynchronize", "pid": 42, "tid": 42, "ts": 1100.0, "dur": 10.0}]}
    base_us = BASE_NS / 1000
    cuprobe = {"traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 42, "args": {"name": "pid 42 on host h"}},
        {"ph": "X", "name": "engine 7", "pid": 42, "tid": 42, "ts": base_us + 1010.0, "dur": 20.0},
        {"ph": "X", "name": "cudaDeviceSynchronize", "pid": 42, "tid": 42, "ts": base_us + 1100.0, "dur": 10.0},
        {"ph": "X", "name": "cudaMalloc", "pid": 42, "tid": 42, "ts": base_us + 5.0, "dur": 1.0}]}
    kp, cp, op = (os.path.join(d, n) for n in ("k.json", "c.json", "o.json"))
    json.dump(kineto, open(kp, "w"))
    json.dump(cuprobe, open(cp, "w"))

    r = run(kp, cp, "-o", op)
    assert r.returncode == 0, r.stderr
    assert "1 outside the profiler's window" in r.stdout, r.stdout
    out = json.load(open(op))
    assert out["baseTimeNanoseconds"] == BASE_NS
    ev = out["traceEvents"]
    mine = [e for e in ev if e.get("pid") == 42 + 10_000_000]
    names = {e["name"]: e for e in mine}
    assert names["process_name"]["args"]["name"] == "cuprobe · pid 42 on host h", names["process_name"]
    assert abs(names["engine 7"]["ts"] - 1010.0) < 1e-3, names["engine 7"]
    assert abs(names["cudaDeviceSynchronize"]["ts"] - 1100.0) < 1e-3
    assert "cudaMalloc" not in names, "an event outside the profiler's window was kept"
    assert len([e for e in ev if e.get("pid") == 42]) == 2, "the profiler's events must stay as they were"

    r = run(kp, cp, "-o", op, "--all")
    assert r.returncode == 0 and any(e["name"] == "cudaMalloc" for e in json.load(open(op))["traceEvents"])

    json.dump({"traceEvents": []}, open(kp, "w"))
    r = run(kp, cp, "-o", op)
    assert r.returncode == 2 and "holds no traceEvents" in r.stderr, (r.returncode, r.stderr)
    r = run(os.path.join(d, "missing.json"), cp, "-o", op)
    assert r.returncode == 2 and "cannot read input" in r.stderr, r.stderr
    print("overlay_profiler: ok")


if __name__ == "__main__":
    main()
