#!/usr/bin/env python3
"""Puts a PyTorch profiler (Kineto) trace and cuprobe's Chrome JSON export of the same run into
one trace file, on one time axis, to open in https://ui.perfetto.dev or chrome://tracing.

    cuprobe export --format chrome -o cuprobe.json RUN_DIR
    scripts/overlay_profiler.py kineto.json cuprobe.json -o overlay.json

Both tools stamp events with the traced machine's wall clock (CLOCK_REALTIME): Kineto writes
microseconds since its `baseTimeNanoseconds` (older versions: since the Unix epoch), cuprobe
microseconds since the Unix epoch. The overlay keeps Kineto's events as they are and moves
cuprobe's onto Kineto's base, so the profiler's operators and kernels and cuprobe's plan
selections, executions, synchronizations, memory counters and findings line up. cuprobe's
processes get their own process ids (pid + 10,000,000, named "cuprobe · ..."), so they show as
separate groups beside the profiler's rather than mixed into its thread tracks.

Only events inside the profiler's window are kept from cuprobe's trace unless --all is given
(cuprobe records the whole process; the profiler usually a few steps).
"""
import argparse
import gzip
import json
import sys

PID_OFFSET = 10_000_000


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        t = json.load(f)
    return t if isinstance(t, dict) else {"traceEvents": t}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kineto", help="torch.profiler's export_chrome_trace output (.json or .json.gz)")
    ap.add_argument("cuprobe", help="cuprobe export --format chrome output")
    ap.add_argument("-o", "--output", required=True, help="the merged trace (JSON)")
    ap.add_argument("--all", action="store_true", help="keep cuprobe's events outside the profiler's window")
    args = ap.parse_args(argv)

    try:
        k = load(args.kineto)
        c = load(args.cuprobe)
    except (OSError, ValueError) as e:
        print(f"overlay_profiler: cannot read input: {e}", file=sys.stderr)
        return 2
    kev = k.get("traceEvents") or []
    cev = c.get("traceEvents") or []
    if not kev:
        print(f"overlay_profiler: {args.kineto} holds no traceEvents (is it a torch.profiler trace?)", file=sys.stderr)
        return 2
    base_ns = int(k.get("baseTimeNanoseconds", 0))
    timed = [float(e["ts"]) for e in kev if "ts" in e and e.get("ph") != "M"]
    if timed and min(timed) > 1e14:
        base_ns = 0  # an older Kineto: absolute microseconds already
    shift_us = base_ns / 1000.0
    lo = min(timed) if timed else None
    hi = max(float(e["ts"]) + float(e.get("dur", 0)) for e in kev if "ts" in e and e.get("ph") != "M") if timed else None

    out = list(kev)
    kept = dropped = 0
    for e in cev:
        e = dict(e)
        if "pid" in e and isinstance(e["pid"], int):
            e["pid"] += PID_OFFSET
        if e.get("ph") == "M":
            if e.get("name") == "process_name":
                e["args"] = {"name": "cuprobe · " + str(e.get("args", {}).get("name", ""))}
            out.append(e)
            continue
        if "ts" in e:
            ts = float(e["ts"]) - shift_us
            end = ts + float(e.get("dur", 0))
            if not args.all and lo is not None and (end < lo or ts > hi):
                dropped += 1
                continue
            e["ts"] = round(ts, 3)
        out.append(e)
        kept += 1
    merged = {k2: v for k2, v in k.items() if k2 != "traceEvents"}
    merged["traceEvents"] = out
    try:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump(merged, f)
    except OSError as e:
        print(f"overlay_profiler: cannot write {args.output}: {e}", file=sys.stderr)
        return 2
    print(f"overlay_profiler: wrote {args.output}: {len(kev)} profiler events, {kept} cuprobe events"
          + (f" ({dropped} outside the profiler's window left out; --all keeps them)" if dropped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
