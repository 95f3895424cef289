#!/usr/bin/env bash
# Real-GPU validation of the wheel (issue 25): installed into a venv beside the machine's PyTorch,
# as a user would, and used on training jobs this project did not write.
#
#   tests/gpu/validate_wheel.sh WHEEL OUT [CORPUS_GUARD_SECONDS]
#
# 1. `pip install --no-index WHEEL` into PyTorch's venv when python3 is one, else a new venv
#    with the system's site-packages;
# 2. pytorch/examples imagenet (ResNet-18, --dummy) recorded with the venv's `cuprobe`, stacks on
#    allocations: analyzed (a healthy run: nothing above info expected), reported; the device
#    records compared with nvidia-smi (name, memory, UUID, PCI bus id); Python frames on stacks;
# 3. the bundled storm example (examples/pytorch/convnet.py): research-storm expected; the
#    Python API (cuprobe.analyze) on the same run;
# 4. the scenario corpus with the wheel's cuprobe (CORPUS_GUARD_SECONDS, default 300; 0 skips it).
# Writes OUT/wheel.log and OUT/results.tgz (every output, the traces) and prints a summary last.
set -uo pipefail
wheel="$(readlink -f "${1:?wheel}")"
final="${2:?out dir}"
guard="${3:-300}"
mkdir -p "$final"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/wheel-validate.XXXXXX)"
out="$work/results"
mkdir -p "$out"
log="$final/wheel.log"
exec 3>&1
say() { echo "$*" | tee -a "$log" >&3; }

{
  echo "== date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,uuid,pci.bus_id --format=csv,noheader
  python3 -c 'import torch, platform; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "python", platform.python_version())'
  ldd --version | head -1
  grep PRETTY_NAME /etc/os-release
} >>"$log" 2>&1

# 1. Where PyTorch lives (tests/gpu/install_wheel.sh: PyTorch's own venv when python3 is one).
. "$root/tests/gpu/install_wheel.sh"
install_wheel "$wheel" "$log" || { say "FAIL: pip install of $(basename "$wheel")"; exit 1; }
[ -n "$installed_into" ] && say "PyTorch's venv: $installed_into (pip install --no-index into it)"
say "installed: $(command -v cuprobe) -> $(cuprobe --version); shim $(cuprobe --shim-path)"
say "python -m cuprobe: $(python -m cuprobe --version)"

# 2. A training job this project did not write.
cd "$root"
timeout -k 20 -s INT 60 cuprobe record -q --stacks alloc -o "$work/imagenet" -- python3 \
  tests/gpu/thirdparty/pytorch-examples-imagenet/main.py --dummy -a resnet18 -b 64 --epochs 1 --gpu 0 -j 4 -p 50 \
  >"$out/imagenet.out" 2>&1
say "imagenet record exit: $? ($(tail -1 "$out/imagenet.out" | cut -c1-100))"
cuprobe analyze --fail-on info "$work/imagenet" >"$out/imagenet.analysis.txt" 2>&1
say "imagenet analyze exit: $? (0 = no finding at all; 1 = findings, see imagenet.analysis.txt)"
cuprobe analyze --json "$work/imagenet" >"$work/imagenet.json" 2>>"$log"
cuprobe report -o "$out/imagenet.html" "$work/imagenet" >>"$log" 2>&1
say "imagenet report: $(stat -c %s "$out/imagenet.html" 2>/dev/null) bytes"
cuprobe dump "$work/imagenet" >"$work/imagenet.jsonl" 2>>"$log"
nvidia-smi --query-gpu=index,name,memory.total,uuid,pci.bus_id --format=csv,noheader,nounits >"$work/smi.csv"
python3 - "$work/imagenet.jsonl" "$work/smi.csv" "$work/imagenet.json" <<'PY' | tee -a "$log" >&3
import csv, json, sys
import torch
lines = [json.loads(l) for l in open(sys.argv[1])]
smi = {int(r[0]): [c.strip() for c in r] for r in csv.reader(open(sys.argv[2]))}
# The device's memory as CUDA reports it (cuDeviceTotalMem, cudaDeviceProp.totalGlobalMem, what
# PyTorch shows): nvidia-smi's memory.total also counts what the driver reserves for itself.
cuda_total = {i: torch.cuda.get_device_properties(i).total_memory for i in range(torch.cuda.device_count())}
report = json.load(open(sys.argv[3]))
procs = [l for l in lines if l["type"] == "process"]
stacks = [l for l in lines if l["type"] == "stack"]
print(f"processes {len(procs)}; findings above info: "
      f"{[f['rule'] + ':' + f['severity'] for f in report['findings'] if f['severity'] != 'info']}")
