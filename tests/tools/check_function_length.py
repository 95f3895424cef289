#!/usr/bin/env python3
"""No function over 150 lines in shim/, common/, analyzer/, cli/ (issue 27; docs/architecture.md).

A function is a brace block at namespace or class scope whose head ends in a parameter list (with
const/override/noexcept/-> trailing), not an if/for/while/switch/catch; its length is the number of
lines from its opening to its closing brace. Blocks inside a function (lambdas, local classes) count
toward it. Comments, string and character literals and raw strings are blanked first
(cxx_text.py), so braces in them do not count. This is a lexical reading, not a C++ parser: `--self-test` checks it on the
shapes this code base uses, and CI runs both.

Usage: check_function_length.py [--limit N] DIR...   (exit 1 and a list when a function is longer)
       check_function_length.py --self-test
Written here rather than with clang-tidy's readability-function-size because that needs a
compile_commands.json of every configuration and counts statements, not lines.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cxx_text import blank  # noqa: E402

HEAD_IS_CALLABLE = re.compile(r"\)\s*(const|override|noexcept|final|mutable|\s)*(->[^{;]*)?$")
CONTROL = re.compile(r"\b(if|for|while|switch|catch)\s*\(")
NAME = re.compile(r"([A-Za-z_~][\w:<>~,]*)\s*\((?:[^()]|\([^()]*\))*\)\s*(?:const|override|noexcept|final|mutable|\s)*(?:->[^{;]*)?$")


def long_functions(text, limit):
    """(lines, start line, name) of each function longer than limit lines."""
    src = blank(text)
    found, stack = [], []  # stack: (is function, start line, name)
    line, head_start = 1, 0
    for i, ch in enumerate(src):
        if ch == "\n":
            line += 1
        elif ch == "{":
            head = src[head_start:i].strip()
            last = head.split("\n")[-1]
            inside_function = any(f for f, _, _ in stack)
            is_fn = not inside_function and bool(HEAD_IS_CALLABLE.search(head)) and not CONTROL.search(last)
            m = NAME.search(head)
            stack.append((is_fn, line, m.group(1) if m else head[-40:]))
            head_start = i + 1
        elif ch == "}":
            if stack:
                is_fn, start, name = stack.pop()
                if is_fn and line - start > limit:
                    found.append((line - start, start, name))
            head_start = i + 1
        elif ch == ";":
            head_start = i + 1
    return found


def scan(dirs, limit):
    res = []
    for root in dirs:
        for d, _, files in os.walk(root):
            for f in sorted(files):
                if f.endswith((".cpp", ".h", ".cc")):
                    path = os.path.join(d, f)
                    with open(path, errors="replace") as fh:
                        res += [(n, path, start, name) for n, start, name in long_functions(fh.read(), limit)]
    return sorted(res, reverse=True)


def body(n):
    return "".join(f"  x += {k};\n" for k in range(n))


def self_test():
    cases = [
        # (source, expected names of long functions), limit 10
        ("int f(int x) {\n" + body(9) + "}\n", []),  # 10 lines from brace to brace: at the limit
        ("int f(int x) {\n" + body(10) + "}\n", ["f"]),
        ("namespace a {\nstruct S {\n  void m() const {\n" + body(12) + "  }\n};\n}\n", ["m"]),
        ("auto g() -> int {\n" + body(12) + "}\n", ["g"]),
        ("void h() {\n  auto l = [&](int y) {\n" + body(12) + "  };\n}\n", ["h"]),  # a lambda counts toward h
        ("void k() {\n  if (x) {\n" + body(4) + "  }\n" + "  const char* s = \"{{{\"; // }}}\n" + body(8) + "}\n", ["k"]),
        ("const char* page = R\"(\n{\n" + "\n" * 20 + "}\n)\";\nvoid z() {}\n", []),  # braces in raw strings
        ("struct Big {\n" + "  int a;\n" * 30 + "};\n", []),  # a class is not a function
        ("void S::Inner::op() noexcept {\n" + body(11) + "}\n", ["S::Inner::op"]),
    ]
    bad = 0
    for src, want in cases:
        got = [name for _, _, name in long_functions(src, 10)]
        if got != want:
            print(f"self-test: expected {want}, found {got} in:\n{src[:200]}")
            bad += 1
    print(f"self-test: {len(cases) - bad} of {len(cases)} cases right")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=150)
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("dirs", nargs="*")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.dirs:
        ap.error("name the directories to check")
    res = scan(a.dirs, a.limit)
    for n, path, start, name in res:
        print(f"{path}:{start}: {name} is {n} lines (limit {a.limit}); split it into named steps")
    if not res:
        print(f"no function over {a.limit} lines in {', '.join(a.dirs)}")
    return 1 if res else 0


if __name__ == "__main__":
    sys.exit(main())
