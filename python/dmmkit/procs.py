"""Running a program as a whole process and recording it, for the front
end's steps that measure the real program (`dmmkit advise`'s end-to-end
check, `dmmkit study`): the wall time and peak RSS of one run under an
LD_PRELOAD allocator, the one-line failure text of a run, and recording a
program with its output sent to a log.  Nothing here reads or writes
results documents."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from .errors import RUNTIME, DmmkitError
from .tools import Tools

_PRELOAD_FAIL = re.compile(r"ld\.so: object .* cannot be preloaded")


GNU_TIME = "/usr/bin/time"
_RSS_TAG = "dmmkit-study-maxrss="


def rss_method() -> str:
    """How peak RSS is measured.  A process started from Python inherits the
    interpreter's resident set as its peak: the kernel keeps the high-water
    mark of the memory image exec replaces (about 30 MB here), so the
    `ru_maxrss` of a direct child is never below it.  GNU time (Debian
    package `time`) is a small process that forks the program and reports
    its `ru_maxrss` from wait4: used when installed."""
    return "gnu-time" if os.access(GNU_TIME, os.X_OK) else "wait4"


def run_process(cmd: list[str], preload: str | None, timeout: float, cwd: str | None = None,
                stdin_path: str | None = None, usage: dict | None = None) \
        -> tuple[int | None, str, str, float, int | None, bool]:
    """Runs cmd with LD_PRELOAD=preload (None: no preload); returns (exit
    code, negative for a signal; stdout; stderr; wall seconds; peak RSS in
    KiB; timed out).  The process is reaped with os.wait4; on timeout its
    whole process group is killed.  stdin_path: the file on its standard
    input (default /dev/null).  usage: a dict that receives "cpu_s", the
    user + system CPU seconds of the process and the descendants it reaped."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload and "/" in preload:
        # a relative path is resolved by ld.so in each process's own cwd: a
        # program that runs others elsewhere (pyenv's shims) would lose it
        preload = os.path.abspath(preload)
    # the preload reaches the program only, not the wrappers
    run = ["env", f"LD_PRELOAD={preload}"] if preload else ["env", "-u", "LD_PRELOAD"]
    use_time = rss_method() == "gnu-time"
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(prefix="dmmkit-rss-", suffix=".txt") as rssf:
        if use_time:
            full = [GNU_TIME, "-f", _RSS_TAG + "%M", "-o", rssf.name, *run, *cmd]
        else:
            full = [*run, *cmd]
        try:
            fin = open(stdin_path, "rb") if stdin_path else None
        except OSError as e:
            raise DmmkitError(f"cannot open {stdin_path} for the program's input: {e.strerror or e}",
                              RUNTIME) from None
        t0 = time.perf_counter()
        try:
            p = subprocess.Popen(full, stdout=out, stderr=err, stdin=fin or subprocess.DEVNULL, env=env, cwd=cwd,
                                 start_new_session=True)
        except OSError as e:
            raise DmmkitError(f"cannot run {full[0]}: {e.strerror or e}", RUNTIME) from None
        finally:
            if fin is not None:
                fin.close()
        timed_out = threading.Event()

        def kill():
            timed_out.set()
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            while True:
                try:
                    _pid, status, ru = os.wait4(p.pid, 0)
                    break
                except InterruptedError:
                    continue
                except BaseException:
                    kill()
                    os.wait4(p.pid, 0)
                    p.returncode = -9
                    raise
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
        if usage is not None:
            usage["cpu_s"] = ru.ru_utime + ru.ru_stime
        code = os.waitstatus_to_exitcode(status)
        p.returncode = code  # reaped here: Popen must not wait for it again
        rss: int | None = int(ru.ru_maxrss)
        if use_time:
            rss = None
            text = Path(rssf.name).read_text(errors="replace")
            for ln in text.splitlines():
                if ln.startswith(_RSS_TAG):
                    rss = int(ln[len(_RSS_TAG):].strip() or 0) or None
                m = re.match(r"Command terminated by signal (\d+)", ln)
                if m:
                    code = -int(m.group(1))
        out.seek(0)
        err.seek(0)
        so = out.read().decode("utf-8", "replace")
        se = err.read().decode("utf-8", "replace")
    return code, so, se, wall, rss, timed_out.is_set()


def failure_text(code: int | None, stderr: str, stdout: str, timed_out: bool, timeout: float) -> str | None:
    if timed_out:
        return f"timed out after {timeout:g} s"
    m = _PRELOAD_FAIL.search(stderr)
    if m:
        return "the preload did not take effect: " + m.group(0)
    if code == 0:
        return None
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        what = f"killed by {name}"
    else:
        what = f"exit status {code}"
    line = ""
    for ln in (stderr + "\n" + stdout).splitlines():
        if ln.strip() and not ln.lstrip().startswith("{"):
            line = ln.strip()
            break
    return f"{what}: {line}" if line else what



