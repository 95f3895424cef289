#!/usr/bin/env bash
# The flight recorder's cost per event against the plain trace (issue 15): bench/overhead_ab.sh on
# one build, A with every event kept (CUPROBE_KEEP=all), B with a ring (CUPROBE_KEEP=last:64MiB,
# which the benchmark's millions of events wrap many times, so that chunk recycling is in the
# numbers), ROUNDS rounds each (default 3). The last column (B-A) is the ring's extra cost per call.
# Usage: bench/ring_ab.sh [BUILD_DIR [ROUNDS [OUT_DIR]]] [-- BENCHMARK OPTIONS...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../build}"
[ $# -gt 0 ] && shift
AB_ENV_A="CUPROBE_KEEP=all" AB_ENV_B="CUPROBE_KEEP=last:${RING_SIZE:-64MiB}" exec "$here/overhead_ab.sh" "$build" "$build" "$@"
