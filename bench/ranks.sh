#!/usr/bin/env bash
# Issue 30's scale benchmark (docs/dev/performance.md, "Ranks at scale"): a job of RANKS ranks
# recorded on the test doubles (bench/gen_job 20000 each, the training-loop mix of 20,000 events;
# rank 17 runs 30,000 and rank 301 under a 32 MiB memory cap, so that the job has outliers),
# 8 ranks per node directory; then, measured:
#   - trace bytes at rest, and packed (cuprobe pack);
#   - cuprobe facts per node directory (time each; the facts' bytes);
#   - cuprobe analyze on the traces and on the facts: time, peak RSS, text report lines, and
#     whether the findings and summaries are identical;
#   - SYNTH ranks (default 10,000) of facts made from those by renumbering (pid, rank, host):
#     analyze time, peak RSS and report lines.
# Usage: bench/ranks.sh BUILD_DIR OUT_DIR [RANKS [SYNTH]]   (OUT_DIR: a new directory)
set -euo pipefail
build="$(cd "${1:?build dir}" && pwd)"
out="${2:?out dir}"
ranks="${3:-1024}"
synth="${4:-10000}"
cuprobe="$build/bin/cuprobe"
shim="$build/lib/cuprobe/libcuprobe.so"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
export FAKECUDNN_ENGINE_US="0:0,1:0,2:0,3:0,4:0,5:0,6:0,7:0,8:0,9:0,10:0,11:0"
log() { echo "$*" | tee -a "$out/results.txt"; }

if [ ! -d "$out/nodes" ]; then
  s=$(date +%s)
  seq 0 $((ranks - 1)) | xargs -P 2 -I{} sh -c '
    r={}; node=$(printf "%s/nodes/node%03d" "$1" $((r / 8))); mkdir -p "$node"
    n=20000; cap=""; [ "$r" = 17 ] && n=30000; [ "$r" = 301 ] && cap=32MiB
    env LD_PRELOAD="$2" CUPROBE_OUT="$node" CUPROBE_QUIET=1 RANK=$r WORLD_SIZE=$3 ${cap:+CUPROBE_MEM_CAP=$cap} \
      "$4" $n >/dev/null 2>&1 || true' _ "$out" "$shim" "$ranks" "$build/bin/gen_job"
  log "recorded $ranks ranks in $(( $(date +%s) - s )) s (two at a time)"
fi
nodes=$(ls -d "$out"/nodes/node* | wc -l)
trace_bytes=$(du -sb "$out/nodes" | cut -f1)
log "traces: $ranks ranks in $nodes node directories, $trace_bytes bytes ($(( trace_bytes / ranks )) per rank)"

# Peak RSS (MiB) and seconds of a command, its stdout into a file.
measure() {  # OUTFILE CMD...
  local f="$1"; shift
  /usr/bin/time -f "%M %e" -o "$out/time.tmp" "$@" >"$f" 2>"$f.err" || true
  read -r kb secs < <(tail -1 "$out/time.tmp")
  echo "$((kb / 1024)) MiB, $secs s"
}

rm -rf "$out/facts" "$out/facts-ns.txt"; mkdir -p "$out/facts"
for d in "$out"/nodes/node*; do
  a=$(date +%s%N)
  "$cuprobe" facts -q -j 2 -o "$out/facts/$(basename "$d").facts" "$d"
  echo $(( $(date +%s%N) - a )) >>"$out/facts-ns.txt"
done
read -r e max < <(python3 -c "import sys; v=[int(x)/1e9 for x in open(sys.argv[1])]; print(sum(v), max(v))" "$out/facts-ns.txt")
facts_bytes=$(du -sb "$out/facts" | cut -f1)
log "facts: $facts_bytes bytes ($(( facts_bytes / ranks )) per rank), $(python3 -c "print(f'{100*$facts_bytes/$trace_bytes:.3f}')")% of the traces; $(python3 -c "print(f'{$e:.1f} s for {$nodes} nodes, {$e/$nodes:.2f} s per node, the slowest {$max:.2f} s')")"

log "analyze traces (2 threads): $(measure "$out/a-traces.json" "$cuprobe" analyze --threads 2 --json "$out"/nodes/node*)"
log "analyze facts (2 threads): $(measure "$out/a-facts.json" "$cuprobe" analyze --threads 2 --json "$out/facts")"
"$cuprobe" analyze "$out"/nodes/node* >"$out/a-traces.txt" 2>&1 || true
"$cuprobe" analyze "$out/facts" >"$out/a-facts.txt" 2>&1 || true
python3 - "$out/a-traces.json" "$out/a-facts.json" <<'PY' | tee -a "$out/results.txt"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
print("findings identical: %s (%d findings); summaries identical: %s"
      % (a["findings"] == b["findings"], len(a["findings"]), a["summary"] == b["summary"]))
PY
log "text report lines: traces $(wc -l <"$out/a-traces.txt"), facts $(wc -l <"$out/a-facts.txt")"

rm -rf "$out/packed"; cp -r "$out/nodes" "$out/packed"
s=$(date +%s.%N)
"$cuprobe" pack -q "$out"/packed/node*
log "packed traces: $(du -sb "$out/packed" | cut -f1) bytes in $(python3 -c "print(f'{$(date +%s.%N) - $s:.1f}')") s"

if [ "$synth" -gt 0 ]; then
  rm -rf "$out/synth"; mkdir -p "$out/synth"
  python3 - "$out/facts" "$out/synth" "$synth" <<'PY'
# SYNTH ranks from the recorded ones: each copy of a node's facts renumbered (pid, rank, host),
# 8 ranks per synthetic node, as a node's `cuprobe facts` would have written them.
import glob, json, os, subprocess, sys
src, dst, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
nodes = sorted(glob.glob(os.path.join(src, "*.facts")))
texts = [subprocess.run(["zstd", "-dc", n], check=True, capture_output=True).stdout.decode().splitlines() for n in nodes]
made, copy = 0, 0
while made < want:
    for lines in texts:
        if made >= want:
            break
        host = "node%05d" % (made // 8)
        out = []
        ranks_here = 0
        for line in lines:
            j = json.loads(line)
            if "pid" in j:
                j["pid"] = j["pid"] + 1000000 * (copy + 1)
            t = j.get("type")
            if t == "process":
                j["host"] = host
                j["rank"] = made + ranks_here
                ranks_here += 1
            elif t == "facts" and j.get("key") in ("pid", "host", "rank"):
                k = j["key"]
                j["value"] = {"pid": j["pid"], "host": host, "rank": made + ranks_here - 1}[k]
            elif t == "facts" and j.get("key") == "searches":
                for s in j.get("items", []):
                    s["pid"] = j["pid"]
            out.append(json.dumps(j, separators=(",", ":")))
        path = os.path.join(dst, host + ".facts")
        subprocess.run(["zstd", "-q", "-6", "-o", path], input=("\n".join(out) + "\n").encode(), check=True)
        made += ranks_here
    copy += 1
PY
  log "synthetic: $synth ranks in $(ls "$out/synth" | wc -l) facts files, $(du -sb "$out/synth" | cut -f1) bytes"
  log "analyze $synth ranks from facts (2 threads): $(measure "$out/a-synth.json" "$cuprobe" analyze --threads 2 --json "$out/synth")"
  "$cuprobe" analyze "$out/synth" >"$out/a-synth.txt" 2>&1 || true
  log "text report lines at $synth ranks: $(wc -l <"$out/a-synth.txt")"
fi
