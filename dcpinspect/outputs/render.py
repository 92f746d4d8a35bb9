"""Print decoded items to a console in the chosen format."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from rich.console import Console
from rich.text import Text

from ..framing.framer import Skipped
from .tally import Tally  # noqa: F401 (re-exported)
from .console import make_console  # noqa: F401 (re-exported)
from ..messages.layout import Located
from .diagram import diagram_lines
from .escape import safe
from .jsonl import dumps
from .shown import DEFAULT, Lines, Shown
from .table import findings_text, frame_table, title

FORMATS = ("table", "jsonl", "diagram")




class Renderer:
    """Items to a console: ``shown`` caps what the table and diagram show of each frame
    (jsonl is written as it is)."""

    def __init__(self, fmt: str, console: Console, out: TextIO | None = None, shown: Shown = DEFAULT) -> None:
        self.fmt = fmt
        self.console = console
        self.out = out or sys.stdout
        self.shown = shown
        self.tally = Tally()

    def item(self, item: Located | Skipped, where: str = "", **extra: Any) -> None:
        self.tally.add(item)
        if self.fmt == "jsonl":
            if isinstance(item, Skipped):
                rec = {**extra, "kind": "skipped", "offset": item.offset, "length": item.size, "reason": item.reason}
            else:
                rec = {**extra, "kind": "frame", **item.record()}
                if item.note:
                    rec["note"] = item.note
            self.out.write(dumps(rec) + "\n")
            return
        if isinstance(item, Skipped):
            self.console.print(Text(f"… {item.size} bytes at {item.offset} skipped: {safe(item.reason)}", style="yellow"))
            self.console.print()
            return
        if self.fmt == "diagram":
            self.console.print(title(item, where))
            self.console.print(Lines(diagram_lines(item, self.shown.diagram)), crop=False)
            if item.findings:
                self.console.print(findings_text(item.findings, self.shown.value))
        else:
            self.console.print(frame_table(item, where, self.shown))
        self.console.print()

    def summary(self, line: str | None = None) -> None:
        """The closing line: the tally's, or ``line``."""
        if self.fmt != "jsonl":
            self.console.print(Text(self.tally.line() if line is None else line, style="bold"))
