"""scripts/spm_cycles.py - the scratchpad heap's cycle model (docs/spm.md, "The cycle model").

One model of an execution core (an SPE) for every figure of scripts/spm_bench.py:

* every instruction the core executes for the program and for the library
  costs one cycle; instructions are counted by callgrind (deterministic),
  collected only inside the program body (`prog_main`, bench/spm/harness.c)
  and, in dynamic mode, inside the manager thread's loop
  (`dmm_spm_global_serve`, src/spm/global.c), of which only its work on a
  request (`do_alloc`, `do_free`) is used;
* the host port's DMA emulation (hp_get/hp_put/hp_wait/hp_clock/hp_mailbox,
  src/spm/hostport.c: the memcpy that stands in for the transfer and the
  cost model's own arithmetic) is NOT counted: the transfers are charged by
  the cost model instead (issue + latency + bytes / bandwidth per transfer,
  mailbox_word per mailbox word; the port's `cycles`);
* dynamic mode: the core's side of a manager round trip
  (dmm_spm_global_alloc/free: mailbox writes and blocking waits on the host's
  mutex and conditions) is emulation too, charged as mailbox words; the
  manager's work for the request (do_alloc/do_free under serve_one), which
  the core waits for, is counted (the manager's own mailbox emulation is not).  Static mode: the core carves its own
  slice, so dmm_spm_global_alloc/free are the core's own instructions.

total      = body - dma_emulation - mailbox_emulation + manager_service + dma_cycles
management = api  - dma_emulation - mailbox_emulation + manager_service + dma_cycles

where body is the program body's inclusive instruction count, api the
inclusive count of the calls into the management functions from outside them
(dmm_spm_malloc/calloc/realloc/free/p2s/p2s_ro/p2s_part/p2s_part_ro/s2p/pin/unpin, or the cache's
dmm_swc_*), and dma_cycles the cost model's cycles charged inside them.  Every
transfer and mailbox word happens inside a management function, so the
emulation subtracted from the body is the same subtracted from api.  The
paper's Table II metric is management / total; the slowdown is total over the
unmanaged program's total (its body: no emulation, no transfers).
"""
from __future__ import annotations

import os
import subprocess
from collections import defaultdict

API = {
    "spm": {"dmm_spm_malloc", "dmm_spm_calloc", "dmm_spm_realloc", "dmm_spm_free", "dmm_spm_p2s",
            "dmm_spm_p2s_ro", "dmm_spm_p2s_part", "dmm_spm_p2s_part_ro", "dmm_spm_s2p", "dmm_spm_pin",
            "dmm_spm_unpin"},
    "swc": {"dmm_swc_malloc", "dmm_swc_calloc", "dmm_swc_realloc", "dmm_swc_free", "dmm_swc_read",
            "dmm_swc_write", "dmm_swc_map"},
    "raw": set(),
}
PORT = {"hp_get", "hp_put", "hp_wait", "hp_clock", "hp_mailbox"}
MAILBOX = {"dmm_spm_global_alloc", "dmm_spm_global_free"}
SERVICE = {"do_alloc", "do_free"}   # src/spm/global.c (spm.c has its own do_free: callers tell them apart)
MANAGER = "dmm_spm_global_serve"      # the manager loop (a compiler may split it: .part.N)
MANAGER_THREAD = "manager_main"       # its thread function (src/spm/global.c): collection is toggled there
BODY = "prog_main"


class Profile:
    """Call edges of one callgrind output: (caller, callee) -> inclusive Ir."""

    def __init__(self):
        self.edges = defaultdict(int)
        self.self_ir = defaultdict(int)
        self.totals = 0

    def into(self, callees, exclude_callers=()):
        return sum(c for (a, b), c in self.edges.items() if b in callees and a not in exclude_callers)

    def edge(self, callers, callees):
        return sum(c for (a, b), c in self.edges.items() if a in callers and b in callees)


