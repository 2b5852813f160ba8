"""The allocators a comparison can run: dmm heap configurations, the system
allocators installed on the machine (through LD_PRELOAD) and any malloc
`.so` the user names (`--peer NAME=/path/lib.so`)."""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import DmmkitError

# name -> (shared objects to preload, in order of preference; Debian package)
SYSTEM_ALLOCATORS: dict[str, tuple[tuple[str, ...], str]] = {
    "glibc": ((), "libc6"),
    "jemalloc": (("libjemalloc.so.2", "libjemalloc.so"), "libjemalloc2"),
    "mimalloc": (("libmimalloc.so.2", "libmimalloc.so"), "libmimalloc2.0"),
    "tcmalloc": (("libtcmalloc_minimal.so.4", "libtcmalloc.so.4", "libtcmalloc_minimal.so"), "libtcmalloc-minimal4"),
    # the proxy is the library that replaces malloc; libtbbmalloc.so.2 alone
    # only provides scalable_malloc
    "tbbmalloc": (("libtbbmalloc_proxy.so.2", "libtbbmalloc_proxy.so"), "libtbbmalloc2"),
}

PRESETS = ("dlmalloc", "tlsf", "halffit", "firstfit", "p2012")

# dmmkit's own drop-in malloc (src/malloc/, docs/malloc.md): not a Debian
# package but a library built (or installed) with the native tools.
LIBDMM = "libdmm"
LIBDMM_FILE = "libdmm.so"


def library_dirs() -> list[Path]:
    """Directories searched for system allocators: only those of
    $DMMKIT_LIB_PATH (colon-separated) when it is set, else the multiarch
    and usual library directories (and then the ldconfig cache)."""
    dirs: list[Path] = []
    env = os.environ.get("DMMKIT_LIB_PATH")
    if env is not None:
        return [Path(p) for p in env.split(":") if p]
    machine = platform.machine() or "x86_64"
    for d in (f"/usr/lib/{machine}-linux-gnu", f"/lib/{machine}-linux-gnu", "/usr/lib64", "/usr/lib",
              "/usr/local/lib", "/lib64", "/lib"):
        p = Path(d)
        if p not in dirs:
            dirs.append(p)
    return dirs


def _ldconfig_lookup(name: str) -> Path | None:
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for ln in out.splitlines():
        ln = ln.strip()
        if ln.startswith(name + " ") and "=>" in ln:
            p = Path(ln.split("=>", 1)[1].strip())
            if p.is_file():
                return p
    return None


def find_system_library(name: str) -> tuple[Path | None, list[str]]:
    """(path, every place looked at) for a system allocator's preload
    library."""
    libs, _pkg = SYSTEM_ALLOCATORS[name]
    looked: list[str] = []
    for lib in libs:
        for d in library_dirs():
            p = d / lib
            looked.append(str(p))
            if p.is_file():
                return p, looked
    if os.environ.get("DMMKIT_LIB_PATH") is not None:
        return None, looked
    for lib in libs:
        p = _ldconfig_lookup(lib)
        looked.append(f"ldconfig -p ({lib})")
        if p:
            return p, looked
    return None, looked


def libdmm_candidates(tools_dir: str | os.PathLike | None = None) -> list[Path]:
    """Where libdmm.so is looked for, in order: $DMMKIT_LIBDMM (only that
    file when set); else the library directories beside the native tools
    (TOOLS/../lib, ../lib64, ../lib/<multiarch>: a build tree's lib/ or an
    install prefix's), then TOOLS itself; then the release and debug build
    trees of the source checkout.  tools_dir None: the tools are found as
    every command finds them (dmmkit.tools.find_tools)."""
    env = os.environ.get("DMMKIT_LIBDMM")
    if env:
        return [Path(env)]
    from .tools import BUILD_SUBDIRS, _lib_dirs, find_root, find_tools
    out: list[Path] = []
    d: Path | None = Path(tools_dir) if tools_dir else None
    if d is None:
        try:
            d = find_tools().replay.parent
        except DmmkitError:
            d = None
    if d is not None:
        out.extend(x / LIBDMM_FILE for x in (*_lib_dirs(d.parent), d))
    root = find_root()
    if root is not None:
        out.extend(root / b / "lib" / LIBDMM_FILE for b in BUILD_SUBDIRS)
    uniq: list[Path] = []
    for p in out:
        if p not in uniq:
            uniq.append(p)
    return uniq


def find_libdmm(tools_dir: str | os.PathLike | None = None) -> tuple[Path | None, list[str]]:
    """(path of libdmm.so, every place looked at)."""
    looked: list[str] = []
    for p in libdmm_candidates(tools_dir):
        looked.append(str(p))
        if p.is_file():
            return p.resolve(), looked
    return None, looked


