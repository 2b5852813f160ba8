"""Damaged and foreign results files: `show`, `report` and `generate best
--results` give one sentence naming the file (exit status 2), never a
traceback.

The corpus is made here from the real explore and compare results of the
session (conftest): truncated JSON, empty and binary files, wrong, foreign
and future schemas, JSON that is not an object, and, at every level of the
documents (the first item of each array), each field deleted, set to null
and set to a value of another type.  Some of those mutations leave a valid
document (an optional field deleted): then the command must succeed.  Either
way no traceback and no "internal error" (the CLI's last-resort guard) may
appear; the fields the readers need are listed and must be refused.

The commands run in-process (dmmkit.cli.main) so that the few thousand cases
take seconds; a handful also run as real processes."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from conftest import load, run_cli
from dmmkit import report as report_mod
from dmmkit.cli import main


def run_main(args, capsys):
    capsys.readouterr()
    try:
        main(args)
        rc = 0
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    out = capsys.readouterr()
    return rc, out.out, out.err


def one_line_naming(err: str, path: Path, cmd: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith(f"dmmkit {cmd}: error: "), line
    assert str(path) in line, line
    assert "internal error" not in line and "Traceback" not in err, err
    return line


# ----------------------------------------------------------- the corpus ---

NOT_READ = {"tools", "argv", "created", "executor", "cache", "runs", "ranking_instructions", "ranking_runtime"}


def _form(v):
    """The structure of a value (the keys of an object, recursively)."""
    if isinstance(v, dict):
        return tuple((k, _form(x)) for k, x in v.items())
    if isinstance(v, list):
        return ("[]", _form(v[0]) if v else None)
    return ""


def field_paths(v, path=()):
    """Every field path of a document that a reader may use, descending into
    the first item of each array and into the first of sibling objects of
    the same form (the allocators of summary.tiny, the configs of
    pictures.tiny: what holds for one holds for the others).  Top-level
    fields no reader uses (NOT_READ: the command line, the tool paths, the
    raw runs) are left alone."""
    if isinstance(v, dict):
        seen = set()
        for k, x in v.items():
            if not path and k in NOT_READ:
                continue
            if isinstance(x, (dict, list)) and x:
                f = _form(x)
                if f in seen:
                    continue
                seen.add(f)
            yield path + (k,)
            yield from field_paths(x, path + (k,))
    elif isinstance(v, list) and v:
        yield path + (0,)
        yield from field_paths(v[0], path + (0,))


def other_type(v):
    if isinstance(v, bool):
        return "yes"
    if isinstance(v, (int, float)):
        return "12"
    if isinstance(v, str):
        return 12
    if isinstance(v, list):
        return {"a": 1}
    if isinstance(v, dict):
        return [1, 2]
    return "null"


def mutate(doc, path, how):
    d = copy.deepcopy(doc)
    parent = d
    for k in path[:-1]:
        parent = parent[k]
    last = path[-1]
    if how == "delete":
        del parent[last]
    elif how == "null":
        parent[last] = None
    else:
        parent[last] = other_type(parent[last])
    return d


def mutations(doc):
    for path in field_paths(doc):
        if path == ("schema",):
            continue
        for how in ("delete", "null", "type"):
            yield ".".join(map(str, path)) + ":" + how, mutate(doc, path, how)


def structural_cases(doc: dict) -> list[tuple[str, bytes]]:
    """Damage that no reader can accept."""
    text = json.dumps(doc, indent=1)
    out = [(f"truncated-{f}", text[: int(len(text) * f)].encode()) for f in (0.02, 0.3, 0.77, 0.999)]
    out += [
        ("empty", b""),
        ("blank", b"  \n"),
        ("binary", b"DMMTRACE\x00\xff\xfe" * 20),
        ("latin1", json.dumps(doc).replace('"', '"\xe9', 1).encode("latin-1", "replace")),
        ("nan", text.replace('"schema"', '"x": NaN, "schema"', 1).encode()),
        ("list", json.dumps([doc]).encode()),
        ("empty-list", b"[]"),
        ("string", b'"dmmkit-explore/1"'),
        ("number", b"42"),
        ("null", b"null"),
        ("deep", b"[" * 100000 + b"]" * 100000),
    ]
    for name, schema in (("no-schema", None), ("foreign-schema", "dmm-replay/1"), ("unknown-schema", "something/1"),
                         ("future-version", doc["schema"].split("/")[0] + "/2"), ("schema-number", 7),
                         ("schema-no-version", doc["schema"].split("/")[0])):
        d = dict(doc)
        if schema is None:
            d.pop("schema")
        else:
            d["schema"] = schema
        out.append((name, json.dumps(d).encode()))
    out.append(("minimal", json.dumps({"schema": doc["schema"]}).encode()))
    return out


# fields the readers need: deleting them, nulling them or giving them another
# type must be refused (the rest of the corpus only must not crash)
NEEDED = {
    "explore": ["configs", "configs.0", "configs.0.id", "configs.0.name", "configs.0.config", "configs.0.aggregate",
                "configs.0.feasible", "settings", "settings.memory_metric", "settings.objective", "traces",
                "traces.0.label", "ranking", "ranking.0"],
    "compare": ["baseline", "allocators", "allocators.0.label", "summary", "overall", "ranking",
                "ranking.0", "settings.reps", "traces.0.label", "overall.glibc"],
}
TYPE_ONLY = {  # optional, but when present must have the right type
    "explore": ["configs.0.aggregate.min_arena", "configs.0.aggregate.instr_per_op", "best", "reference",
                "configs.0.per_trace.tiny.frag4", "frozen.seconds", "pictures.tiny", "skipped.0.reason"],
    "compare": ["summary.tiny", "summary.tiny.glibc.warm_avg.median", "summary.tiny.glibc.peak_footprint", "histograms.tiny",
                "overall.glibc.warm_avg_ratio_min", "pictures.tiny", "complete"],
}


def _needed(kind, name):
    path, how = name.rsplit(":", 1)
    if path in NEEDED[kind] or path.startswith("ranking.0"):
        return how != "delete" or not path.endswith(".0")  # deleting an array's first item may be fine
    return how == "type" and path in TYPE_ONLY[kind]


def shrink(v):
    """The same document with its bulk cut (timeline points, heap-map
    blocks, histogram buckets, per-sample lists: at most 3 items), so that
    each case is quick; every form of item is kept."""
    if isinstance(v, dict):
        return {k: shrink(x) for k, x in v.items()}
    if isinstance(v, list):
        if v and (isinstance(v[0], list) or (not isinstance(v[0], (dict, str)) and len(v) > 5)):
            v = v[:3]  # rows of points, blocks, buckets; long lists of samples
        return [shrink(x) for x in v]
    return v


@pytest.fixture(scope="module")
def docs(explore_results, compare_results):
    from dmmkit.schemas import COMPARE, EXPLORE
    from dmmkit.validate import check_document
    d = {"explore": shrink(load(explore_results[0])), "compare": shrink(load(compare_results[0]))}
    check_document(d["explore"], EXPLORE, "the shrunk explore results")
    check_document(d["compare"], COMPARE, "the shrunk compare results")
    return d


ACCEPTED_SAMPLE = 20  # every n-th accepted mutation is run through show and report


@pytest.fixture()
def fast_plots(monkeypatch):
    """The plots are made but not rendered to PNG (rendering is what takes
    the time); the test with real rendering is below."""
    def save(fig, outdir, name, tight=False):
        report_mod.plt.close(fig)
        return name
    monkeypatch.setattr(report_mod, "_save", save)


def test_structural_damage(docs, tmp_path, capsys):
    for kind, doc in docs.items():
        for name, data in structural_cases(doc):
            f = tmp_path / f"{kind}-{name}.json"
            f.write_bytes(data)
            for cmd, args in (("show", ["show", str(f)]), ("report", ["report", str(f), "-o", str(tmp_path / "r")]),
                              ("generate", ["generate", "best", "--results", str(f), "-o", str(tmp_path / "g"),
                                            "--no-build"])):
                rc, out, err = run_main(args, capsys)
                assert rc == 2, (kind, name, cmd, out, err)
                one_line_naming(err, f, cmd)
    assert not (tmp_path / "g").exists()


def test_the_issue_repro_and_a_list(tmp_path, capsys):
    r = tmp_path / "r.json"
    r.write_text('{"schema":"dmmkit-compare/1"}')
    rc, _, err = run_main(["show", str(r)], capsys)
    assert rc == 2
    line = one_line_naming(err, r, "show")
    assert 'the field "baseline" is missing' in line
    lst = tmp_path / "l.json"
    lst.write_text("[]")
    rc, _, err = run_main(["generate", "best", "--results", str(lst), "-o", str(tmp_path / "g")], capsys)
    assert rc == 2
    assert "found an array" in one_line_naming(err, lst, "generate")


def test_every_field_deleted_nulled_or_retyped(docs, tmp_path, capsys, fast_plots):
    """Each mutation the checker refuses goes through show, report and
    generate; of those it accepts, every ACCEPTED_SAMPLE-th goes through show
    and report (rendering is what takes the time)."""
    from dmmkit.errors import DmmkitError
    from dmmkit.schemas import RESULTS
    from dmmkit.validate import check_document
    refused = {"explore": 0, "compare": 0}
    total = accepted = 0
    for kind, doc in docs.items():
        for name, d in mutations(doc):
            total += 1
            try:
                check_document(d, RESULTS, "x")
                accepted += 1
                if accepted % ACCEPTED_SAMPLE:
                    assert not _needed(kind, name), (kind, name, "accepted a document the readers cannot use")
                    continue
            except DmmkitError:
                pass
            f = tmp_path / f"{kind}.json"
            f.write_text(json.dumps(d))
            rc, out, err = run_main(["show", str(f)], capsys)
            assert rc in (0, 2), (kind, name, err)
            if rc == 2:
                one_line_naming(err, f, "show")
                refused[kind] += 1
            else:
                assert not err.strip(), (kind, name, err)
            assert (rc == 2) or not _needed(kind, name), (kind, name, "accepted a document the readers cannot use")
            rrc, _, rerr = run_main(["report", str(f), "-o", str(tmp_path / "rep")], capsys)
            assert rrc == rc, (kind, name, "show and report disagree", err, rerr)
            if rrc == 2:
                one_line_naming(rerr, f, "report")
            if kind == "explore" and rc == 2:
                grc, _, gerr = run_main(["generate", "best", "--results", str(f), "-o", str(tmp_path / "g"),
                                         "--no-build"], capsys)
                assert grc == 2, (name, gerr)
                one_line_naming(gerr, f, "generate")
    # the corpus is not vacuous: most damage is refused, and every listed field was
    assert total > 300, total
    assert refused["explore"] > 100 and refused["compare"] > 100, refused


def test_mutated_but_valid_documents_render(docs, tmp_path, capsys):
    """A sample of the accepted mutations, rendered for real (matplotlib's
    own checks included), with warnings as errors."""
    import warnings
    done = 0
    for kind, doc in docs.items():
        for k, (name, d) in enumerate(mutations(doc)):
            if k % 150:
                continue
            f = tmp_path / f"{kind}.json"
            f.write_text(json.dumps(d))
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                rc, out, err = run_main(["report", str(f), "-o", str(tmp_path / f"rep-{kind}-{k}")], capsys)
            assert rc in (0, 2), (name, err)
            assert "internal error" not in err and "Traceback" not in err, (name, err)
            done += rc == 0
    assert done >= 2


def test_as_real_processes(docs, tmp_path):
    """The same through `python -m dmmkit`: stderr is one line, no traceback."""
    cases = {"truncated.json": json.dumps(docs["compare"])[:500], "list.json": "[1, 2]",
             "foreign.json": json.dumps({"schema": "dmm-replay/1", "trace": {}}),
             "missing-configs.json": json.dumps({k: v for k, v in docs["explore"].items() if k != "configs"})}
    for k, (fname, text) in enumerate(cases.items()):
        f = tmp_path / fname
        f.write_text(text)
        cmds = [["show", str(f)], ["report", str(f), "-o", str(tmp_path / "r")],
                ["generate", "best", "--results", str(f), "-o", str(tmp_path / "g"), "--no-build"]]
        for args in cmds[k % 3: k % 3 + 2]:
            p = run_cli(args)
            assert p.returncode == 2, (args, p.stderr)
            assert "Traceback" not in p.stderr + p.stdout
            one_line_naming(p.stderr, f, args[0])


def test_last_resort_guard(monkeypatch, tmp_path, capsys):
    """An unexpected exception is still one line (and DMMKIT_DEBUG=1 lets it
    through for a developer)."""
    import dmmkit.report
    monkeypatch.setattr(dmmkit.report, "load_results", lambda paths: 1 / 0)
    rc, _, err = run_main(["show", str(tmp_path / "x.json")], capsys)
    assert rc == 1
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("dmmkit show: internal error: ZeroDivisionError"), err
    monkeypatch.setenv("DMMKIT_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        main(["show", str(tmp_path / "x.json")])
