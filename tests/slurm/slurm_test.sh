#!/usr/bin/env bash
# Issue 30 on a real Slurm: a single-node cluster (slurmctld and slurmd from Debian's slurm-wlm,
# on localhost, with a configuration of its own in a temporary directory; started and stopped
# here). A 4-task job is recorded under srun (ranks from SLURM_PROCID), reduced with
# `srun --ntasks-per-node=1 cuprobe facts`, and analyzed from the facts: the findings and
# summaries must equal those from the traces, ranks 0-3 must be there, and the facts must be a
# small part of the traces.
# Usage: tests/slurm/slurm_test.sh BUILD_DIR
# Exit 77 (ctest: skipped) when slurmctld/slurmd are not installed or this is not root (slurmd
# needs root to start tasks as the job's user); scripts/deps.sh installs slurm-wlm.
set -u
build="$(cd "${1:?build dir}" && pwd)"
cuprobe="$build/bin/cuprobe"
shim="$build/lib/cuprobe/libcuprobe.so"
[ -f "$shim" ] || shim="$("$cuprobe" --shim-path)"
for tool in slurmctld slurmd srun sinfo scontrol; do
  command -v "$tool" >/dev/null || { echo "skipped: $tool not installed (apt-get install slurm-wlm)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "skipped: slurmd needs root"; exit 77; }

d="$(mktemp -d /tmp/cuprobe-slurm.XXXXXX)"
chmod 755 "$d"
ctld_pid="" slurmd_pid=""
cleanup() {
  [ -n "$slurmd_pid" ] && kill "$slurmd_pid" 2>/dev/null
  [ -n "$ctld_pid" ] && kill "$ctld_pid" 2>/dev/null
  sleep 0.5
  [ -n "$slurmd_pid" ] && kill -9 "$slurmd_pid" 2>/dev/null
  [ -n "$ctld_pid" ] && kill -9 "$ctld_pid" 2>/dev/null
  if [ "${failed:-1}" = 0 ]; then rm -rf "$d"; else echo "kept for a look: $d"; fi
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$d"/ctld.log "$d"/slurmd.log; do echo "--- $f"; tail -20 "$f" 2>/dev/null; done
  failed=1
  exit 1
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
host="$(hostname -s)"
cpus="$(nproc)"
mkdir -p "$d/state" "$d/spool"
cat >"$d/slurm.conf" <<CONF
ClusterName=cuprobe-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/ctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/ctld.log
SlurmdLogFile=$d/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:8
CONF
export SLURM_CONF="$d/slurm.conf"
slurmctld -D -i >"$d/ctld.out" 2>&1 &
ctld_pid=$!
slurmd -D >"$d/slurmd.out" 2>&1 &
slurmd_pid=$!
for _ in $(seq 1 60); do
  state="$(sinfo -h -o %t 2>/dev/null | head -1)"
  case "$state" in idle*|mix*|alloc*) break ;; esac
  sleep 0.5
done
case "$state" in idle*|mix*|alloc*) ;; *) fail "the node did not come up (state '$state')" ;; esac
echo "slurm up: $(sinfo -h -o '%P %t %c' | head -1)"

# The job: 4 tasks, each a cuDNN benchmark storm against the test doubles (their libraries are
# found through the environment srun passes on), recorded into one run directory.
run="$d/run"
doubles="$build/tests/doubles"
export FAKECUDNN_ENGINE_US="0:0,1:0,2:0,3:0,4:0,5:0,6:0,7:0"
timeout 120 srun -n 4 --overcommit --immediate=60 --time=2 "$cuprobe" record -q --append -o "$run" -- \
  "$build/tests/programs/frontend_search" --benchmark --shapes 6 --repeat 2 >"$d/job.out" 2>&1 ||
  fail "srun record: $(tail -5 "$d/job.out")"
n="$(ls "$run"/*.cuprobe 2>/dev/null | wc -l)"
[ "$n" = 4 ] || fail "expected 4 traces, found $n: $(ls "$run")"

# The reduction, one task per node, as the docs give it.
mkdir -p "$d/facts"
timeout 120 srun --ntasks-per-node=1 --immediate=60 --time=2 "$cuprobe" facts -q -o "$d/facts/%h.facts" "$run" >"$d/facts.out" 2>&1 ||
  fail "srun facts: $(tail -5 "$d/facts.out")"
[ -f "$d/facts/$host.facts" ] || fail "no $d/facts/$host.facts: $(ls "$d/facts")"

"$cuprobe" analyze --json "$run" >"$d/a-traces.json" 2>"$d/a-traces.err"
"$cuprobe" analyze --json "$d/facts" >"$d/a-facts.json" 2>"$d/a-facts.err"
python3 - "$d/a-traces.json" "$d/a-facts.json" "$run" "$d/facts/$host.facts" <<'PY' || fail "analysis from facts differs"
import json, os, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["findings"] == b["findings"], "findings differ"
assert a["summary"] == b["summary"], "summaries differ"
ranks = sorted(p.get("rank") for p in b["summary"]["per_process"])
assert ranks == [0, 1, 2, 3], "ranks %s" % ranks
assert any(f["rule"] in ("research-repeat", "research-storm") for f in b["findings"]), [f["rule"] for f in b["findings"]]
traces = sum(os.path.getsize(os.path.join(sys.argv[3], f)) for f in os.listdir(sys.argv[3]))
facts = os.path.getsize(sys.argv[4])
assert facts * 20 < traces, "facts %d bytes of %d" % (facts, traces)
print("ok: ranks %s, %d findings, facts %d bytes = %.2f%% of %d bytes of traces"
      % (ranks, len(b["findings"]), facts, 100.0 * facts / traces, traces))
PY
failed=0
