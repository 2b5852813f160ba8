"""Every JSON document the front end writes or reads: its name and version
(the `schema` field), and the shape the readers rely on.

The native tools write dmm-replay/1, dmm-analyse/1, dmm-timeline/1 and
dmm-heapmap/1 (the C side defines the same strings in one header); the front
end writes dmmkit-compare/1, dmmkit-explore/1 and dmm-study/1.  A reader gets a document
through dmmkit.validate.load_document / check_document with one of the
kinds below, which checks the name, the version and the shape here, so the
shapes list every field a reader uses, with its type.  Fields a reader does
not use are not checked (they may hold anything).
"""

from __future__ import annotations

from .validate import (Any, Arr, Bool, Check, Doc, Enum, Int, Map, Num, Obj, Opt, Schema, Str, Tup)

# ------------------------------------------------------------ the names ---

REPLAY = Schema("dmm-replay", 1, "dmm-replay output")
ANALYSE = Schema("dmm-analyse", 1, "dmm-analyse output")
TIMELINE = Schema("dmm-timeline", 1, "a dmm-replay timeline")
HEAPMAP = Schema("dmm-heapmap", 1, "a dmm-replay heap map")
COMPARE = Schema("dmmkit-compare", 1, "dmmkit compare results")
EXPLORE = Schema("dmmkit-explore", 1, "dmmkit explore results")
STUDY = Schema("dmm-study", 1, "dmmkit study results")

RESULTS = (EXPLORE, COMPARE)  # what show and report read

# ----------------------------------------------------------- the shapes ---

COUNT = Int(lo=0)
SIZE = Int(lo=0)
ONUM = Opt(Num)
OSTR = Opt(Str)
OBOOL = Opt(Bool)

# summarize(): median, min, max, q1, q3, n of some values
SUMMARY = Obj(optional={"median": ONUM, "min": ONUM, "max": ONUM, "q1": ONUM, "q3": ONUM, "mean": ONUM,
                        "n": Opt(COUNT)}, what="a summary object (median, min, max, ...)")

# what dmm-replay's memory.footprint_kind can say (dmmkit.memfig.LEGEND
# explains each); "sampled": a system allocator's own count whose peak is
# sampled across the threads of a multi-threaded replay
FOOTPRINT_KIND = Opt(Enum("allocator", "rss_growth", "commit_growth", "sampled"))

MEMORY_FIELDS = {
    # the honest-memory fields (dmm-replay's memory.exact / footprint_kind /
    # rss_growth, copied into the front end's results)
    "memory_exact": OBOOL,
    "footprint_kind": FOOTPRINT_KIND,
    "rss_growth": Opt(SIZE),
}

TIMELINE_SHAPE = Obj({"points": Arr(Tup(Num, Num, Num, ONUM, min_len=3))},
                     {"footprint_source": OSTR, "allocator": OSTR})

BLOCK = Tup(SIZE, SIZE, SIZE, Enum("used", "free", "quick", "top"), Opt(SIZE))
BLOCKS_Z = Obj({"encoding": Str, "n": COUNT, "data": Str}, {"columns": Arr(Str)})


def _heapmap_blocks(doc: dict):
    """A heap map holds its blocks inline (dmm-replay's output, old results)
    or compressed (dmmkit.pictures: blocks_z)."""
    if doc.get("blocks") is None and doc.get("blocks_z") is None:
        return "blocks", "missing (a heap map needs \"blocks\" or \"blocks_z\")"
    return None


HEAPMAP_SHAPE = Check(Obj(optional={"blocks": Arr(BLOCK), "blocks_z": BLOCKS_Z,
                                    "extent": Opt(SIZE), "live": Opt(SIZE), "op": Opt(SIZE),
                                    "free_in_extent": Opt(SIZE), "moment": Opt(Enum("peak_live", "worst_fragmentation")),
                                    "totals": Map(Obj(optional={"blocks": COUNT, "bytes": SIZE}))}),
                      _heapmap_blocks)

PICTURE = Obj(optional={"timeline": Opt(Doc(TIMELINE, TIMELINE_SHAPE)),
                        "heapmap": Opt(Doc(HEAPMAP, HEAPMAP_SHAPE))})
