"""How much of a frame the terminal views show, and the cutting and wrapping that keep them bounded.

The table and the diagram are for reading. A 10 MiB value or a 300 KB frame printed whole
helps nobody and takes minutes, so they show the first ``value`` bytes of each value, at
most ``rows`` rows under one field, and draw the first ``diagram`` bytes of a frame; a
note says how much was left out and which option shows it all. Only what is shown is built:
a value is cut before it is escaped, wrapped or handed to rich. JSON Lines is not concerned
(its values follow the cap ``limits.VALUE_TEXT``).
"""

from __future__ import annotations

from ..limits import DIAGRAM_SHOWN, ROWS_SHOWN, VALUE_SHOWN
from ..slots import Slots
from .escape import safe

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing, and frames' fields: imported by what shows them, not by every command)
    from typing import Iterable, Iterator, Sequence

    from ..messages.layout import Field, Located

#: Bytes of a value (text or hex) the table shows (``--max-value``; ``--full``: all).
MAX_VALUE_SHOWN = VALUE_SHOWN.default
#: Bytes of a frame the diagram draws (``--max-diagram``; ``--full``: all).
MAX_DIAGRAM_SHOWN = DIAGRAM_SHOWN.default
#: Rows the table shows under one field: entries of a failover log, features, records
#: (``--full``: all).
MAX_ROWS_SHOWN = ROWS_SHOWN.default

SHOW_ALL = "--full"
INFLATED = "value_inflated_length"  # the row a decoder adds when it inflated the value


class Shown(Slots):
    """The caps of the terminal views: bytes of a ``value``, of a frame's ``diagram``, and
    ``rows`` under one field; None: no cap."""

    __slots__ = ("value", "diagram", "rows")

    def __init__(self, value: int | None = MAX_VALUE_SHOWN, diagram: int | None = MAX_DIAGRAM_SHOWN,
                 rows: int | None = MAX_ROWS_SHOWN) -> None:
        self.value = value
        self.diagram = diagram
        self.rows = rows

    __hash__ = Slots.hashed

    @classmethod
    def everything(cls) -> "Shown":
        return cls(None, None, None)


DEFAULT = Shown()


# -------------------------------------------------------------------------- rows of a frame

class Row(Slots):
    """One line of a field table (before wrapping): escaped, cut, with its wire range."""

    __slots__ = ("depth", "label", "offset", "size", "value", "note")

    def __init__(self, depth: int, label: str, offset: int, size: int, value: str, note: str = "") -> None:
        self.depth = depth
        self.label = label
        self.offset = offset
        self.size = size
        self.value = value
        self.note = note

    __hash__ = Slots.hashed


def rows(msg: Located, fields: Sequence[Field], shown: Shown = DEFAULT) -> Iterator[Row]:
    """The rows a table shows of ``fields`` (a located field tree, :meth:`Located.located`): at most ``shown.rows``
    under one field, each field's range kept inside its parent's (a value inflated from a
    snappy block is shown at the compressed bytes it came from)."""
    yield from _rows(msg, fields, shown, 0, None, None)


def _rows(msg, fields: Sequence[Field], shown: Shown, depth: int, lo: int | None, hi: int | None) -> Iterator[Row]:
    for count, f in enumerate(fields):
        if shown.rows is not None and count >= shown.rows:
            yield Row(depth, "", -1, 0, "", f"… {len(fields) - count:,} more rows not shown ({SHOW_ALL} shows all)")
            return
        start, end = f.offset, f.offset + f.size
        if lo is not None:
            start = min(max(start, lo), hi)
            end = max(start, min(end, hi))
        value, note = field_text(msg, f, shown.value)
        yield Row(depth, safe(f.label), start, end - start, value, note)
        if f.children:
            yield from _rows(msg, f.children, shown, depth + 1, start, end)


# ------------------------------------------------------------------------ values, cut

def field_text(msg: Located, f: Field, limit: int | None) -> tuple[str, str]:
    """What the table shows of a field's value (escaped, at most ``limit`` bytes of it) and
    a note on what was left out ("" when nothing was)."""
    if f.name.endswith("_hex") and isinstance(f.value, str):
        shown = _hex_text(f.value, limit, f.name == "value_hex" and INFLATED in msg.fields)
        if shown is not None:
            return shown
    if f.name == "value" and isinstance(f.value, str):
        return _value_text(msg, f, limit)
    return cut_text(f.display, limit)


