#!/usr/bin/env python3
"""bench/malloc/suite_report.py - writes the results of an external test
suite run by bench/malloc/glibc_tests.sh or bench/malloc/test_stress.sh as
bench/results/NAME.{json,md}.

  suite_report.py SUITE ROWS OUT SOURCE_COMMIT PROV_JSON PROV_MD [REFERENCE]

SUITE is glibc_tests or test_stress; ROWS a tab-separated file, one line
per test and mode: test, mode ("-" when the test was not built or not
run), status (pass, fail, timeout, unsupported, not-built, not-run),
seconds, detail (the exit status and the output's last lines, or why the
test was not built).
"""
import json
import os
import sys

SUITES = {
    "glibc_tests": {
        "name": "libdmm_glibc_tests",
        "schema": "dmm-malloc-glibc-tests/1",
        "title": "glibc's malloc tests under libdmm",
        "intro": "Made by `bench/malloc/glibc_tests.sh GLIBC_SRC`: glibc's portable malloc tests (issue 27's list),"
                 " from the user's glibc tree (commit {commit}; nothing of glibc is in this repository), built against"
                 " dmmkit's stand-in for glibc's test driver (`bench/malloc/glibc_support`). Each runs under *glibc*"
                 " itself (the reference, the installed {reference}: a failure there is the stand-in's, or a test newer"
                 " than that glibc testing behaviour it lacks), with the release `libdmm.so` preloaded"
                 " (*libdmm*, the default mode) and with `DMM_SECURE=1` (*libdmm-secure*). Exit 0 passes, 77 is"
                 " unsupported; the test's own timeout (20 s unless it sets one) or the script's outer one is a"
                 " timeout. Goal (issue 27): all pass.",
        "modes": ["glibc", "libdmm", "libdmm-secure"],
    },
    "test_stress": {
        "name": "libdmm_test_stress",
        "schema": "dmm-malloc-test-stress/1",
        "title": "mimalloc's test-stress under libdmm",
        "intro": "Made by `bench/malloc/test_stress.sh MIMALLOC_SRC`: mimalloc's `test/test-stress.c` (commit"
                 " {commit}; nothing of mimalloc is in this repository), built with `-DUSE_STD_MALLOC`, run with"
                 " the release `libdmm.so` preloaded and `DMM_ABORT_ON_ERROR=1` (a report aborts the run) in the"
                 " default mode, with `DMM_SECURE=1`, and with"
                 " `DMM_MEDIUM=org=tlsf,poison=on,harden=canary` (*libdmm-strict*), and under glibc for"
                 " reference. A row's arguments are test-stress's THREADS SCALE ITER (none: its defaults)."
                 " Exit 0 with no report passes. Goal (issue 27): passes in every mode.",
        "modes": ["glibc", "libdmm", "libdmm-secure", "libdmm-strict"],
    },
}
STATUSES = ["pass", "fail", "timeout", "unsupported", "not-built", "not-run"]


def main():
    suite, rows_path, out, commit, prov, provmd = sys.argv[1:7]
    reference = sys.argv[7] if len(sys.argv) > 7 else "unknown"
    s = SUITES[suite]
    tests, order = {}, []
    for line in open(rows_path):
        line = line.rstrip("\n")
        if not line:
            continue
        test, mode, status, secs, detail = (line.split("\t") + [""] * 5)[:5]
        if test not in tests:
            tests[test] = {"test": test, "results": {}}
            order.append(test)
        t = tests[test]
        if mode == "-":
            t["status"] = status
            t["reason"] = detail
        else:
            t["results"][mode] = {"status": status, "seconds": float(secs), "detail": detail}
    modes = s["modes"]
    summary = []
    for m in modes:
        counts = {st: 0 for st in STATUSES}
        for name in order:
            t = tests[name]
            st = t["results"][m]["status"] if m in t["results"] else t.get("status", "not-run")
            counts[st] += 1
        summary.append({"allocator": m, "passed": counts["pass"], **{k.replace("-", "_"): v for k, v in counts.items()
                                                                  if k != "pass"}})
    stand_in = [n for n in order if tests[n]["results"].get("glibc", {}).get("status") not in (None, "pass")]
    doc = {"schema": s["schema"], "provenance": json.loads(prov), "source_commit": commit, "reference": reference, "tests": len(order),
           "summary": summary, "failing_under_glibc": stand_in, "per_test": [tests[n] for n in order]}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, s["name"] + ".json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    md = [f"# {s['title']}", "", s["intro"].format(commit=commit, reference=reference), "", provmd, "",
          "| mode | pass | fail | timeout | unsupported | not built / not run |", "|---|---:|---:|---:|---:|---:|"]
    for r in summary:
        md.append(f"| {r['allocator']} | {r['passed']} | {r['fail']} | {r['timeout']} | {r['unsupported']} |"
                  f" {r['not_built'] + r['not_run']} |")
    if stand_in:
        md += ["", f"Not passing under the installed {reference} itself (not libdmm's: the stand-in's, or a test newer than"
               " that glibc): "
               + ", ".join(f"`{n}`" for n in stand_in) + "."]
    md += ["", "## Per test", "", "Status and seconds per mode.", "",
           "| test | " + " | ".join(modes) + " |", "|---|" + "---|" * len(modes)]
    for n in order:
        t = tests[n]
        if not t["results"]:
            md.append(f"| {n} | " + " | ".join([f"{t.get('status', '?')}"] * len(modes)) + " |")
            continue
        cells = []
        for m in modes:
            r = t["results"].get(m)
            cells.append(f"{r['status']} ({r['seconds']:.1f} s)" if r else "?")
        md.append(f"| {n} | " + " | ".join(cells) + " |")
    notes = [(n, t["status"], t["reason"]) for n, t in ((n, tests[n]) for n in order) if not t["results"]]
    fails = [(n, m, r["detail"]) for n in order for m, r in tests[n]["results"].items() if r["status"] != "pass"]
    if notes or fails:
        md += ["", "## Not passing, why", ""]
        md += [f"- `{n}`: {st}: {why}" for n, st, why in notes]
        md += [f"- `{n}` ({m}): {d.replace('|', '/')}" for n, m, d in fails]
    with open(os.path.join(out, s["name"] + ".md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print(f"wrote {out}/{s['name']}.json and .md")
    for r in summary:
        print(f"{r['allocator']}: {r['passed']} of {len(order)} pass")


if __name__ == "__main__":
    main()
