#!/usr/bin/env bash
# Real-GPU validation of live alerts (shim/alerts.h): runs scenarios of the corpus with their own
# run.sh (default: all of them, five at a time), stamps every line each writes on standard error
# with the seconds since the scenario started, and prints per scenario the alerts it got (kind,
# first at how many seconds). Storm scenarios must get a storm alert within seconds; healthy,
# bucketed, partial-batch and evaluation scenarios none; OOM scenarios an out-of-memory alert;
# fault scenarios a fault alert. Run from the repository root on the GPU machine:
#   tests/gpu/validate_alerts.sh BUILD_DIR OUT_DIR [SCENARIO...]
# Logs: OUT_DIR/<scenario>.log (stamped), summary OUT_DIR/alerts.txt.
set -uo pipefail
build="$(cd "${1:?build dir}" && pwd)"
out="${2:?out dir}"
shift 2
mkdir -p "$out"
out="$(cd "$out" && pwd)"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
export CUPROBE="$build/bin/cuprobe" WORK="$work" OUT="$out" HERE="$here"
scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
  for d in "$here"/scenarios/*/; do [ -f "$d/run.sh" ] && scenarios+=("$(basename "$d")"); done
fi
one() {
  local s="$1" start
  start=$EPOCHREALTIME
  export SCEN="$HERE/scenarios/$s" TRACE_DIR="$WORK/$s"
  # stdout to a file; stderr stamped line by line.
  timeout -k 10 150 bash "$SCEN/run.sh" 2> >(while IFS= read -r line; do
      printf '%6.1f %s\n' "$(awk "BEGIN{print $EPOCHREALTIME - $start}")" "$line"
    done >"$OUT/$s.log") >"$WORK/$s.stdout"
  echo "exit $? after $(awk "BEGIN{printf \"%.0f\", $EPOCHREALTIME - $start}") s" >>"$OUT/$s.status"
}
export -f one
printf '%s\n' "${scenarios[@]}" | xargs -P 5 -I{} bash -c 'one {}'
sleep 2  # the stamping readers finish
{
  printf '%-22s %-8s %s\n' scenario exit alerts
  for s in "${scenarios[@]}"; do
    python3 - "$s" "$out/$s.log" "$(tail -1 "$out/$s.status" 2>/dev/null)" <<'PY'
import re, sys
name, log, status = sys.argv[1], sys.argv[2], sys.argv[3]
kinds = {}
try:
    lines = open(log, errors="replace").read().splitlines()
except OSError:
    lines = []
for l in lines:
    m = re.match(r"\s*([\d.]+) cuprobe alert: (.*)", l)
    if not m:
        continue
    t, text = float(m.group(1)), m.group(2)
    kind = ("storm" if "new cuDNN problems keep arriving" in text else "oom" if "out of memory on cuda" in text
            else "alloc-failed" if "failed on device" in text else "fault" if "fault mode:" in text else "other")
    n, first = kinds.get(kind, (0, t))
    kinds[kind] = (n + 1, min(first, t))
desc = ", ".join(f"{k} x{n} (first at {t:.1f} s)" for k, (n, t) in sorted(kinds.items())) or "none"
print(f"{name:22s} {status.split(' after')[0]:8s} {desc}")
PY
  done
} | tee "$out/alerts.txt"
rm -rf "$work"
