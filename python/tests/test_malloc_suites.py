"""bench/malloc/glibc_tests.sh and bench/malloc/test_stress.sh (docs/malloc.md
"Checked against other projects' suites"), without glibc's or mimalloc's
sources: each refuses a missing, foreign or absent source directory with a
one-line usage error and writes nothing; the stand-in for glibc's test
driver (bench/malloc/glibc_support) turns a failed check, a failure in a
forked child, an unsupported feature, a wrong signal and a hang into the
exit statuses glibc's driver gives; suite_report.py counts what it is given."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPTS = [ROOT / "bench" / "malloc" / "glibc_tests.sh", ROOT / "bench" / "malloc" / "test_stress.sh"]
SUPPORT = ROOT / "bench" / "malloc" / "glibc_support"


def _run(script, *args):
    return subprocess.run(["bash", str(script), *map(str, args)], capture_output=True, text=True, timeout=60,
                          cwd=ROOT)


def _one_line_usage(proc):
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "usage: bench/malloc/" in lines[0]
    assert proc.stdout == ""


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_no_argument_is_a_usage_error(script):
    _one_line_usage(_run(script))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_missing_directory_is_a_usage_error_and_writes_nothing(script, tmp_path):
    out = tmp_path / "out"
    proc = _run(script, tmp_path / "no-such-dir", out)
    _one_line_usage(proc)
    assert "no such directory" in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_foreign_tree_is_refused_and_writes_nothing(script, tmp_path):
    # a directory with sources, but not glibc's / mimalloc's: this repository's bench/
    out = tmp_path / "out"
    proc = _run(script, ROOT / "bench", out)
    _one_line_usage(proc)
    assert "is not a" in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_foreign_bare_git_directory_is_refused(script, tmp_path):
    if shutil.which("git") is None:
        pytest.skip("no git")
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    out = tmp_path / "out"
    proc = _run(script, bare, out)
    _one_line_usage(proc)
    assert not out.exists()


# -- the stand-in for glibc's test driver -------------------------------------------------------

PROGRAM = r"""
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include <support/check.h>
#include <support/support.h>
#include <support/xunistd.h>
#include <libc-diag.h>
#ifdef WANT_TIMEOUT
#define TIMEOUT 1
#endif
static int do_test (void)
{
  int *p = xmalloc (sizeof *p);
  *p = 1;
  TEST_VERIFY_EXIT (p != NULL);
  TEST_COMPARE (*p, 1);
#ifdef WANT_VERIFY
  TEST_VERIFY (*p == 2);            /* counted, the test goes on */
  write_message ("went on\n");
#endif
#ifdef WANT_COMPARE_SIGN
  TEST_COMPARE (-1, SIZE_MAX);      /* equal bits, different values */
#endif
#ifdef WANT_CHILD
  pid_t pid = xfork ();
  if (pid == 0)
    {
      TEST_VERIFY (0);              /* counted in the child */
      _exit (0);
    }
  int status;
  xwaitpid (pid, &status, 0);
#endif
#ifdef WANT_UNSUPPORTED
  FAIL_UNSUPPORTED ("no such feature");
#endif
#ifdef WANT_SIGNAL
  raise (SIGSEGV);
#endif
#ifdef WANT_TIMEOUT
  for (;;)
    pause ();
#endif
#ifdef WANT_RETURN
  return 3;
#endif
  free (p);
  return 0;
}
#include <support/test-driver.c>
"""


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory):
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("glibc_support")
    (d / "t.c").write_text(PROGRAM)
    flags = ["-std=gnu11", "-O1", "-D_GNU_SOURCE", "-include", str(SUPPORT / "internal.h"), f"-I{SUPPORT}"]
    subprocess.run([cc, *flags, "-c", str(SUPPORT / "support.c"), "-o", str(d / "support.o")], check=True)

    def build(define=None):
        exe = d / (define or "plain")
        extra = [f"-D{define}"] if define else []
        subprocess.run([cc, *flags, *extra, str(d / "t.c"), str(d / "support.o"), "-o", str(exe), "-lpthread"],
                       check=True)
        return exe
    return build


def _status(exe):
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=30)
    return proc.returncode, proc.stdout


def test_driver_passes_a_passing_test(stand_in):
    assert _status(stand_in())[0] == 0


def test_driver_failed_check_goes_on_and_fails(stand_in):
    rc, out = _status(stand_in("WANT_VERIFY"))
    assert rc == 1
    assert "not true: *p == 2" in out and "went on" in out


def test_driver_compare_sees_the_sign(stand_in):
    rc, out = _status(stand_in("WANT_COMPARE_SIGN"))
    assert rc == 1 and "-1" in out


def test_driver_counts_a_failure_in_a_forked_child(stand_in):
    assert _status(stand_in("WANT_CHILD"))[0] == 1


def test_driver_unsupported_is_77(stand_in):
    assert _status(stand_in("WANT_UNSUPPORTED"))[0] == 77


def test_driver_unexpected_signal_fails(stand_in):
    rc, out = _status(stand_in("WANT_SIGNAL"))
    assert rc == 1 and "Didn't expect signal" in out


def test_driver_return_value_is_the_status(stand_in):
    assert _status(stand_in("WANT_RETURN"))[0] == 3


def test_driver_kills_a_hung_test(stand_in):
    rc, out = _status(stand_in("WANT_TIMEOUT"))
    assert rc == 1 and "Timed out: killed the child process" in out


# -- the report -----------------------------------------------------------------------------------

def test_report_counts_per_mode_and_names_glibc_failures(tmp_path):
    rows = tmp_path / "rows"
    rows.write_text("\n".join([
        "tst-a\tglibc\tpass\t0.1\texit 0: ", "tst-a\tlibdmm\tpass\t0.2\texit 0: ",
        "tst-a\tlibdmm-secure\ttimeout\t300.0\texit 124: ",
        "tst-b\tglibc\tfail\t0.0\texit 1: error: x", "tst-b\tlibdmm\tpass\t0.0\texit 0: ",
        "tst-b\tlibdmm-secure\tunsupported\t0.0\texit 77: ",
        "tst-c\t-\tnot-built\t0\tundefined reference to foo", ""]))
    prov = json.dumps({"command": "x", "commit": "y", "date": "z", "cpu": "w"})
    subprocess.run([sys.executable, str(ROOT / "bench" / "malloc" / "suite_report.py"), "glibc_tests", str(rows),
                    str(tmp_path), "abc123", prov, "Command: `x`\nCommit y\nCPU: w", "glibc 2.36"], check=True,
                   capture_output=True)
    doc = json.loads((tmp_path / "libdmm_glibc_tests.json").read_text())
    s = {r["allocator"]: r for r in doc["summary"]}
    assert (s["glibc"]["passed"], s["glibc"]["fail"], s["glibc"]["not_built"]) == (1, 1, 1)
    assert (s["libdmm"]["passed"], s["libdmm"]["not_built"]) == (2, 1)
    assert (s["libdmm-secure"]["passed"], s["libdmm-secure"]["timeout"], s["libdmm-secure"]["unsupported"]) == (0, 1, 1)
    assert doc["failing_under_glibc"] == ["tst-b"] and doc["source_commit"] == "abc123"
    md = (tmp_path / "libdmm_glibc_tests.md").read_text()
    assert "`tst-c`: not-built: undefined reference to foo" in md
    assert "| tst-a | pass (0.1 s) | pass (0.2 s) | timeout (300.0 s) |" in md
