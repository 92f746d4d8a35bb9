"""Spec-style field tables: ``Field (offset) : value``, rendered with rich."""

from __future__ import annotations

from typing import Iterable

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..findings import Finding
from ..messages.describe import describe, walk
from ..messages.frame import Message
from ..messages.layout import Field
from .escape import safe

SEVERITY_STYLES = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def offsets(field: Field) -> str:
    if field.size <= 1:
        return f"({field.offset})"
    if field.size == 2:
        return f"({field.offset},{field.offset + 1})"
    return f"({field.offset}-{field.offset + field.size - 1})"


def title(msg: Message, where: str = "") -> Text:
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


def findings_text(findings: Iterable[Finding]) -> Text:
    text = Text()
    for f in findings:
        text.append(f"  {f.severity.upper():7} ", style=SEVERITY_STYLES.get(f.severity, ""))
        text.append(f"{f.cls} {f.rule}: ", style="bold")
        text.append(safe(f.message))
        if f.offset is not None:
            text.append(f" (at {f.offset})", style="dim")
        text.append("\n")
    return text


def frame_table(msg: Message, where: str = "") -> Group:
    table = Table(show_edge=False, box=None, pad_edge=False)
    table.add_column("Field", no_wrap=True)
    table.add_column("(offset)", style="dim", no_wrap=True)
    table.add_column("value", overflow="fold")
    for depth, f in walk(describe(msg)):
        table.add_row(Text("  " * depth + safe(f.label)), Text(offsets(f)), Text(": " + safe(f.display)))
    parts = [title(msg, where), table]
    if msg.findings:
        parts.append(findings_text(msg.findings))
    return Group(*parts)