def cut_text(text: str, limit: int | None, what: str = "characters") -> tuple[str, str]:
    """Any display text, cut at ``limit`` characters."""
    if limit is None or len(text) <= limit:
        return safe(text), ""
    return safe(text[:limit]), f"… {len(text) - limit:,} more {what} not shown ({SHOW_ALL} shows all)"


def _hex_text(value: str, limit: int | None, inflated: bool) -> tuple[str, str] | None:
    """A ``*_hex`` field: its value is the whole byte string in hex; the first ``limit``
    bytes are spaced as the table prints them."""
    total = len(value) // 2
    n = total if limit is None else min(total, limit)
    try:
        shown = bytes.fromhex(value[: 2 * n]).hex(" ")
    except ValueError:
        return None
    if inflated and n == total:
        return (shown or "(empty)"), f"({total:,} bytes inflated)"
    return (shown or "(empty)"), _left(total - n, total, " (inflated)" if inflated else "")


def _value_text(msg: Located, f: Field, limit: int | None) -> tuple[str, str]:
    """A value shown as text, counted and cut in bytes. The decoder's display is used as
    long as it holds what is shown (it cuts long texts); past that, the bytes are taken from
    the frame, or from the document inflated again when the value was a snappy block."""
    total = f.size  # bytes of the text: for an inflated value, of the inflated body
    inflated = INFLATED in msg.fields
    display = f.display
    whole = _whole(display, total)
    if limit is None or limit >= total:
        text = display if whole else _text_of(msg, f, inflated)
        if text is None:
            return cut_text(display, limit)
        return safe(text), (f"({total:,} bytes inflated)" if inflated else "")
    head = display[:limit].encode("utf-8", "surrogatepass")
    if not whole and _cut_at(display) < limit:
        raw = _bytes_of(msg, f, inflated, limit)
        if raw is None:
            return cut_text(display, limit)
        head = raw
    text = head[:limit].decode("utf-8", "ignore")  # a character cut in two is left out
    shown = len(text.encode("utf-8", "surrogatepass"))
    return safe(text), _left(total - shown, total, " (inflated)" if inflated else "")


def _left(missing: int, total: int, how: str) -> str:
    if missing <= 0:
        return ""
    return f"… {missing:,} of {total:,} bytes{how} not shown ({SHOW_ALL} shows all)"


def _whole(display: str, size: int) -> bool:
    """Whether a text value's display holds all its ``size`` bytes (the decoder cuts long
    texts and marks the cut with a trailing "…")."""
    if not display.endswith("…"):
        return True
    return (len(display) if display.isascii() else len(display.encode("utf-8", "surrogatepass"))) == size


def _cut_at(display: str) -> int:
    """Bytes of a cut display before its "…"."""
    body = display[:-1]
    return len(body) if body.isascii() else len(body.encode("utf-8", "surrogatepass"))


def _inside(msg: Located, f: Field) -> bool:
    rel = f.offset - msg.offset
    return 0 <= rel and rel + f.size <= len(msg.data)


def _bytes_of(msg: Located, f: Field, inflated: bool, upto: int | None) -> bytes | None:
    """The first ``upto`` bytes of a text value, from the frame (or the inflated document)."""
    if not inflated:
        if not _inside(msg, f):
            return None
        rel = f.offset - msg.offset
        return msg.data[rel : rel + (f.size if upto is None else min(f.size, upto))]
    data = msg.inflated()
    if data is None or len(data) < f.size:
        return None
    body = memoryview(data)[len(data) - f.size :]  # the document body follows any xattrs
    return bytes(body if upto is None else body[:upto])


def _text_of(msg: Located, f: Field, inflated: bool) -> str | None:
    raw = _bytes_of(msg, f, inflated, None)
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


# ------------------------------------------------------------------------- wrapping

def wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` cells, broken after a space where one is near."""
    width = max(1, width)
    if not text:
        return [""]
    if not text.isascii():  # wide characters: cut by cells
        from rich.cells import chop_cells  # (rich: once something is drawn)

        return chop_cells(text, width) or [""]
    lines, pos, end = [], 0, len(text)
    while pos < end:
        stop = pos + width
        if stop >= end:
            lines.append(text[pos:])
            break
        space = text.rfind(" ", pos + 1, stop + 1)
        if space > pos + width // 2:
            lines.append(text[pos:space])
            pos = space + 1
        else:
            lines.append(text[pos:stop])
            pos = stop
    return lines


class Lines:
    """Plain lines printed as they are: no wrapping, no measuring by rich."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = lines

    def __rich_console__(self, console, options):
        from rich.segment import Segment

        for line in self.lines:
            yield Segment(line)
            yield Segment.line()