PICTURES = Map(Map(Opt(PICTURE)))  # trace label -> config id / allocator label -> picture

CONTEXT = Obj(optional={"machine": Opt(Obj(optional={"cpu_model": OSTR, "cores": Opt(COUNT), "kernel": OSTR}))})

TRACES = Arr(Obj({"label": Str}, {"path": OSTR, "sha256": OSTR}))

# ---- explore results -------------------------------------------------------

AGGREGATE_NUMBERS = ("instr_per_op", "instr_per_op_frozen", "instr_per_op_runtime", "instr_per_op_ranked",
                     "instr_ratio", "instr_ratio_ranked", "frozen_ratio", "cycles_avg", "cycles_max", "cycles_ratio",
                     "min_arena", "min_arena_max", "peak_footprint", "frag3", "frag4", "memory_ratio", "failed")
AGGREGATE = Obj(optional={**{k: ONUM for k in AGGREGATE_NUMBERS}, "instr_source": OSTR})

PER_TRACE_NUMBERS = ("ops", "instr_per_op", "instr_per_op_frozen", "min_arena", "peak_footprint", "frag3", "frag4",
                     "internal_waste", "external_waste", "failed", "arena")
PER_TRACE = Obj(optional={**{k: ONUM for k in PER_TRACE_NUMBERS},
                          "timing": Opt(Obj(optional={"avg": Opt(SUMMARY), "max": Opt(SUMMARY),
                                                      "clean_samples": Opt(COUNT), "samples": Opt(COUNT)}))})

CONFIG = Obj({"id": Str, "name": Str, "config": Str, "preset": Bool, "feasible": Bool, "front": Bool,
              "aggregate": AGGREGATE},
             {"per_trace": Opt(Map(Opt(PER_TRACE))), "infeasible_reasons": Arr(Str), "timing_front": OBOOL,
              "frozen_front": OBOOL, "frozen_candidate": OBOOL, "timed": OBOOL,
              "frozen": Opt(Obj(optional={"status": OSTR})), "kind": Opt(Enum("dmm", "pool")), "alloc": OSTR,
              "key": OSTR, "heap_id": OSTR})

FROZEN = Obj(optional={"enabled": OBOOL, "measured": Opt(Arr(Str)), "candidates": Opt(Arr(Str)),
                       "runtime_over_frozen_median": ONUM, "seconds": Opt(Map(ONUM)), "builds": Opt(Map(Opt(COUNT))),
                       "callgrind_runs": Opt(COUNT), "cache_hits": Opt(COUNT), "fallback": Opt(Arr(Str)),
                       "reason": OSTR})


def _explore_refs(doc: dict):
    """Every id the readers look up names a configuration."""
    ids = {c["id"] for c in doc["configs"]}
    for key in ("ranking", "front", "timing_front", "timed"):
        for i, x in enumerate(doc.get(key) or []):
            if x not in ids:
                return f"{key}[{i}]", f"\"{x}\" is not the id of a configuration in \"configs\""
    for key in ("best", "reference"):
        x = doc.get(key)
        if x is not None and x not in ids:
            return key, f"\"{x}\" is not the id of a configuration in \"configs\""
    return None


EXPLORE_SHAPE = Check(Obj(
    {"settings": Obj({"memory_metric": Enum("min_arena", "peak_footprint"), "objective": Str},
                     {"speed_metric": OSTR, "grid": OSTR, "arena": ONUM, "max_cycles": ONUM}),
     "traces": TRACES,
     "configs": Arr(CONFIG),
     "ranking": Arr(Str)},
    {"front": Arr(Str), "timing_front": Arr(Str), "timed": Opt(Arr(Str)), "best": OSTR, "reference": OSTR,
     "skipped": Opt(Arr(Obj({"reason": Str}))), "pictures": Opt(PICTURES), "frozen": Opt(FROZEN),
     "context": Opt(CONTEXT), "errors": Opt(Arr(Str))}), _explore_refs)

# ---- compare results -------------------------------------------------------

CI = Tup(Num, Num, min_len=2)  # a 95% interval [lo, hi]

