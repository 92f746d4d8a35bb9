"""Totals of a decode: frames, skipped ranges, findings by severity (no terminal needed)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..framing.framer import Skipped
from ..messages.layout import Located


@dataclass
class Tally:
    frames: int = 0
    skipped: int = 0
    skipped_bytes: int = 0
    severities: Counter = field(default_factory=Counter)

    def add(self, item: Located | Skipped) -> None:
        if isinstance(item, Skipped):
            self.skipped += 1
            self.skipped_bytes += item.size
        else:
            self.add_message(item)

    def add_message(self, msg: Located) -> None:
        self.frames += 1
        if msg.findings:
            for f in msg.findings:
                self.severities[f.severity] += 1

    def line(self) -> str:
        parts = [f"{self.frames} frames"]
        if self.skipped:
            parts.append(f"{self.skipped_bytes} bytes skipped in {self.skipped} ranges")
        parts.append(self.findings())
        return ", ".join(parts)

    def findings(self) -> str:
        return f"{self.severities['error']} errors, {self.severities['warning']} warnings"

    def shown_line(self, read: "Tally") -> str:
        """The closing line of a decode that showed these frames of the ``read`` ones (a
        filter or ``--limit`` chose them): what was shown and its findings, then what was
        read (reading stops after the last frame a limit lets through)."""
        if self.frames == read.frames:
            return read.line()
        return f"{self.frames} frames shown, {self.findings()}; {read.frames} frames read, {read.findings()}"
