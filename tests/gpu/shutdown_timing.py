"""How long a multi-process job takes to end after Ctrl-C or SIGTERM, traced and untraced.

Starts each job in a session of its own, waits until it trains (a line of its output matches
--ready), sends the signal (SIGINT to the whole process group, as a terminal's Ctrl-C does, or
SIGTERM to the launcher only, as Kubernetes does), and measures until every process the job
started is gone. Prints one line per run and writes them as JSON to --json.

Usage: shutdown_timing.py --json OUT --name NAME --ready REGEX [--signal INT|TERM] -- CMD..."""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time


def descendants(root):
    """Every live process whose ancestry reaches root (root included)."""
    parent = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
            fields = s[s.rindex(")") + 2:].split()
            if fields[0] != "Z":
                parent[int(d)] = int(fields[1])
        except (OSError, ValueError):
            pass
    out = set()
    for pid in parent:
        p, seen = pid, 0
        while p in parent and seen < 64:
            if p == root:
                out.add(pid)
                break
            p, seen = parent[p], seen + 1
    return out


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
        return s[s.rindex(")") + 2] != "Z"
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--ready", required=True)
    ap.add_argument("--signal", default="INT", choices=["INT", "TERM"])
    ap.add_argument("--ready-timeout", type=float, default=240)
    ap.add_argument("--end-timeout", type=float, default=120)
    ap.add_argument("--log", default=None)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    log = open(a.log or os.devnull, "w")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, text=True)
    ready = threading.Event()
    pattern = re.compile(a.ready)

    def pump():
        for line in proc.stdout:
            log.write(line)
            log.flush()
            if pattern.search(line):
                ready.set()

    threading.Thread(target=pump, daemon=True).start()
    result = {"name": a.name, "signal": a.signal, "cmd": " ".join(cmd)}
    t0 = time.monotonic()
    if not ready.wait(a.ready_timeout):
        result["error"] = f"not ready after {a.ready_timeout:.0f} s"
        os.killpg(proc.pid, signal.SIGKILL)
    else:
        result["ready_s"] = round(time.monotonic() - t0, 2)
        time.sleep(2)
        procs = descendants(proc.pid)
        result["processes"] = len(procs)
        t1 = time.monotonic()
        if a.signal == "INT":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGTERM)
        left = set(procs)
        while left and time.monotonic() - t1 < a.end_timeout:
            left = {p for p in left if alive(p)}
            proc.poll()
            time.sleep(0.05)
        result["end_s"] = round(time.monotonic() - t1, 2)
        if left:
            result["stuck"] = sorted(left)
            for p in left:
                try:
                    with open(f"/proc/{p}/cmdline", "rb") as f:
                        result.setdefault("stuck_cmd", []).append(f.read().replace(b"\0", b" ").decode()[:200])
                    with open(f"/proc/{p}/wchan") as f:
                        result.setdefault("stuck_wchan", []).append(f.read())
                except OSError:
                    pass
            os.killpg(proc.pid, signal.SIGKILL)
            for p in left:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        try:
            result["exit"] = proc.wait(10)
        except subprocess.TimeoutExpired:
            result["exit"] = None
    print(json.dumps(result), flush=True)
    with open(a.json, "a") as f:
        f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
