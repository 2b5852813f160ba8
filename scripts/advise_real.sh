#!/usr/bin/env bash
# scripts/advise_real.sh - issue 26's benchmark: `dmmkit advise` as a new user
# runs it, on four programs no one here bundled, with a 3-minute budget.
#
#   scripts/advise_real.sh [--budget-minutes M] [--only NAME...] [--out STEM]
#
# The programs (those installed are run; the others are listed as missing):
#   perl    a perl hash build: 430,000 keys, then sorted (about 2.1M operations)
#   python  a Python dict built and round-tripped through JSON (about 1.6M
#           operations; advise records it with PYTHONMALLOC=malloc)
#   git     `git log --stat` of this repository (all its commits;
#           DMM_BENCH_GIT_REPO names another)
#   sqlite  sqlite3 sorting 45,000 generated rows in memory (about 540k)
#   main    not a program: the README's main job, timed (issue 26's goal:
#           <= 5 min on an idle 2-core machine, <= 15 min at load 2x the
#           cores).  A fresh copy of HEAD (git archive) gets scripts/setup.sh
#           (timed apart: apt has nothing to do on a set-up machine; the venv
#           is made), then `scripts/main.sh` is timed from its start: native
#           build, explore, compare, answer and report with an empty cache,
#           as on a fresh machine after set-up.  The load average before,
#           during (sampled every 10 s) and after is recorded.  Run only
#           when named (--only main), as it takes minutes.
# For each: the wall time of the whole advise run against the budget, the
# load average before and after, the explore figures (configs with full
# deterministic figures on the window, the window and its measured
# fidelity), whether generate and the end-to-end check ran the chosen dmm
# config and libdmm, the three sentences, and whether any answer's `Next:`
# is contradicted by the end-to-end check (a switch for speed whose real
# wall-time interval does not lie below 1 with p < 0.05, a switch for memory
# whose real peak RSS is not below 0.98x).
# Needs the release build (tools, recorder, libdmm.so: scripts/main.sh
# builds them) and .venv (scripts/setup.sh).  Writes
# bench/results/advise_real.json and bench/results/advise_real.md (the
# scripts/provenance.py record: command, commit, compiler, flags, CPU, load;
# and the figures; --out STEM writes bench/results/STEM.{json,md} instead).  DMM_BENCH_COMMIT names the
# commit when the checkout has no .git (a `git archive` copy).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
ARGS="$*"
BUDGET=3
ONLY=()
OUT=advise_real
while [ $# -gt 0 ]; do
    case "$1" in
        --budget-minutes) BUDGET=$2; shift 2 ;;
        --only) shift; while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do ONLY+=("$1"); shift; done ;;
        --out) OUT=$2; shift 2 ;;
        -h|--help) sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "advise_real: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
DMMKIT=.venv/bin/dmmkit
[ -x "$DMMKIT" ] || { echo "advise_real: $DMMKIT missing (scripts/setup.sh makes it)" >&2; exit 1; }
for f in lib/libdmm.so tools/dmm-replay tools/dmm-analyse tools/dmm-trace; do
    # dmmkit would otherwise fall back to build/debug's tools (-O0), and the
    # explore budget would then measure the debug build
    [ -f "build/release/$f" ] || { echo "advise_real: build/release/$f missing (scripts/main.sh builds it)" >&2; exit 1; }
done

W=$(mktemp -d "${TMPDIR:-/tmp}/dmmkit-advise-real.XXXXXX")
trap 'rm -rf "$W"' EXIT

PERL_CODE='my %h; for my $i (1..430000) { $h{"key$i"} = "v" x ($i % 50) } my @k = sort keys %h; print scalar(@k), "\n"'
PY_CODE='import json; d = {str(i): [i, str(i) * 3, {"k": i}] for i in range(25000)}; s = json.dumps(d); print(len(json.loads(s)))'
SQL="WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<45000) SELECT count(*) FROM (SELECT x, printf('name-%d-%s', x, hex(randomblob(8))) AS n FROM c ORDER BY n);"

