"""`dmmkit generate`: a chosen configuration as a ready-to-link allocator.

Writes DIR/dmm_config.h (the configuration frozen with DMM_FROZEN_* macros,
written by the C library itself through `dmm-config header`, so this module
keeps no table of fields or macros), DIR/dmm_config_malloc.h (the same
policies with the fields libdmm imposes on its medium heaps, frozen, plus
libdmm's compile-time hooks), a copy of the heap and libdmm sources
(src/malloc: the malloc is libdmm, docs/malloc.md), a CMakeLists.txt and a
README; builds libdmmgen.a (the heap API) and libdmmgen_malloc.so (libdmm
with the configuration as its medium heap, or with --whole as the whole
allocator); and, with --trace, replays the trace on the generated .so
(LD_PRELOAD, --verify) and on the same configuration through dmm-replay, so
the two can be compared.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path

from rich.table import Table

from .allocators import PRESETS, explore_entry
from .errors import BAD_INPUT, RUNTIME, DmmkitError
from .measure import timing_figures
from .memfig import Legend, footprint_kind, footprint_value, frag_text, mark
from .schemas import REPLAY
from .validate import check_document
from .tools import Tools, check_configs, first_error_line, replay_json, run, validate_trace
from .ui import console, fmt_num, fmt_ratio, progress

CONFIG_TOOL = "dmm-config"


def config_tool(tools: Tools) -> Path:
    """dmm-config, found like the other native tools: next to dmm-replay
    (the --tools-dir / DMMKIT_TOOLS / build tree that find_tools chose),
    else on PATH."""
    cand = tools.replay.parent / CONFIG_TOOL
    if cand.is_file() and os.access(cand, os.X_OK):
        return cand
    found = shutil.which(CONFIG_TOOL)
    if found:
        return Path(found).resolve()
    raise DmmkitError(f"native tool {CONFIG_TOOL} not found (looked next to {tools.replay} and on PATH); build it "
                      "with: cmake --build --preset release --target dmm-config", BAD_INPUT)


def parse_config_text(text: str) -> dict[str, str]:
    kv = {}
    for part in text.split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            kv[k.strip()] = v.strip()
    return kv


def frozen_header(tools: Tools, config: str, ident: str, name: str) -> str:
    """The DMM_FROZEN_* header for a config, as the C library writes it
    (`dmm-config header`, the format of configs/frozen/*.h: the macros
    src/heap/heap_internal.h reads), plus DMMGEN_ID / DMMGEN_CONFIG."""
    res = run([str(config_tool(tools)), "header", config, "--name",
               f"dmm_config.h: configuration {ident} ({name}),\nwritten by `dmmkit generate`"], timeout=60)
    if res.returncode != 0 or "#define DMM_FROZEN_ORG" not in res.stdout:
        raise DmmkitError(f"{CONFIG_TOOL} header refused the config {config!r}: "
                          f"{first_error_line(res.stderr) or res.returncode}", RUNTIME)
    lines = ["#ifndef DMMGEN_CONFIG_H", "#define DMMGEN_CONFIG_H", res.stdout.rstrip("\n"),
             f'#define DMMGEN_ID "{ident}"', f'#define DMMGEN_CONFIG "{config}"', "#endif"]
    return "\n".join(lines) + "\n"


# libdmm's medium heaps run with these fields whatever the configuration
# says (src/malloc/malloc.c, medium_try): one owner thread, regions added by
# libdmm, reports through libdmm; counters at least, hardening at least
# checked.  Frozen into the .so's heap, they must match, or libdmm refuses
# its own default.
def medium_fields(config: str) -> dict:
    kv = parse_config_text(config)
    f = {"lock": "none", "grow": 0, "release_empty": "off", "on_error": "report"}
    if kv.get("stats") == "off":
        f["stats"] = "counters"
    if kv.get("harden") == "off":
        f["harden"] = "checked"
    return f


def malloc_header(tools: Tools, config: str, config_malloc: str, ident: str, whole: bool) -> str:
    """dmm_config_malloc.h: the medium heap's configuration frozen (read by
    the heap sources as DMM_HEAP_CONFIG_HEADER) and libdmm's compile-time
    hooks (read by malloc.c and preload.c as DMM_MALLOC_CONFIG_HEADER)."""
    res = run([str(config_tool(tools)), "header", config_malloc, "--name",
               f"dmm_config_malloc.h: configuration {ident} as libdmm's medium heap,\n"
               "written by `dmmkit generate`"], timeout=60)
    if res.returncode != 0 or "#define DMM_FROZEN_ORG" not in res.stdout:
        raise DmmkitError(f"{CONFIG_TOOL} header refused the config {config_malloc!r}: "
                          f"{first_error_line(res.stderr) or res.returncode}", RUNTIME)
    lines = ["#ifndef DMMGEN_CONFIG_MALLOC_H", "#define DMMGEN_CONFIG_MALLOC_H", res.stdout.rstrip("\n"), "",
             "/* libdmm's hooks (src/malloc/malloc.c, docs/malloc.md \"Generated allocators\") */",
             f'#define DMM_MALLOC_MEDIUM_DEFAULT "{config_malloc}"',
             f'#define DMM_MALLOC_GENERATED "{config}"']
    if whole:
        lines.append("#define DMM_MALLOC_SMALL_MAX 0 /* --whole: no size-class pages */")
    lines += ["#endif", ""]
    return "\n".join(lines)


