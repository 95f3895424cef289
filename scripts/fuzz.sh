#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/*_fuzz.cpp) into build-fuzz/ and runs each for a while:
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 60 seconds, every target)
#
# Corpora: build-fuzz/corpus/TARGET (kept between runs; what libFuzzer finds goes there), seeded
# from build-fuzz/seeds/TARGET (scripts/fuzz_seeds.sh: real traces recorded under the shim) and
# tests/fuzz/corpus/TARGET (committed). A crash, a sanitizer report, a hang (-timeout=10) or an
# input that makes a target use more than 2 GiB ends that target's run: the input is written to
# build-fuzz/crashes/TARGET/ and this script exits 1 after the other targets, printing the command
# that reproduces it. Environment: CC/CXX (default clang/clang++), CUPROBE_SEED_BUILD (the build
# tree the seeds are recorded with, default build/). docs/testing.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
shift || true
if ! [[ "$seconds" =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]" >&2
  exit 2
fi
build="$root/build-fuzz"

"$root/scripts/deps.sh" --fuzz
cc="${CC:-clang}"
cxx="${CXX:-clang++}"
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$probe/p.cpp"
if ! "$cxx" -fsanitize=fuzzer "$probe/p.cpp" -o "$probe/p" 2>"$probe/err"; then
  echo "fuzz: $cxx cannot link libFuzzer (-fsanitize=fuzzer):" >&2
  cat "$probe/err" >&2
  echo "fuzz: install clang's runtime libraries (libclang-rt-dev, or libclang-common-N-dev)" >&2
  exit 1
fi

cmake_args=()
[ -n "${CUDA_HOME:-}" ] && cmake_args+=("-DCUDAToolkit_ROOT=$CUDA_HOME")
[ -n "${CUDNN_ROOT:-}" ] && cmake_args+=("-DCUDNN_ROOT=$CUDNN_ROOT")
cmake -S "$root" -B "$build" -G Ninja "${cmake_args[@]}" -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCUPROBE_FUZZ=ON -DCUPROBE_BUILD_TESTS=OFF -DCUPROBE_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target cuprobe_fuzz

targets=("$@")
if ((${#targets[@]} == 0)); then
  for f in "$build"/bin/*_fuzz; do
    [ -x "$f" ] && targets+=("$(basename "$f")")
  done
fi
if ((${#targets[@]} == 0)); then
  echo "fuzz: no targets built (tests/fuzz/*_fuzz.cpp)" >&2
  exit 1
fi

"$root/scripts/fuzz_seeds.sh" "$build/seeds" "${CUPROBE_SEED_BUILD:-$root/build}"

# UndefinedBehaviorSanitizer's reports say where only with a stack.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
failed=0
summary=()
for t in "${targets[@]}"; do
  bin="$build/bin/$t"
  if [ ! -x "$bin" ]; then
    echo "fuzz: no target $t (built: $(cd "$build/bin" && ls -- *_fuzz 2>/dev/null | tr '\n' ' '))" >&2
    exit 2
  fi
  corpus="$build/corpus/$t"
  crashes="$build/crashes/$t"
  log="$build/logs/$t.log"
  mkdir -p "$corpus" "$crashes" "$build/logs"
  dirs=("$corpus")
  for d in "$build/seeds/$t" "$root/tests/fuzz/corpus/$t"; do
    [ -d "$d" ] && dirs+=("$d")
  done
  echo "fuzz: $t for ${seconds}s (corpus $corpus, log $log)"
  rc=0
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$crashes/" "${dirs[@]}" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  units=$(find "$corpus" -type f | wc -l)
  if ((rc != 0)); then
    failed=1
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    kind=$(grep -m1 -oE 'ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer|libFuzzer)[^(]*' "$log" ||
           grep -m1 -oE 'runtime error: .*' "$log" || echo "exit status $rc")
    summary+=("$t: FAILED after ${execs:-?} executions: $kind")
    echo "fuzz: $t FAILED ($kind); the last lines of $log:" >&2
    tail -40 "$log" >&2
    if [ -n "$artifact" ]; then
      summary+=("  input: $artifact" "  reproduce: $bin $artifact")
    else
      summary+=("  no input was written; see $log")
    fi
  else
    summary+=("$t: ${execs:-?} executions in ${seconds}s, no failure ($units inputs in the corpus)")
  fi
done

echo "fuzz: summary"
printf '  %s\n' "${summary[@]}"
exit "$failed"
