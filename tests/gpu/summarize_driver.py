"""Summarizes one `cuprobe analyze --json` report for tests/gpu/validate_driver.sh: the
oom-postmortem and memory-coverage findings, and each process's memory by owner."""
import json
import sys

report = json.load(open(sys.argv[1]))
for f in report.get("findings", []):
    ev = f.get("evidence", {})
    if f["rule"] == "oom-postmortem" and "requested" in ev:
        print(f"  oom-postmortem [{f['severity']}]: requested {ev['requested']} bytes ({ev['requested'] / 2**30:.2f} GiB); "
              f"failure: {ev.get('failure')}; raised={ev.get('raised')} fatal={ev.get('fatal')}; owners: {ev.get('owners_text')}")
    elif f["rule"] in ("memory-coverage",):
        print(f"  {f['rule']} [{f['severity']}]: {f['message'][:400]}")
    else:
        print(f"  {f['rule']} [{f['severity']}]: {f['title']}")
if not report.get("findings"):
    print("  no findings")
for p in report.get("summary", {}).get("per_process", []):
    for m in p.get("memory", []):
        owners = ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in sorted(m.get("peak_by_owner", {}).items(), key=lambda kv: -kv[1]) if v)
        print(f"  pid {p['pid']} rank {p.get('rank')} device {m['device']}: peak {m['peak'] / 2**30:.2f} GiB, physical peak "
              f"{m.get('physical_peak', 0) / 2**30:.2f} GiB, reserved {m.get('reserved_peak', 0) / 2**30:.1f} GiB, samples "
              f"{m.get('samples', 0)}, unaccounted {m.get('unaccounted', 0) / 2**20:.0f} MiB; at peak: {owners}")
