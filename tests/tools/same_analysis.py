#!/usr/bin/env python3
"""Whether two cuprobe binaries analyze the same inputs identically (for refactors that must not
change behaviour, issue 27): `analyze --json` of every rule fixture case and of every directory of
traces given, byte for byte.

    tests/tools/same_analysis.py --base OLD/cuprobe --new NEW/cuprobe [--fixtures rules/fixtures] [DIR...]

A fixture case is a .jsonl file directly under fire/ or quiet/, or a directory there (several
ranks). Each DIR is analyzed as is, and so is each of its subdirectories that holds traces (the
scenario corpus's layout: one directory per scenario). Prints each input that differs with the
first differing line, and a count; exit 1 if any differ, 2 if an input could not be analyzed by
either binary in the same way (exit codes differ).
"""
import argparse
import difflib
import pathlib
import subprocess
import sys


def fixture_cases(root):
    for verdict in sorted(root.glob("*/*")):
        if verdict.name not in ("fire", "quiet"):
            continue
        for case in sorted(verdict.iterdir()):
            if case.suffix == ".jsonl" or case.is_dir():
                yield case


def trace_dirs(top):
    def holds_traces(d):
        return any(p.suffix in (".cuprobe", ".jsonl") for p in d.iterdir() if p.is_file())

    if holds_traces(top):
        yield top
    for d in sorted(p for p in top.rglob("*") if p.is_dir()):
        if holds_traces(d):
            yield d


def analyze(binary, path):
    r = subprocess.run([binary, "analyze", "--json", str(path)], capture_output=True, timeout=300)
    return r.returncode, r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the cuprobe binary before the change")
    ap.add_argument("--new", required=True, help="the cuprobe binary after it")
    ap.add_argument("--fixtures", default=str(pathlib.Path(__file__).resolve().parents[2] / "rules" / "fixtures"))
    ap.add_argument("dirs", nargs="*", help="directories of traces (a run, or one directory per run)")
    args = ap.parse_args()
    inputs = list(fixture_cases(pathlib.Path(args.fixtures)))
    for d in args.dirs:
        inputs += list(trace_dirs(pathlib.Path(d)))
    differ = 0
    status = 0
    for path in inputs:
        (rc_a, a), (rc_b, b) = analyze(args.base, path), analyze(args.new, path)
        if rc_a != rc_b:
            print(f"{path}: exit {rc_a} before, {rc_b} after")
            status = 2
        if a != b:
            differ += 1
            diff = difflib.unified_diff(a.decode(errors="replace").splitlines(),
                                        b.decode(errors="replace").splitlines(), lineterm="", n=0)
            first = [l for l in diff if l[:1] in "+-" and not l.startswith(("+++", "---"))][:2]
            print(f"{path}: differs: {' | '.join(first)}")
    print(f"{len(inputs)} inputs, {differ} differ")
    return status or (1 if differ else 0)


if __name__ == "__main__":
    sys.exit(main())
