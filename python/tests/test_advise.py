"""`dmmkit advise` end to end on tiny inputs, its bad inputs, and the
Python recording hint."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from conftest import load, run_cli


def _err_line(p):
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def test_advise_program(tmp_path):
    """A tiny Python program: recorded with PYTHONMALLOC=malloc, compared,
    run end to end; the answer names its three goals."""
    out = tmp_path / "adv"
    p = run_cli(["advise", "-o", str(out), "--budget-minutes", "0.2", "-a", "glibc,dmm:tlsf", "--skip",
                 "explore,generate", "--", sys.executable, "-c", "x=[str(i)*5 for i in range(3000)]; print(len(x))"],
                cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "PYTHONMALLOC=malloc" in p.stdout and "step 1/7" in p.stdout
    d = load(out / "advise.json")
    assert d["schema"] == "dmmkit-advise/1" and d["complete"] is True
    assert d["record"]["env"] == {"PYTHONMALLOC": "malloc"}
    assert d["trace"]["ops"] > 5000  # pymalloc bypassed: every allocation recorded
    a = d["answer"]
    assert [g["goal"] for g in a["goals"]] == ["speed", "memory", "worst case"]
    assert a["program"][0] == sys.executable
    e2e = d["e2e"]
    assert e2e["allocators"]["glibc"]["ok"] >= 5 and e2e["allocators"]["glibc"]["output_same"] is True
    assert os.path.exists(d["compare"]) and d["explore"] is None
    # 12 s of budget: the report leaves out its heavy figures (they took 48 s on a 1.8M-op trace) and says so
    assert d["report_light"] is True
    assert "left out to keep dmmkit advise within its budget" in (out / "report" / "index.html").read_text()
    # every sentence is printed once, in the answer at the end
    for g in a["goals"]:
        assert p.stdout.count(g["sentence"][:40]) == 1
    # the answer again, from the results (no new measurement)
    q = run_cli(["advise", "--from", str(out / "advise.json")], cwd=tmp_path)
    assert q.returncode == 0, q.stderr
    assert a["goals"][0]["sentence"][:40] in q.stdout


def test_advise_trace(tiny_trace, tmp_path):
    out = tmp_path / "adv"
    p = run_cli(["advise", str(tiny_trace), "-o", str(out), "-a", "glibc,dmm:tlsf,dmm:p2012", "--skip",
                 "explore,generate"], cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    d = load(out / "advise.json")
    assert d["e2e"]["skipped"].startswith("no program")
    assert any("end-to-end check skipped" in c for c in d["answer"]["caveats"])
    assert d["answer"]["program"] is None and d["trace"]["ops"] > 0
    assert (out / "report" / "index.html").is_file()


def test_advise_from_results(compare_results, explore_results, tmp_path):
    p = run_cli(["advise", "--from", str(compare_results[0]), str(explore_results[0]), "-o", str(tmp_path)],
                cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    d = load(tmp_path / "advise.json")
    goals = d["answer"]["goals"]
    assert [g["goal"] for g in goals] == ["speed", "memory", "worst case"]
    for g in goals:
        assert g["sentence"] in p.stdout.replace("\n  ", " ") or g["sentence"][:30] in p.stdout
    # the compare run holds glibc and three dmm presets: the speed choice is one of them
    assert goals[0]["choice"] in ("glibc", "dmm:p2012", "dmm:tlsf", "dmm:dlmalloc")


def test_advise_from_keeps_the_budget_drops_of_every_explore_file(compare_results, explore_results, tmp_path):
    """The main job passes two explore files (kernels, programs): what the
    second one's budget dropped is a caveat too, not only the first's."""
    second = load(explore_results[0])
    dropped = [{"id": "slowcfg", "name": "slowcfg", "trace": "t", "reason": "relative", "seconds": 9.0,
                "why": "slow"}]
    second["budget"] = {**(second.get("budget") or {}), "dropped": dropped}
    other = tmp_path / "explore-2.json"
    other.write_text(json.dumps(second))
    p = run_cli(["advise", "--from", str(compare_results[0]), str(explore_results[0]), str(other),
                 "-o", str(tmp_path)], cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    caveats = load(tmp_path / "advise.json")["answer"]["caveats"]
    assert any(c.startswith("explore dropped 1 config(s) more than --budget-relative") for c in caveats), caveats


@pytest.mark.parametrize("args, status, text", [
    (["--", "no-such-program-dmmkit"], 2, "program not found: no-such-program-dmmkit"),
    (["--from"], 2, ""),
])
def test_advise_bad_program(args, status, text, tmp_path):
    p = run_cli(["advise", "-o", str(tmp_path / "o"), *args], cwd=tmp_path)
    assert p.returncode == status
    if text:
        assert _err_line(p) .startswith("dmmkit advise: error: " + text)


def test_advise_not_a_trace(tmp_path):
    bad = tmp_path / "bad.trace"
    bad.write_text("this is not a trace\n")
    p = run_cli(["advise", str(bad), "-o", str(tmp_path / "o")], cwd=tmp_path)
    assert p.returncode == 2 and "is not a valid dmm trace" in _err_line(p)
    p = run_cli(["advise", "--from", str(bad)], cwd=tmp_path)
    assert p.returncode == 2 and _err_line(p).startswith("dmmkit advise: error: ")


def test_advise_crash_while_recorded(tmp_path):
    out = tmp_path / "o"
    prog = [sys.executable, "-c", "x=[str(i) for i in range(100)]; raise SystemExit(3)"]
    p = run_cli(["advise", "-o", str(out), "--", *prog], cwd=tmp_path)
    assert p.returncode == 1
    line = _err_line(p)
    assert "exited with status 3 while recorded" in line and "--keep-going" in line
    assert len(list(out.glob("*.trace"))) == 1  # what was recorded is kept
    d = load(out / "advise.json")
    assert d["complete"] is False and "status 3" in d["error"]
    prog = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]
    p = run_cli(["advise", "-o", str(tmp_path / "k"), "--", *prog], cwd=tmp_path)
    assert p.returncode == 1 and "killed by SIGKILL while recorded" in _err_line(p)


def test_advise_names_a_trace_that_could_not_be_written(tmp_path):
    """A program that succeeds but one of whose child traces cannot be
    written: record's status is 1, and advise says which trace and why
    instead of only 'exited with status 1'."""
    out = tmp_path / "o"
    # the child makes a directory where its own trace (OUT.<its pid>) goes
    child = f"import os; os.mkdir('{out}/' + 'python.trace.' + str(os.getpid())); x = [str(i) for i in range(99)]"
    script = tmp_path / "prog.py"
    script.write_text(f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {child!r}], check=True)\n"
                      "x = [str(i) for i in range(999)]\n")
    p = run_cli(["advise", "-o", str(out), "--", sys.executable, str(script)], cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    line = _err_line(p)
    assert "exited with status 1 (1 trace(s) not written, the first: " in line, line
    assert "Is a directory (trace not written)" in line and "--keep-going" in line, line


def test_advise_budget_too_small(tiny_trace, tmp_path):
    out = tmp_path / "o"
    p = run_cli(["advise", str(tiny_trace), "-o", str(out), "--budget-minutes", "0.00001"], cwd=tmp_path)
    assert p.returncode == 1
    assert "budget" in _err_line(p) and "too small" in _err_line(p) and str(out) in _err_line(p)
    assert "would do" in _err_line(p) and "--budget-minutes " in _err_line(p)  # names the budget that would
    d = load(out / "advise.json")
    assert d["trace"]["ops"] > 0 and d["budget"]["probe_replay_s"] > 0  # what was measured is kept


def test_python_interpreter_detection(tmp_path):
    from dmmkit.advise import python_hint, python_interpreter
    for prog in (["python3", "x.py"], ["python3.11"], ["/home/u/.pyenv/shims/python3", "-c", "1"],
                 ["env", "PYTHONPATH=.", "python3", "s.py"], ["pypy3"]):
        assert python_interpreter(prog), prog
    script = tmp_path / "tool"
    script.write_text("#!/usr/bin/env python3\nprint(1)\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    assert python_interpreter([str(script)])
    for prog in (["sh", "-c", "true"], ["sqlite3"], ["pythonista"], []):
        assert not python_interpreter(prog), prog
    assert "PYTHONMALLOC=malloc" in python_hint(["python3"], env={})
    assert python_hint(["python3"], env={"PYTHONMALLOC": "malloc"}) is None


def test_record_prints_python_hint(tmp_path):
    p = run_cli(["record", "-o", str(tmp_path / "t.trace"), "--", sys.executable, "-c", "pass"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "PYTHONMALLOC=malloc" in p.stderr  # (without the hint when it is set: test_python_interpreter_detection)


def test_trace_too_large_for_memory(tiny_trace):
    from dmmkit.advise import _check_memory
    from dmmkit.errors import DmmkitError
    _check_memory(str(tiny_trace), 400)  # fits
    with pytest.raises(DmmkitError) as e:
        _check_memory(str(tiny_trace), 10 ** 15)  # 64 PB of operations
    assert e.value.status == 2 and "too large for this machine's memory" in e.value.message
