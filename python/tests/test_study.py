"""`dmmkit study`: a quick real sweep, wrong and failed runs flagged and left
out of the figures, bad input, the dmm-study/1 schema, the statistics."""

import json
import math
import os
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, run_cli

MT_DIR = ROOT / "build" / "release" / "bench" / "workloads" / "mt"
LIBDMM = ROOT / "build" / "release" / "lib" / "libdmm.so"


def _need_builds():
    missing = [str(p) for p in (MT_DIR / "mt-larson", MT_DIR / "mt-xmalloc", LIBDMM) if not p.exists()]
    if missing:
        pytest.fail("not built: " + ", ".join(missing) + " (cmake --build --preset release --target mt_programs "
                    "dmm_malloc_shared; python/run_tests.sh does this)")


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _load(outdir: Path) -> dict:
    from dmmkit.schemas import STUDY
    from dmmkit.validate import load_document
    return load_document(outdir / "study.json", STUDY)[1]


def _one_error_line(p, *needles):
    lines = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("dmmkit study: error:"), lines[0]
    for n in needles:
        assert n in lines[0], (n, lines[0])


def test_quick_sweep_on_real_mt_programs(tmp_path):
    """glibc and libdmm on two mt programs at 1 and 2 threads: every run
    good, same checksums, figures, plots, the analysis beside, and a
    document that passes its schema."""
    _need_builds()
    out = tmp_path / "study"
    p = run_cli(["study", "--quick", "--alloc", "glibc,libdmm", "--workloads", "larson,mt-xmalloc", "--mt-dir",
                 str(MT_DIR), "--no-real", "-o", str(out)], timeout=300)
    assert p.returncode == 0, p.stderr + p.stdout
    doc = _load(out)
    assert doc["complete"] is True
    assert doc["settings"]["threads"] == [1, 2] and doc["settings"]["reps"] == 1
    assert doc["machine"]["cores"] == os.cpu_count()
    assert [a["label"] for a in doc["allocators"]] == ["glibc", "libdmm"]
    assert doc["allocators"][1]["lib"] == str(LIBDMM.resolve())
    assert len(doc["runs"]) == 2 * 2 * 2
    assert {r["status"] for r in doc["runs"]} == {"ok"}, [r["error"] for r in doc["runs"]]
    for r in doc["runs"]:
        assert r["time_s"] > 0 and r["rss_kb"] > 0 and r["wall_ns"] > 0 and r["checksum"]
    # the allocator order of each cell is recorded
    assert len(doc["orders"]) == 4 and all(sorted(o["order"]) == ["glibc", "libdmm"] for o in doc["orders"])
    for wl in ("larson", "xmalloc"):
        for t in ("1", "2"):
            figs = doc["summary"][wl][t]
            best = doc["best"][wl][t]["time"]
            assert figs[best]["ratio"]["mean"] == pytest.approx(1.0)
            other = "libdmm" if best == "glibc" else "glibc"
            assert figs[other]["ratio"]["mean"] >= 1.0
        an = doc["analysis"][wl]
        assert "error" not in an, an
        assert an["threads"] == 2 and an["figures"]["ops"] > 0
        assert an["figures"]["threads"] >= 2
    g = doc["goals"]
    assert g["rss_geomean_vs_glibc"]["cells"] == 4 and g["rss_geomean_vs_glibc"]["value"] > 0
    assert g["time_geomean_vs_mimalloc"]["cells"] == 0  # mimalloc was not in the study
    md = (out / "study.md").read_text()
    assert "2 cores" in md or f"{os.cpu_count()} cores" in md
    assert "## Goals" in md and "### larson" in md and "cross-thread frees" in md
    for png in ("study_time.png", "study_rss.png", "study_ratio_heatmap.png"):
        assert (out / png).stat().st_size > 1000
        assert f"({png})" in md


FAKE_MT = """#!/bin/sh
# stand-in mt program: its checksum is wrong whenever something is preloaded
threads=1
while [ $# -gt 0 ]; do case $1 in --threads) threads=$2; shift;; esac; shift; done
sum=00000000000000$threads$threads
[ -n "$LD_PRELOAD" ] && sum=deadbeefdeadbeef
echo "fake: threads=$threads checksum=$sum OK"
echo '{"schema":"dmm-mtbench/1","program":"fake","threads":'$threads',"wall_ns":1000,"peak_rss_kb":10,"checksum":"'$sum'"}'
"""