want() { [ ${#ONLY[@]} -eq 0 ] && [ "$1" != main ] && return 0; local n; for n in "${ONLY[@]}"; do [ "$n" = "$1" ] && return 0; done; return 1; }

: > "$W/runs.tsv"
run_one() {  # NAME BINARY -- PROGRAM ARGS...
    local name=$1 bin=$2; shift 3
    want "$name" || return 0
    if ! command -v "$bin" >/dev/null 2>&1; then
        printf '%s\tmissing\t%s\n' "$name" "$bin" >> "$W/runs.tsv"
        echo "advise_real: $name: $bin is not installed, skipped"
        return 0
    fi
    local l0 l1 t0 t1 rc=0
    l0=$(cut -d' ' -f1 /proc/loadavg)
    t0=$(date +%s.%N)
    echo "advise_real: $name: dmmkit advise --budget-minutes $BUDGET -- $*"
    "$DMMKIT" advise -o "$W/$name" --budget-minutes "$BUDGET" -- "$@" > "$W/$name.log" 2>&1 || rc=$?
    t1=$(date +%s.%N)
    l1=$(cut -d' ' -f1 /proc/loadavg)
    printf '%s\tran\t%s\t%s\t%s\t%s\t%s\n' "$name" "$rc" "$t0" "$t1" "$l0" "$l1" >> "$W/runs.tsv"
    tail -n 8 "$W/$name.log"
}

main_job() {  # the README's main job in a fresh copy of HEAD, after set-up
    [ ${#ONLY[@]} -gt 0 ] && want main || return 0
    local src="$W/main-src" l0 l1 t0 t1 s0 rc=0 sampler
    mkdir -p "$src"
    git archive HEAD | tar -x -C "$src"
    echo "advise_real: main: scripts/setup.sh in a fresh copy of HEAD ($src)"
    s0=$(date +%s.%N)
    (cd "$src" && scripts/setup.sh) > "$W/main-setup.log" 2>&1 || { tail -n 20 "$W/main-setup.log"; exit 1; }
    printf '%s\n' "$(date +%s.%N)" > "$W/main-setup.end"
    echo "advise_real: main: scripts/main.sh (timed)"
    ( while :; do cut -d' ' -f1 /proc/loadavg >> "$W/main-load.txt"; sleep 10; done ) &
    sampler=$!
    l0=$(cut -d' ' -f1 /proc/loadavg)
    t0=$(date +%s.%N)
    (cd "$src" && DMM_BENCH_COMMIT="$(git -C "$ROOT" rev-parse --short=12 HEAD)" scripts/main.sh) \
        > "$W/main.log" 2>&1 || rc=$?
    t1=$(date +%s.%N)
    l1=$(cut -d' ' -f1 /proc/loadavg)
    kill "$sampler" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    printf 'main\tmainjob\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rc" "$t0" "$t1" "$l0" "$l1" "$s0" >> "$W/runs.tsv"
    tail -n 3 "$W/main.log"
}

main_job
run_one perl perl -- perl -e "$PERL_CODE"
run_one python python3 -- python3 -c "$PY_CODE"
run_one git git -- git -C "${DMM_BENCH_GIT_REPO:-$ROOT}" log --stat
run_one sqlite sqlite3 -- sqlite3 :memory: "$SQL"

.venv/bin/python - "$W" "$BUDGET" "$ARGS" "$OUT" <<'PY'
import datetime, json, os, platform, subprocess, sys
w, budget, args, stem = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]

def sh(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return ""

cache = {}
try:
    for ln in open("build/release/CMakeCache.txt"):
        if ln.startswith(("CMAKE_C_COMPILER:", "CMAKE_C_FLAGS_RELEASE:", "CMAKE_BUILD_TYPE:")):
            k, v = ln.strip().split("=", 1)
            cache[k.split(":")[0]] = v
except OSError:
    pass
cc = cache.get("CMAKE_C_COMPILER", "cc")
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")


def backed(goal, e2e):
    """Whether a switch is backed by the end-to-end check (None: no switch
    or no check for this goal)."""
    ch, cur = goal.get("choice"), "glibc"
    if not ch or goal.get("kind") == "current" or goal["goal"] == "worst case":
        return None
    ent = ((e2e or {}).get("allocators") or {}).get(ch) or {}
    if not ent.get("ok"):
        return None if not (e2e or {}).get("allocators") else False
    if goal["goal"] == "speed":
        f = ent.get("wall_ratio") or {}
        ci, p = f.get("ci"), f.get("p")
        return bool(ci and ci[1] < 1 and p is not None and p < 0.05)
    f = ent.get("rss_ratio") or {}
    return f.get("ratio") is not None and f["ratio"] < 0.98


runs = []
main_job = None
for ln in open(os.path.join(w, "runs.tsv")):
    t = ln.rstrip("\n").split("\t")
    if t[1] == "missing":
        runs.append({"program": t[0], "missing": t[2]})
        continue
    if t[1] == "mainjob":
        rc, t0, t1, l0, l1, s0 = int(t[2]), float(t[3]), float(t[4]), float(t[5]), float(t[6]), float(t[7])
        loads = [float(x) for x in open(os.path.join(w, "main-load.txt")).read().split()] if os.path.exists(
            os.path.join(w, "main-load.txt")) else []
        log = open(os.path.join(w, "main.log"), errors="replace").read().splitlines()
        steps = [x.strip() for x in log if x.startswith("[main ")]
        main_job = {"command": "scripts/main.sh", "where": "a fresh copy of HEAD (git archive), after scripts/setup.sh",
                    "exit": rc, "seconds": round(t1 - t0, 1),
                    "setup_seconds": round(float(open(os.path.join(w, "main-setup.end")).read()) - s0, 1),
                    "load_before": l0, "load_after": l1,
                    "load_during": {"samples": len(loads), "min": min(loads, default=None),
                                    "mean": round(sum(loads) / len(loads), 2) if loads else None,
                                    "max": max(loads, default=None)},
                    "steps": steps, "last_lines": log[-3:]}
        continue
    name, rc, t0, t1, l0, l1 = t[0], int(t[2]), float(t[3]), float(t[4]), float(t[5]), float(t[6])
    adv = {}
    try:
        adv = json.load(open(os.path.join(w, name, "advise.json")))
    except (OSError, ValueError):
        pass
    exp = {}
    if adv.get("explore"):
        try:
            exp = json.load(open(adv["explore"]))
        except (OSError, ValueError):
            pass
    full = [c["id"] for c in exp.get("configs") or [] if c.get("feasible", True)
            and (c.get("aggregate") or {}).get("min_arena") is not None
            and (c.get("aggregate") or {}).get("instr_per_op") is not None]
    e2e = adv.get("e2e") or {}
    gen = adv.get("generated") or {}
    ans = adv.get("answer") or {}
    goals = ans.get("goals") or []
    contradicted = [g["goal"] for g in goals if backed(g, e2e) is False]
    log_tail = open(os.path.join(w, f"{name}.log"), errors="replace").read().strip().splitlines()[-1:]
    runs.append({
        "program": name, "command": adv.get("program"), "exit": rc, "error": adv.get("error") or (
            log_tail[0] if rc else None),
        "seconds": round(t1 - t0, 1), "budget_s": budget * 60, "load_before": l0, "load_after": l1,
        "ops": (adv.get("trace") or {}).get("ops"), "plan": (adv.get("budget") or {}).get("plan"),
        "steps_s": (adv.get("budget") or {}).get("steps"),
        "window": {k: v for k, v in (adv.get("window") or {}).items() if k != "slices"},
        "explore_full_figures": len(full), "explore_best": exp.get("best"),
        "generated": {"label": gen.get("label"), "cached": gen.get("cached"),
                      "in_e2e": gen.get("label") in (e2e.get("allocators") or {})} if gen else None,
        "libdmm_in_e2e": "libdmm" in (e2e.get("allocators") or {}),
        "e2e_rounds": len(e2e.get("order") or []),
        "sentences": [g.get("sentence") for g in goals], "next": [g.get("next") for g in goals],
        "caveats": ans.get("caveats"), "contradicted_next": contradicted,
    })

sys.path.insert(0, "scripts")
from provenance import cmake_build, markdown, provenance  # noqa: E402
load0 = min([r["load_before"] for r in runs if "load_before" in r]
            + ([main_job["load_before"]] if main_job else []), default=None)
prov = provenance("scripts/advise_real.sh" + (f" {args}" if args else ""), *cmake_build("build/release"),
                  "dmmkit advise (.venv)", load_before=load0)
doc = {
    "schema": "dmmkit-bench-advise-real/1",
    "provenance": prov,
    "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "command": "scripts/advise_real.sh" + (f" {args}" if args else ""),
    # DMM_BENCH_COMMIT: the commit of a source copy without .git (git archive)
    # otherwise the provenance record's: "-dirty" only for changes outside
    # bench/results (a results file just written by an earlier run is not code)
    "commit": os.environ.get("DMM_BENCH_COMMIT") or prov["commit"],
    "compiler": (sh([cc, "--version"]).splitlines() or ["?"])[0],
    "flags": {"build_type": cache.get("CMAKE_BUILD_TYPE"), "c_flags_release": cache.get("CMAKE_C_FLAGS_RELEASE")},
    "machine": {"cpu": cpu, "cpus": os.cpu_count(), "kernel": platform.release()},
    "budget_minutes": budget,
    "goals": {"seconds_max": budget * 60 + 10, "explore_full_figures_min": 10},
    "runs": runs,
}
if main_job:
    doc["goals"].update({"main_job_seconds_max_idle": 300, "main_job_seconds_max_at_2x_cores_load": 900})
    doc["main_job"] = main_job
json.dump(doc, open(f"bench/results/{stem}.json", "w"), indent=1)

L = ["# `dmmkit advise` on real programs (issue 26)", "", markdown(doc["provenance"]), "",
     f"Made by `{doc['command']}` at commit {doc['commit']}, {doc['created']}; {cpu}, {os.cpu_count()} CPUs, "
     f"kernel {platform.release()}; {doc['compiler']}, {cache.get('CMAKE_BUILD_TYPE')} "
     f"`{cache.get('CMAKE_C_FLAGS_RELEASE')}`. Budget {budget:g} min each (goal: done within "
     f"{budget * 60 + 10:.0f} s, >= 10 dmm configs with full deterministic figures, generate and the end-to-end "
     "check of the chosen dmm config and libdmm in every run, no `Next:` the end-to-end check contradicts).", ""]
if runs:
    L += ["| program | ops | seconds | load before/after | explore: configs with full figures (window ops of trace ops) "
               "| window fidelity tau #4 / speed | generated (in e2e) | libdmm in e2e | e2e rounds | contradicted Next |",
          "|---|---:|---:|---|---|---|---|---|---:|---|"]
for r in runs:
    if r.get("missing"):
        L.append(f"| {r['program']} | - | - | - | not installed ({r['missing']}) | | | | | |")
        continue
    win = r["window"] or {}
    fid = win.get("fidelity") or {}
    wtxt = (f"{win.get('ops')} of {win.get('trace_ops')}" if win and not win.get("whole") else "whole trace")
    g = r["generated"] or {}
    L.append(f"| {r['program']} | {r['ops']} | {r['seconds']} | {r['load_before']:.1f} / {r['load_after']:.1f} | "
             f"{r['explore_full_figures']} ({wtxt}) | {fid.get('kendall_tau_frag4', '-')} / "
             f"{fid.get('kendall_tau_speed', '-')} | "
             f"{(g.get('label') or '-') + (' (cached)' if g.get('cached') else '')} ({'yes' if g.get('in_e2e') else 'no'}) | "
             f"{'yes' if r['libdmm_in_e2e'] else 'no'} | {r['e2e_rounds']} | "
             f"{', '.join(r['contradicted_next']) or 'none'} |")
if main_job:
    m, ld = main_job, main_job["load_during"]
    verdict = ("idle goal 300 s" if (ld["mean"] or 0) < 1 else f"goal at load 2x the cores ({2 * os.cpu_count()}): 900 s"
               if (ld["mean"] or 0) <= 2 * os.cpu_count() else "the load was above 2x the cores: no goal applies")
    L += ["", "## The main job (README's first command)", "",
          f"`scripts/main.sh` in {m['where']}: exit {m['exit']}, **{m['seconds']} s** "
          f"(set-up before it: {m['setup_seconds']} s, not counted); load average {m['load_before']} before, "
          f"{m['load_after']} after, during: mean {ld['mean']}, min {ld['min']}, max {ld['max']} "
          f"({ld['samples']} samples, every 10 s) on {os.cpu_count()} CPUs; {verdict}.", ""]
    L += [f"    {x}" for x in m["steps"]]
for r in runs:
    if r.get("missing"):
        continue
    L += ["", f"## {r['program']}", "", "`" + " ".join(r["command"] or []) + "`", ""]
    if r["exit"]:
        L.append(f"advise exited with {r['exit']}: {r['error']}")
        continue
    if r.get("plan"):
        L.append("Plan (s): " + ", ".join(f"{k} {v}" for k, v in r["plan"]["seconds"].items())
                 + "; steps took (s): " + ", ".join(f"{k} {v}" for k, v in (r["steps_s"] or {}).items()))
        L.append("")
    for s in r["sentences"]:
        L.append(f"* {s}")
    for c in r["caveats"] or []:
        L.append(f"* caveat: {c}")
open(f"bench/results/{stem}.md", "w").write("\n".join(L) + "\n")
print(f"advise_real: wrote bench/results/{stem}.json and .md")
PY
