"""The report renders: files exist, PNGs are real images, and the HTML
tables hold the numbers of the JSON results."""

import json
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


# ---- issue 14: a report people read ----------------------------------------

NO_ANSWER = "no answer in these results: run dmmkit advise"


def test_report_page_structure(explore_results, compare_results, work):
    """Summary card first, then the contents, then the sections; every trace
    in a <details>; the heap maps are taken at worst fragmentation."""
    out = work / "report-structure"
    p = run_cli(["report", str(compare_results[0]), str(explore_results[0]), "-o", str(out)])
    assert p.returncode == 0, p.stderr
    html = (out / "index.html").read_text()
    card, toc, first = html.index('id="answer"'), html.index('id="contents"'), html.index('<section id="compare"')
    assert card < toc < first
    # without advise results the card says so, or (once dmmkit.answer is
    # there) holds one line per goal
    assert NO_ANSWER in html or 'data-goal="speed"' in html
    assert '<details id="compare-trace-tiny"' in html and '<details id="explore-trace-tiny"' in html
    assert "at worst fragmentation (after operation" in html


def _advise_fixture(tmp, compare_path=None):
    answer = {
        "current": "glibc", "trace": {"label": "sqlite", "ops": 540719}, "program": ["sqlite3", ":memory:"],
        "goals": [
            {"goal": "speed", "choice": "<script>alert(1)</script>", "kind": "system",
             "metric": "warm cycles/op (replay)", "ratio": 0.8234, "ci": [0.7812, 0.8656],
             "confidence": "significant", "ties": ["jemalloc"], "memory_ratio": 1.1049, "memory_exact": False,
             "e2e": {"wall_ratio": 0.9, "wall_ci": [0.85, 0.95], "rss_ratio": 1.05, "agrees": True, "note": "ok"},
             "next": "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 sqlite3 :memory:",
             "sentence": "For speed use mimalloc."},
            {"goal": "memory", "choice": "dmm:tlsf", "kind": "dmm", "metric": "peak footprint", "ratio": 0.61,
             "ci": None, "confidence": "unknown", "ties": [], "memory_ratio": 0.61, "memory_exact": True,
             "e2e": None, "next": "dmmkit generate best", "sentence": "For memory use dmm:tlsf."},
            {"goal": "worst case", "choice": None, "kind": None, "metric": "warm max cycles", "ratio": None,
             "ci": None, "confidence": "unknown", "ties": [], "memory_ratio": None, "memory_exact": False,
             "e2e": None, "next": None, "sentence": "No answer for the worst case."}],
        "caveats": ["3 of 9 runs were preempted"]}
    doc = {"schema": "dmmkit-advise/1", "answer": answer, "compare": compare_path, "explore": None, "e2e": None}
    path = tmp / "dmmkit-advise.json"
    path.write_text(json.dumps(doc))
    return path, answer


def test_report_summary_card_holds_the_answer(work):
    """The card shows the numbers of a hand-made advise results file, and
    escapes what it shows."""
    d = work / "card"
    d.mkdir()
    adv, ans = _advise_fixture(d)
    p = run_cli(["report", str(adv), "-o", str(d / "out")])
    assert p.returncode == 0, p.stderr
    html = (d / "out" / "index.html").read_text()
    card = html[html.index('id="answer"'):html.index('id="contents"')]
    speed, memory = ans["goals"][0], ans["goals"][1]
    vals = _values(card)
    assert json.dumps(speed["ratio"]) in vals and json.dumps(speed["memory_ratio"]) in vals
    assert "0.82x" in card and "95% CI" in card and "0.78-0.87" in card
    assert "1.10" in card and "approximate" in card  # memory cost, not exact
    assert "significant" in card and "jemalloc" in card
    assert speed["next"] in card and memory["next"] in card and "dmm:tlsf" in card
    assert "0.61x" in card and "no answer" in card  # the goal without a choice
    assert "3 of 9 runs were preempted" in card and "glibc" in card and "540719" in card
    assert "wall 0.90x" in card and "agrees with the replay" in card
    # labels are escaped, never markup
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in card
    assert NO_ANSWER not in html


def test_report_default_path_old_results(compare_results, work):
    """Without -o the report goes to dmmkit-report/ beside the first results
    file, says where, with files 0644; results with inline heap-map blocks
    (written before blocks_z) still render, captioned at peak live."""
    import stat

    from dmmkit.pictures import decode_blocks
    d = work / "oldform"
    d.mkdir()
    doc = load(compare_results[0])
    n = 0
    for per in doc["pictures"].values():
        for e in per.values():
            hm = (e or {}).get("heapmap")
            if hm:
                hm["blocks"] = decode_blocks(hm)
                for k in ("blocks_z", "moment", "op", "free_in_extent"):
                    hm.pop(k, None)
                n += 1
    assert n
    old = d / "old-compare.json"
    old.write_text(json.dumps(doc))
    p = run_cli(["report", str(old)], cwd=d)
    assert p.returncode == 0, p.stderr
    out = d / "dmmkit-report"
    assert str(out / "index.html") in p.stdout.replace("\n", "")
    html = (out / "index.html").read_text()
    assert "old-compare_heapmap_tiny.png" in html and "at peak live" in html
    for f in out.iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o644, f