CRASH_MT = """#!/bin/sh
if [ -n "$LD_PRELOAD" ]; then echo "CHECK FAILED: block 7 byte 3 is 0x00" >&2; exit 1; fi
echo '{"schema":"dmm-mtbench/1","program":"crash","threads":1,"wall_ns":1000,"peak_rss_kb":10,"checksum":"1"}'
"""

FAKE_REAL = """#!/bin/sh
# stand-in for bench/workloads/real/real.sh (same interface)
if [ "$1" = --list ]; then printf 'echoer threaded\\nsolo single\\nabsent single\\n'; exit 0; fi
name=$1; shift
threads=1
while [ $# -gt 0 ]; do case $1 in --threads) threads=$2; shift;; --workdir) cd "$2" || exit 1; shift;; esac; shift; done
case $name in
  echoer) echo "result threads=$threads"; [ -n "$LD_PRELOAD" ] && echo "extra line";;
  solo) echo "solo [$threads]";;
  absent) echo "absent: not installed" >&2; exit 77;;
  *) exit 2;;
esac
exit 0
"""


def test_wrong_and_failed_runs_are_flagged_not_averaged(tmp_path):
    _need_builds()
    mt = tmp_path / "mt"
    mt.mkdir()
    _script(mt / "mt-fake", FAKE_MT)
    _script(mt / "mt-crash", CRASH_MT)
    real = _script(tmp_path / "real.sh", FAKE_REAL)
    out = tmp_path / "study"
    p = run_cli(["study", "--quick", "--reps", "2", "--alloc", "glibc,libdmm", "--mt-dir", str(mt), "--real",
                 str(real), "--no-analyse", "-o", str(out)], timeout=120)
    assert p.returncode == 0, p.stderr + p.stdout
    doc = _load(out)
    runs = doc["runs"]
    by = {}
    for r in runs:
        by.setdefault((r["workload"], r["allocator"]), []).append(r)
    # --quick keeps 1 repetition
    assert doc["settings"]["reps"] == 1
    # a wrong checksum is flagged with the reference it differs from
    for r in by[("fake", "libdmm")]:
        assert r["status"] == "wrong" and "checksum deadbeefdeadbeef differs from glibc's" in r["error"]
    assert all(r["status"] == "ok" for r in by[("fake", "glibc")])
    # a failed check: the first error line is kept
    for r in by[("crash", "libdmm")]:
        assert r["status"] == "failed" and r["error"] == "exit status 1: CHECK FAILED: block 7 byte 3 is 0x00"
    # real programs: output compared with glibc's; a single one runs once, at 1 thread
    for r in by[("echoer", "libdmm")]:
        assert r["status"] == "wrong" and "output differs from glibc's" in r["error"]
    assert {r["threads"] for r in by[("solo", "glibc")]} == {1}
    assert all(r["status"] == "ok" for r in by[("solo", "libdmm")])
    # exit 77: left out with the reason
    assert "absent" in doc["skipped"] and "not installed" in doc["skipped"]["absent"]
    assert not any(r["workload"] == "absent" for r in runs)
    # left out of the figures, counted as bad, the best is the good allocator
    for wl in ("fake", "crash", "echoer"):
        for t, figs in doc["summary"][wl].items():
            f = figs["libdmm"]
            assert f["bad"] == f["runs"] == 1 and f["time"]["n"] == 0 and f["time"]["mean"] is None
            assert f["ratio"] is None
            assert doc["best"][wl][t]["time"] == "glibc"
    assert doc["goals"]["worst_ratio_to_best"]["fake"] is None
    md = (out / "study.md").read_text()
    assert "FAILED 1/1: wrong result: checksum deadbeefdeadbeef" in md
    assert "FAILED 1/1: exit status 1: CHECK FAILED" in md
    assert "absent left out" in md


@pytest.mark.parametrize("args,needles", [
    (["--alloc", "glibc,hoard"], ["unknown allocator 'hoard'"]),
    (["--alloc", "glibc,dmm:tlsf"], ["dmm:tlsf", "not a malloc library"]),
    (["--threads", "1,x"], ["--threads '1,x'"]),
    (["--threads", "0"], ["--threads '0'"]),
    (["--mt-dir", "/no/such/mtdir"], ["--mt-dir /no/such/mtdir: no such directory"]),
    (["--workloads", "nosuch"], ["unknown workload 'nosuch'"]),
    (["--reps", "0"], ["--reps must be at least 1"]),
    (["--real", "/no/such/real.sh"], ["--real /no/such/real.sh: no such file"]),
    (["--peer", "v2"], ["--peer 'v2'", "NAME=/path/to/lib.so"]),
    (["--peer", "v2=/no/such/lib.so"], ["--peer v2", "not found"]),
])
def test_bad_input(tmp_path, args, needles):
    _need_builds()
    base = ["study", "--quick", "--no-analyse", "-o", str(tmp_path / "o")]
    if "--mt-dir" not in args:
        base += ["--mt-dir", str(MT_DIR)]
    if "--real" not in args:
        base += ["--no-real"]
    p = run_cli(base + args, timeout=60)
    assert p.returncode == 2, p.stderr + p.stdout
    _one_error_line(p, *needles)
    assert not (tmp_path / "o" / "study.json").exists()


