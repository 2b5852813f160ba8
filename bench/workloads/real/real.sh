#!/usr/bin/env bash
# bench/workloads/real/real.sh - the real-program workloads, defined once for
# the libdmm preload tests (tests/malloc/preload_run.sh) and the allocator
# study (README.md here).
#
#   real.sh NAME [--threads N] [--workdir DIR] [--scale S]
#       runs workload NAME and prints a deterministic result on stdout: the
#       same under every correct malloc, any thread count's scheduling.
#       Exit 0; 77 with "skipped: ... not installed" when a program is
#       missing; 2 on bad usage; anything else: the workload failed.
#   real.sh --list
#       one line per workload: "NAME threaded" or "NAME single" (single:
#       --threads is ignored)
#
#   --threads N  worker threads (python3), pack-objects threads (git),
#                redis-benchmark threads (redis); 1..64, default 1
#   --workdir D  where the files go (made if missing, kept afterwards);
#                default a temporary directory, removed at exit
#   --scale S    amount of work, 1..100, roughly linear; default 1
#
# Run it under an allocator with LD_PRELOAD=... real.sh NAME: every process
# it starts (the shell and its tools too) then runs on that allocator.  The
# redis workload leaves the server's stderr in DIR/redis-server.err, so an
# allocator's exit statistics (DMM_SHOW_STATS=1) can be looked for there.
set -uo pipefail

WORKLOADS="python3 threaded
sqlite3 single
cc single
git threaded
redis threaded"

usage() {
    echo "usage: real.sh NAME [--threads N] [--workdir DIR] [--scale S] | real.sh --list" >&2
    exit 2
}

[ $# -ge 1 ] || usage
if [ "$1" = --list ]; then
    [ $# -eq 1 ] || usage
    echo "$WORKLOADS"
    exit 0
fi
name=$1
shift
threads=1 scale=1 workdir=""
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || usage
    case $1 in
        --threads) threads=$2 ;;
        --scale) scale=$2 ;;
        --workdir) workdir=$2 ;;
        *) usage ;;
    esac
    shift 2
done
case $threads in '' | *[!0-9]*) usage ;; esac
case $scale in '' | *[!0-9]*) usage ;; esac
{ [ "$threads" -ge 1 ] && [ "$threads" -le 64 ] && [ "$scale" -ge 1 ] && [ "$scale" -le 100 ]; } || usage
# a here-string, not a pipe: under pipefail, grep -q quitting at its match
# could kill printf with SIGPIPE and fail the pipeline (seen once in CI)
grep -q "^$name " <<<"$WORKLOADS" || { echo "real.sh: unknown workload '$name' (try --list)" >&2; exit 2; }

need() {
    for p in "$@"; do
        command -v "$p" >/dev/null 2>&1 || { echo "skipped: $p not installed"; exit 77; }
    done
}

cleanup_dir=""
if [ -z "$workdir" ]; then
    workdir=$(mktemp -d "${TMPDIR:-/tmp}/real.XXXXXX") || exit 1
    cleanup_dir=$workdir
else
    mkdir -p "$workdir" || exit 1
fi
workdir=$(cd "$workdir" && pwd)
on_exit() {
    [ -n "${redis_stop:-}" ] && redis_stop
    [ -n "$cleanup_dir" ] && rm -rf "$cleanup_dir"
}
trap on_exit EXIT

# ---- python3: JSON, regular expressions, threads ----------------------------------
w_python3() {
    need python3
    python3 - "$threads" "$scale" <<'PY'
import collections, json, re, sys, threading
threads, scale = int(sys.argv[1]), int(sys.argv[2])
d = [dict(a=i, b=str(i) * 7, c=[i] * (i % 13)) for i in range(30000 * scale)]
s = json.dumps(d)
e = json.loads(s)
c = collections.Counter(re.findall(r"\d+", s))
out = [0] * threads
def work(k):
    out[k] = sum(len(json.dumps(x)) for x in e[k::threads])
t = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
[x.start() for x in t]
[x.join() for x in t]
print(len(s), len(c), sum(out), sorted(c.items())[:3])
PY
}

# ---- sqlite3: a table, an index, aggregates --------------------------------------
w_sqlite3() {
    need sqlite3
    rm -f "$workdir/db"
    sqlite3 "$workdir/db" "
create table t(a integer primary key, b text, c real);
with recursive n(i) as (select 1 union all select i + 1 from n where i < $((20000 * scale)))
insert into t select i, printf('%08x', (i * 2654435761) % 4294967296) || i, i * 0.5 from n;
create index tb on t(b);
select count(*), sum(c), count(distinct substr(b, 1, 2)) from t where a % 3 = 0;
select group_concat(a) from (select a from t order by b desc limit 5);"
}

# ---- cc: compile a generated C file with -O2 (cc1 allocates), run it ----------------
w_cc() {
    need cc
    local src=$workdir/prog.c n=$((150 * scale)) i
    {
        echo '#include <stdio.h>'
        for ((i = 0; i < n; i++)); do
            printf 'static unsigned f%d(unsigned x) { unsigned s = %d; for (unsigned i = 0; i < x %% 97; i++) { switch ((s ^ i) & 7) { case 0: s += i * %d; break; case 1: s ^= s << 3; break; case 2: s -= i; break; case 3: s *= 2654435761u; break; default: s += (s >> 5) + %d; } } return s; }\n' \
                "$i" "$i" "$((i % 13 + 1))" "$((i * 7 % 101))"
        done
        echo 'int main(void) { unsigned s = 0;'
        for ((i = 0; i < n; i++)); do printf ' s = s * 31 + f%d(s + %d);' "$i" "$i"; done
        echo ' printf("%u\n", s); return 0; }'
    } >"$src"
    cc -O2 -o "$workdir/prog" "$src" && "$workdir/prog"
}

