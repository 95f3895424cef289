#!/usr/bin/env bash
# Configures and builds cuprobe into a build directory:
#
#   scripts/build.sh [DIR [CMAKE ARGS...] [--target TARGET...]]
#
# Without --target everything the configuration enables is built.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/build}"
shift || true
cmake_args=()
targets=()
[ -n "${CUDA_HOME:-}" ] && cmake_args+=("-DCUDAToolkit_ROOT=$CUDA_HOME")
[ -n "${CUDNN_ROOT:-}" ] && cmake_args+=("-DCUDNN_ROOT=$CUDNN_ROOT")
while (($#)); do
  if [ "$1" = "--target" ]; then
    shift
    targets+=("$@")
    break
  fi
  cmake_args+=("$1")
  shift
done
cmake -S "$root" -B "$dir" -G Ninja "${cmake_args[@]}" >/dev/null
if ((${#targets[@]})); then
  cmake --build "$dir" -j "$(nproc)" --target "${targets[@]}"
else
  cmake --build "$dir" -j "$(nproc)"
fi