COMPARE_SUMMARY = Obj(optional={
    **{k: Opt(SUMMARY) for k in ("warm_avg", "cold_avg", "warm_p99", "warm_max", "cold_max", "warm_avg_ratio",
                                 "cold_avg_ratio", "warm_p99_ratio", "warm_max_ratio", "cold_max_ratio")},
    "peak_footprint": ONUM, "frag4": ONUM, "frag3": ONUM, "failed": Opt(COUNT), "preemptions": Opt(COUNT),
    "reps": Opt(COUNT), "clean_reps": Opt(COUNT), **MEMORY_FIELDS,
    # the paired test against the baseline on this trace (dmmkit.stats; absent in older files)
    "warm_avg_ratio_geomean": ONUM, "warm_avg_ratio_ci": Opt(CI), "warm_avg_ratio_p": Opt(Num(lo=0)),
    "tie": OBOOL, "group": Opt(Int(lo=1))})

OVERALL = Obj(optional={"warm_avg_ratio_geomean": ONUM, "cold_avg_ratio_geomean": ONUM,
                        "warm_avg_ratio_min": ONUM, "warm_avg_ratio_max": ONUM, "wins": Opt(COUNT),
                        "failed": Opt(COUNT), "traces": Opt(COUNT),
                        "warm_avg_ratio_ci": Opt(CI), "warm_avg_ratio_p": Opt(Num(lo=0)), "tie": OBOOL,
                        "group": Opt(Int(lo=1)), "reps_tested": Opt(COUNT), "clean_only": OBOOL,
                        "peak_footprint_ratio_geomean": ONUM, "memory_exact": OBOOL, "warm_max_ratio_geomean": ONUM})
NOISE = Obj({"runs": COUNT, "preempted": COUNT},
            {"share": Opt(Num(lo=0)), "freq_changes": Opt(COUNT), "spoiled_reps": Opt(Arr(COUNT)),
             "warning": OSTR})

BUCKETS = Arr(Tup(Num(lo=0), Num(lo=0), COUNT))
HISTOGRAMS = Map(Map(Opt(Obj(optional={"cold": Opt(Map(BUCKETS)), "warm": Opt(Map(BUCKETS))}))))


def _compare_refs(doc: dict):
    """Every allocator the ranking names has its overall figures and a
    summary on every trace."""
    for i, lab in enumerate(doc["ranking"]):
        if lab not in doc["overall"]:
            return f"ranking[{i}]", f"\"{lab}\" has no entry in \"overall\""
        for tl, per in doc["summary"].items():
            if lab not in per:
                return f"summary.{tl}", f"no figures for \"{lab}\", which the ranking lists"
    return None


COMPARE_SHAPE = Check(Obj(
    {"baseline": Str,
     "allocators": Arr(Obj({"label": Str}, {"kind": OSTR})),
     "traces": TRACES,
     "settings": Obj({"reps": COUNT}),
     "summary": Map(Map(COMPARE_SUMMARY)),
     "overall": Map(OVERALL),
     "ranking": Arr(Str)},
    {"histograms": Opt(HISTOGRAMS), "pictures": Opt(PICTURES), "complete": OBOOL, "error": OSTR,
     "context": Opt(CONTEXT), "groups": Opt(Arr(Arr(Str))), "trace_groups": Opt(Map(Arr(Arr(Str)))),
     "noise": Opt(NOISE), "reps_done": Opt(COUNT), "reps_stop": OSTR}), _compare_refs)

# ---- study results (dmmkit study) -----------------------------------------

MEAN_CI = Obj(optional={"n": Opt(COUNT), "mean": ONUM, "ci95": ONUM, "sd": ONUM, "min": ONUM, "max": ONUM},
              what="a mean with its confidence interval (n, mean, ci95, ...)")
STUDY_RUN = Obj({"workload": Str, "threads": Int(lo=1), "allocator": Str, "rep": COUNT,
                 "status": Enum("ok", "failed", "wrong")},
                {"time_s": Opt(Num(lo=0)), "rss_kb": Opt(SIZE), "wall_ns": Opt(SIZE), "cpu_s": Opt(Num(lo=0)),
                 "checksum": OSTR,
                 "out_sha": OSTR, "error": OSTR})
