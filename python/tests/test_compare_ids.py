"""compare end to end on the tiny trace: explore result ids as allocators,
the adaptive repetitions (with a small maximum), the statistics fields,
older results without them, and the results file's mode."""

import json
import os
import stat
import threading

from conftest import load, run_cli
from dmmkit.cache import write_json_atomic


def test_compare_explore_ids_and_adaptive_reps(work, tiny_trace, explore_results):
    ex = load(explore_results[0])
    best = next(c for c in ex["configs"] if c["id"] == ex["best"])
    other = next(c for c in ex["configs"] if c["id"] != ex["best"] and c.get("kind") != "pool")
    out = work / "compare-ids.json"
    p = run_cli(["compare", str(tiny_trace), "-a", f"glibc,explore:best,explore:{other['id']}", "--max-reps", "2",
                 "--explore-results", str(explore_results[0]), "--no-pictures", "--results", str(out)])
    assert p.returncode == 0, p.stdout + p.stderr
    d = load(out)
    labels = [a["label"] for a in d["allocators"]]
    assert labels[1] == f"best:{best['name']}" and d["allocators"][1]["spec"] == best["alloc"].split(":", 1)[1]
    assert other["name"] in labels[2]
    # auto mode with a maximum below the minimum of 9: stops at 2 and says so
    assert d["settings"]["reps_mode"] == "auto" and d["reps_done"] == 2 and "maximum of 2" in d["reps_stop"]
    assert all(len(r) == 2 for per in d["runs"].values() for r in per.values())
    o = d["overall"]
    for lab in labels:
        for k in ("warm_avg_ratio_geomean", "warm_avg_ratio_ci", "warm_avg_ratio_p", "group",
                  "peak_footprint_ratio_geomean", "memory_exact", "warm_max_ratio_geomean"):
            assert k in o[lab], (lab, k)
    # two pairs cannot separate anything: one group, everything a tie
    assert d["groups"] == [d["ranking"]] and all(o[l]["group"] == 1 for l in labels)
    assert set(d["noise"]) >= {"runs", "preempted", "share", "freq_changes", "warning"} and d["noise"]["runs"] == 6
    assert "95% CI" in p.stdout and "=1" in p.stdout and p.stdout.count("ranking: warm cycles/op") == 1
    assert oct(os.stat(out).st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask():
    m = os.umask(0o022)
    os.umask(m)
    return m


def test_compare_bad_explore_ids(work, tiny_trace, explore_results):
    for args, text in ((["-a", "glibc,explore:nosuch", "--explore-results", str(explore_results[0])],
                        "no configuration 'nosuch'"),
                       (["-a", "glibc,explore:best", "--explore-results", str(work / "missing.json")],
                        "no explore results file"),
                       (["-a", "glibc,explore:", "--explore-results", str(explore_results[0])],
                        "expected explore:best or explore:ID"),
                       (["-a", "glibc", "--reps", "many"], "expected auto or a number")):
        p = run_cli(["compare", str(tiny_trace), *args, "--no-pictures", "--results", str(work / "bad-ids.json")])
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert text in p.stderr and p.stderr.lower().count("error") == 1, (args, p.stderr)


def test_old_compare_results_still_show(work, compare_results):
    d = load(compare_results[0])
    for k in ("groups", "noise", "reps_done", "reps_stop", "trace_groups"):
        d.pop(k, None)
    d["settings"].pop("reps_mode", None)
    for o in d["overall"].values():
        for k in list(o):
            if k not in ("warm_avg_ratio_geomean", "cold_avg_ratio_geomean", "warm_avg_ratio_min",
                         "warm_avg_ratio_max", "wins", "failed", "traces"):
                del o[k]
    old = work / "compare-old.json"
    old.write_text(json.dumps(d))
    p = run_cli(["show", str(old)])
    assert p.returncode == 0, p.stderr
    assert "ranking: warm cycles/op" in p.stdout and "95% CI" in p.stdout and "WARNING" not in p.stdout


def test_results_files_are_world_readable(tmp_path):
    old = os.umask(0o022)
    try:
        write_json_atomic(tmp_path / "r.json", {"a": 1})
        assert os.stat(tmp_path / "r.json").st_mode & 0o777 == 0o644
        os.umask(0o077)
        write_json_atomic(tmp_path / "s.json", {"a": 1})  # the umask is respected
        assert os.stat(tmp_path / "s.json").st_mode & 0o777 == 0o600
    finally:
        os.umask(old)
    assert load(tmp_path / "r.json") == {"a": 1}


def test_results_to_a_fifo_are_written_in_place(tmp_path):
    # a temporary file renamed over a FIFO (or /dev/null) would replace it
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got = {}

    def reader():
        with open(fifo) as f:
            got["text"] = f.read()

    t = threading.Thread(target=reader)
    t.start()
    write_json_atomic(fifo, {"a": 1})
    t.join(timeout=10)
    assert json.loads(got["text"]) == {"a": 1}
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