def test_peer_library_is_studied_beside_the_list(tmp_path):
    """--peer NAME=LIB: a malloc library of the user's (here libdmm under
    another name) joins the allocators, runs under its own label, and is
    judged like the others."""
    _need_builds()
    out = tmp_path / "study"
    p = run_cli(["study", "--quick", "--no-analyse", "--alloc", "glibc", "--peer", f"mine={LIBDMM}", "--workloads",
                 "larson", "--threads", "2", "--mt-dir", str(MT_DIR), "--no-real", "-o", str(out)], timeout=120)
    assert p.returncode == 0, p.stderr + p.stdout
    doc = _load(out)
    assert [a["label"] for a in doc["allocators"]] == ["glibc", "mine"]
    assert doc["allocators"][1]["lib"] == str(LIBDMM.resolve())
    assert {r["allocator"] for r in doc["runs"]} == {"glibc", "mine"}
    assert {r["status"] for r in doc["runs"]} == {"ok"}


def test_missing_libdmm_is_one_line(tmp_path):
    p = run_cli(["study", "--alloc", "glibc,libdmm", "--mt-dir", str(MT_DIR), "--no-real", "--no-analyse",
                 "-o", str(tmp_path / "o")], env={"DMMKIT_LIBDMM": str(tmp_path / "libdmm.so")})
    assert p.returncode == 2
    _one_error_line(p, "allocator libdmm: libdmm.so not found", str(tmp_path / "libdmm.so"))


def test_schema_rejects_damaged_documents(tmp_path):
    from dmmkit.errors import DmmkitError
    from dmmkit.schemas import STUDY
    from dmmkit.validate import check_document
    doc = {"schema": "dmm-study/1", "command": ["dmmkit", "study"], "complete": True, "machine": {"cores": 2},
           "settings": {"threads": [1, 2], "reps": 1, "scale": 2},
           "allocators": [{"label": "glibc"}], "workloads": [{"name": "larson", "kind": "mt"}],
           "runs": [{"workload": "larson", "threads": 2, "allocator": "glibc", "rep": 0, "status": "ok",
                     "time_s": 0.5, "rss_kb": 100}],
           "summary": {}}
    check_document(doc, STUDY, "doc")
    bad = json.loads(json.dumps(doc))
    bad["runs"][0]["allocator"] = "hoard"
    with pytest.raises(DmmkitError, match=r"runs\[0\]\.allocator: \"hoard\" is not in \"allocators\""):
        check_document(bad, STUDY, "doc")
    bad = json.loads(json.dumps(doc))
    bad["runs"][0]["status"] = "failed"
    with pytest.raises(DmmkitError, match="has no error line"):
        check_document(bad, STUDY, "doc")
    bad = json.loads(json.dumps(doc))
    bad["schema"] = "dmm-study/2"
    with pytest.raises(DmmkitError, match="reads version 1"):
        check_document(bad, STUDY, "doc")


def test_study_writes_the_provenance_record(tmp_path):
    """study.json and study.md carry scripts/provenance.py's record: the
    command (scripts/study.sh's line when it drives the study), commit, date,
    CPU and the load before and after the timed runs.  Needs no build: a
    stand-in mt program under glibc."""
    mt = tmp_path / "mt"
    mt.mkdir()
    _script(mt / "mt-fake", FAKE_MT)
    out = tmp_path / "study"
    p = run_cli(["study", "--quick", "--alloc", "glibc", "--mt-dir", str(mt), "--no-real", "--no-analyse",
                 "-o", str(out)], env={"DMMKIT_STUDY_SCRIPT": "scripts/study.sh --quick"}, timeout=120)
    assert p.returncode == 0, p.stderr + p.stdout
    prov = _load(out)["provenance"]
    assert prov["command"] == "scripts/study.sh --quick"
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    assert prov["commit"].split("-")[0] == head
    assert prov["date"].endswith("Z") and prov["cpu"]["model"] and prov["cpu"]["cpus"] == os.cpu_count()
    assert prov["load"]["before"] is not None and prov["load"]["after"] is not None
    md = (out / "study.md").read_text()
    for line in ("Command: `scripts/study.sh --quick`", f"Commit {prov['commit']}, {prov['date']}",
                 f"CPU: {prov['cpu']['model']}", "Machine load (1-minute average)"):
        assert line in md, line
    # study.md renders the very record study.json holds (the load after the runs included)
    from dmmkit.study import _provenance_module
    assert _provenance_module().markdown(prov) in md
    # without the script around it, the command is dmmkit's own argument list
    p = run_cli(["study", "--quick", "--alloc", "glibc", "--mt-dir", str(mt), "--no-real", "--no-analyse",
                 "-o", str(out)], env={"DMMKIT_STUDY_SCRIPT": ""}, timeout=120)
    assert p.returncode == 0, p.stderr + p.stdout
    assert _load(out)["provenance"]["command"].startswith("dmmkit study --quick --alloc glibc")


