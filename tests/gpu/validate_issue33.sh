#!/usr/bin/env bash
# Issue 33 on the GPU machine: cuBLASLt capture against cuBLASLt's own log, what PyTorch does when
# cuDNN refuses an attention graph, an attention rebuild storm and its bucketed twin, and the
# transformer step's overhead A/B. Run from the repository root:
#   tests/gpu/validate_issue33.sh PREFIX OUT [PARTS]
# PREFIX: an installed cuprobe (bin/cuprobe); OUT: where logs, dumps and analyses go (at the end
# bundled with the traces into OUT/issue33.tgz unless BUNDLE=0); PARTS: any of
# "lt fallback storm ab pin fe" (default all). fe: cudnn-frontend's matmul and norm samples, built
# elsewhere (FE=path to a run script that runs the Catch2 binary; default .whl/fe/run_fe.sh). Every step is bounded by `timeout`; each writes its log
# under OUT as it goes.
set -u
prefix="${1:?prefix}"
out="${2:?out dir}"
parts="${3:-lt fallback storm ab pin fe}"
C="$prefix/bin/cuprobe"
w="$(mktemp -d)"
mkdir -p "$out"
T=tests/gpu/attention/transformer_step.py
has() { [[ " $parts " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/machine.txt" 2>&1

if has lt; then
  # Every matmul through cuBLASLt for 3 steps, with cuBLASLt's API log (level 5) as the oracle.
  CUBLASLT_LOG_LEVEL=5 CUBLASLT_LOG_FILE="$w/lt.log" timeout -k 5 120 "$C" record -q -o "$w/lt" -- \
    python3 "$T" --steps 3 --blas lt --lengths buckets:256,512 --layers 2 > "$out/lt.log" 2>&1
  echo "lt traced rc=$?"
  timeout -k 5 60 "$C" dump "$w/lt" > "$w/lt.jsonl" 2> "$out/lt-dump.err"
  python3 tests/gpu/check_cublaslt_log.py "$w/lt.jsonl" "$w/lt.log" > "$out/lt-oracle.txt" 2>&1
  echo "lt oracle rc=$?"; tail -8 "$out/lt-oracle.txt"
  timeout -k 5 60 "$C" analyze "$w/lt" > "$out/lt-analyze.txt" 2>&1; head -12 "$out/lt-analyze.txt"
  head -c 3000000 "$w/lt.log" | gzip > "$out/lt-log.gz"
  gzip -c "$w/lt.jsonl" | head -c 15000000 > "$out/lt-dump.jsonl.gz"
fi

if has fallback; then
  # cuDNN refuses every attention graph (a fault rule): what does PyTorch do, by backend choice?
  timeout -k 5 90 "$C" record -q -o "$w/fb" --fault 'cudnn-finalize:NOT_SUPPORTED,problem~^sdpa_' -- \
    python3 "$T" --fault-probe > "$out/fallback.log" 2>&1
  echo "fallback rc=$?"; grep -E "fallback-probe|torch" "$out/fallback.log"
  timeout -k 5 60 "$C" analyze "$w/fb" > "$out/fallback-analyze.txt" 2>&1; head -30 "$out/fallback-analyze.txt"
  timeout -k 5 60 "$C" dump "$w/fb" 2>/dev/null | gzip > "$out/fallback-dump.jsonl.gz"
fi

if has storm; then
  # Dynamic sequence lengths through cuDNN attention, then the same job bucketed to 4 lengths.
  for kind in random:128,2048 buckets:512,1024,1536,2048; do
    tag="${kind%%:*}"
    timeout -k 5 150 "$C" record -q -o "$w/storm-$tag" -- \
      python3 "$T" --steps 40 --sdpa cudnn --lengths "$kind" --batch 4 > "$out/storm-$tag.log" 2>&1
    echo "storm $tag rc=$?"; tail -1 "$out/storm-$tag.log"
    timeout -k 5 60 "$C" analyze "$w/storm-$tag" > "$out/storm-$tag-analyze.txt" 2>&1
    head -30 "$out/storm-$tag-analyze.txt"
    timeout -k 5 60 "$C" analyze --json "$w/storm-$tag" > "$out/storm-$tag.json" 2>/dev/null
    timeout -k 5 60 "$C" dump "$w/storm-$tag" 2>/dev/null | gzip > "$out/storm-$tag-dump.jsonl.gz"
  done
fi

if has ab; then
  # The transformer step plain and traced, alternated; every matmul through cuBLASLt and attention
  # through cuDNN, so that both new captures are on the hot path.
  args=(python3 "$T" --steps 40 --sdpa cudnn --blas lt --lengths fixed:1024)
  for i in 1 2 3; do
    if (( i % 2 )); then order="plain traced"; else order="traced plain"; fi
    for k in $order; do
      if [ "$k" = plain ]; then
        timeout -k 5 100 "${args[@]}" 2>&1 | tail -1 | sed "s/^/plain /"
      else
        rm -rf "$w/ab"
        timeout -k 5 100 "$C" record -q -o "$w/ab" -- "${args[@]}" 2>&1 | tail -1 | sed "s/^/traced /"
      fi
    done
  done | tee "$out/ab.log"
  python3 - "$out/ab.log" <<'PY'
import re, statistics, sys
v = {"plain": [], "traced": []}
for line in open(sys.argv[1]):
    m = re.match(r"(plain|traced) median_step_ms ([\d.]+)", line)
    if m:
        v[m.group(1)].append(float(m.group(2)))
if v["plain"] and v["traced"]:
    p, t = statistics.median(v["plain"]), statistics.median(v["traced"])
    print(f"transformer step: plain {p:.3f} ms, traced {t:.3f} ms, ratio {t / p:.4f} (runs {v})")
PY
  timeout -k 5 60 "$C" analyze "$w/ab" > "$out/ab-analyze.txt" 2>&1; head -12 "$out/ab-analyze.txt"
fi
if has pin; then
  # Attention plans (and the rest) exported from one run and pinned in the next: every selection
  # should be pinned, the losses equal (pinning replays the same plans).
  a=(python3 "$T" --steps 3 --sdpa cudnn --lengths buckets:256,512 --layers 2)
  timeout -k 5 100 "$C" record -q -o "$w/pin-a" -- "${a[@]}" > "$out/pin-a.log" 2>&1; echo "pin record rc=$?"
  timeout -k 5 60 "$C" plans export -o "$w/plans.json" "$w/pin-a" > "$out/pin-export.txt" 2>&1; tail -2 "$out/pin-export.txt"
  timeout -k 5 100 "$C" record -q -o "$w/pin-b" --pin-plans "$w/plans.json" -- "${a[@]}" > "$out/pin-b.log" 2>&1
  echo "pin replay rc=$?"
  timeout -k 5 60 "$C" dump "$w/pin-b" 2>/dev/null | grep '"type":"pin"' > "$out/pin-b-pins.jsonl"
  python3 - "$out/pin-b-pins.jsonl" <<'PY'
import collections, json, sys
pins = [json.loads(l) for l in open(sys.argv[1])]
by = collections.Counter((p["outcome"], p["problem"].split()[0]) for p in pins)
print("pin outcomes:", dict(by))
PY
  timeout -k 5 60 "$C" analyze "$w/pin-b" > "$out/pin-b-analyze.txt" 2>&1; head -20 "$out/pin-b-analyze.txt"
fi
if has fe; then
  # cudnn-frontend's matmul and norm samples plain, then traced with cuDNN's API log as the oracle
  # for the matmul and norm graphs' engines and knobs.
  FE="${FE:-.whl/fe/run_fe.sh}"
  sel='[matmul],[layernorm],[rmsnorm],[batchnorm],[BN],[adalayernorm]'
  timeout -k 5 150 "$FE" "$sel" > "$out/fe-plain.log" 2>&1; echo "fe plain rc=$?"; tail -3 "$out/fe-plain.log"
  CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG="$w/fe-cudnn.log" timeout -k 5 200 "$C" record -q -o "$w/fe" -- \
    "$FE" "$sel" > "$out/fe-traced.log" 2>&1
  echo "fe traced rc=$?"; tail -3 "$out/fe-traced.log"
  timeout -k 5 60 "$C" dump "$w/fe" > "$w/fe.jsonl" 2> "$out/fe-dump.err"
  grep '"type":"problem"' "$w/fe.jsonl" | python3 -c "
import json, sys, collections
c = collections.Counter(json.loads(l)['text'].split()[0] for l in sys.stdin)
print('fe problems by operation:', dict(c))"
  python3 tests/gpu/check_cudnn_log.py "$w/fe.jsonl" "$w/fe-cudnn.log" > "$out/fe-oracle.txt" 2>&1
  echo "fe oracle rc=$?"; tail -6 "$out/fe-oracle.txt"
  timeout -k 5 60 "$C" analyze "$w/fe" > "$out/fe-analyze.txt" 2>&1; head -20 "$out/fe-analyze.txt"
  gzip -c "$w/fe.jsonl" | head -c 10000000 > "$out/fe-dump.jsonl.gz"
fi
# The device machine sends back only a few files: everything in one archive, with the traces and
# cuBLASLt's log for analysis elsewhere (BUNDLE=0 leaves the files apart).
if [ "${BUNDLE:-1}" = 1 ]; then
  traces=()
  for d in lt fb fe ab pin-a pin-b storm-random storm-buckets lt.log; do [ -e "$w/$d" ] && traces+=("$d"); done
  (( ${#traces[@]} )) && traces=(-C "$w" "${traces[@]}")
  tar czf "$w/issue33.tgz" -C "$out" . "${traces[@]}" && find "$out" -mindepth 1 -delete &&
    mv "$w/issue33.tgz" "$out/issue33.tgz"
fi
du -sh "$out"
