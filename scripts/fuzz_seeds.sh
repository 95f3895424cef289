#!/usr/bin/env bash
# Seed inputs for the fuzz targets (tests/fuzz), generated rather than committed:
#
#   scripts/fuzz_seeds.sh OUT_DIR [BUILD_DIR]
#
# OUT_DIR/trace_fuzz/       small real binary traces: test programs (tests/programs) recorded under
#                           the shim against the test doubles, each cut after its last claimed chunk
# OUT_DIR/jsonl_fuzz/       `cuprobe dump` of those traces, their facts (cuprobe facts, unpacked),
#                           and the rule fixtures under 128 KiB
#                           (rules/fixtures/*/*/*.jsonl)
# OUT_DIR/fault_plan_fuzz/  nothing here: its seeds are committed (tests/fuzz/corpus/fault_plan_fuzz)
#
# The shim, `cuprobe` and the test programs come from BUILD_DIR (default build/, the normal
# build; the fuzz build has no shim), built here if they are not up to date.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: scripts/fuzz_seeds.sh OUT_DIR [BUILD_DIR]}"
build="${2:-$root/build}"

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCUPROBE_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target cuprobe cuprobe_shim cuprobe_test_programs >/dev/null

cuprobe="$build/bin/cuprobe"
programs="$build/tests/programs"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out/trace_fuzz" "$out/jsonl_fuzz"

# record NAME [cuprobe record options] -- COMMAND...: one seed per process the command runs.
record() {
  local name="$1"
  shift
  local dir="$work/$name"
  # Programs that fail on purpose (an out-of-memory error, abort) still leave their traces.
  "$cuprobe" record -q -o "$dir" "$@" >/dev/null 2>&1 || true
  local n=0 f claimed
  for f in "$dir"/*.cuprobe; do
    [ -f "$f" ] || continue
    # Everything after the last claimed chunk is preallocated zeros: 64 KiB header + claimed chunks.
    claimed=$(od -An -tu4 -j32 -N4 "$f" | tr -d ' ')
    head -c $(((claimed + 1) * 65536)) "$f" >"$out/trace_fuzz/$name-$n.cuprobe"
    n=$((n + 1))
  done
  if [ "$n" -eq 0 ]; then
    echo "fuzz_seeds: $name left no trace" >&2
    return 1
  fi
  "$cuprobe" dump "$dir" >"$out/jsonl_fuzz/$name.jsonl" 2>/dev/null || true
  # Its facts (cuprobe facts), unpacked: the facts lines the analysis reads back.
  if "$cuprobe" facts -q -o "$out/$name.facts" "$dir" 2>/dev/null; then
    zstd -qdc "$out/$name.facts" >"$out/jsonl_fuzz/$name-facts.jsonl" 2>/dev/null || true
    rm -f "$out/$name.facts"
  fi
}

record cudart -- "$programs/exercise_cudart"
record threads -- "$programs/thread_storm" 3 50
record launches --launch-events -- "$programs/launches"
record legacy_conv -- "$programs/legacy_conv"
record frontend -- "$programs/frontend_search" --benchmark --steps 2
record descriptors -- "$programs/descriptor_storm" 200
record faults --fault 'alloc:OOM,nth=2' --fault 'sync:EXECUTION_FAILED' -- \
  "$programs/fault_probe" malloc:100 malloc:200 sync last free
record mem_cap --mem-cap 6MiB --stacks all -- "$programs/stack_chain"
record stacks --stacks all -- "$programs/stack_chain"
record crash -- "$programs/crasher" abort
record fork -- "$programs/forker"
record driver -- "$programs/driver_direct"
FAKECUDA_MEM=$((1 << 30)) record oom -- "$programs/expandable_oom" $(((8 << 30) + (1 << 20)))

for f in "$root"/rules/fixtures/*/*/*.jsonl; do
  [ -f "$f" ] || continue
  if [ "$(stat -c %s "$f")" -le 131072 ]; then
    rel="${f#"$root"/rules/fixtures/}"
    cp "$f" "$out/jsonl_fuzz/fixture-${rel//\//-}"
  fi
done
echo "fuzz_seeds: $(ls "$out/trace_fuzz" | wc -l) traces, $(ls "$out/jsonl_fuzz" | wc -l) JSON Lines files in $out"
