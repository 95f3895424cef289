#!/usr/bin/env bash
# The shim's added time on real training, measured as an A/B in one session with the order
# alternated (plain, traced, traced, plain, ...) so that warming caches and clocks favour
# neither side, plus runs with the shim loaded but disabled (CUPROBE_DISABLE=1). Run from the
# repository root on the GPU machine: tests/gpu/overhead_ab.sh BUILD_DIR OUT_DIR [ROUNDS]
set -uo pipefail
build="$(cd "${1:?build dir}" && pwd)"
out="${2:?out dir}"
rounds="${3:-4}"
mkdir -p "$out"
work="$(mktemp -d)"
cuprobe="$build/bin/cuprobe"
shim="$build/lib/cuprobe/libcuprobe.so"
r50=(python3 examples/pytorch/resnet_train.py --arch resnet50 --benchmark --amp --channels-last --steps 50)
storm=(python3 examples/pytorch/convnet.py --sizes random --steps 30)
run() {  # kind label command...: prints "kind label output"
  local kind="$1" label="$2"; shift 2
  case "$kind" in
    plain) "$@" ;;
    traced) rm -rf "$work/t"; "$cuprobe" record -q -o "$work/t" -- "$@" ;;
    disabled) CUPROBE_DISABLE=1 LD_PRELOAD="$shim" "$@" ;;
  esac | sed "s/^/$kind $label /"
}
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
  "${storm[@]}" >/dev/null  # warms the file cache (cuDNN's kernels) for everything after it
  for i in $(seq 1 "$rounds"); do
    if (( i % 2 )); then order="plain traced"; else order="traced plain"; fi
    for k in $order; do run $k r50 "${r50[@]}"; done
    for k in $order; do run $k storm "${storm[@]}"; done
  done
  run disabled r50 "${r50[@]}"
  run disabled storm "${storm[@]}"
} 2>&1 | tee "$out/overhead_ab.log"
python3 - "$out/overhead_ab.log" <<'PY'
import re, statistics, sys, collections
v = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"(plain|traced|disabled) r50 .*first_step_ms (\d+) median_step_ms ([\d.]+)", line)
    if m:
        v[("r50 first step ms", m[1])].append(float(m[2]))
        v[("r50 median step ms", m[1])].append(float(m[3]))
    m = re.match(r"(plain|traced|disabled) storm .* in ([\d.]+) s", line)
    if m:
        v[("storm 30 steps s", m[1])].append(float(m[2]))
print(f"{'metric':22} {'plain':>24} {'traced':>24} {'disabled':>10} {'traced/plain':>12}")
for metric in ("r50 median step ms", "r50 first step ms", "storm 30 steps s"):
    p, t, d = v[(metric, "plain")], v[(metric, "traced")], v[(metric, "disabled")]
    if p and t:
        fmt = lambda xs: ",".join(f"{x:.1f}" for x in xs)
        print(f"{metric:22} {fmt(p):>24} {fmt(t):>24} {fmt(d):>10} {statistics.median(t) / statistics.median(p):12.3f}")
PY