def test_provenance_names_each_dmm_build(tmp_path):
    """A library built from this tree (libdmm, a --peer variant) adds its
    build tree's compiler and flags to the record; system allocators add
    nothing."""
    from dmmkit.allocators import Allocator
    from dmmkit.study import _provenance_module, provenance_record
    mod = _provenance_module()
    assert mod is not None
    build = tmp_path / "build" / "var1024"
    (build / "lib").mkdir(parents=True)
    (build / "lib" / "libdmm.so").write_bytes(b"")
    (build / "CMakeCache.txt").write_text("CMAKE_C_COMPILER:FILEPATH=cc\nCMAKE_BUILD_TYPE:STRING=Release\n"
                                          "CMAKE_C_FLAGS:STRING=-DDMM_MALLOC_SMALL_MAX=1024u\n"
                                          "CMAKE_C_FLAGS_RELEASE:STRING=-O3 -DNDEBUG\n")
    allocs = [Allocator("glibc", "system"), Allocator("dmm1k", "peer", lib=build / "lib" / "libdmm.so")]
    rec = provenance_record(mod, "scripts/x.sh", allocs, 0.5)
    assert rec["command"] == "scripts/x.sh" and rec["load"]["before"] == 0.5
    assert rec["flags"].startswith("dmm1k: -DDMM_MALLOC_SMALL_MAX=1024u -O3 -DNDEBUG (CMake Release")
    assert rec["compiler"]
    assert provenance_record(mod, "x", allocs[:1], None)["flags"] is None


def test_mean_ci_and_judge():
    from dmmkit.study import judge, mean_ci, t95
    c = mean_ci([1, 2, 3, 4, 5])
    assert c["n"] == 5 and c["mean"] == 3
    # the printed t table's value (2.776 for 4 degrees of freedom), to its rounding
    assert c["ci95"] == pytest.approx(2.776 * math.sqrt(2.5) / math.sqrt(5), rel=1e-3)
    assert mean_ci([4.0])["ci95"] is None and mean_ci([])["mean"] is None
    assert t95(1) == pytest.approx(12.706, abs=1e-3) and t95(1000) == pytest.approx(1.962, abs=1e-3)
    assert math.isnan(t95(0))
    runs = [{"workload": "w", "threads": 1, "allocator": a, "rep": 0, "status": "ok", "checksum": ck, "error": None}
            for a, ck in (("glibc", "A"), ("x", "B"), ("y", "B"))]
    judge(runs)
    # glibc is the reference even when outnumbered
    assert [r["status"] for r in runs] == ["ok", "wrong", "wrong"]
    runs[0]["status"], runs[0]["error"] = "failed", "exit status 1"
    judge(runs)  # without a good glibc run, the majority decides
    assert [r["status"] for r in runs] == ["failed", "ok", "ok"]


def test_compare_runs_libdmm(tiny_trace, tmp_path):
    """`dmmkit compare -a libdmm` preloads the built libdmm.so and checks
    that malloc resolves to it (as for a --peer library)."""
    _need_builds()
    res = tmp_path / "cmp.json"
    p = run_cli(["compare", str(tiny_trace), "-a", "glibc,libdmm", "--reps", "1", "--no-pictures",
                 "--results", str(res)], timeout=120)
    assert p.returncode == 0, p.stderr + p.stdout
    doc = json.loads(res.read_text())
    libdmm = [a for a in doc["allocators"] if a["label"] == "libdmm"]
    assert libdmm and libdmm[0]["lib"] == str(LIBDMM.resolve())
    assert doc["summary"]["tiny"]["libdmm"]["failed"] == 0


# ---- programs of the user's own (--external), CPU time, --pin ----------------

