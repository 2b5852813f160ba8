"""scripts/setup.sh in two levels (issue 26 item 7), run against fake
dpkg-query / apt-get / sudo on PATH: the main level asks only for the main
job's packages, --tests adds the test-only ones, and apt is retried with a
message while another process holds its lists lock."""

from __future__ import annotations

import os
import subprocess

from conftest import ROOT

SETUP = ROOT / "scripts" / "setup.sh"

FAKE_DPKG_QUERY = """#!/bin/sh
# dpkg-query -W -f='${Status}' PKG
for last; do :; done
grep -qx "$last" "$STATE" 2>/dev/null && printf 'install ok installed' && exit 0
exit 1
"""

FAKE_APT = """#!/bin/sh
echo "apt-get $*" >> "$CALLS"
case " $* " in
*" update "*)
    n=$(cat "$LOCKED" 2>/dev/null || echo 0)
    if [ "$n" -gt 0 ]; then
        echo $((n - 1)) > "$LOCKED"
        echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)" >&2
        exit 100
    fi ;;
*" install "*)
    for a; do case "$a" in -*|install|-y|-q) ;; *=*) ;; *) echo "$a" >> "$STATE" ;; esac; done ;;
esac
exit 0
"""


def _fake(tmp_path, locked=0, installed=()):
    b = tmp_path / "bin"
    b.mkdir()
    for name, text in (("dpkg-query", FAKE_DPKG_QUERY), ("apt-get", FAKE_APT), ("sudo", '#!/bin/sh\nexec "$@"\n')):
        (b / name).write_text(text)
        (b / name).chmod(0o755)
    (tmp_path / "state").write_text("".join(p + "\n" for p in installed))
    (tmp_path / "locked").write_text(str(locked))
    return dict(os.environ, PATH=f"{b}:{os.environ['PATH']}", STATE=str(tmp_path / "state"),
                CALLS=str(tmp_path / "calls"), LOCKED=str(tmp_path / "locked"), DMM_SETUP_NO_VENV="1",
                DMM_APT_RETRY_S="0", DMM_APT_WAIT="5")


def _packages(level_tests: bool) -> list[str]:
    p = subprocess.run(["bash", "-c", f"source <(sed -n '/^MAIN_PACKAGES=(/,/^)/p;/^TEST_PACKAGES=(/,/^)/p' {SETUP});"
                        " printf '%s\\n' \"${MAIN_PACKAGES[@]}\"; echo --; printf '%s\\n' \"${TEST_PACKAGES[@]}\""],
                       capture_output=True, text=True, check=True)
    main, test = p.stdout.split("--\n")
    return main.split() + (test.split() if level_tests else [])


def test_main_level_installs_only_the_main_job_packages(tmp_path):
    env = _fake(tmp_path)
    p = subprocess.run(["bash", str(SETUP)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    got = set((tmp_path / "state").read_text().split())
    assert got == set(_packages(False))
    for test_only in ("qemu-user", "clang", "redis-server", "gcc-arm-none-eabi", "libgtest-dev"):
        assert test_only not in got
    for needed in ("cmake", "valgrind", "libjemalloc2", "libtbbmalloc2", "python3-venv", "time"):
        assert needed in got


def test_tests_level_adds_the_test_packages(tmp_path):
    env = _fake(tmp_path, installed=_packages(False))
    p = subprocess.run(["bash", str(SETUP), "--tests"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    got = set((tmp_path / "state").read_text().split())
    assert {"qemu-user", "clang", "redis-server", "gcc-arm-none-eabi"} <= got
    # nothing missing: apt is not run at all
    calls = (tmp_path / "calls").read_text()
    p = subprocess.run(["bash", str(SETUP), "--tests"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "nothing to do" in p.stdout
    assert (tmp_path / "calls").read_text() == calls


def test_apt_lists_lock_is_waited_for_with_a_message(tmp_path):
    env = _fake(tmp_path, locked=2)
    p = subprocess.run(["bash", str(SETUP)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count("another process holds apt's lock (/var/lib/apt/lists/lock") == 2, p.stdout
    assert (tmp_path / "calls").read_text().count(" update") == 3


def test_apt_lock_held_too_long_fails_with_a_message(tmp_path):
    env = _fake(tmp_path, locked=1000)
    env["DMM_APT_RETRY_S"] = "1"
    env["DMM_APT_WAIT"] = "2"
    p = subprocess.run(["bash", str(SETUP)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert "still holds apt's lock after 2 s; giving up" in p.stdout


def test_check_reports_missing_without_installing(tmp_path):
    env = _fake(tmp_path)
    p = subprocess.run(["bash", str(SETUP), "--check"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "missing packages (main job)" in p.stdout
    assert not (tmp_path / "calls").exists()
