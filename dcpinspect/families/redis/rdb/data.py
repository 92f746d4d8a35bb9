"""The data of RDB keys as JSON (``rdb --values``): one stable shape per type, binary-safe.

A byte string that is valid UTF-8 is a JSON string; any other is ``{"base64": "..."}``
(never an escaped text, which could not be told from a string that holds a backslash).
A score is a string, written as Redis writes a double (:func:`redis_double`: ``"1.5"``,
``"inf"``, ``"-inf"``, ``"3"``), exact. The shapes, by type (docs/rdb.md):

- string: the string;
- list, set: the elements, in the file's order;
- zset: ``[member, score]`` pairs, in the file's order;
- hash: ``[field, value]`` pairs; a hash whose encoding carries field expiry (listpackex,
  a hashtable with metadata, Valkey's HASH_2, Dragonfly's HASH_WITH_EXPIRY):
  ``[field, value, expire_ms or null]``; a hash of a template: the template's field name,
  null when no template defines it;
- stream: ``{"entries": [[id, [[field, value], ...]], ...], "length", "last_id",
  "first_id", "max_deleted_id", "entries_added", "groups": [{"name", "last_delivered_id",
  "entries_read" (null: not known), "pending": [{"id", "consumer", "delivery_time",
  "delivery_count"}],
  "consumers": [{"name", "seen_time", "active_time", "pending": [id, ...]}]}]}``, ids as
  Redis prints them (``"1700000000000-0"``), fields absent that the file's version lacks;
- module: ``{"module": name, "encver": n, "values": [...]}``, the opcode-tagged values of
  its serialisation as they are (at most 1,024);
- Dragonfly: SET_WITH_EXPIRY ``[member, expire_ms or null]``; TopK ``{"filter": {...},
  "heap": [[item, count], ...]}``; the other filters ``{"filter": {...}}`` (their bits are
  not kept).

Functions (FUNCTION2 records) are ``{"kind": "function", "code"}`` objects.
"""

from __future__ import annotations

import base64
import math

from .native import C
from .records import KeyRecord, OpRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROTOCOL = "rdb"


def text(raw: bytes | None):
    """A byte string as JSON: a string when it is valid UTF-8, else ``{"base64": ...}``."""
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode("ascii")}


def _item(v):
    if isinstance(v, (bytes, bytearray)):
        return text(bytes(v))
    if isinstance(v, float):
        return redis_double(v)
    return v


#: LLONG_MAX / 2 as a double, the bound of ``double2ll``
_LL_HALF = float(9223372036854775807 // 2)


def redis_double(d: float) -> str:
    """A double as Redis 7.2 and later write it (``d2string``: ``nan``, ``inf``, ``-inf``,
    ``-0``, an integer when it is one below 2^62, else ``fpconv_dtoa``'s shortest digits
    that read back to the same double, in its layout: plain up to 7 zeros, else ``1.5e+20``)."""
    if d != d:
        return "nan"
    if math.isinf(d):
        return "inf" if d > 0 else "-inf"
    if d == 0:
        return "-0" if math.copysign(1.0, d) < 0 else "0"
    if -_LL_HALF <= d <= _LL_HALF and d == int(d):
        return str(int(d))
    r = repr(d)  # the shortest digits; laid out alike while no exponent and at most 6 decimals
    if "e" not in r and len(r) - r.index(".") <= 7:
        return r
    neg = d < 0
    digits, K = _shortest(repr(abs(d)))
    n = len(digits)
    exp = abs(K + n - 1)
    sign = "-" if neg else ""
    if K >= 0 and exp < n + 7:
        return sign + digits + "0" * K
    if K < 0 and (K > -7 or exp < 4):
        offset = n + K
        if offset <= 0:
            return sign + "0." + "0" * -offset + digits
        return sign + digits[:offset] + "." + digits[offset:]
    digits = digits[:18 - neg]
    mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mant}e{'-' if K + n - 1 < 0 else '+'}{exp}"


def _shortest(r: str) -> tuple[str, int]:
    """The digits of a positive double's ``repr`` ``r`` without the zeros at either end,
    and the power of ten ``K`` they are multiplied by (as ``Decimal(r).normalize()``)."""
    mant, _, exp = r.partition("e")
    whole, _, frac = mant.partition(".")
    digits = (whole + frac).lstrip("0")
    kept = digits.rstrip("0")
    return kept, int(exp or 0) - len(frac) + len(digits) - len(kept)


