"""Compares cuprobe's view of cuDNN executions with cuDNN's own API log of the same run.

Usage: python3 check_cudnn_log.py DUMP.jsonl CUDNN_LOG
cuDNN's log (CUDNN_LOGLEVEL_DBG=3) writes two blocks per call: the call with its decoded
arguments, then its status. For every cudnnBackendExecute call block it reads the engine_id
and the knobs of the plan; for every legacy convolution call block the algo. These are compared
per thread, in call order, with cuprobe's execution events. Legacy Find*Ex calls run the
convolution functions internally and cuDNN logs those too, so for the legacy API cuprobe's
sequence must be a subsequence of the log's. Exit status 0 when everything matches."""
import collections
import json
import re
import sys

dump_path, log_path = sys.argv[1], sys.argv[2]
lines = [json.loads(l) for l in open(dump_path)]
calls = [l for l in lines if l["type"] == "call"]
LEGACY = ("cudnnConvolutionForward", "cudnnConvolutionBackwardData", "cudnnConvolutionBackwardFilter")

ours_backend = collections.defaultdict(list)
ours_legacy = collections.defaultdict(list)
for c in calls:
    if c["api"] == "cudnnBackendExecute":
        ours_backend[c["tid"]].append((c.get("engine", -1), c.get("knobs", "")))
    elif c["api"] in LEGACY:
        ours_legacy[c["tid"]].append((c["api"], c.get("algo")))

log_backend = collections.defaultdict(list)
log_legacy = collections.defaultdict(list)
engine_re = re.compile(r"engine_id: type=int; val=(-?\d+);")
knob_re = re.compile(r"CUDNN_KNOB_TYPE_(\w+): type=int; val=(-?\d+);")
algo_re = re.compile(r"\balgo: type=\w+; val=\w+ \((\d+)\);")
thread_re = re.compile(r"Thread=(\d+);")
block, func = [], None
sample = []
pending = collections.defaultdict(collections.deque)  # func -> call entries still without a thread


def commit(func, thread, entry):
    (log_backend if func == "cudnnBackendExecute" else log_legacy)[thread].append(entry)


def flush():
    if func is None:
        return
    text = "\n".join(block)
    t = thread_re.search(text)
    thread = int(t.group(1)) if t else None
    entry = None
    if func == "cudnnBackendExecute" and "executionPlan:" in text:
        m = engine_re.search(text)
        knobs = ",".join(f"{k.lower()}={v}" for k, v in sorted(knob_re.findall(text), key=lambda kv: kv[0]))
        entry = (int(m.group(1)) if m else None, knobs)
        if len(sample) < 150:
            sample.extend(block)
    elif func in LEGACY and "algo:" in text:
        m = algo_re.search(text)
        entry = (func, int(m.group(1)) if m else None)
    if entry is not None:
        if thread is None:
            pending[func].append(entry)  # the thread is named in the status block that follows
        else:
            commit(func, thread, entry)
    elif thread is not None and pending[func]:
        commit(func, thread, pending[func].popleft())


with open(log_path, errors="replace") as f:
    for raw in f:
        line = raw.rstrip("\n")
        m = re.search(r"function (\w+)\(\) called", line)
        if m:
            flush()
            block, func = [line], m.group(1)
        else:
            block.append(line)
    flush()
    for f, entries in pending.items():
        for entry in entries:
            commit(f, None, entry)


def canonical_knobs(s):
    # cuDNN's log lists every knob of the engine, those the configuration leaves at -1 included;
    # cuprobe's plan identity leaves them out (docs/trace-format.md, "Knobs").
    return ",".join(sorted(p for p in s.split(",") if p and not p.endswith("=-1")))


def is_subsequence(small, big):
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


ok = True
total = sum(len(v) for v in ours_backend.values())
if total:
    matched_engines = matched_knobs = 0
    for tid, seq in ours_backend.items():
        logged = log_backend.get(tid, [])
        if len(logged) != len(seq):
            ok = False
            print(f"thread {tid}: cuprobe saw {len(seq)} backend executes, cuDNN logged {len(logged)}")
        for i, ((e1, k1), (e2, k2)) in enumerate(zip(seq, logged)):
            matched_engines += e1 == e2
            matched_knobs += canonical_knobs(k1) == canonical_knobs(k2)
            if e1 != e2 or canonical_knobs(k1) != canonical_knobs(k2):
                if ok:
                    print(f"thread {tid} execute #{i}: cuprobe engine {e1} knobs {k1} | log engine {e2} knobs {k2}")
                ok = False
    print(f"backend executes: cuprobe {total}, cuDNN log {sum(len(v) for v in log_backend.values())}; "
          f"engine index matches {matched_engines}/{total}, knobs match {matched_knobs}/{total}")
total_legacy = sum(len(v) for v in ours_legacy.values())
if total_legacy:
    exact = sub = 0
    for tid, seq in ours_legacy.items():
        logged = log_legacy.get(tid, [])
        exact += seq == logged
        sub += is_subsequence(seq, logged)
        if not is_subsequence(seq, logged):
            ok = False
            print(f"thread {tid}: legacy algorithms {seq[:6]} are not in cuDNN's log order {logged[:12]}")
    print(f"legacy convolution executions: cuprobe {total_legacy}, cuDNN log {sum(len(v) for v in log_legacy.values())}; "
          f"threads whose (function, algo) sequence equals the log's: {exact}/{len(ours_legacy)}, "
          f"is a subsequence of it: {sub}/{len(ours_legacy)}")
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
print("ORACLE MATCH" if ok and (total or total_legacy) else "ORACLE MISMATCH")
sys.exit(0 if ok and (total or total_legacy) else 1)
