#!/usr/bin/env python3
"""Compares the findings of two `cuprobe analyze --json` reports: the same rules at the same
severities, and messages equal once numbers and hashes are masked (two recordings of one GPU
job differ in timings and counts; two versions of cuprobe on one trace must not differ at all:
--exact). Usage: compare_findings.py [--exact] BEFORE.json AFTER.json [LABEL]
Exit status 0 when they match, 1 otherwise (the differences are printed)."""
import json
import re
import sys

args = [a for a in sys.argv[1:] if a != "--exact"]
exact = "--exact" in sys.argv
before, after = json.load(open(args[0])), json.load(open(args[1]))
label = args[2] if len(args) > 2 else args[1]


def mask(text):
    text = re.sub(r"0x[0-9a-f]+", "0xH", text)
    return text if exact else re.sub(r"\d+(\.\d+)?", "#", text)


def key(report):
    return sorted((f["rule"], f["severity"], mask(f["message"])) for f in report["findings"])


a, b = key(before), key(after)
if a == b:
    print(f"{label}: same findings ({len(a)}: {', '.join(sorted({r for r, _, _ in a})) or 'none'})")
    sys.exit(0)
print(f"{label}: findings differ")
for item in a:
    if item not in b:
        print(f"  only before: [{item[1]}] {item[0]}: {item[2][:300]}")
for item in b:
    if item not in a:
        print(f"  only after:  [{item[1]}] {item[0]}: {item[2][:300]}")
sys.exit(1)
