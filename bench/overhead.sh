#!/usr/bin/env bash
# Shim overhead per call: runs bench/shim_overhead under the shim and prints, per benchmark,
# the median direct and hooked times and their difference.
# Usage: bench/overhead.sh [BUILD_DIR [BENCHMARK OPTIONS...]], e.g. --benchmark_filter=Backend;
# OVERHEAD_JSON=FILE keeps Google Benchmark's JSON output (bench/overhead_ab.sh reads it).
set -euo pipefail
build="${1:-$(cd "$(dirname "$0")/.." && pwd)/build}"
shift || true
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
LD_PRELOAD="$build/lib/cuprobe/libcuprobe.so" CUPROBE_OUT="$out/trace" CUPROBE_MAX_MB=65536 \
  "$build/bin/shim_overhead" --benchmark_repetitions=5 --benchmark_min_time=0.2 \
  --benchmark_report_aggregates_only=true --benchmark_format=json "$@" >"$out/result.json"
if [ -n "${OVERHEAD_JSON:-}" ]; then cp "$out/result.json" "$OVERHEAD_JSON"; fi
python3 - "$out/result.json" <<'PY'
import json, sys, collections
rows = collections.defaultdict(dict)
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    name = b["run_name"]                       # BM_X_direct/threads:N
    base, threads = name.split("/threads:") if "/threads:" in name else (name, "1")
    api, kind = base[3:].rsplit("_", 1)
    rows[(api, int(threads))][kind] = b["cpu_time"] if int(threads) > 1 else b["real_time"]
print(f"{'call':22} {'threads':>7} {'direct ns':>10} {'hooked ns':>10} {'added ns':>9}")
for (api, threads), v in sorted(rows.items()):
    if "direct" in v and "hooked" in v:
        print(f"{api:22} {threads:7d} {v['direct']:10.1f} {v['hooked']:10.1f} {v['hooked']-v['direct']:9.1f}")
PY
