"""How the native tools were built, and the warning when explore, compare
or advise would time allocators with unoptimised tools (their replay loop,
not the allocator, dominates every figure then; an advise run on a
checkout's debug tools once dropped every config for its time budget)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from dmmkit import tools as toolsmod
from dmmkit.tools import Tools, unoptimised_reason, warn_if_unoptimised


@pytest.mark.parametrize("build, bad", [
    ({"flags": "-O3 -DNDEBUG", "build_type": "Release"}, False),
    ({"flags": "-O2 -g", "build_type": "RelWithDebInfo"}, False),
    ({"flags": "-Os", "build_type": "MinSizeRel"}, False),
    ({"flags": "-g", "build_type": "Debug"}, True),
    ({"flags": "", "build_type": ""}, True),
    ({"flags": "-O2 -O0", "build_type": "Release"}, True),      # the last -O decides
    ({"flags": "-O0 -O2", "build_type": "Debug"}, False),
    ({"flags": "-Og", "build_type": "Debug"}, True),
    ({"flags": "-O1 -g (sanitize=address)", "build_type": "Debug"}, True),
    ({}, False),                                                 # cannot say: no warning
])
def test_unoptimised_reason(build, bad):
    why = unoptimised_reason(build)
    assert (why is not None) == bad
    if bad:
        assert "sanitizer" in why or "not optimised" in why


def test_the_built_replayer_describes_its_build(tools):
    b = tools.build
    assert set(b) >= {"compiler", "flags", "build_type", "commit"}
    assert tools.as_dict()["build"] == b


def _fake_replayer(tmp_path: Path, body: str) -> Tools:
    p = tmp_path / "dmm-replay"
    p.write_text("#!/bin/sh\n" + body + "\n")
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return Tools(p, p, p, recorder=None, root=None)


def test_debug_tools_warn_once(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(toolsmod, "_warned_unoptimised", set())
    build = {"build": {"compiler": "gcc 12", "flags": "-g", "build_type": "Debug", "commit": "x"}}
    t = _fake_replayer(tmp_path, f"[ \"$1\" = --build-info ] && echo '{json.dumps(build)}' && exit 0; exit 2")
    msg = warn_if_unoptimised(t, "compare")
    assert msg and "not optimised (Debug" in msg and "cmake --preset release" in msg
    assert warn_if_unoptimised(t, "explore")          # still returned for the results file ...
    err = capsys.readouterr().err
    assert err.count("warning") == 1                  # ... but printed once per replayer


def test_a_replayer_that_cannot_say_gives_no_warning(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(toolsmod, "_warned_unoptimised", set())
    t = _fake_replayer(tmp_path, "echo 'unknown option' >&2; exit 2")
    assert t.build == {}
    assert warn_if_unoptimised(t, "compare") is None
    assert capsys.readouterr().err == ""
