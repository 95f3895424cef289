#!/usr/bin/env bash
# Installs what building and testing cuprobe needs on Debian/Ubuntu, only what is missing.
# The CUDA Toolkit 13 and cuDNN 9 headers cannot come from Debian: they must already be
# installed (default /usr/local/cuda; or set CUDA_HOME / CUDNN_ROOT).
set -euo pipefail

packages=(cmake ninja-build g++ binutils pkg-config python3 libfmt-dev nlohmann-json3-dev libunwind-dev
          libgtest-dev libgmock-dev libbenchmark-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "cuprobe: installing missing packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cuda="${CUDA_HOME:-/usr/local/cuda}"
cudnn="${CUDNN_ROOT:-$cuda}"
if [ ! -f "$cuda/include/cuda_runtime_api.h" ]; then
  echo "cuprobe: CUDA runtime headers not found in $cuda/include. Install the CUDA Toolkit 13" >&2
  echo "         (https://developer.nvidia.com/cuda-downloads) or set CUDA_HOME to its prefix." >&2
  exit 1
fi
if [ ! -f "$cudnn/include/cudnn_backend.h" ] && [ ! -f /usr/include/cudnn_backend.h ] &&
   [ ! -f /usr/include/x86_64-linux-gnu/cudnn_backend.h ]; then
  echo "cuprobe: cuDNN 9 headers not found in $cudnn/include. Install cuDNN 9 or set CUDNN_ROOT." >&2
  exit 1
fi
