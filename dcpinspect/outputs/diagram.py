"""Byte diagrams in the style of the protocol documents, annotated with field names."""

from __future__ import annotations

from ..messages.describe import describe, walk
from ..messages.frame import Message
from .escape import safe

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


def diagram(msg: Message) -> str:
    """The frame drawn four bytes a row; each row names the fields that start in it."""
    starts: dict[int, list[str]] = {}
    for depth, f in walk(describe(msg)):
        if f.size and not f.children:
            starts.setdefault(f.offset - msg.offset, []).append(f.name)
    lines = list(_HEAD)
    data = msg.data
    for row in range(0, len(data), 4):
        chunk = data[row : row + 4]
        names = [n for i in range(row, row + 4) for n in starts.get(i, [])]
        cells = "|".join(_cell(b) for b in chunk)
        note = f"   {', '.join(names)}" if names else ""
        lines.append(f"{row:>8}|{cells}|{safe(note)}")
        lines.append(_RULE[: 8 + 16 * len(chunk) + 1])
    lines.append(f"    Total {len(data)} bytes")
    return "\n".join(lines)
