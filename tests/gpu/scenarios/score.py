#!/usr/bin/env python3
"""Score cuprobe findings against the scenario corpus's expected.json files.

  score.py --findings DIR [--scenarios DIR] [--json OUT]
      DIR holds <scenario>.json, each the output of `cuprobe analyze --json TRACE_DIR`.
  score.py --cuprobe BIN --traces DIR [--findings OUTDIR] [--scenarios DIR] [--json OUT]
      (re)analyze DIR/<scenario>/ (trace directories) with BIN first, writing the findings
      into OUTDIR (default: a temporary directory), then score them.

expected.json: {"description", "exclusive", "fire": [...], "allow": [...]}; each fire entry
{"rule", "min_severity", "max_severity"?, "evidence"?: {"dotted.key": {"eq"|"ne"|"contains"|
"min"|"max": V}}, "message_contains"?: [..], "message_not_contains"?: [..]} must be matched by a
finding of that rule. A finding above info of a rule neither in fire nor allow is a false positive.
"faults": [{"rule": NAME, "outcome": TEXT, "min_injected": N?}] expects the fault report (fault mode:
failures cuprobe made on purpose are reported there, not as findings) to show rule NAME with an
application outcome containing TEXT (e.g. "stopped": the failure reached the application); each
counts as an expected detection (a true positive when shown, a false negative when not).
"summary": {"dotted.key": {op: V}} checks the analysis summary (ranks and where they came from)
with the same operators; each key counts like an expected detection.
"min_gpus": N: run_corpus.sh skips the scenario on a machine with fewer GPUs (it writes
<scenario>.skipped with the reason next to the findings): scored SKIPPED, counted nowhere.
Dotted keys may select from a list: "chaos.ends[rank=1].ended".
A fire entry with "first": true must be matched by the FIRST finding of the report (the event that
ended the run comes first). "stderr": [{"contains": TEXT, "and": TEXT?}] expects a line of the
scenario's standard error (LOGS/<name>.err; LOGS defaults to the findings directory's sibling
logs/, as run_corpus.sh writes it) holding both texts (a live alert); each counts like an expected
detection.
Exit status 0 unless the command line is wrong.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

SEV = {"info": 0, "warning": 1, "error": 2}


def sev(s):
    return SEV.get(str(s).lower(), -1)


def lookup(ev, dotted):
    """A dotted key's value: each part a key, a list index, or NAME[KEY=VALUE] (the first object
    of the list NAME whose KEY is VALUE, compared as text: "chaos.ends[rank=1].ended")."""
    cur = ev
    for part in dotted.split("."):
        select = None
        if part.endswith("]") and "[" in part and "=" in part:
            part, cond = part[:-1].split("[", 1)
            select = cond.split("=", 1)
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return False, None
        if select is not None:
            key, want = select
            hit = [x for x in cur if isinstance(x, dict) and key in x and str(x[key]) == want] \
                if isinstance(cur, list) else []
            if not hit:
                return False, None
            cur = hit[0]
    return True, cur


def check_op(op, want, have):
    if op == "eq":
        return have == want
    if op == "ne":
        return have != want
    if op == "contains":
        if isinstance(have, str):
            return isinstance(want, str) and want in have
        if isinstance(have, list):
            return want in have
        if isinstance(have, dict):
            return want in have
        return False
    if op in ("min", "max"):
        if isinstance(have, bool) or not isinstance(have, (int, float)):
            return False
        return have >= want if op == "min" else have <= want
    raise ValueError("unknown evidence op %r" % op)


def matches(entry, f):
    """Why a finding does not match a fire entry, or None when it does."""
    if f.get("rule") != entry["rule"]:
        return "other rule"
    s = sev(f.get("severity"))
    if s < sev(entry.get("min_severity", "info")):
        return "severity %s below %s" % (f.get("severity"), entry.get("min_severity"))
    if "max_severity" in entry and s > sev(entry["max_severity"]):
        return "severity %s above %s" % (f.get("severity"), entry["max_severity"])
    ev = f.get("evidence") or {}
    for key, ops in (entry.get("evidence") or {}).items():
        found, have = lookup(ev, key)
        if not found:
            if "ne" in ops and len(ops) == 1:
                continue
            return "evidence %s missing" % key
        for op, want in ops.items():
            if not check_op(op, want, have):
                return "evidence %s=%s fails %s %s" % (key, json.dumps(have)[:80], op, json.dumps(want))
    msg = f.get("message") or ""
    for text in entry.get("message_contains") or []:
        if text not in msg:
            return "message lacks %r" % text
    for text in entry.get("message_not_contains") or []:
        if text in msg:
            return "message contains %r" % text
    return None


def score_scenario(name, expected, result, stderr=None, skipped=None):
    """result: parsed analyze --json output, or None when missing/unreadable; stderr: the
    scenario's standard error as text, None when not available; skipped: why run_corpus.sh did
    not run it (more GPUs than the machine has: "min_gpus" in expected.json), None when it ran."""
    row = {"scenario": name, "tp": 0, "fn": 0, "fp": 0, "details": []}
    fire = expected.get("fire") or []
    allow = set(expected.get("allow") or [])
    fire_rules = {e["rule"] for e in fire}
    def wanted(e):
        lo, hi = e.get("min_severity", "info"), e.get("max_severity")
        return "%s=%s" % (e["rule"], lo) if hi == lo else "%s>=%s" % (e["rule"], lo) + ("..%s" % hi if hi else "")
    row["expected"] = ", ".join(wanted(e) for e in fire)
    if not row["expected"] and not expected.get("faults") and not expected.get("summary"):
        row["expected"] = "nothing above info"
    if result is None and skipped:
        row["verdict"] = "SKIPPED"
        row["found"] = "-"
        row["details"].append(skipped)
        return row
    if result is None:
        row["fn"] = len(fire) + len(expected.get("faults") or [])
        row["found"] = "(no findings file)"
        row["verdict"] = "MISSING"
        row["details"].append("no readable findings")
        return row
    findings = result.get("findings") or []
    above = [f for f in findings if sev(f.get("severity")) > 0]
    row["found"] = ", ".join(sorted("%s:%s" % (f.get("rule"), f.get("severity")) for f in above)) or "-"
    for e in fire:
        reasons = []
        ok = False
        for f in findings[:1] if e.get("first") else findings:
            why = matches(e, f)
            if why is None:
                ok = True
                break
            if why != "other rule":
                reasons.append(why)
        if ok:
            row["tp"] += 1
        else:
            row["fn"] += 1
            if e.get("first") and not reasons:
                reasons = ["the first finding is %s, not this rule's" % (findings[0].get("rule") if findings else "none")]
            row["details"].append("missed %s: %s" % (e["rule"], "; ".join(reasons[:3]) or "rule did not fire"))
    summary = result.get("summary") or {}
    for key, ops in (expected.get("summary") or {}).items():
        row["expected"] += ("; " if row["expected"] else "") + "summary %s %s" % (key, json.dumps(ops, sort_keys=True))
        found, have = lookup(summary, key)
        bad = [op for op, want in ops.items() if not (found and check_op(op, want, have))]
        if bad:
            row["fn"] += 1
            row["details"].append("summary %s=%s fails %s" % (key, json.dumps(have) if found else "(missing)",
                                                             json.dumps({op: ops[op] for op in bad})))
        else:
            row["tp"] += 1
            row["found"] += "; summary %s=%s" % (key, json.dumps(have))
    for e in expected.get("stderr") or []:
        want = [e["contains"]] + ([e["and"]] if e.get("and") else [])
        row["expected"] += ("; " if row["expected"] else "") + "stderr %s" % " + ".join(repr(w) for w in want)
        lines = (stderr or "").splitlines()
        if any(all(w in line for w in want) for line in lines):
            row["tp"] += 1
            row["found"] += "; stderr line"
        else:
            row["fn"] += 1
            row["details"].append("missed stderr line with %s%s" % (" and ".join(repr(w) for w in want),
                                                                     "" if stderr is not None else " (no stderr log)"))
    fault_rows = result.get("faults")
    if fault_rows is None:
        fault_rows = (result.get("summary") or {}).get("faults") or []
    for e in expected.get("faults") or []:
        row["expected"] += ("; " if row["expected"] else "") + "fault %s: %s" % (e["rule"], e.get("outcome", "injected"))
        hit = [r for r in fault_rows if r.get("rule") == e["rule"]]
        ok = bool(hit) and hit[0].get("injected", 0) >= e.get("min_injected", 1) and (
            not e.get("outcome") or any(e["outcome"] in k for k in (hit[0].get("outcomes") or {})))
        if ok:
            row["tp"] += 1
            row["found"] += "; fault %s: %s" % (e["rule"], ", ".join(
                "%s %dx" % (k, v) for k, v in sorted((hit[0].get("outcomes") or {}).items())))
        else:
            row["fn"] += 1
            row["details"].append("missed fault %s: %s" % (e["rule"], "not in the fault report" if not hit else
                                                              "outcomes %s" % hit[0].get("outcomes")))
    for f in above:
        r = f.get("rule")
        if r not in fire_rules and r not in allow:
            row["fp"] += 1
            row["details"].append("unexpected %s:%s: %s" % (r, f.get("severity"), (f.get("message") or "")[:160]))
    row["verdict"] = "PASS" if row["fn"] == 0 and row["fp"] == 0 else "FAIL"
    return row


def load_json(path):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def analyze_traces(cuprobe, traces, outdir, names):
    os.makedirs(outdir, exist_ok=True)
    for name in names:
        tdir = os.path.join(traces, name)
        if not os.path.isdir(tdir):
            continue
        out = os.path.join(outdir, name + ".json")
        try:
            r = subprocess.run([cuprobe, "analyze", "--json", tdir], capture_output=True, timeout=300)
            with open(out, "wb") as fh:
                fh.write(r.stdout)
            if r.returncode != 0:
                sys.stderr.write("%s: cuprobe analyze exit %d: %s\n" % (name, r.returncode, r.stderr.decode()[-300:]))
        except (OSError, subprocess.TimeoutExpired) as e:
            sys.stderr.write("%s: cuprobe analyze failed: %s\n" % (name, e))


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--findings", help="directory of <scenario>.json findings")
    ap.add_argument("--scenarios", default=here, help="scenario directory (default: this script's)")
    ap.add_argument("--json", dest="json_out", help="write the scores here")
    ap.add_argument("--cuprobe", help="cuprobe binary, to (re)analyze --traces first")
    ap.add_argument("--traces", help="directory of <scenario>/ trace directories")
    ap.add_argument("--logs", help="directory of <scenario>.err standard error logs (default: the findings "
                    "directory's sibling logs/)")
    ap.add_argument("names", nargs="*", help="only these scenarios")
    a = ap.parse_args(argv)
    if bool(a.cuprobe) != bool(a.traces):
        ap.error("--cuprobe and --traces go together")
    if not a.findings and not a.traces:
        ap.error("give --findings DIR, or --cuprobe BIN --traces DIR")
    scen = {}
    for p in sorted(glob.glob(os.path.join(a.scenarios, "*", "expected.json"))):
        name = os.path.basename(os.path.dirname(p))
        if a.names and name not in a.names:
            continue
        exp = load_json(p)
        if exp is None:
            sys.stderr.write("unreadable %s\n" % p)
            continue
        scen[name] = exp
    if not scen:
        ap.error("no scenarios with expected.json under %s" % a.scenarios)
    findings_dir = a.findings
    if a.traces:
        findings_dir = findings_dir or tempfile.mkdtemp(prefix="cuprobe-findings.")
        analyze_traces(a.cuprobe, a.traces, findings_dir, list(scen))
    logs = a.logs or os.path.join(os.path.dirname(os.path.abspath(findings_dir)), "logs")
    rows = []
    for name, exp in scen.items():
        try:
            with open(os.path.join(logs, name + ".err"), errors="replace") as fh:
                stderr = fh.read()
        except OSError:
            stderr = None
        try:
            with open(os.path.join(findings_dir, name + ".skipped")) as fh:
                skipped = fh.read().strip() or "skipped"
        except OSError:
            skipped = None
        rows.append(score_scenario(name, exp, load_json(os.path.join(findings_dir, name + ".json")), stderr,
                                   skipped))
    tp = sum(r["tp"] for r in rows)
    fn = sum(r["fn"] for r in rows)
    fp = sum(r["fp"] for r in rows)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    w = [max(len("scenario"), *(len(r["scenario"]) for r in rows)),
         max(len("expected"), *(len(r["expected"]) for r in rows))]
    print("%-*s | %-*s | %s | %s" % (w[0], "scenario", w[1], "expected", "verdict", "found above info"))
    print("-" * (w[0] + w[1] + 40))
    for r in rows:
        print("%-*s | %-*s | %-7s | %s" % (w[0], r["scenario"], w[1], r["expected"], r["verdict"], r["found"]))
        for d in r["details"]:
            print("%-*s     %s" % (w[0], "", d))
    passed = sum(1 for r in rows if r["verdict"] == "PASS")
    print("\n%d/%d scenarios pass; TP %d FN %d FP %d; precision %.2f recall %.2f (findings above info)" %
          (passed, len(rows), tp, fn, fp, precision, recall))
    if a.json_out:
        with open(a.json_out, "w") as fh:
            json.dump({"scenarios": rows, "tp": tp, "fn": fn, "fp": fp, "precision": precision, "recall": recall,
                       "passed": passed, "total": len(rows)}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
