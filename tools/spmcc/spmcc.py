#!/usr/bin/env python3
"""dmm-spmcc: the scratchpad heap's compiler pass (seed 000, section 6, Fig. 6).

Reads an ordinary C file that uses malloc/calloc/realloc/free and pointer
dereferences and writes the same program for the scratchpad heap
(docs/spm.md, "The compiler pass"):

* malloc, calloc, realloc and free become the dmm_spm_* calls (through
  tools/spmcc/runtime/spmcc_rt.h).  Every pointer the program holds keeps its
  C type and holds a GLOBAL address.
* Each access region (a run of straight-line statements: a loop body, the
  statements between two control statements) gets one translation per heap
  pointer, placed before the pointer's first access: p2s (p2s_ro when the
  region only reads through it), or a pin when a call that may move data
  follows inside the region (malloc, another translation, a call to a
  function of the program).  Pins are released at the end of the region.
  This is the local-address rule of dmm/spm.h: a local address dies at the
  next malloc/p2s/pin on the core, so a translation that must outlive one is
  pinned.
* Where a local address escapes as a value (the address of a heap lvalue,
  `&p->f`; a C library function returning a pointer into a heap argument,
  strchr), the value is converted back with s2p.
* A condition (if/while/for/switch) or a statement whose heap access is
  evaluated only conditionally (the right of && and ||, the arms of ?:) is
  translated in place, around that one access.

What it cannot prove safe it refuses, with `file:line: why` on stderr and
exit status 1, writing nothing.  See docs/spm.md for the full list.

Usage: dmm-spmcc [-o OUT] [-I DIR] [-D NAME[=V]] [--std c11] FILE.c
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

# Debian's python3-clang-14 installs the bindings for the system Python
# (/usr/lib/python3/dist-packages); a virtual environment or a pyenv Python
# does not see that directory, so it is tried after the interpreter's own.
_DEBIAN_BINDINGS = "/usr/lib/python3/dist-packages"


def load_cindex():
    try:
        import clang.cindex as ci  # noqa: F401
        return ci
    except ImportError:
        pass
    if os.path.isfile(os.path.join(_DEBIAN_BINDINGS, "clang", "cindex.py")):
        sys.path.append(_DEBIAN_BINDINGS)
        try:
            import clang.cindex as ci
            return ci
        except ImportError:
            pass
    raise SystemExit("dmm-spmcc: libclang's Python bindings are missing "
                     "(apt install python3-clang-14; scripts/setup.sh installs it)")


ALLOC = {"malloc": "spmcc_malloc", "calloc": "spmcc_calloc", "realloc": "spmcc_realloc", "free": "spmcc_free"}
MOVING_ALLOC = {"malloc", "calloc", "realloc"}
# allocators the pass does not rewrite, and calls that start threads: refused
OTHER_ALLOC = {"aligned_alloc", "posix_memalign", "memalign", "valloc", "pvalloc", "reallocarray"}
THREAD_START = {"pthread_create", "thrd_create"}
# C library functions that touch their pointer arguments only during the call
# and keep nothing: a heap argument is passed as its local address.
EXTERN_OK = {
    "memcpy", "memmove", "memset", "memcmp", "memchr", "strlen", "strnlen", "strcmp", "strncmp", "strcpy",
    "strncpy", "strcat", "strncat", "strchr", "strrchr", "strstr", "strspn", "strcspn", "printf", "fprintf",
    "sprintf", "snprintf", "puts", "fputs", "fwrite", "fread", "sscanf", "atoi", "atol", "strtol", "strtoul",
    "strtod", "putchar",
}
# C library functions that call back a function of the program on elements of
# their array argument (a heap array is pinned for the call)
SORTS = {"qsort"}
EXTERN_OK |= SORTS
# ... of which these never write through any pointer argument
EXTERN_RO = {"memcmp", "strlen", "strnlen", "strcmp", "strncmp", "strchr", "strrchr", "strstr", "strspn",
             "strcspn", "printf", "puts", "fputs", "fwrite", "atoi", "atol", "strtol", "strtoul", "strtod",
             "memchr", "putchar"}
# ... and these write only through the argument at this index (the rest are read)
EXTERN_WRITES_ARG = {"qsort": 0, "memcpy": 0, "memmove": 0, "memset": 0, "strcpy": 0, "strncpy": 0, "strcat": 0,
                     "strncat": 0, "sprintf": 0, "snprintf": 0, "fread": 0, "fprintf": -1}


def _arg_written(name, i):
    if name in EXTERN_RO:
        return False
    w = EXTERN_WRITES_ARG.get(name)
    return True if w is None else w == i


# ... of which these return a pointer into their first argument (s2p'd back).
RETURNS_ARG0 = {"memcpy", "memmove", "memset", "memchr", "strcpy", "strncpy", "strcat", "strncat", "strchr",
                "strrchr", "strstr"}
# Functions that may run the program's code or keep a pointer: refused with a heap argument.
SIMPLE_KINDS = {"DECL_STMT", "RETURN_STMT", "NULL_STMT"}
CONTROL_KINDS = {"IF_STMT", "FOR_STMT", "WHILE_STMT", "DO_STMT", "SWITCH_STMT", "COMPOUND_STMT", "CASE_STMT",
                 "DEFAULT_STMT", "LABEL_STMT", "GOTO_STMT", "BREAK_STMT", "CONTINUE_STMT", "INDIRECT_GOTO_STMT"}
WRAPPERS = {"UNEXPOSED_EXPR", "PAREN_EXPR"}


class Refusal(Exception):
    def __init__(self, cur_or_loc, why: str):
        super().__init__(why)
        self.loc = cur_or_loc
        self.why = why


def _line(c):
    loc = c.location if hasattr(c, "location") else c
    return loc.line


@dataclass
class Trans:
    key: str            # source text of the stable base expression
    base: object        # its cursor (first use)
    ctype: str          # its C type (a pointer type)
    deps: set           # variables the base reads
    glob: bool          # reads a global (a call may change it)
    stmt: int           # index (in the region's run) of its first use
    order: int          # insertion order
    name: str = ""
    written: bool = False
    mode: str = ""      # p2s | p2s_ro | pin
    any: str = ""       # "_any" when the pointer may also hold a host address


@dataclass
class Site:
    cur: object         # the access (member/subscript/deref) or & expression
    base: object        # the stable base cursor whose text is replaced
    key: str
    written: bool
    conditional: bool
    addr: bool = False  # cur is `&lvalue`: the local address escapes, s2p


@dataclass
class StmtInfo:
    cur: object
    sites: list = field(default_factory=list)
    moves: bool = False          # malloc/calloc/realloc or a call into the program
    user_call: bool = False
    assigns: set = field(default_factory=set)   # variables written
    frees: set = field(default_factory=set)      # keys passed to free()
    releases: bool = False                       # calls free or realloc
    comma: bool = False                          # holds a comma operator
    user_frees: list = field(default_factory=list)  # calls into the program that may free: (start, end)
    free_calls: list = field(default_factory=list)  # free() calls: (call cursor, argument cursor)
    reallocs: bool = False                       # calls realloc
    escapes: list = field(default_factory=list)  # (call cursor, arg cursors) of RETURNS_ARG0 calls
    ext_args: list = field(default_factory=list)  # heap arguments of C library calls
    move_calls: list = field(default_factory=list)  # the calls that may move data (allocations, the program's)
    # stores into heap objects: assigns token ("F*", ("F", f), ("E", t)) ->
    # the variables they store through, each one that only holds object
    # starts (object_start), None for any other store
    store_objs: dict = field(default_factory=dict)


class Pass:
    def __init__(self, ci, path, args, no_pin=False, aliases=None, no_drop=False, no_alias=False,
                 any_store=False, no_tail=False, unsafe_tail=False,
                 unsafe_first_use=False, unsafe_args=False, unsafe_lead=False, no_stream=False):
        self.no_pin = no_pin
        self.no_stream = no_stream  # measurements: arrays streamed beside a nested loop pinned whole (--no-stream)
        self.streamed_keys = set()  # (loop offset, key): translated per element in the loop's regions (streamed)
        self.unsafe_lead = unsafe_lead  # tests: cond_lead serves runs that translate or move data first (wrong)
        self.no_drop = no_drop   # tests: hoisted pins in a loop that frees left off the guard stack
        self.no_alias = no_alias  # tests: the loop rules before object-start stores (--no-object-stores)
        self.any_store = any_store  # tests: every store taken to land elsewhere (--unsafe-any-store): wrong
        self.no_tail = no_tail    # tests: an if statement's translation does not serve the run after it
        self.unsafe_tail = unsafe_tail  # tests: ... serves it even when the run moves data (wrong)
        self.unsafe_first_use = unsafe_first_use  # tests: a translation used only in its first statement (wrong)
        self.unsafe_args = unsafe_args  # tests: any use in a moving call's statement taken as in its arguments (wrong)
        self.aliases = dict(aliases or {})   # xmalloc -> malloc, ...
        self.ci = ci
        self.path = os.path.abspath(path)
        self.shown = path
        idx = ci.Index.create()
        # the detailed record: the macro expansions in the file (in_macro)
        self.tu = idx.parse(path, args=args, options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)
        with open(path, "rb") as f:
            self.src = f.read()
        errs = [d for d in self.tu.diagnostics if d.severity >= ci.Diagnostic.Error]
        if errs:
            d = errs[0]
            raise Refusal(d.location, "does not compile: " + d.spelling)
        self.edits = []          # (start, end, text)
        self.closers = {}        # index in edits of a block's " }" -> its opener (offset, priority)
        self.user_fns = {}       # name -> FUNCTION_DECL with a body in this file
        self.fn_decls = {}       # name -> any FUNCTION_DECL
        self.kinds = {}          # location key -> set of 'H'/'N'
        self.addr_taken = set()  # variable ids whose address is taken
        self.counter = 0
        self._macros = None
        self.fn_values = set()
        self.globals = set()
        self.may_free = set()
        self._deps = {}
        self._chains = {}
        self.hoisted = {}        # key -> local name translated before the enclosing loop
        self.same_loc = []       # (field location, `*q` location): the field's address is taken
        self._object_start = {}  # variable id -> holds only object starts (object_start)
        self.lead = None         # (key, name, pin name, offset): lead_in's pin until its run ends
        self.tail = None         # the statements after the if statement being rewritten (compound)
        self.tail_key = None     # hoist_if's keys, translated in its condition, until its tail's run ends
        self.serve = None        # (key, name, written): cond_lead's translation, named before the condition's prelude

    # ---- helpers -----------------------------------------------------------
    def in_macro(self, c):
        """The name of the macro whose expansion in this file holds cursor c's
        start, or None: the pass rewrites the file's text, and an access
        spelt by a macro has no text of its own to rewrite."""
        if self._macros is None:
            self._macros = [(m.extent.start.offset, m.extent.end.offset, m.spelling)
                            for m in self.tu.cursor.get_children()
                            if m.kind.name == "MACRO_INSTANTIATION" and self.mine(m)]
        off = c.extent.start.offset
        for st, en, name in self._macros:
            if st <= off < en:
                return name
        return None

    def no_macro(self, c, what):
        name = self.in_macro(c)
        if name is not None:
            self.refuse(c, f"{what} inside the expansion of the macro '{name}': the pass rewrites the "
                           "source text, which does not spell it; write it out or make the macro a function")

    def mine(self, c):
        f = c.location.file
        return f is not None and os.path.abspath(f.name) == self.path

    def text(self, c):
        return self.src[c.extent.start.offset:c.extent.end.offset].decode()

    def refuse(self, c, why):
        raise Refusal(c, why)

    @staticmethod
    def strip(c):
        while c.kind.name in WRAPPERS or c.kind.name == "CSTYLE_CAST_EXPR" and \
                c.type.kind.name == "POINTER" and _kids(c)[-1].type.kind.name == "POINTER":
            k = _kids(c)
            if not k:
                break
            c = k[-1]
        return c

    @staticmethod
    def strip_paren(c):
        while c.kind.name in WRAPPERS:
            k = _kids(c)
            if len(k) != 1:
                break
            c = k[0]
        return c

    def tokens(self, c):
        return [t.spelling for t in c.get_tokens()]

    def unop(self, c):
        """The operator of a UNARY_OPERATOR: (op, postfix)."""
        toks = self.tokens(c)
        child = _kids(c)[0]
        if toks and child.extent.start.offset > c.extent.start.offset:
            return toks[0], False
        return (toks[-1] if toks else "?"), True

    def binop(self, c):
        k = _kids(c)
        end = k[0].extent.end.offset
        for t in c.get_tokens():
            if t.extent.start.offset >= end:
                return t.spelling
        return "?"

    @staticmethod
    def var_id(decl):
        return (decl.location.offset, decl.spelling)

    def is_ptr(self, t):
        return t.get_canonical().kind.name == "POINTER"

    def is_array(self, t):
        return t.get_canonical().kind.name in ("CONSTANTARRAY", "INCOMPLETEARRAY", "VARIABLEARRAY")

    # ---- pass 1: where do pointers point (flow-insensitive) ---------------
    def loc_of(self, c):
        """The location an lvalue of pointer type names, or None."""
        c = self.strip_paren(c)
        k = c.kind.name
        if k == "DECL_REF_EXPR" and c.referenced is not None and c.referenced.kind.name in ("VAR_DECL", "PARM_DECL"):
            return self.var_loc(c.referenced)
        if k == "MEMBER_REF_EXPR":
            base = _kids(c)[0] if _kids(c) else None
            rec = c.referenced.semantic_parent.type.get_canonical().spelling if c.referenced else "?"
            return ("f", rec, c.spelling) if base is not None else None
        if k == "ARRAY_SUBSCRIPT_EXPR" or (k == "UNARY_OPERATOR" and self.unop(c)[0] == "*"):
            return ("e", _unqual(c.type))
        return None

    def var_loc(self, decl):
        """A variable's location; one whose address is taken is also reached
        through pointers, so it shares the location of `*q` of its type."""
        vid = self.var_id(decl)
        if vid in self.addr_taken:
            return ("e", _unqual(decl.type))
        return ("v",) + vid

    def heap_lvalue(self, c):
        """True when the lvalue c lies in a heap object."""
        c = self.strip_paren(c)
        k = c.kind.name
        if k == "MEMBER_REF_EXPR":
            base = _kids(c)[0]
            if self.is_ptr(base.type):
                return "H" in self.kind(base)
            return self.heap_lvalue(base)
        if k == "ARRAY_SUBSCRIPT_EXPR":
            base = _kids(c)[0]
            inner = self.strip(base)
            if self.is_array(inner.type):
                return self.heap_lvalue(inner)
            return "H" in self.kind(base)
        if k == "UNARY_OPERATOR" and self.unop(c)[0] == "*":
            return "H" in self.kind(_kids(c)[0])
        return False

    def host_lvalue(self, c):
        """True when the lvalue c may lie outside the heap though heap_lvalue
        says it may lie in it: accessed through a pointer that may be either."""
        c = self.strip_paren(c)
        k = c.kind.name
        if k == "MEMBER_REF_EXPR" and self.is_ptr(_kids(c)[0].type):
            return "N" in self.kind(_kids(c)[0])
        if k == "ARRAY_SUBSCRIPT_EXPR" and not self.is_array(self.strip(_kids(c)[0]).type):
            return "N" in self.kind(_kids(c)[0])
        if k == "UNARY_OPERATOR" and self.unop(c)[0] == "*":
            return "N" in self.kind(_kids(c)[0])
        return False

    def kind(self, c):
        """The set of 'H' (heap) / 'N' (elsewhere) a pointer expression may hold."""
        c0 = c
        c = self.strip_paren(c)
        k = c.kind.name
        if k == "CSTYLE_CAST_EXPR":
            inner = _kids(c)[-1]
            if self.is_ptr(inner.type) or self.is_array(inner.type):
                return self.kind(inner)
            if self.strip_paren(inner).kind.name == "INTEGER_LITERAL":
                return set()       # (void *)0, NULL (a literal is spelt by its macro, so not read)
            return {"N"}
        if k == "INTEGER_LITERAL":
            return set()
        if k == "STRING_LITERAL":
            return {"N"}
        if k == "CALL_EXPR":
            name = self.aliases.get(c.spelling, c.spelling)
            if name in MOVING_ALLOC:
                return {"H"}
            if name in self.user_fns:
                return set(self.kinds.get(("r", name), set()))
            if name in RETURNS_ARG0 and _args(c):
                return self.kind(_args(c)[0])
            return {"N"}
        if k == "DECL_REF_EXPR":
            d = c.referenced
            if d is None:
                return {"N"}
            if self.is_array(c.type) or d.kind.name == "FUNCTION_DECL":
                return {"N"}
            return set(self.kinds.get(self.var_loc(d), set()))
        if k in ("MEMBER_REF_EXPR", "ARRAY_SUBSCRIPT_EXPR") or (k == "UNARY_OPERATOR" and self.unop(c)[0] == "*"):
            if self.is_array(c.type):
                return {"H"} if self.heap_lvalue(c) else {"N"}
            loc = self.loc_of(c)
            return set(self.kinds.get(loc, set())) if loc else {"N"}
        if k == "UNARY_OPERATOR":
            op, _ = self.unop(c)
            if op == "&":
                return {"H"} if self.heap_lvalue(_kids(c)[0]) else {"N"}
            if op in ("++", "--"):
                return self.kind(_kids(c)[0])
            return {"N"}
        if k in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR"):
            a, b = _kids(c)[0], _kids(c)[1]
            op = self.binop(c)
            if op == ",":
                return self.kind(b)
            if op == "=" or k == "COMPOUND_ASSIGNMENT_OPERATOR":
                return self.kind(a) if k == "COMPOUND_ASSIGNMENT_OPERATOR" else self.kind(b)
            if op in ("+", "-"):
                if self.is_ptr(a.type) or self.is_array(a.type):
                    return self.kind(a)
                if self.is_ptr(b.type) or self.is_array(b.type):
                    return self.kind(b)
            return {"N"}
        if k == "CONDITIONAL_OPERATOR":
            ks = _kids(c)
            return self.kind(ks[1]) | self.kind(ks[2])
        if k == "GNU_NULL_EXPR":
            return set()
        if k == "UNEXPOSED_EXPR" and _kids(c0):
            return self.kind(_kids(c0)[-1])
        return {"N"}

    def flows(self):
        """(location, expression) pairs: every value a pointer location may receive."""
        out = []

        def visit(c, fn):
            k = c.kind.name
            if k == "VAR_DECL" and self.is_ptr(c.type):
                init = [x for x in _kids(c) if x.kind.is_expression()]
                if init:
                    out.append((self.var_loc(c), init[-1]))
            elif k == "BINARY_OPERATOR" and self.binop(c) == "=" and self.is_ptr(c.type):
                loc = self.loc_of(_kids(c)[0])
                if loc:
                    out.append((loc, _kids(c)[1]))
            elif k == "CALL_EXPR" and c.spelling in self.user_fns:
                params = [p for p in self.user_fns[c.spelling].get_arguments()]
                for p, a in zip(params, _args(c)):
                    if self.is_ptr(p.type):
                        out.append((self.var_loc(p), a))
            elif k == "RETURN_STMT" and fn is not None and self.is_ptr(fn.result_type):
                e = _kids(c)
                if e:
                    out.append((("r", fn.spelling), e[0]))
            elif k == "INIT_LIST_EXPR":
                for x in _kids(c):
                    if self.is_ptr(x.type):
                        out.append((("init", x.location.offset), x))
            if k == "UNARY_OPERATOR" and self.unop(c)[0] == "&":
                # `&p->left`: the field is then also written and read as `*link`
                inner = self.strip_paren(_kids(c)[0])
                if inner.kind.name == "MEMBER_REF_EXPR" and self.is_ptr(inner.type):
                    loc = self.loc_of(inner)
                    if loc:
                        self.same_loc.append((loc, ("e", _unqual(inner.type))))
            if k == "CALL_EXPR" and self.aliases.get(c.spelling, c.spelling) in SORTS and len(_args(c)) >= 4:
                # the comparator's two arguments point into the array being
                # sorted: its local copy (pinned for the call) or a host array
                cmp = self.user_callback(_args(c)[-1])
                if cmp is not None:
                    for prm in list(cmp.get_arguments())[:2]:
                        out.append((self.var_loc(prm), {"N"}))
            for ch in c.get_children():
                visit(ch, fn if k != "FUNCTION_DECL" else c)

        for c in self.tu.cursor.get_children():
            if self.mine(c):
                if c.kind.name == "VAR_DECL":
                    self.globals.add(self.var_id(c))
                visit(c, None)
        # a function called through a pointer receives no heap pointer that
        # way (check_untracked refuses it), but may receive host ones
        for name in sorted(self.fn_values):
            for prm in self.user_fns[name].get_arguments():
                if self.is_ptr(prm.type):
                    out.append((self.var_loc(prm), {"N"}))
        return out

    def freeing_functions(self):
        """The program's functions that may free or realloc (themselves or
        through a callee, or through a pointer to a function): a pin must not
        be held across a call to one, whose free could drop the pinned copy."""
        calls, frees = {}, set()
        for name, fn in self.user_fns.items():
            callees, stack = set(), [fn]
            while stack:
                x = stack.pop()
                if x.kind.name == "CALL_EXPR":
                    callee = self.strip(_kids(x)[0]) if _kids(x) else None
                    direct = callee is not None and callee.kind.name == "DECL_REF_EXPR" and \
                        callee.referenced is not None and callee.referenced.kind.name == "FUNCTION_DECL"
                    cname = self.aliases.get(x.spelling, x.spelling)
                    if not direct or cname in ("free", "realloc"):
                        frees.add(name)
                    elif cname in self.user_fns:
                        callees.add(cname)
                stack.extend(x.get_children())
            calls[name] = callees
        changed = True
        while changed:
            changed = False
            for name, cs in calls.items():
                if name not in frees and cs & frees:
                    frees.add(name)
                    changed = True
        return frees

    def user_callback(self, a):
        """The FUNCTION_DECL of the program's function passed as argument a, or None."""
        x = self.strip(a)
        if x.kind.name == "UNARY_OPERATOR" and self.unop(x)[0] == "&":
            x = self.strip_paren(_kids(x)[0])
        if x.kind.name == "DECL_REF_EXPR" and x.referenced is not None and \
                x.referenced.kind.name == "FUNCTION_DECL" and x.spelling in self.user_fns:
            return self.user_fns[x.spelling]
        return None

    def find_addr_taken(self, c):
        for ch in c.get_children():
            if ch.kind.name == "UNARY_OPERATOR" and (ch.location.file is None or self.mine(ch)) \
                    and self.unop(ch)[0] == "&":
                d = self.strip_paren(_kids(ch)[0])
                if d.kind.name == "DECL_REF_EXPR" and d.referenced is not None:
                    self.addr_taken.add(self.var_id(d.referenced))
            if ch.location.file is None or self.mine(ch):
                self.find_addr_taken(ch)

    def function_values(self):
        """The program's functions named other than as the callee of a call:
        their address is taken, and calls through it are not followed."""
        called, used = set(), set()

        def refs(c):
            for i, x in enumerate(_kids(c)):
                if c.kind.name == "CALL_EXPR" and i == 0:
                    called.add((x.extent.start.offset, x.extent.end.offset))
                if x.kind.name == "DECL_REF_EXPR" and x.referenced is not None and \
                        x.referenced.kind.name == "FUNCTION_DECL" and x.spelling in self.user_fns:
                    used.add((x.spelling, x.extent.start.offset, x.extent.end.offset))
                refs(x)
        for c in self.tu.cursor.get_children():
            if self.mine(c):
                refs(c)
        return {n for n, st, en in used if not any(a <= st and en <= b for a, b in called)}

    def analyse(self):
        for c in self.tu.cursor.get_children():
            if c.kind.name == "FUNCTION_DECL":
                self.fn_decls[c.spelling] = c
                if c.is_definition() and self.mine(c):
                    self.user_fns[c.spelling] = c
        self.fn_values = self.function_values()
        self.find_addr_taken(self.tu.cursor)
        self.may_free = self.freeing_functions()
        flows = self.flows()
        changed = True
        while changed:
            changed = False
            for loc, e in flows:
                ks = e if isinstance(e, set) else self.kind(e)
                cur = self.kinds.setdefault(loc, set())
                if not ks <= cur:
                    cur |= ks
                    changed = True
            for a, b in self.same_loc:
                ka, kb = self.kinds.setdefault(a, set()), self.kinds.setdefault(b, set())
                if ka != kb:
                    ka |= kb
                    kb |= ka
                    changed = True
        for loc, e in flows:
            if loc[0] == "init" and "H" in self.kinds.get(loc, ()):
                self.refuse(e, "a heap pointer in an initializer list: assign it in a statement")
        self.check_untracked()

    def check_untracked(self):
        """Where a heap pointer would leave what the analysis follows (its
        kinds flow through assignments, direct calls' parameters and returns):
        refused, since code that received it would access a global address as
        if it were local."""
        def direct_fn(call):
            callee = self.strip(_kids(call)[0]) if _kids(call) else None
            if callee is not None and callee.kind.name == "DECL_REF_EXPR" and callee.referenced is not None \
                    and callee.referenced.kind.name == "FUNCTION_DECL":
                return callee.referenced
            return None

        def visit(c):
            k = c.kind.name
            if k == "CALL_EXPR":
                f = direct_fn(c)
                if f is None:
                    for a in _args(c):
                        if (self.is_ptr(a.type) or self.is_array(a.type)) and "H" in self.kind(a):
                            self.refuse(a, f"heap pointer '{self.text(a)}' passed through a function pointer: "
                                           "the pass cannot see which function receives it (call it directly)")
                    if self.is_ptr(c.type) and heap_returners:
                        self.refuse(c, "a pointer returned through a function pointer (the program's "
                                       f"'{sorted(heap_returners)[0]}', whose address is used, returns heap "
                                       "pointers): call it directly")
                elif self.aliases.get(f.spelling, f.spelling) in OTHER_ALLOC:
                    self.refuse(c, f"'{f.spelling}' is not rewritten (the heap has malloc, calloc, realloc and "
                                   "free): the memory it returns could reach the heap's free")
                elif f.spelling in THREAD_START:
                    self.refuse(c, f"'{f.spelling}': the rewritten program runs on one execution core "
                                   "(spmcc_rt.h); threads are not supported")
                elif f.spelling in self.user_fns and f.type.kind.name == "FUNCTIONPROTO" and \
                        f.type.is_function_variadic():
                    nfixed = len(list(self.user_fns[f.spelling].get_arguments()))
                    for a in _args(c)[nfixed:]:
                        if (self.is_ptr(a.type) or self.is_array(a.type)) and "H" in self.kind(a):
                            self.refuse(a, f"heap pointer '{self.text(a)}' passed as a variadic argument of "
                                           f"'{f.spelling}': va_arg would receive it untranslated")
            elif k == "CSTYLE_CAST_EXPR" and c.type.get_canonical().kind.name not in ("POINTER", "VOID", "BOOL"):
                inner = _kids(c)[-1]
                if self.is_ptr(inner.type) and "H" in self.kind(inner):
                    self.refuse(c, f"heap pointer '{self.text(inner)}' converted to an integer: the pass cannot "
                                   "follow it back to a pointer (keep it a pointer)")
            for ch in c.get_children():
                visit(ch)

        # the program's functions that return heap pointers and whose address is used
        heap_returners = {n for n in self.fn_values if "H" in self.kinds.get(("r", n), ())}
        for c in self.tu.cursor.get_children():
            if self.mine(c) and c.kind.name in ("FUNCTION_DECL", "VAR_DECL"):
                visit(c)

    # ---- pass 2: accesses --------------------------------------------------
    def stable(self, c):
        """(key, deps, reads_global) of a base expression that names a pointer
        the region can translate once, or None."""
        c = self.strip(c)
        k = c.kind.name
        if k == "DECL_REF_EXPR" and c.referenced is not None and c.referenced.kind.name in ("VAR_DECL", "PARM_DECL"):
            vid = self.var_id(c.referenced)
            if vid in self.addr_taken:
                # a variable whose address is taken (`push(&head, k)`,
                # `insert(&t, k)` then `t.root->red`): any store through a
                # pointer ("*", "F*"), into an object outside the file's
                # sight ("*") or call into the program may change it
                return c, {vid, "*", "F*"}, True
            return c, {vid}, vid in self.globals
        if k == "MEMBER_REF_EXPR":
            base = _kids(c)[0]
            if self.is_ptr(base.type):
                # `t->root`, t pointing at a host object only: read like a
                # member of a local struct (any store through a pointer or
                # call into the program may change it)
                if self.kind(base) - {"N"} or self.strip(base).kind.name != "DECL_REF_EXPR":
                    return None
                r = self.stable(base)
                return r if r is None else (c, r[1] | {"*"}, True)
            r = self.stable(base)
            return r if r is None else (c, r[1] | {"*"}, True)
        if k == "ARRAY_SUBSCRIPT_EXPR":
            base, idx = _kids(c)
            bi = self.strip(base)
            if not self.is_array(bi.type) or self.heap_lvalue(bi):
                return None
            r = self.stable(bi)
            ix = self.strip(idx)
            if r is None:
                return None
            if ix.kind.name == "INTEGER_LITERAL":
                return c, r[1] | {"*"}, True
            if ix.kind.name == "DECL_REF_EXPR" and ix.referenced is not None:
                vid = self.var_id(ix.referenced)
                return c, r[1] | {vid, "*"}, True
            return None
        return None

    def base_of(self, ptr_expr):
        """The stable base of the pointer operand of an access: `p`, `p + e`, `p - e`."""
        c = self.strip(ptr_expr)
        if c.kind.name == "BINARY_OPERATOR" and self.binop(c) in ("+", "-"):
            a, b = _kids(c)
            if self.is_ptr(a.type):
                return self.base_of(a)
            if self.binop(c) == "+" and self.is_ptr(b.type):
                return self.base_of(b)
        r = self.stable(c)
        if r is None:
            r = self.chain(c)
        if r is None:
            what = self.text(ptr_expr)
            if any(s.kind.name in ("MEMBER_REF_EXPR", "ARRAY_SUBSCRIPT_EXPR", "UNARY_OPERATOR", "CALL_EXPR")
                   for s in [c]):
                self.refuse(ptr_expr, f"the heap access goes through '{what}', which is not a variable: "
                                      "assign it to a local variable first (one translation per pointer)")
            self.refuse(ptr_expr, f"cannot translate the heap pointer expression '{what}'")
        return r

    def chain(self, c):
        """A heap pointer read from the heap, `B->f` or `B[i]` (B a variable or
        itself such a read, i a variable or a constant): translated in the
        region as a pointer of its own, initialised through B's translation.
        (cursor, deps, reads_global) like stable(); self._chains[key] holds
        (B's key, the text after B)."""
        c = self.strip(c)
        k = c.kind.name
        if k == "MEMBER_REF_EXPR" and _kids(c) and self._member_op(c) == "->":
            b = _kids(c)[0]
            suffix, extra = "->" + c.spelling, {("F", c.spelling)}
        elif k == "ARRAY_SUBSCRIPT_EXPR":
            b, idx = _kids(c)
            if self.is_array(self.strip(b).type):
                return None
            ix = self.strip(idx)
            extra = {"F*"}
            if ix.kind.name == "INTEGER_LITERAL":
                suffix = "[" + self.text(idx) + "]"
            elif ix.kind.name == "DECL_REF_EXPR" and ix.referenced is not None:
                suffix = "[" + self.text(idx) + "]"
                extra.add(self.var_id(ix.referenced))
            else:
                return None
        elif k == "UNARY_OPERATOR" and self.unop(c)[0] == "*":
            b = _kids(c)[0]       # `(*link)->key`: read as link[0]
            suffix, extra = "[0]", {"F*"}
        else:
            return None
        if "H" not in self.kind(b):     # (a pointer that may also be a host address: _any)
            return None
        bs = self.strip(b)
        inner = self.stable(bs) or self.chain(bs)
        if inner is None:
            return None
        ikey = self.text(inner[0])
        self._deps[ikey] = inner
        key = self.text(c)
        self._chains[key] = (ikey, suffix)
        return c, inner[1] | extra | {"F*"}, True

    def collect(self, stmt):
        """The accesses and events of one statement (or expression)."""
        info = StmtInfo(stmt)

        def is_access(c):
            k = c.kind.name
            if k == "MEMBER_REF_EXPR":
                b = _kids(c)
                return bool(b) and self.is_ptr(b[0].type) and "." != self._member_op(c), (b[0] if b else None)
            if k == "ARRAY_SUBSCRIPT_EXPR":
                b = _kids(c)[0]
                if self.is_array(self.strip(b).type):
                    return False, None
                return True, b
            if k == "UNARY_OPERATOR" and self.unop(c)[0] == "*":
                return True, _kids(c)[0]
            return False, None

        def visit_skipping(c, skip, cond):
            if (c.extent.start.offset, c.extent.end.offset) == skip:
                return
            if c.extent.start.offset <= skip[0] and skip[1] <= c.extent.end.offset and \
                    c.kind.name in WRAPPERS | {"CSTYLE_CAST_EXPR", "BINARY_OPERATOR"}:
                for ch in c.get_children():
                    visit_skipping(ch, skip, cond)
                return
            visit(c, cond, False, None)

        def visit(c, cond, written, parent_addr):
            k = c.kind.name
            if k in ("CXX_UNARY_EXPR",):        # sizeof, _Alignof: not evaluated
                return
            acc, ptr = is_access(c)
            if acc and ptr is not None:
                ks = self.kind(ptr)
                if "H" in ks:       # a heap pointer, or one that may be (an _any translation)
                    self.no_macro(c, "a heap access")
                    bc, deps, g = self.base_of(ptr)
                    self.no_macro(bc, "a heap access")
                    info.sites.append(Site(parent_addr or c, bc, self.text(bc), written, cond, parent_addr is not None))
                    self._deps[self.text(bc)] = (bc, deps, g)
                    # the index / pointer arithmetic may hold accesses too
                    # (a chained base is read through its own translation)
                    skip = (bc.extent.start.offset, bc.extent.end.offset)
                    for ch in c.get_children():
                        visit_skipping(ch, skip, cond)
                    return
            if k == "UNARY_OPERATOR":
                op, post = self.unop(c)
                ch = _kids(c)[0]
                if op == "&":
                    inner = self.strip_paren(ch)
                    if self.heap_lvalue(inner):
                        # the address of a heap lvalue: a local address would escape
                        visit(inner, cond, False, c)
                        return
                    visit(ch, cond, False, None)
                    return
                if op in ("++", "--"):
                    self._note_write(ch, info)
                    visit(ch, cond, True, None)
                    return
            if k in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR"):
                a, b = _kids(c)
                op = self.binop(c)
                if op == "=" or k == "COMPOUND_ASSIGNMENT_OPERATOR":
                    self._note_write(a, info)
                    visit(a, cond, True, None)
                    visit(b, cond, False, None)
                    return
                if op == ",":
                    info.comma = True
                if op in ("&&", "||"):
                    visit(a, cond, False, None)
                    visit(b, True, False, None)
                    return
            if k == "CONDITIONAL_OPERATOR":
                x, y, z = _kids(c)
                visit(x, cond, False, None)
                n0 = len(info.sites)
                visit(y, True, False, None)
                n1 = len(info.sites)
                visit(z, True, False, None)
                ky = {s.key for s in info.sites[n0:n1]}
                kz = {s.key for s in info.sites[n1:]}
                for s in info.sites[n0:]:
                    if s.key in ky and s.key in kz:
                        s.conditional = cond    # accessed on both arms: as certain as the ?: itself
                return
            if k == "CALL_EXPR":
                name = self.aliases.get(c.spelling, c.spelling)
                callee = self.strip(_kids(c)[0]) if _kids(c) else None
                direct = callee is not None and callee.kind.name == "DECL_REF_EXPR" and \
                    callee.referenced is not None and callee.referenced.kind.name == "FUNCTION_DECL"
                if direct and name in ("free", "realloc") and _args(c) and self.kind(_args(c)[0]) == {"N"}:
                    # memory the rewritten program did not allocate (a
                    # header's malloc is not rewritten): the C library's
                    # free is right for it, the heap's is not (a pointer
                    # that may hold either, `p != &local ? free(p)`, goes
                    # to the heap's free: the program's test decides)
                    if name == "realloc":
                        self.refuse(c, f"realloc of '{self.text(_args(c)[0])}', which does not come from this "
                                       "file's malloc (allocated elsewhere, e.g. by a function in a header)")
                    for a in _args(c):
                        visit(a, cond, False, None)
                    return
                if direct and name in ALLOC:
                    self.edits.append((callee.extent.start.offset, callee.extent.end.offset, ALLOC[name], 0))
                    if name in MOVING_ALLOC:
                        info.moves = True
                        info.move_calls.append(c)
                    if name in ("free", "realloc"):
                        info.releases = True
                    if name == "realloc":
                        info.reallocs = True
                    if name == "free" and _args(c):
                        info.free_calls.append((c, self.strip(_args(c)[0])))
                    if name in ("free", "realloc") and _args(c):
                        a0 = self.strip(_args(c)[0])
                        r = self.stable(a0) if "H" in self.kind(a0) else None
                        if r is not None:
                            info.frees.add(self.text(r[0]))
                    for a in _args(c):
                        visit(a, cond, False, None)
                    return
                if not direct or name in self.user_fns:
                    info.moves = True
                    info.move_calls.append(c)
                    info.user_call = True
                    if not direct or name in self.may_free:
                        info.releases = True        # it may free an object pinned here
                        info.user_frees.append((c.extent.start.offset, c.extent.end.offset))
                    for a in _args(c):
                        visit(a, cond, False, None)
                    return
                heap_args = []
                for i, a in enumerate(_args(c)):
                    if self.is_ptr(a.type) or self.is_array(a.type):
                        ks = self.kind(a)
                        if "H" in ks and "N" in ks:
                            self.refuse(a, f"'{self.text(a)}' may point into the heap or elsewhere; a function "
                                           "outside this file needs one or the other")
                        if "H" in ks:
                            heap_args.append(a)
                            continue
                        if _arg_written(name, i) and self.user_callback(a) is None:
                            info.assigns.add("*")    # it may store into the object (`f(&s)`)
                    visit(a, cond, False, None)
                cbs = [f for f in map(self.user_callback, _args(c)) if f is not None]
                fptr = [a for a in _args(c) if self.user_callback(a) is None and _is_fnptr(a.type) and self.kind(a)]
                if cbs or fptr:
                    # it calls back into the program: data may move, globals change
                    info.moves = True
                    info.move_calls.append(c)
                    info.user_call = True
                    frees = fptr or any(f.spelling in self.may_free for f in cbs)
                    if name in SORTS and heap_args and (fptr or frees):
                        self.refuse(c, f"'{name}' sorts a heap array (pinned for the call) with a comparator "
                                       + ("the pass cannot see" if fptr else "that may free: the pin could be dropped"))
                    if frees:
                        info.releases = True
                        info.user_frees.append((c.extent.start.offset, c.extent.end.offset))
                elif name in SORTS and heap_args:
                    self.refuse(c, f"'{name}' with a comparator the pass cannot see")
                if heap_args:
                    if name not in EXTERN_OK:
                        self.refuse(c, f"heap pointer passed to '{name}', a function outside this file whose "
                                       "accesses the pass cannot see")
                    all_args = _args(c)
                    for a in heap_args:
                        wr = _arg_written(name, all_args.index(a))
                        if wr:
                            info.assigns.add("F*")   # the library writes into a heap object
                            info.store_objs.setdefault("F*", set()).add(None)
                        s = self.strip(a)
                        inner = s
                        if s.kind.name == "UNARY_OPERATOR" and self.unop(s)[0] == "&":
                            inner = self.strip_paren(_kids(s)[0])
                            visit(inner, cond, wr, None)      # its access is a site; '&' stays local
                            continue
                        if self.is_array(s.type):
                            visit(s, cond, wr, None)          # a heap member array: its access is a site
                            continue
                        bc, deps, g = self.base_of(a)
                        self.no_macro(bc, "a heap pointer passed to '" + name + "'")
                        info.sites.append(Site(bc, bc, self.text(bc), wr, cond))
                        self._deps[self.text(bc)] = (bc, deps, g)
                        # arguments in pointer arithmetic; the base itself
                        # (a chain such as `c.c[j]` in `c.c[j] + rr * t`) is
                        # read through its own translation, so what it
                        # contains is not a site (cursors are compared by
                        # extent: libclang makes a new object per lookup)
                        visit_skipping(s, (bc.extent.start.offset, bc.extent.end.offset), cond)
                    if name in RETURNS_ARG0 and "H" in self.kind(_args(c)[0]) and self.is_ptr(c.type) and \
                            not (c.extent.start.offset == stmt.extent.start.offset and
                                 c.extent.end.offset == stmt.extent.end.offset):
                        info.escapes.append(c)   # the value is used: s2p it back
                return
            kids = _kids(c)
            through = k in ("ARRAY_SUBSCRIPT_EXPR", "MEMBER_REF_EXPR") or k in WRAPPERS
            for j, ch in enumerate(kids):
                visit(ch, cond, written and through and j == 0, None)

        self._deps = getattr(self, "_deps", {})
        self._chains = getattr(self, "_chains", {})
        visit(stmt, False, False, None)
        return info

    def _member_op(self, c):
        b = _kids(c)[0]
        for t in c.get_tokens():
            if t.extent.start.offset >= b.extent.end.offset:
                return t.spelling
        return "?"

    def _note_write(self, lhs, info):
        c = self.strip_paren(lhs)
        if c.kind.name == "DECL_REF_EXPR" and c.referenced is not None:
            info.assigns.add(self.var_id(c.referenced))
        elif c.kind.name in ("ARRAY_SUBSCRIPT_EXPR", "MEMBER_REF_EXPR"):
            r = None
            try:
                r = self.stable(c)
            except Refusal:
                r = None
            if r is not None:
                info.assigns |= r[1]
                for t in r[1]:
                    info.store_objs.setdefault(t, set()).add(None)
        if c.kind.name in ("ARRAY_SUBSCRIPT_EXPR", "MEMBER_REF_EXPR", "UNARY_OPERATOR"):
            if self.host_lvalue(c):
                info.assigns.add("*")      # through a pointer that may also hold a host address
            if not self.heap_lvalue(c):
                info.assigns.add("*")
                return
            elif c.kind.name == "MEMBER_REF_EXPR":
                t = ("F", c.spelling)
            elif c.type.get_canonical().kind.name in ("INT", "UINT", "LONG", "ULONG", "LONGLONG", "ULONGLONG",
                                                       "SHORT", "USHORT", "FLOAT", "DOUBLE", "LONGDOUBLE",
                                                       "BOOL", "INT128", "UINT128"):
                # an element of a non-character arithmetic type: under C's
                # aliasing rules it cannot be a pointer some chain reads
                t = ("E", c.type.get_canonical().spelling)
            else:
                t = "F*"
            info.assigns.add(t)
            v = self._store_var(c)
            info.store_objs.setdefault(t, set()).add(None if v is None else self.var_id(v.referenced))

    def _store_var(self, c):
        """The variable a heap store `V[e] = `, `V->f = `, `*(V + e) = `,
        `V->a[e].f = ` writes through, when V only ever holds the start of an
        object (object_start): the store then lands in V's object, which no
        other such variable can point to while it is live (each of them gets
        its object from its own allocation call).  None otherwise."""
        c = self.strip_paren(c)
        k = c.kind.name
        kids = _kids(c)
        if not kids:
            return None
        if k == "MEMBER_REF_EXPR":
            b = self.strip(kids[0])
            return self._ptr_var(b) if self._member_op(c) == "->" else self._store_var(b)
        if k == "ARRAY_SUBSCRIPT_EXPR":
            b = self.strip(kids[0])
            return self._store_var(b) if self.is_array(b.type) else self._ptr_var(b)
        if k == "UNARY_OPERATOR" and self.unop(c)[0] == "*":
            return self._ptr_var(self.strip(kids[0]))
        return None

    def _ptr_var(self, e):
        e = self.strip(e)
        if e.kind.name == "BINARY_OPERATOR" and self.binop(e) in ("+", "-"):
            a, b = _kids(e)
            if self.is_ptr(a.type):
                return self._ptr_var(a)
            if self.binop(e) == "+" and self.is_ptr(b.type):
                return self._ptr_var(b)
            return None
        if e.kind.name == "DECL_REF_EXPR" and self.is_ptr(e.type) and self.object_start(e):
            return e
        return None

    def _store_elsewhere(self, t, key, info):
        """True when every store the loop makes under token t goes through
        a variable that only holds object starts (_store_var) other than the
        one chain `key` is read through, itself such a variable: those stores
        land in other objects, so they cannot change the pointer the chain
        reads (stringsearch's `low[i] = tolower(texts[t][i])`)."""
        if not (t == "F*" or isinstance(t, tuple) and len(t) == 2 and t[0] in ("F", "E")):
            return False
        if self.any_store:
            return True
        srcs = info.store_objs.get(t)
        ikey = self._chains[key][0]
        if not srcs or None in srcs or ikey in self._chains:
            return False
        bc = self._deps[ikey][0]
        if bc.kind.name != "DECL_REF_EXPR" or not self.object_start(bc):
            return False
        return self.var_id(bc.referenced) not in srcs

    # ---- rewriting ---------------------------------------------------------
    def fresh(self, key):
        self.counter += 1
        base = "".join(ch if ch.isalnum() else "_" for ch in key)[:24]
        return f"{base}__l{self.counter}"

    def decl_type(self, t, c):
        s = t.spelling
        if t.is_const_qualified() and s.endswith("const"):
            s = s[:-len("const")].rstrip()     # the translation's own variable is assigned
        if "(" in s or "[" in s:
            self.refuse(c, f"cannot declare a local pointer of type '{s}'")
        return s

    def any_sfx(self, key):
        """"_any" when the pointer key may hold a heap address or the address
        of a host object (spmcc_rt.h: the _any translations)."""
        ks = self.kind(self._deps[key][0])
        return "_any" if "H" in ks and "N" in ks else ""

    def insert(self, off, text, prio=0):
        self.edits.append((off, off, text, prio))

    def close(self, off, text, prio, open_off, open_prio):
        """The end of a block opened at (open_off, open_prio).  Blocks that
        end at one offset (nested statements without braces: `for (..)
        for (..) x;`) close innermost first, whatever rules made them."""
        self.closers[len(self.edits)] = (open_off, open_prio)
        self.insert(off, text, prio)

    def site_edit(self, s, local, escape_cast):
        b = s.base
        self.edits.append((b.extent.start.offset, b.extent.end.offset, local, 0))
        if s.addr:   # &heap_lvalue: s2p back
            self.insert(s.cur.extent.start.offset, f"(({escape_cast})spmcc_s2p{self.any_sfx(s.key)}(")
            self.insert(s.cur.extent.end.offset, "))")

    def inline(self, c, where):
        """A condition or conditionally evaluated statement: at most one heap
        access, translated around itself."""
        if c is None:
            return
        info = self.collect(c)
        if not info.sites:
            if info.escapes:
                self.emit_escapes(info)
            return
        if len(info.sites) > 1:
            self.refuse(info.sites[1].cur, f"{where} makes {len(info.sites)} heap accesses whose order C "
                                             "leaves open or that run only conditionally; compute them into "
                                             "variables in separate statements")
        if info.moves:
            self.refuse(c, f"{where} both accesses the heap and calls malloc or a function of the program")
        s = info.sites[0]
        if len(info.sites) == 1 and s.key in self.hoisted:
            self.site_edit(s, self.hoisted[s.key], self.decl_type(s.cur.type, s.cur) if s.addr else "")
            self.emit_escapes(info)
            return
        if s.key in self._chains:
            self.refuse(s.cur, f"{where} reads the heap pointer '{s.key}' from the heap and accesses through it; "
                               "compute it into a variable in a statement first")
        ctype = self.decl_type(s.base.type, s.base)
        fn = ("spmcc_p2s" if s.written else "spmcc_p2s_ro") + self.any_sfx(s.key)
        self.edits.append((s.base.extent.start.offset, s.base.extent.end.offset,
                           f"(({ctype})({fn}({self.text(s.base)})))", 0))
        if s.addr:
            self.insert(s.cur.extent.start.offset, f"(({self.decl_type(s.cur.type, s.cur)})spmcc_s2p{self.any_sfx(s.key)}(")
            self.insert(s.cur.extent.end.offset, "))")
        self.emit_escapes(info)

    def check_conditional(self, info, where):
        """Accesses that run only conditionally (right of && / ||, one arm of
        ?:): a pointer also accessed unconditionally is translated as usual;
        one accessed only under the condition is translated before it too,
        which is safe when it is NULL or valid there (the `p && p->x` guard:
        the runtime's translations pass NULL through).  A pointer read from
        the heap only under a condition is refused (its read could fault)."""
        uncond = {x.key for x in info.sites if not x.conditional}
        # `z->parent && z->parent->red`: the pointer is read unconditionally
        # by an access of its own, so reading it early reads nothing new
        uncond |= {self.text(x.cur) for x in info.sites if not x.conditional and not x.addr}
        for x in info.sites:
            if x.conditional and x.key not in uncond and x.key in self._chains:
                self.refuse(x.cur, f"{where} reads the heap pointer '{x.key}' from the heap only under a "
                                   "condition; compute it into a variable first")

    def prelude(self, c, stmt, where, value_type=None):
        """A condition with several heap accesses (or one through a pointer read
        from the heap, or with a call that may move data): its translations are
        made inside the condition, before it is evaluated, into variables
        declared in a block around the statement; pins are released once its
        value is known: `if ((x_l = p2s(x), y_l = pin(y), c = !!(C'), unpin(y), c))`."""
        if c is None:
            return
        info = self.collect(c)
        if value_type is None and all(x.key in self.hoisted for x in info.sites):
            for x in info.sites:            # translated before the loop
                self.site_edit(x, self.hoisted[x.key], self.decl_type(x.cur.type, x.cur) if x.addr else "")
            self.emit_escapes(info)
            return
        if value_type is None and len(info.sites) == 1 and not info.moves and \
                info.sites[0].key not in self._chains and self.serve is None:
            return self.inline(c, where)     # one access: translated where it is made
        self.check_conditional(info, where)
        trans, order = {}, 0
        for x in info.sites:
            if x.key in self.hoisted:
                continue
            bc, deps, g = self._deps[x.key]
            if {d for d in deps if not _field_dep(d)} & info.assigns:
                self.refuse(x.cur, f"{where} both changes '{x.key}' and accesses the heap through it")
            order = self.add_translation(trans, x.key, 0, order)
            trans[x.key].written |= x.written
        ordered = sorted(trans.values(), key=lambda t: t.order)
        decls, assigns = [], []
        for t in ordered:
            later = any(u.order > t.order for u in ordered)
            need = later or info.moves
            users = [u.order for u in ordered if self._reads_through(u, t)]
            if users and (self.unsafe_first_use or not any(x.key == t.key for x in info.sites)):
                # read only to initialise the translations of pointers read
                # through it (`u == u->parent->left`): dead once the last of
                # them has read its field, so a pin only when another
                # translation (an earlier one of those too) comes before that
                # (the condition's own moves come after every translation)
                need = any(t.order < v.order < max(users) for v in ordered)
            serve = self.serve is not None and value_type is None and t.key == self.serve[0]
            if serve:
                t.written |= self.serve[2]
                if need or t is not ordered[-1]:
                    self.refuse(c, "internal: the condition's translation serving its branch is not its last")
            t.mode = "pin" if need and not self.no_pin else ("p2s" if t.written else "p2s_ro")
            t.name = self.serve[1] if serve else self.fresh(t.key)
            src = t.key
            if t.key in self._chains:
                ikey, suffix = self._chains[t.key]
                src = (trans[ikey].name if ikey in trans else self.hoisted[ikey]) + suffix
            decls.append(f"{t.ctype} {t.name};")
            if t.mode == "pin":
                decls.append(f"void *{t.name}g;")
                assigns.append(f"{t.name}g = (void *)({src}), {t.name} = ({t.ctype})spmcc_pin{t.any}({t.name}g)")
            else:
                assigns.append(f"{t.name} = ({t.ctype})spmcc_{t.mode}{t.any}({src})")
        self.counter += 1
        cname = f"spmcc_c{self.counter}"
        decls.append(f"{value_type or 'int'} {cname};")
        for x in info.sites:
            name = trans[x.key].name if x.key in trans else self.hoisted[x.key]
            self.site_edit(x, name, self.decl_type(x.cur.type, x.cur) if x.addr else "")
        self.emit_escapes(info)
        unpins = "".join(f", spmcc_unpin{t.any}({t.name}g)" for t in reversed(ordered) if t.mode == "pin")
        if value_type is not None:
            # an initialiser: its value itself, the variables declared before
            # the declaration (no block: what it declares stays in scope)
            self.insert(c.extent.start.offset, "(" + ", ".join(assigns) + f", {cname} = (", -1)
            self.insert(c.extent.end.offset, f"){unpins}, {cname})", 1)
            self.insert(stmt.extent.start.offset, " ".join(decls) + " ", -2)
            return
        self.insert(c.extent.start.offset, "(" + ", ".join(assigns) + f", {cname} = !!(", -1)
        self.insert(c.extent.end.offset, f"){unpins}, {cname})", 1)
        self.insert(stmt.extent.start.offset, "{ " + " ".join(decls) + " ", -2)
        self.close(self.stmt_end(stmt), " }", 2, stmt.extent.start.offset, -2)

    def hoist_loop(self, loop):
        """Loop-invariant translations: a heap pointer that nothing inside the
        loop can change (no assignment to what it is read from, no store into
        the field a chain reads, no call into the program when it reads a
        global, no free or realloc in the loop, no return or goto out of it)
        is translated once before the loop, pinned when anything else in the
        loop may move data, and released after it.  Returns the keys hoisted
        (their sites use the names in self.hoisted)."""
        info = self.collect(loop)
        if not info.sites or info.comma:
            return []
        # a loop that frees (here or in a function of the program it calls):
        # only pointers that hold the start of an object are hoisted, and
        # their pins go on the runtime's guard stack, which free and realloc
        # consult: the object freed loses its pin first (docs/spm.md, "Loops")
        frees = info.releases
        if frees and info.reallocs:
            return []
        declared, jumps = set(), False
        stack = [loop]
        while stack:
            x = stack.pop()
            k = x.kind.name
            if k in ("RETURN_STMT", "GOTO_STMT", "INDIRECT_GOTO_STMT", "LABEL_STMT"):
                jumps = True
            if k in ("VAR_DECL", "PARM_DECL"):
                declared.add(self.var_id(x))
            stack.extend(x.get_children())
        if jumps:
            return []
        declared_names = {d[1] for d in declared}
        ok = {}

        def hoistable(key):
            if key in ok:
                return ok[key]
            ok[key] = False
            bc, deps, g = self._deps[key]
            # a name declared again inside the loop could be another variable
            # spelt the same: such a pointer stays with its regions
            names = {d[1] for d in deps if isinstance(d, tuple) and d and isinstance(d[0], int)}
            changed = deps & info.assigns
            if changed and key in self._chains and not self.no_alias:
                changed = {t for t in changed if not self._store_elsewhere(t, key, info)}
            good = not changed and not (deps & declared) and not (g and info.user_call) \
                and key not in self.hoisted and not (names & declared_names) \
                and (not frees or self.object_start(bc))
            if good and key in self._chains:
                # the pointer it is read through: invariant here too, or
                # translated before an enclosing loop (in self.hoisted while
                # that loop is rewritten)
                ikey = self._chains[key][0]
                good = (ikey in self.hoisted and not self.no_alias) or hoistable(ikey)
            ok[key] = good
            return good

        keys = []
        for k in dict.fromkeys(x.key for x in info.sites):
            # a pointer read from the heap that the loop may change
            # (`texts[t][i]` beside a char store): the pointer it is read
            # through may still be loop-invariant, and the region then reads
            # it through the translation made before the loop
            while not hoistable(k) and k in self._chains:
                k = self._chains[k][0]
            if hoistable(k) and k not in keys:
                keys.append(k)
        if not self.no_stream:
            streamed = [k for k in keys if self.streamed(loop, info, k)]
            self.streamed_keys |= {(loop.extent.start.offset, k) for k in streamed}
            keys = [k for k in keys if k not in streamed]
        if not keys:
            return []
        trans, order = {}, 0
        for k in keys:
            order = self.add_translation(trans, k, 0, order)
        for x in info.sites:
            if x.key in trans:
                trans[x.key].written |= x.written
        ordered = sorted(trans.values(), key=lambda t: t.order)
        others = any(x.key not in trans for x in info.sites)
        code = []
        for t in ordered:
            single = len(ordered) == 1 and not info.moves and not others
            t.mode = "pin" if not single and not self.no_pin else ("p2s" if t.written else "p2s_ro")
            t.name = self.fresh(t.key)
            src = t.key
            if t.key in self._chains:
                ikey, suffix = self._chains[t.key]
                src = (trans[ikey].name if ikey in trans else self.hoisted[ikey]) + suffix
            if t.mode == "pin":
                code.append(f"void *{t.name}g = (void *)({src}); {t.ctype} {t.name} = ({t.ctype})spmcc_pin{t.any}({t.name}g);")
            else:
                code.append(f"{t.ctype} {t.name} = ({t.ctype})spmcc_{t.mode}{t.any}({src});")
        unpins = "".join(f" spmcc_unpin{t.any}({t.name}g);" for t in reversed(ordered) if t.mode == "pin")
        guarded = [t for t in ordered if t.mode == "pin"] if frees and not self.no_drop else []
        if guarded:
            code += [f"spmcc_guard_push({t.name}g);" for t in guarded]
            unpins = "".join(f" spmcc_unpin{t.any}({t.name}g);" for t in reversed(ordered)
                             if t.mode == "pin" and t not in guarded) + f" spmcc_guard_pop({len(guarded)});"
        self.insert(loop.extent.start.offset, "{ " + " ".join(code) + " ", -3)
        self.close(self.stmt_end(loop), "\n" + unpins + " }", 3, loop.extent.start.offset, -3)
        for t in ordered:
            self.hoisted[t.key] = t.name
        return [t.key for t in ordered]

    def streamed(self, loop, info, key):
        """True when the array `key` is better translated element by element
        in the loop's regions than pinned whole across the loop (docs/spm.md,
        "Loops: arrays streamed beside a nested loop"): a for loop indexes it
        only by the variable its increment steps (`order[i]`), one element per
        iteration, and only outside the loop's nested loops, while a nested
        loop translates other pointers.  A pin would then hold the whole array
        in H through every run of the nested loop, which never touches it,
        and buy only the hit of the next element.  An array the nested loop
        also indexes stays pinned (dfs's `disc`, `adj`, `fin`: they are
        touched on every step of the search, and giving their room to the
        nodes costs more misses than it saves, measured)."""
        if loop.kind.name != "FOR_STMT" or key in self._chains or self.any_sfx(key):
            return False
        bc = self._deps[key][0]
        if bc.kind.name != "DECL_REF_EXPR":
            return False
        _, _, inc = self.for_parts(loop)
        if inc is None:
            return False
        steps = {v for v in self.collect(inc).assigns if isinstance(v, tuple) and len(v) == 2 and
                 isinstance(v[0], int)}
        if not steps:
            return False
        body = _kids(loop)[-1]
        nested, moving = [], []
        stack = _kids(body) if body.kind.name == "COMPOUND_STMT" else [body]
        while stack:
            x = stack.pop()
            if x.kind.name in ("FOR_STMT", "WHILE_STMT", "DO_STMT"):
                nested.append((x.extent.start.offset, x.extent.end.offset))
                # a nested loop that allocates or calls into the program: its
                # units then compete with the pinned array for H
                if self.collect(x).moves:
                    moving.append(nested[-1])
            else:
                stack.extend(x.get_children())
        if not moving:
            return False

        def inside(x, loops):
            o = x.cur.extent.start.offset
            return any(a <= o < b for a, b in loops)

        def through(k):
            while k in self._chains:
                k = self._chains[k][0]
                if k == key:
                    return True
            return False
        mine = [x for x in info.sites if x.key == key]
        if not mine or any(through(x.key) for x in info.sites):
            return False
        for x in mine:
            if x.addr or x.cur.kind.name != "ARRAY_SUBSCRIPT_EXPR" or inside(x, nested):
                return False
            b, e = (self.strip(c) for c in _kids(x.cur))
            if (b.extent.start.offset, b.extent.end.offset) != (x.base.extent.start.offset,
                                                               x.base.extent.end.offset):
                return False
            e = self.strip_paren(e)
            while e.kind.name in WRAPPERS | {"CSTYLE_CAST_EXPR"} and _kids(e):
                e = self.strip_paren(_kids(e)[-1])
            if e.kind.name != "DECL_REF_EXPR" or e.referenced is None or self.var_id(e.referenced) not in steps:
                return False
        # a nested loop translates other pointers (the work the pin would sit through)
        return any(inside(x, moving) and x.key != key for x in info.sites)

    def object_start(self, bc):
        """True when the pointer bc always holds the start of a heap object or
        NULL: a variable local to a function (not a parameter, its address
        never taken) that is only ever set from malloc/calloc/realloc."""
        d = bc.referenced if bc.kind.name == "DECL_REF_EXPR" else None
        if d is None or d.kind.name != "VAR_DECL" or d.linkage.name != "NO_LINKAGE" or \
                self.var_id(d) in self.addr_taken:
            return False
        vid = self.var_id(d)
        if vid not in self._object_start:
            self._object_start[vid] = self._only_allocated(d)
        return self._object_start[vid]

    def _only_allocated(self, d):
        def alloc(e):
            e = self.strip(e)
            while e.kind.name in WRAPPERS | {"CSTYLE_CAST_EXPR"} and _kids(e):
                e = self.strip(_kids(e)[-1])
            return e.kind.name == "CALL_EXPR" and \
                self.aliases.get(e.spelling, e.spelling) in MOVING_ALLOC
        fn = d.semantic_parent
        while fn is not None and fn.kind.name != "FUNCTION_DECL":
            fn = fn.semantic_parent
        if fn is None:
            return False
        inits = [e for e in _kids(d) if e.kind.is_expression()]
        if inits and not alloc(inits[-1]):
            return False
        stack = [fn]
        while stack:
            x = stack.pop()
            stack.extend(x.get_children())
            k = x.kind.name
            if k in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR", "UNARY_OPERATOR"):
                ch = _kids(x)
                if not ch:
                    continue
                lhs = self.strip_paren(ch[0])
                if lhs.kind.name != "DECL_REF_EXPR" or lhs.referenced is None or \
                        self.var_id(lhs.referenced) != self.var_id(d):
                    continue
                if k == "UNARY_OPERATOR":
                    if self.unop(x)[0] in ("++", "--"):
                        return False
                elif k == "COMPOUND_ASSIGNMENT_OPERATOR" or self.binop(x) == "=" and not alloc(ch[1]):
                    return False
        return True

    def iterate_loop(self, loop, body, cond, inc, while_body=False):
        """One translation per iteration for the pointers a loop changes only in
        its increment (`for (e = adj[u]; e; e = e->next) { ... e->w ... e->to }`):
        made in the condition, which runs before every iteration, and used by
        the body, the condition and the increment (which reads through it
        before it changes the pointer), instead of once per region.
        - When nothing in the loop may move data and this is the loop's only
          translation (those hoisted before it aside), a p2s/p2s_ro: no other
          translation runs before its last use.
        - Otherwise, in a for loop with no return or goto out of it, a pin,
          released at the end of the increment (a continue goes there too)
          and after the loop (the last condition's pin: the pointer may be
          NULL, which pins nothing).
        Not when the body or the condition may change the pointer or what it
        is read from, or a call into the program may (a pointer read from
        memory), or the loop frees.  A while loop whose body ends with
        `p = p->next` (or `n = k < n->key ? n->left : n->right`) is a for loop
        with that statement as its increment; a pin there needs a body
        without continue (which would skip the unpin).
        Returns the keys (self.hoisted names)."""
        if cond is None:
            return []
        if while_body:
            stmts = _kids(body) if body.kind.name == "COMPOUND_STMT" else [body]
            if stmts and stmts[-1].kind.name not in CONTROL_KINDS | SIMPLE_KINDS:
                inc = stmts[-1]
                parts = [cond] + stmts[:-1] + [inc]
            else:
                parts = [body, cond]
        else:
            parts = [x for x in (body, cond, inc) if x is not None]
        infos = [self.collect(x) for x in parts]
        if any(i.releases or i.comma for i in infos):
            return []
        sites = [x for i in infos for x in i.sites if x.key not in self.hoisted]
        if not sites:
            return []
        moves = any(i.moves for i in infos)
        user_call = any(i.user_call for i in infos)
        changed = set().union(*(i.assigns for i in (infos[:-1] if inc is not None else infos)), set())
        declared, jumps = set(), False
        stack = list(parts)
        while stack:
            x = stack.pop()
            if x.kind.name in ("RETURN_STMT", "GOTO_STMT", "INDIRECT_GOTO_STMT", "LABEL_STMT") or \
                    (while_body and x.kind.name == "CONTINUE_STMT"):
                jumps = True
            if x.kind.name in ("VAR_DECL", "PARM_DECL"):
                declared.add(x.spelling)
            stack.extend(x.get_children())
        keys = list(dict.fromkeys(x.key for x in sites))
        good = []
        for key in keys:
            bc, deps, g = self._deps[key]
            names = {d[1] for d in deps if isinstance(d, tuple) and d and isinstance(d[0], int)}
            if key in self._chains or deps & changed or (g and user_call) or names & declared:
                continue
            if (loop.extent.start.offset, key) in self.streamed_keys:
                continue    # its regions translate it per element (streamed)
            if bc.kind.name != "DECL_REF_EXPR" or (inc is not None and deps & infos[-1].assigns
                                                     and not self._follows(inc, bc)):
                # the condition translates before it tests: only a variable
                # (reading it cannot fault) that the increment sets to a
                # pointer loaded from memory (NULL or an object, like the
                # value it starts with) and not to `p + 1`, one past the end
                continue
            good.append(key)
        if not good:
            return []
        single = len(keys) == 1 and not moves
        if not single and (self.no_pin or inc is None or jumps):
            return []
        if not single:
            # the pointers pinned here are read only through their own names;
            # translations of other pointers in the body are made as usual
            pass
        decls, pre, post, after = [], [], [], []
        for key in good:
            bc, deps, g = self._deps[key]
            ctype = self.decl_type(bc.type, bc)
            name = self.fresh(key)
            sfx = self.any_sfx(key)
            written = any(x.written for x in sites if x.key == key)
            decls.append(f"{ctype} {name};")
            if single:
                pre.append(f"{name} = ({ctype})spmcc_{'p2s' if written else 'p2s_ro'}{sfx}({key})")
            else:
                decls.append(f"void *{name}g = NULL;")
                pre.append(f"{name}g = (void *)({key}), {name} = ({ctype})spmcc_pin{sfx}({name}g)")
                post.insert(0, f"spmcc_unpin{sfx}({name}g)")
                after.insert(0, f"spmcc_unpin{sfx}({name}g);")
            self.hoisted[key] = name
        self.insert(loop.extent.start.offset, "{ " + " ".join(decls) + " ", -4)
        self.close(self.stmt_end(loop), "\n" + " ".join(after) + " }", 4, loop.extent.start.offset, -4)
        self.insert(cond.extent.start.offset, "(" + ", ".join(pre) + ", ", -5)
        self.insert(cond.extent.end.offset, ")", 5)
        if post and while_body:
            self.insert(self.stmt_end(inc), " " + " ".join(p + ";" for p in post), 5)
        elif post:
            self.insert(inc.extent.start.offset, "(", -5)
            self.insert(inc.extent.end.offset, "), " + ", ".join(post), 5)
        return good

    def hoist_if(self, stmt, cond, tail=()):
        """An if statement whose accesses all go through one pointer (those
        hoisted before it aside), which its condition accesses unconditionally
        and nothing in it changes, moves data or frees: one p2s/p2s_ro made
        in the condition serves the condition and both branches, instead of
        one in the condition and one per region of the branches (rbtree's
        walk: `if (prev == n->parent) { if (n->left) ... sum_u64(s, n->key)`).
        No other translation runs while it is in use, so it needs no pin (a
        return inside is fine).  The same translation also serves the run of
        statements after the if statement (`tail`, up to the block's next
        control statement) when that whole run accesses the heap only through
        the pointer (and pointers hoisted before), declares nothing, does
        not return, changes neither the pointer nor what it is read from,
        moves no data, frees nothing and calls no C library function with a
        heap argument (rbtree's insert: `if (key == p->key) {...; return 0; }
        link = key < p->key ? &p->left : &p->right;`).  Nothing between the
        condition and the tail translates or moves data, so the local address
        is still valid there.  Returns the key hoisted, if any."""
        info = self.collect(stmt)
        if info.moves or info.releases or info.comma:
            return []
        keys = {x.key for x in info.sites if x.key not in self.hoisted}
        if len(keys) != 1:
            return []
        key = keys.pop()
        bc, deps, g = self._deps[key]
        if key in self._chains or bc.kind.name != "DECL_REF_EXPR" or deps & info.assigns or info.escapes:
            return []
        ci = self.collect(cond)
        c0 = self.strip_paren(cond)
        guard = c0.kind.name == "BINARY_OPERATOR" and self.binop(c0) == "&&" and \
            self.strip(_kids(c0)[0]).kind.name == "DECL_REF_EXPR" and \
            self.strip(_kids(c0)[0]).referenced == bc.referenced      # `if (u && u->red)`: NULL passes
        if not guard and not any(x.key == key and not x.conditional for x in ci.sites):
            return []
        ctype = self.decl_type(bc.type, bc)
        name = self.fresh(key)
        written = any(x.written for x in info.sites if x.key == key)
        end = self.stmt_end(stmt)
        tinfos = [self.collect(t) for t in tail] if tail and not self.no_tail else []
        if tinfos and all(t.kind.name not in ("DECL_STMT", "RETURN_STMT", "NULL_STMT") for t in tail) and \
                (self.unsafe_tail or
                 not any(ti.moves or ti.releases or ti.comma or ti.escapes or ti.ext_args or ti.user_call or
                         ti.free_calls or deps & ti.assigns for ti in tinfos) and
                 all(x.key == key or x.key in self.hoisted for ti in tinfos for x in ti.sites)) and \
                any(x.key == key for ti in tinfos for x in ti.sites):
            written |= any(x.written for ti in tinfos for x in ti.sites if x.key == key)
            end = self.stmt_end(tail[-1])
            self.tail_key = "pending"
        fn = ("spmcc_p2s" if written else "spmcc_p2s_ro") + self.any_sfx(key)
        self.insert(stmt.extent.start.offset, f"{{ {ctype} {name}; ", -4)
        self.close(end, " }", 4, stmt.extent.start.offset, -4)
        self.insert(cond.extent.start.offset, f"({name} = ({ctype}){fn}({key}), ", -5)
        self.insert(cond.extent.end.offset, ")", 5)
        self.hoisted[key] = name
        return [key]

    def _follows(self, inc, var):
        """True when the increment is `var = LOAD` (`e = e->next`, `v = a[i]`)."""
        c = self.strip_paren(inc)
        if c.kind.name != "BINARY_OPERATOR" or self.binop(c) != "=":
            return False
        lhs, rhs = (self.strip_paren(x) for x in _kids(c))
        if lhs.kind.name != "DECL_REF_EXPR" or lhs.referenced != var.referenced:
            return False
        return self._load(rhs)

    def _load(self, r):
        """A pointer loaded from memory, or a choice between such (`a ? x->l : x->r`)."""
        r = self.strip(r)
        if r.kind.name == "CONDITIONAL_OPERATOR":
            return all(self._load(x) for x in _kids(r)[1:])
        return r.kind.name in ("MEMBER_REF_EXPR", "ARRAY_SUBSCRIPT_EXPR") or \
            (r.kind.name == "UNARY_OPERATOR" and self.unop(r)[0] == "*")

    def for_parts(self, c):
        """(init, cond, inc) cursors of a for statement (None when absent)."""
        toks = list(c.get_tokens())
        depth, semis = 0, []
        for t in toks:
            if t.spelling == "(":
                depth += 1
            elif t.spelling == ")":
                depth -= 1
                if depth == 0:
                    break
            elif t.spelling == ";" and depth == 1:
                semis.append(t.extent.start.offset)
        init = cond = inc = None
        for p in _kids(c)[:-1]:
            o = p.extent.start.offset
            if len(semis) < 2 or o < semis[0]:
                init = p
            elif o < semis[1]:
                cond = p
            else:
                inc = p
        return init, cond, inc

    def emit_escapes(self, info):
        for call in info.escapes:
            t = self.decl_type(call.type, call)
            self.insert(call.extent.start.offset, f"(({t})spmcc_s2p_or_null(")
            self.insert(call.extent.end.offset, "))")

    def body(self, c, fn):
        k = c.kind.name
        if k == "COMPOUND_STMT":
            self.compound(list(c.get_children()), fn)
        elif k in CONTROL_KINDS:
            self.control(c, fn)
        else:
            self.run([c], fn, wrap=True)

    def control(self, c, fn):
        k = c.kind.name
        ch = _kids(c)
        if k == "COMPOUND_STMT":
            self.compound(ch, fn)
        elif k == "IF_STMT":
            tail, self.tail = self.tail, None
            done = self.hoist_if(c, ch[0], tail) or self.hoist_if_multi(c, ch[0], tail)
            keep = done and self.tail_key == "pending"
            self.tail_key = None
            lead = None if done else self.lead_in(c, ch)
            served = None if done or lead else self.cond_lead(c, ch)
            self.serve_branch(served, 0, ch[1], fn)
            if self.lead is not None:
                self.refuse(c, "internal: the condition's pin was not released in its branch")
            if len(ch) > 2:
                self.serve_branch(served, 1, ch[2], fn)
            if lead:
                self.hoisted[lead[0]] = lead[1]
                done = [lead[0]]
            self.serve = served[:3] if served else None
            self.prelude(ch[0], c, "the condition")
            self.serve = None
            if keep:
                self.tail_key = done       # compound releases them after the tail's run
                done = []
            for key in done:
                del self.hoisted[key]
        elif k == "WHILE_STMT":
            done = self.hoist_loop(c)
            done += self.iterate_loop(c, ch[1], ch[0], None, while_body=True)
            lead = None if done else self.while_lead(c, ch)
            served = None if done or lead else self.cond_lead(c, ch)
            self.serve_branch(served, 0, ch[1], fn)
            if self.lead is not None:
                self.refuse(c, "internal: the condition's translation was not released in its body")
            if lead:
                self.hoisted[lead[0]] = lead[1]
                done = [lead[0]]
            self.serve = served[:3] if served else None
            self.prelude(ch[0], c, "the condition")
            self.serve = None
            for key in done:
                del self.hoisted[key]
        elif k == "SWITCH_STMT":
            self.body(ch[1], fn)
            self.prelude(ch[0], c, "the condition")
        elif k == "DO_STMT":
            self.body(ch[0], fn)
            self.inline(ch[1], "the condition")
        elif k == "FOR_STMT":
            init, cond, inc = self.for_parts(c)
            done = self.hoist_loop(c)
            done += self.iterate_loop(c, ch[-1], cond, inc)
            self.body(ch[-1], fn)
            if init is not None:
                if init.kind.name == "DECL_STMT":
                    for v in _kids(init):
                        for e in _kids(v):
                            if e.kind.is_expression():
                                self.inline(e, "the for-initialiser")
                else:
                    self.inline(init, "the for-initialiser")
            self.prelude(cond, c, "the condition")
            if inc is not None:
                self.inline(inc, "the for-loop increment")
            for key in done:
                del self.hoisted[key]
        elif k in ("CASE_STMT", "DEFAULT_STMT", "LABEL_STMT"):
            sub = ch[-1]
            self.body(sub, fn)
        # goto / break / continue: nothing to do

    def compound(self, stmts, fn):
        run, first = [], True
        for i, s in enumerate(stmts):
            if s.kind.name in CONTROL_KINDS:
                self.run(run, fn)
                self.end_tail()
                if first:
                    self.end_lead(stmts, run)
                first = False
                run = []
                if s.kind.name == "IF_STMT":
                    tail = []
                    for t in stmts[i + 1:]:
                        if t.kind.name in CONTROL_KINDS:
                            break
                        tail.append(t)
                    self.tail = tail
                self.control(s, fn)
            else:
                run.append(s)
        self.run(run, fn)
        self.end_tail()
        if first:
            self.end_lead(stmts, run)

    def end_tail(self):
        """The end of the run after an if statement whose condition's
        translation served it too (hoist_if)."""
        if self.tail_key is not None:
            for key in self.tail_key:
                del self.hoisted[key]
            self.tail_key = None

    def _ptr_copy(self, st, tracked, ctype):
        """The mirror, on the local addresses, of a branch statement that
        copies one tracked pointer variable to another (`T *t = a;`,
        `a = b;`), or None.  tracked: variable id -> local name (updated)."""
        k = st.kind.name
        if k == "DECL_STMT":
            ds = _kids(st)
            if len(ds) != 1 or ds[0].kind.name != "VAR_DECL" or not self.is_ptr(ds[0].type):
                return None
            inits = [e for e in _kids(ds[0]) if e.kind.is_expression()]
            if len(inits) != 1:
                return None
            src = self.strip_paren(inits[0])
            while src.kind.name in WRAPPERS and _kids(src):
                src = self.strip_paren(_kids(src)[-1])
            if src.kind.name != "DECL_REF_EXPR" or src.referenced is None or \
                    self.var_id(src.referenced) not in tracked or self.decl_type(ds[0].type, ds[0]) != ctype:
                return None
            name = self.fresh(ds[0].spelling)
            text = f" {ctype} {name} = {tracked[self.var_id(src.referenced)]};"
            tracked[self.var_id(ds[0])] = name
            return text
        c = self.strip_paren(st)
        if c.kind.name != "BINARY_OPERATOR" or self.binop(c) != "=":
            return None
        lhs, rhs = (self.strip_paren(x) for x in _kids(c))
        while rhs.kind.name in WRAPPERS and _kids(rhs):
            rhs = self.strip_paren(_kids(rhs)[-1])
        if lhs.kind.name != "DECL_REF_EXPR" or rhs.kind.name != "DECL_REF_EXPR" or \
                lhs.referenced is None or rhs.referenced is None:
            return None
        lv, rv = self.var_id(lhs.referenced), self.var_id(rhs.referenced)
        if lv not in tracked or rv not in tracked:
            return None
        return f" {tracked[lv]} = {tracked[rv]};"

    def hoist_if_multi(self, stmt, cond, tail):
        """An if statement whose condition reads through two or three
        variables, unconditionally, whose branches only copy those variables
        among themselves (dijkstra's meld: `if (b->key < a->key ...) { t = a;
        a = b; b = t; } b->sibling = a->child; a->child = b; return a;`), and
        the run after it, which accesses the heap only through them: the
        condition translates each once (all but the last pinned), the copies
        in the branches are mirrored on the local addresses, and the run
        after the if uses them; the pins are released at its end (before a
        final `return` that reads no heap).  Not when anything in the
        statement or the run moves data, frees, jumps (return, break,
        continue, goto inside the if), hands a heap pointer to the C library,
        or changes a variable other than by those copies.  Returns the keys."""
        if self.no_tail or self.no_pin or not tail:
            return []
        info = self.collect(stmt)
        if self._disturbs(info):
            return []
        keys = [k for k in dict.fromkeys(x.key for x in info.sites) if k not in self.hoisted]
        if not 2 <= len(keys) <= 3:
            return []
        ci = self.collect(cond)
        vids, ctype = {}, None
        for k in keys:
            bc, deps, g = self._deps[k]
            if k in self._chains or bc.kind.name != "DECL_REF_EXPR" or self.any_sfx(k) or \
                    deps != {self.var_id(bc.referenced)} or \
                    not any(x.key == k and not x.conditional for x in ci.sites):
                return []
            t = self.decl_type(bc.type, bc)
            if ctype not in (None, t):
                return []
            ctype = t
            vids[self.var_id(bc.referenced)] = k
        if ci.assigns & set(vids):
            return []
        stack = list(_kids(stmt))
        while stack:
            x = stack.pop()
            if x.kind.name in ("RETURN_STMT", "GOTO_STMT", "INDIRECT_GOTO_STMT", "LABEL_STMT", "BREAK_STMT",
                               "CONTINUE_STMT", "CASE_STMT", "DEFAULT_STMT"):
                return []
            stack.extend(x.get_children())
        names = {k: self.fresh(k) for k in keys}
        mirrors = []
        for br in _kids(stmt)[1:]:
            tracked = {v: names[k] for v, k in vids.items()}
            for st in (_kids(br) if br.kind.name == "COMPOUND_STMT" else [br]):
                m = self._ptr_copy(st, tracked, ctype)
                if m is not None:
                    if br.kind.name != "COMPOUND_STMT":
                        return []         # `else a = b;`: the mirror would run unconditionally
                    mirrors.append((self.stmt_end(st), m))
                    continue
                if self.collect(st).assigns & set(tracked) and not self.unsafe_tail:
                    return []
        ret = tail[-1] if tail[-1].kind.name == "RETURN_STMT" else None
        body = tail[:-1] if ret is not None else list(tail)
        if ret is not None and (self.collect(ret).sites or self._has_call(ret)):
            return []
        if not body or any(t.kind.name in ("DECL_STMT", "RETURN_STMT", "NULL_STMT") for t in body):
            return []
        written = any(x.written for x in info.sites)
        used = False
        for t in body:
            ti = self.collect(t)
            if not self.unsafe_tail and (
                    ti.moves or ti.releases or ti.comma or ti.escapes or ti.ext_args or ti.user_call or
                    ti.free_calls or ti.assigns & set(vids) or
                    any(x.key not in names and x.key not in self.hoisted for x in ti.sites)):
                return []
            used |= any(x.key in names for x in ti.sites)
            written |= any(x.written for x in ti.sites if x.key in names)
        if not used:
            return []
        decls, pre, unpins = [], [], []
        for i, k in enumerate(keys):
            n = names[k]
            if i < len(keys) - 1:
                decls.append(f"{ctype} {n}; void *{n}g;")
                pre.append(f"{n}g = (void *)({k}), {n} = ({ctype})spmcc_pin({n}g)")
                unpins.insert(0, f"spmcc_unpin({n}g);")
            else:
                decls.append(f"{ctype} {n};")
                pre.append(f"{n} = ({ctype})spmcc_{'p2s' if written else 'p2s_ro'}({k})")
        self.insert(stmt.extent.start.offset, "{ " + " ".join(decls) + " ", -4)
        self.insert(cond.extent.start.offset, "(" + ", ".join(pre) + ", ", -5)
        self.insert(cond.extent.end.offset, ")", 5)
        for off, text in mirrors:
            self.insert(off, text, 6)
        if ret is not None:
            self.insert(ret.extent.start.offset, " ".join(unpins) + " ", -6)
            self.insert(self.stmt_end(ret), " }", 4)
        else:
            self.insert(self.stmt_end(body[-1]), " " + " ".join(unpins) + " }", 4)
        for k in keys:
            self.hoisted[k] = names[k]
        self.tail_key = "pending"
        return keys

    def end_lead(self, stmts, run):
        """The end of a then-branch's first run whose pointer the condition
        pinned (lead_in): the pin is released after its last statement."""
        if self.lead is None or not stmts or stmts[0].extent.start.offset != self.lead[3]:
            return
        key, name, g, _ = self.lead
        self.lead = None
        del self.hoisted[key]
        if g is not None:
            self.insert(self.stmt_end(run[-1]), f" spmcc_unpin({g});", 7)

    def _cond_run(self, cond, body, ext_args):
        """What while_lead and lead_in start from: the one variable the
        condition reads through unconditionally (not a chain, not changed by
        the condition, which moves no data and lets no heap address escape;
        with ext_args False, passes none to a C library function), and the
        body's first run of statements, up to its first control statement.
        Returns (condition info, key, base cursor, dependencies, the body's
        statements, the run), or None."""
        ci = self.collect(cond)
        keys = {x.key for x in ci.sites if x.key not in self.hoisted}
        if len(keys) != 1 or ci.moves or ci.releases or ci.comma or ci.escapes or \
                (ci.ext_args and not ext_args):
            return None
        key = keys.pop()
        bc, deps, g = self._deps[key]
        if key in self._chains or bc.kind.name != "DECL_REF_EXPR" or deps & ci.assigns or \
                not any(x.key == key and not x.conditional for x in ci.sites):
            return None
        stmts = _kids(body)
        run = _first_run(stmts)
        if not run:
            return None
        return ci, key, bc, deps, stmts, run

    def while_lead(self, c, ch):
        """A while loop whose condition reads through one variable,
        unconditionally, and whose body begins with a run of statements that
        accesses the heap only through it (and pointers hoisted before the
        loop): rbtree's insert, `while (*link) { p = *link; ...`.  The
        condition's p2s/p2s_ro serves that run too, without a pin: nothing
        between them translates or moves data.  Not when the condition or
        the run moves data, frees, changes the variable or what it is read
        from, or calls a C library function with a heap argument.
        Returns (key, name, None, first statement offset)."""
        if self.no_tail or ch[1].kind.name != "COMPOUND_STMT":
            return None
        found = self._cond_run(ch[0], ch[1], ext_args=False)
        if found is None:
            return None
        ci, key, bc, deps, stmts, run = found
        written = any(x.written for x in ci.sites if x.key == key)
        uses = False
        for st in run:
            info = self.collect(st)
            if not self.unsafe_tail and (
                    self._disturbs(info) or deps & info.assigns or self.self_declaring(info) or
                    any(x.key != key and x.key not in self.hoisted for x in info.sites)):
                return None
            uses |= any(x.key == key for x in info.sites)
            written |= any(x.written for x in info.sites if x.key == key)
        if not uses:
            return None
        ctype = self.decl_type(bc.type, bc)
        name = self.fresh(key)
        fn = ("spmcc_p2s" if written else "spmcc_p2s_ro") + self.any_sfx(key)
        self.insert(c.extent.start.offset, f"{{ {ctype} {name}; ", -4)
        self.close(self.stmt_end(c), " }", 4, c.extent.start.offset, -4)
        self.insert(ch[0].extent.start.offset, f"({name} = ({ctype}){fn}({key}), ", -5)
        self.insert(ch[0].extent.end.offset, ")", 5)
        self.hoisted[key] = name
        self.lead = (key, name, None, stmts[0].extent.start.offset)
        return self.lead

    def lead_in(self, c, ch):
        """An if statement whose condition reads through one variable,
        unconditionally, and whose then-branch begins with statements that
        access the heap through it (dfs: `if (top->it) { w = top->it->to;
        top->it = top->it->next; ...`): the condition pins it, the branch's
        first run of statements uses that pin and releases it after them, and
        the else branch releases it first.  Not when the condition moves
        data or changes the variable, when that run changes it, frees or
        returns, or when the branches are not both blocks.
        Returns (key, name, pin address name, first statement offset)."""
        if self.no_pin or len(ch) != 3 or ch[1].kind.name != "COMPOUND_STMT" or \
                ch[2].kind.name != "COMPOUND_STMT":
            return None
        found = self._cond_run(ch[0], ch[1], ext_args=True)
        if found is None:
            return None
        ci, key, bc, deps, stmts, run = found
        uses = False
        for st in run:
            info = self.collect(st)
            if st.kind.name == "RETURN_STMT" or info.releases or info.comma or deps & info.assigns or \
                    self.self_declaring(info):
                return None
            uses |= any(self._root(x.key) == key for x in info.sites)
        if not uses:
            return None
        ctype = self.decl_type(bc.type, bc)
        name = self.fresh(key)
        gname = name + "g"
        sfx = self.any_sfx(key)
        self.insert(c.extent.start.offset, f"{{ {ctype} {name}; void *{gname}; ", -4)
        self.close(self.stmt_end(c), " }", 4, c.extent.start.offset, -4)
        self.insert(ch[0].extent.start.offset,
                    f"({gname} = (void *)({key}), {name} = ({ctype})spmcc_pin{sfx}({gname}), ", -5)
        self.insert(ch[0].extent.end.offset, ")", 5)
        self.insert(ch[2].extent.start.offset + 1, f" spmcc_unpin{sfx}({gname});", -7)
        self.hoisted[key] = name
        self.lead = (key, name, gname, stmts[0].extent.start.offset)
        return self.lead

    def cond_lead(self, c, ch):
        """An if or while condition's last translation serves the first run
        of statements of each branch (the while body) that reads through
        that pointer, as long as nothing between them moves data: rbtree's
        `if (x == x->parent->left) x->parent->left = y;` translates x and
        x->parent once (the condition's), not twice, `if (y->left)
        y->left->parent = x;` reads y->left through the condition's y, and
        the fix-up loop's `while (z->parent && z->parent->red) { g =
        z->parent->parent;` reads g through the condition's z->parent.  The
        last translation of a condition is never a pin (nothing translates
        after it) and nothing in a condition without moves moves data after
        it (unpin moves nothing), so its local address is valid where the
        branch begins.  In the run, up to its last use of the pointer: no
        allocation, call into the program, free, realloc, C library call
        with a heap argument, comma, other translation than one pointer read
        through it (`y->left`, whose translation reads the condition's local
        address just before its own call: no direct use of the pointer from
        that statement on), and no change of the pointer or what it is read
        from before the last statement (there only as `v = RHS`).  A
        condition whose one access runs only under a guard other than the
        pointer itself is not served (in place, it is translated only when
        it runs).  The condition translates with p2s when a served run
        writes through it.
        Returns (key, local name, written, [served branch...]) or None."""
        if self.no_tail:
            return None
        ci = self.collect(ch[0])
        if not ci.sites or self._disturbs(ci):
            return None
        trans, order = {}, 0          # the order prelude translates in
        for x in ci.sites:
            if x.key in self.hoisted:
                continue
            if {d for d in self._deps[x.key][1] if not _field_dep(d)} & ci.assigns:
                return None
            order = self.add_translation(trans, x.key, 0, order)
        if not trans:
            return None
        key = max(trans.values(), key=lambda t: t.order).key
        if len(ci.sites) == 1 and key not in self._chains and ci.sites[0].conditional:
            # prelude would translate this one access in place, only when it
            # runs; translated before the condition it must be NULL or valid
            # even when the guard is false: only under `p && ...` on itself
            c0 = self.strip_paren(ch[0])
            bc = self._deps[key][0]
            if not (c0.kind.name == "BINARY_OPERATOR" and self.binop(c0) == "&&" and
                    self.strip(_kids(c0)[0]).kind.name == "DECL_REF_EXPR" and
                    bc.kind.name == "DECL_REF_EXPR" and
                    self.strip(_kids(c0)[0]).referenced == bc.referenced):
                return None
        branches = ch[1:3] if c.kind.name == "IF_STMT" else ch[1:2]
        runs = [self._lead_run(b, key) for b in branches]
        if all(r is None for r in runs):
            return None
        written = any(x.written for x in ci.sites if x.key == key) or any(r for r in runs if r is not None)
        return (key, self.fresh(key), written, [r is not None for r in runs])

    def _lead_run(self, br, key):
        """cond_lead's test of one branch: None when its first run cannot
        use the condition's translation of key, else whether it writes
        through it."""
        run = _first_run(_kids(br) if br.kind.name == "COMPOUND_STMT" else [br])
        infos = [self.collect(st) for st in run]
        # a use: an access through key or through any pointer read from the
        # heap through it (`key->a->b` too: its translation would start from
        # the served local address)
        uses = [i for i, info in enumerate(infos) if any(self._through(x.key, key) for x in info.sites)]
        if not uses:
            return None
        last = uses[-1]
        deps = set(self._deps[key][1])
        vdeps = {d for d in deps if not _field_dep(d)}
        chain, chain_at, written = None, None, False
        for i, info in enumerate(infos[:last + 1]):
            st = run[i]
            if not self.unsafe_lead and (
                    self._disturbs(info) or self.self_declaring(info) or
                    (st.kind.name == "RETURN_STMT" and i < last)):
                return None
            for x in info.sites:
                if x.key == key:
                    if chain_at is not None:
                        return None     # the chain's translation came first: the local is dead
                    written |= x.written
                    if i == last and vdeps & info.assigns and not self._assign_rhs_only(self.strip_paren(st), x):
                        return None
                elif x.key in self.hoisted:
                    continue
                elif x.key in self._chains and self._chains[x.key][0] == key and chain in (None, x.key):
                    chain = x.key
                    if chain_at is None:
                        chain_at = i
                        deps |= self._deps[x.key][1]
                elif not self.unsafe_lead:
                    return None
            if i < last and deps & info.assigns:
                return None
        return written

    @staticmethod
    def _disturbs(info):
        """True when the statement (or condition) described by info may move
        data or let a heap address out: an allocation or other moving call,
        a pin released, a comma, an escape, a C library call with a heap
        argument, a call into the program or a free."""
        return bool(info.moves or info.releases or info.comma or info.escapes or info.ext_args or
                    info.user_call or info.free_calls)

    def _through(self, k, key):
        """True when k is key or a pointer read from the heap through it."""
        while True:
            if k == key:
                return True
            if k not in self._chains:
                return False
            k = self._chains[k][0]

    def serve_branch(self, served, i, br, fn):
        """Rewrites branch i (0 then/body, 1 else) with cond_lead's
        translation serving its first run."""
        if not served or not served[3][i]:
            self.body(br, fn)
            return
        key, name = served[0], served[1]
        self.hoisted[key] = name
        if br.kind.name == "COMPOUND_STMT":
            self.lead = (key, name, None, _kids(br)[0].extent.start.offset)
            self.body(br, fn)       # compound's end_lead ends it after the first run
        else:
            self.body(br, fn)
            del self.hoisted[key]

    def _root(self, key):
        while key in self._chains:
            key = self._chains[key][0]
        return key

    def run(self, stmts, fn, wrap=False):
        """One straight-line run: regions, translations, pins."""
        if not stmts:
            return
        infos = []
        for s in stmts:
            info = self.collect(s)
            self.check_conditional(info, "the statement")
            infos.append(("decl" if self.self_declaring(info) else "region", info))
        regions = []      # list of (list of (index, info), translations dict)
        cur, trans = [], {}
        order = 0

        def close():
            nonlocal cur, trans
            if cur:
                regions.append((cur, trans))
            cur, trans = [], {}

        for i, (what, info) in enumerate(infos):
            if what == "decl":
                close()
                self.declaration(info.cur)
                continue
            if info.releases and trans:
                # a pinned object freed through another name would lose its
                # local copy under the pin: no pin is held across a free
                close()
            for s in info.sites:
                if s.key in self.hoisted:
                    continue
                bc, deps, g = self._deps[s.key]
                # a store into a heap field a chain reads happens at the end of
                # its statement (C leaves no earlier point to rely on), so only
                # the variables a pointer is read from matter here
                vdeps = {d for d in deps if not _field_dep(d)}
                if vdeps & info.assigns and not self._assign_rhs_only(self.strip_paren(info.cur), s):
                    self.refuse(s.cur, f"the statement both changes '{s.key}' and accesses the heap through it")
                if s.key in self._chains and info.comma:
                    self.refuse(s.cur, f"a comma expression may store into the heap before '{s.key}' is read; "
                                       "split the statement")
                order = self.add_translation(trans, s.key, len(cur), order)
                trans[s.key].written |= s.written
            cur.append((i, info))
            # after this statement a translation may be stale: its pointer
            # changed, a call into the program may have changed a global or
            # an array it reads, or its object was freed
            deps_all = set().union(*(t.deps for t in trans.values())) if trans else set()
            kill = bool(info.assigns & deps_all)
            kill |= info.user_call and any(t.glob for t in trans.values())
            kill |= bool(info.frees & set(trans)) or bool(info.user_frees)
            if kill or info.cur.kind.name == "RETURN_STMT":
                close()
        close()

        for members, tr in regions:
            self.emit_region(members, tr, fn, wrap and len(stmts) == 1)

    def self_declaring(self, info):
        """A declaration whose initialisers access the heap through a pointer
        it declares itself (`T *a = list, *b = a->next;`)."""
        if info.cur.kind.name != "DECL_STMT":
            return False
        declared = {self.var_id(v) for v in _kids(info.cur) if v.kind.name == "VAR_DECL"}
        return any(self._deps[x.key][1] & declared for x in info.sites if x.key not in self.hoisted)

    def declaration(self, stmt):
        """Each initialiser of such a declaration translates its own accesses
        inside itself (after the declarators before it are initialised):
        `T *a_l; T *b_v; T *a = list, *b = (a_l = p2s_ro(a), b_v = (a_l->next), b_v);`."""
        for v in _kids(stmt):
            if v.kind.name != "VAR_DECL":
                continue
            init = [e for e in _kids(v) if e.kind.is_expression()]
            if init and self.collect(init[-1]).sites:
                self.prelude(init[-1], stmt, "the initialiser", value_type=self.decl_type(v.type, v))

    def add_translation(self, trans, key, stmt, order):
        """Adds key's translation to trans (a pointer read from the heap after
        the pointer it is read through, innermost first); the last order used."""
        need, k = [], key
        while k not in trans and k not in self.hoisted:
            need.append(k)
            if k not in self._chains:
                break
            k = self._chains[k][0]
        for k in reversed(need):
            kb, kdeps, kg = self._deps[k]
            order += 1
            trans[k] = Trans(k, kb, self.decl_type(kb.type, kb), kdeps, kg, stmt, order, any=self.any_sfx(k))
        return order

    def _assign_rhs_only(self, st, site):
        """True when st is `v = RHS` (or a declaration) with the access in RHS."""
        if st.kind.name == "BINARY_OPERATOR" and self.binop(st) == "=":
            rhs = _kids(st)[1]
            o = site.cur.extent.start.offset
            return rhs.extent.start.offset <= o < rhs.extent.end.offset
        return False

    def emit_region(self, members, tr, fn, wrap):
        infos = [info for _, info in members]
        # the mode of each translation: pinned when something that may move
        # data follows it inside the region
        ordered = sorted(tr.values(), key=lambda t: t.order)
        for t in ordered:
            t.mode = "pin" if self._needs_pin(t, ordered, infos) and not self.no_pin else \
                ("p2s" if t.written else "p2s_ro")
            t.name = self.fresh(t.key)
        for i, info in enumerate(infos):
            if not info.user_frees:
                continue
            # a call into the program that may free: nothing may stay pinned
            # across it.  One translation used only in the call's arguments
            # (evaluated before the call) needs no pin: `destroy(t->left)`.
            live = [t for t in ordered if t.stmt <= i]
            inside = all(any(a <= x.cur.extent.start.offset < b for a, b in info.user_frees) for x in info.sites)
            if len(live) == 1 and live[0].key not in self._chains and inside:
                live[0].mode = "p2s" if live[0].written else "p2s_ro"
            elif any(t.mode == "pin" for t in live):
                self.refuse(info.cur, "the statement would hold a pinned heap object across a call of the "
                                      "program that may free it; split it")
        parts = self.part_sites(ordered, infos)
        for t in ordered:
            if t.key in parts:
                t.mode = "part"     # translated at its access: nothing to declare, pin or unpin
        first = infos[0].cur
        # translations before their first statement
        for t in ordered:
            if t.key in parts:
                continue
            at = infos[t.stmt].cur
            gname = t.name + "g"
            src = t.key
            if t.key in self._chains:
                ikey, suffix = self._chains[t.key]
                src = (tr[ikey].name if ikey in tr else self.hoisted[ikey]) + suffix
            if t.mode == "pin":
                code = (f"void *{gname} = (void *)({src}); {t.ctype} {t.name} = ({t.ctype})spmcc_pin{t.any}({gname}); ")
            else:
                code = f"{t.ctype} {t.name} = ({t.ctype})spmcc_{t.mode}{t.any}({src}); "
            self.insert(at.extent.start.offset, code)
        for info in infos:
            for s in info.sites:
                if s.key in parts and parts[s.key] != "one":
                    if s is parts[s.key][2]:
                        self.part_two(s.key, *parts[s.key][1:])
                    continue
                if s.key in parts:      # `p[E]` -> `(*(T *)spmcc_p2s_part(p, &p[E], sizeof(T)))`
                    elt = self.decl_type(s.cur.type, s.cur)
                    fn = "spmcc_p2s_part" if s.written else "spmcc_p2s_part_ro"
                    self.insert(s.cur.extent.start.offset, f"(*({elt} *){fn}({s.key}, &", 1)
                    self.insert(s.cur.extent.end.offset, f", sizeof({elt})))", -1)
                    continue
                name = tr[s.key].name if s.key in tr else self.hoisted[s.key]
                self.site_edit(s, name, self.decl_type(s.cur.type, s.cur) if s.addr else "")
            self.emit_escapes(info)
            # free of a pinned object: unpin it first
            for key in info.frees:
                t = tr.get(key)
                if t is not None and t.mode == "pin" and infos.index(info) >= t.stmt:
                    self.insert(info.cur.extent.start.offset, f"spmcc_unpin{t.any}({t.name}g); ")
                    t.mode = "pin-freed"
        pins = [t for t in reversed(ordered) if t.mode == "pin"]
        last = infos[-1].cur
        unpin = "".join(f" spmcc_unpin{t.any}({t.name}g);" for t in pins)
        end = self.stmt_end(last)
        if last.kind.name == "RETURN_STMT" and pins:
            e = _kids(last)
            if e:
                rt = fn.result_type.spelling
                if "(" in rt or "[" in rt:
                    self.refuse(last, f"cannot hold a return value of type '{rt}'")
                self.insert(last.extent.start.offset, f"{{ {rt} spmcc_ret = (")
                # `return E` -> `{ T r = (E); unpin; return r; }`
                self.edits.append((last.extent.start.offset, e[0].extent.start.offset, "", 0))
                self.insert(e[0].extent.end.offset, f");{unpin} return spmcc_ret; }}")
                self.edits.append((e[0].extent.end.offset, end, "", 0))
            else:
                self.insert(last.extent.start.offset, "{" + unpin + " ")
                self.insert(end, " }")
        elif pins:
            self.insert(end, unpin)
        if wrap and (tr or pins):
            self.insert(first.extent.start.offset, "{ ", -1)
            self.insert(end, " }", 1)

    def _last_use(self, t, ordered, infos):
        """Where translation t's local address is last used in its region, as
        (statement, position): (i, inf) for an access in statement i (its
        sites, which the statement runs after every translation placed before
        it), (j, u.order - 0.5) for the translation of a pointer read through
        t (chain u, placed before statement j: t's local is read just before
        u's own call)."""
        inf = float("inf")
        if self.unsafe_first_use:
            return (t.stmt, inf)
        users = [u for u in ordered if self._reads_through(u, t)]
        last = (t.stmt, t.order) if users else (t.stmt, inf)
        for i, info in enumerate(infos):
            if any(x.key == t.key for x in info.sites):
                last = max(last, (i, inf))
        for u in users:
            last = max(last, (u.stmt, u.order - 0.5))
        return last

    def _reads_through(self, u, t):
        """True when translation u is of a pointer read through t's local
        address (u's chain starts at t's pointer)."""
        return u.key in self._chains and self._chains[u.key][0] == t.key

    def _needs_pin(self, t, ordered, infos):
        """Under the local-address rule a translation dies at the next call
        that may move data: a later translation of the region (placed before
        its statement, in order) or a statement that allocates or calls into
        the program.  t is a pin only when such a call comes before its last
        use (an access in the same statement as a move counts as after it:
        C leaves the order inside a statement open).  `a->x = 1; b->y = 2;`:
        a's local is dead when b is translated, so a is a p2s, not a pin."""
        inf = float("inf")
        last = self._last_use(t, ordered, infos)
        kills = [(u.stmt, u.order) for u in ordered if u.order > t.order]
        kills += [(i, inf) for i in range(t.stmt, len(infos)) if infos[i].moves and
                  not (last == (i, inf) and self._args_only(t.key, infos[i]))]
        return any(k <= last for k in kills)

    def _args_only(self, key, info):
        """True when every access through key in this statement lies in an
        argument of the statement's only call that may move data, that call
        is a direct call of the program's own function or an allocation
        (which are handed global addresses, so the local one is read while
        the arguments are evaluated, before the call), and no argument calls
        anything: `check(n->left, n, &n->key)` needs no pin of n.  Not for a
        C library call that calls back into the program (qsort): it uses the
        local address during the call."""
        if self.unsafe_first_use or len(info.move_calls) != 1:
            return False
        c = info.move_calls[0]
        callee = self.strip(_kids(c)[0]) if _kids(c) else None
        if callee is None or callee.kind.name != "DECL_REF_EXPR" or callee.referenced is None or \
                callee.referenced.kind.name != "FUNCTION_DECL":
            return False
        name = callee.spelling
        if not (name in self.user_fns or name in MOVING_ALLOC):
            return False
        args = _args(c)
        if any(self._has_call(a) for a in args):
            return False
        uses = [x for x in info.sites if x.key == key]
        if self.unsafe_args:
            return bool(uses)
        return bool(uses) and all(any(a.extent.start.offset <= x.cur.extent.start.offset and
                                      x.cur.extent.end.offset <= a.extent.end.offset for a in args) for x in uses)

    def part_sites(self, ordered, infos):
        """Element translations (partial transfers, docs/spm.md): a pointer
        variable whose accesses in this region are one statement's
        unconditional `p[E]` translates that element alone, where it is
        read or written: `(*(T *)spmcc_p2s_part(p, &p[E], sizeof(T)))`.  The
        runtime then fetches only the part of a large array that holds it
        (rbtree's key array) and answers like p2s otherwise.
        - The element's translation must move no translation still in use:
          every translation of the region made before it (ordered before it,
          or placed before its statement) is a pin.
        - Nothing in the statement may move data between the translation and
          the access, unless the access is an argument of the statement's only
          call that may move data and its other arguments call nothing (the
          arguments are evaluated before the call: `find(&t, keys[j])`).
        - `p[E1] = p[E2]` (a plain assignment statement, nothing else on the
          heap, nothing moving data): the right side is read into a variable
          first (`part2`), then the left side translated; C leaves the order
          of E1 and E2 open, so a correct program cannot tell.
        Returns {key: "one" | "two"}."""
        out = {}
        if self.no_pin:
            return out
        inner = {self._chains[u.key][0] for u in ordered if u.key in self._chains}
        for t in ordered:
            if t.any or t.key in self._chains or t.key in inner:
                continue
            sites = [(i, s) for i, info in enumerate(infos) for s in info.sites if s.key == t.key]
            if not sites or len(sites) > 2 or len({i for i, _ in sites}) != 1:
                continue
            i = sites[0][0]
            info = infos[i]
            ok = True
            for i2, s in sites:
                b = self.strip(_kids(s.cur)[0]) if s.cur.kind.name == "ARRAY_SUBSCRIPT_EXPR" else None
                if s.addr or s.conditional or b is None or self.strip(s.base).kind.name != "DECL_REF_EXPR" or \
                        self.text(s.base) != t.key or \
                        (b.extent.start.offset, b.extent.end.offset) != (s.base.extent.start.offset, s.base.extent.end.offset):
                    ok = False
                elt = s.cur.type.spelling
                if "(" in elt or "[" in elt or s.cur.type.get_canonical().kind.name in ("VOID", "INCOMPLETEARRAY"):
                    ok = False
            # translations placed before this statement that are not pins and
            # are still used in it or after it (the element's fetch moves data)
            for u in ordered:
                if u is not t and u.stmt <= i and u.mode != "pin" and self._last_use(u, ordered, infos) >= (i, -1):
                    ok = False
            if not ok:
                continue
            if len(sites) == 1:
                s = sites[0][1]
                if info.move_calls:
                    calls = info.move_calls
                    o = s.cur.extent.start.offset
                    if len(calls) != 1:
                        continue
                    args = _args(calls[0])
                    mine = [a for a in args if a.extent.start.offset <= o < a.extent.end.offset]
                    if len(mine) != 1 or any(self._has_call(a) for a in args if a is not mine[0]):
                        continue
                out[t.key] = "one"
                continue
            # p[E1] = p[E2]
            st = self.strip_paren(info.cur)
            if len(info.sites) != 2 or info.moves or info.releases or info.escapes or \
                    st.kind.name != "BINARY_OPERATOR" or self.binop(st) != "=":
                continue
            lhs, rhs = _kids(st)
            rhs = self.strip_paren(self.strip(rhs))
            s1 = [s for _, s in sites if s.cur.extent.start.offset == lhs.extent.start.offset and
                  s.cur.extent.end.offset == lhs.extent.end.offset]
            s2 = [s for _, s in sites if s.cur.extent.start.offset == rhs.extent.start.offset and
                  s.cur.extent.end.offset == rhs.extent.end.offset]
            if len(s1) != 1 or len(s2) != 1 or s1[0].cur.type.spelling != s2[0].cur.type.spelling:
                continue
            out[t.key] = ("two", st, s1[0], s2[0])
        return out

    def _has_call(self, c):
        if c.kind.name == "CALL_EXPR":
            return True
        return any(self._has_call(k) for k in c.get_children())

    def part_two(self, key, st, lhs, rhs):
        """`p[E1] = p[E2];` -> `{ T v = *(T *)p2s_part_ro(p, &p[E2], sizeof(T));
        *(T *)p2s_part(p, &p[E1], sizeof(T)) = v; }`."""
        elt = self.decl_type(lhs.cur.type, lhs.cur)
        self.counter += 1
        v = f"spmcc_v{self.counter}"
        i1 = self.text(_kids(lhs.cur)[1])
        i2 = self.text(_kids(rhs.cur)[1])
        self.insert(st.extent.start.offset,
                    f"{{ {elt} {v} = (*({elt} *)spmcc_p2s_part_ro({key}, &{key}[{i2}], sizeof({elt}))); ", 1)
        self.edits.append((st.extent.start.offset, st.extent.end.offset,
                           f"(*({elt} *)spmcc_p2s_part({key}, &{key}[{i1}], sizeof({elt}))) = {v}", 0))
        self.insert(self.stmt_end(st), " }", 0)

    def stmt_end(self, c):
        """Offset just past the statement's ';' (the extent of an expression
        statement stops before it)."""
        off = c.extent.end.offset
        if c.kind.name == "DECL_STMT" or c.kind.name == "NULL_STMT":
            return off
        n = len(self.src)
        j = off
        while j < n and self.src[j:j + 1] in (b" ", b"\t", b"\n", b"\r"):
            j += 1
        if j < n and self.src[j:j + 1] == b";":
            return j + 1
        return off

    # ---- driver --------------------------------------------------------------
    def rewrite(self):
        self.analyse()
        main_sig = None
        for c in self.tu.cursor.get_children():
            if not self.mine(c):
                continue
            if c.kind.name == "FUNCTION_DECL" and c.is_definition():
                body = [x for x in _kids(c) if x.kind.name == "COMPOUND_STMT"][0]
                self.compound(_kids(body), c)
                if c.spelling == "main":
                    name_tok = [t for t in c.get_tokens() if t.spelling == "main"][0]
                    self.edits.append((name_tok.extent.start.offset, name_tok.extent.end.offset, "spmcc_user_main", 0))
                    main_sig = len(list(c.get_arguments()))
        return self.apply(main_sig)

    def apply(self, main_sig):
        seen, edits = set(), []
        for seq, (st, en, text, prio) in enumerate(self.edits):
            if st != en:
                if (st, en) in seen:
                    continue          # the same replacement found twice
                seen.add((st, en))
            # the ends of loops hoisted into (prio 3) at one offset: nested
            # loops without braces end together, and the inner loop's block
            # (rewritten after the outer one's) must close first
            edits.append((st, en, prio, -seq if prio == 3 and st == en else seq, text, seq))
        edits.sort()
        # blocks closing at one offset: innermost (latest opener) first, in
        # the slots the closers took (the other edits there keep their place)
        i = 0
        while i < len(edits):
            j = i
            while j < len(edits) and edits[j][0] == edits[i][0] and edits[j][1] == edits[i][0]:
                j += 1
            slots = [k for k in range(i, j) if edits[k][5] in self.closers]
            if len(slots) > 1:
                ordered = sorted((edits[k] for k in slots), key=lambda e: self.closers[e[5]], reverse=True)
                for k, e in zip(slots, ordered):
                    edits[k] = e
            i = max(j, i + 1)
        out, pos = [], 0
        for st, en, _prio, _seq, text, _ix in edits:
            if st < pos:
                raise Refusal(self.tu.get_location(self.path, st), "internal: overlapping rewrites")
            out.append(self.src[pos:st].decode())
            out.append(text)
            pos = en
        out.append(self.src[pos:].decode())
        head = ("/* Written by dmm-spmcc (tools/spmcc) from " + os.path.basename(self.shown) +
                ": every pointer holds a global address of the scratchpad heap;\n"
                " * translations (p2s/pin) per access region, docs/spm.md \"The compiler pass\". */\n"
                "#include \"spmcc_rt.h\"\n")
        tail = ""
        if main_sig is not None:
            call = "spmcc_user_main(argc, argv)" if main_sig >= 2 else "spmcc_user_main()"
            tail = ("\nstatic int spmcc_main_shim(int argc, char **argv) { (void)argc; (void)argv; return "
                    + call + "; }\nint main(int argc, char **argv) { return spmcc_run(argc, argv, spmcc_main_shim); }\n")
        return head + "".join(out) + tail


