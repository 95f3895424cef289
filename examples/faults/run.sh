#!/usr/bin/env bash
# Chaos scenarios: PyTorch training under cuprobe's fault mode, each recorded and analyzed.
# Usage: examples/faults/run.sh [SCENARIO...] [-o BASE_DIR]
#   fallback    NOT_SUPPORTED on the first two plans tried for one convolution: PyTorch moves on
#   no-engine   NOT_SUPPORTED on every execution of that convolution: "unable to find an engine"
#   one-oom     one cudaMalloc fails: the caching allocator frees its cache, retries, goes on
#   persistent  every allocation of 4 GiB or more fails: torch.OutOfMemoryError reaches the script
#   mem-cap     an 8 GiB memory cap: a ResNet-50 batch that fits the real GPU runs out of memory
#   replay      the one-oom run's faults injected again from its trace (--replay-faults)
# With no SCENARIO, all of them. Each gets BASE_DIR/<scenario>/ (trace) and
# BASE_DIR/<scenario>.{out,analysis,json} (the job's output, the report, the JSON report).
set -uo pipefail
source "$(dirname "$0")/../common.sh" >/dev/null
base="" scenarios=()
while [ $# -gt 0 ]; do
  case "$1" in
    -o) base="$2"; shift 2 ;;
    *) scenarios+=("$1"); shift ;;
  esac
done
[ -n "$base" ] || base="$(mktemp -d /tmp/cuprobe-faults.XXXXXX)"
mkdir -p "$base"
[ ${#scenarios[@]} -gt 0 ] || scenarios=(fallback no-engine one-oom persistent mem-cap replay)
train=(python3 "$root/examples/pytorch/chaos_train.py")
conv1='conv_fwd x[64\,3\,'  # the first convolution's forward problem (batch 64, 3 channels in)

run() {  # run NAME [record options...] -- job...
  local name="$1"; shift
  local opts=()
  while [ "$1" != "--" ]; do opts+=("$1"); shift; done
  shift
  echo "== $name: cuprobe record ${opts[*]} -- $*"
  "$cuprobe" record -o "$base/$name" "${opts[@]}" -- "$@" >"$base/$name.out" 2>&1
  echo "   exit status $?; $(grep -E '^(caught|result:)' "$base/$name.out" | tr '\n' ' ')"
  "$cuprobe" analyze "$base/$name" >"$base/$name.analysis" 2>&1
  "$cuprobe" analyze --json "$base/$name" >"$base/$name.json" 2>/dev/null
  sed -n '/fault injection/,/^$/p' "$base/$name.analysis" | sed 's/^/   /'
}

for s in "${scenarios[@]}"; do
  case "$s" in
    fallback) run fallback --fault "cudnn-execute:NOT_SUPPORTED,problem=$conv1,first=2,name=first-two-plans" -- "${train[@]}" ;;
    no-engine) run no-engine --fault "cudnn-execute:NOT_SUPPORTED,problem=$conv1,name=every-plan" -- "${train[@]}" ;;
    one-oom) run one-oom --fault "alloc:OOM,nth=6,name=sixth-alloc" -- "${train[@]}" ;;
    persistent) run persistent --fault "alloc:OOM,size>=4GiB,name=big-allocs" -- "${train[@]}" --big-alloc-gib 8 ;;
    mem-cap)
      run mem-cap-baseline -- "${train[@]}" --resnet50 --batch 256 --size 224 --steps 2
      run mem-cap --mem-cap 8GiB -- "${train[@]}" --resnet50 --batch 256 --size 224 --steps 2
      grep -A1 "oom-postmortem" "$base/mem-cap.analysis" | sed 's/^/   /' ;;
    replay)
      [ -d "$base/one-oom" ] || run one-oom --fault "alloc:OOM,nth=6,name=sixth-alloc" -- "${train[@]}"
      run replay --replay-faults "$base/one-oom" -- "${train[@]}" ;;
    *) echo "unknown scenario $s" >&2; exit 2 ;;
  esac
done
echo "traces and reports in $base"
