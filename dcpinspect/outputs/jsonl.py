"""JSON Lines: records (each family's, as its records make them) written one compact
ASCII object a line, as ``json.dumps`` writes them, at orjson's speed where it is the same."""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 1

# json.dumps(record, ensure_ascii=True, separators=(",", ":"), default=str) with the C encoder
# made once, not per call (records are trees of dicts, lists and scalars: no cycles to check)
_ENCODE = json.encoder.c_make_encoder(
    None, str, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, True
) if json.encoder.c_make_encoder is not None else None

# orjson writes the same bytes about four times faster, except where it differs from the
# line above, and then the line above is used: non-ASCII text and DEL (written raw),
# floats outside [1e-4, 1e16) (other exponent and fixed forms), NaN and infinities (null,
# told from None by a walk of the record only where a line has null),
# and whatever orjson refuses (integers over 64 bits, non-string keys, and, by the
# pass-through options, subclasses, dataclasses and dates, which ``default=str`` prints).
# It is imported (by :func:`load_orjson`) once a run has written STDLIB_LINES lines: the
# import (uuid, platform, datetime and zoneinfo come with it) costs about what the line
# above spends on that many, which a small file's run never writes.
orjson: Any = None
#: lines written by the standard library's encoder before orjson is imported
STDLIB_LINES = 500
_lines, _tried = 0, False


def load_orjson() -> bool:
    """Import orjson, an optional speed-up, unless it was tried: whether it is there."""
    global orjson, _ORJSON_OPTS, _EXPONENT, _ANY_EXPONENT, _lines, _tried
    if not _tried:
        _lines, _tried = STDLIB_LINES, True
        try:
            import orjson as module
        except ImportError:
            return False
        _ORJSON_OPTS = (module.OPT_PASSTHROUGH_SUBCLASS | module.OPT_PASSTHROUGH_DATACLASS
                        | module.OPT_PASSTHROUGH_DATETIME)
        _EXPONENT = re.compile(rb"e-?[0-9]+[,}\]]").search  # a float token in orjson's exponent form
        _ANY_EXPONENT = re.compile(rb"[0-9]e-?[0-9]").search  # the same, wherever it ends (indented text)
        orjson = module
    return orjson is not None


def _stdlib(record: dict[str, Any]) -> str:
    if _ENCODE is None:
        return json.dumps(record, ensure_ascii=True, separators=(",", ":"), default=str)
    return "".join(_ENCODE(record, 0))


def dumps(record: dict[str, Any]) -> str:
    """One compact JSON line, ASCII only (``\\uXXXX`` escapes), as ``json.dumps`` writes it."""
    return dumps_line(record)[:-1].decode("ascii")


def dumps_line(record: dict[str, Any], floats: bool = True) -> bytes:
    """:func:`dumps` as ASCII bytes, newline included: what jsonl output writes.
    ``floats`` False: the caller knows that ``record`` holds no float, so that orjson's
    ``null`` and digits are the same as ``json.dumps``'s and only its raw non-ASCII text
    differs."""
    global _lines
    if orjson is None and _lines < STDLIB_LINES:
        _lines += 1
    elif orjson is not None or load_orjson():
        try:
            out = orjson.dumps(record, option=_ORJSON_OPTS | orjson.OPT_APPEND_NEWLINE)
        except TypeError:
            return (_stdlib(record) + "\n").encode("ascii")
        # a null token is None (and json.dumps's too) where no float is NaN or infinite: then
        # one pass tells the rest (a finding's line has nulls: it was two passes)
        if ((out.isascii() and b"\x7f" not in out) if not floats
                else (_finite(record) and _plain(out, True)) if b"null" in out else _plain(out)):
            return out
    return (_stdlib(record) + "\n").encode("ascii")


def finite(obj: Any) -> bool:
    """No float in ``obj`` is NaN or infinite: its ``null`` tokens are None, as ``json.dumps``
    writes them too (orjson writes the non-finite floats as null; a finding's row has
    several None, and its line was written twice without this test)."""
    todo = [obj]
    pop, many = todo.pop, todo.extend
    while todo:
        o = pop()
        t = type(o)
        if t is dict:
            many(o.values())
        elif t is list or t is tuple:
            many(o)
        elif t is float and o - o != 0.0:
            return False
    return True


def indented_json(obj: Any) -> str | None:
    """``json.dumps(obj, indent=2, default=str)``'s text, at orjson's speed (the standard
    library's indented encoder is pure Python); None where orjson would write other bytes
    (see above), but for NaN and the infinities, which it writes as null (valid JSON, where
    ``json.dumps`` writes ``NaN``)."""
    if not load_orjson():
        return None
    try:
        out = orjson.dumps(obj, default=str, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return None
    return out.decode("ascii") if _written_alike(out, _ANY_EXPONENT) else None


def plain_orjson(out: bytes, nulls: bool = False) -> bool:
    """Whether ``json.dumps`` writes what orjson wrote in ``out``: see above for the cases
    (``nulls``: its null tokens are known to be None, :func:`finite`)."""
    return (nulls or b"null" not in out) and _written_alike(out, _EXPONENT)


def _written_alike(out: bytes, exponent) -> bool:
    """No text or number orjson writes its own way (``exponent``: the search for a float
    in exponent form, as the layout ends its tokens)."""
    return out.isascii() and b"0.0000" not in out and b"\x7f" not in out and exponent(out) is None


try:  # the same tests in C, when it is built
    from ._jsonline import finite as _finite, plain_json as _plain
except ImportError:
    _plain, _finite = plain_orjson, finite
