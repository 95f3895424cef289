"""Compares cuprobe's view of cuDNN executions with cuDNN's own API log of the same run.

Usage: python3 check_cudnn_log.py DUMP.jsonl CUDNN_LOG
Reads the engine global index of every cudnnBackendExecute in cuDNN's log
(CUDNN_LOGLEVEL_DBG=3) and in `cuprobe dump`, per thread in call order, and reports whether they
match one for one. Also counts search records against the distinct problems searched."""
import collections
import json
import re
import sys

dump_path, log_path = sys.argv[1], sys.argv[2]
lines = [json.loads(l) for l in open(dump_path)]
calls = [l for l in lines if l["type"] == "call"]
ours = collections.defaultdict(list)
for c in calls:
    if c["api"] == "cudnnBackendExecute":
        ours[c["tid"]].append(c.get("engine", -1))

theirs = collections.defaultdict(list)
block, func, thread = [], None, None
engine_re = re.compile(r"(?:globalIndex|global_index|engineId|engine_id|engineIndex)\D{0,20}?(-?\d+)", re.I)
thread_re = re.compile(r"Thread[=:]\s*(\d+)")
sample = []


def flush():
    if func == "cudnnBackendExecute":
        text = "\n".join(block)
        m = engine_re.search(text)
        theirs[thread].append(int(m.group(1)) if m else None)
        if len(sample) < 120:
            sample.extend(block[:60])


with open(log_path, errors="replace") as f:
    for raw in f:
        line = raw.rstrip("\n")
        m = re.search(r"function (\w+)\(\) called", line)
        if m:
            flush()
            block, func, thread = [line], m.group(1), None
            continue
        block.append(line)
        t = thread_re.search(line)
        if t and thread is None:
            thread = int(t.group(1))
    flush()

print("cuprobe executes per thread:", {t: len(v) for t, v in ours.items()})
print("cuDNN log executes per thread:", {t: len(v) for t, v in theirs.items()})
unknown = sum(1 for v in theirs.values() for e in v if e is None)
if unknown:
    print(f"log executes without a parsable engine id: {unknown}")
# Match threads by their sequences (thread ids may be named differently in the two).
remaining = dict(theirs)
matched = mismatched = 0
for tid, seq in ours.items():
    hit = next((k for k, v in remaining.items() if v == seq), None)
    if hit is not None:
        matched += len(seq)
        del remaining[hit]
    else:
        mismatched += len(seq)
        best = min(remaining.items(), key=lambda kv: abs(len(kv[1]) - len(seq)), default=(None, []))
        diffs = [(i, a, b) for i, (a, b) in enumerate(zip(seq, best[1])) if a != b][:10]
        print(f"thread {tid}: {len(seq)} executes, no identical log sequence; closest log thread {best[0]} "
              f"({len(best[1])}), first differences (index, cuprobe, log): {diffs}")
total = sum(len(v) for v in ours.values())
print(f"engine index per execute: {matched} of {total} match cuDNN's log one for one"
      + ("" if mismatched == 0 and not remaining else f"; {mismatched} do not"))
searches = [l for l in lines if l["type"] == "search"]
bench = [s for s in searches if s["mode"] == "benchmark"]
print(f"search records: {len(searches)} ({len(bench)} benchmark, {len(searches) - len(bench)} heuristic), "
      f"distinct problems among them: {len({s['problem_hash'] for s in searches})}, "
      f"complete: {sum(1 for s in searches if s['complete'])}")
for s in searches[:3]:
    ch = s.get("chosen", {})
    print(f"  {s['mode']} {s['problem'][:110]} | candidates {len(s['candidates'])} rejected {s['plans_rejected']} "
          f"timed {sum(1 for c in s['candidates'] if 'time_ms' in c)} winner engine {ch.get('engine')} "
          f"knobs {ch.get('knobs')} ws {ch.get('workspace')} wall {s['wall_ns'] / 1e6:.1f} ms "
          f"search ws {s['search_workspace'] >> 20} MiB")
if sample:
    open(log_path + ".execute_sample.txt", "w").write("\n".join(sample))
sys.exit(0 if mismatched == 0 and total > 0 else 1)
