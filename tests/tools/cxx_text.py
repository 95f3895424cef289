"""C and C++ source as the checkers of tests/tools read it: lexically, not parsed.

blank(src) replaces comments, string and character literals and raw strings by blanks that keep
the number of lines (a literal becomes "" or ''), so that what is written inside them is never
matched and a match's line number is the source's. Shared by check_function_length.py,
check_lock_ranks.py and check_no_shell.py; each checker's --self-test (or sample list) exercises it.
"""
import re

RAW_STRING = re.compile(r'R"([^(\s]*)\((.*?)\)\1"', re.S)


def blank(src):
    """src with comments, literals and raw strings blanked, line count kept."""
    src = RAW_STRING.sub(lambda m: '""' + "\n" * m.group(0).count("\n"), src)
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * src.count("\n", i, j))
            i = j
        elif src[i] in "\"'":
            q, j = src[i], i + 1
            while j < n and src[j] != q and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(q + q)
            i = j + 1
        else:
            out.append(src[i])
            i += 1
    return "".join(out)