def with_fields(config: str, **fields) -> str:
    kv = parse_config_text(config)
    for k, v in fields.items():
        kv[k] = str(v)
    return ",".join(f"{k}={v}" for k, v in kv.items())


def resolve_config(tools: Tools, arg: str, results: str | None) -> tuple[str, str, str, dict | None]:
    """(id, name, normalised config, the explore entry or None)."""
    entry = None
    if arg.startswith("pool:"):
        raise DmmkitError(f"CONFIG {arg!r} is a pool front: generate emits a heap allocator only (a frozen pool "
                          "front is not generated yet); generate its heap (the heap= part) instead")
    if arg in PRESETS:
        ident, name, spec = arg, arg, arg
    elif "=" in arg:
        spec = arg[4:] if arg.startswith("dmm:") else arg
        ident, name = "custom", spec
    else:
        if not results or not Path(results).is_file():
            raise DmmkitError(f"CONFIG {arg!r} is not a preset ({', '.join(PRESETS)}), not a config (key=value,...), "
                              f"and there is no explore results file to look it up in ({results or 'none given'}; "
                              "use --results FILE)")
        entry = explore_entry(arg, results)
        if entry.get("kind") == "pool":
            raise DmmkitError(f"configuration {entry['id']} ({entry['alloc']}){' (the best)' if arg == 'best' else ''}"
                              f" is a heap behind pools: generate emits a heap allocator only (a frozen pool front "
                              f"is not generated yet); generate its heap instead: dmmkit generate "
                              f"{entry.get('heap_id') or entry['config']} --results {results}")
        ident, name, spec = entry["id"], entry["name"], entry["config"]
    ok, text = check_configs(tools, [spec])[0]
    if not ok:
        raise DmmkitError(f"config {spec!r} refused by the heap: {text}")
    if ident == "custom":
        import hashlib
        ident = "c" + hashlib.sha1(text.encode()).hexdigest()[:8]
    return ident, name, text, entry


def _copy_sources(root: Path, dst: Path) -> None:
    d = dst / "dmm"
    if d.exists():
        shutil.rmtree(d)
    (d / "include").mkdir(parents=True)
    shutil.copytree(root / "include" / "dmm", d / "include" / "dmm")
    for sub in ("core", "heap", "port", "malloc"):
        shutil.copytree(root / "src" / sub, d / "src" / sub,
                        ignore=shutil.ignore_patterns("CMakeLists.txt", "*.o", "*.a"))


def _template(name: str) -> str:
    return resources.files("dmmkit").joinpath("templates", name).read_text()