def test_heapmap_compressed_in_results(tools, tiny_trace, compare_results, work):
    """Results keep heap maps as blocks_z, which decodes to the very blocks
    dmm-replay wrote, and is smaller."""
    import subprocess

    from dmmkit.pictures import compact_heapmap, decode_blocks
    doc = load(compare_results[0])
    hm = doc["pictures"]["tiny"]["dmm:p2012"]["heapmap"]
    assert "blocks" not in hm and hm["blocks_z"]["n"] > 0
    assert hm["moment"] == "worst_fragmentation" and hm["op"] > 0
    blocks = decode_blocks(hm)
    assert len(blocks) == sum(t["blocks"] for t in hm["totals"].values())
    assert sum(b[2] for b in blocks if b[3] == "free") == hm["totals"]["free"]["bytes"]
    raw = work / "hm-raw.json"
    r = subprocess.run([str(tools.replay), str(tiny_trace), "--alloc", "dmm:p2012", "--no-timing", "--no-warm",
                        "--quiet", "--heapmap", str(raw), "--heapmap-at", "worst-frag"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    native = load(raw)
    small = compact_heapmap(native)
    assert decode_blocks(small) == native["blocks"]
    assert len(json.dumps(small)) < len(json.dumps(native))
    # the map is taken at worst fragmentation: at least half the peak is live
    assert 2 * native["live"] >= native["trace_peak_live"]
    assert native["free_in_extent"] == native["extent"] - native["live_block_bytes"]
    r = subprocess.run([str(tools.replay), str(tiny_trace), "--no-timing", "--heapmap", str(raw), "--heapmap-at", "x"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--heapmap-at: expected peak or worst-frag, got 'x'" in r.stderr


def test_no_badge_without_a_test(work):
    """issue 26 item 9: a memory ratio with no interval carried a
    'significant' badge; a badge is shown only where a test was made."""
    d = work / "badge"
    d.mkdir()
    adv, ans = _advise_fixture(d)
    doc = json.loads(adv.read_text())
    doc["answer"]["goals"][1]["confidence"] = "significant"  # memory: exact, no interval
    adv.write_text(json.dumps(doc))
    p = run_cli(["report", str(adv), "-o", str(d / "out")])
    assert p.returncode == 0, p.stderr
    html = (d / "out" / "index.html").read_text()
    card = html[html.index('id="answer"'):html.index('id="contents"')]
    goals = card.split('<div class="goal"')
    speed = next(g for g in goals if 'data-goal="speed"' in g)
    memory = next(g for g in goals if 'data-goal="memory"' in g)
    assert 'class="badge significant"' in speed
    assert 'class="badge' not in memory


def test_dropped_configs_are_not_ranking_rows(explore_results, work):
    """issue 26 item 9: dropped configs were ranking rows of dashes; they go
    to a collapsed section of their own, with the reason."""
    path = explore_results[0]
    doc = json.loads(open(path).read())
    victim = doc["configs"][-1]
    doc["ranking"] = [i for i in doc["ranking"] if i != victim["id"]]
    for k in list(victim["aggregate"]):
        victim["aggregate"][k] = None
    victim["feasible"] = False
    victim["infeasible_reasons"] = ["dropped: its figures took more than the --budget of 1 s"]
    doc.setdefault("budget", {}).setdefault("dropped", []).append(
        {"id": victim["id"], "name": victim["name"], "trace": "tiny", "reason": "budget", "seconds": 1.2,
         "detail": "its figures took more than the --budget of 1 s"})
    d = work / "dropped"
    d.mkdir()
    src = d / "explore.json"
    src.write_text(json.dumps(doc))
    p = run_cli(["report", str(src), "-o", str(d / "out")])
    assert p.returncode == 0, p.stderr
    html = (d / "out" / "index.html").read_text()
    ranking = html[html.index('<table class="ranking">'):]
    ranking = ranking[:ranking.index("</table>")]
    assert f">{victim['id']}<" not in ranking
    details = html[html.index("dropped or without figures (not ranked)"):]
    assert victim["id"] in details[:details.index("</details>")]
    assert "budget on tiny: its figures took more than the --budget of 1 s" in details