STUDY_FIGURES = Obj({"time": MEAN_CI, "rss_kb": MEAN_CI, "runs": COUNT, "bad": COUNT},
                    {"wall_ns": MEAN_CI, "cpu_s": MEAN_CI, "ratio": Opt(MEAN_CI), "rss_ratio": ONUM, "errors": Arr(Str),
                     "known_failure": OSTR})
STUDY_GOAL = Obj(optional={"value": ONUM, "cells": Opt(COUNT), "goal": OSTR})


def _study_refs(doc: dict):
    """Every run, summary and order names a listed workload and allocator;
    a run's status agrees with its error line; thread counts are the
    settings' (or 1 for a single-threaded workload)."""
    allocs = {a["label"] for a in doc["allocators"]}
    wls = {w["name"]: w for w in doc["workloads"]}
    threads = set(doc["settings"]["threads"])
    for i, r in enumerate(doc["runs"]):
        if r["workload"] not in wls:
            return f"runs[{i}].workload", f"\"{r['workload']}\" is not in \"workloads\""
        if r["allocator"] not in allocs:
            return f"runs[{i}].allocator", f"\"{r['allocator']}\" is not in \"allocators\""
        if r["threads"] not in threads and r["threads"] != 1:
            return f"runs[{i}].threads", f"{r['threads']} is not one of the settings' thread counts"
        if r["rep"] >= doc["settings"]["reps"]:
            return f"runs[{i}].rep", f"{r['rep']} is not below the settings' reps ({doc['settings']['reps']})"
        if r["status"] == "ok" and r.get("time_s") is None:
            return f"runs[{i}]", "a run with status \"ok\" has no time_s"
        if r["status"] != "ok" and not r.get("error"):
            return f"runs[{i}]", f"a run with status \"{r['status']}\" has no error line"
    for wl, per_t in doc["summary"].items():
        if wl not in wls:
            return f"summary.{wl}", f"\"{wl}\" is not in \"workloads\""
        for t, figs in per_t.items():
            for a in figs:
                if a not in allocs:
                    return f"summary.{wl}.{t}.{a}", f"\"{a}\" is not in \"allocators\""
    return None


STUDY_SHAPE = Check(Obj(
    {"command": Arr(Str),
     "complete": Bool,
     "machine": Obj({"cores": Opt(COUNT)}, {"cpu_model": OSTR, "kernel": OSTR, "note": OSTR,
                                           "cores_available": Opt(COUNT)}),
     "settings": Obj({"threads": Arr(Int(lo=1, hi=256), min_len=1), "reps": Int(lo=1), "scale": Int(lo=1)},
                     {"real_scale": Opt(Int(lo=1)), "order_seed": Opt(Int), "timeout": ONUM, "quick": OBOOL,
                      "rss_method": Opt(Enum("gnu-time", "wait4"))}),
     "allocators": Arr(Obj({"label": Str}, {"kind": OSTR, "lib": OSTR, "version": OSTR, "package": OSTR})),
     "workloads": Arr(Obj({"name": Str, "kind": Enum("mt", "real", "ext")},
                          {"path": OSTR, "threaded": OBOOL, "command": Opt(Arr(Str)), "stdin": OSTR,
                           "check_output": OBOOL})),
     "runs": Arr(STUDY_RUN),
     "summary": Map(Map(Map(STUDY_FIGURES)))},
    {"orders": Arr(Obj({"rep": COUNT, "workload": Str, "threads": Int(lo=1), "order": Arr(Str)})),
     "best": Map(Map(Obj(optional={"time": OSTR, "rss": OSTR}))),
     "goals": Obj(optional={"time_geomean_vs_mimalloc": Opt(STUDY_GOAL), "rss_geomean_vs_glibc": Opt(STUDY_GOAL),
                            "worst_ratio_overall": ONUM,
                            "worst_ratio_to_best": Opt(Map(Opt(Obj({"ratio": Num, "threads": Int(lo=1)}))))}),
     "analysis": Map(Obj(optional={"threads": Opt(COUNT), "error": OSTR, "trace": OSTR, "process": OSTR, "figures": Opt(Map(Any()))})),
     "skipped": Map(Str), "notes": Arr(Str), "interrupted": OBOOL, "script": OSTR,
     # scripts/provenance.py's record (when run in a source tree)
     "provenance": Obj({"command": Str, "commit": Str, "date": Str, "cpu": Obj({"model": Str})},
                       {"compiler": OSTR, "flags": OSTR,
                        "load": Obj(optional={"before": ONUM, "after": ONUM, "cpus": Opt(COUNT)})})}),
    _study_refs)