def _build(outdir: Path, cc: str | None, jobs: int | None, preload_only: bool = False) -> tuple[Path | None, Path]:
    """Configures and builds the generated project: both libraries, or
    (preload_only) only libdmmgen_malloc.so, half the compile units (the
    static library's sources are compiled again under its own header);
    returns (static library or None, preload library)."""
    cmake = shutil.which("cmake")
    if not cmake:
        raise DmmkitError("cmake not found (apt install cmake, or run scripts/setup.sh)", RUNTIME)
    bdir = outdir / "build"
    log = outdir / "build.log"
    cfg = [cmake, "-S", str(outdir), "-B", str(bdir), "-DCMAKE_BUILD_TYPE=Release"]
    if shutil.which("ninja"):
        cfg += ["-G", "Ninja"]
    if cc:
        cfg.append(f"-DCMAKE_C_COMPILER={cc}")
    if bdir.exists() and cc:
        shutil.rmtree(bdir)
    build = [cmake, "--build", str(bdir), "-j", str(jobs or os.cpu_count() or 2)] + (
        ["--target", "dmmgen_malloc"] if preload_only else [])
    with open(log, "w") as lf, progress() as prog:
        task = prog.add_task("build: configure", total=None)
        for step, cmd in (("configure", cfg), ("compile", build)):
            prog.update(task, description=f"build: {step}")
            lf.write("$ " + " ".join(cmd) + "\n")
            lf.flush()
            # the with block closes the pipe (a ResourceWarning otherwise)
            with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as p:
                for line in p.stdout:
                    lf.write(line)
                    m = re.match(r"\[(\d+)/(\d+)\]", line) or re.match(r"\[\s*(\d+)%\]", line)
                    if m and step == "compile":
                        if m.re.pattern.startswith(r"\[(\d+)/"):
                            prog.update(task, completed=int(m.group(1)), total=int(m.group(2)))
                        else:
                            prog.update(task, completed=int(m.group(1)), total=100)
                rc = p.wait()
            if rc != 0:
                lf.flush()
                text = log.read_text()
                err = next((ln.strip() for ln in text.splitlines() if "error" in ln.lower() and not ln.startswith("$")),
                           None)
                raise DmmkitError(f"build failed at the {step} step (exit status {rc})"
                                  + (f": {err}" if err else "") + f"; full log in {log}", RUNTIME)
    lib = bdir / "libdmmgen.a"
    so = bdir / "libdmmgen_malloc.so"
    if (not preload_only and not lib.is_file()) or not so.is_file():
        raise DmmkitError(f"build finished but {lib.name} / {so.name} are missing; log in {log}", RUNTIME)
    return (None if preload_only else lib), so


STATS_LINE = "libdmm statistics:"
REPLAY_GROW = 4 << 20  # dmm-replay's side grows by libdmm's segment size


def check_on_trace(tools: Tools, so: Path, trace: str, config_replay: str) -> tuple[list[dict], bool]:
    """Replays the trace on the generated .so (LD_PRELOAD, --verify,
    DMM_SHOW_STATS=1 so that libdmm proves it ran) and on the same policies
    through dmm-replay (--verify); returns the two rows and whether they
    agree."""
    validate_trace(tools, trace)
    rows = []
    env = {"LD_PRELOAD": str(so), "DMM_SHOW_STATS": "1"}
    res, d = replay_json(tools, trace, ["--alloc", "system", "--verify", "--reps", "3"], env=env)
    if d is not None:
        check_document(d, REPLAY, f"dmm-replay's JSON output (LD_PRELOAD={so.name}, {trace})", RUNTIME)
    if d is None:
        raise DmmkitError(f"replay with LD_PRELOAD={so} failed: {first_error_line(res.stderr) or res.returncode}",
                          RUNTIME)
    f = timing_figures(d)
    obj = f.get("malloc_object") or ""
    detected = (d.get("allocator") or {}).get("detected")
    stats_line = next((ln for ln in (res.stderr or "").splitlines() if ln.startswith(STATS_LINE)), None)
    took = (bool(obj) and os.path.realpath(obj) == os.path.realpath(str(so)) and detected == "dmmgen"
            and stats_line is not None)
    rows.append({"run": f"LD_PRELOAD={so.name} (--alloc system)", "status": res.returncode, "took_effect": took,
                 "detected": detected, "stats_line": stats_line, **f})
    res2, d2 = replay_json(tools, trace, ["--alloc", "dmm:" + config_replay, "--arena", str(REPLAY_GROW),
                                          "--verify", "--reps", "3"])
    if d2 is not None:
        check_document(d2, REPLAY, f"dmm-replay's JSON output (dmm:{config_replay}, {trace})", RUNTIME)
    if d2 is None:
        raise DmmkitError(f"replay of dmm:{config_replay} failed: {first_error_line(res2.stderr) or res2.returncode}",
                          RUNTIME)
    rows.append({"run": "dmm-replay --alloc dmm:CONFIG (same policies, one heap)", "status": res2.returncode,
                 "took_effect": True, **timing_figures(d2)})
    a, b = rows
    agree = (took and a["status"] == 0 and b["status"] == 0 and a.get("verify") == "pass"
             and b.get("verify") == "pass" and a.get("failed") == b.get("failed"))
    return rows, agree


