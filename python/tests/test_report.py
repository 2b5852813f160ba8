"""The report renders: files exist, PNGs are real images, and the HTML
tables hold the numbers of the JSON results."""

import re

from conftest import load, run_cli


def _values(html):
    return set(re.findall(r'data-value="([^"]*)"', html))


def test_report_renders(explore_results, compare_results, work):
    out = work / "report"
    p = run_cli(["report", str(explore_results[0]), str(compare_results[0]), "-o", str(out)])
    assert p.returncode == 0, p.stderr
    index = out / "index.html"
    assert index.is_file()
    html = index.read_text()
    pngs = sorted(out.glob("*.png"))
    names = {x.name for x in pngs}
    for want in ("explore_pareto.png", "explore_timeline_tiny.png", "explore_heapmap_tiny.png",
                 "compare_latency_tiny.png", "compare_timeline_tiny.png", "compare_heapmap_tiny.png",
                 "compare_ranking.png"):
        assert want in names, (want, names)
    for f in pngs:
        data = f.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000, f
        assert f.name in html
    vals = _values(html)
    e = load(explore_results[0])
    for c in e["configs"]:
        a = c["aggregate"]
        for k in ("instr_per_op", "min_arena", "peak_footprint", "frag4"):
            assert repr_json(a[k]) in vals, (c["id"], k, a[k])
        m = c["per_trace"]["tiny"]
        if c["id"] in (e["best"], e["reference"]):
            for k in ("instr_per_op", "min_arena", "internal_waste", "external_waste"):
                assert repr_json(m[k]) in vals, (c["id"], k)
    cmp = load(compare_results[0])
    for lab, o in cmp["overall"].items():
        assert repr_json(o["warm_avg_ratio_geomean"]) in vals, lab
        s = cmp["summary"]["tiny"][lab]
        assert repr_json(s["warm_avg"]["median"]) in vals
        assert repr_json(s["warm_avg_ratio"]["max"]) in vals
    # the shown text agrees with the exact value
    best = {c["id"]: c for c in e["configs"]}[e["best"]]
    assert f"{best['aggregate']['instr_per_op']:.1f}" in html


def repr_json(v):
    import json
    return json.dumps(v)


def test_report_bad_input(work):
    bad = work / "not-results.json"
    bad.write_text('{"schema": "something/1"}')
    p = run_cli(["report", str(bad), "-o", str(work / "r2")])
    assert p.returncode == 2 and "is not dmmkit explore results (schema dmmkit-explore/1) or dmmkit compare results" in p.stderr
    p = run_cli(["report", str(work / "missing.json"), "-o", str(work / "r2")])
    assert p.returncode == 2 and "no such file" in p.stderr
