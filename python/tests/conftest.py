"""Shared fixtures: the native tools, a tiny deterministic trace, and the
results of one explore + compare run on it (made once per session)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
GOLDEN = HERE / "golden"


def _tools_dir() -> Path | None:
    env = os.environ.get("DMMKIT_TOOLS")
    cands = [Path(env)] if env else [ROOT / "build" / "release" / "tools", ROOT / "build" / "debug" / "tools"]
    for d in cands:
        if all((d / n).is_file() for n in ("dmm-replay", "dmm-analyse", "dmm-trace")):
            return d
    return None


TOOLS_DIR = _tools_dir()


@pytest.fixture(scope="session")
def tools():
    if TOOLS_DIR is None:
        pytest.fail("native tools not built: cmake --preset release && cmake --build --preset release "
                    "(python/run_tests.sh does this)")
    from dmmkit.tools import find_tools
    return find_tools(TOOLS_DIR, ROOT)


def write_tiny_trace(path: Path, ops: int = 400, seed: int = 7) -> Path:
    """A deterministic single-threaded text trace: mixed sizes, reallocs,
    calloc, an aligned allocation, frees in shuffled order."""
    rng = random.Random(seed)
    lines = ["dmmtrace 1", "meta source=dmmkit-tests", "meta purpose=tiny deterministic trace for the front end"]
    live: list[int] = []
    nid = 1
    sizes = [16, 24, 32, 48, 64, 100, 128, 256, 500, 1024, 4000]
    for i in range(ops):
        r = rng.random()
        if live and (r < 0.40 or len(live) > 60):
            k = rng.randrange(len(live))
            lines.append(f"0 f {live.pop(k)}")
        elif live and r < 0.50:
            lines.append(f"0 r {rng.choice(live)} {rng.choice(sizes) * 2}")
        elif r < 0.53:
            lines.append(f"0 c {nid} 4 {4 * rng.choice([8, 16, 32])}")
            live.append(nid)
            nid += 1
        elif r < 0.55:
            lines.append(f"0 a {nid} 64 {rng.choice(sizes)} posix_memalign")
            live.append(nid)
            nid += 1
        else:
            lines.append(f"0 m {nid} {rng.choice(sizes)}")
            live.append(nid)
            nid += 1
    for o in live:
        lines.append(f"0 f {o}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="session")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("dmmkit")


@pytest.fixture(scope="session")
def tiny_trace(work):
    return write_tiny_trace(work / "tiny.txt")


def run_cli(args: list[str], cwd: Path | None = None, env: dict | None = None, timeout: int = 600):
    """Runs `python -m dmmkit ARGS` as the user would; returns the process."""
    e = dict(os.environ)
    if TOOLS_DIR is not None:
        e["DMMKIT_TOOLS"] = str(TOOLS_DIR)
    e["DMMKIT_ROOT"] = str(ROOT)
    e["COLUMNS"] = "200"
    if env:
        e.update(env)
    return subprocess.run([sys.executable, "-m", "dmmkit", *args], cwd=cwd, env=e, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="session")
def explore_results(tools, work, tiny_trace):
    """explore with the presets grid plus one custom config on the tiny trace."""
    out = work / "explore.json"
    p = run_cli(["explore", str(tiny_trace), "--grid", "presets", "--config", "preset=p2012,quick_max=64",
                 "--reps", "2", "--results", str(out), "--cache", str(work / "cache"), "--objective", "speed"],
                cwd=work)
    assert p.returncode == 0, p.stdout + p.stderr
    return out, p


@pytest.fixture(scope="session")
def compare_results(tools, work, tiny_trace):
    out = work / "compare.json"
    p = run_cli(["compare", str(tiny_trace), "-a", "glibc,dmm:p2012,dmm:tlsf,dmm:dlmalloc", "--reps", "3",
                 "--results", str(out)], cwd=work)
    assert p.returncode == 0, p.stdout + p.stderr
    return out, p


def load(path):
    with open(path) as f:
        return json.load(f)
