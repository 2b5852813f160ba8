"""`dmmkit spm-rewrite`: the front end's door to the scratchpad heap's compiler
pass (tools/spmcc).  The pass's own corpus (raw vs rewritten programs under
paranoid poisoning and ASan) runs in CTest (`ctest -L spmcc`); here: the
command finds the pass, writes the rewrite, and passes a refusal through as
`file:line: why` with exit status 1.  libclang's bindings are required
(scripts/setup.sh installs python3-clang-14): without them these tests fail."""

from conftest import ROOT, run_cli

CORPUS = ROOT / "tools" / "spmcc" / "tests"


def test_rewrites_a_list_program(tmp_path):
    out = tmp_path / "list.spm.c"
    p = run_cli(["spm-rewrite", str(CORPUS / "list.c"), "-o", str(out)])
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    assert '#include "spmcc_rt.h"' in text
    assert "spmcc_malloc(sizeof *n)" in text and "spmcc_free(d)" in text
    # insert_sorted holds n while it translates p: n is pinned, p is not
    assert "spmcc_pin(" in text and "spmcc_unpin(" in text
    assert "spmcc_p2s_ro(p)" in text
    assert "int spmcc_user_main(void)" in text and "spmcc_run(argc, argv" in text


def test_refusal_is_file_line_and_status_1(tmp_path):
    src = CORPUS / "refuse_chain.c"
    p = run_cli(["spm-rewrite", str(src), "-o", str(tmp_path / "x.c")])
    assert p.returncode == 1
    assert f"{src}:11: dmm-spmcc refuses: the condition reads the heap pointer 'a->next' from the heap only under a condition" in p.stderr
    assert not (tmp_path / "x.c").exists()


def test_bad_alloc_alias_is_a_usage_error():
    p = run_cli(["spm-rewrite", str(CORPUS / "list.c"), "--alloc", "xmalloc=new"])
    assert p.returncode == 2 and "--alloc xmalloc=new" in p.stderr


def test_unreadable_or_binary_input_is_one_line_and_status_2(tmp_path):
    # libclang answers both with a bare TranslationUnitLoadError, which the
    # front end used to report as an internal error with a traceback hint.
    junk = tmp_path / "junk.c"
    junk.write_bytes(bytes(range(256)) * 8)
    for path, why in ((tmp_path / "missing.c", "cannot read"), (tmp_path, "cannot read"),
                      (junk, "not a C source file")):
        out = tmp_path / "out.c"
        p = run_cli(["spm-rewrite", str(path), "-o", str(out)])
        assert p.returncode == 2, (path, p.returncode, p.stderr)
        assert why in p.stderr and "internal error" not in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert not out.exists()
