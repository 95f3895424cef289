#!/usr/bin/env bash
# Configures and builds cuprobe into a build directory: scripts/build.sh [DIR [CMAKE ARGS...]]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/build}"
shift || true
cmake_args=()
[ -n "${CUDA_HOME:-}" ] && cmake_args+=("-DCUDAToolkit_ROOT=$CUDA_HOME")
[ -n "${CUDNN_ROOT:-}" ] && cmake_args+=("-DCUDNN_ROOT=$CUDNN_ROOT")
cmake -S "$root" -B "$dir" -G Ninja "${cmake_args[@]}" "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
