"""Unit tests that need no native tools: allocator lists, the malloc
header, the executors, the cache, size parsing.  (The frozen header is
written by dmm-config: tests/test_config_tool.py.)"""

import pytest

from dmmkit import allocators, executors, stats
from dmmkit.cache import Cache
from dmmkit.errors import DmmkitError
from dmmkit.generate import medium_fields, parse_config_text, with_fields
from dmmkit.grid import default_points, full_points, short_config

P2012 = ("org=single,sl_bits=4,exact_max=256,links=singly,order=lifo,fit=first,split=off,victim=off,split_min=0,"
         "coalesce=off,coalesce_max=0,quick_max=0,quick_limit=0,lock=none,stats=counters,harden=checked,poison=off,"
         "on_error=report,grow=0,release_empty=off,max_block_log2=0,cookie=0")


def test_split_allocator_list():
    got = allocators.split_allocator_list(["dmm:tlsf,dmm:preset=tlsf,fit=best,split_min=64,glibc", "jemalloc"])
    assert got == ["dmm:tlsf", "dmm:preset=tlsf,fit=best,split_min=64", "glibc", "jemalloc"]


def test_resolve_unknown_allocator():
    with pytest.raises(DmmkitError) as e:
        allocators.resolve(["hoard"])
    assert "unknown allocator 'hoard'" in str(e.value)


def test_resolve_missing_library(monkeypatch, tmp_path):
    monkeypatch.setenv("DMMKIT_LIB_PATH", str(tmp_path))
    with pytest.raises(DmmkitError) as e:
        allocators.resolve(["jemalloc"])
    msg = str(e.value)
    assert "libjemalloc.so.2" in msg and str(tmp_path) in msg and "libjemalloc2" in msg


def test_parse_peers(tmp_path):
    lib = tmp_path / "libx.so"
    lib.write_bytes(b"\x7fELF")
    assert allocators.parse_peers([f"x={lib}"]) == {"x": lib.resolve()}
    with pytest.raises(DmmkitError):
        allocators.parse_peers(["x=/no/such/lib.so"])
    with pytest.raises(DmmkitError):
        allocators.parse_peers(["glibc=" + str(lib)])
    with pytest.raises(DmmkitError):
        allocators.parse_peers(["nolib"])


def test_medium_fields():
    """The fields libdmm imposes on its medium heap, as generate freezes
    them: no lock, no growth, counters and hardening at least."""
    off = with_fields(P2012, stats="off", harden="off", lock="mutex", grow="65536")
    kv = parse_config_text(with_fields(off, **medium_fields(off)))
    assert kv["org"] == "single" and kv["lock"] == "none" and kv["grow"] == "0"
    assert kv["stats"] == "counters" and kv["harden"] == "checked" and kv["release_empty"] == "off"
    full = with_fields(P2012, stats="full", harden="full")
    f = medium_fields(full)
    assert "stats" not in f and "harden" not in f  # more than libdmm needs: kept


def test_grids():
    d = default_points()
    assert len(d) == 24 and d[0].preset
    f = full_points()
    assert len(f) == 5 + 5 * 5 * 2 * 4 * 2 * 3 * 2
    assert short_config(P2012).startswith("org=single")


def _square(x):
    if x == 3:
        raise ValueError("three")
    return x * x


@pytest.mark.parametrize("kind", ["thread", "process"])
def test_local_executor(kind):
    with executors.LocalExecutor(2, kind=kind) as ex:
        got = {i: (r, type(e).__name__ if e else None) for i, r, e in ex.map_unordered(_square, [1, 2, 3, 4])}
    assert got == {0: (1, None), 1: (4, None), 2: (None, "ValueError"), 3: (16, None)}


def test_make_executor_errors():
    with pytest.raises(DmmkitError):
        executors.make_executor("local", address="1.2.3.4:6379")
    with pytest.raises(DmmkitError):
        executors.make_executor("slurm")


def test_cache_roundtrip(tmp_path):
    c = Cache(tmp_path)
    assert c.get("ab" * 32, "cfg", "b1", "s") is None
    c.put("ab" * 32, "cfg", "b1", "s", {"x": 1})
    assert c.get("ab" * 32, "cfg", "b1", "s") == {"x": 1}
    assert c.get("ab" * 32, "cfg", "b2", "s") is None  # another build
    assert c.get("ab" * 32, "cfg2", "b1", "s") is None
    off = Cache(tmp_path, enabled=False)
    assert off.get("ab" * 32, "cfg", "b1", "s") is None


def test_relative():
    assert stats.relative(3, 2) == 1.5
    assert stats.relative(None, 2) is None and stats.relative(1, 0) is None
