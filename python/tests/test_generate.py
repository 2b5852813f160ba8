"""generate: the files, the build, the .so replaying traces under LD_PRELOAD
with --verify, real programs on the .so, and a failed build."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, TOOLS_DIR, load, run_cli


@pytest.fixture(scope="session")
def generated(work, tiny_trace, explore_results):
    out = work / "gen"
    p = run_cli(["generate", "best", "--results", str(explore_results[0]), "-o", str(out), "--trace",
                 str(tiny_trace)], cwd=work)
    assert p.returncode == 0, p.stdout + p.stderr
    return out, p


def test_generate_files_and_check(generated, explore_results):
    out, p = generated
    e = load(explore_results[0])
    best = {c["id"]: c for c in e["configs"]}[e["best"]]
    for f in ("dmm_config.h", "dmm_config_malloc.h", "dmm_malloc_shim.c", "CMakeLists.txt", "README.md",
              "build/libdmmgen.a", "build/libdmmgen_malloc.so", "dmm/include/dmm/heap.h", "dmm/src/heap/heap.c"):
        assert (out / f).exists(), f
    hdr = (out / "dmm_config.h").read_text()
    assert f'#define DMMGEN_CONFIG "{best["config"]}"' in hdr
    assert "#define DMM_FROZEN_ORG" in hdr
    info = json.loads((out / "generate.json").read_text())
    rows = info["check"]["rows"]
    assert info["check"]["agree"]
    assert rows[0]["took_effect"] and rows[0]["verify"] == "pass" and rows[1]["verify"] == "pass"
    assert rows[0]["failed"] == rows[1]["failed"] == 0
    assert "match" in p.stdout
    readme = (out / "README.md").read_text()
    assert best["config"] in readme and "LD_PRELOAD" in readme


def _replay(so, trace, *extra):
    env = dict(os.environ, LD_PRELOAD=str(so))
    return subprocess.run([str(TOOLS_DIR / "dmm-replay"), str(trace), "--alloc", "system", "--verify", "--json", "-",
                           "--quiet", *extra], env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("trace", ["bench/traces/matmul.trace", "bench/traces/larson.trace",
                                   "tests/replay/data/mt.txt"])
def test_so_replays_bundled_traces_with_verify(generated, trace):
    """Single- and multi-threaded traces through the .so: verify passes, no
    failures, and malloc really resolves to the generated library."""
    so = generated[0] / "build" / "libdmmgen_malloc.so"
    path = ROOT / trace
    if not path.exists():
        pytest.skip(f"{trace} not present")
    p = _replay(so, path, "--reps", "2")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["verify"] == "pass" and d["failed"] == 0
    assert os.path.realpath(d["allocator"]["malloc_object"]) == os.path.realpath(so)


def test_real_programs_on_the_so(generated, work):
    so = generated[0] / "build" / "libdmmgen_malloc.so"
    env = dict(os.environ, LD_PRELOAD=str(so), PYTHONMALLOC="malloc")
    code = ("import threading, json\n"
            "def work(n):\n"
            "    s = 0\n"
            "    for i in range(3000):\n"
            "        s += len(json.dumps({'k': list(range(i % 50)), 'n': n}))\n"
            "    return s\n"
            "ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]\n"
            "[t.start() for t in ts]; [t.join() for t in ts]\n"
            "import ctypes; libc = ctypes.CDLL(None)\n"
            "libc.malloc.restype = ctypes.c_void_p\n"
            "p = libc.malloc(100); libc.free(ctypes.c_void_p(p))\n"
            "print('ok', work(9))\n")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.startswith("ok"), p.stderr
    for cmd in (["sort", "--version"], ["ls", "-l", str(ROOT / "src")]):
        if shutil.which(cmd[0]):
            q = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
            assert q.returncode == 0, (cmd, q.stderr)


def test_so_malloc_family_semantics(generated, work):
    """aligned allocations, calloc overflow, errno, realloc(p, 0), usable size."""
    so = generated[0] / "build" / "libdmmgen_malloc.so"
    src = work / "family.c"
    src.write_text(r'''
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(void) {
    void *p = NULL; int bad = 0;
    if (posix_memalign(&p, 256, 100) || ((uintptr_t)p & 255)) bad |= 1;
    free(p);
    if (posix_memalign(&p, 24, 100) != EINVAL) bad |= 2;
    p = aligned_alloc(64, 128); if (!p || ((uintptr_t)p & 63)) bad |= 4; free(p);
    p = memalign(4096, 10); if (!p || ((uintptr_t)p & 4095)) bad |= 8; free(p);
    p = valloc(1); if (!p || ((uintptr_t)p % sysconf(_SC_PAGESIZE))) bad |= 16; free(p);
    p = pvalloc(1); if (!p || malloc_usable_size(p) < (size_t)sysconf(_SC_PAGESIZE)) bad |= 32; free(p);
    errno = 0; if (calloc(SIZE_MAX / 2, 4) != NULL || errno != ENOMEM) bad |= 64;
    errno = 0; if (malloc(SIZE_MAX - 8) != NULL || errno != ENOMEM) bad |= 128;
    char *c = calloc(100, 10); for (int i = 0; i < 1000; i++) if (c[i]) bad |= 256;
    c = realloc(c, 5000); if (!c || malloc_usable_size(c) < 5000) bad |= 512;
    errno = 1234; free(c); if (errno != 1234) bad |= 1024;
    p = malloc(10); if (realloc(p, 0) != NULL) bad |= 2048;
    void *big = malloc(64 << 20); if (!big) bad |= 4096; memset(big, 1, 64 << 20); free(big);
    p = reallocarray(NULL, SIZE_MAX / 2, 4); if (p || errno != ENOMEM) bad |= 8192;
    struct mallinfo2 mi = mallinfo2(); if (mi.arena == 0) bad |= 16384;
    printf("%d\n", bad);
    return bad != 0;
}
''')
    exe = work / "family"
    cc = shutil.which("cc") or shutil.which("gcc")
    subprocess.run([cc, "-O1", "-o", str(exe), str(src)], check=True)
    p = subprocess.run([str(exe)], env=dict(os.environ, LD_PRELOAD=str(so)), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "0", p.stdout + p.stderr


def test_generate_failed_build(work, tiny_trace):
    out = work / "gen-broken"
    p = run_cli(["generate", "tlsf", "-o", str(out), "--cc", "/bin/false"], cwd=work)
    assert p.returncode == 1
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and "build failed" in err[0] and "build.log" in err[0], p.stderr
    assert (out / "dmm_config.h").is_file() and (out / "build.log").is_file()


def test_generate_refused_and_unknown(work, explore_results):
    p = run_cli(["generate", "org=single,fit=good", "-o", str(work / "g3")])
    assert p.returncode == 2 and "refused by the heap" in p.stderr and "good fit" in p.stderr
    p = run_cli(["generate", "no-such-id", "--results", str(explore_results[0]), "-o", str(work / "g4")])
    assert p.returncode == 2 and "no configuration 'no-such-id'" in p.stderr