def g17(d: float) -> str:
    """A double as Redis 7.0 and earlier wrote it into digests (``%.17g``)."""
    if d != d:
        return "nan"
    if math.isinf(d):
        return "inf" if d > 0 else "-inf"
    return "%.17g" % d


def stream_id(sid) -> str | None:
    return None if sid is None else f"{sid[0]}-{sid[1]}"


def _items_python(v, item) -> list:
    return [[item(x) for x in e] if isinstance(e, tuple) else item(e) for e in v]


#: a collection's elements in their shape (a tuple as a list, each element as ``_item``
#: makes it): in C (``_rdb.json_items``, which hands ``_item`` what is not UTF-8 bytes or
#: an int) when built
_items = C.json_items if C is not None else _items_python


def value_length(rec: KeyRecord) -> int | None:
    """STRLEN of a string, the number of elements of any other value (None where the
    decoder could not tell)."""
    if rec.vtype.type == "string" or rec.vtype.layout == "string":
        return rec.extra.get("value_length")
    return rec.elements


def value_json(rec: KeyRecord) -> Any:
    """The value the decoder kept for ``rec``, in its type's shape (None when not kept)."""
    v = rec.value
    layout = rec.vtype.layout
    if layout == "module":
        return {"module": rec.extra.get("module"), "encver": rec.extra.get("module_encver"),
                "values": [_item(x) for x in (v or ())]}
    if layout.startswith("stream"):
        return _stream(rec)
    if layout.startswith("df_") and layout not in ("df_hash_expiry", "df_set_expiry"):
        out = {"filter": {k: _item(x) for k, x in rec.extra.get("filter", {}).items()}}
        if layout == "df_topk":
            out["heap"] = [[_item(i), c] for i, c in (v or ())]
        return out
    if v is None:
        return None
    if isinstance(v, (bytes, bytearray)):
        return text(bytes(v))
    return _items(v, _item)


def _stream(rec: KeyRecord) -> dict:
    meta = rec.extra.get("stream", {})
    out: dict = {"entries": [[stream_id(sid), [[text(f), text(x)] for f, x in fields]]
                             for sid, fields in (rec.value or ())]}
    out["length"] = meta.get("length")
    for name in ("last_id", "first_id", "max_deleted_id"):
        if name in meta:
            out[name] = stream_id(meta[name])
    if "entries_added" in meta:
        out["entries_added"] = meta["entries_added"]
    groups = []
    for g in meta.get("groups") or ():
        if not isinstance(g, dict):
            continue
        owner = {sid: c["name"] for c in g.get("consumers", ()) for sid in c.get("pel", ())}
        group = {"name": text(g["name"]), "last_delivered_id": stream_id(g["last_id"])}
        if "entries_read" in g:  # null: not known (the server's SCG_INVALID_ENTRIES_READ, 2^64-1)
            group["entries_read"] = None if g["entries_read"] == (1 << 64) - 1 else g["entries_read"]
        group["pending"] = [{"id": stream_id(e["id"]), "consumer": text(owner.get(e["id"])),
                             "delivery_time": e["delivery_time"], "delivery_count": e["delivery_count"]}
                            for e in g.get("pel", ())]
        group["consumers"] = [{"name": text(c["name"]), "seen_time": c.get("seen_time"),
                               **({"active_time": c["active_time"]} if "active_time" in c else {}),
                               "pending": [stream_id(s) for s in c.get("pel", ())]}
                              for c in g.get("consumers", ())]
        groups.append(group)
    out["groups"] = groups
    return out


def function_json(rec: OpRecord) -> dict | None:
    """A function library's record (FUNCTION2, or the pre-GA FUNCTION) as its JSON object."""
    if rec.name not in ("FUNCTION2", "FUNCTION_PRE_GA"):
        return None
    out = {"kind": "function", "protocol": PROTOCOL, "code": text(rec.fields.get("code"))}
    for name in ("name", "engine", "description"):
        if name in rec.fields:
            out[name] = text(rec.fields[name])
    out["offset"] = rec.offset
    out["findings"] = [f.to_json() for f in rec.findings]
    return out
