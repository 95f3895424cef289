#!/usr/bin/env python3
"""Every mutex of the shim has a rank in shim/lock_order.h (issue 27).

The shim's mutexes are the lines of CUPROBE_SHIM_LOCKS, stored in one array and taken through
shim_lock/ShimLock by rank, so that the one written lock order covers all of them. This fails when
a file of shim/ other than lock_order.{h,cpp} declares or takes a mutex of its own (pthread
mutexes, read-write and spin locks, std::mutex), when a rank is not used by the file its line names
(a stale entry), or when a line has no fork policy or does not say what it guards. Comments and
string literals are ignored. `--self-test` shows it finds each of those.

Usage: check_lock_ranks.py SHIM_DIR     (exit 1 and a list of problems)
       check_lock_ranks.py --self-test
"""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cxx_text import blank  # noqa: E402

ENTRY = re.compile(r'X\(\s*(k\w+)\s*,\s*(\w+)\s*,\s*"([^"]*)"\s*\)')
POLICIES = {"kHeldAcrossFork", "kResetInChild"}
# What declares or takes a lock without going through lock_order.h.
FOREIGN_LOCK = re.compile(
    r"\b(pthread_mutex_t|pthread_rwlock_t|pthread_spinlock_t|PTHREAD_MUTEX_INITIALIZER|pthread_mutex_lock|"
    r"pthread_mutex_trylock|pthread_mutex_timedlock|pthread_rwlock_\w+|pthread_spin_lock|"
    r"std::(?:recursive_|timed_|shared_)?mutex)\b")
OWN_FILES = {"lock_order.h", "lock_order.cpp"}


def read_entries(shim_dir):
    """[(rank, policy, guards)] of CUPROBE_SHIM_LOCKS, in rank order."""
    with open(os.path.join(shim_dir, "lock_order.h"), encoding="utf-8") as f:
        text = f.read()
    start = text.find("#define CUPROBE_SHIM_LOCKS(X)")
    if start < 0:
        return None
    body = []
    for line in text[start:].splitlines()[1:]:
        body.append(line)
        if not line.rstrip().endswith("\\"):
            break
    return ENTRY.findall(" ".join(line.rstrip("\\") for line in body))


def check(shim_dir):
    problems = []
    entries = read_entries(shim_dir)
    if not entries:
        return ["lock_order.h: no CUPROBE_SHIM_LOCKS entries found"]
    sources = {}
    for name in sorted(os.listdir(shim_dir)):
        if name.endswith((".h", ".cpp", ".S")):
            with open(os.path.join(shim_dir, name), encoding="utf-8", errors="replace") as f:
                sources[name] = f.read()
    for name, text in sources.items():
        if name in OWN_FILES:
            continue
        code = blank(text)
        for m in FOREIGN_LOCK.finditer(code):
            line = code.count("\n", 0, m.start()) + 1
            problems.append(f"{name}:{line}: {m.group(1)} outside lock_order.h: give the mutex a rank in "
                            "CUPROBE_SHIM_LOCKS and take it with shim_lock/ShimLock")
    seen = set()
    for rank, policy, guards in entries:
        if rank in seen:
            problems.append(f"lock_order.h: {rank} is listed twice")
        seen.add(rank)
        if policy not in POLICIES:
            problems.append(f"lock_order.h: {rank} has fork policy {policy}, not one of {sorted(POLICIES)}")
        owner = guards.split(":", 1)[0].strip()
        if ":" not in guards or not guards.split(":", 1)[1].strip():
            problems.append(f"lock_order.h: {rank} does not say 'FILE: what it guards'")
            continue
        if owner not in sources:
            problems.append(f"lock_order.h: {rank} names {owner}, which is not in shim/")
            continue
        if not re.search(r"\bLockRank::" + rank + r"\b", blank(sources[owner])):
            problems.append(f"lock_order.h: {rank} is not taken in {owner} (a stale entry?)")
    return problems


def self_test():
    header = ('#define CUPROBE_SHIM_LOCKS(X) \\\n'
              '  X(kA, kHeldAcrossFork, "a.cpp: the a table") \\\n'
              '  X(kB, kResetInChild, "b.cpp: the b table")\n')
    cases = [
        # (files besides lock_order.h, substrings every expected problem contains, in order)
        ({"a.cpp": "ShimLock l(LockRank::kA);", "b.cpp": "shim_lock(LockRank::kB);"}, []),
        ({"a.cpp": "ShimLock l(LockRank::kA);", "b.cpp": "shim_lock(LockRank::kB);\npthread_mutex_t g_m;"},
         ["b.cpp:2: pthread_mutex_t"]),
        ({"a.cpp": "ShimLock l(LockRank::kA);\n// pthread_mutex_lock(&old) in a comment\nconst char* s = \"std::mutex\";",
          "b.cpp": "shim_lock(LockRank::kB);"}, []),
        ({"a.cpp": "ShimLock l(LockRank::kA);", "b.cpp": "static std::mutex m;"},
         ["b.cpp:1: std::mutex", "kB is not taken in b.cpp"]),
        ({"a.cpp": "ShimLock l(LockRank::kA);\nvoid f() { pthread_rwlock_wrlock(&rw); }", "b.cpp": "shim_lock(LockRank::kB);"},
         ["a.cpp:2: pthread_rwlock_wrlock"]),
        ({"a.cpp": "ShimLock l(LockRank::kA);"}, ["kB names b.cpp"]),
    ]
    bad = 0
    for files, want in cases:
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "lock_order.h"), "w") as f:
                f.write(header)
            for name, text in files.items():
                with open(os.path.join(d, name), "w") as f:
                    f.write(text + "\n")
            got = check(d)
        if len(got) != len(want) or any(w not in g for w, g in zip(want, got)):
            print(f"self-test: expected problems containing {want}, found {got} for {files}")
            bad += 1
    print(f"self-test: {len(cases) - bad} of {len(cases)} cases right")
    return 1 if bad else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
        return 2
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    entries = read_entries(sys.argv[1]) or []
    print(f"check_lock_ranks: {len(entries)} ranked locks; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
