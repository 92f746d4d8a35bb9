"""Compare a protocol document's field captions with the bytes they annotate."""

from __future__ import annotations

import re
from typing import Iterable, Protocol

from ....findings import Finding
from ....messages.layout import walk
from ..messages.describe import describe
from ..messages.frame import Message
from .book import FRAME_RULES

_HEX = re.compile(r"^0x([0-9a-fA-F]+)\b")
_PAREN = re.compile(r"\(([^)]*)\)\s*$")
RULE = FRAME_RULES["caption-mismatch"]


class CaptionLike(Protocol):
    name: str
    start: int
    end: int
    text: str


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower()).replace("seqno", "seq").replace("extra", "extras").replace(
        "extrass", "extras"
    )


def check_captions(msg: Message, captions: Iterable[CaptionLike], block_start: int) -> list[Finding]:
    """Findings where a caption's value, flag names or field name disagree with the frame.

    Caption offsets are relative to the example (``block_start`` in the input);
    the frame is decoded from that example, so offsets line up with ``msg``.
    """
    fields = [f for _, f in walk(describe(msg)) if f.size]
    by_span = {(f.offset, f.offset + f.size - 1): f for f in fields}
    out: list[Finding] = []
    data = msg.data
    for cap in captions:
        start, end = cap.start - block_start + msg.offset, cap.end - block_start + msg.offset
        rel_s, rel_e = start - msg.offset, end - msg.offset
        where = f"{cap.name} ({cap.start - block_start}" + (f"-{cap.end - block_start})" if cap.end != cap.start else ")")
        if rel_s < 0 or rel_e >= len(data) or rel_e < rel_s:
            out.append(RULE.finding(f"caption {where} points outside the {len(data)}-byte example", start))
            continue
        raw = data[rel_s : rel_e + 1]
        m = _HEX.match(cap.text.strip())
        if m:
            said, actual = int(m.group(1), 16), int.from_bytes(raw, "big")
            if said != actual:
                out.append(RULE.finding(
                    f"caption {where} says 0x{said:0{len(raw) * 2}x}, the bytes are 0x{actual:0{len(raw) * 2}x}", start))
                continue
        elif cap.text.strip() and cap.text.strip() != raw.decode("latin-1"):
            out.append(RULE.finding(f"caption {where} says {cap.text.strip()!r}, the bytes are {raw!r}", start))
            continue
        field = by_span.get((start, end))
        paren = _PAREN.search(cap.text)
        if field is not None and paren and isinstance(field.value, list):
            said_names = {_norm(w) for w in re.split(r"[|,\s]+", paren.group(1)) if w}
            actual = {_norm(str(v)) for v in field.value}
            if said_names and not said_names <= actual:
                out.append(RULE.finding(
                    f"caption {where} names ({paren.group(1)}), the bits 0x{int.from_bytes(raw, 'big'):x} mean "
                    f"({'|'.join(map(str, field.value)) or 'none'})", start))
        named = [f for f in fields if not f.children and _norm(f.name) == _norm(cap.name)]
        if named and field is not None and field not in named and not field.children:
            other = named[0]
            out.append(RULE.finding(
                f"caption calls bytes {where.split('(', 1)[1].rstrip(')')} '{cap.name}', but the layout puts "
                f"{field.name} there and {other.name} at {other.offset - msg.offset}-{other.offset - msg.offset + other.size - 1}",
                start))
    msg.findings.extend(out)
    return out
