"""The one loader and checker of the JSON documents the front end reads.

A document is checked against a *shape* (see dmmkit.schemas): its `schema`
field (name and version) and the type of every field the readers use.  The
first problem found becomes one DmmkitError, "<where>: <what is wrong>", so a
damaged or foreign file is one sentence, never a traceback; a reader that
got its document through `load_document` or `check_document` may index it
without further checks.

Shapes are small objects with a `check(value, path)` method:

  Int, Num, Str, Bool       a JSON integer / number / string / boolean
  Any()                     any JSON value (figures a reader only displays)
  Enum(a, b, ...)           one of these strings
  Opt(s)                    null or s
  Arr(s, min_len=0)         an array whose items are s
  Tup(s1, s2, ..., min_len) a fixed-form array (e.g. [lo, width, count])
  Map(s)                    an object with any keys, every value s
  Obj(required, optional)   an object with these keys (others are ignored)
  Doc(schema, s)            a nested document: its `schema` field, if any,
                            must name `schema`; then s
  Check(s, fn)              s, then fn(value) -> None or a problem
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

from .errors import BAD_INPUT, DmmkitError

INT_MIN, INT_MAX = -(1 << 63), (1 << 64) - 1  # the range the native tools write


class Invalid(Exception):
    """One problem at one place of a document."""

    def __init__(self, path: str, problem: str):
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path = path
        self.problem = problem


def _found(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a number"
    if isinstance(v, str):
        s = v if len(v) <= 24 else v[:21] + "..."
        return f"the string {json.dumps(s)}"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def _join(path: str, key) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


class Shape:
    what = "a value"

    def check(self, v, path: str) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def fail(self, v, path: str):
        raise Invalid(path, f"expected {self.what}, found {_found(v)}")


class _Int(Shape):
    what = "an integer"

    def __init__(self, lo: int = INT_MIN, hi: int = INT_MAX):
        self.lo, self.hi = lo, hi

    def __call__(self, lo: int = INT_MIN, hi: int = INT_MAX) -> "_Int":
        return _Int(lo, hi)

    def check(self, v, path):
        if isinstance(v, bool) or not isinstance(v, int):
            # 3.0 is an integer written as a number by some JSON writers
            if isinstance(v, float) and math.isfinite(v) and v.is_integer():
                v = int(v)
            else:
                self.fail(v, path)
        if not self.lo <= v <= self.hi:
            raise Invalid(path, f"{v} is out of range ({self.lo}..{self.hi})")


class _Num(Shape):
    what = "a number"

    def __init__(self, lo: float | None = None):
        self.lo = lo

    def __call__(self, lo: float | None = None) -> "_Num":
        return _Num(lo)

    def check(self, v, path):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.fail(v, path)
        if isinstance(v, float) and not math.isfinite(v):
            raise Invalid(path, f"{v} is not a finite number")
        if isinstance(v, int) and not INT_MIN <= v <= INT_MAX:
            raise Invalid(path, "the number is out of range")
        if self.lo is not None and v < self.lo:
            raise Invalid(path, f"{v} is below {self.lo}")


class _Str(Shape):
    what = "a string"

    def check(self, v, path):
        if not isinstance(v, str):
            self.fail(v, path)


class _Bool(Shape):
    what = "true or false"

    def check(self, v, path):
        if not isinstance(v, bool):
            self.fail(v, path)


Int, Num, Str, Bool = _Int(), _Num(), _Str(), _Bool()


class Any(Shape):
    what = "any JSON value"

    def check(self, v, path):
        if isinstance(v, float) and not math.isfinite(v):
            raise Invalid(path, f"{v} is not a finite number")


class Enum(Shape):
    def __init__(self, *values: str):
        self.values = values
        self.what = "one of " + ", ".join(json.dumps(x) for x in values)

    def check(self, v, path):
        if v not in self.values or not isinstance(v, str):
            self.fail(v, path)


class Opt(Shape):
    def __init__(self, inner: Shape):
        self.inner = inner
        self.what = f"{inner.what} or null"

    def check(self, v, path):
        if v is None:
            return
        try:
            self.inner.check(v, path)
        except Invalid as e:
            if e.path == path and e.problem.startswith("expected "):
                self.fail(v, path)  # say "or null" too
            raise


class Arr(Shape):
    def __init__(self, item: Shape, min_len: int = 0):
        self.item, self.min_len = item, min_len
        self.what = "an array"

    def check(self, v, path):
        if not isinstance(v, list):
            self.fail(v, path)
        if len(v) < self.min_len:
            raise Invalid(path, f"expected at least {self.min_len} item(s), found {len(v)}")
        for i, x in enumerate(v):
            self.item.check(x, _join(path, i))


class Tup(Shape):
    """[s1, s2, ...]: at least min_len items (default: all), no more than the
    shapes given."""

    def __init__(self, *items: Shape, min_len: int | None = None):
        self.items = items
        self.min_len = len(items) if min_len is None else min_len
        n = f"{self.min_len}" if self.min_len == len(items) else f"{self.min_len} to {len(items)}"
        self.what = f"an array of {n} items"

    def check(self, v, path):
        if not isinstance(v, list) or not self.min_len <= len(v) <= len(self.items):
            if isinstance(v, list):
                raise Invalid(path, f"expected {self.what}, found {len(v)}")
            self.fail(v, path)
        for i, (s, x) in enumerate(zip(self.items, v)):
            s.check(x, _join(path, i))


class Map(Shape):
    def __init__(self, value: Shape):
        self.value = value
        self.what = "an object"

    def check(self, v, path):
        if not isinstance(v, dict):
            self.fail(v, path)
        for k, x in v.items():
            self.value.check(x, _join(path, k))


class Obj(Shape):
    def __init__(self, required: dict | None = None, optional: dict | None = None, what: str = "an object"):
        self.required = required or {}
        self.optional = optional or {}
        self.what = what

    def check(self, v, path):
        if not isinstance(v, dict):
            self.fail(v, path)
        for k, s in self.required.items():
            if k not in v:
                raise Invalid(path, f"the field \"{k}\" is missing")
            s.check(v[k], _join(path, k))
        for k, s in self.optional.items():
            if k in v:
                s.check(v[k], _join(path, k))


class Check(Shape):
    """inner, then a test of the whole value: fn(value) returns None or a
    (relative path, problem) pair."""

    def __init__(self, inner: Shape, fn):
        self.inner, self.fn = inner, fn
        self.what = inner.what

    def check(self, v, path):
        self.inner.check(v, path)
        bad = self.fn(v)
        if bad:
            sub, problem = bad
            raise Invalid(_join(path, sub) if sub else path, problem)


@dataclass(frozen=True)
class Schema:
    """A document kind: the `schema` field is "<name>/<version>"."""

    name: str
    version: int
    title: str  # what it is, for messages ("dmmkit explore results")

    @property
    def id(self) -> str:
        return f"{self.name}/{self.version}"


def schema_problem(doc, kinds: tuple[Schema, ...]) -> str | None:
    """Why doc is not one of kinds (by its `schema` field), or None."""
    want = " or ".join(f"{k.title} (schema {k.id})" for k in kinds)
    if not isinstance(doc, dict):
        return f"expected a JSON object holding {want}, found {_found(doc)}"
    if "schema" not in doc:
        return f"no \"schema\" field: not {want}"
    s = doc["schema"]
    if not isinstance(s, str):
        return f"the \"schema\" field is {_found(s)}, not a name/version string: not {want}"
    name, _, ver = s.rpartition("/")
    for k in kinds:
        if s == k.id:
            return None
    for k in kinds:
        if name == k.name:
            return (f"schema {s}: this dmmkit reads version {k.version} of {k.title} ({k.id}), "
                    f"not version {ver or '(none)'}")
    return f"schema {json.dumps(s)} is not {want}"


class Doc(Shape):
    """A document nested in another (a timeline inside compare results): its
    schema field, when present, must name this kind."""

    def __init__(self, kind: Schema, shape: Shape):
        self.kind, self.shape = kind, shape
        self.what = f"{kind.title} ({kind.id})"

    def check(self, v, path):
        if isinstance(v, dict) and "schema" in v:
            bad = schema_problem(v, (self.kind,))
            if bad:
                raise Invalid(path, bad)
        self.shape.check(v, path)


def check_document(doc, kinds, where: str, status: int = BAD_INPUT) -> Schema:
    """Checks a parsed document: its schema is one of kinds (Schema or a
    sequence of Schema, each with a shape in dmmkit.schemas.SHAPES) and it
    has that kind's shape.  Returns the kind; raises DmmkitError
    "<where>: <what is wrong>"."""
    from .schemas import SHAPES
    if isinstance(kinds, Schema):
        kinds = (kinds,)
    kinds = tuple(kinds)
    bad = schema_problem(doc, kinds)
    if bad:
        raise DmmkitError(f"{where}: {bad}", status)
    kind = next(k for k in kinds if doc["schema"] == k.id)
    try:
        SHAPES[kind].check(doc, "")
    except Invalid as e:
        raise DmmkitError(f"{where}: not valid {kind.title}: {e}", status) from None
    return kind


def parse_json_text(data: bytes, where: str, status: int = BAD_INPUT):
    """The JSON value in data; DmmkitError on anything that is not JSON."""
    if not data.strip():
        raise DmmkitError(f"{where}: the file is empty", status)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise DmmkitError(f"{where}: not a text file (not UTF-8), so not a JSON document", status) from None

    def no_constant(name):
        raise ValueError(f"{name} is not a JSON value")

    try:
        return json.loads(text, parse_constant=no_constant)
    except json.JSONDecodeError as e:
        cut = "truncated" if e.pos >= len(text.rstrip()) else "damaged"
        raise DmmkitError(f"{where}: not valid JSON ({cut}: {e.msg} at line {e.lineno} column {e.colno})",
                          status) from None
    except ValueError as e:
        raise DmmkitError(f"{where}: not valid JSON ({e})", status) from None
    except RecursionError:
        raise DmmkitError(f"{where}: not usable JSON (nested too deeply)", status) from None


def read_json_file(path: str | os.PathLike, what: str = "results file", status: int = BAD_INPUT,
                   where: str | None = None):
    """The parsed JSON of a file, or one DmmkitError naming the file
    ("<what> <path>: ...", or "<where>: ..." when where is given)."""
    where = where or (f"{what} {path}" if what else str(path))
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise DmmkitError(f"{where}: no such file", status) from None
    except IsADirectoryError:
        raise DmmkitError(f"{where}: is a directory, not a file", status) from None
    except PermissionError:
        raise DmmkitError(f"{where}: not readable (permission denied)", status) from None
    except OSError as e:
        raise DmmkitError(f"{where}: cannot be read ({e.strerror or e})", status) from None
    return parse_json_text(data, where, status)


def load_document(path: str | os.PathLike, kinds, what: str = "results file",
                  status: int = BAD_INPUT, where: str | None = None) -> tuple[Schema, dict]:
    """Reads, parses and checks one document: (its kind, the document)."""
    where = where or (f"{what} {path}" if what else str(path))
    doc = read_json_file(path, what, status, where)
    kind = check_document(doc, kinds, where, status)
    return kind, doc