def generate(tools: Tools, arg: str, outdir: str, trace: str | None = None, results: str | None = None,
             whole: bool = False, cc: str | None = None, jobs: int | None = None, build: bool = True,
             preload_only: bool = False) -> dict:
    """Writes the generated project for config `arg` to outdir and (build)
    builds it; preload_only: only the LD_PRELOAD library (what advise's
    end-to-end check runs: half the compile time)."""
    if tools.root is None:
        raise DmmkitError("generate needs the heap sources: install dmmkit (cmake --install puts them in "
                          "PREFIX/share/dmmkit/source, found beside the tools in PREFIX/bin), run it inside the "
                          "repository, or pass --root / set DMMKIT_ROOT")
    if trace:
        validate_trace(tools, trace)
    ident, name, config, entry = resolve_config(tools, arg, results)
    config_malloc = with_fields(config, **medium_fields(config))
    config_replay = with_fields(config_malloc, grow=REPLAY_GROW)
    for i, (ok, text) in enumerate(check_configs(tools, [config_malloc, config_replay])):
        if not ok:
            raise DmmkitError(f"the malloc variant of {ident} is refused by the heap: {text}", RUNTIME)
        if i == 0:
            config_malloc = text
        else:
            config_replay = text
    out = Path(outdir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DmmkitError(f"cannot create {outdir}: {e.strerror}")
    (out / "dmm_config.h").write_text(frozen_header(tools, config, ident, name))
    (out / "dmm_config_malloc.h").write_text(malloc_header(tools, config, config_malloc, ident, whole))
    stale = out / "dmm_malloc_shim.c"  # written by generate before it built on libdmm
    if stale.exists():
        stale.unlink()
    (out / "CMakeLists.txt").write_text(_template("CMakeLists.txt.in").replace("@ID@", ident).replace("@NAME@", name))
    _copy_sources(tools.root, out)
    console.print(f"[bold]generate[/] {ident} ({name}) -> {out}\n  config {config}")
    info = {"id": ident, "name": name, "config": config, "config_malloc": config_malloc, "dir": str(out),
            "whole": whole}
    check_md = "Run `dmmkit generate ... --trace TRACE` to replay a trace on the generated library."
    if build:
        lib, so = _build(out, cc, jobs, preload_only)
        info.update({"static_library": str(lib) if lib else None, "preload_library": str(so)})
        console.print((f"built {lib}\n" if lib else "") + f"built {so}")
        if trace:
            rows, agree = check_on_trace(tools, so, trace, config_replay)
            info["check"] = {"trace": trace, "rows": rows, "agree": agree}
            _print_check(rows, agree)
            check_md = _check_markdown(trace, rows, agree)
    readme = _template("README.md.in")
    commit = "unknown"
    try:
        commit = subprocess.run(["git", "-C", str(tools.root), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        pass
    arena_note = ""
    if entry:
        ma = [m.get("min_arena") for m in (entry.get("per_trace") or {}).values() if m and m.get("min_arena")]
        if ma:
            arena_note = (f"\n\nExploration measured a minimum arena of {max(ma)} bytes (largest over its traces) "
                          "for this configuration.")
    for k, v in {"@ID@": ident, "@NAME@": name, "@ARG@": arg, "@ROOT@": str(tools.root), "@COMMIT@": commit,
                 "@CONFIG@": config, "@CONFIG_MALLOC@": config_malloc, "@MODE@": _mode_text(whole),
                 "@CHECK@": check_md,
                 "@ARENA_NOTE@": arena_note}.items():
        readme = readme.replace(k, v)
    (out / "README.md").write_text(readme)
    with open(out / "generate.json", "w") as f:
        json.dump(info, f, indent=1, default=str)
    if build and trace and not info["check"]["agree"]:
        raise DmmkitError("the generated allocator does not match the replayed configuration on "
                          f"{trace} (see the table above and {out / 'generate.json'})", RUNTIME)
    return info


def _mode_text(whole: bool) -> str:
    if whole:
        return ("Built with `--whole`: every request up to 1 MiB goes to this policy (one heap per thread, no "
                "size-class pages), larger ones straight to the OS. This is the policy's own behaviour on the "
                "whole program: meant for single-threaded programs and for studying the policy.")
    return ("Requests up to 2 KiB come from libdmm's per-thread size-class pages, those up to 1 MiB from this "
            "policy (one heap per thread), larger ones straight from the OS: a scalable multi-threaded malloc "
            "whose medium heap is the generated policy. Build with `dmmkit generate --whole` to have the policy "
            "serve every request up to 1 MiB.")


def _print_check(rows, agree):
    t = Table(title="generated allocator vs the same configuration in dmm-replay")
    for c in ("run", "preload ok", "verify", "failed", "peak footprint (B)", "baseline (B)", "frag #4",
              "warm cycles/op"):
        t.add_column(c, justify="right" if c not in ("run",) else "left")
    legend = Legend()
    for r in rows:
        base = r.get("baseline_footprint") if r["run"].startswith("LD_PRELOAD") else None
        exact = legend.note(bool(r.get("memory_exact", True)), footprint_kind(r))
        t.add_row(r["run"], "yes" if r["took_effect"] else "NO", str(r.get("verify")), str(r.get("failed")),
                  mark(fmt_num(footprint_value(r)), exact), mark(fmt_num(base), exact),
                  frag_text(r.get("frag4"), exact, fmt_ratio), fmt_num(r.get("warm_avg")))
    console.print(t)
    for line in legend.lines():
        console.print(line, markup=False)
    console.print("[green]match[/]: verify passes on both, same failed allocations" if agree
                  else "[red]MISMATCH[/]: see the table")
    console.print("  the .so is libdmm: its footprint is the growth of the resident set over the pass (libdmm "
                  "maps segments of address space, so its own mapped count is not a footprint)")
    if rows and rows[0].get("stats_line"):
        console.print("  " + rows[0]["stats_line"], markup=False)


def _check_markdown(trace, rows, agree) -> str:
    lines = [f"Replay of `{trace}` (`dmm-replay --verify`):", "",
             "| run | verify | failed | peak footprint (B) | frag #4 | warm cycles/op |", "|---|---|---:|---:|---:|---:|"]
    legend = Legend()
    for r in rows:
        exact = legend.note(bool(r.get("memory_exact", True)), footprint_kind(r))
        fp = footprint_value(r)
        lines.append(f"| {r['run']} | {r.get('verify')} | {r.get('failed')} | "
                     f"{mark(str(fp) if fp is not None else '-', exact)} | "
                     f"{frag_text(r.get('frag4'), exact, fmt_ratio)} | {fmt_num(r.get('warm_avg'))} |")
    if legend.kinds:
        lines += [""] + legend.lines()
    lines += ["", "Result: " + ("match" if agree else "MISMATCH") + ". The .so is libdmm: its footprint is the "
              "growth of the resident set over the pass, not an allocator count (libdmm maps segments of address "
              "space and touches what it uses)."]
    if rows and rows[0].get("stats_line"):
        lines += ["", "libdmm's statistics at the end of the replay (`DMM_SHOW_STATS=1`):", "",
                  "    " + rows[0]["stats_line"]]
    return "\n".join(lines)
