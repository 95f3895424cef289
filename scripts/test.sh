#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test twice: a normal build (build/) and an
# AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/). No GPU needed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/deps.sh"
"$root/scripts/build.sh" "$root/build"
(cd "$root/build" && ctest --output-on-failure -j "$(nproc)")
"$root/scripts/build.sh" "$root/build-asan" -DCUPROBE_SANITIZE=ON -DCUPROBE_BUILD_BENCH=OFF
(cd "$root/build-asan" && ctest --output-on-failure -j "$(nproc)")
echo "cuprobe: all tests passed (normal and sanitized builds)"
