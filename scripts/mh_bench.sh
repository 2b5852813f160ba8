#!/usr/bin/env bash
# scripts/mh_bench.sh - the multi-heap on real threads (issues 12, 29): builds the
# release preset's mh_threads and writes bench/results/mh_threads.{json,md}.
#   scripts/mh_bench.sh [--threads 1,2,4,8] [--steps N] [--reps R]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
cmake --preset release >/dev/null
cmake --build --preset release --target mh_threads >/dev/null
out=bench/results/mh_threads
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--threads 1,2,4,8 --steps 300000 --reps 9)
load0=$(python3 scripts/provenance.py --load)
PROV=(--command "scripts/mh_bench.sh ${args[*]}" --cmake-build build/release
      --impl "dmm_mh lazy: seed design (locked frees, no cache), queued frees without cache, dmm_mh_default_config (queued frees, home cache 16, tlsf checked), the same with lean tlsf; dmm central heap; glibc malloc")
{
    build/release/bench/mh_threads "${args[@]}" --json "$out.json"
    printf '\n%s\n' "$(python3 scripts/provenance.py --md "${PROV[@]}" --load-before "$load0")"
} > "$out.md"
# the same record in the JSON document
python3 - "$out.json" "$(python3 scripts/provenance.py --json "${PROV[@]}" --load-before "$load0")" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc = {"provenance": json.loads(sys.argv[2]), **doc}
with open(sys.argv[1], "w") as f:
    json.dump(doc, f)
    f.write("\n")
PY
cat "$out.md"
