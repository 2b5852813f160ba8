#!/usr/bin/env python3
"""scripts/provenance.py - the provenance record every bench/results file carries.

One place that says how a results file was made, so every generator writes
the same fields the same way:

  command    the exact command that regenerates the file (as the caller gives it)
  commit     git HEAD (12 hex digits), "-dirty" when tracked files other than
             bench/results/* differ from it
  date       UTC, ISO 8601
  compiler   compiler and version, and the flags the measured code was built with
  cpu        CPU model, architecture, online CPUs, and the vector features that
             select an implementation (sse2/avx2/avx512f/neon)
  impl       the implementation the code selected at run time (e.g. the
             dmm_vec routine), when the figures depend on one
  load       1-minute load average before and after the run, when the file
             holds timings (a shared machine's noise)

As a module: provenance(...) returns the record as a dict, markdown(record)
the lines a .md file starts with.  From the shell:

  scripts/provenance.py --json --command "scripts/x.sh --flag" \\
      [--compiler "gcc 12.2.0"] [--flags "-O3 -DNDEBUG"] [--impl avx2] \\
      [--load-before 0.42]           # a timing run: record the load
  scripts/provenance.py --md ...     # the same record as markdown lines
  scripts/provenance.py --json --command ... --cmake-build build/release
                                     # compiler and flags from a CMake tree
  scripts/provenance.py --load       # the current 1-minute load average

bench/results/README.md lists the files and their generators;
scripts/check_results.py ignores this record when it compares figures.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# CPU features that select an implementation: dmm_vec's routines (SSE2, AVX2,
# AVX-512, NEON) and glibc's string routines (ERMS / FSRM: rep movsb/stosb).
VECTOR_FEATURES = ("sse2", "avx", "avx2", "avx512f", "avx512bw", "neon", "asimd", "erms", "fsrm")


def _git(*args):
    try:
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def commit():
    head = _git("rev-parse", "--short=12", "HEAD") or "unknown"
    if head != "unknown" and _git("status", "--porcelain", "--untracked-files=no", "--", ".",
                                  ":!bench/results"):
        head += "-dirty"
    return head


def cpu():
    model, flags = "", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "Model", "cpu model") and not model:
                    model = value.strip()
                elif key in ("flags", "Features") and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    return {
        "model": model or platform.processor() or "unknown",
        "arch": platform.machine(),
        "cpus": os.cpu_count(),
        "vector_features": [f for f in VECTOR_FEATURES if f in flags],
        "kernel": platform.release(),
    }


def load():
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def cmake_build(build_dir):
    """(compiler, flags) of a configured CMake build tree, from its cache."""
    cache = {}
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            for line in f:
                key, sep, value = line.rstrip("\n").partition("=")
                if sep and ":" in key:
                    cache[key.split(":")[0]] = value
    except OSError:
        return None, None
    cc = cache.get("CMAKE_C_COMPILER", "cc")
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, check=True).stdout
        version = out.splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        version = cc
    btype = cache.get("CMAKE_BUILD_TYPE", "")
    flags = " ".join(f for f in (cache.get("CMAKE_C_FLAGS", ""),
                                 cache.get("CMAKE_C_FLAGS_" + btype.upper(), "")) if f)
    return version, f"{flags} (CMake {btype or 'no build type'}, {os.path.relpath(build_dir, ROOT)})"


def provenance(command, compiler=None, flags=None, impl=None, load_before=None, extra=None):
    rec = {
        "command": command,
        "commit": commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "compiler": compiler,
        "flags": flags,
        "cpu": cpu(),
        "impl": impl,
    }
    if load_before is not None:
        rec["load"] = {"before": load_before, "after": load(), "cpus": os.cpu_count()}
    if extra:
        rec.update(extra)
    return rec


def markdown(rec):
    c = rec["cpu"]
    feats = ", ".join(c["vector_features"]) or "none"
    lines = [
        f"Command: `{rec['command']}`  ",
        f"Commit {rec['commit']}, {rec['date']}.  ",
        f"CPU: {c['model']} ({c['arch']}, {c['cpus']} CPUs, Linux {c['kernel']}; vector features: {feats}).  ",
    ]
    if rec.get("compiler") or rec.get("flags"):
        lines.append(f"Compiler: {rec.get('compiler') or 'n/a'}; flags `{rec.get('flags') or 'n/a'}`.  ")
    if rec.get("impl"):
        lines.append(f"Implementation selected: {rec['impl']}.  ")
    if rec.get("load"):
        ld = rec["load"]
        lines.append(f"Machine load (1-minute average) {ld['before']} before, {ld['after']} after, "
                     f"on {ld['cpus']} CPUs.  ")
    lines[-1] = lines[-1].rstrip()
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    fmt = ap.add_mutually_exclusive_group(required=True)
    fmt.add_argument("--json", action="store_true", help="print the record as JSON")
    fmt.add_argument("--md", action="store_true", help="print the record as markdown lines")
    fmt.add_argument("--load", action="store_true", help="print the 1-minute load average")
    ap.add_argument("--command", help="the command that regenerates the file")
    ap.add_argument("--compiler")
    ap.add_argument("--flags", help="give as --flags=... when it starts with '-'")
    ap.add_argument("--cmake-build", metavar="DIR",
                    help="take the compiler and flags from this CMake build tree's cache")
    ap.add_argument("--impl")
    ap.add_argument("--load-before", type=float)
    a = ap.parse_args(argv)
    if a.load:
        print(load())
        return 0
    if not a.command:
        ap.error("--command is required")
    if a.cmake_build:
        cc, flags = cmake_build(a.cmake_build)
        a.compiler = a.compiler or cc
        a.flags = a.flags or flags
    rec = provenance(a.command, a.compiler, a.flags, a.impl, a.load_before)
    print(json.dumps(rec) if a.json else markdown(rec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
