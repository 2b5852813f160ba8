"""End to end: the CLI on a tiny trace (explore with a tiny grid, compare
with glibc and dmm presets, analyse, report, show), and the explore cache."""

import json

from conftest import load, run_cli


def test_help_of_every_command():
    for cmd in ("record", "analyse", "compare", "explore", "report", "generate", "show"):
        p = run_cli([cmd, "--help"])
        assert p.returncode == 0 and "Usage:" in p.stdout, cmd


def test_analyse(tiny_trace):
    p = run_cli(["analyse", str(tiny_trace)])
    assert p.returncode == 0, p.stderr
    assert "peak live" in p.stdout and "request sizes" in p.stdout
    p = run_cli(["analyse", str(tiny_trace), "--json"])
    assert p.returncode == 0
    d = json.loads(p.stdout)
    assert d["schema"] == "dmm-analyse/1" and d["peak"]["live_bytes"] > 0


def test_explore_tiny_grid(explore_results, tiny_trace):
    path, proc = explore_results
    d = load(path)
    assert d["schema"] == "dmmkit-explore/1"
    ids = {c["id"] for c in d["configs"]}
    assert {"dlmalloc", "tlsf", "halffit", "firstfit", "p2012"} <= ids and len(ids) == 6
    assert d["best"] in ids and d["ranking"][0] == d["best"]
    assert d["front"], "a non-empty Pareto front"
    for c in d["configs"]:
        m = c["per_trace"]["tiny"]
        assert m["instructions"] > 0 and m["instr_per_op"] > 0
        assert m["min_arena"] > 0 and m["failed"] == 0 and m["peak_footprint"] > 0
        assert c["feasible"]
    # the front is non-dominated in (instructions, min arena)
    pts = {c["id"]: (c["aggregate"]["instr_per_op"], c["aggregate"]["min_arena"]) for c in d["configs"]}
    for f in d["front"]:
        assert not any(o[0] <= pts[f][0] and o[1] <= pts[f][1] and o != pts[f] for o in pts.values())
    # timing for the candidates only, with the reps asked for
    assert d["timed"]
    for cid in d["timed"]:
        t = {c["id"]: c for c in d["configs"]}[cid]["per_trace"]["tiny"]["timing"]
        assert t["runs"] == 2 and t["samples"] == 4 and t["avg"]["median"] > 0 and t["max"]["median"] > 0
    # pictures of the best config
    pic = d["pictures"]["tiny"][d["best"]]
    from dmmkit.pictures import decode_blocks
    assert pic["timeline"]["points"] and decode_blocks(pic["heapmap"])  # stored compressed (blocks_z)
    assert "explore ranking" in proc.stdout and "best" in proc.stdout


def test_explore_cache_makes_rerun_instant(explore_results, tiny_trace, work):
    path, _ = explore_results
    out = work / "explore-again.json"
    p = run_cli(["explore", str(tiny_trace), "--grid", "presets", "--config", "preset=p2012,quick_max=64",
                 "--no-timing", "--no-pictures", "--results", str(out), "--cache", str(work / "cache")], cwd=work)
    assert p.returncode == 0, p.stderr
    d = load(out)
    assert d["cache"] == {"hits": 6, "measured": 0}
    first = {c["id"]: c["per_trace"]["tiny"]["instructions"] for c in load(path)["configs"]}
    again = {c["id"]: c["per_trace"]["tiny"]["instructions"] for c in d["configs"]}
    assert first == again


def test_explore_arena_constraint(explore_results, tiny_trace, work):
    path, _ = explore_results
    d = load(path)
    arenas = sorted(c["per_trace"]["tiny"]["min_arena"] for c in d["configs"])
    limit = arenas[0]  # only the configs with the smallest minimum arena fit
    out = work / "explore-arena.json"
    p = run_cli(["explore", str(tiny_trace), "--grid", "presets", "--arena", str(limit), "--no-timing",
                 "--no-pictures", "--results", str(out), "--cache", str(work / "cache")], cwd=work)
    assert p.returncode == 0, p.stderr
    e = load(out)
    for c in e["configs"]:
        assert c["feasible"] == (c["per_trace"]["tiny"]["min_arena"] <= limit)
    assert e["best"] and all(i in {c["id"] for c in e["configs"] if c["feasible"]} for i in e["ranking"])


def test_compare_glibc_and_presets(compare_results):
    path, proc = compare_results
    d = load(path)
    assert d["schema"] == "dmmkit-compare/1" and d["baseline"] == "glibc" and d["complete"]
    labels = [a["label"] for a in d["allocators"]]
    assert labels == ["glibc", "dmm:p2012", "dmm:tlsf", "dmm:dlmalloc"]
    for lab in labels:
        runs = d["runs"]["tiny"][lab]
        assert len(runs) == 3 and all(r and r["warm_avg"] > 0 for r in runs)
        s = d["summary"]["tiny"][lab]
        # the ratio pairs the repetitions in which both passes ran without
        # preemption (all three when none did): a loaded machine may drop one
        assert s["warm_avg_ratio"]["n"] == (s["clean_reps_warm"] or 3)
        lo, med, hi = (s["warm_avg_ratio"][k] for k in ("min", "median", "max"))
        assert lo <= med <= hi
    assert d["summary"]["tiny"]["glibc"]["warm_avg_ratio"]["median"] == 1.0
    assert d["runs"]["tiny"]["glibc"][0]["detected"] == "glibc"
    assert set(d["ranking"]) == set(labels)
    assert d["histograms"]["tiny"]["dmm:p2012"]["warm"]["all"]
    assert "ranking" in proc.stdout


def test_show(explore_results, compare_results):
    p = run_cli(["show", str(explore_results[0]), str(compare_results[0])])
    assert p.returncode == 0, p.stderr
    assert "explore ranking" in p.stdout and "ranking: warm cycles/op" in p.stdout


def test_compare_default_list_skips_missing_system_allocators(tiny_trace, work):
    out = work / "compare-default.json"
    p = run_cli(["compare", str(tiny_trace), "--reps", "1", "--no-pictures", "--results", str(out)],
                env={"DMMKIT_LIB_PATH": str(work / "no-libs-here")})
    assert p.returncode == 0, p.stderr
    assert "jemalloc left out" in p.stdout and "tbbmalloc left out" in p.stdout
    labels = [a["label"] for a in load(out)["allocators"]]
    assert labels == ["dmm:tlsf", "dmm:p2012", "dmm:dlmalloc", "glibc"]
