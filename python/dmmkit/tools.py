"""Where the native tools are, and how they are run.

The front end never reimplements a measurement: every figure comes from
`dmm-replay` (replays, minimum arena, timelines, heap maps), `dmm-analyse`
(request patterns) or `dmm-trace` (validation), run as subprocesses and read
back as JSON.  This module finds them and runs them.

Search order for the tools directory (docs/frontend.md, "Finding the
tools"):

  1. the `--tools-dir` option, else the environment variable DMMKIT_TOOLS
     (only that directory is tried);
  2. `build/release/tools`, `build/debug/tools` of the source tree named by
     `--root` / DMMKIT_ROOT;
  3. the directory of the running `dmmkit` command and the scripts
     directory of its Python environment: the `bin/` of an install prefix
     (`cmake --install` puts the tools there, `pip install` the command);
  4. `build/release/tools`, `build/debug/tools` of the source tree found
     from the current directory or from this package (see `find_root`);
  5. `PATH`.

Relative to the tools directory DIR (a build tree's `tools/` or a prefix's
`bin/`), the recorder `libdmmrec.so` is looked for in DIR/../lib,
DIR/../lib64, DIR/../lib/<multiarch> (the library directories CMake's
GNUInstallDirs may choose), then DIR itself; and an installed copy of the
sources (what `generate` and frozen builds need) in
DIR/../share/dmmkit/source.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .errors import BAD_INPUT, RUNTIME, DmmkitError

TOOL_NAMES = ("dmm-replay", "dmm-analyse", "dmm-trace")
BUILD_SUBDIRS = ("build/release", "build/debug")
RECORDER_NAME = "libdmmrec.so"
# The installed copy of the sources, relative to an install prefix
# (CMakeLists.txt installs it to <datadir>/dmmkit/source).
INSTALLED_SOURCE = Path("share") / "dmmkit" / "source"


def _is_root(d: Path) -> bool:
    return (d / "include" / "dmm" / "heap.h").is_file() and (d / "src" / "heap").is_dir()


def _explicit_root(explicit: str | os.PathLike | None) -> Path | None:
    """--root, else $DMMKIT_ROOT; an error when it is not a source tree."""
    for what, val in (("--root", explicit), ("DMMKIT_ROOT=", os.environ.get("DMMKIT_ROOT"))):
        if val:
            p = Path(val).resolve()
            if not _is_root(p):
                sep = " " if what == "--root" else ""
                raise DmmkitError(f"{what}{sep}{val}: not a dmmkit source tree (no include/dmm/heap.h)")
            return p
    return None


def find_root(explicit: str | os.PathLike | None = None) -> Path | None:
    """The dmmkit source tree: --root, $DMMKIT_ROOT, the current directory or
    one of its parents, or the tree this package was installed from (an
    editable install)."""
    p = _explicit_root(explicit)
    if p is not None:
        return p
    cwd = Path.cwd().resolve()
    here = Path(__file__).resolve()
    for c in (cwd, *cwd.parents, *here.parents):
        if _is_root(c):
            return c
    return None


def _is_tools_dir(d: Path) -> bool:
    return all((d / n).is_file() and os.access(d / n, os.X_OK) for n in TOOL_NAMES)


def _lib_dirs(prefix: Path) -> list[Path]:
    """The library directories of an install prefix (or build tree), in the
    order they are searched: lib, lib64, lib/<multiarch>, then any other
    lib/<triplet> that holds the recorder."""
    dirs = [prefix / "lib", prefix / "lib64"]
    multiarch = sysconfig.get_config_var("MULTIARCH")
    if multiarch:
        dirs.append(prefix / "lib" / multiarch)
    try:
        others = sorted(d for d in (prefix / "lib").iterdir() if d.is_dir() and d.name.count("-") >= 2)
    except OSError:
        others = []
    dirs.extend(d for d in others if d not in dirs)
    return dirs


def find_recorder(tools_dir: Path) -> Path | None:
    """libdmmrec.so for the tools in tools_dir: in a library directory of
    the prefix (or build tree) above it, else beside the tools."""
    for d in (*_lib_dirs(tools_dir.parent), tools_dir):
        cand = d / RECORDER_NAME
        if cand.is_file():
            return cand.resolve()
    return None


def installed_source(tools_dir: Path) -> Path | None:
    """The copy of the sources installed with the tools of tools_dir
    (PREFIX/share/dmmkit/source when tools_dir is PREFIX/bin), or None."""
    cand = tools_dir.parent / INSTALLED_SOURCE
    return cand.resolve() if _is_root(cand) else None


def _command_dirs() -> list[Path]:
    """Where an installed `dmmkit` command lives: the directory of the
    running script (sys.argv[0], symlinks resolved) and the scripts
    directory of this Python environment (a venv's bin/)."""
    dirs: list[Path] = []
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 and Path(argv0).name == "dmmkit":
        p = Path(argv0)
        if not p.is_absolute() and os.sep not in argv0:
            found = shutil.which(argv0)
            p = Path(found) if found else p
        try:
            dirs.append(p.resolve().parent)
        except OSError:
            pass
    scripts = sysconfig.get_path("scripts")
    if scripts:
        dirs.append(Path(scripts).resolve())
    out: list[Path] = []
    for d in dirs:
        if d not in out:
            out.append(d)
    return out


@dataclass
class Tools:
    """Paths of the native tools and of the source tree (a checkout, or the
    copy installed under PREFIX/share/dmmkit/source: `installed` is then
    True)."""

    replay: Path
    analyse: Path
    trace: Path
    recorder: Path | None
    root: Path | None
    installed: bool = False
    _build_id: str | None = field(default=None, repr=False)
    _build: dict | None = field(default=None, repr=False)

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

    @property
    def build(self) -> dict:
        """How dmm-replay was built ({} when it cannot say: a replayer older
        than `--build-info`, or one that fails to run)."""
        if self._build is None:
            self._build = {}
            try:
                p = subprocess.run([str(self.replay), "--build-info"], capture_output=True, text=True, timeout=30)
                if p.returncode == 0:
                    self._build = (json.loads(p.stdout) or {}).get("build") or {}
            except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError, AttributeError):
                self._build = {}
        return self._build

    def as_dict(self) -> dict:
        return {
            "replay": str(self.replay),
            "analyse": str(self.analyse),
            "trace": str(self.trace),
            "recorder": str(self.recorder) if self.recorder else None,
            "root": str(self.root) if self.root else None,
            "installed": self.installed,
            "build_id": self.build_id,
            "build": self.build,
        }


