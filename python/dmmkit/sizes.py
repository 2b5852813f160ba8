"""The front end's one size parser: "65536", "64k", "1m", "2G", "64KiB",
"1mb" -- the grammar of the native tools' option parser
(dmm_parse_size in src/core/text.c, declared in dmm/common.h): decimal digits, then optionally
k, m or g (any case; powers of 1024), optionally followed by "i" and then
"b".  No sign, no spaces, no fractions; the value fits in 64 bits."""

from __future__ import annotations

import re

from .errors import BAD_INPUT, DmmkitError

_SIZE = re.compile(r"(\d+)(?:([kKmMgG])[iI]?[bB]?)?")
_SHIFT = {"": 0, "k": 10, "m": 20, "g": 30}
MAX = (1 << 64) - 1
EXAMPLES = "e.g. 65536, 64k, 1m"


def parse_size(text: str | int, what: str = "size", positive: bool = True) -> int:
    """The byte count text means; DmmkitError "<what>: ..." when it is not a
    size (or not positive, when positive is set).  An int passes through the
    same range checks."""
    if isinstance(text, bool):
        raise DmmkitError(f"{what}: {text!r} is not a size ({EXAMPLES})", BAD_INPUT)
    if isinstance(text, int):
        n = text
    else:
        m = _SIZE.fullmatch(str(text))
        if not m:
            raise DmmkitError(f"{what}: {str(text)!r} is not a size ({EXAMPLES})", BAD_INPUT)
        n = int(m.group(1)) << _SHIFT[(m.group(2) or "").lower()]
    if n > MAX or n < 0:
        raise DmmkitError(f"{what}: {text} is out of range (at most {MAX} bytes)", BAD_INPUT)
    if positive and n == 0:
        raise DmmkitError(f"{what}: must be positive", BAD_INPUT)
    return n
