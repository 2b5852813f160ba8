"""dmm-config: the C library's field list, config checks and frozen headers
as the front end uses them (generate's dmm_config.h, the grid's values)."""

import json
import subprocess

import pytest

from conftest import ROOT, TOOLS_DIR
from dmmkit import grid
from dmmkit.allocators import PRESETS
from dmmkit.generate import config_tool, frozen_header

P2012 = ("org=single,sl_bits=4,exact_max=256,links=singly,order=lifo,fit=first,split=off,victim=off,split_min=0,"
         "coalesce=off,coalesce_max=0,quick_max=0,quick_limit=0,lock=none,stats=counters,harden=checked,poison=off,"
         "on_error=report,grow=0,release_empty=off,max_block_log2=0,cookie=0")


def _cfg(*args):
    return subprocess.run([str(TOOLS_DIR / "dmm-config"), *args], capture_output=True, text=True, timeout=60)


def _defines(text):
    out = {}
    for ln in text.splitlines():
        if ln.startswith("#define DMM_FROZEN_"):
            _, k, v = ln.split(None, 2)
            out[k] = v.strip()
    return out


@pytest.fixture(scope="module")
def fields(tools):
    p = _cfg("fields", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    return doc, {f["name"]: f for f in doc["fields"]}


def test_tool_found_next_to_dmm_replay(tools):
    assert config_tool(tools) == (TOOLS_DIR / "dmm-config").resolve()


@pytest.mark.parametrize("preset", PRESETS)
def test_frozen_header_matches_repository_preset(tools, preset):
    """generate's dmm_config.h defines exactly what configs/frozen/<preset>.h
    defines (both are written by the library)."""
    ok = _cfg("check", preset)
    assert ok.returncode == 0, ok.stderr
    got = frozen_header(tools, ok.stdout.strip(), preset, preset)
    ref = _defines((ROOT / "configs" / "frozen" / f"{preset}.h").read_text())
    assert _defines(got) == ref
    assert f'#define DMMGEN_CONFIG "{ok.stdout.strip()}"' in got
    assert got.startswith("#ifndef DMMGEN_CONFIG_H\n") and got.rstrip().endswith("#endif")


def test_frozen_header_of_p2012_text(tools):
    got = _defines(frozen_header(tools, P2012, "p2012", "p2012"))
    assert got["DMM_FROZEN_ORG"] == "DMM_ORG_SINGLE" and got["DMM_FROZEN_SPLIT"] == "0"
    assert len(got) == 15


def test_frozen_header_refused_config(tools):
    from dmmkit.errors import DmmkitError
    with pytest.raises(DmmkitError) as e:
        frozen_header(tools, "org=single,fit=good", "x", "x")
    assert "good fit needs segregated bins" in str(e.value)


def test_grid_values_are_the_heaps(fields):
    """grid.py chooses which values to sweep; every value it names must be
    one the heap knows (and the enums it sweeps are swept completely)."""
    doc, f = fields
    assert set(grid.ORGS) == set(f["org"]["values"])
    assert list(grid.FITS) == f["fit"]["values"]
    assert list(grid.LINKS) == f["links"]["values"]
    assert list(grid.ORDERS) == f["order"]["values"]
    assert list(grid.COALESCE) == f["coalesce"]["values"]
    assert set(grid.SPLITS) == set(f["split"]["values"])
    assert all(q <= int(f["quick_max"]["max"]) for q in grid.QUICK)
    keys = set(f)
    for spec in grid.ORGS.values():
        for part in spec.split(","):
            assert part.split("=")[0] in keys, spec
    for changes in grid.NEIGHBOURS.values():
        for ch in changes:
            for part in ch.split(","):
                k, v = part.split("=")
                assert k in keys, ch
                if "values" in f[k]:
                    assert v in f[k]["values"], ch
    assert set(grid.NEIGHBOURS) <= set(doc["presets"])
    assert list(PRESETS) == doc["presets"]


def test_fields_json_describes_every_key(fields):
    doc, f = fields
    assert doc["component"] == "heap"
    assert list(f)[:3] == ["org", "sl_bits", "exact_max"]
    assert f["org"]["default"] == "tlsf" and f["org"]["frozen"] == "fixed" and f["org"]["macro"] == "DMM_FROZEN_ORG"
    assert f["sl_bits"]["max"] == 5 and f["sl_bits"]["parse_max"] == 64
    assert f["quick_max"]["frozen"] == "onoff" and f["cookie"]["frozen"] == "runtime" and "macro" not in f["cookie"]
    frozen = {k for k, v in f.items() if v["frozen"] != "runtime"}
    assert {f[k]["macro"] for k in frozen} == set(_defines((ROOT / "configs/frozen/tlsf.h").read_text()))


def test_cli_check_format_and_errors(tools):
    p = _cfg("check", "preset=tlsf,fit=best")
    assert p.returncode == 0 and "fit=best" in p.stdout and p.stdout.startswith("org=tlsf,")
    p = _cfg("check", "org=single,fit=good")
    assert p.returncode == 1 and "good fit needs segregated bins" in p.stderr and not p.stdout
    p = _cfg("format", "org=single,fit=good")  # format reads, it does not validate
    assert p.returncode == 0 and p.stdout.startswith("org=single,")
    p = _cfg("format", "fit=sideways")
    assert p.returncode == 1 and "bad value for fit" in p.stderr
    p = _cfg("check", "jemalloc")
    assert p.returncode == 1 and "not a preset" in p.stderr and "tlsf" in p.stderr
    p = _cfg("check", "")
    assert p.returncode == 1 and "empty config text" in p.stderr
    for bad in (["nope"], ["check"], ["check", "tlsf", "extra"], ["format", "tlsf", "--name", "x"],
                ["fields"], ["header", "tlsf", "--name"], ["check", "tlsf", "--bogus"], []):
        p = _cfg(*bad)
        assert p.returncode == 2, bad
        assert p.stderr.startswith("dmm-config: ") and "--help" in p.stderr, bad
    p = _cfg("--help")
    assert p.returncode == 0 and "dmm-config header TEXT [--name NAME]" in p.stdout


def test_cli_header_compiles_into_a_frozen_heap(tools, tmp_path):
    """A header for a config no preset has, compiled into the heap."""
    p = _cfg("header", "preset=firstfit,org=single,order=size,stats=full,harden=canary,poison=on,quick_max=48",
             "--name", "custom.h")
    assert p.returncode == 0, p.stderr
    hdr = tmp_path / "custom.h"
    hdr.write_text(p.stdout)
    d = _defines(p.stdout)
    assert d["DMM_FROZEN_ORDER"] == "DMM_ORDER_SIZE" and d["DMM_FROZEN_QUICK_MAX"] == "48"
    src = tmp_path / "probe.c"
    src.write_text('#include "dmm/heap.h"\nint main(void) {\n  dmm_heap_config c = dmm_heap_preset_config('
                   'DMM_PRESET_FIRSTFIT);\n  static unsigned char buf[65536];\n  dmm_heap *h;\n'
                   '  c.org = DMM_ORG_SINGLE; c.order = DMM_ORDER_SIZE; c.stats = DMM_STATS_FULL; c.harden = DMM_HARDEN_CANARY;\n'
                   '  c.poison = 1; c.quick_max = 48;\n'
                   '  if (!dmm_heap_is_frozen() || dmm_heap_init(&h, buf, sizeof buf, &c) != DMM_OK) return 1;\n'
                   '  void *p = dmm_heap_malloc(h, 40); dmm_heap_free(h, p);\n'
                   '  c.order = DMM_ORDER_LIFO;\n'
                   '  return dmm_heap_config_check(&c, 0) == DMM_OK ? 2 : 0;\n}\n')
    import glob
    import shutil
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    sources = sorted(glob.glob(str(ROOT / "src/core/*.c")) + glob.glob(str(ROOT / "src/heap/*.c")))
    exe = tmp_path / "probe"
    b = subprocess.run([cc, "-std=c11", "-O1", f"-I{ROOT / 'include'}", f"-I{ROOT / 'src'}",
                        f'-DDMM_HEAP_CONFIG_HEADER="{hdr}"', str(src), *sources, str(ROOT / "src/port/posix.c"),
                        "-o", str(exe), "-lpthread"], capture_output=True, text=True, timeout=300)
    assert b.returncode == 0, b.stderr
    r = subprocess.run([str(exe)], capture_output=True, timeout=60)
    assert r.returncode == 0, "frozen heap refused its own config (1) or accepted another order (2)"
