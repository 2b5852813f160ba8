"""The report's pictures: a timeline (live bytes and footprint over the
operations) and, for a dmm heap, a heap map, from one untimed replay per
(trace, allocator).  explore.take_pictures and compare.compare_pictures both
call take() here.

Heap maps are stored compressed: dmm-replay writes every block as a JSON row
(tens of MB on a large trace), and results files keep only `blocks_z`, the
same blocks as zlib-compressed, base64-encoded little-endian int64 columns.
decode_blocks() reads both forms, so results written before this change
still render.
"""

from __future__ import annotations

import base64
import os
import shutil
import tempfile
import zlib
from dataclasses import dataclass, field

from .errors import DmmkitError
from .ui import console, progress

STATES = ("used", "free", "quick", "top", "unknown")  # codes 0..4; new states go at the end
ENCODING = "zlib-base64-int64le-columns/1"
COLUMNS = ("region", "offset_gap", "size", "state", "requested")
# the moment the report's heap maps are taken at (dmm-replay --heapmap-at)
HEAPMAP_AT = "worst-frag"


@dataclass
class Job:
    """One picture replay: `args` select the allocator (--alloc ..., --arena
    ...); `heapmap` asks for a heap map too (dmm heaps only)."""
    trace: str          # trace label
    path: str           # trace file
    key: str            # config id or allocator label
    args: list[str]
    env: dict | None = None
    heapmap: bool = False
    who: str = field(default="")  # name in notes (default: key)


def encode_blocks(blocks: list) -> dict:
    """[[region, offset, size, state, requested], ...] -> the compressed
    form.  The offset is stored as its gap to the end of the previous block
    of the same region (0 for blocks laid end to end), which compresses to
    almost nothing; a null `requested` is stored as -1."""
    import numpy as np
    n = len(blocks)
    cols = np.zeros((len(COLUMNS), n), dtype="<i8")
    end: dict[int, int] = {}
    for i, (r, off, size, state, req) in enumerate(blocks):
        cols[0, i] = r
        cols[1, i] = off - end.get(r, 0)
        cols[2, i] = size
        cols[3, i] = STATES.index(state) if state in STATES else STATES.index("unknown")
        cols[4, i] = -1 if req is None else req
        end[r] = off + size
    data = base64.b64encode(zlib.compress(cols.tobytes(), 9)).decode("ascii")
    return {"encoding": ENCODING, "columns": list(COLUMNS), "n": n, "data": data}


def decode_blocks(hm: dict | None) -> list:
    """The blocks of a heap map in either form (inline `blocks`, or
    `blocks_z`).  A damaged `blocks_z` is a DmmkitError."""
    if not hm:
        return []
    if hm.get("blocks") is not None:
        return hm["blocks"]
    z = hm.get("blocks_z")
    if not z:
        return []
    import numpy as np
    if z.get("encoding") != ENCODING:
        raise DmmkitError(f"heap map: unknown block encoding {z.get('encoding')!r} (expected {ENCODING})")
    try:
        raw = zlib.decompress(base64.b64decode(z["data"]))
        cols = np.frombuffer(raw, dtype="<i8").reshape(len(COLUMNS), int(z["n"]))
    except (ValueError, zlib.error, KeyError, TypeError) as e:
        raise DmmkitError(f"heap map: damaged compressed blocks ({e})")
    out = []
    end: dict[int, int] = {}
    for r, gap, size, st, req in cols.T.tolist():
        if not 0 <= st < len(STATES):
            raise DmmkitError(f"heap map: damaged compressed blocks (block state code {st})")
        off = end.get(r, 0) + gap
        end[r] = off + size
        out.append([r, off, size, STATES[st], None if req < 0 else req])
    return out


def compact_heapmap(hm: dict) -> dict:
    """A heap map as results keep it: every field but `blocks`, plus
    `blocks_z`."""
    out = {k: v for k, v in hm.items() if k not in ("blocks", "columns")}
    out["blocks_z"] = encode_blocks(hm.get("blocks") or [])
    return out


def take(tools, jobs: list[Job], title: str = "pictures (timeline, heap map at worst fragmentation)") -> dict:
    """One untimed replay per job, writing a timeline and (job.heapmap) a
    heap map at worst fragmentation; each file is read through the one
    loader (schemas.TIMELINE / HEAPMAP).  Returns {trace: {key: {"timeline":
    doc | None, "heapmap": compacted doc | None}}}; a job whose replay failed
    is left out, a picture that is missing or not valid is None, with a
    note."""
    from .schemas import HEAPMAP, TIMELINE
    from .tools import run
    from .validate import load_document
    out: dict = {}
    with progress() as prog:
        task = prog.add_task(title, total=len(jobs))
        for j in jobs:
            d = tempfile.mkdtemp(prefix="dmmkit-pic-")
            try:
                tl, hm = os.path.join(d, "tl.json"), os.path.join(d, "hm.json")
                cmd = [str(tools.replay), j.path, *j.args, "--no-timing", "--no-warm", "--quiet", "--timeline", tl]
                if j.heapmap:
                    cmd += ["--heapmap", hm, "--heapmap-at", HEAPMAP_AT]
                res = run(cmd, env=j.env, timeout=1800)
                entry: dict = {}
                for key, f, kind in (("timeline", tl, TIMELINE), ("heapmap", hm, HEAPMAP)):
                    entry[key] = None
                    if res.returncode == 0 and os.path.exists(f):
                        try:
                            doc = load_document(f, kind, where=f"the {key} of {j.who or j.key} on {j.trace}")[1]
                        except DmmkitError as e:
                            console.print(f"[yellow]note[/]: picture left out: {e.message}")
                            continue
                        entry[key] = compact_heapmap(doc) if key == "heapmap" else doc
                if res.returncode == 0:
                    out.setdefault(j.trace, {})[j.key] = entry
            finally:
                shutil.rmtree(d, ignore_errors=True)
            prog.advance(task)
    return out
