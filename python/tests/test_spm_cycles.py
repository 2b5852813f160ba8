"""The scratchpad heap's cycle model (scripts/spm_cycles.py, docs/spm.md "The
cycle model"): the callgrind reader and the arithmetic, checked exactly on a
hand-made profile."""

import importlib.util
import sys

from conftest import ROOT

_spec = importlib.util.spec_from_file_location("spm_cycles", ROOT / "scripts" / "spm_cycles.py")
sc = importlib.util.module_from_spec(_spec)
sys.modules["spm_cycles"] = sc
_spec.loader.exec_module(sc)

# A core thread: core_main -> prog_main (1,000,000 inclusive), whose program
# calls dmm_spm_p2s (400,000) and dmm_spm_malloc (100,000); p2s's fetch goes
# through hp_get (150,000: the emulating memcpy), malloc's segment request
# through dmm_spm_global_alloc (20,000: mailbox emulation); the manager
# thread's loop spends 7,000 in do_alloc and 9,000 in its mutex waits.
PROFILE = """# callgrind format
version: 1
events: Ir
fn=(1) core_main
cfn=(2) prog_main
calls=1 0
12 1000000
fn=(2)
5 330000
cfn=(3) dmm_spm_p2s
calls=900 0
7 400000
cfn=(4) dmm_spm_malloc
calls=10 0
8 100000
cfn=(6) memcpy
calls=3 0
9 170000
fn=(3)
3 100000
cfn=(5) p2s_slow
calls=50 0
4 300000
fn=(5)
cfn=(7) hp_get
calls=50 0
2 150000
fn=(4)
cfn=(8) dmm_spm_global_alloc
calls=2 0
6 20000
cfn=(9) dmm_spm_p2s
calls=1 0
6 1000
fn=(10) dmm_spm_global_serve.part.0
cfn=(11) do_alloc
calls=2 0
40 7000
cfn=(12) dmm_port_cond_wait
calls=9 0
41 9000
totals: 1016000
"""


def test_reader_sums_call_edges_and_keeps_names():
    p = sc.parse_callgrind(PROFILE)
    assert p.totals == 1016000
    assert p.edges[("core_main", "prog_main")] == 1000000
    assert p.edges[("prog_main", "dmm_spm_p2s")] == 400000
    assert p.edges[("p2s_slow", "hp_get")] == 150000
    assert p.edges[("dmm_spm_malloc", "dmm_spm_p2s")] == 1000   # a name given once by id, reused
    assert p.self_ir["prog_main"] == 330000


def test_dynamic_model_arithmetic():
    m = sc.model(sc.parse_callgrind(PROFILE), "spm", dma_cycles=80000, dynamic=True)
    assert m["body_instructions"] == 1000000
    assert m["dma_emulation_instructions"] == 150000
    assert m["mailbox_emulation_instructions"] == 20000
    assert m["manager_service_instructions"] == 7000          # the waits are not the manager's work
    # calls into the API from outside it: 400,000 + 100,000 (malloc's inner p2s is inside malloc)
    assert m["management_instructions"] == 500000
    assert m["total_cycles"] == 1000000 - 150000 - 20000 + 7000 + 80000
    assert m["management_cycles"] == 500000 - 150000 - 20000 + 7000 + 80000
    assert m["management_share"] == 417000 / 917000


def test_static_model_counts_the_cores_own_allocation():
    m = sc.model(sc.parse_callgrind(PROFILE), "spm", dma_cycles=80000, dynamic=False)
    assert m["mailbox_emulation_instructions"] == 0 and m["manager_service_instructions"] == 0
    assert m["total_cycles"] == 1000000 - 150000 + 80000
    assert m["management_cycles"] == 500000 - 150000 + 80000


def test_unmanaged_program_is_its_body():
    m = sc.model(sc.parse_callgrind(PROFILE), "raw", dma_cycles=0, dynamic=False)
    assert m["management_cycles"] == 0 and m["management_share"] == 0.0
    assert m["total_cycles"] == 1000000 - 150000   # the same arithmetic (a real raw run makes no port calls)


def test_breakdown_by_function_and_internal_group():
    # the profile above plus a second path into the table walk and the local heap
    extra = PROFILE.replace("totals: 1016000", """fn=(5)
cfn=(13) lookup
calls=50 0
5 60000
fn=(13)
cfn=(14) lookup
calls=3 0
6 500
fn=(5)
cfn=(15) dmm_heap_aligned_alloc
calls=4 0
7 8000
fn=(15)
cfn=(16) dmm_heap_free
calls=1 0
8 300
fn=(2)
cfn=(16)
calls=1 0
9 40
totals: 1016000""")
    b = sc.breakdown(sc.parse_callgrind(extra), "spm")
    assert b["by_function"]["dmm_spm_p2s"] == 400000          # from the program; malloc's inner p2s is malloc's
    assert b["by_function"]["dmm_spm_malloc"] == 100000
    assert b["by_function"]["dmm_spm_s2p"] == 0
    assert b["table_walk"] == 60000                           # the recursive call is inside it
    assert b["miss_path"] == 0                                # no p2s_miss in this profile
    # dmm_heap_* from the heap's own code; the heap's inner call and the program's own call are not counted
    assert b["local_allocation"] == 8000
    assert sc.model(sc.parse_callgrind(extra), "spm", 0, False)["breakdown"] == b


# The pass's element translations (dmm_spm_p2s_part, _ro) are management
# functions (they were left out of the count before): core_main -> prog_main
# (100,000 inclusive), which calls p2s_part (30,000) and
# p2s_part_ro (20,000), p2s_part's piece fetch through hp_get (5,000).
PART_PROFILE = """# callgrind format
version: 1
events: Ir
fn=(9) core_main
cfn=(1) prog_main
calls=1 0
2 100000
fn=(1)
5 50000
cfn=(2) dmm_spm_p2s_part
calls=40 0
6 30000
cfn=(3) dmm_spm_p2s_part_ro
calls=20 0
7 20000
fn=(2)
3 25000
cfn=(4) hp_get
calls=2 0
4 5000
fn=(3)
3 20000
totals: 100000
"""


def test_element_translations_are_management():
    m = sc.model(sc.parse_callgrind(PART_PROFILE), "spm", dma_cycles=1000, dynamic=False)
    assert m["management_instructions"] == 50000
    assert m["total_cycles"] == 100000 - 5000 + 1000
    assert m["management_cycles"] == 50000 - 5000 + 1000
    b = sc.breakdown(sc.parse_callgrind(PART_PROFILE), "spm")
    assert b["by_function"]["dmm_spm_p2s_part"] == 30000
    assert b["by_function"]["dmm_spm_p2s_part_ro"] == 20000
