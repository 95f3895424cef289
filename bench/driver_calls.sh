#!/usr/bin/env bash
# Interleaved rounds of bench/driver_calls with and without the shim on a GPU machine:
#   bench/driver_calls.sh BUILD_DIR [ROUNDS]
# Each line is one run's median ns per call; the wrapper's cost is traced minus plain.
set -euo pipefail
build="$(cd "${1:?build dir}" && pwd)"
rounds="${2:-3}"
out="$(mktemp -d)"
# With the CUDA runtime PyTorch ships, when there is one (the configuration that matters).
cudart="$(python3 -c 'import glob, os, torch; print((glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "cu*", "lib", "libcudart.so.*")) + [""])[0])' 2>/dev/null || true)"
for r in $(seq "$rounds"); do
  for rt in "" ${cudart:+"$cudart"}; do
    DRIVER_CALLS_CUDART="$rt" "$build/bin/driver_calls"
    DRIVER_CALLS_CUDART="$rt" CUPROBE_OUT="$out/r$r" CUPROBE_QUIET=1 LD_PRELOAD="$build/lib/cuprobe/libcuprobe.so" \
      "$build/bin/driver_calls"
  done
done
du -sh "$out" | sed 's/^/trace size: /'
rm -rf "$out"
