#!/usr/bin/env bash
# Issue 12 (a typed trace) on the GPU machine. The examples are recorded and analyzed twice: by
# the cuprobe before the change (BASE, trace format 1) and by this tree (NEW, format 2); their
# findings are compared (tests/gpu/compare_findings.py: same rules and severities, messages equal
# with numbers masked: two recordings of a GPU job differ in timings). Then the trace size of a
# descriptor-heavy run (ResNet-50 training with cudnn.benchmark: every search finalizes dozens of
# plans) under both, and a format-1 dump (BASE's `cuprobe dump`) analyzed by NEW, compared exactly
# with BASE's analysis of the same trace.
#   tests/gpu/validate_typed_trace.sh BASE_BUILD NEW_BUILD OUT_DIR [examples|size|all]
# Logs go to OUT_DIR/typed.log as they are written; reports to OUT_DIR/*.json.
set -uo pipefail
base="$(cd "${1:?base build}" && pwd)"
new="$(cd "${2:?new build}" && pwd)"
out="${3:?out dir}"
part="${4:-all}"
mkdir -p "$out"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/typed.XXXXXX)"
log="$out/typed.log"
section() { echo; echo "== $* ($(date -u +%T))"; }
{
  section "machine"
  date -u +%FT%TZ
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())'
  "$base/bin/cuprobe" --version; "$new/bin/cuprobe" --version

  if [ "$part" = all ] || [ "$part" = examples ]; then
    for ex in storm healthy oom divergence; do
      for v in base new; do
        b="$base"; [ "$v" = new ] && b="$new"
        section "$ex with $v"
        CUPROBE="$b/bin/cuprobe" STEPS="${STEPS:-}" timeout 240 "$root/examples/$ex/run.sh" "$work/$v-$ex" \
          >"$out/$v-$ex.run.txt" 2>&1
        echo "run exit status $?"
        timeout 120 "$b/bin/cuprobe" analyze --json "$work/$v-$ex" >"$out/$v-$ex.json" 2>"$out/$v-$ex.err"
        echo "analyze exit status $?"
        python3 "$root/tests/gpu/trace_bytes.py" "$work/$v-$ex" | tail -1
      done
      python3 "$root/tests/gpu/compare_findings.py" "$out/base-$ex.json" "$out/new-$ex.json" "$ex (base run vs new run)"
    done
    # The traces, for analyzing again offline (by a later build of the analyzer).
    for v in base new; do
      (cd "$work" && tar -czf "$out/$v-traces.tar.gz" $v-storm $v-healthy $v-oom $v-divergence)
      ls -la "$out/$v-traces.tar.gz"
    done
    section "a format-1 dump read by the new analyzer (storm, healthy, oom: the same traces)"
    for ex in storm healthy oom; do
      "$base/bin/cuprobe" dump "$work/base-$ex" >"$work/base-$ex.jsonl" 2>/dev/null
      "$new/bin/cuprobe" analyze --json - <"$work/base-$ex.jsonl" >"$out/compat-$ex.json" 2>"$out/compat-$ex.err"
      echo "new analyze of the old dump: exit $?"
      python3 "$root/tests/gpu/compare_findings.py" "$out/base-$ex.json" "$out/compat-$ex.json" "$ex (old trace: base analyze vs new analyze of its dump)"
    done
  fi

  if [ "$part" = all ] || [ "$part" = size ]; then
    section "trace size, ResNet-50 training, cudnn.benchmark on, bf16, channels-last, 12 steps"
    for v in base new base new; do
      b="$base"; [ "$v" = new ] && b="$new"
      rm -rf "$work/size-$v"
      timeout 240 "$b/bin/cuprobe" record -q -o "$work/size-$v" -- python3 "$root/examples/pytorch/resnet_train.py" \
        --arch resnet50 --benchmark --amp --channels-last --steps 12 --warmup 2 | tail -2
      echo "$v: $(python3 "$root/tests/gpu/trace_bytes.py" "$work/size-$v" | tail -1)," \
        "$("$b/bin/cuprobe" dump "$work/size-$v" 2>/dev/null | grep -c '"type": *"call"') call lines," \
        "$("$b/bin/cuprobe" dump "$work/size-$v" 2>/dev/null | grep -c '"type": *"search"') searches"
      "$b/bin/cuprobe" analyze --json "$work/size-$v" >"$out/size-$v.json" 2>/dev/null
    done
    python3 "$root/tests/gpu/compare_findings.py" "$out/size-base.json" "$out/size-new.json" "resnet50 benchmark (base vs new)"
    (cd "$work" && tar -czf "$out/size-traces.tar.gz" size-base size-new)
    ls -la "$out/size-traces.tar.gz"
  fi
} 2>&1 | tee "$log"
rm -rf "$work"
