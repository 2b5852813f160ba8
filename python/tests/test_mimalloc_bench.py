"""scripts/mimalloc_bench.py (docs/malloc.md "mimalloc-bench"): the
throughput parsers on the programs' real output lines, the summary of a
hand-made set of runs (medians, ratios, geometric means, failures, paired
wins), a run's exit status and peak RSS, and the one-line error without
--bench-dir."""

import importlib.util
import math
import os
import subprocess
import sys

import pytest

from conftest import ROOT

_spec = importlib.util.spec_from_file_location("mimalloc_bench", ROOT / "scripts" / "mimalloc_bench.py")
mb = importlib.util.module_from_spec(_spec)
sys.modules["mimalloc_bench"] = mb
_spec.loader.exec_module(mb)


def test_throughput_parsers_read_the_programs_lines():
    assert mb._larson("Throughput = 12805854 operations per second, relative time: 78.089s.\nDone sleeping...\n") == 78.089
    assert mb._xmalloc("rtime: 4.829, free/sec: 20.708 M\n") == 4.829
    line = ("crt          2 threads random linear size [8,16000] 500 loops 1000 allocs 100 ops: "
            "........2772032 memory ops/CPU second (44MiB peak)\n")
    assert mb._rptest(line) == pytest.approx(2e6 / 2772032)
    assert mb._glibc_thread("45202519 iterations\n") == pytest.approx(1e9 / 45202519)
    for parse in (mb._larson, mb._xmalloc, mb._rptest, mb._glibc_thread):
        assert parse("no figure here\n") is None


def _run(test, alloc, rep, time, rss, error=None):
    return {"test": test, "alloc": alloc, "rep": rep, "time": time, "cpu": time, "wall": time, "sys": 0.0,
            "minflt": 10, "rss_kb": rss, "error": error}


def test_analyse_medians_ratios_geomeans_and_failures():
    runs = []
    for rep, (d, m, g) in enumerate([(2.0, 1.0, 4.0), (3.0, 4.0, 4.0), (2.5, 2.0, 4.0)], 1):
        runs += [_run("a", "libdmm", rep, d, 100), _run("a", "mimalloc", rep, m, 200), _run("a", "glibc", rep, g, 50)]
        runs += [_run("b", "libdmm", rep, 1.0, 100), _run("b", "mimalloc", rep, 4.0, 100),
                 _run("b", "glibc", rep, 1.0, 100, error="exit status 1" if rep == 2 else None)]
    res, geo, best = mb.analyse(["a", "b"], ["libdmm", "mimalloc", "glibc"], runs)
    assert res["a"]["libdmm"]["time"]["median"] == 2.5
    assert res["a"]["libdmm"]["ratio"]["mimalloc"]["time"] == pytest.approx(2.5 / 2.0)
    assert res["a"]["libdmm"]["ratio"]["glibc"]["rss_kb"] == pytest.approx(2.0)
    assert res["a"]["libdmm"]["faster_than_mimalloc"] == [1, 3]   # only repetition 2
    assert res["b"]["glibc"]["failures"] == ["rep 2: exit status 1"]
    assert res["b"]["glibc"]["time"]["n"] == 2                    # the failed run is left out
    assert geo["mimalloc"]["libdmm"]["time"] == pytest.approx(math.sqrt(1.25 * 0.25))
    assert best["a"] == {"best": "mimalloc", "libdmm_over_best": pytest.approx(1.25)}
    assert best["b"]["best"] == "libdmm"


@pytest.mark.skipif(not os.access("/usr/bin/time", os.X_OK), reason="GNU time (/usr/bin/time) not installed")
def test_a_run_reports_its_exit_status_and_peak_rss(tmp_path):
    ok = mb.run_once(sys.executable, ["-c", "b = bytearray(64 << 20); b[::4096] = b'x' * len(b[::4096])"],
                     None, None, 60, str(tmp_path))
    assert ok["error"] is None
    assert ok["rss_kb"] >= 64 << 10               # the program's own peak, not this process's
    bad = mb.run_once(sys.executable, ["-c", "import sys; sys.exit(3)"], None, None, 60, str(tmp_path))
    assert bad["error"] == "exit status 3"
    killed = mb.run_once(sys.executable, ["-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"],
                         None, None, 60, str(tmp_path))
    assert killed["error"] == "killed by signal 11"
    slow = mb.run_once(sys.executable, ["-c", "import time; time.sleep(30)"], None, None, 1, str(tmp_path))
    assert slow["error"].startswith("timed out")


def test_missing_bench_dir_is_a_one_line_error():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "mimalloc_bench.py")], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "--bench-dir DIR is required" in r.stderr
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "mimalloc_bench.py"), "--bench-dir", "/nonexistent"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "not a directory" in r.stderr


def test_a_library_the_dynamic_linker_skips_is_a_failed_run(tmp_path):
    # Before: ld.so printed a warning, the program ran on glibc, and its
    # figures were filed under the library's name.
    junk = tmp_path / "not-a-library.so"
    junk.write_text("not an ELF file\n")
    r = mb.run_once("/bin/true", [], None, str(junk), 60, str(tmp_path))
    assert r["error"] == f"{junk} was not preloaded"


def test_a_relative_libdmm_is_made_absolute_or_refused(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "mimalloc_bench.py"), "--bench-dir", str(tmp_path),
                        "--libdmm", "no/such/libdmm.so"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "--libdmm no/such/libdmm.so: no such file" in r.stderr


def test_libdmm_secure_runs_libdmm_with_its_switch_and_nothing_else_leaks(tmp_path, monkeypatch):
    monkeypatch.setenv("DMM_HARDEN", "0")          # the caller's DMM_* never reach a run
    assert mb.preload_of("libdmm-secure", "/x/libdmm.so") == "/x/libdmm.so"
    r = mb.run_once("/usr/bin/env", [], None, None, 60, str(tmp_path), mb.LIBDMM_MODES["libdmm-secure"])
    lines = r["output"].splitlines()
    assert "DMM_SECURE=1" in lines and not any(x.startswith("DMM_HARDEN") for x in lines)
    r = mb.run_once("/usr/bin/env", [], None, None, 60, str(tmp_path), mb.LIBDMM_MODES["libdmm"])
    assert not any(x.startswith("DMM_") for x in r["output"].splitlines())
