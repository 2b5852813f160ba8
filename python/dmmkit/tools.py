"""Where the native tools are, and how they are run.

The front end never reimplements a measurement: every figure comes from
`dmm-replay` (replays, minimum arena, timelines, heap maps), `dmm-analyse`
(request patterns) or `dmm-trace` (validation), run as subprocesses and read
back as JSON.  This module finds them and runs them.

Search order for the tools directory: the `--tools-dir` option, the
environment variable DMMKIT_TOOLS, `build/release/tools` under the source
tree (see `find_root`), then `PATH`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .errors import BAD_INPUT, RUNTIME, DmmkitError

TOOL_NAMES = ("dmm-replay", "dmm-analyse", "dmm-trace")
BUILD_SUBDIRS = ("build/release", "build/debug")


def _is_root(d: Path) -> bool:
    return (d / "include" / "dmm" / "heap.h").is_file() and (d / "src" / "heap").is_dir()


def find_root(explicit: str | os.PathLike | None = None) -> Path | None:
    """The dmmkit source tree: --root, $DMMKIT_ROOT, the current directory or
    one of its parents, or the tree this package was installed from (an
    editable install)."""
    cands: list[Path] = []
    if explicit:
        p = Path(explicit).resolve()
        if not _is_root(p):
            raise DmmkitError(f"--root {explicit}: not a dmmkit source tree (no include/dmm/heap.h)")
        return p
    env = os.environ.get("DMMKIT_ROOT")
    if env:
        p = Path(env).resolve()
        if not _is_root(p):
            raise DmmkitError(f"DMMKIT_ROOT={env}: not a dmmkit source tree (no include/dmm/heap.h)")
        return p
    cwd = Path.cwd().resolve()
    cands.extend([cwd, *cwd.parents])
    here = Path(__file__).resolve()
    cands.extend(here.parents)
    for c in cands:
        if _is_root(c):
            return c
    return None


@dataclass
class Tools:
    """Paths of the native tools and of the source tree."""

    replay: Path
    analyse: Path
    trace: Path
    recorder: Path | None
    root: Path | None
    _build_id: str | None = field(default=None, repr=False)

    @property
    def build_id(self) -> str:
        """Hash of the dmm-replay binary: a cached measurement is reused only
        for the very same replayer (and so the same heap code)."""
        if self._build_id is None:
            h = hashlib.sha256()
            with open(self.replay, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            self._build_id = h.hexdigest()[:16]
        return self._build_id

    def as_dict(self) -> dict:
        return {
            "replay": str(self.replay),
            "analyse": str(self.analyse),
            "trace": str(self.trace),
            "recorder": str(self.recorder) if self.recorder else None,
            "root": str(self.root) if self.root else None,
            "build_id": self.build_id,
        }


def find_tools(tools_dir: str | os.PathLike | None = None, root: str | os.PathLike | None = None) -> Tools:
    looked: list[str] = []
    r = find_root(root)
    dirs: list[Path] = []
    if tools_dir:
        dirs.append(Path(tools_dir))
    elif os.environ.get("DMMKIT_TOOLS"):
        dirs.append(Path(os.environ["DMMKIT_TOOLS"]))
    else:
        if r is not None:
            dirs.extend(r / b / "tools" for b in BUILD_SUBDIRS)
    for d in dirs:
        looked.append(str(d))
        if all((d / n).is_file() and os.access(d / n, os.X_OK) for n in TOOL_NAMES):
            rec = None
            for cand in (d.parent / "lib" / "libdmmrec.so", d / "libdmmrec.so"):
                if cand.is_file():
                    rec = cand.resolve()
                    break
            return Tools(*(Path(d / n).resolve() for n in TOOL_NAMES), recorder=rec, root=r)
    if not tools_dir and not os.environ.get("DMMKIT_TOOLS"):
        found = [shutil.which(n) for n in TOOL_NAMES]
        looked.append("PATH")
        if all(found):
            return Tools(*(Path(f).resolve() for f in found), recorder=None, root=r)
    hint = "build them with: cmake --preset release && cmake --build --preset release -j2"
    raise DmmkitError(
        "native tools dmm-replay/dmm-analyse/dmm-trace not found (looked in " + ", ".join(looked) + "); " + hint,
        BAD_INPUT,
    )


@dataclass
class Result:
    cmd: list[str]
    returncode: int
    stdout: str
    stderr: str

    def tail(self, n: int = 6) -> str:
        lines = [ln for ln in (self.stderr or self.stdout).strip().splitlines() if ln.strip()]
        return "\n".join(lines[-n:])


def run(cmd: list[str], env: dict | None = None, timeout: float | None = None, stdin: str | None = None,
        cwd: str | os.PathLike | None = None) -> Result:
    full_env = None
    if env is not None:
        full_env = dict(os.environ)
        full_env.update(env)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout, input=stdin,
                           cwd=cwd)
    except FileNotFoundError as e:
        raise DmmkitError(f"cannot run {cmd[0]}: {e.strerror}", RUNTIME) from e
    except subprocess.TimeoutExpired as e:
        raise DmmkitError(f"{Path(cmd[0]).name} timed out after {timeout:.0f} s: {' '.join(cmd)}", RUNTIME) from e
    return Result(cmd, p.returncode, p.stdout, p.stderr)


def first_error_line(text: str) -> str:
    for ln in text.strip().splitlines():
        if ln.strip():
            return ln.strip()
    return ""


def replay_json(tools: Tools, trace: str | os.PathLike, args: list[str], env: dict | None = None,
                timeout: float | None = 1800, wrapper: list[str] | None = None) -> tuple[Result, dict | None]:
    """Runs dmm-replay TRACE ARGS --json TMP --quiet; returns the process
    result and the parsed JSON (None when it wrote none)."""
    fd, tmp = tempfile.mkstemp(prefix="dmmkit-replay-", suffix=".json")
    os.close(fd)
    try:
        cmd = list(wrapper or []) + [str(tools.replay), str(trace), *args, "--json", tmp, "--quiet"]
        res = run(cmd, env=env, timeout=timeout)
        data = None
        try:
            with open(tmp) as f:
                txt = f.read()
            if txt.strip():
                data = json.loads(txt)
        except (OSError, json.JSONDecodeError):
            data = None
        return res, data
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def check_configs(tools: Tools, specs: list[str]) -> list[tuple[bool, str]]:
    """Asks dmm-replay --check-configs about each config: (True, normalised
    config text) or (False, the heap's reason)."""
    if not specs:
        return []
    for s in specs:
        if "\n" in s:
            raise DmmkitError(f"bad config {s!r}: contains a newline")
    res = run([str(tools.replay), "--check-configs", "-"], stdin="\n".join(specs) + "\n", timeout=120)
    if res.returncode != 0:
        raise DmmkitError(f"dmm-replay --check-configs failed: {res.tail()}", RUNTIME)
    lines = res.stdout.splitlines()
    if len(lines) != len(specs):
        raise DmmkitError(
            "dmm-replay --check-configs answered {} lines for {} configs (is dmm-replay older than this "
            "front end?)".format(len(lines), len(specs)), RUNTIME)
    out = []
    for ln in lines:
        if ln.startswith("ok "):
            out.append((True, ln[3:].strip()))
        elif ln.startswith("error "):
            out.append((False, ln[6:].strip()))
        else:
            out.append((False, ln.strip()))
    return out


def validate_trace(tools: Tools, trace: str | os.PathLike) -> None:
    """One clear message for a missing, unreadable or malformed trace."""
    p = Path(trace)
    if not p.exists():
        raise DmmkitError(f"trace {trace}: no such file")
    if p.is_dir():
        raise DmmkitError(f"trace {trace}: is a directory")
    if not os.access(p, os.R_OK):
        raise DmmkitError(f"trace {trace}: not readable (permission denied)")
    res = run([str(tools.trace), "validate", str(p)], timeout=300)
    if res.returncode != 0:
        msg = first_error_line(res.stderr) or first_error_line(res.stdout) or f"exit status {res.returncode}"
        raise DmmkitError(f"trace {trace} is not a valid dmm trace: {msg}")


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
