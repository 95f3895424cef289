#!/usr/bin/env python3
"""Self-test for score.py on fabricated findings (no GPU, no cuprobe needed): python3 test_score.py"""
import contextlib
import io
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import score  # noqa: E402


def write(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        json.dump(obj, fh)


def finding(rule, severity, evidence=None, message=""):
    return {"rule": rule, "severity": severity, "title": "t", "message": message, "evidence": evidence or {},
            "problems": [], "call_sites": [], "pids": [1], "impact_s": 0.0, "fix": ""}


def main():
    tmp = tempfile.mkdtemp(prefix="score-test.")
    scen, fnd = os.path.join(tmp, "scen"), os.path.join(tmp, "findings")
    storm = {"rule": "research-storm", "min_severity": "warning",
             "evidence": {"pattern": {"eq": "unbounded dynamic shapes"}, "late_searches": {"min": 5}},
             "message_contains": ["searches"], "message_not_contains": [" 1.."]}
    write(os.path.join(scen, "a-pass", "expected.json"), {"description": "", "exclusive": False, "fire": [storm], "allow": []})
    write(os.path.join(fnd, "a-pass.json"), {"summary": {}, "findings": [
        finding("research-storm", "error", {"pattern": "unbounded dynamic shapes", "late_searches": 40}, "40 searches 4000..64000"),
        finding("sync-stall", "info")]})
    # b: right rule, wrong evidence -> FN; plus an unexpected warning -> FP
    write(os.path.join(scen, "b-fail", "expected.json"), {"description": "", "exclusive": False, "fire": [storm], "allow": []})
    write(os.path.join(fnd, "b-fail.json"), {"summary": {}, "findings": [
        finding("research-storm", "warning", {"pattern": "shape buckets", "late_searches": 40}, "searches"),
        finding("oom-postmortem", "error")]})
    # c: nothing expected, an allowed rule at warning, contains on a list, dotted key
    drift = {"rule": "env-drift", "min_severity": "warning", "max_severity": "warning",
             "evidence": {"kinds": {"contains": "rank-settings-drift"}, "a.b": {"eq": 3}}}
    write(os.path.join(scen, "c-allow", "expected.json"), {"description": "", "exclusive": False, "fire": [drift],
                                                           "allow": ["memory-coverage"]})
    write(os.path.join(fnd, "c-allow.json"), {"summary": {}, "findings": [
        finding("env-drift", "warning", {"kinds": ["rank-version-drift", "rank-settings-drift"], "a": {"b": 3}}),
        finding("memory-coverage", "warning")]})
    # d: max_severity exceeded -> FN; message_not_contains hit in e
    write(os.path.join(scen, "d-max", "expected.json"), {"description": "", "exclusive": False, "fire": [drift], "allow": []})
    write(os.path.join(fnd, "d-max.json"), {"summary": {}, "findings": [
        finding("env-drift", "error", {"kinds": ["rank-settings-drift"], "a": {"b": 3}})]})
    write(os.path.join(scen, "e-msg", "expected.json"), {"description": "", "exclusive": False, "fire": [storm], "allow": []})
    write(os.path.join(fnd, "e-msg.json"), {"summary": {}, "findings": [
        finding("research-storm", "warning", {"pattern": "unbounded dynamic shapes", "late_searches": 9},
                "9 searches, H 1..1")]})
    # g: the fault report and the summary: one fault outcome shown, one summary key right, one wrong
    write(os.path.join(scen, "g-faults", "expected.json"), {
        "description": "", "exclusive": False, "fire": [],
        "faults": [{"rule": "every-plan", "outcome": "stopped", "min_injected": 2}],
        "summary": {"rank_sources": {"contains": "nccl"}, "unranked_processes": {"max": 0}}, "allow": []})
    write(os.path.join(fnd, "g-faults.json"), {
        "summary": {"rank_sources": ["env"], "unranked_processes": 0,
                    "faults": [{"rule": "every-plan", "injected": 39, "outcomes": {"stopped": 1}}]},
        "findings": []})
    # h: "first": the OOM is matched only as the report's first finding (here it is second: FN);
    # i: the same with the OOM first (TP), and a stderr line holding both texts (TP) in logs/
    oom_first = {"rule": "oom-postmortem", "min_severity": "error", "first": True}
    write(os.path.join(scen, "h-first", "expected.json"), {"description": "", "exclusive": True, "fire": [oom_first],
                                                           "allow": ["allocation-churn"]})
    write(os.path.join(fnd, "h-first.json"), {"summary": {}, "findings": [
        finding("allocation-churn", "warning"), finding("oom-postmortem", "error")]})
    write(os.path.join(scen, "i-first-stderr", "expected.json"), {
        "description": "", "exclusive": True, "fire": [oom_first], "allow": [],
        "stderr": [{"contains": "cuprobe alert:", "and": "keep arriving"}, {"contains": "never written"}]})
    write(os.path.join(fnd, "i-first-stderr.json"), {"summary": {}, "findings": [finding("oom-postmortem", "error")]})
    os.makedirs(os.path.join(tmp, "logs"))
    with open(os.path.join(tmp, "logs", "i-first-stderr.err"), "w") as fh:
        fh.write("noise\ncuprobe alert: pid 1: new cuDNN problems keep arriving: 112\n")
    # j: list selectors in summary keys (chaos.ends[rank=1].ended), one right, one wrong; k: skipped
    write(os.path.join(scen, "j-select", "expected.json"), {
        "description": "", "exclusive": False, "fire": [], "allow": [],
        "summary": {"chaos.ends[rank=1].ended": {"eq": "exited"}, "chaos.ends[rank=0].ended": {"eq": "exited"}}})
    write(os.path.join(fnd, "j-select.json"), {"summary": {"chaos": {"ends": [
        {"rank": 0, "ended": "killed by signal 15"}, {"rank": 1, "ended": "exited"}]}}, "findings": []})
    write(os.path.join(scen, "k-skipped", "expected.json"), {"description": "", "exclusive": False, "min_gpus": 2,
                                                             "fire": [oom_first], "allow": []})
    with open(os.path.join(fnd, "k-skipped.skipped"), "w") as fh:
        fh.write("needs 2 GPUs, the machine had 1\n")
    # f: findings file missing
    write(os.path.join(scen, "f-missing", "expected.json"), {"description": "", "exclusive": False, "fire": [], "allow": []})

    out = os.path.join(tmp, "scores.json")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = score.main(["--findings", fnd, "--scenarios", scen, "--json", out])
    text = buf.getvalue()
    res = json.load(open(out))
    rows = {r["scenario"]: r for r in res["scenarios"]}
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    expect(rc == 0, "exit status 0")
    expect(rows["a-pass"]["verdict"] == "PASS", "a-pass passes")
    expect(rows["b-fail"]["fn"] == 1 and rows["b-fail"]["fp"] == 1, "b-fail: 1 FN, 1 FP")
    expect(rows["c-allow"]["verdict"] == "PASS", "c-allow passes (allowed rule, list contains, dotted key)")
    expect(rows["d-max"]["fn"] == 1, "d-max: max_severity enforced")
    expect(rows["e-msg"]["fn"] == 1, "e-msg: message_not_contains enforced")
    expect(rows["f-missing"]["verdict"] == "MISSING", "f-missing reported")
    expect(rows["g-faults"]["tp"] == 2 and rows["g-faults"]["fn"] == 1, "g-faults: fault outcome and one summary "
           "key found, rank_sources missed, got %s" % [rows["g-faults"]["tp"], rows["g-faults"]["fn"]])
    expect(rows["h-first"]["fn"] == 1 and "the first finding is allocation-churn" in " ".join(rows["h-first"]["details"]),
           "h-first: an OOM below another finding misses 'first', got %s" % rows["h-first"]["details"])
    expect(rows["i-first-stderr"]["tp"] == 2 and rows["i-first-stderr"]["fn"] == 1,
           "i-first-stderr: first OOM and one stderr line found, one missed, got %s" %
           [rows["i-first-stderr"]["tp"], rows["i-first-stderr"]["fn"]])
    expect(rows["j-select"]["tp"] == 1 and rows["j-select"]["fn"] == 1 and
           "killed by signal 15" in " ".join(rows["j-select"]["details"]),
           "j-select: rank 1's end found, rank 0's wrong, got %s" % rows["j-select"])
    expect(rows["k-skipped"]["verdict"] == "SKIPPED" and rows["k-skipped"]["fn"] == 0, "k-skipped: skipped, not a miss")
    expect(res["tp"] == 7 and res["fn"] == 7 and res["fp"] == 1, "totals TP 7 FN 7 FP 1, got %s" %
           [res["tp"], res["fn"], res["fp"]])
    expect("precision" in text and "a-pass" in text, "table printed")
    if failures:
        print(text)
        print("FAILED:", *failures, sep="\n  ")
        return 1
    print("test_score: all %d checks passed" % 14)
    return 0


if __name__ == "__main__":
    sys.exit(main())