def unoptimised_reason(build: dict) -> str | None:
    """Why tools built this way give timings and time budgets that say little
    about the allocators (an unoptimised or sanitizer build), or None.  The
    last -O flag decides, as it does for the compiler."""
    if not build:
        return None
    flags = str(build.get("flags") or "")
    if "sanitize=" in flags:
        return f"a sanitizer build (flags '{flags}')"
    level = None
    for tok in flags.split():
        if tok.startswith("-O"):
            level = tok[2:]
    if level is None or level in ("0", "g"):
        kind = build.get("build_type") or "no build type"
        return f"not optimised ({kind}, flags '{flags or 'none'}')"
    return None


_warned_unoptimised: set[str] = set()


def warn_if_unoptimised(tools: Tools, what: str) -> str | None:
    """One warning per process and replayer when `what` (explore, compare,
    advise) times allocators with unoptimised tools: their replay loop, not
    the allocator, then dominates every timing, and explore's per-config time
    budget drops configs that an optimised replayer keeps.  Returns the
    warning (also for the results file), or None."""
    why = unoptimised_reason(tools.build)
    if why is None:
        return None
    msg = (f"{tools.replay} is {why}: {what}'s times and time budgets measure the replayer more than the "
           "allocators; build the release tools (cmake --preset release && cmake --build --preset release -j2) "
           "or pass --tools-dir")
    if str(tools.replay) not in _warned_unoptimised:
        _warned_unoptimised.add(str(tools.replay))
        from .ui import err_console
        err_console.print(f"[bold yellow]warning[/]: {msg}", soft_wrap=True)
    return msg


def _tools_in(d: Path, explicit_root: Path | None, checkout: Path | None) -> Tools:
    """The Tools of directory d (which holds the three tools).  The source
    tree is --root / DMMKIT_ROOT when given; else the checkout whose build
    tree d is; else the copy installed with d's tools; else the checkout
    found from the current directory (or None)."""
    d = d.resolve()
    root, installed = explicit_root, False
    if root is None:
        if checkout is not None and checkout in d.parents:
            root = checkout
        else:
            inst = installed_source(d)
            if inst is not None:
                root, installed = inst, True
            else:
                root = checkout
    return Tools(*(d / n for n in TOOL_NAMES), recorder=find_recorder(d), root=root, installed=installed)


def find_tools(tools_dir: str | os.PathLike | None = None, root: str | os.PathLike | None = None) -> Tools:
    looked: list[str] = []
    explicit_root = _explicit_root(root)
    checkout = explicit_root or find_root()
    dirs: list[Path] = []
    explicit = tools_dir or os.environ.get("DMMKIT_TOOLS")
    if explicit:
        dirs.append(Path(explicit))
    else:
        if explicit_root is not None:
            dirs.extend(explicit_root / b / "tools" for b in BUILD_SUBDIRS)
        dirs.extend(_command_dirs())
        if checkout is not None and checkout != explicit_root:
            dirs.extend(checkout / b / "tools" for b in BUILD_SUBDIRS)
    for d in dirs:
        if str(d) in looked:
            continue
        looked.append(str(d))
        if _is_tools_dir(d):
            return _tools_in(d, explicit_root, checkout)
    if not explicit:
        looked.append("PATH")
        found = shutil.which(TOOL_NAMES[0])
        if found:
            d = Path(found).resolve().parent
            if _is_tools_dir(d):
                return _tools_in(d, explicit_root, checkout)
            others = [shutil.which(n) for n in TOOL_NAMES[1:]]
            if all(others):
                return Tools(Path(found).resolve(), *(Path(f).resolve() for f in others), recorder=None,
                             root=checkout)
    hint = ("build them with: cmake --preset release && cmake --build --preset release -j2; or install them "
            "(cmake --install build/release --prefix PREFIX) and put PREFIX/bin on PATH or pass --tools-dir")
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