def _is_fnptr(t):
    t = t.get_canonical()
    return t.kind.name == "POINTER" and t.get_pointee().kind.name in ("FUNCTIONPROTO", "FUNCTIONNOPROTO")


def _unqual(t):
    """A type's canonical spelling without qualifiers: `const T *const` and
    `T *` name the same pointer location (a comparator's casts)."""
    words = t.get_canonical().spelling.replace("*", " * ").split()
    return " ".join(w for w in words if w not in ("const", "volatile", "restrict")).replace(" *", "*")


def _field_dep(d):
    return d == "F*" or (isinstance(d, tuple) and d and d[0] == "F")


def _kids(c):
    return list(c.get_children())


def _first_run(stmts):
    """The statements before the first control statement (a body's first
    run, which the lead rules serve)."""
    run = []
    for st in stmts:
        if st.kind.name in CONTROL_KINDS:
            break
        run.append(st)
    return run


def _args(c):
    return list(c.get_arguments())


def resource_include():
    """The compiler's own headers (stddef.h, ...): Debian's libclang finds its
    resource directory itself; asked of clang when it is on PATH anyway."""
    cc = shutil.which("clang") or shutil.which("clang-14")
    if not cc:
        return []
    try:
        d = subprocess.run([cc, "-print-resource-dir"], capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return []
    inc = os.path.join(d, "include")
    return ["-isystem", inc] if os.path.isdir(inc) else []


def main(argv=None):
    ap = argparse.ArgumentParser(prog="dmm-spmcc", description="Rewrite a C file for the scratchpad heap "
                                 "(p2s/s2p/pin inserted per access region, malloc/free to dmm_spm_*).")
    ap.add_argument("file", nargs="?")
    ap.add_argument("-o", "--output", help="output file (default: standard output)")
    ap.add_argument("-I", dest="incs", action="append", default=[], metavar="DIR")
    ap.add_argument("-D", dest="defs", action="append", default=[], metavar="NAME[=V]")
    ap.add_argument("--std", default="c11")
    ap.add_argument("--alloc", action="append", default=[], metavar="NAME=malloc|calloc|realloc|free",
                    help="treat calls to NAME (a wrapper defined in a header) as the C library's function")
    ap.add_argument("--unsafe-no-pin", action="store_true", help=argparse.SUPPRESS)  # tests: breaks the rule
    ap.add_argument("--unsafe-no-drop", action="store_true", help=argparse.SUPPRESS)  # tests: no guard stack
    ap.add_argument("--no-object-stores", action="store_true", help=argparse.SUPPRESS)  # tests: the rules before
    ap.add_argument("--unsafe-any-store", action="store_true", help=argparse.SUPPRESS)  # tests: breaks it
    ap.add_argument("--no-if-tail", action="store_true", help=argparse.SUPPRESS)  # tests: the rule before
    ap.add_argument("--unsafe-tail", action="store_true", help=argparse.SUPPRESS)  # tests: breaks the rule
    ap.add_argument("--unsafe-first-use", action="store_true", help=argparse.SUPPRESS)  # tests: breaks pins
    ap.add_argument("--unsafe-args", action="store_true", help=argparse.SUPPRESS)  # tests: breaks pins
    ap.add_argument("--unsafe-lead", action="store_true", help=argparse.SUPPRESS)  # tests: breaks cond_lead
    ap.add_argument("--no-stream", action="store_true", help=argparse.SUPPRESS)  # tests: the rule before
    ap.add_argument("--check-libclang", action="store_true", help="only check that libclang can be loaded")
    a = ap.parse_args(argv)
    ci = load_cindex()
    if a.check_libclang:
        ci.Index.create()
        print("dmm-spmcc: libclang loads")
        return 0
    if not a.file:
        ap.error("a C file to rewrite is required")
    # libclang answers a file it cannot read, or one that is not text, with a
    # bare load error and no diagnostic: say which, in one line, first.
    try:
        with open(a.file, "rb") as f:
            head = f.read(65536)
    except OSError as e:
        print(f"dmm-spmcc: {a.file}: cannot read: {e.strerror}", file=sys.stderr)
        return 2
    if b"\0" in head:
        print(f"dmm-spmcc: {a.file}: not a C source file (it holds NUL bytes)", file=sys.stderr)
        return 2
    args = [f"-std={a.std}"] + [f"-I{d}" for d in a.incs] + [f"-D{d}" for d in a.defs] + resource_include()
    try:
        aliases = {}
        for x in a.alloc:
            name, _, what = x.partition("=")
            if what not in ALLOC or not name:
                ap.error(f"--alloc {x}: expected NAME=malloc|calloc|realloc|free")
            aliases[name] = what
        p = Pass(ci, a.file, args, no_pin=a.unsafe_no_pin, aliases=aliases,
                     no_drop=a.unsafe_no_drop, no_alias=a.no_object_stores,
                 any_store=a.unsafe_any_store, no_tail=a.no_if_tail,
                 unsafe_tail=a.unsafe_tail, unsafe_first_use=a.unsafe_first_use,
                 unsafe_args=a.unsafe_args, unsafe_lead=a.unsafe_lead,
                 no_stream=a.no_stream)
        text = p.rewrite()
    except ci.TranslationUnitLoadError:
        print(f"dmm-spmcc: {a.file}: libclang could not parse it (not C source?)", file=sys.stderr)
        return 2
    except Refusal as r:
        loc = r.loc.location if hasattr(r.loc, "location") else r.loc
        name = a.file if (loc.file is None or os.path.abspath(loc.file.name) == os.path.abspath(a.file)) \
            else loc.file.name
        print(f"{name}:{loc.line}: dmm-spmcc refuses: {r.why}", file=sys.stderr)
        return 1
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
