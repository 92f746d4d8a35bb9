"""Keys: plain text, or a collection-id LEB128 prefix plus the logical key (spec/dcp.md §5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ....findings import Problem
from . import problems as P
from .codecs.errors import CodecError
from .codecs.leb128 import decode_uleb128
from ....messages.layout import Field
from ....messages.text import key_text

if TYPE_CHECKING:
    from .frame import DecodeContext, Message

#: collection ids no key may carry on the wire (the rules judge a key that does: rules/frame.py)
RESERVED_COLLECTION_IDS = range(1, 8)
_NO_FIELDS: list[Field] = []  # what decode_key returns without ctx.detail; never appended to


def _looks_prefixed(raw: bytes) -> bool:
    """Without negotiation known: a text key never starts with a control byte."""
    first = raw[0]
    if 0x20 <= first < 0x7F:
        return False
    try:
        cid, used = decode_uleb128(raw)
    except CodecError:
        return False
    return cid not in RESERVED_COLLECTION_IDS and used < len(raw)


def decode_key(msg: "Message", raw: bytes, base: int, kind: str, ctx: "DecodeContext") -> list[Field]:
    if not raw:
        return []
    prefixed = kind == "document" and (
        ctx.collections if ctx.collections is not None else _looks_prefixed(raw)
    )
    if not prefixed:
        msg.key = raw
        text = key_text(raw)
        msg.fields["key"] = text
        return [Field("key", "Key", base, len(raw), text, text)] if ctx.detail else _NO_FIELDS
    msg.key_source = "negotiated" if ctx.collections is not None else "guessed"
    try:
        cid, used = (raw[0], 1) if raw[0] < 0x80 else decode_uleb128(raw)
    except CodecError as exc:
        msg.problems.append(Problem(P.COLLECTION_KEY_LEB128, f"key prefix: {exc}", base))
        msg.key = raw
        text = key_text(raw)
        msg.fields["key"] = text
        return [Field("key", "Key", base, len(raw), text, text)]
    logical = raw[used:]
    msg.key = logical
    msg.collection_id = cid
    text = logical.decode("utf-8", "backslashreplace")  # key_text, inline: most frames pass here
    msg.fields["collection_id"] = cid
    msg.fields["key"] = text
    if not ctx.detail:
        return _NO_FIELDS
    children = (
        Field("collection_id", "Collection ID", base, used, cid, f"0x{cid:x} ({cid}, leb128 {raw[:used].hex(' ')})"),
        Field("logical_key", "Logical key", base + used, len(logical), text, text),
    )
    return [Field("key", "Key", base, len(raw), text, text, children)]
