"""The `dmmkit` command line (click).  Every failure the user can act on is
one line on stderr, `dmmkit <command>: error: ...`, and a non-zero exit
status: 2 for bad input, 1 for a run-time failure."""

from __future__ import annotations

import json
import os
import sys

import click

from . import __version__
from .errors import RUNTIME, DmmkitError
from .sizes import parse_size
from .tools import find_tools
from .ui import err_console

class SizeType(click.ParamType):
    """A byte count option, read by the one size parser (dmmkit.sizes)."""
    name = "BYTES"

    def convert(self, value, param, ctx):
        try:
            return parse_size(value, what="size")
        except DmmkitError as e:
            self.fail(e.message.removeprefix("size: "), param, ctx)


SIZE = SizeType()


def _tools(ctx):
    o = ctx.find_root().obj or {}
    return find_tools(o.get("tools_dir"), o.get("root"))


def _argv():
    return ["dmmkit", *sys.argv[1:]]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dmmkit")
@click.option("--tools-dir", type=click.Path(file_okay=False), envvar="DMMKIT_TOOLS",
              help="Directory with dmm-replay, dmm-analyse, dmm-trace (default: the --root tree's build, the "
                   "install prefix this dmmkit runs from, the checkout around the current directory, then "
                   "PATH; see docs/frontend.md).")
@click.option("--root", type=click.Path(file_okay=False), envvar="DMMKIT_ROOT",
              help="The dmmkit source tree (default: the current directory or a parent).")
