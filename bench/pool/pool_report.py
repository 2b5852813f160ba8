#!/usr/bin/env python3
"""bench/pool/pool_report.py - merges pool_bench runs (dmm-pool-bench-run/1,
one per binary and round) into one self-describing document
(dmm-pool-bench/1) and a markdown report.  Medians are taken over every
sample of every run of the same row.  Used by scripts/pool_bench.sh."""
import argparse
import json
import os
import platform
import statistics
import sys

POOL_LABEL = {"runtime": "runtime", "lean": "frozen", "checked": "frozen"}


def subject_label(variant, subject):
    if subject.startswith("dmm-pool-"):
        return "dmm-pool %s %s" % (POOL_LABEL[variant], subject[len("dmm-pool-"):])
    return subject


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--command", default="scripts/pool_bench.sh")
    ap.add_argument("--json", required=True)
    ap.add_argument("--md", required=True)
    ap.add_argument("--provenance", help="a JSON record from scripts/provenance.py")
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    runs = [json.load(open(p)) for p in a.runs]
    for r in runs:
        if r.get("schema") != "dmm-pool-bench-run/1" or not r.get("ok"):
            sys.exit("pool_report: %s is not a complete pool_bench run" % r.get("variant"))
    first = runs[0]
    ops, memset, space, ops_meta, memset_meta = {}, {}, None, None, {}
    for r in runs:
        v = r["variant"]
        if "ops" in r:
            ops_meta = {k: r["ops"][k] for k in ("block_size", "align", "blocks", "init_buffer", "reps", "inner")}
            for row in r["ops"]["rows"]:
                ops.setdefault((subject_label(v, row["subject"]), row["op"]), []).extend(row["ns"])
        if "memset" in r:
            memset_meta[v] = r["memset"]["pool_config"]
            for row in r["memset"]["rows"]:
                memset.setdefault((v, row["block_size"], row["pipeline"]), []).extend(row["ns"])
        if "space" in r and space is None:
            space = r["space"]

    prov = json.load(open(a.provenance)) if a.provenance else None
    doc = {
        "schema": "dmm-pool-bench/1",
        "provenance": prov,
        "command": a.command,
        "commit": a.commit,
        "machine": dict(first["machine"], system=platform.system(), release=platform.release(),
                        arch=platform.machine()),
        "compiler": first["compiler"],
        "cflags": first["cflags"],
        "vec": first["vec"],
        "runs": len(runs),
        "ops": dict(ops_meta or {}, unit="ns per operation (median of all samples)", rows=[
            {"subject": s, "op": o, "samples": len(v), "ns_median": round(statistics.median(v), 3)}
            for (s, o), v in ops.items()]),
        "memset": {"unit": "ns per alloc + memset + free (median)", "pool_config": memset_meta, "rows": []},
        "space": space,
    }
    med = {k: statistics.median(v) for k, v in memset.items()}
    for (v, bs, pl), m in med.items():
        doc["memset"]["rows"].append({"variant": v, "block_size": bs, "pipeline": pl, "samples": len(memset[(v, bs, pl)]),
                                      "ns_median": round(m, 3)})
    with open(a.json, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")

    L = []
    L.append("# Pool benchmarks (issue 11, seed 003)\n")
    L.append("Made by `%s` at commit %s, %d runs merged (bench/pool/pool_bench.c, bench/pool/pool_report.py)." %
             (a.command, a.commit, len(runs)))
    L.append("Machine: %s, %s %s; compiler: %s, flags `%s`." % (doc["machine"]["cpu"], doc["machine"]["system"],
             doc["machine"]["arch"], doc["compiler"], doc["cflags"]))
    L.append("**Vector implementation in use: `%s` (width %d B)**: the one `dmm_vec_*` picked on this CPU; the "
             "`dmm_pool_memset` figures are its.\n" % (doc["vec"]["impl"], doc["vec"]["width"]))
    if prov:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
        from provenance import markdown
        L.append(markdown(prov) + "\n")
    L.append("Wall-clock figures from a shared 2-core VM (timing: not checked by scripts/check_results.py; the "
             "load line above says how busy the machine was): medians of interleaved repetitions; compare rows "
             "within one table, not across machines. Exact instruction counts: bench/results/pool_callgrind.md.\n")
    cpu = prov["cpu"]["model"] if prov else doc["machine"]["cpu"]
    impl = doc["vec"]["impl"]
    if ops_meta:
        L.append("## Init, alloc, free (ns per operation)\n")
        L.append("%d B blocks aligned to %d B; alloc = %d blocks taken in a row, free = them given back in the same "
                 "order; init = one pool (or heap) on a %d B buffer. rtpool is the RT-Thread-style baseline "
                 "(bench/pool/rtpool.c); `runtime` = the library configured at run time, `frozen` = built with "
                 "configs/frozen/pool/lean.h or pool/checked.h; lean = no lock, stats, hardening or poisoning, "
                 "checked = + pointer validation on free.\n" %
                 (ops_meta["block_size"], ops_meta["align"], ops_meta["blocks"], ops_meta["init_buffer"]))
        L.append("| subject | init | alloc | free |\n|---|---:|---:|---:|")
        subjects = []
        for (s, _o) in ops:
            if s not in subjects:
                subjects.append(s)
        for s in sorted(subjects, key=lambda x: (not x.startswith("dmm-pool"), x)):
            cells = []
            for o in ("init", "alloc", "free"):
                v = ops.get((s, o))
                cells.append("%.1f" % statistics.median(v) if v else "-")
            L.append("| %s | %s |" % (s, " | ".join(cells)))
        L.append("")
    if memset:
        L.append("## alloc + memset + free (the seed's scenario, ns per round)\n")
        L.append("One block taken, filled, given back. rtpool+byteloop is the seed's baseline (a scalar byte loop, "
                 "bench/pool/rtpool.c); rtpool+libc_memset uses glibc's memset; the dmm pool fills with "
                 "`dmm_pool_memset`. Blocks aligned to 32 B. The seed reports 6.22x for this scenario "
                 "(2048-bit DSP vectors, a different machine).\n")
        for v in ("lean", "checked", "runtime"):
            sizes = sorted({bs for (vv, bs, _p) in memset if vv == v})
            if not sizes:
                continue
            L.append("### pool library: %s (pool config %s)\n" % (
                "frozen " + v if v != "runtime" else "runtime", memset_meta[v]))
            L.append("| block | CPU, dmm_vec routine | rtpool+byteloop | rtpool+libc | dmm_pool+dmm_pool_memset | "
                     "dmm_pool+libc | byteloop / dmm | libc / dmm |\n|---:|---|---:|---:|---:|---:|---:|---:|")
            for bs in sizes:
                g = lambda p: med[(v, bs, p)]
                d = g("dmm_pool+dmm_pool_memset")
                L.append("| %d | %s, %s | %.1f | %.1f | %.1f | %.1f | %.2fx | %.2fx |" % (
                    bs, cpu, impl, g("rtpool+byteloop"), g("rtpool+libc_memset"), d, g("dmm_pool+libc_memset"),
                    g("rtpool+byteloop") / d, g("rtpool+libc_memset") / d))
            libc = [med[(v, bs, "rtpool+libc_memset")] / med[(v, bs, "dmm_pool+dmm_pool_memset")] for bs in sizes]
            L.append("")
            L.append("libc / dmm from %.2fx to %.2fx on this CPU with `%s`: glibc picks its own memset per CPU (and "
                     "`rep stosb` above a size threshold), so this ratio is this machine's, not a property of "
                     "dmm_vec; issue 29 measured 1.0x at 3-4 KiB on another AVX-512 machine." % (min(libc), max(libc), impl))
            L.append("")
    if space:
        L.append("## Space lost to vector alignment (64 KiB buffer)\n")
        L.append("Per block: rtpool loses its %s-byte header plus the padding that rounds header + payload up to "
                 "the alignment (`waste`); the dmm pool only rounds the block size up to the alignment "
                 "(`align_waste` from `dmm_pool_layout_of`) and keeps its free list (and, checked, its bitmap) "
                 "in front of the blocks. `overhead/blk` = (buffer - blocks x block size) / blocks: everything "
                 "not handed out as payload, metadata and tails included. Buffer aligned to 4096.\n" % "8")
        L.append("| align | block | rtpool blocks | rtpool waste/blk | rtpool overhead/blk | dmm lean blocks | "
                 "dmm align_waste/blk | dmm lean overhead/blk | dmm checked blocks | dmm checked overhead/blk |"
                 "\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for row in space["rows"]:
            rt, dl, dc = row["rtpool"], row["dmm_lean"], row["dmm_checked"]
            L.append("| %d | %d | %d | %d | %.1f | %d | %d | %.1f | %d | %.1f |" % (
                row["align"], row["block_size"], rt["blocks"], rt["per_block_waste"], rt["overhead_per_block"],
                dl["blocks"], dl["align_waste"], dl["overhead_per_block"], dc["blocks"], dc["overhead_per_block"]))
        L.append("")
    with open(a.md, "w") as f:
        f.write("\n".join(L))


if __name__ == "__main__":
    main()
