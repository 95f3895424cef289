"""cuprobe: trace CUDA runtime, driver, cuDNN and NCCL calls of unmodified GPU jobs, and explain them.

The wheel carries the `cuprobe` command, the preload shim (libcuprobe.so) and the analyzer's
rules; this module runs that command. Everything `cuprobe --help` lists works the same from the
shell (`cuprobe ...`), as a module (`python -m cuprobe ...`) and from Python:

    import cuprobe
    cuprobe.record(["python", "train.py"], out="run1")      # the job's exit status
    report = cuprobe.analyze("run1")                       # what `cuprobe analyze --json` prints
    for f in report["findings"]:
        print(f["severity"], f["rule"], f["title"])
    cuprobe.report("run1", out="run1.html")                # the self-contained HTML report
    cuprobe.shim_path()                                    # for LD_PRELOAD where record cannot wrap

Functions raise CuprobeError when the command reports a usage error or unreadable input (exit
status 2), with its message.
"""
import json as _json
import os as _os
import subprocess as _subprocess

from ._paths import executable, shim_path, rules_dir

__all__ = ["CuprobeError", "executable", "shim_path", "rules_dir", "run", "record", "analyze", "report", "export",
           "version"]


class CuprobeError(RuntimeError):
    """`cuprobe` exited with status 2: a usage error or input it could not read."""

    def __init__(self, args, returncode, stderr):
        self.args_ = list(args)
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(stderr.strip() or f"cuprobe {' '.join(map(str, args))} exited with status {returncode}")


def run(args, check=True, capture=True, **kwargs):
    """Runs `cuprobe ARGS...` and returns the subprocess.CompletedProcess (text output).

    check: raise CuprobeError on exit status 2. capture: collect stdout and stderr (else they
    go to this process's). Other keyword arguments go to subprocess.run (env, cwd, timeout...).
    """
    args = [str(a) for a in args]
    if capture:
        kwargs.setdefault("stdout", _subprocess.PIPE)
        kwargs.setdefault("stderr", _subprocess.PIPE)
    proc = _subprocess.run([executable()] + args, text=True, **kwargs)
    if check and proc.returncode == 2:
        raise CuprobeError(args, proc.returncode, proc.stderr or "")
    return proc


def _options(options):
    """Keyword arguments as command-line options: stacks="all" -> --stacks all, quiet=True -> --quiet."""
    out = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            out.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, (list, tuple)):
            for v in value:
                out += [flag, str(v)]
        else:
            out += [flag, str(value)]
    return out


def record(command, out=None, **options):
    """Runs COMMAND (a list) under the tracer, like `cuprobe record [-o OUT] [options] -- COMMAND`.

    Options are keyword arguments named as on the command line (keep="last:2GiB",
    stacks="all", fault=[...] for a repeatable one). The job's output goes to this process's
    stdout/stderr. Returns the job's exit status.
    """
    if isinstance(command, (str, bytes)):
        raise TypeError("command must be a list of arguments, e.g. ['python', 'train.py']")
    args = ["record"] + (["-o", str(out)] if out is not None else []) + _options(options) + ["--"] + list(command)
    return run(args, capture=False).returncode


def analyze(*paths, **options):
    """The findings of run directories or traces: the object `cuprobe analyze --json` prints."""
    if not paths:
        raise TypeError("analyze() needs at least one run directory or trace file")
    proc = run(["analyze", "--json"] + _options(options) + list(paths))
    return _json.loads(proc.stdout)


def report(*paths, out, **options):
    """Writes the HTML report of run directories or traces to OUT; returns OUT."""
    run(["report", "-o", str(out)] + _options(options) + list(paths))
    return _os.fspath(out)


def export(*paths, format, out, **options):
    """Writes an export (format "perfetto", "chrome" or "sqlite") of run directories to OUT; returns OUT."""
    run(["export", "--format", format, "-o", str(out)] + _options(options) + list(paths))
    return _os.fspath(out)


def version():
    """The version line of the bundled `cuprobe` command."""
    return run(["--version"]).stdout.strip()
