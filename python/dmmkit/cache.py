"""A cache of deterministic measurements.

Key: (trace content hash, normalised heap config, build id = hash of the
dmm-replay binary, and the measurement settings).  Deterministic figures do
not change while these stay the same, so a re-run of `explore` reads them
back instead of measuring.  Timing figures are never cached.

Layout: DIR/det/<build id>/<trace sha256[:16]>/<sha1 of config+settings>.json,
each file holding the key fields next to the figures (written atomically).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path


class Cache:
    def __init__(self, root: str | os.PathLike | None, enabled: bool = True):
        self.root = Path(root) if root else None
        self.enabled = enabled and self.root is not None
        self.hits = 0
        self.misses = 0

    def _path(self, trace_sha: str, config: str, build_id: str, settings: str) -> Path:
        h = hashlib.sha1((config + "\n" + settings).encode()).hexdigest()[:24]
        return self.root / "det" / build_id / trace_sha[:16] / f"{h}.json"

    def get(self, trace_sha: str, config: str, build_id: str, settings: str) -> dict | None:
        if not self.enabled:
            return None
        p = self._path(trace_sha, config, build_id, settings)
        try:
            with open(p) as f:
                d = json.load(f)
        except (OSError, ValueError):
            self.misses += 1
            return None
        k = d.get("key") or {}
        if k.get("trace_sha256") != trace_sha or k.get("config") != config or k.get("build_id") != build_id \
                or k.get("settings") != settings:
            self.misses += 1
            return None
        self.hits += 1
        return d.get("figures")

    def put(self, trace_sha: str, config: str, build_id: str, settings: str, figures: dict) -> None:
        if not self.enabled:
            return
        p = self._path(trace_sha, config, build_id, settings)
        p.parent.mkdir(parents=True, exist_ok=True)
        doc = {"key": {"trace_sha256": trace_sha, "config": config, "build_id": build_id, "settings": settings},
               "figures": figures}
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(doc, f)
            os.replace(tmp, p)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise


def _umask() -> int:
    m = os.umask(0o022)
    os.umask(m)
    return m


def write_json_atomic(path: str | os.PathLike, doc: dict) -> None:
    p = Path(path)
    if p.exists() and not p.is_file():
        # /dev/null, a FIFO: written in place; a temporary file renamed over
        # it would replace the device with a plain file
        with open(p, "w") as f:
            json.dump(doc, f, indent=1, allow_nan=False, default=_json_default)
            f.write("\n")
        return
    if p.parent and not p.parent.exists():
        p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent if str(p.parent) else ".", prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=1, allow_nan=False, default=_json_default)
            f.write("\n")
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600; a result file is read by others
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _json_default(o):
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def clean_nans(x):
    """NaN/inf -> None, recursively (JSON has no NaN)."""
    import math
    if isinstance(x, float):
        return None if (math.isnan(x) or math.isinf(x)) else x
    if isinstance(x, dict):
        return {k: clean_nans(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean_nans(v) for v in x]
    return x