# ---- git: a repository built deterministically, repacked, logged, checked ---------
w_git() {
    need git
    local repo=$workdir/repo
    rm -rf "$repo"
    export HOME=$workdir GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
    export GIT_AUTHOR_NAME=dmmkit GIT_AUTHOR_EMAIL=dmmkit@example.invalid
    export GIT_COMMITTER_NAME=dmmkit GIT_COMMITTER_EMAIL=dmmkit@example.invalid
    export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z" TZ=UTC LC_ALL=C
    git init -q -b main "$repo" || return 1
    # history through fast-import: 300 files, 200 x scale commits of 6 files
    # each, every commit a deterministic function of its number
    awk -v commits=$((200 * scale)) -v files=300 'BEGIN {
        t = 1767225600
        for (c = 1; c <= commits; c++) {
            printf "commit refs/heads/main\nmark :%d\n", c
            printf "author dmmkit <dmmkit@example.invalid> %d +0000\n", t + c * 60
            printf "committer dmmkit <dmmkit@example.invalid> %d +0000\n", t + c * 60
            msg = sprintf("change %d", c); printf "data %d\n%s\n", length(msg), msg
            if (c > 1) printf "from :%d\n", c - 1
            nf = (c == 1) ? files : 6
            for (k = 0; k < nf; k++) {
                f = (c == 1) ? k : (c * 37 + k * 101) % files
                body = ""
                lines = 20 + (f * 7 + c) % 60
                for (l = 0; l < lines; l++)
                    body = body sprintf("file %d line %d rev %d value %d\n", f, l, (l % 5 == 0) ? c : 0, (f * 31 + l * 17) % 1000)
                printf "M 100644 inline dir%d/file%d.txt\ndata %d\n%s\n", f % 10, f, length(body), body
            }
        }
    }' | git -C "$repo" fast-import --quiet || return 1
    git -C "$repo" reset -q --hard main || return 1
    git -C "$repo" repack -q -adf --threads="$threads" || return 1
    echo "log: $(git -C "$repo" log --stat | wc -l -c | tr -s ' ')"
    local fsck
    # stderr apart: an allocator's exit statistics must not reach the result
    fsck=$(git -C "$repo" fsck --no-progress --full 2>"$workdir/fsck.err") || { echo "$fsck"; cat "$workdir/fsck.err"; return 1; }
    echo "fsck: ${fsck:-clean}"
    echo "head: $(git -C "$repo" rev-parse HEAD)"
    git -C "$repo" count-objects -v | grep -E '^(count|in-pack|packs):'
}

# ---- redis: a private server on a unix socket under redis-benchmark -------------------
redis_pid=""
redis_stop() {
    [ -n "$redis_pid" ] || return 0
    redis-cli -s "$workdir/sock" shutdown nosave >/dev/null 2>&1
    local i
    for ((i = 0; i < 50; i++)); do
        kill -0 "$redis_pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$redis_pid" 2>/dev/null && kill "$redis_pid" 2>/dev/null
    wait "$redis_pid" 2>/dev/null
    redis_pid=""
}
w_redis() {
    need redis-server redis-cli redis-benchmark
    local sock=$workdir/sock i n=$((10000 * scale))
    rm -f "$sock"
    # no TCP port at all; nothing saved; the server's own files stay in workdir
    (cd "$workdir" && exec redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --save '' \
        --appendonly no --daemonize no --dir "$workdir" --logfile "$workdir/redis-server.log") \
        2>"$workdir/redis-server.err" &
    redis_pid=$!
    redis_stop=redis_stop
    for ((i = 0; i < 100; i++)); do
        [ "$(redis-cli -s "$sock" ping 2>/dev/null)" = PONG ] && break
        kill -0 "$redis_pid" 2>/dev/null || { echo "redis-server exited early"; cat "$workdir/redis-server.err"; return 1; }
        sleep 0.1
    done
    [ "$(redis-cli -s "$sock" ping 2>/dev/null)" = PONG ] || { echo "redis-server did not answer in 10 s"; return 1; }
    local rc=0
    redis-cli -s "$sock" set dmmkit:check "$(printf 'v%.0s' $(seq 1 1000))" >/dev/null || rc=1
    timeout 120 redis-benchmark -s "$sock" -n "$n" -c 16 --threads "$threads" -t set,get,lpush,lpop,incr,hset -q \
        >"$workdir/redis-benchmark.out" 2>&1 || { echo "redis-benchmark failed:"; cat "$workdir/redis-benchmark.out"; rc=1; }
    echo "dbsize: $(redis-cli -s "$sock" dbsize)"
    echo "llen mylist: $(redis-cli -s "$sock" llen mylist)"
    echo "counter: $(redis-cli -s "$sock" get counter:__rand_int__)"
    echo "hlen myhash: $(redis-cli -s "$sock" hlen myhash)"
    echo "strlen dmmkit:check: $(redis-cli -s "$sock" strlen dmmkit:check)"
    echo "get dmmkit:check: $(redis-cli -s "$sock" get dmmkit:check | md5sum | cut -c1-32)"
    redis_stop
    return $rc
}

"w_$name"
