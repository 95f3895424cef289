"""The `cuprobe` console script and `python -m cuprobe`: the bundled command, run in place.

exec keeps the process (its pid, its signals, its exit status) as if the user had run the
binary itself, which `cuprobe record` relies on to hand signals to the traced job.
"""
import os
import sys

from ._paths import executable


def main():
    exe = executable()
    try:
        os.execv(exe, [exe] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write(f"cuprobe: cannot run {exe}: {e}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
