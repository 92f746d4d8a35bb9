"""Byte diagrams in the style of the protocol documents, annotated with field names.

A frame is drawn four bytes a row up to the diagram cap (:data:`.shown.MAX_DIAGRAM_SHOWN`,
``--max-diagram``, ``--full``); a line then says how many bytes were not drawn. Only the
rows drawn are built.
"""

from __future__ import annotations

from typing import Iterable

from ..messages.layout import Field, Located
from .escape import safe
from .shown import MAX_DIAGRAM_SHOWN, SHOW_ALL

_RULE = "        +---------------+---------------+---------------+---------------+"
_HEAD = (
    "      Byte/     0       |       1       |       2       |       3       |",
    "         /              |               |               |               |",
    "        |0 1 2 3 4 5 6 7|0 1 2 3 4 5 6 7|0 1 2 3 4 5 6 7|0 1 2 3 4 5 6 7|",
    _RULE,
)


def _cell(byte: int) -> str:
    ch = chr(byte)
    text = f"0x{byte:02x} ('{ch}')" if 0x21 <= byte < 0x7F and ch not in "'|" else f"0x{byte:02x}"
    return f" {text:<14}"


def diagram(msg: Located, max_bytes: int | None = MAX_DIAGRAM_SHOWN) -> str:
    """The frame drawn four bytes a row (the first ``max_bytes`` of it; None: all); each row
    names the fields that start in it."""
    return "\n".join(diagram_lines(msg, max_bytes))


def diagram_lines(msg: Located, max_bytes: int | None = MAX_DIAGRAM_SHOWN) -> list[str]:
    return bytes_diagram_lines(msg.data, msg.offset, msg.located(), max_bytes)


def bytes_diagram_lines(data: bytes, base: int, fields: Iterable[Field], max_bytes: int | None = MAX_DIAGRAM_SHOWN,
                        total: int | None = None) -> list[str]:
    """Any bytes drawn so: ``data`` starting at stream offset ``base``, ``fields`` located
    in that stream (each row names those that start in it), ``total`` the bytes of the
    whole when ``data`` is only their beginning."""
    total = len(data) if total is None else max(total, len(data))
    drawn = len(data) if max_bytes is None else min(len(data), -(-max(0, max_bytes) // 4) * 4)
    starts: dict[int, list[str]] = {}
    for f in _leaves(fields, base, base + drawn):
        starts.setdefault(f.offset - base, []).append(f.name)
    lines = list(_HEAD)
    for row in range(0, drawn, 4):
        chunk = data[row : row + 4]
        names = [n for i in range(row, row + 4) for n in starts.get(i, [])]
        cells = "|".join(_cell(b) for b in chunk)
        note = f"   {', '.join(names)}" if names else ""
        lines.append(f"{row:>8}|{cells}|{safe(note)}")
        lines.append(_RULE[: 8 + 16 * len(chunk) + 1])
    if drawn < total:
        lines.append(f"        … {total - drawn:,} more bytes not drawn ({SHOW_ALL} draws all)")
    lines.append(f"    Total {total} bytes")
    return lines


def _leaves(fields: Iterable[Field], lo: int, hi: int) -> Iterable[Field]:
    """Fields with bytes of their own that start in ``lo..hi`` (absolute), depth first;
    a field starting past ``hi`` is not looked into."""
    for f in fields:
        if f.offset >= hi and f.size:
            continue
        if f.children:
            yield from _leaves(f.children, lo, hi)
        elif f.size and lo <= f.offset < hi:
            yield f
