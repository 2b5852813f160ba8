#!/usr/bin/env bash
# scripts/advise_bench.sh - issue 14's acceptance run, rerunnable: a real
# program recorded fresh, `dmmkit advise` on it (time to the answer, the
# answer, the end-to-end check), and `dmmkit explore` with the default grid
# on a ~1M-operation trace of the same program (time to the ranking).
#
#   scripts/advise_bench.sh [--rows N] [--rows-explore N] [--budget-minutes M]
#
# The program: sqlite3 sorting N generated rows in memory (default 45000
# rows: about 540k allocator operations; 85000 rows for the explore run:
# about 1.02M).  Needs scripts/setup.sh's packages (sqlite3 among them),
# the .venv with dmmkit (scripts/main.sh or python/run_tests.sh makes it)
# and the release build of the tools.
# Writes bench/results/advise_sqlite.json (self-describing: command, machine,
# seconds, operations, the answer, the end-to-end figures, explore's budget
# summary and best config) and bench/results/advise_sqlite.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
ROWS=45000 ROWS_X=85000 BUDGET=5
while [ $# -gt 0 ]; do
    case "$1" in
        --rows) ROWS=$2; shift 2 ;;
        --rows-explore) ROWS_X=$2; shift 2 ;;
        --budget-minutes) BUDGET=$2; shift 2 ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "advise_bench: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
command -v sqlite3 >/dev/null || { echo "advise_bench: sqlite3 is not installed (scripts/setup.sh --tests)" >&2; exit 1; }
DMMKIT=.venv/bin/dmmkit
[ -x "$DMMKIT" ] || { echo "advise_bench: $DMMKIT missing (run scripts/main.sh or python/run_tests.sh first)" >&2; exit 1; }

query() {
    echo "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<$1) SELECT count(*) FROM (SELECT x, printf('name-%d-%s', x, hex(randomblob(8))) AS n FROM c ORDER BY n);"
}
W=$(mktemp -d "${TMPDIR:-/tmp}/dmmkit-advise-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT

echo "advise_bench: dmmkit advise -- sqlite3 :memory: <sort $ROWS rows> (budget $BUDGET min)"
export DMM_LOAD0
DMM_LOAD0=$(python3 scripts/provenance.py --load)
t0=$(date +%s.%N)
"$DMMKIT" advise -o "$W/advise" --budget-minutes "$BUDGET" -- sqlite3 :memory: "$(query "$ROWS")" | tee "$W/advise.log"
t1=$(date +%s.%N)

echo "advise_bench: dmmkit explore (default grid) on a trace of sqlite3 sorting $ROWS_X rows"
"$DMMKIT" record -o "$W/sqlite-x.trace" -- sqlite3 :memory: "$(query "$ROWS_X")" >/dev/null
t2=$(date +%s.%N)
"$DMMKIT" explore "$W/sqlite-x.trace" --results "$W/explore.json" --cache "$W/cache" | tee "$W/explore.log"
t3=$(date +%s.%N)

.venv/bin/python - "$W" "$t0" "$t1" "$t2" "$t3" "$ROWS" "$ROWS_X" "$BUDGET" <<'PY'
import datetime, json, os, platform, sys
w, t0, t1, t2, t3, rows, rows_x, budget = sys.argv[1:]
adv = json.load(open(os.path.join(w, "advise", "advise.json")))
exp = json.load(open(os.path.join(w, "explore.json")))
ans = adv.get("answer") or {}
e2e = adv.get("e2e") or {}
b = exp.get("budget") or {}
by_id = {c["id"]: c for c in exp.get("configs") or []}
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
doc = {
    "schema": "dmmkit-bench-advise/1",
    "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "command": f"scripts/advise_bench.sh --rows {rows} --rows-explore {rows_x} --budget-minutes {budget}",
    "machine": {"cpu": cpu, "cpus": os.cpu_count(), "kernel": platform.release()},
    "advise": {"program": adv.get("program"), "ops": (adv.get("trace") or {}).get("ops"),
               "seconds": round(float(t1) - float(t0), 1), "budget_minutes": float(budget),
               "answer": ans, "e2e_ranking_check": e2e.get("ranking_check"),
               "e2e": {k: {f: v.get(f) for f in ("wall_ratio", "rss_ratio", "output_same")}
                       for k, v in (e2e.get("allocators") or {}).items()}},
    "explore": {"rows": int(rows_x), "ops": (exp.get("traces") or [{}])[0].get("ops"),
                "seconds": round(float(t3) - float(t2), 1), "grid": (exp.get("settings") or {}).get("grid"),
                "budget": {k: b.get(k) for k in ("per_config_s", "relative", "screen_ops", "screened", "full",
                                                  "seconds")},
                "dropped": len(b.get("dropped") or []), "best": exp.get("best"),
                "best_config": (by_id.get(exp.get("best")) or {}).get("config")},
}
sys.path.insert(0, "scripts")
from provenance import cmake_build, markdown, provenance
doc["provenance"] = provenance(doc["command"], *cmake_build("build/release"), "dmmkit advise / explore (.venv)",
                               float(os.environ["DMM_LOAD0"]))
json.dump(doc, open("bench/results/advise_sqlite.json", "w"), indent=1)
L = ["# Issue 14 acceptance run: `dmmkit advise` and `dmmkit explore` on sqlite3", "",
     markdown(doc["provenance"]), "",
     f"Made by `{doc['command']}` on {cpu} ({os.cpu_count()} CPUs), {doc['created']}.", "",
     "| run | operations | seconds | limit |", "|---|---:|---:|---:|",
     f"| advise (record, explore, compare, generate, e2e, report) | {doc['advise']['ops']} | "
     f"{doc['advise']['seconds']} | {float(budget) * 60:.0f} |",
     f"| explore, default grid | {doc['explore']['ops']} | {doc['explore']['seconds']} | 300 |", "",
     "The answer (against glibc):", ""]
for g in ans.get("goals") or []:
    L.append(f"* {g.get('sentence')}")
for c in ans.get("caveats") or []:
    L.append(f"* caveat: {c}")
rc = e2e.get("ranking_check") or {}
if rc:
    rho = rc.get("spearman")
    L += ["", "Replay ranking against the real program's wall-time ranking: Spearman rho "
              + (f"{rho:.2f}" if isinstance(rho, (int, float)) else "-")
              + f" over {len(rc.get('allocators') or [])} allocators."]
open("bench/results/advise_sqlite.md", "w").write("\n".join(L) + "\n")
print("advise_bench: wrote bench/results/advise_sqlite.json and .md")
PY
