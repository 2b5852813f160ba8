#!/usr/bin/env python3
"""scripts/check_results.py - the committed figures in bench/results, checked.

bench/results/manifest.json registers every results file with the command
that makes it, what kind of figures it holds and, for deterministic ones,
the tolerance a regenerated figure must stay within.  This script

  --readme            writes bench/results/README.md from the manifest
  --lint              checks the registry against the directory (and that
                      README.md is what --readme writes): every generator
                      named exists, every file
                      in bench/results is registered, every registered file
                      exists, and every .md / .json carries the provenance
                      record of scripts/provenance.py (files marked
                      "provenance": "pending" await regeneration and are
                      listed, not failed)
  --short | --full    regenerates the deterministic groups (--short: those
                      marked "short", with their quicker "short" command)
                      into a scratch directory (--scratch, default
                      build/results-check) and compares each figure with the
                      committed one, failing with the file and the row
  --group NAME ...    only these groups (with --short or --full)
  --stale             lists the results files whose figures may be stale:
                      a commit after the one that measured them (their
                      provenance record) changed one of the group's
                      "inputs" (the code the figures measure, in the
                      manifest); exit 1 when any is.  --lint prints the
                      count, without failing: a timing figure can only be
                      remade on a quiet machine, not in the test command
  --compare OLD NEW   compares two files (.json or .md) as the checker
                      does (--abs / --rel tolerance); for tests
  --selftest          alters one figure of a committed deterministic file in
                      a scratch copy and checks that --compare fails naming
                      that file and row, and that the lint fails on a group
                      whose generator is gone (the checker can fail)

Comparison.  JSON: every numeric leaf (or, when the group gives "fields",
those whose key matches one of its regular expressions; strings too then;
"md_fields" does the same for markdown columns)
must satisfy |new - old| <= abs + rel * |old|; keys listed in "ignore"
(and the provenance record, dates, commits) are skipped; lists of objects
are matched by their identifying fields (name, target, workload, ...), so a
row is named by them.  Markdown: every table row (keyed by the section
heading, the table and the row's first cell) cell by cell, numbers with the
same tolerance, other text exactly.  A "partial" group (its generator
reproduces only some rows, e.g. without the anchors built outside the
repository) compares the rows both files have, and needs at least one.

Exit status: 0 when everything holds, 1 when a figure drifted or a file is
missing, 2 on a usage error.
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
MANIFEST = os.path.join(RESULTS, "manifest.json")

# Keys never compared: how and when a file was made, not what it measured.
ALWAYS_IGNORE = {"provenance", "context", "date", "created", "commit", "commit_subject", "head_at_end",
                 "command", "command_line", "made_by", "machine", "host", "valgrind", "binary", "lib",
                 "path", "executable", "cmd", "argv", "dirty", "kernel"}
# Fields that identify a row in a list of objects, in the order they name it.
ID_KEYS = ("experiment", "name", "target", "subject", "allocator", "config", "trace", "workload", "program",
           "backend", "policy", "sweep", "op", "who", "size", "threads", "heap_kib", "gran", "mult", "rep")
NUM_RE = re.compile(r"^[-+]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?([eE][-+]?\d+)?$")


class Drift(Exception):
    pass


def tolerance_ok(old, new, tol):
    if isinstance(old, bool) or isinstance(new, bool):
        return old == new
    if old is None or new is None:
        return old is new
    if isinstance(old, float) and math.isnan(old):
        return isinstance(new, float) and math.isnan(new)
    return abs(new - old) <= tol.get("abs", 0) + tol.get("rel", 0) * abs(old)


def tol_text(tol):
    parts = []
    if tol.get("abs"):
        parts.append("%g" % tol["abs"])
    if tol.get("rel"):
        parts.append("%g %%" % (100 * tol["rel"]))
    return " + ".join(parts) or "exact"


# ---- JSON ---------------------------------------------------------------------------
def row_id(item):
    parts = [f"{k}={item[k]}" for k in ID_KEYS
             if k in item and isinstance(item[k], (str, int, float)) and not isinstance(item[k], bool)]
    return ",".join(parts)


def keyed(items):
    """{label: item} for a list, by identifying fields when they are unique."""
    if items and all(isinstance(x, dict) for x in items):
        ids = [row_id(x) for x in items]
        if all(ids) and len(set(ids)) == len(ids):
            return {f"[{i}]": x for i, x in zip(ids, items)}
    return {f"[{i}]": x for i, x in enumerate(items)}


class Comparer:
    def __init__(self, name, tol, fields=None, ignore=(), partial=False):
        self.name = name
        self.tol = tol
        self.fields = [re.compile(f) for f in fields] if fields else None
        self.ignore = ALWAYS_IGNORE | set(ignore)
        self.partial = partial
        self.problems = []
        self.compared = 0

    def wanted(self, key):
        return self.fields is None or any(f.search(key) for f in self.fields)

    def report(self, where, text):
        self.problems.append(f"{self.name}: {where}: {text}")

    def json(self, old, new, path="", key=""):
        if isinstance(old, dict):
            if not isinstance(new, dict):
                return self.report(path or "(top)", "an object became %s" % type(new).__name__)
            for k, v in old.items():
                if k in self.ignore:
                    continue
                p = f"{path}.{k}" if path else k
                if k not in new:
                    if not self.partial:
                        self.report(p, "missing in the regenerated file")
                    continue
                self.json(v, new[k], p, k)
            if not self.partial:
                for k in new:
                    if k not in old and k not in self.ignore:
                        self.report(f"{path}.{k}" if path else k, "new in the regenerated file (not committed)")
        elif isinstance(old, list):
            if not isinstance(new, list):
                return self.report(path, "a list became %s" % type(new).__name__)
            ko, kn = keyed(old), keyed(new)
            for label, v in ko.items():
                if label not in kn:
                    if not self.partial:
                        self.report(path + label, "row missing in the regenerated file")
                    continue
                self.json(v, kn[label], path + label, key)
            if not self.partial:
                for label in kn:
                    if label not in ko:
                        self.report(path + label, "row new in the regenerated file (not committed)")
        elif isinstance(old, (int, float)) and not isinstance(old, bool):
            if not self.wanted(key):
                return
            self.compared += 1
            if not isinstance(new, (int, float)) or isinstance(new, bool):
                return self.report(path, f"committed {old}, regenerated {new!r}")
            if not tolerance_ok(old, new, self.tol):
                self.report(path, f"committed {old}, regenerated {new} (tolerance {tol_text(self.tol)})")
        elif self.fields is not None and self.wanted(key):
            self.compared += 1
            if old != new:
                self.report(path, f"committed {old!r}, regenerated {new!r}")

    # ---- markdown tables ----------------------------------------------------------
    @staticmethod
    def md_rows(text):
        """{(heading, table no., first cell[#n]): (header cells, cells)}."""
        rows, heading, table, in_table, header, seen = {}, "", 0, False, None, {}
        for line in text.splitlines():
            s = line.strip()
            if s.startswith("#"):
                heading, table = s.lstrip("#").strip(), 0
            if s.startswith("|") and s.endswith("|"):
                cells = [c.strip() for c in s[1:-1].split("|")]
                if not in_table:
                    in_table, header, table = True, cells, table + 1
                    continue
                if all(re.fullmatch(r":?-{3,}:?", c) for c in cells):
                    continue
                k = (heading, table, cells[0])
                seen[k] = seen.get(k, 0) + 1
                if seen[k] > 1:
                    k = (heading, table, f"{cells[0]}#{seen[k]}")
                rows[k] = (header, cells)
            else:
                in_table = False
        return rows

    @staticmethod
    def number(cell):
        c = re.sub(r"[*`]", "", cell).strip().rstrip("x%").strip()
        if c.startswith("~"):
            c = c[1:]
        return float(c.replace(",", "")) if NUM_RE.match(c) else None

    def md(self, old_text, new_text):
        old, new = self.md_rows(old_text), self.md_rows(new_text)
        for k, (header, cells) in old.items():
            where = f"section '{k[0]}', table {k[1]}, row '{k[2]}'"
            if k not in new:
                if not self.partial:
                    self.report(where, "row missing in the regenerated file")
                continue
            _, ncells = new[k]
            if len(ncells) != len(cells):
                self.report(where, f"{len(cells)} cells committed, {len(ncells)} regenerated")
                continue
            for i, (a, b) in enumerate(zip(cells, ncells)):
                col = header[i] if i < len(header) else str(i)
                if self.fields is not None and i > 0 and not self.wanted(col):
                    continue
                self.compared += 1
                # a cell may hold several figures ("2929.2 / 27.0")
                xs, ys = [self.number(p) for p in a.split(" / ")], [self.number(p) for p in b.split(" / ")]
                if len(xs) == len(ys) and None not in xs and None not in ys:
                    if not all(tolerance_ok(x, y, self.tol) for x, y in zip(xs, ys)):
                        self.report(f"{where}, column '{col}'",
                                    f"committed {a}, regenerated {b} (tolerance {tol_text(self.tol)})")
                elif a != b:
                    self.report(f"{where}, column '{col}'", f"committed '{a}', regenerated '{b}'")
        if not self.partial:
            for k in new:
                if k not in old:
                    self.report(f"section '{k[0]}', table {k[1]}, row '{k[2]}'",
                                "row new in the regenerated file (not committed)")


def compare_files(old_path, new_path, name, tol, fields=None, ignore=(), partial=False, md_fields=None):
    """fields: the JSON leaves compared (regular expressions on the key; None:
    every number); md_fields: the markdown columns compared (on the header;
    None: every cell)."""
    c = Comparer(name, tol, md_fields if old_path.endswith(".md") else fields, ignore, partial)
    if not os.path.exists(new_path):
        c.report("(file)", f"not regenerated ({new_path} missing)")
        return c
    if old_path.endswith(".json"):
        with open(old_path) as f:
            old = json.load(f)
        with open(new_path) as f:
            new = json.load(f)
        c.json(old, new)
    else:
        with open(old_path) as f, open(new_path) as g:
            c.md(f.read(), g.read())
    if c.compared == 0 and not c.problems:
        c.report("(file)", "no figure compared (no common row: the check would prove nothing)")
    return c


# ---- the manifest -------------------------------------------------------------------
def load_manifest():
    with open(MANIFEST) as f:
        m = json.load(f)
    for g in m["groups"]:
        g.setdefault("tolerance", {"abs": 0})
        g.setdefault("short", False)
        g.setdefault("partial", False)
    return m


def compared(g):
    """Whether --short/--full regenerate and compare group g: deterministic
    and external groups, and a mixed group (timings beside model figures)
    on its "fields", the model figures, when it names them."""
    return g.get("kind") in ("deterministic", "external") or (g.get("kind") == "mixed" and bool(g.get("fields")))


def group_files(g):
    return [os.path.join(RESULTS, f) for f in g["files"]]


def lint(m):
    problems, pending = [], []
    registered = {}
    for g in m["groups"]:
        for f in g["files"]:
            registered[f] = g
    on_disk = []
    for dirpath, _, files in os.walk(RESULTS):
        for fn in files:
            rel = os.path.relpath(os.path.join(dirpath, fn), RESULTS)
            if rel in ("manifest.json", "README.md"):
                continue
            on_disk.append(rel)
    for rel in sorted(on_disk):
        if rel not in registered and not any(rel.startswith(f.rstrip("/") + "/") for f in registered
                                             if f.endswith("/")):
            problems.append(f"{rel}: not registered in bench/results/manifest.json")
    for g in m["groups"]:
        # the generator must still exist (a file whose generator is gone is stale)
        commands = " ".join((g["generate"], g.get("update", ""), g.get("without_env", "")))
        for script in sorted(set(re.findall(r"\b(scripts/[\w.-]+)", commands))):
            if not os.path.exists(os.path.join(ROOT, script)):
                problems.append(f"group {g['name']}: its generator {script} does not exist")
    for g in m["groups"]:
        # what the figures measure: --stale reads it, so a path that does not
        # exist would leave a stale figure unnoticed
        if not g.get("inputs"):
            problems.append(f"group {g['name']}: no \"inputs\" (the paths of the code its figures measure)")
        for x in g.get("inputs", []):
            if not os.path.exists(os.path.join(ROOT, x)):
                problems.append(f"group {g['name']}: input {x} does not exist")
    # a registered directory: every .md / .json in it (but its README.md, prose)
    checked = []
    for rel, g in sorted(registered.items()):
        path = os.path.join(RESULTS, rel)
        if not os.path.exists(path):
            problems.append(f"{rel}: registered (group {g['name']}) but missing")
            continue
        if rel.endswith("/"):
            checked += [(os.path.relpath(os.path.join(d, fn), RESULTS), g) for d, _, fns in os.walk(path)
                        for fn in sorted(fns) if fn != "README.md"]
        else:
            checked.append((rel, g))
    for rel, g in checked:
        path = os.path.join(RESULTS, rel)
        if not rel.endswith((".md", ".json")):
            continue
        if g.get("provenance") == "pending":
            pending.append(rel)
            continue
        text = open(path).read()
        if rel.endswith(".json"):
            doc = json.loads(text)
            prov = doc.get("provenance") if isinstance(doc, dict) else None
            missing = [k for k in ("command", "commit", "date", "cpu") if not (prov or {}).get(k)]
            if missing:
                problems.append(f"{rel}: no provenance record ({', '.join(missing)} missing)")
        else:
            missing = [w for w in ("Command: `", "Commit ", "CPU: ") if w not in text]
            if missing:
                problems.append(f"{rel}: no provenance lines ({', '.join(repr(w) for w in missing)} missing)")
    return problems, pending


def measured_commits(path):
    """The commits a results file (or a registered directory's files) names
    in its provenance record, "-dirty" stripped; empty when it names none."""
    paths = [path]
    if os.path.isdir(path):
        paths = [os.path.join(d, fn) for d, _, fns in os.walk(path) for fn in sorted(fns)
                 if fn.endswith((".json", ".md"))]
    found = set()
    for p in paths:
        try:
            text = open(p).read()
        except (OSError, UnicodeDecodeError):
            continue
        c = None
        if p.endswith(".json"):
            try:
                doc = json.loads(text)
            except ValueError:
                doc = None
            c = ((doc.get("provenance") or {}).get("commit") if isinstance(doc, dict) else None)
        else:
            mm = re.search(r"^Commit ([0-9a-f]{7,40})", text, re.M)
            c = mm.group(1) if mm else None
        if c:
            found.add(c.split("-")[0])
    return found


def git(*args):
    r = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def changed_since(commit, inputs):
    """(count, newest) of the commits after `commit` (to HEAD) that touch
    `inputs`; None when the commit is not in this history."""
    if git("cat-file", "-e", commit + "^{commit}") is None:
        return None
    count = int(git("rev-list", "--count", f"{commit}..HEAD", "--", *inputs) or 0)
    newest = git("log", "-1", "--format=%h %s", f"{commit}..HEAD", "--", *inputs) if count else ""
    return count, newest


def stale(m):
    """Lines naming each group whose files may be stale, and whether git could tell."""
    if git("rev-parse", "--git-dir") is None:
        return None
    lines = []
    for g in m["groups"]:
        inputs = g.get("inputs")
        if not inputs:
            lines.append(f"{g['name']}: no \"inputs\" in the manifest: staleness unknown")
            continue
        commits = set()
        for f in group_files(g):
            commits |= measured_commits(f)
        if not commits:
            lines.append(f"{g['name']}: no provenance commit in its files: staleness unknown")
            continue
        for c in sorted(commits):
            r = changed_since(c, inputs)
            if r is None:
                lines.append(f"{g['name']}: measured at {c}, a commit not in this history")
            elif r[0]:
                lines.append(f"{g['name']}: measured at {c}; {r[0]} later commit(s) touch its inputs, "
                             f"the newest {r[1][:72]}")
    return lines


def run_group(g, scratch, short, fallback=False):
    """Regenerates group g into scratch and compares it.  fallback: its
    needs_env is not set, so its "without_env" command regenerates the rows
    the repository alone reproduces (the dmm rows without the anchors built
    by hand), compared as a partial group."""
    out = os.path.join(scratch, g["name"])
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    if fallback:
        cmd = g["without_env"]
    else:
        cmd = g.get("short_command") if short and g.get("short_command") else g["generate"]
    cmd = cmd.replace("{out}", out)
    log = os.path.join(scratch, g["name"] + ".log")
    t0 = time.time()
    print(f"check_results: {g['name']}: {cmd}", flush=True)
    with open(log, "w") as f:
        rc = subprocess.run(["bash", "-c", cmd], cwd=ROOT, stdout=f, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        with open(log) as f:
            tail = f.read().splitlines()[-15:]
        return [f"{g['name']}: the generator failed (exit {rc}; {log}):"] + ["    " + t for t in tail]
    problems = []
    partial = g["partial"] or fallback or (short and bool(g.get("short_command")))
    n = 0
    for rel in g["files"]:
        if not rel.endswith((".md", ".json")):
            continue
        c = compare_files(os.path.join(RESULTS, rel), os.path.join(out, os.path.basename(rel)),
                          "bench/results/" + rel, g["tolerance"], g.get("fields"), g.get("ignore", ()), partial,
                          g.get("md_fields"))
        n += c.compared
        problems += c.problems
    print(f"check_results: {g['name']}: {n} figures compared in {time.time() - t0:.0f} s"
          f"{'' if not problems else ', %d drifted' % len(problems)}", flush=True)
    return problems


def selftest(m):
    """Alter one figure of a committed deterministic JSON and markdown file:
    the comparison must fail and name the file and the row."""
    g = next(g for g in m["groups"] if g.get("kind") == "deterministic" and g.get("short"))
    global RESULTS
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for rel in g["files"]:
            src = os.path.join(RESULTS, rel)
            if not rel.endswith((".json", ".md")):
                continue
            same = compare_files(src, src, rel, g["tolerance"], g.get("fields"), g.get("ignore", ()))
            if same.problems:
                failures.append(f"{rel} differs from itself: {same.problems[:2]}")
            text = open(src).read()
            if rel.endswith(".json"):
                # the last number on a line that is not provenance
                lines = text.splitlines()
                for i in range(len(lines) - 1, -1, -1):
                    mnum = list(re.finditer(r"(?<![\w.\"-])(\d+)(?![\w.\"])", lines[i]))
                    if mnum and "provenance" not in lines[i] and "date" not in lines[i]:
                        mm = mnum[-1]
                        lines[i] = lines[i][:mm.start()] + str(int(mm.group(1)) + 7) + lines[i][mm.end():]
                        break
                altered = "\n".join(lines) + "\n"
            else:
                # the last numeric cell of the last table row
                lines = text.splitlines()
                for i in range(len(lines) - 1, -1, -1):
                    s = lines[i].strip()
                    if s.startswith("|") and not re.search(r"-{3}", s):
                        cells = s[1:-1].split("|")
                        j = max((k for k, c in enumerate(cells) if Comparer.number(c) is not None), default=None)
                        if j is not None and j > 0:
                            cells[j] = " %g " % (Comparer.number(cells[j]) + 7)
                            lines[i] = "|" + "|".join(cells) + "|"
                            break
                altered = "\n".join(lines) + "\n"
            dst = os.path.join(tmp, os.path.basename(rel))
            with open(dst, "w") as f:
                f.write(altered)
            c = compare_files(src, dst, "bench/results/" + rel, g["tolerance"], g.get("fields"), g.get("ignore", ()))
            if not c.problems:
                failures.append(f"{rel}: a figure altered by 7 was not detected")
            else:
                print(f"check_results: selftest: altered {rel} -> {c.problems[0]}")
                if "bench/results/" + rel not in c.problems[0]:
                    failures.append(f"{rel}: the failure does not name the file")
    # a registry naming a generator that is gone must fail the lint
    broken = json.loads(json.dumps(m))
    broken["groups"][0]["generate"] = "scripts/no-such-generator.sh --out {out}"
    if not any("no-such-generator" in p for p in lint(broken)[0]):
        failures.append("lint accepted a group whose generator does not exist")
    broken = json.loads(json.dumps(m))
    g_env = next((g for g in broken["groups"] if g.get("without_env")), None)
    if g_env is not None:
        g_env["without_env"] = "scripts/no-such-fallback.py --out {out}"
        if not any("no-such-fallback" in p for p in lint(broken)[0]):
            failures.append("lint accepted a group whose without_env command does not exist")
    # a file in a registered directory without the record must fail the lint
    # (checked on a scratch results directory: the tree is not written)
    dirs = [f for g in m["groups"] if g.get("provenance") != "pending" for f in g["files"] if f.endswith("/")]
    if dirs:
        saved = RESULTS
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, dirs[0]))
            with open(os.path.join(tmp, dirs[0], "no-record.md"), "w") as f:
                f.write("# no record\n")
            RESULTS = tmp
            try:
                found = any(f"{dirs[0]}no-record.md: no provenance lines" in p for p in lint(m)[0])
            finally:
                RESULTS = saved
        if not found:
            failures.append(f"lint accepted {dirs[0]}no-record.md, a file without the record")
    # an input path that does not exist must fail the lint
    broken = json.loads(json.dumps(m))
    broken["groups"][0]["inputs"] = ["src/no-such-dir"]
    if not any("no-such-dir" in p for p in lint(broken)[0]):
        failures.append("lint accepted a group whose input does not exist")
    # staleness: HEAD is up to date with itself, the first commit that made
    # src/heap is not (the check can fail); skipped without the history
    if git("rev-parse", "--is-shallow-repository") == "false":
        first = (git("rev-list", "--reverse", "HEAD", "--", "src/heap") or "").split("\n")[0]
        if changed_since(git("rev-parse", "HEAD"), ["src/heap"]) != (0, ""):
            failures.append("staleness: HEAD reads as older than itself")
        r = changed_since(first, ["src/heap"]) if first else None
        if not r or r[0] < 1:
            failures.append(f"staleness: src/heap as first committed ({first[:12]}) does not read as stale")
        if changed_since("0" * 40, ["src"]) is not None:
            failures.append("staleness: a commit not in the history was not reported as such")
    return failures


def readme(m):
    """bench/results/README.md, from the manifest (check_results.py --readme)."""
    kinds = {"deterministic": "deterministic, checked", "external": "deterministic, checked where reproducible",
             "mixed": "timing + model figures, not checked", "timing": "timing, not checked"}
    mixed_checked = "timing + model figures; the model figures checked"
    L = ["# bench/results: what each file answers and how to remake it", "",
         "Written by `scripts/check_results.py --readme` from `manifest.json` (edit that, not this).", "",
         "Every file carries a provenance record written by its generator through `scripts/provenance.py`: the",
         "command, the commit, the date, the compiler and flags, the CPU (model and the vector features that",
         "select an implementation), the implementation selected and, for timings, the machine load.",
         "Deterministic figures (callgrind instruction counts, simulated cycles, exact bytes) are tests:",
         "`scripts/test.sh results` regenerates the short subset into `build/results-check/` and compares it",
         "with the committed files within the tolerance below, naming the file and row that drifted;",
         "`scripts/test.sh results-full` (or `DMM_RESULTS_FULL=1`) does every group. Timing figures are not",
         "compared: their files state repetitions, intervals and load. To update a committed file, run its",
         "command from the repository root and commit the result with the code that changed it.",
         "`scripts/check_results.py --stale` lists the files measured at a commit older than the last change",
         "to the code they measure (each group's `inputs` in the manifest): the figures a reader should not",
         "take as today's until they are remade.", "",
         "| files | answers | kind | tolerance | remake with |", "|---|---|---|---|---|"]
    for g in m["groups"]:
        tol = tol_text(g["tolerance"]) if compared(g) else "-"
        if compared(g) and g.get("short"):
            tol += " (short subset)"
        files = ", ".join(f"`{f}`" for f in g["files"])
        note = f" {g['note']}." if g.get("note") else ""
        pend = " *Made before the provenance record; to be regenerated.*" if g.get("provenance") == "pending" else ""
        if g.get("without_env"):
            pend += (f" Without {', '.join(g.get('needs_env', []))}, `--full` checks the rows the repository "
                     "reproduces alone (its `without_env` command).")
        cmd = g.get("update") or g["generate"]
        kind = mixed_checked if g["kind"] == "mixed" and compared(g) else kinds.get(g["kind"], g["kind"])
        L.append(f"| {files} | {g['question']}{note}{pend} | {kind} | {tol} | "
                 f"`{cmd}` |")
    L.append("")
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description="check bench/results against regenerated figures")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--lint", action="store_true")
    mode.add_argument("--short", action="store_true")
    mode.add_argument("--full", action="store_true")
    mode.add_argument("--compare", nargs=2, metavar=("COMMITTED", "REGENERATED"))
    mode.add_argument("--selftest", action="store_true")
    mode.add_argument("--stale", action="store_true", help="list results whose measured code changed since")
    mode.add_argument("--list", action="store_true", help="print the groups")
    mode.add_argument("--readme", action="store_true", help="write bench/results/README.md from the manifest")
    ap.add_argument("--group", action="append", default=[])
    ap.add_argument("--scratch", default=os.path.join(ROOT, "build", "results-check"))
    ap.add_argument("--abs", type=float, default=0.0)
    ap.add_argument("--rel", type=float, default=0.0)
    ap.add_argument("--partial", action="store_true")
    a = ap.parse_args(argv)

    if a.compare:
        c = compare_files(a.compare[0], a.compare[1], a.compare[0], {"abs": a.abs, "rel": a.rel},
                          partial=a.partial)
        for p in c.problems:
            print("DRIFT " + p)
        print(f"{c.compared} figures compared, {len(c.problems)} outside the tolerance")
        return 1 if c.problems else 0

    m = load_manifest()
    if a.list:
        for g in m["groups"]:
            print(f"{g['name']:22} {g['kind']:13} {'short' if g['short'] else '':5} {g.get('generate', '')}")
        return 0
    if a.readme:
        with open(os.path.join(RESULTS, "README.md"), "w") as f:
            f.write(readme(m))
        return 0
    if a.lint:
        problems, pending = lint(m)
        rp = os.path.join(RESULTS, "README.md")
        if not os.path.exists(rp) or open(rp).read() != readme(m):
            problems.append("README.md: not what manifest.json gives (scripts/check_results.py --readme)")
        for p in problems:
            print("LINT " + p)
        if pending:
            print("awaiting regeneration with a provenance record (\"provenance\": \"pending\"): "
                  + ", ".join(pending))
        old = stale(m)
        if old:
            print(f"check_results: {len(old)} measurement(s) older than a change to the code they measure "
                  "(not a lint failure; scripts/check_results.py --stale lists them)")
        print(f"check_results: lint: {len(problems)} problem(s)")
        return 1 if problems else 0
    if a.stale:
        old = stale(m)
        if old is None:
            print("check_results: not a git checkout: staleness unknown", file=sys.stderr)
            return 2
        for line in old:
            print("STALE " + line)
        print(f"check_results: {len(old)} measurement(s) older than a change to the code they measure")
        return 1 if old else 0
    if a.selftest:
        failures = selftest(m)
        for f in failures:
            print("SELFTEST " + f)
        print(f"check_results: selftest {'failed' if failures else 'passed'}")
        return 1 if failures else 0

    names = {g["name"] for g in m["groups"]}
    unknown = [n for n in a.group if n not in names]
    if unknown:
        print(f"check_results: unknown group(s) {', '.join(unknown)} (--list)", file=sys.stderr)
        return 2
    if a.group:
        groups = [g for g in m["groups"] if g["name"] in a.group]
    else:
        groups = [g for g in m["groups"] if compared(g) and (g["short"] or not a.short)]
    os.makedirs(a.scratch, exist_ok=True)
    problems = []
    for g in groups:
        if not compared(g):
            print(f"check_results: {g['name']}: {g['kind']} figures are not compared")
            continue
        need = [v for v in g.get("needs_env", []) if not os.environ.get(v)]
        if need and g.get("without_env"):
            print(f"check_results: {g['name']}: {', '.join(need)} not set: comparing the rows the repository "
                  "reproduces alone (the anchors' rows need the binaries built by hand; bench/results/README.md)")
            problems += run_group(g, a.scratch, a.short, fallback=True)
            continue
        if need:
            print(f"check_results: {g['name']}: skipped: needs {', '.join(need)} (a binary built outside the "
                  "repository; bench/results/README.md says how)")
            continue
        problems += run_group(g, a.scratch, a.short)
    for p in problems:
        print("DRIFT " + p)
    print(f"check_results: {len(groups)} group(s), {len(problems)} figure(s) outside their tolerance")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
