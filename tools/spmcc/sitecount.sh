#!/bin/sh
# tools/spmcc/sitecount.sh - how many translations each line of a program
# rewritten by dmm-spmcc makes in one run (docs/spm.md, "The compiler pass"):
# the rewritten source is compiled again with every spmcc_p2s / p2s_ro /
# p2s_part / p2s_part_ro / pin (and _any) call counted by its line, run with
# the given arguments (SPMCC_LOCAL, SPMCC_CONFIG, ... from the environment as
# usual), and the lines are printed busiest first with their text.
#
#   tools/spmcc/sitecount.sh BUILD_DIR REWRITTEN.spm.c SCRATCH_DIR [ARGS...]
#
# BUILD_DIR: a configured and built tree (its tools/spmcc/libdmm_spmcc_rt.a
# and lib/libdmm_heap.a are linked); REWRITTEN.spm.c: e.g.
# BUILD_DIR/tools/spmcc/seed_dijkstra.spm.c; SCRATCH_DIR: where the counting
# build and its output go.  Measurement only: nothing here is a test.
set -e
[ $# -ge 3 ] || { sed -n '2,14p' "$0"; exit 2; }
B=$(cd "$1" && pwd); src=$2; out=$3; shift 3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-python3}
mkdir -p "$out"
"$PY" - "$src" "$out/counted.c" <<'EOF'
import sys
s = open(sys.argv[1]).read()
names = ["spmcc_p2s", "spmcc_p2s_ro", "spmcc_p2s_part", "spmcc_p2s_part_ro", "spmcc_pin",
         "spmcc_p2s_any", "spmcc_p2s_ro_any", "spmcc_pin_any"]
inc = '#include "spmcc_rt.h"\n'
if inc not in s:
    sys.exit("sitecount: %s was not written by dmm-spmcc" % sys.argv[1])
lines = s.count("\n") + 2
h = inc + "#include <stdio.h>\n#include <stdlib.h>\n"
h += "static unsigned long spmcc_sites[%d][%d];\n" % (len(names), lines)
h += ("static void spmcc_sites_dump(void) { FILE *f = fopen(getenv(\"SITECOUNT_OUT\"), \"w\"); if (!f) return; "
      "for (int k = 0; k < %d; k++) for (int i = 0; i < %d; i++) if (spmcc_sites[k][i]) "
      "fprintf(f, \"%%d %%d %%lu\\n\", i, k, spmcc_sites[k][i]); fclose(f); }\n" % (len(names), lines))
h += "__attribute__((constructor)) static void spmcc_sites_init(void) { atexit(spmcc_sites_dump); }\n"
for k, n in enumerate(names):
    h += "#define %s(...) (spmcc_sites[%d][__LINE__]++, %s(__VA_ARGS__))\n" % (n, k, n)
line = s[:s.index(inc)].count("\n") + 2
h += "#line %d\n" % line
open(sys.argv[2], "w").write(s.replace(inc, h, 1))
EOF
${CC:-cc} -O1 -std=gnu11 -w -I"$ROOT/include" -I"$ROOT/tools/spmcc/runtime" -I"$ROOT/bench/workloads/programs" \
    -I"$(dirname "$src")" "$out/counted.c" "$B/tools/spmcc/libdmm_spmcc_rt.a" "$B/lib/libdmm_heap.a" \
    -lpthread -lm -o "$out/counted"
SITECOUNT_OUT="$out/counts" "$out/counted" "$@" >"$out/stdout"
"$PY" - "$src" "$out/counts" <<'EOF'
import sys
lines = open(sys.argv[1]).read().split("\n")
names = ["p2s", "p2s_ro", "p2s_part", "p2s_part_ro", "pin", "p2s_any", "p2s_ro_any", "pin_any"]
rows = {}
for l in open(sys.argv[2]):
    i, k, c = map(int, l.split())
    rows.setdefault(i, {})[names[k]] = c
total = sum(sum(r.values()) for r in rows.values())
print("translations: %d" % total)
for i in sorted(rows, key=lambda i: (-sum(rows[i].values()), i)):
    kinds = " ".join("%s %d" % kv for kv in sorted(rows[i].items()))
    print("%8d  line %-5d %-28s %s" % (sum(rows[i].values()), i, kinds, lines[i - 1].strip()[:110]))
EOF