@dataclass
class Allocator:
    label: str                 # as shown in tables ("glibc", "dmm:tlsf", peer name)
    kind: str                  # "dmm", "pool", "multiheap", "system", "peer"
    spec: str | None = None    # dmm config text (after "dmm:"), pool spec (after "pool:"), multiheap spec
    lib: Path | None = None    # LD_PRELOAD library
    expect: str | None = None  # dmm-replay --expect NAME

    def replay_args(self) -> list[str]:
        if self.kind == "dmm":
            return ["--alloc", "dmm:" + (self.spec or "")]
        if self.kind == "pool":
            return ["--alloc", "pool:" + (self.spec or "")]
        if self.kind == "multiheap":
            return ["--alloc", "multiheap:" + (self.spec or "")]
        args = ["--alloc", "system"]
        if self.expect:
            args += ["--expect", self.expect]
        return args

    def env(self) -> dict | None:
        if self.lib is None:
            return None
        old = os.environ.get("LD_PRELOAD")
        return {"LD_PRELOAD": str(self.lib) + (":" + old if old else "")}

    def as_dict(self) -> dict:
        return {"label": self.label, "kind": self.kind, "spec": self.spec,
                "lib": str(self.lib) if self.lib else None, "expect": self.expect}


# dmm-replay backends that take a specification after their prefix
SPEC_PREFIXES = ("dmm:", "pool:", "multiheap:")


def split_allocator_list(values: list[str]) -> list[str]:
    """Splits comma-separated allocator lists.  A dmm config string has
    commas of its own ("dmm:preset=tlsf,fit=best", "pool:auto;heap=preset=tlsf,fit=best",
    "multiheap:4;heap=preset=tlsf,fit=best"): an item with '=' that does not start a new allocator continues
    the previous dmm, pool or multiheap spec."""
    out: list[str] = []
    for v in values:
        for tok in v.split(","):
            tok = tok.strip()
            if not tok:
                continue
            if "=" in tok and not tok.startswith(SPEC_PREFIXES) and out \
                    and out[-1].startswith(SPEC_PREFIXES) and "=" in out[-1]:
                out[-1] = out[-1] + "," + tok
            else:
                out.append(tok)
    return out


def parse_peers(values: list[str]) -> dict[str, Path]:
    peers: dict[str, Path] = {}
    for v in values:
        if "=" not in v:
            raise DmmkitError(f"--peer {v!r}: expected NAME=/path/to/lib.so")
        name, path = v.split("=", 1)
        name = name.strip()
        if not name or name.startswith("dmm:") or name in SYSTEM_ALLOCATORS or name == LIBDMM:
            raise DmmkitError(f"--peer {v!r}: choose a name that is not a built-in allocator")
        p = Path(path).expanduser()
        if not p.is_file():
            raise DmmkitError(f"--peer {name}: library {path} not found (no such file)")
        peers[name] = p.resolve()
    return peers


def explore_entry(arg: str, results: str | os.PathLike | None, option: str = "--results") -> dict:
    """The configuration `arg` names in explore results: `best` (the file's
    "best") or a configuration id ("configs"[].id).  A missing file, a file
    without a best configuration or an unknown id raise one DmmkitError
    (status 2).  Shared by generate and compare."""
    from .schemas import EXPLORE
    from .validate import load_document
    if not results or not Path(results).is_file():
        raise DmmkitError(f"explore result id {arg!r}: no explore results file to look it up in "
                          f"({results or 'none given'}; use {option} FILE)")
    _, doc = load_document(str(results), EXPLORE)
    want = doc.get("best") if arg == "best" else arg
    by_id = {c["id"]: c for c in doc["configs"]}
    if arg == "best" and want is None:
        raise DmmkitError(f"results file {results}: no best configuration (no configuration was feasible)")
    if want not in by_id:
        raise DmmkitError(f"no configuration {arg!r} in {results} (ids: "
                          + ", ".join(list(by_id)[:8]) + (", ..." if len(by_id) > 8 else "") + ")")
    return by_id[want]


EXPLORE_PREFIX = "explore:"


