"""JSON from packet bytes: one strict parser with a cap on how deep a document may nest.

Every value the decoders parse as JSON (stream request filters, xattr values, documents
flagged JSON, error bodies, DCP_OPEN values, ...) comes here. Python's JSON scanner
recurses once per nesting level, so a value of a few thousand ``[`` would raise
``RecursionError`` out of the decoder. Before the scanner runs, a linear pre-scan counts
how deep the brackets outside strings go; a document deeper than :data:`MAX_JSON_DEPTH`
is not parsed at all and is reported as too deep (rule ``json-too-deep``), whatever else
is wrong with it.

Strict means RFC 8259: UTF-8 text, no ``NaN``/``Infinity``, nothing but white space
after the value.
"""

from __future__ import annotations

import json
import sys
from itertools import accumulate, count
from operator import sub

from .....limits import JSON_DEPTH, LimitError
from .errors import CodecError

#: How deep a document may nest (arrays and objects) before it is reported, not parsed.
MAX_JSON_DEPTH_DEFAULT = JSON_DEPTH.default
#: The environment variable that raises (or lowers) the cap, up to :data:`MAX_JSON_DEPTH_LIMIT`.
MAX_JSON_DEPTH_ENV = JSON_DEPTH.env
#: The highest cap the variable may set: the parser and the JSON Lines writer recurse once a
#: level on the C stack, and ten thousand levels stay well inside a thread's stack.
MAX_JSON_DEPTH_LIMIT = JSON_DEPTH.most


def _configured_depth() -> int:
    try:
        return JSON_DEPTH.value()
    except LimitError:  # the command line says so before any decoding (limits.check_environment)
        return MAX_JSON_DEPTH_DEFAULT


#: The cap in force: :data:`MAX_JSON_DEPTH_DEFAULT` unless the environment says otherwise.
MAX_JSON_DEPTH = _configured_depth()

# Parsing (and later writing) a document MAX_JSON_DEPTH deep takes that many recursion
# levels above whatever the caller already uses.
_HEADROOM = 500
if sys.getrecursionlimit() < MAX_JSON_DEPTH + _HEADROOM:
    sys.setrecursionlimit(MAX_JSON_DEPTH + _HEADROOM)

OK, INVALID, TOO_DEEP = "ok", "json-invalid", "json-too-deep"


class JsonInvalid(CodecError):
    """The bytes are not one strict JSON document."""


class JsonTooDeep(CodecError):
    """The document nests deeper than the cap; it was not parsed."""


def too_deep_message(what: str, cap: int | None = None) -> str:
    """The words of a ``json-too-deep`` finding, naming the cap and how to raise it."""
    cap = MAX_JSON_DEPTH if cap is None else cap
    return f"{what} nests deeper than {cap} levels (the cap; {MAX_JSON_DEPTH_ENV} raises it): not parsed"


_BRACKETS = bytes.maketrans(b"[{]}", b"(())")
_OTHERS = bytes(set(range(256)) - set(b'[]{}"'))


def _brackets(text: str) -> bytes:
    """The brackets of ``text`` outside strings, as ``(`` and ``)``, in passes of C: the
    escaped backslashes dropped, then the escaped quotes, then all but brackets and quotes,
    then the strings (every other piece between quotes). After a quote left open everything
    is string, to this as to the parser."""
    raw = text.encode("utf-8", "surrogatepass")
    if b"\\" in raw:
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    raw = raw.translate(None, _OTHERS)
    if b'"' in raw:
        raw = raw.replace(b'""', b"")  # the strings that hold no bracket, in one pass
        if b'"' in raw:
            raw = b"".join(raw.split(b'"')[::2])
    return raw.translate(_BRACKETS)


def _depth(brackets: bytes) -> int:
    # "((" ")" "(" ")" ...: after the i-th run of openings, i closings have been seen
    runs = brackets.split(b")")
    return max(0, max(map(sub, accumulate(map(len, runs)), count())))


