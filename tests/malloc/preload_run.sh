#!/usr/bin/env bash
# tests/malloc/preload_run.sh LIB PROGRAM - runs a real program's workload
# once on the C library's malloc and once with LIB (libdmm) preloaded, and
# fails unless both succeed with the same output and LIB really served
# malloc (checked through the process's maps).  Exit 77 = skipped.
set -uo pipefail
lib=$1 prog=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case $prog in
python3)
    run() { python3 -c '
import json, re, collections, threading
d = [dict(a=i, b=str(i) * 7, c=[i] * (i % 13)) for i in range(30000)]
s = json.dumps(d)
e = json.loads(s)
c = collections.Counter(re.findall(r"\d+", s))
out = []
def work(k):
    out.append(sum(len(json.dumps(x)) for x in e[k::4]))
t = [threading.Thread(target=work, args=(k,)) for k in range(4)]
[x.start() for x in t]
[x.join() for x in t]
print(len(s), len(c), sum(out), sorted(c.items())[:3])
'; } ;;
sqlite3)
    run() { rm -f "$work/db"; sqlite3 "$work/db" "
create table t(a integer primary key, b text, c real);
with recursive n(i) as (select 1 union all select i + 1 from n where i < 20000)
insert into t select i, hex(randomblob(16)) || i, i * 0.5 from n;
create index tb on t(b);
select count(*), sum(c), count(distinct substr(b, 1, 2)) from t where a % 3 = 0;
select group_concat(a) from (select a from t order by c desc limit 5);"; } ;;
cc)
    printf '#include <stdio.h>\n#include <stdlib.h>\nint main(void){int s=0;for(int i=0;i<100;i++)s+=i;printf("%%d\\n",s);return 0;}\n' > "$work/p.c"
    run() { cc -O2 -o "$work/p" "$work/p.c" && "$work/p"; } ;;
*) echo "unknown program $prog"; exit 2 ;;
esac
command -v "$prog" >/dev/null || { echo "skipped: $prog not installed"; exit 77; }
ref=$(run 2>&1) || { echo "FAIL: $prog fails on the C library's malloc: $ref"; exit 1; }
got=$(LD_PRELOAD="$lib" run 2>&1) || { echo "FAIL: $prog under libdmm: $got"; exit 1; }
if [ "$ref" != "$got" ]; then
    echo "FAIL: $prog output differs under libdmm"; echo "--- glibc:"; echo "$ref"; echo "--- libdmm:"; echo "$got"
    exit 1
fi
# the preload took effect: libdmm is mapped into the program
maps=$(LD_PRELOAD="$lib" python3 -c 'print(open("/proc/self/maps").read())' 2>/dev/null || true)
case $maps in *"$(basename "$lib")"*) ;; *) echo "FAIL: $lib was not loaded"; exit 1 ;; esac
echo "ok: $prog, same output with libdmm preloaded"
