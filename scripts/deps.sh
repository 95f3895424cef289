#!/usr/bin/env bash
# Installs what building and testing cuprobe needs on Debian/Ubuntu, only what is missing.
# The CUDA Toolkit 13 and cuDNN 9 headers cannot come from Debian: they must already be
# installed (default /usr/local/cuda; or set CUDA_HOME / CUDNN_ROOT).
#
#   scripts/deps.sh          what the builds of scripts/test.sh need (GCC, with its ASan, UBSan and
#                            TSan runtimes; SQLite for `cuprobe export --format sqlite`; protobuf
#                            to decode Perfetto exports and headless Chromium to open the HTML
#                            report in the tests)
#   scripts/deps.sh --fuzz   also clang with libFuzzer, for scripts/fuzz.sh
set -euo pipefail

packages=(cmake ninja-build g++ binutils pkg-config python3 libfmt-dev nlohmann-json3-dev libcli11-dev
          libunwind-dev libgtest-dev libgmock-dev libbenchmark-dev libsqlite3-dev sqlite3
          protobuf-compiler libprotobuf-dev chromium)
fuzz=0
if [ "${1:-}" = "--fuzz" ]; then
  fuzz=1
  packages+=(clang)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# libFuzzer's runtime (libclang_rt.fuzzer) is a package of its own on Debian 12 and Ubuntu 24.04
# and later (libclang-rt-dev), part of libclang-common-N-dev (which clang brings) before.
fuzzer_runtime() {
  ((fuzz)) && apt-cache show libclang-rt-dev >/dev/null 2>&1 &&
    ! dpkg-query -W -f='${Status}' libclang-rt-dev 2>/dev/null | grep -q "install ok installed"
}
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if ((${#missing[@]})) || fuzzer_runtime; then
  $sudo apt-get update -qq
  if fuzzer_runtime; then missing+=(libclang-rt-dev); fi
  echo "cuprobe: installing missing packages: ${missing[*]}"
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
