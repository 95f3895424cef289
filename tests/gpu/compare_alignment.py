"""Do cuprobe's export and a PyTorch profiler (Kineto) trace of the same run line up in time?

Usage: python3 compare_alignment.py KINETO_JSON CUPROBE_CHROME_JSON [API ...]

Pairs the calls of API (default cudaDeviceSynchronize) that both traces hold, in order, and
prints the offset of their start times (cuprobe minus Kineto) and of their durations. Kineto
writes times in microseconds, either since the Unix epoch or since `baseTimeNanoseconds` (newer
versions); cuprobe's Chrome export writes microseconds since the Unix epoch (the same instants
as its Perfetto export, which is in nanoseconds). Exit status 0 when at least 5 calls pair up
and the median start offset is under 1 ms, 1 otherwise.
"""
import json
import statistics
import sys


def kineto_calls(path, api):
    t = json.load(open(path))
    base = t.get("baseTimeNanoseconds", 0)
    events = t["traceEvents"] if isinstance(t, dict) else t
    out = []
    for e in events:
        if e.get("ph") == "X" and e.get("name") == api:
            ts = float(e["ts"])
            # Absolute microseconds are ~1.7e15 in 2026; relative ones are small.
            start_ns = ts * 1000 if ts > 1e14 else base + ts * 1000
            out.append((start_ns, float(e.get("dur", 0)) * 1000))
    return sorted(out), base


def cuprobe_calls(path, api):
    t = json.load(open(path))
    events = t["traceEvents"] if isinstance(t, dict) else t
    out = []
    for e in events:
        if e.get("ph") == "X" and e.get("name") == api:
            out.append((float(e["ts"]) * 1000, float(e.get("dur", 0)) * 1000))
    return sorted(out)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    apis = sys.argv[3:] or ["cudaDeviceSynchronize"]
    ok = True
    for api in apis:
        k, base = kineto_calls(sys.argv[1], api)
        c = cuprobe_calls(sys.argv[2], api)
        print(f"{api}: Kineto {len(k)} calls, cuprobe {len(c)} calls (Kineto baseTimeNanoseconds {base})")
        if not k or not c:
            ok = False
            continue
        # Each Kineto call with the cuprobe call nearest in start time; the profiler only saw the
        # profiled window, cuprobe the whole process.
        offsets, dur_diff = [], []
        j = 0
        for start, dur in k:
            while j + 1 < len(c) and abs(c[j + 1][0] - start) <= abs(c[j][0] - start):
                j += 1
            offsets.append(c[j][0] - start)
            dur_diff.append(c[j][1] - dur)
        med = statistics.median(offsets)
        print(f"  paired {len(offsets)}: start offset cuprobe-Kineto median {med / 1000:.1f} us, "
              f"min {min(offsets) / 1000:.1f} us, max {max(offsets) / 1000:.1f} us; "
              f"duration difference median {statistics.median(dur_diff) / 1000:.1f} us")
        if len(offsets) < 5 or abs(med) >= 1e6:
            ok = False
    print("aligned" if ok else "NOT aligned")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