def nesting_depth(text: str) -> int:
    """How deep the arrays and objects of ``text`` nest, counting brackets outside strings.

    Linear in the length of ``text``, with no recursion and no Python-level step per
    character. Exact for valid JSON; for other text, exact up to where the parser would stop.
    """
    if "[" not in text and "{" not in text:
        return 0
    return _depth(_brackets(text))


_ROUNDS = 2  # of dropping empty pairs before counting


def exceeds(text: str, cap: int | None = None) -> bool:
    """Whether ``text`` nests deeper than ``cap`` (by default :data:`MAX_JSON_DEPTH`)."""
    cap = MAX_JSON_DEPTH if cap is None else cap
    if len(text) <= cap or text.count("[") + text.count("{") <= cap:
        return False  # it cannot nest deeper than it has brackets
    brackets = _brackets(text)
    # Dropping every "()" (innermost empty pairs) lowers the depth by one at most and leaves
    # far fewer runs to count in documents that are arrays of small objects.
    shrunk = brackets
    for _ in range(_ROUNDS):
        shrunk = shrunk.replace(b"()", b"")
    low = _depth(shrunk)
    if low > cap or low + _ROUNDS <= cap:
        return low > cap
    return _depth(brackets) > cap


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_SCAN = _DECODER.scan_once  # what .decode() ends in
_SPACE = " \t\n\r"
_SPACE_CHARS = frozenset(_SPACE)


def _scan(text: str):
    """``(document, True)`` or ``(error text, False)``: the strict parse of capped text."""
    start = len(text) - len(text.lstrip(_SPACE)) if text[:1] in _SPACE_CHARS else 0
    try:
        doc, end = _SCAN(text, start)
    except StopIteration as exc:
        return f"expecting a value at {exc.value}", False
    except RecursionError:  # the caller's stack was already deep: the cap did not leave room
        return None, None
    except ValueError as exc:
        return str(exc), False
    if end != len(text) and text[end:].strip(_SPACE):
        return f"extra data at {end}", False
    return doc, True


def verdict(text: str, cap: int | None = None) -> str:
    """:data:`OK`, :data:`INVALID` or :data:`TOO_DEEP` for text decoded from UTF-8."""
    if exceeds(text, cap):
        return TOO_DEEP
    _, ok = _scan(text)
    return OK if ok else (TOO_DEEP if ok is None else INVALID)


def ok(text: str) -> bool:
    """Whether :func:`verdict` is :data:`OK`: the same answer, made for the decoders' hot
    path (every document flagged JSON), without building an error text."""
    if len(text) > MAX_JSON_DEPTH and exceeds(text):  # no deeper than it is long
        return False
    start = len(text) - len(text.lstrip(_SPACE)) if text[:1] in _SPACE_CHARS else 0
    try:
        _, end = _SCAN(text, start)
    except (StopIteration, ValueError, RecursionError):
        return False
    return end == len(text) or not text[end:].strip(_SPACE)


def verdict_bytes(raw: bytes | memoryview, cap: int | None = None) -> str:
    """:func:`verdict` of bytes: text that is not UTF-8 is :data:`INVALID`."""
    try:
        text = bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return INVALID
    return verdict(text, cap)


def loads(data: bytes | memoryview | str, cap: int | None = None, what: str = "JSON value"):
    """The document in ``data``, strictly parsed.

    Raises :class:`JsonTooDeep` when it nests deeper than the cap (checked before parsing),
    :class:`JsonInvalid` when it is not JSON; both are :class:`CodecError`.
    """
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonInvalid(f"{what} is not valid JSON: not UTF-8 ({exc.reason} at {exc.start})") from None
    if exceeds(text, cap):
        raise JsonTooDeep(too_deep_message(what, cap))
    doc, ok = _scan(text)
    if ok is None:
        raise JsonTooDeep(too_deep_message(what, cap))
    if not ok:
        raise JsonInvalid(f"{what} is not valid JSON: {doc}")
    return doc
