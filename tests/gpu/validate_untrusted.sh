#!/usr/bin/env bash
# Real-GPU validation of issue 26 (untrusted files and paths) with the wheel installed where
# PyTorch lives, on real PyTorch jobs:
#   1. a ResNet-18 run recorded, analyzed (healthy: no finding above info, no trace-integrity
#      finding), its plans exported and shown, a second run pinned from that file;
#   2. the plan file rewritten in place while 24 PyTorch jobs start under the shim: none killed;
#   3. FIFOs as plan and alerts files: record refuses at once; under plain LD_PRELOAD a job that
#      runs out of memory finishes, its alert on stderr; a regular alerts file gets the alert;
#   4. as root, links planted by nobody in a 1777 directory at every name the writers used: the
#      victims intact, the outputs regular files;
#   5. a job whose argv is not UTF-8 and holds escape sequences: SQLite export works, analyze
#      prints no raw control byte;
#   6. the symbolizer (libdw) on the run's stacks: how many native frames got file:line, and how
#      long analyze took.
#
#   tests/gpu/validate_untrusted.sh WHEEL OUT
# Writes OUT/untrusted.log (the summary lines) and OUT/results.tgz.
set -uo pipefail
wheel="$(readlink -f "${1:?wheel}")"
final="${2:?out dir}"
mkdir -p "$final"
root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/tests/gpu"
work="$(mktemp -d /tmp/untrusted-validate.XXXXXX)"
out="$work/results"
mkdir -p "$out"
log="$final/untrusted.log"
exec 3>&1
say() { echo "$*" | tee -a "$log" >&3; }
{
  echo "== date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch, platform; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "python", platform.python_version())'
  echo "uid $(id -u)"
} >>"$log" 2>&1
. "$here/install_wheel.sh"
install_wheel "$wheel" "$log" || { say "FAIL: pip install of $(basename "$wheel")"; exit 1; }
say "installed: $(command -v cuprobe) -> $(cuprobe --version)"
cd "$work"

# 1. A real run, its plans, a pinned run.
timeout 150 cuprobe record -q --stacks alloc -o "$work/r18a" -- python3 "$here/pin_train.py" --model resnet18 --batch 32 --steps 4 >"$out/r18a.txt" 2>&1
say "r18a record exit: $?"
start=$(date +%s%N)
timeout 120 cuprobe analyze --fail-on info "$work/r18a" >"$out/r18a.analysis.txt" 2>&1
rc=$?
say "r18a analyze exit: $rc (0 = no finding) in $(( ($(date +%s%N) - start) / 1000000 )) ms; trace-integrity lines: $(grep -c 'trace-integrity' "$out/r18a.analysis.txt")"
timeout 60 cuprobe plans export -o "$work/plans.json" "$work/r18a" >>"$log" 2>&1
say "plans export exit: $? ($(stat -c '%s bytes, mode %a' "$work/plans.json" 2>/dev/null)); leftovers: $(ls -a "$work" | grep -c '\.part$')"
timeout 30 cuprobe plans show "$work/plans.json" >"$out/plans.show.txt" 2>&1
say "plans show exit: $? ($(head -1 "$out/plans.show.txt"))"
timeout 150 cuprobe record -o "$work/r18b" --pin-plans "$work/plans.json" -- python3 "$here/pin_train.py" --model resnet18 --batch 32 --steps 4 >"$out/r18b.txt" 2>&1
say "r18b pinned record exit: $? ($(grep -o 'pinning [0-9]* cuDNN plans' "$out/r18b.txt"))"
timeout 120 cuprobe analyze --json "$work/r18b" >"$work/r18b.json" 2>>"$log"
python3 - "$work/r18b.json" <<'PY' | tee -a "$log" >&3
import json, sys
a = json.load(open(sys.argv[1]))
pins = [f for f in a["findings"] if f["rule"] == "plan-pinning"]
print("r18b findings:", [(f["rule"], f["severity"]) for f in a["findings"]])
for f in pins: print("  plan-pinning:", f["message"][:200])
PY

# 2. The plan file rewritten in place while PyTorch jobs start.
python3 - "$work/plans.json" "$work/big.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
plans = doc["plans"]
while len(json.dumps(doc)) < 1_500_000:
    doc["plans"] = doc["plans"] + plans
json.dump(doc, open(sys.argv[2], "w"), indent=1)
PY
say "big plan file: $(stat -c %s "$work/big.json") bytes"
cp "$work/big.json" "$work/big.src"
( while [ ! -e "$work/stop" ]; do cp "$work/big.src" "$work/big.json"; done ) &
writer=$!
cat >"$work/tiny.py" <<'PY'
import torch
torch.backends.cudnn.benchmark = True
x = torch.randn(8, 3, 64, 64, device="cuda")
print(float(torch.nn.Conv2d(3, 8, 3).cuda()(x).sum()))
PY
shim="$(cuprobe --shim-path)"
killed=0; failed=0
for batch in 1 2 3 4 5 6; do
  pids=()
  for j in 1 2 3 4; do
    LD_PRELOAD="$shim" CUPROBE_OUT="$work/rewrite" CUPROBE_QUIET=1 CUPROBE_PIN_PLANS="$work/big.json" \
      timeout 120 python3 "$work/tiny.py" >>"$out/rewrite.txt" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do
    wait "$p"; s=$?
    if [ "$s" -ge 128 ] && [ "$s" -ne 124 ]; then killed=$((killed + 1)); elif [ "$s" -ne 0 ]; then failed=$((failed + 1)); fi
  done
done
touch "$work/stop"; wait "$writer"
say "plan file rewritten in place while 24 PyTorch jobs started: killed $killed, failed otherwise $failed"