def record_quietly(tools: Tools, trace: Path, cmd: list[str], log: Path) -> int:
    """analyse.record with the program's output (and record's messages) sent
    to log instead of the console."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log, "ab") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            return record(tools, str(trace), cmd)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


# ------------------------------------------------------------- recording ---

PY_HINT = ("Python programs allocate through pymalloc's arenas; recording without PYTHONMALLOC=malloc yields a few "
           "thousand operations instead of every allocation")

_PY_NAME = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?([dmu]*)?$")


def python_interpreter(program: list[str]) -> bool:
    """Whether the program runs under a Python interpreter: its name
    (python3, python3.11, pypy3, a pyenv shim of those), `env python3 ...`,
    or a script whose #! line names one."""
    if not program:
        return False
    args = list(program)
    if os.path.basename(args[0]) == "env":
        args = [a for a in args[1:] if "=" not in a and not a.startswith("-")] or [""]
    name = os.path.basename(args[0])
    if _PY_NAME.match(name):
        return True
    from shutil import which
    path = args[0] if "/" in args[0] else which(args[0])
    if not path:
        return False
    try:
        with open(path, "rb") as f:
            first = f.readline(256)
    except OSError:
        return False
    if not first.startswith(b"#!"):
        return False
    words = first[2:].decode("utf-8", "replace").split()
    return any(_PY_NAME.match(os.path.basename(w)) for w in words[:3])


def python_hint(program: list[str], env: dict | None = None) -> str | None:
    """The hint `dmmkit record` prints for a Python program recorded without
    PYTHONMALLOC=malloc; None when it does not apply."""
    env = os.environ if env is None else env
    if env.get("PYTHONMALLOC") == "malloc" or not python_interpreter(program):
        return None
    return (f"hint: {PY_HINT}: PYTHONMALLOC=malloc dmmkit record ... -- {shlex.join(program)}")


ERROR_PREFIX = "dmmkit record: error: "


def record(tools: Tools, out: str | None, program: list[str], time: bool = False, follow_fork: bool = False,
           signal: str | None = None) -> int:
    """Runs the program with libdmmrec.so preloaded (what scripts/record.sh
    does, with the command line's error form: a failure is one line
    `dmmkit record: error: ...` on stderr).  Returns the program's exit
    status (1 when it succeeded but a trace was not written)."""
    if not program:
        raise DmmkitError("no program given: dmmkit record -o OUT -- PROGRAM [ARGS...]")
    hint = python_hint(program)
    if hint:  # a Python program recorded through pymalloc shows a few thousand operations
        print("record: " + hint, file=sys.stderr)
    env = dict(os.environ)
    if not tools.recorder:
        raise DmmkitError("libdmmrec.so not found next to the tools: build the release preset "
                          "(cmake --preset release && cmake --build --preset release)", RUNTIME)
    from shutil import which
    if not which(program[0]) and not Path(program[0]).is_file():
        raise DmmkitError(f"program not found: {program[0]}", 127)
    env["LD_PRELOAD"] = str(tools.recorder) + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env.pop("DMM_TRACE_ROOT", None)
    if out:
        env["DMM_TRACE_OUT"] = out
    if time:
        env["DMM_TRACE_TIME"] = "1"
    if follow_fork:
        env["DMM_TRACE_FORK"] = "follow"
    if signal:
        env["DMM_TRACE_SIGNAL"] = signal
    # The recorder appends one status line per trace it tried to write; a
    # line ending in "(trace not written)" carries the real cause (a full
    # disk, a missing directory), which is then the one message shown.
    fd, summary = tempfile.mkstemp(prefix="dmmkit-rec-", suffix=".status")
    os.close(fd)
    env["DMM_TRACE_SUMMARY"] = summary
    try:
        try:
            p = subprocess.run(program, env=env)
        except OSError as e:  # not executable, or a bare name found as a file but not on PATH
            raise DmmkitError(f"cannot run {program[0]}: {e.strerror or e}"
                              + (f" (for the file in this directory: ./{program[0]})"
                                 if "/" not in program[0] and Path(program[0]).is_file() else ""),
                              127 if isinstance(e, FileNotFoundError) else 126) from None
        try:
            with open(summary, errors="replace") as f:
                lines = [ln.strip() for ln in f if ln.strip()]
        except OSError:
            lines = []
    finally:
        try:
            os.unlink(summary)
        except OSError:
            pass
    failed = [ln for ln in lines if ln.endswith("(trace not written)")]
    for ln in lines:
        text = ln.split(": ", 1)[1] if ln.startswith("dmmrec: ") else ln
        if ln in failed:
            print(f"{ERROR_PREFIX}{text}", file=sys.stderr)
        else:
            print("record: " + text)
    if not lines:
        print(f"{ERROR_PREFIX}no trace was written (statically linked program, _exit/abort/kill before exit, "
              "or DMM_TRACE_DISABLE set)", file=sys.stderr)
        return p.returncode or 1
    if failed and p.returncode == 0:
        return 1
    return p.returncode