@click.pass_context
def cli(ctx, tools_dir, root):
    """dmmkit: find the dynamic memory manager that fits your program.

    Workflow: record a trace -> analyse it -> compare allocators on it ->
    explore the heap design space -> report -> generate the chosen allocator.
    The manual is docs/frontend.md."""
    ctx.obj = {"tools_dir": tools_dir, "root": root}


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-o", "--output", "out", metavar="OUT", help="Trace file (default dmm-<pid>.trace; .txt = text form).")
@click.option("--time", "timestamps", is_flag=True, help="Record a timestamp per operation.")
@click.option("--follow-fork", is_flag=True, help="Forked children write their own trace (OUT.<pid>).")
@click.option("--signal", metavar="SIG", help="Write a snapshot OUT.<n> each time SIG (USR1, USR2, ...) arrives.")
@click.argument("program", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_context
def record(ctx, out, timestamps, follow_fork, signal, program):
    """Record the allocation trace of PROGRAM (LD_PRELOAD, no rebuild).

    \b
    dmmkit record -o prog.trace -- ./prog arg1 arg2
    The program's output and exit status are passed through."""
    from .procs import record as do_record
    prog = list(program)
    if prog and prog[0] == "--":
        prog = prog[1:]
    rc = do_record(_tools(ctx), out, prog, timestamps, follow_fork, signal)
    ctx.exit(rc)


@cli.command()
@click.argument("traces", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print dmm-analyse's JSON (schema dmm-analyse/1) instead.")
@click.pass_context
def analyse(ctx, traces, as_json):
    """Request-pattern summary of TRACE(s): sizes, lifetimes, peak live
    bytes, cross-thread frees, realloc chains (dmm-analyse)."""
    from .analyse import analyse_json, print_analysis
    tools = _tools(ctx)
    docs = []
    for t in traces:
        d = analyse_json(tools, t)
        if as_json:
            docs.append(d)
        else:
            print_analysis(t, d)
    if as_json:
        click.echo(json.dumps(docs[0] if len(docs) == 1 else docs, indent=1))


def _reps_option(ctx, param, value):
    """--reps: "auto" (None: the adaptive rule) or a count from 1 to 1000."""
    if value is None or str(value).strip().lower() == "auto":
        return None
    try:
        n = int(value)
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected auto or a number of repetitions") from None
    if not 1 <= n <= 1000:
        raise click.BadParameter(f"{n}: expected auto or 1 to 1000")
    return n


@cli.command()
@click.argument("traces", nargs=-1, required=True)
@click.option("-a", "--allocators", multiple=True, metavar="LIST",
              help="Comma-separated: dmm:PRESET or dmm:KEY=VALUE,..., glibc, jemalloc, mimalloc, tcmalloc, "
                   "tbbmalloc, a --peer name, or explore:best / explore:ID (from --explore-results).  Default: "
                   "dmm:tlsf,dmm:p2012,dmm:dlmalloc,glibc,jemalloc,mimalloc,tcmalloc,tbbmalloc (system "
                   "allocators that are not installed are then left out, with a note).")
@click.option("--peer", multiple=True, metavar="NAME=LIB.so", help="Another malloc library to preload.")
@click.option("--dmm", "dmm_named", multiple=True, metavar="NAME=CONFIG",
              help="A dmm configuration shown as NAME (CONFIG: preset or key=value,...).")
@click.option("--reps", default="auto", show_default=True, metavar="auto|N", callback=_reps_option,
              help="Interleaved repetitions (round-robin over the allocators): auto = at least 9, then more until "
                   "every allocator's 95% interval against the baseline is within --ci-target or it is told apart (at "
                   "most --max-reps); a number = exactly that many.")
@click.option("--max-reps", default=30, show_default=True, type=click.IntRange(1, 1000),
              help="Most repetitions with --reps auto.")
@click.option("--ci-target", default=0.02, show_default=True,
              type=click.FloatRange(0, 1, min_open=True, max_open=True),
              help="--reps auto stops when every interval is narrower than +-this (relative) or told apart "
                   "(excluding 1, p < 0.05).")
@click.option("--explore-results", default="dmmkit-explore.json", show_default=True, metavar="FILE",
              help="Explore results that -a explore:best / explore:ID are looked up in.")
@click.option("--baseline", metavar="NAME", help="Ratios are relative to this allocator (default glibc).")
@click.option("--results", default="dmmkit-compare.json", show_default=True, metavar="FILE",
              help="JSON results file (schema dmmkit-compare/1).")
@click.option("--no-pictures", is_flag=True, help="Skip the untimed timeline / heap-map replays.")
@click.pass_context
def compare(ctx, traces, allocators, peer, dmm_named, reps, max_reps, ci_target, explore_results, baseline, results,
            no_pictures):
    """Replay TRACE(s) on dmm configurations and system allocators side by
    side: interleaved repetitions, ratios to a baseline with their spread."""
    from .compare import DEFAULT_ALLOCATORS, CompareOptions, run_compare
    opts = CompareOptions(traces=list(traces), allocators=list(allocators) or [DEFAULT_ALLOCATORS],
                          default_list=not allocators and not dmm_named and not peer,
                          peers=list(peer), named=list(dmm_named), reps=reps, max_reps=max_reps, ci_target=ci_target,
                          explore_results=explore_results, baseline=baseline, results=results,
                          pictures=not no_pictures, argv=_argv())
    run_compare(_tools(ctx), opts)


@cli.command()
@click.argument("traces", nargs=-1, required=True)
@click.option("--arena", type=SIZE, help="Fixed arena: configs whose minimum arena exceeds it are infeasible.")
@click.option("--max-cycles", type=float, help="Worst-case bound: configs whose warm maximum cycles/op (median "
                                               "over reps, worst trace) exceeds it are infeasible.")
@click.option("--objective", type=click.Choice(["speed", "memory", "balanced"]), default="balanced",
              show_default=True, help="How the feasible configs are ranked.")
@click.option("--memory", type=click.Choice(["arena", "footprint"]), default="arena", show_default=True,
              help="Memory axis: minimum arena or peak footprint.")
@click.option("--speed", type=click.Choice(["instructions", "cycles"]), default="instructions", show_default=True,
              help="Speed axis of the ranking: callgrind instructions/op (exact) or measured cycles/op (the "
                   "timed candidates only; noisy on a shared machine).")
@click.option("--grid", type=click.Choice(["default", "full", "presets", "none"]), default="default",
              show_default=True, help="Design-space grid (docs/frontend.md).")
@click.option("--config", "configs", multiple=True, metavar="CONFIG",
              help="Add a configuration (preset or key=value,...); may repeat.")
@click.option("--pools", is_flag=True,
              help="Also try each heap behind size-class pools sized from the trace (pool:auto;heap=CONFIG): every "
                   "heap of the presets/default grids and --config, the presets of the full grid.")
@click.option("--executor", type=click.Choice(["local", "local-process", "ray"]), default="local",
              show_default=True, help="Where the deterministic measurements run.")
@click.option("--address", metavar="ADDR", help="Ray cluster address (--executor ray); default: start a local "
                                                "Ray instance.")
@click.option("-j", "--jobs", type=click.IntRange(1, 4096), help="Parallel workers (default: CPUs).")
@click.option("--results", default="dmmkit-explore.json", show_default=True, metavar="FILE",
              help="JSON results file (schema dmmkit-explore/1).")
@click.option("--cache", "cache_dir", default=".dmmkit-cache", show_default=True, metavar="DIR",
              help="Cache of deterministic figures.")
@click.option("--no-cache", is_flag=True, help="Measure everything again (and store nothing).")
@click.option("--reps", default="auto", show_default=True, metavar="auto|N", callback=_reps_option,
              help="Timing rounds for the candidates: auto = at least 9, then more (at most --max-reps) until each "
                   "candidate's 95% interval against the reference is within 2% or it is told apart; a number = "
                   "exactly that many.")
@click.option("--max-reps", default=20, show_default=True, type=click.IntRange(1, 1000),
              help="Most timing rounds with --reps auto.")
@click.option("--no-timing", is_flag=True, help="Deterministic figures only (no cycles).")
@click.option("--timing-max", default=12, show_default=True, type=click.IntRange(1, 10000),
              help="Most configs timed (front first, then presets).")
@click.option("--no-instructions", is_flag=True, help="Skip callgrind (no instruction counts).")
@click.option("--reference", default="dlmalloc", show_default=True, metavar="ID",
              help="Config the ratios are relative to.")
@click.option("--no-pictures", is_flag=True, help="Skip the timeline / heap-map replays of the best config.")
@click.option("--frozen/--no-frozen", default=True, show_default=True,
              help="Re-measure the candidates' instruction counts with dmm-replay built frozen to each (the form "
                   "generate ships) and rank them on those figures.")
@click.option("--frozen-max", default=6, show_default=True, type=click.IntRange(1, 10000),
              help="Most candidates re-measured frozen (the front first, then the next fronts; presets on the front "
                   "are always included).")
@click.option("--budget", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              metavar="SECONDS", help="Time for one config's figures on one trace; a measurement still running then "
                                      "is killed and the config dropped (reported).")
@click.option("--budget-relative", type=click.FloatRange(min=1), default=10.0, show_default=True, metavar="K",
              help="Drop configs whose replay is more than K times slower than the fastest on the same trace "
                   "(reported).")
@click.option("--screen-ops", type=click.IntRange(min=1), default=50_000, show_default=True, metavar="N",
              help="Screen every config on the first N operations of each trace; only the promising ones (the "
                   "screening front, the best few, the presets) get the full measurement.")
@click.option("--no-screen", is_flag=True, help="Measure every config on the whole traces (no screening).")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Time for the whole explore: no new work starts after it; what was measured is ranked.")
@click.pass_context
def explore(ctx, traces, arena, max_cycles, objective, memory, speed, grid, configs, pools, executor, address, jobs,
            results, cache_dir, no_cache, reps, max_reps, no_timing, timing_max, no_instructions, reference, no_pictures,
            frozen, frozen_max, budget, budget_relative, screen_ops, no_screen, time_limit):
    """Sweep the heap design space on TRACE(s); keep the Pareto front of
    speed vs memory; time the candidates; rank them."""
    from .explore import Options, run_explore
    opts = Options(traces=list(traces), grid=grid, configs=list(configs), arena=arena, max_cycles=max_cycles,
                   objective=objective, memory=memory, speed=speed, executor=executor, address=address, jobs=jobs,
                   cache_dir=cache_dir, use_cache=not no_cache, results=results, reps=reps, max_reps=max_reps,
                   timing=not no_timing,
                   timing_max=timing_max, instructions=not no_instructions, reference=reference,
                   pictures=not no_pictures, frozen=frozen, frozen_max=frozen_max, pools=pools, argv=_argv(),
                   budget=budget, budget_relative=budget_relative, screen_ops=None if no_screen else screen_ops,
                   time_limit=time_limit)
    run_explore(_tools(ctx), opts)


@cli.command()
@click.argument("results", nargs=-1, required=True)
@click.option("-o", "--output", "outdir", default=None, metavar="DIR",
              help="Output directory (index.html + PNGs); default: dmmkit-report/ beside the first RESULTS file.")
def report(results, outdir):
    """HTML report (with PNG plots) from explore, compare and advise RESULTS files."""
    from .report import write_report
    write_report(list(results), outdir)


@cli.command()
@click.argument("results", nargs=-1, required=True)
@click.option("--top", default=12, show_default=True, type=click.IntRange(1, 100000), help="Rows of the ranking.")
def show(results, top):
    """Print the ranking tables of saved explore / compare RESULTS files."""
    from .compare import print_compare
    from .explore import print_explore
    from .report import load_results
    from .schemas import EXPLORE
    from .ui import console
    for p, kind, d in load_results(list(results)):
        console.rule(p)
        if kind == EXPLORE:
            print_explore(d, top=top)
        else:
            print_compare(d)


@cli.command()
@click.argument("config")
@click.option("-o", "--output", "outdir", required=True, metavar="DIR", help="Output directory.")
@click.option("--trace", metavar="TRACE", help="Replay it on the generated .so and on the same config; compare.")
@click.option("--results", default="dmmkit-explore.json", show_default=True, metavar="FILE",
              help="Explore results where CONFIG may be a result id (or 'best').")
@click.option("--whole", is_flag=True,
              help="The policy serves every request up to 1 MiB (no size-class pages): single-threaded use.")
@click.option("--cc", metavar="CC", help="C compiler for the build.")
@click.option("-j", "--jobs", type=click.IntRange(1, 4096), help="Parallel compile jobs.")
@click.option("--no-build", is_flag=True, help="Write the files only.")
@click.pass_context
def generate(ctx, config, outdir, trace, results, whole, cc, jobs, no_build):
    """Emit CONFIG (a preset, key=value,... or an explore result id / 'best')
    as a specialised allocator: frozen header, static library, LD_PRELOAD
    .so (libdmm with CONFIG as its medium heap), README; build it; with
    --trace check it on the trace."""
    from .generate import generate as do_generate
    do_generate(_tools(ctx), config, outdir, trace=trace, results=results, whole=whole, cc=cc, jobs=jobs,
                build=not no_build)


@cli.command()
@click.option("-o", "--output", "outdir", required=True, metavar="DIR",
              help="Output directory: study.json (schema dmm-study/1), study.md, PNG plots.")
@click.option("--threads", "threads", default="1,2,4,8", show_default=True, metavar="LIST",
              help="Thread counts of the sweep (comma-separated).")
@click.option("--reps", default=5, show_default=True, type=int, help="Interleaved repetitions.")
@click.option("--alloc", "allocators", multiple=True, metavar="LIST",
              help="Comma-separated: glibc, jemalloc, mimalloc, tcmalloc, tbbmalloc, libdmm. Default: all six "
                   "(those not installed or not built are left out, with a note).")
@click.option("--workloads", multiple=True, metavar="LIST",
              help="Comma-separated workload names (default: every mt-* program and every real workload).")
@click.option("--scale", default=200, show_default=True, type=int, help="--scale of the mt programs.")
@click.option("--real-scale", type=int, help="--scale passed to real.sh (default: its own).")
@click.option("--mt-dir", metavar="DIR", help="Directory of the mt-* programs (default: the build tree's "
                                             "bench/workloads/mt).")
@click.option("--real", metavar="PATH", help="The real-program driver (default: bench/workloads/real/real.sh).")
@click.option("--no-real", is_flag=True, help="Leave the real programs out.")
@click.option("--timeout", default=600.0, show_default=True, type=click.FloatRange(min=0.1),
              help="Seconds before one run is killed (and counted as failed).")
@click.option("--no-analyse", is_flag=True, help="Skip the recorded request-pattern analysis.")
@click.option("--seed", default=1, show_default=True, type=int, help="Seed of the allocator order shuffles.")
@click.option("--quick", is_flag=True, help="1 repetition, 1 and 2 threads, small scale (tests, CI).")
@click.option("--peer", multiple=True, metavar="NAME=LIB.so",
              help="Another malloc library to preload (a `dmmkit generate` build, a variant of libdmm); studied "
                   "beside the --alloc list.")
@click.option("--external", metavar="FILE",
              help="A manifest of programs of your own (e.g. the mimalloc-bench programs you built): one a line, "
                   "'NAME threaded|single [stdin=FILE] [check=output] -- PROGRAM ARGS', {threads} and {dir} "
                   "replaced (docs/study.md).")
@click.option("--external-dir", metavar="DIR", help="What {dir} stands for in --external (default: the "
                                                    "manifest's directory).")
@click.option("--pin", is_flag=True, help="Run each program on its first min(threads, CPUs) CPUs (taskset).")
@click.pass_context
def study(ctx, outdir, threads, reps, allocators, workloads, scale, real_scale, mt_dir, real, no_real, timeout,
          no_analyse, seed, quick, peer, external, external_dir, pin):
    """The many-core heap study: a thread sweep of multi-threaded programs and
    real programs under glibc, jemalloc, mimalloc, tcmalloc, tbbmalloc and
    libdmm (LD_PRELOAD); time and peak RSS with confidence intervals, each
    workload's request patterns beside them (docs/study.md)."""
    from .study import StudyOptions, parse_threads, run_study
    opts = StudyOptions(outdir=outdir, threads=parse_threads(threads), reps=reps, allocators=list(allocators),
                        workloads=list(workloads), scale=scale, real_scale=real_scale, mt_dir=mt_dir, real=real,
                        no_real=no_real, timeout=timeout, analyse=not no_analyse, seed=seed, quick=quick,
                        peers=list(peer), external=external, external_dir=external_dir, pin=pin, argv=_argv())
    try:
        tools = _tools(ctx)
    except DmmkitError as e:
        if no_analyse:
            tools = None  # the tools only serve the analysis (and finding the build tree)
        else:
            raise e
    run_study(tools, opts)


@cli.command(context_settings={"ignore_unknown_options": True})
@click.option("-o", "--output", "outdir", metavar="DIR",
              help="Output directory (default ./dmmkit-advise; with --from: print only unless given).")
@click.option("--budget-minutes", default=5.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Time budget, split between the steps (recording runs the program once, whatever it is).")
@click.option("--current", metavar="NAME",
              help="The allocator the program uses today: the baseline of every ratio (default glibc; with --from, "
                   "the advise results' own).")
@click.option("--program", "program_text", metavar="CMD", help="With TRACE: the program it came from (for the "
                                                               "end-to-end check).")
@click.option("--from", "from_results", is_flag=True, help="ARGS are compare/explore/advise results files: an "
                                                           "answer from them, no new measurement.")
@click.option("--keep-going", is_flag=True, help="Advise on the trace of a program that failed while recorded.")
@click.option("-a", "--allocators", metavar="LIST", help="The allocators compared (compare's -a; default: compare's "
                                                          "default list).")
@click.option("--skip", metavar="STEPS", default="", help="Steps left out, comma-separated: explore, generate, e2e.")
@click.option("--e2e-reps", default=9, show_default=True, type=click.IntRange(2, 1000),
              help="Least repetitions of the end-to-end check (more when the budget allows).")
@click.argument("args", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_context
def advise(ctx, outdir, budget_minutes, current, program_text, from_results, keep_going, allocators, skip, e2e_reps,
           args):
    """From a program (or a trace) to one answer per goal: speed, memory,
    worst case.

    \b
    dmmkit advise [OPTIONS] -- PROGRAM ARGS...   record, analyse, explore, compare, generate, run it end to end
    dmmkit advise TRACE [--program "CMD"]        the same from a trace
    dmmkit advise --from RESULTS...              an answer from existing results (no new measurement)"""
    import shlex
    from .advise import AdviseOptions, run_advise
    args = list(args)
    opts = AdviseOptions(outdir=outdir, budget_minutes=budget_minutes, current=current or "glibc",
                         current_given=current is not None, keep_going=keep_going,
                         e2e_reps=e2e_reps, allocators=allocators, argv=_argv(),
                         skip=[x.strip() for x in skip.split(",") if x.strip()])
    if args and args[0] == "--":
        args = args[1:]
    _advise_args_check(ctx, args, from_results)
    if from_results:
        opts.from_results = args
    elif len(args) == 1 and os.path.isfile(args[0]) and not os.access(args[0], os.X_OK):
        # one file that is not a program: a trace
        opts.trace = args[0]
        if program_text:
            opts.program = shlex.split(program_text)
    elif program_text:
        raise DmmkitError("--program goes with a TRACE: dmmkit advise TRACE --program \"CMD\"")
    else:
        opts.program = args
    tools = None if from_results else _tools(ctx)
    run_advise(tools, opts)


def _advise_args_check(ctx, args: list[str], from_results: bool) -> None:
    """advise takes unknown options as the program's (after --): an option
    before the program is a typo of advise's own (`--bugdet 3 -- ls`), and
    one missing file that is not a program is a missing trace."""
    if args and args[0].startswith("-") and args[0] != "-":
        import difflib
        name = args[0].split("=", 1)[0]
        known = [o for p in ctx.command.params for o in p.opts + p.secondary_opts if o.startswith("--")]
        # a typo may also shorten the option (--bugdet for --budget-minutes):
        # each option is compared whole and cut to the typo's length
        score = {o: max(difflib.SequenceMatcher(None, name, o).ratio(),
                        difflib.SequenceMatcher(None, name, o[:len(name)]).ratio()) for o in known}
        near = [o for o in sorted(score, key=score.get, reverse=True) if score[o] >= 0.6][:1]
        raise click.NoSuchOption(name, message=f"No such option: {name}" + (f" (did you mean {near[0]}?)" if near
                                                                            else "") + "; the program goes after --",
                                 ctx=ctx)
    if from_results or len(args) != 1 or os.path.exists(args[0]):
        return
    import shutil
    a = args[0]
    if "/" not in a and shutil.which(a):
        return
    if os.path.splitext(a)[1] in (".trace", ".txt", ".json", ".gz") or "/" in a and not os.path.isdir(
            os.path.dirname(a) or "."):
        raise DmmkitError(f"no such file: {a} (neither a trace nor a program)", 2)


# ---- spm-rewrite: the scratchpad heap's compiler pass (tools/spmcc, docs/spm.md) ----
@cli.command("spm-rewrite", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def spm_rewrite(ctx, args):
    """Rewrite a C file for the scratchpad heap: dmm-spmcc's arguments
    (FILE.c [-o OUT] [-I DIR] [-D NAME] [--alloc NAME=malloc]); a refusal is
    `file:line: why` and exit status 1."""
    import importlib.util
    from .tools import find_root
    root = find_root((ctx.find_root().obj or {}).get("root"))
    src = root / "tools" / "spmcc" / "spmcc.py" if root else None
    if src is None or not src.is_file():
        raise DmmkitError("spm-rewrite: tools/spmcc/spmcc.py not found (run inside the dmmkit tree or pass --root)")
    spec = importlib.util.spec_from_file_location("dmmkit_spmcc", src)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    sys.exit(mod.main(list(args)))


def main(argv=None):
    try:
        rv = cli.main(args=argv, prog_name="dmmkit", standalone_mode=False)
    except DmmkitError as e:
        cmd = _command_name(argv)
        err_console.print(f"dmmkit{(' ' + cmd) if cmd else ''}: error: {e.message}", markup=False, soft_wrap=True)
        sys.exit(e.status)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        err_console.print("dmmkit: aborted", markup=False)
        sys.exit(130)
    except KeyboardInterrupt:
        err_console.print("dmmkit: interrupted", markup=False)
        sys.exit(130)
    except Exception as e:  # noqa: BLE001 - the last resort: no traceback reaches a user
        if os.environ.get("DMMKIT_DEBUG"):
            raise
        cmd = _command_name(argv)
        what = f"{type(e).__name__}: {e}".splitlines()[0] if str(e) else type(e).__name__
        err_console.print(f"dmmkit{(' ' + cmd) if cmd else ''}: internal error: {what} (a bug in dmmkit; "
                          "DMMKIT_DEBUG=1 shows where)", markup=False, soft_wrap=True)
        sys.exit(RUNTIME)
    sys.exit(rv if isinstance(rv, int) else 0)


def _command_name(argv):
    args = list(sys.argv[1:] if argv is None else argv)
    names = set(cli.commands)
    for a in args:
        if a in names:
            return a
    return ""


if __name__ == "__main__":
    main()