# ---- native tool output ----------------------------------------------------

PASS_KIND = Obj(optional={k: ONUM for k in ("avg", "p50", "p99", "max", "count")})
PASS = Obj(optional={"kinds": Opt(Map(Opt(PASS_KIND))), "wall_ns": ONUM, "involuntary_ctx_switches": Opt(COUNT)})

REPLAY_SHAPE = Obj(
    {"trace": Obj(optional={"ops": Opt(COUNT), "threads": Opt(COUNT), "peak_live": Opt(SIZE), "hash": OSTR}),
     "allocator": Obj({"kind": Str}, {"config": OSTR, "detected": OSTR, "malloc_object": OSTR, "variant": OSTR,
                                      "heap_errors": Opt(COUNT)})},
    {"min_arena": Opt(Obj({"found": Bool}, {"bytes": Opt(SIZE), "replays": Opt(COUNT)})),
     "timing": Opt(Obj(optional={"cold": Opt(PASS), "warm": Opt(PASS), "ticks_per_sec": ONUM,
                                 "histograms": Opt(Obj(optional={"cold": Opt(Map(BUCKETS)),
                                                                 "warm": Opt(Map(BUCKETS))}))})),
     "memory": Opt(Obj(optional={"peak_footprint": Opt(SIZE), "exact": OBOOL,
                                 "footprint_kind": FOOTPRINT_KIND, "rss_growth": Opt(SIZE),
                                 "rss": Opt(Obj(optional={"peak_pass": Opt(SIZE)})),
                                 "baseline": Opt(Obj(optional={"footprint": Opt(SIZE)})),
                                 "heap_stats": Opt(Obj(optional={"search_steps": ONUM, "search_max": ONUM}))})),
     "fragmentation": Opt(Obj(optional={k: ONUM for k in ("frag3", "frag4", "internal_waste", "external_waste",
                                                          "metadata", "footprint_at_peak_live")})),
     "failed": Opt(COUNT), "skipped": Opt(COUNT), "verify": OSTR})

ANALYSE_SHAPE = Obj(optional={
    "op_counts": Map(COUNT),
    "peak": Obj(optional={"live_bytes": Opt(SIZE), "live_objects": Opt(COUNT), "op": Opt(COUNT)}),
    "sizes": Obj(optional={"requests": Opt(COUNT), "min": Opt(SIZE), "max": Opt(SIZE), "mean": ONUM,
                           "distinct": Opt(COUNT),
                           "top": Arr(Obj({"size": SIZE, "count": COUNT})),
                           "histogram": Arr(Obj({"min": SIZE, "max": SIZE, "count": COUNT}, {"bytes": SIZE}))}),
    "lifetime": Obj(optional={"mean": ONUM, "max": ONUM, "never_freed": Opt(COUNT)}),
    "threads": Obj(optional={"count": Opt(COUNT), "cross_thread_frees": Opt(COUNT), "frees": Opt(COUNT),
                             "cross_thread_free_fraction": ONUM}),
    "realloc": Obj(optional={"chains": Opt(COUNT), "reallocs": Opt(COUNT), "grow_steps": Opt(COUNT),
                             "shrink_steps": Opt(COUNT), "growth_median": ONUM})})

SHAPES = {
    REPLAY: REPLAY_SHAPE,
    ANALYSE: ANALYSE_SHAPE,
    TIMELINE: TIMELINE_SHAPE,
    HEAPMAP: HEAPMAP_SHAPE,
    COMPARE: COMPARE_SHAPE,
    EXPLORE: EXPLORE_SHAPE,
    STUDY: STUDY_SHAPE,
}
