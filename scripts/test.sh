#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test three times: a normal build (build/), an
# AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/) and a ThreadSanitizer build
# (build-tsan/); then fuzzes each libFuzzer target for a minute (scripts/fuzz.sh, build-fuzz/).
# No GPU needed. docs/testing.md says what each part covers.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/deps.sh"
"$root/scripts/build.sh" "$root/build"
(cd "$root/build" && ctest --output-on-failure -j "$(nproc)")
"$root/scripts/build.sh" "$root/build-asan" -DCUPROBE_SANITIZE=ON -DCUPROBE_BUILD_BENCH=OFF
(cd "$root/build-asan" && ctest --output-on-failure -j "$(nproc)")
"$root/scripts/build.sh" "$root/build-tsan" -DCUPROBE_TSAN=ON -DCUPROBE_BUILD_BENCH=OFF
# Left out under TSan: two single-threaded volume tests (2 million cuDNN descriptor calls; 200
# hostile JSON Lines files with memory bounds set for ASan at most) that take 5 minutes there and
# find no race; the two builds above run them.
tsan_skip='^(CudnnCapture\.DescriptorStormKeepsTheMirrorBounded|JsonlHostile\.TwoHundredHostileFiles)$'
(cd "$root/build-tsan" && ctest --output-on-failure -j "$(nproc)" -E "$tsan_skip")
"$root/scripts/fuzz.sh" "${CUPROBE_FUZZ_SECONDS:-60}"
echo "cuprobe: all tests passed (normal, ASan+UBSan and TSan builds) and the fuzz targets found nothing"
