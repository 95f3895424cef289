#!/usr/bin/env bash
# Issue 11 on the GPU: the trace-integrity finding on a real job that outgrew its trace limit
# (and its absence on the same job with room), fault-plan regexes of the safe dialect matching
# real cuDNN problem signatures (and a back-reference refused before the job starts), and the
# reader's hardening on real traces (a trace truncated while it is read, dump | analyze of
# non-ASCII command lines).
# Run from the repository root on the GPU machine: tests/gpu/validate_hardening.sh BUILD_DIR OUT_DIR
set -uo pipefail
build="$(cd "${1:?build dir}" && pwd)"
out="$(mkdir -p "${2:?out dir}" && cd "$2" && pwd)"
work="$(mktemp -d)"
cuprobe="$build/bin/cuprobe"
rules() { python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print("  findings:", ", ".join("%s(%s)" % (f["rule"], f["severity"]) for f in r["findings"]) or "none")
for f in r["findings"]:
    if f["rule"] == "trace-integrity": print("  trace-integrity:", f["message"])
p = r["summary"]["per_process"][0]
print("  events", p["events"], "dropped", p["dropped_events"], "command", p["command"])' "$1"; }
{
  echo "== a job past its trace limit (--max-mb 1), then the same job with room"
  timeout 300 "$cuprobe" record -q --max-mb 1 -o "$work/small" -- python3 tests/gpu/cudnn_conv.py --benchmark --shapes 6 --steps 400 2>&1 | tail -1
  timeout 120 "$cuprobe" analyze --json "$work/small" >"$work/small.json"; echo "  analyze exit $?"; rules "$work/small.json"
  timeout 300 "$cuprobe" record -q -o "$work/room" -- python3 tests/gpu/cudnn_conv.py --benchmark --shapes 6 --steps 400 2>&1 | tail -1
  timeout 120 "$cuprobe" analyze --json "$work/room" >"$work/room.json"; echo "  analyze exit $?"; rules "$work/room.json"

  echo "== fault-plan regex (safe dialect) on real problem signatures"
  timeout 300 "$cuprobe" record -q -o "$work/regex" \
    --fault 'cudnn-finalize:NOT_SUPPORTED,problem~^conv_fwd x\[8\,64\,(16|24)\,[0-9]+\]' -- \
    python3 tests/gpu/cudnn_conv.py --benchmark --shapes 3 --steps 2 2>&1 | tail -3
  timeout 120 "$cuprobe" analyze --json "$work/regex" >"$work/regex.json"
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
for f in r["summary"]["faults"]: print("  rule", f["text"], "matched", f["matched"], "injected", f["injected"], "then", f["outcomes"])' "$work/regex.json"
  "$cuprobe" dump "$work/regex" | python3 -c '
import json, sys
probs = set()
for l in sys.stdin:
    j = json.loads(l)
    if j.get("type") == "call" and j.get("injected"): probs.add(j.get("problem", "")[:40])
print("  injected on:", sorted(probs))'
  echo "-- a back-reference is refused before the job starts:"
  timeout 60 "$cuprobe" record -q -o "$work/backref" --fault 'cudnn-finalize:NOT_SUPPORTED,problem~^(.*)(.*)\2\1$' -- true; echo "  exit $?"

  echo "== dump of a real trace truncated while it is read; non-ASCII command line through dump | analyze -"
  mkdir -p "$work/ü-données"
  cp tests/gpu/cudnn_conv.py "$work/ü-données/réseau_卷积.py"
  timeout 300 "$cuprobe" record -q -o "$work/utf8" -- python3 "$work/ü-données/réseau_卷积.py" --shapes 2 --steps 1 2>&1 | tail -1
  f=$(ls "$work"/utf8/*.cuprobe | head -1); cp "$f" "$work/trunc.cuprobe"
  ( sleep 0.05; truncate -s 100000 "$work/trunc.cuprobe" ) & timeout 60 "$cuprobe" dump "$work/trunc.cuprobe" >/dev/null 2>"$work/trunc.err"; echo "  dump exit $? (a signal would be >128)"; wait
  tail -2 "$work/trunc.err"
  timeout 60 "$cuprobe" dump "$work/utf8" | timeout 60 "$cuprobe" analyze --json - >"$work/utf8.json"; echo "  dump | analyze --json - exit $?"; rules "$work/utf8.json"
} 2>&1 | tee "$out/hardening.log"
tar -C "$work" -czf "$out/hardening.tar.gz" --exclude='*.cuprobe' . 2>/dev/null
