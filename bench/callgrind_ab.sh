#!/usr/bin/env bash
# Instructions per call of the single-thread benchmarks of bench/shim_overhead, counted by valgrind's
# callgrind: a measure of the shim's added work that other load on the machine does not disturb
# (it does not see cache misses, contention or the shim's helper threads; overhead.sh does).
# Per benchmark and build: the instructions the benchmark loop spends in CUDA/cuDNN calls (inclusive,
# the double's own work counted) per iteration, direct and hooked; added = hooked - direct.
# (callgrind names the double's functions after the shim's, which have the same names; the
# inclusive counts are right, the object shown is not.)
# Usage: bench/callgrind_ab.sh BUILD_DIR... ; CUPROBE_STACKS passes through (e.g. off).
set -euo pipefail
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# name:API:the function that loops over the calls besides BM_<name>_<kind> (bench/shim_overhead.cpp; - none)
benches="StreamSynchronize:cudaStreamSynchronize:- MemGetInfo:cudaMemGetInfo:- LaunchKernel:cudaLaunchKernel:-
BackendExecute:cudnnBackendExecute:execute_loop GraphFinalize:cudnnBackendFinalize:graph_loop
ConvolutionForward:cudnnConvolutionForward:conv_loop FindConvolutionForward:cudnnFindConvolutionForwardAlgorithm:find_loop"
printf '%-24s %-10s %12s %12s %10s  %s\n' call stacks "direct Ir" "hooked Ir" "added Ir" build
for build in "$@"; do
  for b in $benches; do
    IFS=: read -r name api loop <<<"$b"
    declare -A ir=()
    for kind in direct hooked; do
      rm -rf "$out/trace" "$out/cg.out"
      LD_PRELOAD="$build/lib/cuprobe/libcuprobe.so" CUPROBE_OUT="$out/trace" CUPROBE_QUIET=1 \
        valgrind -q --tool=callgrind --callgrind-out-file="$out/cg.out" "$build/bin/shim_overhead" \
        "--benchmark_filter=^BM_${name}_${kind}/threads:1\$" --benchmark_min_time=0.02 >/dev/null 2>"$out/err" ||
        { cat "$out/err" >&2; exit 1; }
      # The benchmark function's callees: "  1,234 (..)  >   ???:cudnnX (567x) [object]".
      ir[$kind]="$(callgrind_annotate --inclusive=yes --threshold=100 --tree=calling "$out/cg.out" 2>/dev/null |
        python3 -c '
import re, sys
api, parents = sys.argv[1], sys.argv[2:]
inside, total, calls = False, 0, 0
for line in sys.stdin:
    if re.search(r"\*\s+\S+:", line):  # a function heading its callees
        inside = any(re.search(r"[:\s]" + re.escape(p) + r"\(", line) for p in parents)
        continue
    m = re.match(r"\s*([\d,]+) \([^)]*\)\s+>\s+\S*?:(cud\w+) \(([\d,]+)x\)", line)
    if inside and m:
        cost, callee, n = int(m[1].replace(",", "")), m[2], int(m[3].replace(",", ""))
        total += cost
        if callee == api:
            calls += n
print(f"{total / calls:.0f}" if calls else "nan")' "$api" "BM_${name}_${kind}" "$loop")"
    done
    printf '%-24s %-10s %12s %12s %10s  %s\n' "$name" "${CUPROBE_STACKS:-default}" "${ir[direct]}" \
      "${ir[hooked]}" "$(python3 -c "print(f'{float(\"${ir[hooked]}\") - float(\"${ir[direct]}\"):.0f}')")" "$build"
    unset ir
  done
done
