"""Spec-style field tables: ``Field (offset) : value``, rendered with rich.

Each row is as wide as it needs to be: a long value wraps at the terminal's width under its
own column instead of widening every row, and only the part of it the caps allow
(:mod:`.shown`) is ever built.
"""

from __future__ import annotations

from typing import Iterable

from rich.cells import cell_len
from rich.console import Group
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from ..findings import Finding
from ..messages.layout import Field, Located
from ..sessions.decoded import Decoded
from .escape import safe
from .shown import DEFAULT, Row, Shown, cut_text, rows, wrap

SEVERITY_STYLES = {"error": "bold red", "warning": "yellow", "info": "cyan"}

_HEADER = Style(bold=True)
_OFFSET = Style(dim=True)
_NOTE = Style(dim=True, italic=True)
_GAP = "  "  # between columns
_MIN_VALUE_WIDTH = 24  # narrower than this, a value goes on lines of its own under its field


def offsets(field: Field) -> str:
    return span(field.offset, field.size)


def span(offset: int, size: int) -> str:
    if offset < 0:
        return ""
    if size <= 1:
        return f"({offset})"
    if size == 2:
        return f"({offset},{offset + 1})"
    return f"({offset}-{offset + size - 1})"


def title(msg: Located, where: str = "") -> Text:
    kind = "request" if msg.is_request else "response"
    text = Text()
    text.append(safe(msg.name), style="bold")
    text.append(f" {kind}")
    if msg.status is not None:
        text.append(f" {safe(msg.status_name)}", style="green" if msg.status == 0 else "red")
    text.append(f"  {msg.size} bytes at {msg.offset}", style="dim")
    if msg.truncated:
        text.append("  (truncated)", style="red")
    if where:
        text.append(f"  {safe(where)}", style="dim")
    if msg.note:
        text.append(f"\n{safe(msg.note)}", style="italic")
    return text


def findings_text(findings: Iterable[Finding], limit: int | None = DEFAULT.value) -> Text:
    text = Text()
    for f in findings:
        text.append(f"  {f.severity.upper():7} ", style=SEVERITY_STYLES.get(f.severity, ""))
        text.append(f"{f.cls} {f.rule}: ", style="bold")
        message, note = cut_text(f.message, limit)
        text.append(message)
        if note:
            text.append(f" {note}", style="dim italic")
        if f.offset is not None:
            text.append(f" (at {f.offset})", style="dim")
        text.append("\n")
    return text


class FieldTable:
    """The rows of one frame as three columns: label, ``(offset)``, ``: value``."""

    def __init__(self, rows: list[Row]) -> None:
        self.rows = rows

    def __rich_console__(self, console, options):
        labels = ["  " * r.depth + r.label for r in self.rows]
        spans = [span(r.offset, r.size) for r in self.rows]
        label_w = max([cell_len("Field"), *map(cell_len, labels)])
        span_w = max([len("(offset)"), *map(len, spans)])
        indent = label_w + len(_GAP) + span_w + len(_GAP)
        width = options.max_width - indent - 2  # after ": "
        stacked = width < _MIN_VALUE_WIDTH
        if stacked:  # a narrow terminal: values on lines of their own
            indent = 4 if options.max_width >= 16 else 0
            width = max(1, options.max_width - indent)
        yield Segment(_pad("Field", label_w) + _GAP + _pad("(offset)", span_w) + _GAP + "value", _HEADER)
        yield Segment.line()
        pad = " " * (indent if stacked else indent + 2)
        for label, where, row in zip(labels, spans, self.rows):
            lines = wrap(row.value, width) if row.value or not row.note else []
            yield Segment(_pad(label, label_w) + _GAP)
            yield Segment(where if stacked else _pad(where, span_w), _OFFSET)
            if stacked:
                yield Segment.line()
            if lines:
                yield Segment((pad + ": " if stacked else _GAP + ": ") + lines[0])
                yield Segment.line()
                for line in lines[1:]:
                    yield Segment(pad + line)
                    yield Segment.line()
            notes = wrap(row.note, width) if row.note else []
            for i, line in enumerate(notes):
                first = not lines and i == 0 and not stacked
                yield Segment((_GAP + "  " if first else pad) + line, _NOTE)
                yield Segment.line()
            if not lines and not notes:
                yield Segment.line()


def _pad(text: str, width: int) -> str:
    return text + " " * (width - cell_len(text))


def field_rows(msg: Located, shown: Shown = DEFAULT) -> list[Row]:
    return list(rows(msg, msg.located(), shown))


def frame_table(msg: Located, where: str = "", shown: Shown = DEFAULT) -> Group:
    if isinstance(msg, Decoded):
        return decoded_table(msg, where, shown)
    parts = [title(msg, where), FieldTable(field_rows(msg, shown))]
    if msg.findings:
        parts.append(findings_text(msg.findings, shown.value))
    return Group(*parts)


def decoded_table(rec: Decoded, where: str = "", shown: Shown = DEFAULT) -> Group:
    """Another family's record: its title and its ``(field, value)`` rows, escaped and cut."""
    heading = Text(safe(rec.title()), style="bold")
    if where:
        heading.append(f"  {safe(where)}", style="dim")
    table = []
    for label, value in rec.table_rows()[:shown.rows] if shown.rows is not None else rec.table_rows():
        text, note = cut_text(value, shown.value)
        table.append(Row(0, safe(label), -1, 0, text, note))
    parts = [heading, FieldTable(table)]
    if rec.findings:
        parts.append(findings_text(rec.findings, shown.value))
    return Group(*parts)