EXT_PROG = """#!/bin/sh
# prints its thread argument and its input, sorted; a second argument 'bad': another answer under a preload
if [ -n "$LD_PRELOAD" ] && [ "$2" = bad ]; then echo different; exit 0; fi
echo "threads=$1"
sort
"""


def _manifest(tmp_path: Path, body: str) -> Path:
    _script(tmp_path / "prog", EXT_PROG)
    (tmp_path / "in.txt").write_text("b\na\nc\n")
    (tmp_path / "bad.txt").write_text("bad\n")
    m = tmp_path / "progs.study"
    m.write_text(body)
    return m


def test_external_manifest_runs_the_users_programs(tmp_path):
    """Each manifest line is a workload: {threads} and {dir} filled in, its
    input on stdin, a missing program left out with FILE:LINE, check=output
    judging the output against glibc's; CPU time recorded beside wall time;
    --pin puts each run on its first min(threads, CPUs) CPUs."""
    _need_builds()
    m = _manifest(tmp_path, "# programs of mine\n"
                            "sorter threaded stdin={dir}/in.txt check=output -- {dir}/prog {threads}\n"
                            "judged single stdin=bad.txt check=output -- ./prog 1 bad\n"
                            "gone single -- ./not-built\n")
    out = tmp_path / "study"
    p = run_cli(["study", "--reps", "2", "--threads", "1,2", "--alloc", "glibc,libdmm", "--mt-dir", str(MT_DIR),
                 "--no-real", "--external", str(m), "--workloads", "sorter,judged", "--pin", "-o", str(out)],
                timeout=300)
    assert p.returncode == 0, p.stderr + p.stdout
    doc = _load(out)
    ext = {w["name"]: w for w in doc["workloads"]}
    assert ext["sorter"]["kind"] == "ext" and ext["sorter"]["command"] == [str(tmp_path / "prog"), "{threads}"]
    assert ext["sorter"]["stdin"] == str(tmp_path / "in.txt")
    assert any(f"gone left out: ./not-built is not an executable file ({m}:4)" in n for n in doc["notes"])
    by = {}
    for r in doc["runs"]:
        by.setdefault((r["workload"], r["allocator"]), []).append(r)
    assert {r["threads"] for r in by[("sorter", "glibc")]} == {1, 2}
    assert all(r["status"] == "ok" and r["cpu_s"] is not None and r["cpu_s"] >= 0 for r in by[("sorter", "libdmm")])
    # the same output under both allocators at each thread count; a changed one is flagged
    assert all(r["status"] == "wrong" and "output differs from glibc's" in r["error"] for r in by[("judged", "libdmm")])
    assert all(r["status"] == "ok" for r in by[("judged", "glibc")])
    assert doc["summary"]["sorter"]["2"]["glibc"]["cpu_s"]["n"] == 2
    assert "taskset" in (doc["settings"]["pin"] or "")
    md = (out / "study.md").read_text()
    assert "## CPU time" in md and "### sorter" in md
    # recorded for the request patterns like the other workloads
    assert "error" not in doc["analysis"]["sorter"], doc["analysis"]["sorter"]


@pytest.mark.parametrize("body,needles", [
    ("a threaded ./prog\n", [":1: expected 'NAME threaded|single"]),
    ("a both -- ./prog\n", [":1: 'both': expected threaded or single"]),
    ("a single bogus=1 -- ./prog\n", [":1: unknown option 'bogus=1'"]),
    ("a single -- ./prog {threads}\n", [":1: a single-threaded workload cannot use {threads}"]),
    ("a single -- ./prog\na single -- ./prog\n", [":2: workload 'a' is named twice"]),
    ("a/b single -- ./prog\n", [":1: workload name 'a/b'"]),
    ("a single -- './prog\n", [":1: No closing quotation"]),
    ("# nothing\n", ["no workload in it"]),
    ("a single -- ./missing\n", ["none of its programs is there", "./missing"]),
    ("larson threaded -- ./prog {threads}\n", ["larson", "already mt or real workloads"]),
])
def test_bad_external_manifest_is_one_line(tmp_path, body, needles):
    _need_builds()
    m = _manifest(tmp_path, body)
    p = run_cli(["study", "--quick", "--no-analyse", "--alloc", "glibc", "--mt-dir", str(MT_DIR), "--no-real",
                 "--external", str(m), "-o", str(tmp_path / "o")], timeout=60)
    assert p.returncode == 2, p.stderr + p.stdout
    _one_error_line(p, *needles)
    assert not (tmp_path / "o" / "study.json").exists()