ok = True
for p in procs:
    print(f" pid {p['pid']} state {p['state']} runtime {p.get('cuda_runtime_version')} "
          f"driver {p.get('cuda_driver_version')} cudnn {p.get('cudnn_version')} cmd {' '.join(p['cmdline'])[:60]}")
    for d in p["devices"]:
        s = smi.get(d["index"])
        want = None
        if s:
            uuid = s[3].lower().removeprefix("gpu-")
            bus = s[4].lower()
            # nvidia-smi: 00000000:1B:00.0 (8-digit domain); cuprobe: its own spelling; compare the parts
            got_bus = d["pci_bus_id"].lower()
            same_bus = got_bus.split(":")[-2:] == bus.split(":")[-2:] and int(got_bus.split(":")[0], 16) == int(bus.split(":")[0], 16)
            mem_mib = int(s[2])
            same = (d["name"] == s[1] and d["uuid"].lower().replace("gpu-", "") == uuid and same_bus
                    and d["total_mem"] == cuda_total.get(d["index"]))
            ok &= same
            want = (f"nvidia-smi: {s[1]}, {mem_mib} MiB, {s[3]}, {s[4]}; torch total_memory "
                    f"{cuda_total.get(d['index'])} B, cuprobe {d['total_mem']} B")
        print(f"  device {d['index']}: {d['name']}, {d['total_mem'] / 2**20:.0f} MiB, {d['uuid']}, {d['pci_bus_id']}"
              f" -- {want} -- {'MATCH' if want and same else 'DIFFERS'}")
py = [s for s in stacks if s.get("python")]
print(f"stacks {len(stacks)}, with Python frames {len(py)}")
# Each Python frame's line must lie in its function: the nearest `def NAME` at or above the line
# (a decorator or a multi-line signature aside) names the recorded function; a wrong line or name
# offset gives another function, or a line outside the file.
import linecache, re
checked = agree = 0
for s in py:
    for f in s["python"]:
        if not f["file"].endswith(".py") or f["function"].startswith("<"):
            continue
        checked += 1
        for n in range(f["line"], 0, -1):
            m = re.match(r"\s*(?:async\s+)?def\s+(\w+)", linecache.getline(f["file"], n))
            if m:
                agree += m.group(1) == f["function"].split(".")[-1]
                break
print(f"Python frames whose line lies in the named function: {agree} of {checked}")
for s in py[:3]:
    print("  ", [f"{f['file'].split('/')[-1]}:{f['function']}:{f['line']}" for f in s["python"]][:4])
print("device records match nvidia-smi" if ok and procs else "DEVICE RECORDS DIFFER OR MISSING")
PY

# 3. The storm example, and the Python API on it.
timeout -k 20 -s INT 120 cuprobe record -q -o "$work/storm" -- python3 examples/pytorch/convnet.py --sizes random \
  --steps 30 >"$out/storm.out" 2>&1
say "storm record exit: $?"
python - "$work/storm" <<'PY' 2>&1 | tee -a "$log" >&3
import sys, cuprobe
r = cuprobe.analyze(sys.argv[1])
print("Python API analyze:", [(f["rule"], f["severity"]) for f in r["findings"]])
print("storm found" if any(f["rule"] == "research-storm" and f["severity"] != "info" for f in r["findings"])
      else "STORM NOT FOUND")
PY

# 4. The scenario corpus, with the wheel's cuprobe standing in for a build tree's.
if [ "$guard" -gt 0 ]; then
  mkdir -p "$work/fakebuild/bin"
  # The console script is a Python launcher; the corpus gets the binary it runs.
  ln -s "$(python -c 'import cuprobe; print(cuprobe.executable())')" "$work/fakebuild/bin/cuprobe"
  tests/gpu/scenarios/device_corpus.sh "$work/fakebuild" "$out/corpus" "$guard" >"$out/corpus.tail" 2>&1
  say "corpus: $(tail -4 "$out/corpus/score.txt" 2>/dev/null | tr '\n' ' ')"
fi
cp -r "$work/imagenet" "$work/storm" "$work/imagenet.json" "$out/" 2>/dev/null
tar -C "$work" -czf "$final/results.tgz" results
say "== results in results.tgz: $(du -sh "$final/results.tgz" | cut -f1)"
