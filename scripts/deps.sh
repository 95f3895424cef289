#!/usr/bin/env bash
# Installs what building cuprobe needs on Debian/Ubuntu, only what is missing, for one purpose:
#
#   scripts/deps.sh --demo      the command, the shim, the test doubles and the example (scripts/demo.sh)
#   scripts/deps.sh             the above, plus what the tests of the normal build need (scripts/test.sh):
#                               GoogleTest, protobuf (to decode Perfetto exports), headless Chromium (to
#                               open the HTML report), SQLite's shell, and what building and installing
#                               the packages needs (python3-build, -setuptools, -wheel, -venv)
#   scripts/deps.sh --all       also Google Benchmark and clang with libFuzzer (scripts/test.sh --all)
#   scripts/deps.sh --package   what scripts/package.sh needs beyond the --demo set
#
# The CUDA Toolkit (12.x or 13.x) and cuDNN 9 headers cannot come from Debian: they must already
# be installed (default /usr/local/cuda; or set CUDA_HOME / CUDNN_ROOT).
set -euo pipefail

# libdw-dev (elfutils; with libelf-dev and zlib1g-dev): the symbolizer reads DWARF with it, linked
# from its static archives into the command, so the packages need nothing of it at run time.
# libzstd-dev: `cuprobe pack` and packed traces and facts files (static archive too).
demo=(cmake ninja-build g++ binutils libfmt-dev nlohmann-json3-dev libcli11-dev libsqlite3-dev libdw-dev zlib1g-dev
      libzstd-dev)
package=(python3 python3-build python3-setuptools python3-wheel python3-venv)
tests=(libgtest-dev libgmock-dev zstd slurm-wlm sqlite3 protobuf-compiler libprotobuf-dev chromium)
packages=("${demo[@]}")
fuzz=0
case "${1:-}" in
  --demo) ;;
  "") packages+=("${package[@]}" "${tests[@]}") ;;
  --all) packages+=("${package[@]}" "${tests[@]}" libbenchmark-dev clang); fuzz=1 ;;
  --package) packages+=("${package[@]}") ;;
  --fuzz) packages+=(clang); fuzz=1 ;;  # scripts/fuzz.sh: clang and libFuzzer's runtime
  -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "deps.sh: unknown option '$1'; one of --demo, --all, --fuzz, --package (or none)" >&2; exit 2 ;;
esac
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
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cuda="${CUDA_HOME:-/usr/local/cuda}"
cudnn="${CUDNN_ROOT:-$cuda}"
if [ ! -f "$cuda/include/cuda_runtime_api.h" ]; then
  echo "cuprobe: CUDA runtime headers not found in $cuda/include. Install the CUDA Toolkit 12 or 13" >&2
  echo "         (https://developer.nvidia.com/cuda-downloads) or set CUDA_HOME to its prefix." >&2
  exit 1
fi
if [ ! -f "$cudnn/include/cudnn_backend.h" ] && [ ! -f /usr/include/cudnn_backend.h ] &&
   [ ! -f /usr/include/x86_64-linux-gnu/cudnn_backend.h ]; then
  echo "cuprobe: cuDNN 9 headers not found in $cudnn/include. Install cuDNN 9 or set CUDNN_ROOT." >&2
  exit 1
fi
