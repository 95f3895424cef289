#!/usr/bin/env python3
"""Checks that the cuprobe command's code starts no shell.

Usage: check_no_shell.py [ROOT]   (ROOT: the repository, default: two levels above this file)

The analyzer reads traces, which are files from anyone, and paths in them must never reach a
shell (analyzer/trace/symbolize.cpp once ran `addr2line -e '<path from the trace>'` through
popen). Fails (exit 1, one line per call) when a C or C++ file under analyzer/, cli/ or common/ calls
popen, system or wordexp (which runs command substitutions), comments and string literals aside.
Programs are started with an argument vector (posix_spawn, execvp), as `cuprobe record` does.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cxx_text import blank  # noqa: E402

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
DIRS = ["analyzer", "cli", "common"]
SUFFIXES = (".c", ".cc", ".cpp", ".h", ".hpp", ".in")

# A call of one of these functions: the name not preceded by a word character, `.` or `->` (a
# member of something else, or a longer name such as `filesystem`); `std::` or `::` may qualify it.
CALL = re.compile(r"(?<![\w.>])(popen|system|wordexp)\s*\(")
def calls(text):
    code = blank(text)  # comments and literals blanked, line count kept (cxx_text.py)
    return [(code.count("\n", 0, m.start()) + 1, m.group(1)) for m in CALL.finditer(code)]


# The matcher must be able to fail: each sample is judged as stated, or the check itself is broken.
SAMPLES = {
    'FILE* p = popen(cmd.c_str(), "r");': True,
    "int rc = std::system (cmd);": True,
    "::system(cmd);": True,
    "wordexp(s, &w, 0);": True,
    "fs::path p = fs::temp_directory_path(); fs::filesystem_error e(\"x\", ec);": False,
    "config.system(1); ptr->popen(2);": False,
    "// popen(cmd) was used here once": False,
    'log("system(x)");': False,
}


def main():
    broken = [s for s, expected in SAMPLES.items() if bool(calls(s)) != expected]
    for s in broken:
        print(f"check_no_shell: the matcher misjudges the sample {s!r}")
    if broken:
        return 1
    found = []
    scanned = 0
    for d in DIRS:
        for base, _, files in os.walk(os.path.join(ROOT, d)):
            for name in sorted(files):
                if not name.endswith(SUFFIXES):
                    continue
                path = os.path.join(base, name)
                scanned += 1
                with open(path, encoding="utf-8", errors="replace") as f:
                    for line, fn in calls(f.read()):
                        found.append(f"{os.path.relpath(path, ROOT)}:{line}: calls {fn}(): start programs with an "
                                     "argument vector (posix_spawn, execvp), never through a shell")
    for f in found:
        print(f)
    if scanned == 0:
        print(f"check_no_shell: no source file under {ROOT}/{DIRS[0]}: wrong root")
        return 1
    print(f"check_no_shell: {'FAILED' if found else 'ok'}: {len(found)} shell calls in {scanned} files "
          f"under {', '.join(d + '/' for d in DIRS)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
