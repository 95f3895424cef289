#!/usr/bin/env bash
# Ctrl-C and SIGTERM of multi-process PyTorch jobs, traced and untraced, side by side: the time
# from the signal until every process of the job is gone. Two launchers: torchrun (our DDP loop)
# and torch.multiprocessing.spawn (pytorch/examples imagenet, --multiprocessing-distributed,
# unchanged, synthetic data). Traced both ways users trace: `cuprobe record --` and a plain
# LD_PRELOAD in the launch.
# Run from the repository root on the GPU machine: tests/gpu/validate_shutdown.sh BUILD_DIR OUT_DIR [ROUNDS]
set -uo pipefail
build="$(cd "${1:?build dir}" && pwd)"
out="$(mkdir -p "${2:?out dir}" && cd "$2" && pwd)"
rounds="${3:-1}"
work="$(mktemp -d)"
cuprobe="$build/bin/cuprobe"
shim="$build/lib/cuprobe/libcuprobe.so"
gpus=$(nvidia-smi -L | wc -l)
ranks=2
results="$out/shutdown.jsonl"
: >"$results"
echo "gpus $gpus ranks $ranks; $(python3 -c 'import torch; print("torch", torch.__version__)')" | tee "$out/shutdown.log"
torchrun_cmd=(torchrun --standalone --nproc_per_node=$ranks tests/gpu/ddp_loop.py)
spawn_cmd=(python3 tests/gpu/thirdparty/pytorch-examples-imagenet/main.py --dummy -a resnet18 -b 32 -j 2 -p 5
           --multiprocessing-distributed --world-size 1 --rank 0 --dist-url tcp://127.0.0.1:29577 --epochs 1)
for round in $(seq "$rounds"); do
  for sig in ${SIGNALS:-INT TERM}; do
    for job in torchrun spawn; do
      if [ "$job" = torchrun ]; then cmd=("${torchrun_cmd[@]}"); ready='step 30'; else cmd=("${spawn_cmd[@]}"); ready='Epoch: \[0\]\[ *11/'; fi
      for how in untraced record preload; do
        name="$job-$how"
        case "$how" in
          untraced) run=("${cmd[@]}") ;;
          record) run=("$cuprobe" record -q -o "$work/$name-$sig-$round" -- "${cmd[@]}") ;;
          preload) run=(env LD_PRELOAD="$shim" CUPROBE_OUT="$work/$name-$sig-$round" "${cmd[@]}") ;;
        esac
        timeout 420 python3 tests/gpu/shutdown_timing.py --json "$results" --name "$name" --ready "$ready" \
          --signal "$sig" --log "$out/$name-$sig-$round.log" -- "${run[@]}" 2>&1 | tee -a "$out/shutdown.log"
      done
    done
  done
done
for d in "$work"/*; do
  [ -d "$d" ] || continue
  echo "$(basename "$d"): $(ls "$d" | wc -l) traces; states: $("$cuprobe" dump --no-events "$d" 2>/dev/null | python3 -c '
import json, sys, collections
print(dict(collections.Counter(json.loads(l).get("state") for l in sys.stdin if "\"process\"" in l[:20])))')"
done | tee -a "$out/shutdown.log"
python3 - "$results" <<'PY' | tee -a "$out/shutdown.log"
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1])]
by = collections.defaultdict(list)
for r in rows:
    by[(r["name"].split("-")[0], r["signal"], r["name"].split("-")[1])].append(r.get("end_s", float("nan")))
print(f"{'launcher':10} {'signal':6} {'untraced':>10} {'record':>10} {'preload':>10}   (seconds from signal to last process gone)")
for job in ("torchrun", "spawn"):
    for sig in ("INT", "TERM"):
        cells = [",".join(f"{x:.1f}" for x in by.get((job, sig, how), [])) or "-" for how in ("untraced", "record", "preload")]
        print(f"{job:10} {sig:6} {cells[0]:>10} {cells[1]:>10} {cells[2]:>10}")
PY