def explore_allocator(item: str, results: str | os.PathLike | None) -> Allocator:
    """`explore:best` / `explore:ID` as an Allocator labelled "best:NAME" or
    "ID:NAME" (NAME: the configuration's readable name)."""
    arg = item[len(EXPLORE_PREFIX):]
    if not arg:
        raise DmmkitError(f"allocator {item!r}: expected explore:best or explore:ID")
    entry = explore_entry(arg, results, option="--explore-results")
    alloc = entry.get("alloc") or "dmm:" + entry["config"]
    name = entry.get("name") or entry["id"]
    label = f"best:{name}" if arg == "best" else (name if name == entry["id"] else f"{entry['id']}:{name}")
    for prefix in SPEC_PREFIXES:
        if alloc.startswith(prefix):
            return Allocator(label, prefix[:-1], spec=alloc[len(prefix):])
    raise DmmkitError(f"allocator {item!r}: the explore entry's allocator {alloc!r} is not one compare can run")


def resolve(items: list[str], peers: dict[str, Path] | None = None, skip_missing: list[str] | None = None,
            tools_dir: str | os.PathLike | None = None,
            explore_results: str | os.PathLike | None = None) -> list[Allocator]:
    """Turns allocator names into Allocators; the first unknown or missing
    one raises DmmkitError naming what was looked for.  With skip_missing (a
    list), a system allocator whose library is not installed is left out
    and its message appended there instead (used for the default list)."""
    peers = dict(peers or {})
    out: list[Allocator] = []
    seen: set[str] = set()
    for item in items:
        if item in seen:
            continue
        seen.add(item)
        if item.startswith(EXPLORE_PREFIX):
            a = explore_allocator(item, explore_results)
            if any(o.label == a.label for o in out):
                continue
            out.append(a)
        elif item.startswith("dmm:"):
            spec = item[4:]
            if not spec:
                raise DmmkitError("allocator 'dmm:' needs a preset or a config, e.g. dmm:tlsf")
            out.append(Allocator(item, "dmm", spec=spec, expect=None))
        elif item.startswith("pool:"):
            if not item[5:]:
                raise DmmkitError("allocator 'pool:' needs classes, e.g. pool:auto;heap=tlsf (docs/replay.md)")
            out.append(Allocator(item, "pool", spec=item[5:], expect=None))
        elif item.startswith("multiheap:"):
            if not item[10:]:
                raise DmmkitError("allocator 'multiheap:' needs a node count, e.g. multiheap:4;policy=lazy "
                                  "(docs/replay.md)")
            out.append(Allocator(item, "multiheap", spec=item[10:], expect=None))
        elif item in SYSTEM_ALLOCATORS:
            if item == "glibc":
                out.append(Allocator("glibc", "system", expect="glibc"))
                continue
            path, looked = find_system_library(item)
            if path is None:
                pkg = SYSTEM_ALLOCATORS[item][1]
                if skip_missing is not None:
                    skip_missing.append(f"{item} left out: {', '.join(SYSTEM_ALLOCATORS[item][0])} not found "
                                        f"(install {pkg})")
                    continue
                raise DmmkitError(
                    f"allocator {item}: library not found; looked for {', '.join(SYSTEM_ALLOCATORS[item][0])} in "
                    f"{', '.join(str(d) for d in library_dirs()) or '(no directories)'}"
                    f"{'' if os.environ.get('DMMKIT_LIB_PATH') is not None else ' and the ldconfig cache'} "
                    f"(install the Debian package {pkg}, or pass --peer {item}2=/path/lib.so)")
            out.append(Allocator(item, "system", lib=path, expect=item))
        elif item == LIBDMM and item not in peers:
            path, looked = find_libdmm(tools_dir)
            if path is None:
                if skip_missing is not None:
                    skip_missing.append(f"{item} left out: {LIBDMM_FILE} not built (looked in "
                                        f"{', '.join(looked) or '(nowhere)'})")
                    continue
                raise DmmkitError(
                    f"allocator {item}: {LIBDMM_FILE} not found (looked in {', '.join(looked) or '(nowhere)'}); "
                    "build it: cmake --preset release && cmake --build --preset release -j2 --target "
                    "dmm_malloc_shared, or set DMMKIT_LIBDMM=/path/libdmm.so")
            # a preloaded library dmm-replay does not name: checked like a
            # --peer (malloc must resolve to this very file)
            out.append(Allocator(item, "peer", lib=path, expect=None))
        elif item in peers:
            out.append(Allocator(item, "peer", lib=peers[item], expect=None))
        elif item in PRESETS:
            out.append(Allocator("dmm:" + item, "dmm", spec=item))
        else:
            known = ", ".join(["dmm:PRESET", "dmm:KEY=VALUE,...", "pool:CLASSES[;heap=CONFIG]",
                               "multiheap:NODES[;policy=P][;heap=CONFIG]", *SYSTEM_ALLOCATORS,
                               LIBDMM, *peers])
            raise DmmkitError(f"unknown allocator {item!r} (known: {known}; add others with --peer NAME=/path/lib.so)")
    return out
