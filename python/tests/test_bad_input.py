"""Bad input: one clear message on stderr, a non-zero exit, and the results
computed before stay where they were."""

import hashlib
import os

from conftest import load, run_cli


def _one_error_line(p, *needles):
    lines = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("dmmkit ") and "error:" in lines[0], lines[0]
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def _digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_unknown_allocator_keeps_results(compare_results, tiny_trace):
    path, _ = compare_results
    before = _digest(path)
    p = run_cli(["compare", str(tiny_trace), "-a", "glibc,hoard", "--results", str(path)])
    assert p.returncode == 2
    _one_error_line(p, "unknown allocator 'hoard'")
    assert _digest(path) == before


def test_missing_library(tiny_trace, work):
    p = run_cli(["compare", str(tiny_trace), "-a", "glibc,jemalloc", "--results", str(work / "x.json")],
                env={"DMMKIT_LIB_PATH": str(work / "nolibs")})
    assert p.returncode == 2
    _one_error_line(p, "allocator jemalloc: library not found", "libjemalloc.so.2", str(work / "nolibs"))
    p = run_cli(["compare", str(tiny_trace), "-a", "glibc,mine", "--peer", "mine=/no/such/libmine.so",
                 "--results", str(work / "x.json")])
    assert p.returncode == 2
    _one_error_line(p, "/no/such/libmine.so")
    assert not (work / "x.json").exists()


def test_preload_that_does_not_take_effect_keeps_earlier_runs(tiny_trace, work):
    """A peer that is not a malloc replacement: the comparison stops with one
    message, and the runs made before it are in the results file."""
    lib = None
    for cand in ("/usr/lib/x86_64-linux-gnu/libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1",
                 "/usr/lib/x86_64-linux-gnu/libm.so.6"):
        if os.path.exists(cand):
            lib = cand
            break
    assert lib, "no ordinary shared library found"
    out = work / "partial.json"
    p = run_cli(["compare", str(tiny_trace), "-a", "glibc,notmalloc", "--peer", f"notmalloc={lib}", "--reps", "1",
                 "--no-pictures", "--results", str(out)])
    assert p.returncode == 1
    _one_error_line(p, "notmalloc", "did not take effect")
    d = load(out)
    assert d["complete"] is False and d["runs"]["tiny"]["glibc"][0]["warm_avg"] > 0


def test_unreadable_and_malformed_traces(work):
    garbage = work / "garbage.trace"
    garbage.write_bytes(b"DMMTRACE" + b"\xff" * 40)
    for args in (["analyse", str(work / "nope.trace")], ["compare", str(work / "nope.trace"), "-a", "glibc"],
                 ["explore", str(work / "nope.trace"), "--grid", "presets"]):
        p = run_cli(args + (["--results", str(work / "r.json")] if args[0] != "analyse" else []))
        assert p.returncode == 2, args
        _one_error_line(p, "no such file")
    p = run_cli(["analyse", str(work)])
    assert p.returncode == 2
    _one_error_line(p, "is a directory")
    for args in (["analyse", str(garbage)], ["explore", str(garbage), "--grid", "presets", "--results",
                                             str(work / "r.json")]):
        p = run_cli(args)
        assert p.returncode == 2
        _one_error_line(p, "not a valid dmm trace")
    text = work / "bad.txt"
    text.write_text("dmmtrace 1\n0 m 1 10\n0 f 2\n")  # frees an object that is not live
    p = run_cli(["compare", str(text), "-a", "glibc", "--results", str(work / "r.json")])
    assert p.returncode == 2
    _one_error_line(p, "not a valid dmm trace", "operation")


def test_config_the_heap_refuses(explore_results, tiny_trace, work):
    path, _ = explore_results
    before = _digest(path)
    cache_files = sorted(str(p) for p in (work / "cache").rglob("*.json"))
    p = run_cli(["explore", str(tiny_trace), "--grid", "presets", "--config", "org=tlsf,fit=next",
                 "--results", str(path), "--cache", str(work / "cache")])
    assert p.returncode == 2
    _one_error_line(p, "refused by the heap", "next fit needs a single free list")
    assert _digest(path) == before
    assert sorted(str(p) for p in (work / "cache").rglob("*.json")) == cache_files
    p = run_cli(["compare", str(tiny_trace), "-a", "glibc,dmm:org=single,fit=good", "--results", str(path)])
    assert p.returncode == 2
    _one_error_line(p, "refuses this config", "good fit")
    assert _digest(path) == before
    p = run_cli(["compare", str(tiny_trace), "-a", "dmm:nosuchpreset", "--results", str(path)])
    assert p.returncode == 2
    _one_error_line(p, "unknown preset 'nosuchpreset'")


def test_bad_options(tiny_trace):
    p = run_cli(["explore", str(tiny_trace), "--arena", "lots"])
    assert p.returncode == 2 and "is not a size" in p.stderr
    p = run_cli(["explore", str(tiny_trace), "--objective", "fastest"])
    assert p.returncode == 2
    p = run_cli(["frobnicate"])
    assert p.returncode == 2
    p = run_cli(["record", "-o", "x.trace", "--", "/no/such/program"])
    assert p.returncode == 127


def test_advise_option_typo_is_an_option_error(tmp_path):
    # issue 26 item 8: `--bugdet 3 -- ls` said "program not found: --bugdet"
    p = run_cli(["advise", "--bugdet", "3", "--", "ls"], cwd=tmp_path)
    assert p.returncode == 2
    assert "No such option: --bugdet (did you mean --budget-minutes?)" in p.stderr, p.stderr
    assert "program not found" not in p.stderr
    assert not (tmp_path / "dmmkit-advise").exists()  # nothing was started


def test_advise_missing_trace_says_the_file_is_missing(tmp_path):
    # issue 26 item 8: said "program not found: missing.trace"
    p = run_cli(["advise", "missing.trace"], cwd=tmp_path)
    assert p.returncode == 2
    _one_error_line(p, "dmmkit advise: error: no such file: missing.trace")
    # a bare name that is neither a file nor on PATH is still a missing program
    p = run_cli(["advise", "--", "no-such-program-xyz"], cwd=tmp_path)
    assert p.returncode == 2
    _one_error_line(p, "program not found: no-such-program-xyz")


def test_record_errors_have_the_command_form(tmp_path):
    # issue 26 item 8: record's errors came from scripts/record.sh as "record: ..."
    p = run_cli(["record", "-o", str(tmp_path / "x.trace"), "--", "/no/such/program"], cwd=tmp_path)
    assert p.returncode == 127
    _one_error_line(p, "dmmkit record: error: program not found: /no/such/program")
    p = run_cli(["record", "-o", str(tmp_path / "no" / "dir" / "x.trace"), "--", "true"], cwd=tmp_path)
    assert p.returncode == 1
    _one_error_line(p, "dmmkit record: error: cannot write ", "(trace not written)")
    f = tmp_path / "notexec"
    f.write_text("#!/bin/sh\n")
    p = run_cli(["record", "-o", str(tmp_path / "y.trace"), "--", str(f)], cwd=tmp_path)
    assert p.returncode == 126
    _one_error_line(p, "dmmkit record: error: cannot run ", "Permission denied")
