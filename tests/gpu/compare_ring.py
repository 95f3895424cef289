"""Compares the analyses (cuprobe analyze --json) of one job recorded whole and as flight-recorder
traces (tests/gpu/validate_flight_recorder.sh): the OOM post-mortem's cause, request, live bytes
by owner, largest live blocks and call sites, and the set of findings, must be the same.
Usage: compare_ring.py REFERENCE.json OTHER.json..."""
import json
import sys

# Compared exactly; "live" within LIVE_TOLERANCE (each recording is a run of its own: the caching
# allocator's segments at the failure differ by a few MiB from run to run, as between two runs of
# the reference itself).
KEYS = ["cause", "requested", "framework_request", "largest_text", "device_memory", "fatal"]
LIVE_TOLERANCE = 0.005


def load(path):
    try:
        return json.load(open(path))
    except Exception as e:  # an analysis that failed is reported, not fatal to the comparison
        return {"error": str(e)}


def oom(r):
    for f in r.get("findings", []):
        if f["rule"] == "oom-postmortem":
            return f
    return None


def describe(name, r):
    if "error" in r:
        print(f"{name}: analysis unreadable: {r['error']}")
        return
    p = r["summary"]["per_process"]
    main = max(p, key=lambda q: q["events"])
    cov = main.get("coverage") or {}
    print(f"{name}: {r['summary']['events']} events, state {main['state']}, dropped {main['dropped_events']}, "
          f"kept_dropped {main.get('kept_dropped')}, searches {main['searches']}")
    if cov:
        print(f"  coverage: {cov.get('text') or '(nothing overwritten)'}")
    print(f"  findings: {sorted(f['rule'] + ':' + f['severity'] for f in r['findings'])}")
    o = oom(r)
    if o:
        print(f"  oom: {o['message'][:600]}")
        for c in o["call_sites"][:3]:
            print(f"    at {c}")


ref_path = sys.argv[1]
ref = load(ref_path)
describe(ref_path, ref)
ok = True
for path in sys.argv[2:]:
    r = load(path)
    describe(path, r)
    if "error" in r or "error" in ref:
        ok = False
        continue
    a, b = oom(ref), oom(r)
    if a is None or b is None:
        print(f"  DIFFERENT: oom-postmortem {'missing here' if b is None else 'missing in the reference'}")
        ok = ok and "limit" in path  # the old behaviour is expected to lose it
        continue
    diffs = [k for k in KEYS if a["evidence"].get(k) != b["evidence"].get(k)]
    la, lb = a["evidence"].get("live", 0), b["evidence"].get("live", 0)
    print(f"  live {lb} bytes against {la} ({(lb - la) / max(la, 1) * 100:+.3f}%), owners {b['evidence'].get('live_by_owner')}")
    if abs(lb - la) > LIVE_TOLERANCE * max(la, 1):
        diffs.append("live")
    if a["call_sites"] != b["call_sites"]:
        diffs.append("call_sites")
    rules_a = sorted(f["rule"] for f in ref["findings"])
    rules_b = sorted(f["rule"] for f in r["findings"])
    if rules_a != rules_b:
        diffs.append(f"findings {rules_a} vs {rules_b}")
    print(f"  vs reference: {'SAME oom-postmortem and findings' if not diffs else 'DIFFERENT: ' + ', '.join(diffs)}")
    for k in diffs:
        if k in KEYS or k == "live":
            print(f"    {k}: {a['evidence'].get(k)} vs {b['evidence'].get(k)}")
    ok = ok and (not diffs or "limit" in path)
print("RESULT:", "ok" if ok else "differences (above)")
