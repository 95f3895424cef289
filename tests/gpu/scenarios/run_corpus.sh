#!/usr/bin/env bash
# Run the real-GPU scenario corpus, analyze and score it, and pack the results.
# Usage: tests/gpu/scenarios/run_corpus.sh CUPROBE_BIN OUT_DIR [SCENARIO...]
#
#   Scenarios not marked "exclusive" in expected.json run 5 at a time (CORPUS_PARALLEL); exclusive ones
#   (memory-filling or timing-sensitive) run alone afterwards. Each gets TRACE_DIR =
#   OUT_DIR/work/traces/<name>, its stdout/stderr in OUT_DIR/logs/. Then per scenario
#   `cuprobe analyze --json` -> OUT_DIR/findings/<name>.json (and the text report in logs/),
#   score.py -> OUT_DIR/score.txt, score.json; traces packed into OUT_DIR/traces-N.tar.gz
#   (each under 15 MiB, at most 4; what did not fit is listed in OUT_DIR/traces-packing.txt)
#   and OUT_DIR/results.tar.gz (findings, logs, score, corpus.log).
#   Progress with timestamps: OUT_DIR/corpus.log.
set -u
if [ $# -lt 2 ]; then
  sed -n '2,12p' "$0" >&2
  exit 2
fi
CUPROBE="$(readlink -f "$1")"
OUT="$2"
shift 2
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
work="$OUT/work"
traces="$work/traces"
logs="$OUT/logs"
findings="$OUT/findings"
mkdir -p "$traces" "$logs" "$findings"
chmod 700 "$work" "$traces"
: >"$OUT/corpus.log"
PAR=${CORPUS_PARALLEL:-5}
SCEN_TIMEOUT=${CORPUS_SCENARIO_TIMEOUT:-150}

log() { echo "[$(date '+%F %T')] $*" | tee -a "$OUT/corpus.log"; }

[ -x "$CUPROBE" ] || { log "cuprobe binary $CUPROBE is not executable"; exit 2; }

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for d in "$here"/*/; do
    [ -f "$d/expected.json" ] && names+=("$(basename "$d")")
  done
fi
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
par=() excl=()
for n in "${names[@]}"; do
  if [ ! -f "$here/$n/expected.json" ] || [ ! -f "$here/$n/run.sh" ]; then
    log "unknown scenario $n (no run.sh/expected.json): skipped"
    continue
  fi
  need=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1])).get("min_gpus", 1)))' "$here/$n/expected.json")
  if [ "$need" -gt "$gpus" ]; then
    log "$n needs $need GPUs, this machine has $gpus: skipped"
    echo "needs $need GPUs, the machine had $gpus" >"$findings/$n.skipped"
    continue
  fi
  if python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1])).get("exclusive") else 1)' "$here/$n/expected.json"; then
    excl+=("$n")
  else
    par+=("$n")
  fi
done
log "cuprobe: $CUPROBE ($("$CUPROBE" --version 2>/dev/null | head -1))"
log "parallel ($PAR at a time): ${par[*]:-none}"
log "exclusive: ${excl[*]:-none}"
(nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader 2>/dev/null | head -2 | sed 's/^/gpu: /') >>"$OUT/corpus.log"

run_one() {
  local name="$1" scen="$here/$1" start rc
  start=$(date +%s)
  log "start $name"
  (cd "$root" && CUPROBE="$CUPROBE" TRACE_DIR="$traces/$name" SCEN="$scen" \
    timeout -k 10 "$SCEN_TIMEOUT" bash "$scen/run.sh") >"$logs/$name.out" 2>"$logs/$name.err" </dev/null
  rc=$?
  local ntr
  ntr=$(ls "$traces/$name" 2>/dev/null | grep -c '\.cuprobe$')
  log "done  $name: exit $rc, $(( $(date +%s) - start )) s, $ntr trace file(s), $(du -sh "$traces/$name" 2>/dev/null | cut -f1)"
}

t_all=$(date +%s)
for n in "${par[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$PAR" ]; do wait -n; done
  run_one "$n" &
done
wait
for n in "${excl[@]}"; do run_one "$n"; done
log "all scenarios ran in $(( $(date +%s) - t_all )) s"

analyze_one() {
  local name="$1"
  if [ ! -d "$traces/$name" ]; then
    log "analyze $name: no trace directory"
    return
  fi
  timeout -k 5 180 "$CUPROBE" analyze --json "$traces/$name" >"$findings/$name.json" 2>"$logs/$name.analyze.err"
  local rc=$?
  timeout -k 5 180 "$CUPROBE" analyze "$traces/$name" >"$logs/$name.analysis" 2>>"$logs/$name.analyze.err"
  log "analyzed $name: exit $rc"
}
for n in "${par[@]}" "${excl[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$PAR" ]; do wait -n; done
  analyze_one "$n" &
done
wait

timeout 120 python3 "$here/score.py" --findings "$findings" --scenarios "$here" --json "$OUT/score.json" \
  "${par[@]}" "${excl[@]}" >"$OUT/score.txt" 2>&1
log "score: $(tail -1 "$OUT/score.txt")"
cat "$OUT/score.txt" >>"$OUT/corpus.log"

# Pack the traces: each scenario compressed alone to learn its size, then scenarios placed
# (smallest first) into at most 4 parts under 15 MiB each; those that fit nowhere are listed.
stage="$work/pack"
rm -rf "$stage"
mkdir -p "$stage"
for n in "${par[@]}" "${excl[@]}"; do
  [ -d "$traces/$n" ] || continue
  timeout 120 tar -C "$traces" -czf "$stage/$n.tar.gz" "$n" 2>>"$logs/pack.err"
done
timeout 120 python3 - "$stage" "$OUT" <<'EOF' >>"$OUT/corpus.log" 2>&1
import os, sys
stage, out = sys.argv[1], sys.argv[2]
limit, parts_max = int(13.5 * 2**20), 4  # estimate from single-scenario archives, with margin
sizes = sorted((os.path.getsize(os.path.join(stage, f)), f[:-7]) for f in os.listdir(stage) if f.endswith(".tar.gz"))
parts = [[] for _ in range(parts_max)]
used = [0] * parts_max
skipped = []
for size, name in sizes:
    for i in range(parts_max):
        if used[i] + size <= limit:
            parts[i].append(name)
            used[i] += size
            break
    else:
        skipped.append((name, size))
with open(os.path.join(out, "traces-packing.txt"), "w") as fh:
    for i, p in enumerate(parts):
        if p:
            fh.write("traces-%d.tar.gz: %s\n" % (i + 1, " ".join(p)))
            with open(os.path.join(stage, "part-%d.list" % (i + 1)), "w") as lf:
                lf.write("\n".join(p) + "\n")
    for name, size in skipped:
        fh.write("not packed (%.1f MiB compressed): %s\n" % (size / 2**20, name))
print(open(os.path.join(out, "traces-packing.txt")).read(), end="")
EOF
rm -f "$OUT"/traces-*.tar.gz
for lst in "$stage"/part-*.list; do
  [ -f "$lst" ] || continue
  i="${lst##*/part-}"
  i="${i%.list}"
  timeout 180 tar -C "$traces" -czf "$OUT/traces-$i.tar.gz" -T "$lst" 2>>"$logs/pack.err"
  sz=$(stat -c %s "$OUT/traces-$i.tar.gz" 2>/dev/null || echo 0)
  if [ "$sz" -ge $((15 * 1024 * 1024)) ]; then
    log "traces-$i.tar.gz is $sz bytes (over 15 MiB): removed; see traces-packing.txt"
    echo "traces-$i.tar.gz removed: $sz bytes" >>"$OUT/traces-packing.txt"
    rm -f "$OUT/traces-$i.tar.gz"
  else
    log "traces-$i.tar.gz: $sz bytes"
  fi
done
rm -rf "$stage"
log "corpus finished in $(( $(date +%s) - t_all )) s"
timeout 120 tar -C "$OUT" -czf "$OUT/results.tar.gz" findings logs score.txt score.json corpus.log traces-packing.txt 2>/dev/null
exit 0