# 3. FIFOs, alerts.
mkfifo "$work/fifo"
timeout 30 cuprobe record -o "$work/fifo-run" --pin-plans "$work/fifo" -- true >"$out/fifo-record.txt" 2>&1
say "record --pin-plans FIFO: exit $? ($(head -1 "$out/fifo-record.txt" | cut -c1-160))"
timeout 30 cuprobe record -o "$work/fifo-run2" --alerts "$work/fifo" -- true >"$out/fifo-alerts.txt" 2>&1
say "record --alerts FIFO: exit $? ($(head -1 "$out/fifo-alerts.txt" | cut -c1-160))"
cat >"$work/oom.py" <<'PY'
import torch
try:
    torch.empty(1 << 48, dtype=torch.uint8, device="cuda")
except torch.OutOfMemoryError as e:
    print("caught OOM")
PY
s=$(date +%s)
LD_PRELOAD="$shim" CUPROBE_OUT="$work/oom-preload" CUPROBE_PIN_PLANS="$work/fifo" CUPROBE_ALERTS="file:$work/fifo" \
  timeout 120 python3 "$work/oom.py" >"$out/oom-preload.txt" 2>&1
say "plain LD_PRELOAD, FIFO plan + alerts files, an OOM job: exit $? in $(( $(date +%s) - s )) s; alert on stderr: $(grep -c 'cuprobe alert:' "$out/oom-preload.txt"); $(grep -o 'cannot write alerts to a file[^;]*' "$out/oom-preload.txt" | head -1)"
timeout 120 cuprobe record -q -o "$work/oom-run" --alerts "$work/alerts.log" -- python3 "$work/oom.py" >"$out/oom-record.txt" 2>&1
say "record --alerts FILE, an OOM job: exit $?; alert lines in the file: $(grep -c 'cuprobe alert:' "$work/alerts.log" 2>/dev/null) (mode $(stat -c %a "$work/alerts.log" 2>/dev/null))"

# 4. Links planted by another user.
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
  shared="$work/shared"; mkdir -m 1777 "$shared"
  mkdir -m 700 "$work/safe"
  intact=0; total=0; regular=0
  for w in report perfetto sqlite plans; do
    o="$shared/$w.out"
    for name in "$o" "$o.part" "$o.tmp"; do
      v="$work/safe/$w-$(basename "$name")"; echo precious >"$v"; chmod 600 "$v"
      ln -s "$v" "$name"; chown -h nobody "$name"
    done
    case $w in
      report) timeout 120 cuprobe report -q -o "$o" "$work/r18a" >>"$log" 2>&1 ;;
      plans) timeout 120 cuprobe plans export -q -o "$o" "$work/r18a" >>"$log" 2>&1 ;;
      *) timeout 120 cuprobe export -q --format "$w" -o "$o" "$work/r18a" >>"$log" 2>&1 ;;
    esac
    [ -f "$o" ] && [ ! -L "$o" ] && regular=$((regular + 1))
  done
  for v in "$work"/safe/*; do total=$((total + 1)); [ "$(cat "$v")" = precious ] && intact=$((intact + 1)); done
  say "links planted by nobody in a 1777 directory: $intact of $total victims intact, $regular of 4 outputs regular files"
  mkdir -m 777 "$work/open"
  timeout 60 cuprobe report -q -o "$work/open/r.html" "$work/r18a" >"$out/open.txt" 2>&1
  say "report into a 0777 directory: exit $? ($(cut -c1-200 "$out/open.txt" | head -1))"
else
  say "links planted by another user: skipped (not root, or no user nobody)"
fi

# 5. Bytes: non-UTF-8 argv with escape sequences.
# (In the arguments, not argv[0]: a venv's python3 started under another name cannot find its
# packages.)
timeout 120 cuprobe record -q -o "$work/bytes" -- python3 "$work/tiny.py" $'py\xff\x1b]0;pwned\x07\x1b[2J' >"$out/bytes.txt" 2>&1
say "non-UTF-8 argv with escapes recorded: exit $?"
timeout 120 cuprobe export -q --format sqlite -o "$work/bytes.sqlite" "$work/bytes" >>"$log" 2>&1
say "sqlite export of it: exit $?"
timeout 120 cuprobe analyze "$work/bytes" >"$out/bytes.analysis.txt" 2>&1
say "analyze of it: raw control bytes printed: $(LC_ALL=C tr -d '\n\t' <"$out/bytes.analysis.txt" | LC_ALL=C tr -dc '\000-\037' | wc -c); escaped shown: $(grep -c 'x1b' "$out/bytes.analysis.txt")"

# 6. Symbolization of the run's native frames.
timeout 120 cuprobe analyze --json "$work/r18a" >"$work/r18a.json" 2>>"$log"
timeout 120 cuprobe dump "$work/r18a" >"$work/r18a.jsonl" 2>>"$log"
python3 - "$work/r18a.jsonl" <<'PY' | tee -a "$log" >&3
import json, sys
stacks = [json.loads(l) for l in open(sys.argv[1]) if '"type":"stack"' in l]
frames = [f for s in stacks for f in s.get("native", [])]
with_fn = sum(1 for f in frames if f.get("function"))
with_line = sum(1 for f in frames if f.get("file"))
inlined = sum(len(f.get("inlined_into", [])) for f in frames)
print(f"stacks {len(stacks)}, native frames {len(frames)}: with a function {with_fn}, with file:line {with_line}, "
      f"inlined callers {inlined}; examples:", [f.get("text") for f in frames[:3]])
PY

tar -C "$work" -czf "$final/results.tgz" results plans.json 2>/dev/null
say "== done"
