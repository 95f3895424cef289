#!/usr/bin/env bash
# Before/after comparison of the shim's cost per call: runs bench/overhead.sh on two build
# directories in turn (A, B, A, B, ...), ROUNDS times each, keeps every run's output and JSON in
# OUT_DIR, and prints per call and thread count the added ns of each run and their medians, from
# wall time (what overhead.sh prints) and from the calling threads' CPU time (less disturbed by
# other load on the machine).
# Usage: bench/overhead_ab.sh BUILD_A BUILD_B [ROUNDS [OUT_DIR]] [-- BENCHMARK OPTIONS...]
# Both builds need the same bench/shim_overhead.cpp (its benchmarks are matched by name).
# AB_ENV_A and AB_ENV_B add environment to one side ("CUPROBE_KEEP=all"): one build run two ways,
# as bench/ring_ab.sh does.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
a="$1"
b="$2"
shift 2
rounds=2
outdir=""
if [ $# -gt 0 ] && [ "$1" != "--" ]; then rounds="$1"; shift; fi
if [ $# -gt 0 ] && [ "$1" != "--" ]; then outdir="$1"; shift; fi
if [ $# -gt 0 ] && [ "$1" = "--" ]; then shift; fi
[ -n "$outdir" ] || outdir="$(mktemp -d)"
mkdir -p "$outdir"
for r in $(seq 1 "$rounds"); do
  for side in A B; do
    build="$a"
    side_env="${AB_ENV_A:-}"
    if [ "$side" = B ]; then build="$b"; side_env="${AB_ENV_B:-}"; fi
    echo "== round $r, $side ($build${side_env:+, $side_env}), $(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$outdir/$side-$r.txt"
    env $side_env OVERHEAD_JSON="$outdir/$side-$r.json" "$here/overhead.sh" "$build" "$@" | tee -a "$outdir/$side-$r.txt"
  done
done
python3 - "$outdir" "$rounds" <<'PY'
import json, sys, statistics, collections
outdir, rounds = sys.argv[1], int(sys.argv[2])

def added(path):
    """{(api, threads): (added wall-clock ns as overhead.sh prints it, added CPU ns)}"""
    rows = collections.defaultdict(dict)
    for bm in json.load(open(path))["benchmarks"]:
        if bm.get("aggregate_name") != "median":
            continue
        name = bm["run_name"]
        base, threads = name.split("/threads:") if "/threads:" in name else (name, "1")
        api, kind = base[3:].rsplit("_", 1)
        t = int(threads)
        rows[(api, t)][kind] = (bm["cpu_time"] if t > 1 else bm["real_time"], bm["cpu_time"])
    return {k: (v["hooked"][0] - v["direct"][0], v["hooked"][1] - v["direct"][1])
            for k, v in rows.items() if "direct" in v and "hooked" in v}

runs = {s: [added(f"{outdir}/{s}-{r}.json") for r in range(1, rounds + 1)] for s in "AB"}
keys = sorted(set().union(*[set(r) for s in "AB" for r in runs[s]]))
for col, label in ((0, "wall-clock (as overhead.sh)"), (1, "calling thread CPU time")):
    print(f"\nadded ns per call, {label}; A = {sys.argv[1]}/A-*, B = B-*")
    print(f"{'call':24} {'thr':>3}  {'A runs':30} {'A med':>8}  {'B runs':30} {'B med':>8} {'B-A':>8}")
    for k in keys:
        va = [r[k][col] for r in runs["A"] if k in r]
        vb = [r[k][col] for r in runs["B"] if k in r]
        ma = statistics.median(va) if va else float("nan")
        mb = statistics.median(vb) if vb else float("nan")
        fa = ", ".join(f"{x:.1f}" for x in va)
        fb = ", ".join(f"{x:.1f}" for x in vb)
        print(f"{k[0]:24} {k[1]:3d}  {fa:30} {ma:8.1f}  {fb:30} {mb:8.1f} {mb - ma:8.1f}")
PY
echo "runs kept in $outdir"
