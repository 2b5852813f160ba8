"""How the front end finds the native tools, the recorder and the installed
sources from an install prefix (dmmkit.tools; docs/frontend.md, "Finding
the tools").  The prefixes here are laid out like `cmake --install` lays
them out, with stand-in files: nothing is run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from dmmkit import frozen, tools as tools_mod
from dmmkit.errors import DmmkitError
from dmmkit.tools import TOOL_NAMES, find_tools


def make_prefix(base: Path, libdir: str | None = "lib", source: bool = True) -> Path:
    """PREFIX/bin with the three tools (and dmmkit), the recorder in
    PREFIX/<libdir>, the sources in PREFIX/share/dmmkit/source."""
    prefix = base / "prefix"
    (prefix / "bin").mkdir(parents=True)
    for n in (*TOOL_NAMES, "dmm-config", "dmmkit"):
        f = prefix / "bin" / n
        f.write_text("#!/bin/sh\nexit 0\n")
        f.chmod(0o755)
    if libdir:
        (prefix / libdir).mkdir(parents=True, exist_ok=True)
        (prefix / libdir / "libdmmrec.so").write_bytes(b"\x7fELF")
    if source:
        src = prefix / "share" / "dmmkit" / "source"
        (src / "include" / "dmm").mkdir(parents=True)
        (src / "include" / "dmm" / "heap.h").write_text("/* heap.h */\n")
        (src / "src" / "heap").mkdir(parents=True)
        (src / "CMakeLists.txt").write_text("project(dmmkit C)\n")
    return prefix


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No DMMKIT_* variables, the current directory outside any checkout."""
    for v in ("DMMKIT_TOOLS", "DMMKIT_ROOT"):
        monkeypatch.delenv(v, raising=False)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    monkeypatch.chdir(outside)
    return monkeypatch


@pytest.mark.parametrize("libdir", ["lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu"])
def test_recorder_in_the_prefix_library_directory(clean_env, tmp_path, libdir):
    prefix = make_prefix(tmp_path, libdir)
    t = find_tools(prefix / "bin")
    assert t.replay == (prefix / "bin" / "dmm-replay").resolve()
    assert t.recorder == (prefix / libdir / "libdmmrec.so").resolve()


def test_installed_sources_are_the_root(clean_env, tmp_path):
    prefix = make_prefix(tmp_path)
    t = find_tools(prefix / "bin")
    assert t.root == (prefix / "share" / "dmmkit" / "source").resolve()
    assert t.installed is True
    assert t.as_dict()["installed"] is True


def test_no_recorder_and_no_sources(clean_env, tmp_path, monkeypatch):
    monkeypatch.setattr(tools_mod, "find_root", lambda explicit=None: None)
    prefix = make_prefix(tmp_path, libdir=None, source=False)
    t = find_tools(prefix / "bin")
    assert t.recorder is None
    assert t.root is None and t.installed is False


def test_explicit_root_wins_over_installed_sources(clean_env, tmp_path):
    prefix = make_prefix(tmp_path)
    other = tmp_path / "checkout"
    (other / "include" / "dmm").mkdir(parents=True)
    (other / "include" / "dmm" / "heap.h").write_text("")
    (other / "src" / "heap").mkdir(parents=True)
    t = find_tools(prefix / "bin", other)
    assert t.root == other.resolve() and t.installed is False


def test_tools_beside_the_running_command(clean_env, tmp_path, monkeypatch):
    """An installed `dmmkit` (here reached through a symlink, as from
    /usr/local/bin) uses the tools of its own prefix, even though this test
    runs from a checkout with built tools."""
    prefix = make_prefix(tmp_path, "lib64")
    links = tmp_path / "links"
    links.mkdir()
    (links / "dmmkit").symlink_to(prefix / "bin" / "dmmkit")
    monkeypatch.setattr(sys, "argv", [str(links / "dmmkit"), "record"])
    t = find_tools()
    assert t.replay.parent == (prefix / "bin").resolve()
    assert t.recorder == (prefix / "lib64" / "libdmmrec.so").resolve()
    assert t.installed is True


def test_tools_on_path(clean_env, tmp_path, monkeypatch):
    """Outside any checkout, with the command elsewhere, PATH finds the
    tools; the recorder and sources come from the prefix above them."""
    monkeypatch.setattr(tools_mod, "find_root", lambda explicit=None: None)
    monkeypatch.setattr(sys, "argv", ["python", "-m", "dmmkit"])
    prefix = make_prefix(tmp_path)
    monkeypatch.setenv("PATH", str(prefix / "bin") + os.pathsep + "/usr/bin:/bin")
    t = find_tools()
    assert t.replay.parent == (prefix / "bin").resolve()
    assert t.recorder == (prefix / "lib" / "libdmmrec.so").resolve()
    assert t.root == (prefix / "share" / "dmmkit" / "source").resolve()


def test_not_found_names_where_it_looked(clean_env, tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DmmkitError) as e:
        find_tools(empty)
    assert str(empty) in e.value.message and "cmake --install" in e.value.message


def test_frozen_builds_never_go_into_the_prefix(clean_env, tmp_path):
    prefix = make_prefix(tmp_path)
    t = find_tools(prefix / "bin")
    base = frozen.build_base(t, tmp_path / "cache")
    assert base == (tmp_path / "cache" / "builds").resolve()
    assert prefix not in base.parents
