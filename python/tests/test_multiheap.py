"""The distributed multi-heap as a compare allocator (multiheap:SPEC)."""

from __future__ import annotations

from conftest import load, run_cli

from dmmkit.allocators import resolve, split_allocator_list


def test_multiheap_allocator_names():
    items = split_allocator_list(["dmm:tlsf,multiheap:4;policy=lazy;heap=preset=tlsf,fit=best,glibc"])
    assert items == ["dmm:tlsf", "multiheap:4;policy=lazy;heap=preset=tlsf,fit=best", "glibc"]
    a = resolve(["multiheap:2;policy=private"])[0]
    assert a.kind == "multiheap" and a.spec == "2;policy=private"
    assert a.replay_args() == ["--alloc", "multiheap:2;policy=private"]


def test_compare_multiheap_allocator(tools, tiny_trace, work):
    out = work / "compare-mh.json"
    p = run_cli(["compare", str(tiny_trace), "-a", "dmm:tlsf,multiheap:2;policy=lazy;free=queue", "--baseline",
                 "dmm:tlsf", "--reps", "1", "--no-pictures", "--results", str(out)], cwd=work)
    assert p.returncode == 0, p.stdout + p.stderr
    d = load(out)
    assert [a["label"] for a in d["allocators"]] == ["dmm:tlsf", "multiheap:2;policy=lazy;free=queue"]
    assert d["allocators"][1]["kind"] == "multiheap"
    run = d["runs"]["tiny"]["multiheap:2;policy=lazy;free=queue"][0]
    assert run and run["warm_avg"] > 0
    # a bad spec is refused before anything runs, naming the bad token
    p = run_cli(["compare", str(tiny_trace), "-a", "multiheap:4;policy=sideways", "--reps", "1", "--no-pictures",
                 "--results", str(work / "bad.json")], cwd=work)
    assert p.returncode != 0 and "policy=sideways" in p.stderr, p.stderr
