"""Pools in front of a heap as an explore dimension (--pools), as compare
allocators (pool:SPEC) and as something generate refuses (no frozen pool
front yet)."""

from __future__ import annotations

from conftest import load, run_cli

from dmmkit import grid as gridmod
from dmmkit.allocators import resolve, split_allocator_list
from dmmkit.measure import alloc_arg

PRESETS = ("dlmalloc", "tlsf", "halffit", "firstfit", "p2012")


def test_pool_points_names_ids_and_keys():
    heaps = gridmod.preset_points()
    for p in heaps:
        p.config = f"preset={p.name},x=1"
    user = [gridmod.Point("mine", "fit=best", "fit=best,x=2")]
    pts = gridmod.pool_points(heaps + user, "default", user)
    assert [p.name for p in pts] == [f"pool:auto;heap={n}" for n in PRESETS] + ["pool:auto;heap=mine"]
    tlsf = pts[1]
    assert tlsf.id == "pool.tlsf" and tlsf.kind == "pool" and not tlsf.preset
    assert tlsf.alloc == "pool:auto;heap=preset=tlsf,x=1"
    # the cache key of a pool point is its whole spec, of a heap its config (as before pools)
    assert tlsf.key == tlsf.alloc and heaps[1].key == heaps[1].config and tlsf.key != heaps[1].key
    assert pts[-1].id == "pool." + user[0].id
    # the full grid: the presets and --config only
    many = heaps + [gridmod.Point("g1", "org=single", "org=single,x=3")] + user
    assert [p.heap_name for p in gridmod.pool_points(many, "full", user)] == [*PRESETS, "mine"]


def test_pool_allocator_names():
    items = split_allocator_list(["dmm:tlsf,pool:auto;heap=preset=tlsf,fit=best,glibc,pool:16x10/64x5"])
    assert items == ["dmm:tlsf", "pool:auto;heap=preset=tlsf,fit=best", "glibc", "pool:16x10/64x5"]
    a = resolve(["pool:auto;heap=tlsf"])[0]
    assert a.kind == "pool" and a.replay_args() == ["--alloc", "pool:auto;heap=tlsf"]
    assert alloc_arg("tlsf") == "dmm:tlsf" and alloc_arg("pool:auto") == "pool:auto"


def test_explore_pools_dimension(tools, tiny_trace, work):
    cache = work / "cache-pools"
    plain = work / "explore-nopools.json"
    p = run_cli(["explore", str(tiny_trace), "--grid", "presets", "--no-timing", "--no-pictures", "--no-frozen",
                 "--results", str(plain), "--cache", str(cache)], cwd=work)
    assert p.returncode == 0, p.stdout + p.stderr
    out = work / "explore-pools.json"
    p = run_cli(["explore", str(tiny_trace), "--grid", "presets", "--pools", "--no-timing", "--no-frozen",
                 "--results", str(out), "--cache", str(cache)], cwd=work)
    assert p.returncode == 0, p.stdout + p.stderr
    d = load(out)
    by_id = {c["id"]: c for c in d["configs"]}
    assert set(by_id) == set(PRESETS) | {f"pool.{n}" for n in PRESETS}
    # the heaps came from the cache of the first run; the pool fronts have keys of their own
    assert d["cache"] == {"hits": 5, "measured": 5}
    assert d["settings"]["pools"]["front"] == "auto"
    for n in PRESETS:
        h, q = by_id[n], by_id[f"pool.{n}"]
        assert q["kind"] == "pool" and q["name"] == f"pool:auto;heap={n}" and q["config"] == h["config"]
        assert q["alloc"] == "pool:auto;heap=" + h["config"] and h["alloc"] == "dmm:" + h["config"]
        m, mh = q["per_trace"]["tiny"], h["per_trace"]["tiny"]
        assert m["failed"] == 0 and m["instructions"] > 0 and m["min_arena"] > 0 and m["peak_footprint"] > 0
        assert q["feasible"], q["infeasible_reasons"]
        # a different allocator: its figures are its own, not the heap's
        assert (m["instructions"], m["min_arena"]) != (mh["instructions"], mh["min_arena"])
    # both kinds in the ranking, and the pool rows shown beside the heaps
    assert {by_id[i]["kind"] for i in d["ranking"]} == {"dmm", "pool"}
    assert "pool:auto;heap=tlsf" in p.stdout
    # a pool front's picture has a timeline (no heap map: that is the heap's walker)
    if by_id[d["best"]]["kind"] == "pool":
        assert d["pictures"]["tiny"][d["best"]]["timeline"]["points"]

    # the saved results read back (schema check) and show the pool rows
    sh = run_cli(["show", str(out)], cwd=work)
    assert sh.returncode == 0 and "pool:auto;heap=tlsf" in sh.stdout, sh.stderr

    # generate refuses a pool front, naming the heap to generate instead
    g = run_cli(["generate", "pool.tlsf", "--results", str(out), "-o", str(work / "gen-pool")], cwd=work)
    assert g.returncode != 0 and "pool" in g.stderr and "generate tlsf" in g.stderr, g.stderr
    g = run_cli(["generate", "pool:auto;heap=tlsf", "-o", str(work / "gen-pool2")], cwd=work)
    assert g.returncode != 0 and "pool front" in g.stderr, g.stderr


def test_explore_refuses_pool_config(tools, tiny_trace, work):
    p = run_cli(["explore", str(tiny_trace), "--grid", "none", "--config", "pool:auto;heap=tlsf", "--no-timing",
                 "--results", str(work / "x.json")], cwd=work)
    assert p.returncode != 0 and "--pools" in p.stderr, p.stderr


def test_compare_pool_allocator(tools, tiny_trace, work):
    out = work / "compare-pool.json"
    p = run_cli(["compare", str(tiny_trace), "-a", "dmm:tlsf,pool:auto;heap=tlsf", "--baseline", "dmm:tlsf",
                 "--reps", "1", "--no-pictures", "--results", str(out)], cwd=work)
    assert p.returncode == 0, p.stdout + p.stderr
    d = load(out)
    assert [a["label"] for a in d["allocators"]] == ["dmm:tlsf", "pool:auto;heap=tlsf"]
    assert d["allocators"][1]["kind"] == "pool"
    run = d["runs"]["tiny"]["pool:auto;heap=tlsf"][0]
    assert run and run["warm_avg"] > 0
    # a bad spec is refused before anything runs, naming the bad token
    p = run_cli(["compare", str(tiny_trace), "-a", "pool:16x0;heap=tlsf", "--reps", "1", "--no-pictures",
                 "--results", str(work / "bad.json")], cwd=work)
    assert p.returncode != 0 and "16x0" in p.stderr, p.stderr
