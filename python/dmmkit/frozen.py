"""Frozen builds of `dmm-replay`: the form `dmmkit generate` ships.

`explore` counts instructions on `dmm-replay` linked against the
runtime-configurable heap.  The five presets run the same code there as in a
frozen build (the heap compiles preset fast paths), but any other
configuration runs a generic path that costs 1.45-1.75x the instructions of
its frozen build, so a runtime ranking is not the frozen ranking
(bench/results/runtime_vs_frozen.md, written by scripts/bench_rank_frozen.py).
This module builds `dmm-replay` frozen to one configuration so that explore
can re-measure its candidates in the form it will generate:

  1. `dmm-config header CONFIG --name NAME` (the C library writes the
     DMM_FROZEN_* header; dmm-config is found next to dmm-replay);
  2. a build directory keyed by the header's content hash,
     BASE/frozen-<sha256[:16]>, where BASE is build/ of the source tree when
     running from a checkout, else (also when running from an install, whose
     sources are PREFIX/share/dmmkit/source) <explore cache dir>/builds;
  3. `cmake -S ROOT -B DIR [-G Ninja] -DCMAKE_BUILD_TYPE=Release
     -DDMM_BUILD_TESTS=OFF -DDMM_BUILD_BENCH=OFF -DDMM_BUILD_SHARED=OFF
     -DDMM_FROZEN_CONFIG=DIR/frozen_config.h` (once per directory), then
     `cmake --build DIR --target dmm-replay` (incremental: a directory that
     exists is reused, and the build is a no-op when nothing changed).

The cmake and compiler output goes to DIR/dmmkit-build.log; a failure raises
FrozenBuildError with the tail of that log.  The cmake binary is $DMMKIT_CMAKE
when set, else `cmake` on PATH.

scripts/bench_rank_frozen.py imports the helpers (write_if_changed, slug,
cmake_build, header_text) from here.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import RUNTIME, DmmkitError

HEADER_NAME = "frozen_config.h: dmm-replay frozen to one heap configuration (dmmkit.frozen)"
BUILD_PREFIX = "frozen-"
LOG_NAME = "dmmkit-build.log"
CMAKE_OPTIONS = ("-DCMAKE_BUILD_TYPE=Release", "-DDMM_BUILD_TESTS=OFF", "-DDMM_BUILD_BENCH=OFF",
                 "-DDMM_BUILD_SHARED=OFF")
CONFIG_TOOL = "dmm-config"


class FrozenBuildError(DmmkitError):
    """A frozen dmm-replay could not be built; `tail` holds the end of the
    build log (or the tool's message)."""

    def __init__(self, message: str, tail: str = "", log: Path | None = None, general: bool = False):
        super().__init__(message, RUNTIME)
        self.tail = tail
        self.log = log
        self.general = general  # the same for every config (no cmake, no source tree): do not retry

    def detail(self, lines: int = 20) -> str:
        t = "\n".join(self.tail.strip().splitlines()[-lines:])
        return self.message + (f"\n{t}" if t else "") + (f"\n(full log: {self.log})" if self.log else "")


# --------------------------------------------------------------------------
# small helpers (shared with scripts/bench_rank_frozen.py)
# --------------------------------------------------------------------------

def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")


def write_if_changed(path: Path, data: bytes) -> bool:
    """Writes data unless the file already holds it (so its mtime, and the
    builds that depend on it, stay put).  Returns whether it wrote."""
    path = Path(path)
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return True


def tail(text: str, n: int = 30) -> str:
    lines = [ln for ln in (text or "").rstrip().splitlines()]
    return "\n".join(lines[-n:])


def find_cmake() -> str | None:
    """$DMMKIT_CMAKE when set (it is used as given, even when it does not
    exist, so a wrong value gives a clear error), else cmake on PATH."""
    env = os.environ.get("DMMKIT_CMAKE")
    if env:
        return env
    return shutil.which("cmake")


def _run_logged(cmd: list[str], log: Path | None) -> subprocess.CompletedProcess:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:  # FileNotFoundError, PermissionError
        raise FrozenBuildError(f"cannot run {cmd[0]}: {e.strerror or e} (install cmake: apt install cmake, or "
                               "set DMMKIT_CMAKE)", general=True) from e
    if log is not None:
        with open(log, "a") as f:
            f.write("$ " + " ".join(cmd) + "\n" + p.stdout + p.stderr + f"[exit status {p.returncode}]\n")
    return p


def cmake_build(src: Path, bdir: Path, targets: list[str], extra: list[str] | tuple = (), jobs: int | None = None,
                cmake: str | None = None, log: Path | None = None, options: tuple = CMAKE_OPTIONS,
                export_compile_commands: bool = False) -> bool:
    """Configures bdir from src (once: when it has no CMakeCache.txt) and
    builds targets.  Returns True when the build had nothing to do.  Raises
    FrozenBuildError (cmake missing, configure or build failed: the message
    names the step, .tail holds the end of the output)."""
    cmake = cmake or find_cmake()
    if not cmake:
        raise FrozenBuildError("cmake not found (apt install cmake, or run scripts/setup.sh; or set DMMKIT_CMAKE)",
                               general=True)
    bdir = Path(bdir)
    bdir.mkdir(parents=True, exist_ok=True)
    if log is not None:
        log = Path(log)
        log.write_text("")
    configured = (bdir / "CMakeCache.txt").is_file() and \
        ((bdir / "build.ninja").is_file() or (bdir / "Makefile").is_file())
    if not configured:
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        cmd = [cmake, "-S", str(src), "-B", str(bdir), *gen, *options, *extra]
        if export_compile_commands:
            cmd.append("-DCMAKE_EXPORT_COMPILE_COMMANDS=ON")
        p = _run_logged(cmd, log)
        if p.returncode != 0:
            raise FrozenBuildError(f"cmake configure failed in {bdir}", tail(p.stdout + p.stderr), log, general=True)
    cmd = [cmake, "--build", str(bdir), "--target", *targets]
    if jobs:
        cmd[3:3] = ["-j", str(jobs)]
    p = _run_logged(cmd, log)
    if p.returncode != 0:
        raise FrozenBuildError(f"build of {' '.join(targets)} failed in {bdir}", tail(p.stdout + p.stderr), log)
    return "no work to do" in p.stdout


def header_text(dmm_config: str | os.PathLike, config: str, name: str = HEADER_NAME) -> str:
    """The DMM_FROZEN_* header of a config, as the C library writes it
    (`dmm-config header CONFIG --name NAME`)."""
    try:
        p = subprocess.run([str(dmm_config), "header", config, "--name", name], capture_output=True, text=True,
                           timeout=60)
    except OSError as e:
        raise FrozenBuildError(f"cannot run {dmm_config}: {e.strerror or e}", general=True) from e
    if p.returncode != 0 or "#define DMM_FROZEN_ORG" not in p.stdout:
        msg = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[0]
        raise FrozenBuildError(f"{CONFIG_TOOL} header refused the config {config!r}: {msg}")
    return p.stdout


def header_hash(header: str) -> str:
    return hashlib.sha256(header.encode()).hexdigest()[:16]


def file_hash(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive lock on path (two explores building the same directory
    wait for each other instead of mixing their builds)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no locking
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# --------------------------------------------------------------------------
# frozen dmm-replay
# --------------------------------------------------------------------------

def config_tool(tools) -> Path:
    """dmm-config next to dmm-replay, else on PATH (as generate finds it)."""
    from .generate import config_tool as find
    try:
        return find(tools)
    except DmmkitError as e:
        raise FrozenBuildError(e.message, general=True) from e


def build_base(tools, cache_dir: str | os.PathLike | None = None) -> Path:
    """Where frozen build directories go: build/ of the source tree when
    running from a checkout (and it is writable), else <cache_dir>/builds
    (explore's cache directory, default .dmmkit-cache).  The sources
    installed under PREFIX/share/dmmkit are never built in place."""
    root = getattr(tools, "root", None)
    if root is not None and not getattr(tools, "installed", False):
        b = Path(root) / "build"
        if (b.is_dir() and os.access(b, os.W_OK)) or (not b.exists() and os.access(root, os.W_OK)):
            return b
    return Path(cache_dir or ".dmmkit-cache").resolve() / "builds"


@dataclass
class FrozenReplay:
    config: str
    replay: Path            # the frozen dmm-replay
    build_dir: Path
    header_sha: str          # content hash of the header (the directory key)
    build_id: str            # content hash of the binary (the cache key of its figures)
    up_to_date: bool         # the build had nothing to do
    seconds: float

    def as_dict(self) -> dict:
        return {"replay": str(self.replay), "build_dir": str(self.build_dir), "header_sha": self.header_sha,
                "build_id": self.build_id, "up_to_date": self.up_to_date, "build_seconds": round(self.seconds, 2)}


def build_frozen_replay(tools, config: str, base: str | os.PathLike | None = None, jobs: int | None = None,
                        source: str | os.PathLike | None = None, cmake: str | None = None,
                        cache_dir: str | os.PathLike | None = None) -> FrozenReplay:
    """dmm-replay frozen to `config` (normalised config text, as
    `dmm-replay --check-configs` answers it), built from the source tree
    (`source`, default tools.root) in BASE/frozen-<header hash>; reused when
    present.  Raises FrozenBuildError."""
    t0 = time.monotonic()
    src = Path(source) if source else getattr(tools, "root", None)
    if src is None or not (Path(src) / "CMakeLists.txt").is_file():
        raise FrozenBuildError("no dmmkit source tree to build from (run from a checkout, or set --root / "
                               "DMMKIT_ROOT)", general=True)
    cmake = cmake or find_cmake()
    if not cmake:
        raise FrozenBuildError("cmake not found (apt install cmake, or run scripts/setup.sh; or set DMMKIT_CMAKE)",
                               general=True)
    header = header_text(config_tool(tools), config)
    key = header_hash(header)
    bdir = Path(base or build_base(tools, cache_dir)) / f"{BUILD_PREFIX}{key}"
    with _locked(bdir / ".dmmkit.lock"):
        hdr = bdir / "frozen_config.h"
        write_if_changed(hdr, header.encode())
        up = cmake_build(Path(src), bdir, ["dmm-replay"], [f"-DDMM_FROZEN_CONFIG={hdr}"], jobs=jobs, cmake=cmake,
                         log=bdir / LOG_NAME)
        replay = bdir / "tools" / "dmm-replay"
        if not (replay.is_file() and os.access(replay, os.X_OK)):
            raise FrozenBuildError(f"the build in {bdir} made no tools/dmm-replay", log=bdir / LOG_NAME)
        bid = file_hash(replay)
    return FrozenReplay(config=config, replay=replay.resolve(), build_dir=bdir, header_sha=key, build_id=bid,
                        up_to_date=up, seconds=time.monotonic() - t0)
