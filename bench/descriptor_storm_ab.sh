#!/usr/bin/env bash
# The cuDNN descriptor storm (tests/programs/descriptor_storm: N times create, set 5 attributes,
# finalize and destroy a backend tensor descriptor, 8 cuDNN calls each, against the cuDNN test
# double) plain and traced, for two build directories in turn (A plain, A traced, B plain,
# B traced, ...), ROUNDS times. Prints each run's wall and CPU (user+sys) seconds, then the
# medians and the added ns per call (traced minus plain, over 8*N calls).
# Usage: bench/descriptor_storm_ab.sh BUILD_A BUILD_B [ROUNDS [N]]   (defaults 3, 500000)
set -euo pipefail
a="$1"
b="$2"
rounds="${3:-3}"
n="${4:-500000}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
results="$out/results"
: >"$results"
run() {  # side mode build: one run, bash's time to the millisecond (wall, and user+sys)
  local prog="$3/tests/programs/descriptor_storm" env=() t
  if [ "$2" = traced ]; then
    rm -rf "$out/trace"
    env=(LD_PRELOAD="$3/lib/cuprobe/libcuprobe.so" CUPROBE_OUT="$out/trace" CUPROBE_QUIET=1)
  fi
  t="$( { TIMEFORMAT='%3R %3U %3S'; time env "${env[@]}" "$prog" "$n" >/dev/null; } 2>&1 )"
  read -r wall user sys <<<"$t"
  echo "$1 $2 $wall $(echo "$user + $sys" | bc)" | tee -a "$results"
}
echo "side mode wall_s cpu_s"
for r in $(seq 1 "$rounds"); do
  for side in A B; do
    build="$a"
    [ "$side" = B ] && build="$b"
    run "$side" plain "$build"
    run "$side" traced "$build"
  done
done
python3 - "$results" "$n" <<'PY'
import sys, statistics, collections
n = int(sys.argv[2])
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    side, mode, wall, cpu = line.split()
    t[(side, mode, "wall")].append(float(wall))
    t[(side, mode, "cpu")].append(float(cpu))
for side in "AB":
    for m in ("wall", "cpu"):
        p = statistics.median(t[(side, "plain", m)])
        tr = statistics.median(t[(side, "traced", m)])
        print(f"{side} {m:4}: plain {p:.3f} s, traced {tr:.3f} s, added {(tr - p) / (8 * n) * 1e9:.1f} ns per call")
PY
