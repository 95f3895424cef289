"""Summarizes a `cuprobe dump` JSON Lines file: processes, calls by API (failed ones apart),
counted calls, cuDNN problems executed with their engines or algorithms, and search records.

Usage: python3 summarize_dump.py DUMP.jsonl"""
import collections
import json
import sys

lines = [json.loads(l) for l in open(sys.argv[1])]
procs = [l for l in lines if l["type"] == "process"]
calls = [l for l in lines if l["type"] == "call"]
for p in procs:
    print(f"process {p['pid']} {p['state']} events {p['events']} threads {p['threads']} "
          f"cudnn {p.get('cudnn_version')} (built for cudart {p.get('cudnn_cudart_version')}) "
          f"runtime {p.get('cuda_runtime_version')} stats {p['stats']}")
print("calls by api:", dict(collections.Counter(c["api"] for c in calls).most_common(25)))
failed = collections.Counter((c["api"], c["ret"]) for c in calls if c["ret"] != 0)
print("failed calls (api, status):", dict(failed))
counts = collections.Counter()
for c in (l for l in lines if l["type"] == "count"):
    counts[c["api"]] += c["calls"]
print("counted calls:", dict(counts.most_common(20)))
execs = collections.Counter()
for c in calls:
    if c["api"] == "cudnnBackendExecute":
        execs[(c.get("problem", "")[:100], c.get("engine"), c.get("knobs"))] += 1
    elif c["api"].startswith("cudnnConvolution") or c["api"].startswith("cudnnBatchNorm") or c["api"].startswith("cudnnRNN"):
        execs[(c.get("problem", "")[:100], c["api"], c.get("algo"))] += 1
print(f"distinct (problem, engine/algo) executed: {len(execs)}")
for k, n in list(execs.items())[:12]:
    print(f"  {n:4d}x {k}")
searches = [l for l in lines if l["type"] == "search"]
modes = collections.Counter((s["api"], s["mode"], s["complete"]) for s in searches)
print(f"search records: {len(searches)} {dict(modes)}; distinct problems: {len({s['problem_hash'] for s in searches})}")
backend_execs = [c for c in calls if c["api"] == "cudnnBackendExecute"]
unlinked = [c for c in backend_execs if not c.get("problem")]
print(f"backend executions without a problem: {len(unlinked)} of {len(backend_execs)}")