def parse_callgrind(text: str) -> Profile:
    """Reads callgrind's output format (one event, Ir; name compression
    `fn=(id) name` / `fn=(id)`)."""
    p = Profile()
    names = {}

    def name(v):
        v = v.strip()
        if v.startswith("("):
            close = v.index(")")
            key, rest = v[1:close], v[close + 1:].strip()
            if rest:
                names[key] = rest
            return names.get(key, "?")
        return v

    fn = cfn = None
    call = False
    for line in text.splitlines():
        if not line:
            continue
        c0 = line[0]
        if c0.isdigit() or c0 in "+-*":
            toks = line.split()
            if len(toks) < 2:
                continue
            ir = int(toks[1])
            if call:
                p.edges[(fn, cfn)] += ir
                call = False
            else:
                p.self_ir[fn] += ir
        elif line.startswith("fn="):
            fn = name(line[3:])
        elif line.startswith("cfn="):
            cfn = name(line[4:])
        elif line.startswith("calls="):
            call = True
        elif line.startswith("totals:") or line.startswith("summary:"):
            p.totals = int(line.split()[1])
    return p


def model(prof: Profile, backend: str, dma_cycles: int, dynamic: bool, body_fn: str = BODY) -> dict:
    """The cycle model's arithmetic (module docstring); every figure in cycles.
    body_fn: the program body (prog_main in bench/spm; spmcc_user_main in a
    program rewritten by dmm-spmcc)."""
    api = API[backend]
    body = prof.into({body_fn})
    dma_emul = prof.into(PORT)
    mbox_emul = prof.into(MAILBOX, exclude_callers=MAILBOX) if dynamic else 0
    service = sum(c for (a, b), c in prof.edges.items()
                  if a is not None and a.split(".")[0] == MANAGER and b.split(".")[0] in SERVICE) if dynamic else 0
    api_ir = prof.into(api, exclude_callers=api)
    total = body - dma_emul - mbox_emul + service + dma_cycles
    mgmt = (api_ir - dma_emul - mbox_emul + service + dma_cycles) if api else 0
    return {"body_instructions": body, "dma_emulation_instructions": dma_emul,
            "mailbox_emulation_instructions": mbox_emul, "manager_service_instructions": service,
            "management_instructions": api_ir, "dma_and_mailbox_cycles": dma_cycles,
            "total_cycles": total, "management_cycles": mgmt,
            "management_share": (mgmt / total) if total else 0.0,
            "breakdown": breakdown(prof, backend)}


# Where the management instructions go (docs/spm.md, "The cycle model"):
# inclusive instructions under internal functions of src/spm/spm.c, entered
# from outside the group.  They nest (the miss path holds the table walk,
# the local allocation and the eviction) and hold the host port's emulation
# called beneath them, so they are "of which" figures, not a partition.
INTERNAL = {
    "miss_path": {"p2s_miss"},        # a p2s/p2s_ro that neither the hit path's entries nor the translation cache (asked inline) answer: lookup, make resident, fill caches
    "table_walk": {"lookup"},         # segment header, table page and entry of an address
    "eviction": {"evict_core"},       # write back (dirty) and give back a resident unit
}


def breakdown(prof: Profile, backend: str) -> dict:
    """Inclusive instructions of each management function (calls from
    outside the API) and of the internal groups of INTERNAL, plus the local
    allocator (calls into dmm_heap_* from the scratchpad heap's own code: the
    first-fit heap that holds the resident copies).  Emulation beneath them
    is included (it is reported separately by model())."""
    api = API[backend]
    out = {"by_function": {f: prof.into({f}, exclude_callers=api) for f in sorted(api)}}
    for k, names in INTERNAL.items():
        out[k] = prof.into(names, exclude_callers=names)
    out["local_allocation"] = sum(c for (a, b), c in prof.edges.items()
                                  if b and b.startswith("dmm_heap_") and a and not a.startswith("dmm_heap_")
                                  and a not in (BODY, "spmcc_user_main"))
    return out


def callgrind(cmd: list[str], out: str, dynamic: bool, body_fn: str = BODY, env=None) -> Profile:
    """Runs cmd under callgrind, collecting only inside the program body and,
    in dynamic mode, inside the manager thread's loop (of which the model
    takes only the calls into do_alloc / do_free).  Returns its call edges."""
    vg = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, "--collect-atstart=no",
          "--toggle-collect=" + body_fn, "--dump-instr=no", "--compress-pos=no"]
    if dynamic:
        vg += ["--toggle-collect=" + MANAGER_THREAD]
    r = subprocess.run(vg + cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError("callgrind run failed (%d): %s\n%s" % (r.returncode, " ".join(cmd), r.stderr[-600:]))
    with open(out) as f:
        prof = parse_callgrind(f.read())
    os.unlink(out)
    prof.stderr = r.stderr
    return prof
