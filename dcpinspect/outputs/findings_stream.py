"""``validate``'s findings printed as they are found, in capture order, holding no more than
a window of rows whatever their number.

JSON Lines writes every occurrence, one line each, at once. The table prints a window of
rows at a time (:class:`~.rows.RowWindows`: the first window decides the column widths)
and folds repeats: a rule that fires again on the same stream (file, connection, vbucket,
stream-id) or, for findings of no stream, the same connection, is counted, not printed
again; after the last window one row for each rule and stream that repeated gives its
count and its first and last frame. On a terminal too narrow for the table's columns
each finding is folded onto a few lines instead, its message under it.
"""

from __future__ import annotations

import sys
import textwrap
import time
from typing import Any, Callable

from ..findings import LEVELS
from ..limits import FOLDED
from .escape import safe
from .jsonl import dumps
from .rows import RowWindows

#: rows a window holds before it is printed; a window is printed sooner when it has waited
#: this many seconds, so that findings appear as they are found
WINDOW_ROWS, WINDOW_SECONDS = 256, 1.0
#: columns the message keeps beside the others before the table is folded
MESSAGE_LEAST = 24

HEADERS = ("frame", "time", "flow", "vb", "sid", "severity", "class", "rule", "message")
REPEAT_HEADERS = ("rule", "flow", "vb", "sid", "severity", "count", "first frame", "last frame")


class FindingsStream:
    """Takes findings rows (``validate``'s ``FindingRow``: ``record``, ``cells``,
    ``severity``, ``fold_key``, ``frame_cell``) one at a time; :meth:`close` prints what is
    left and the closing line. ``worst`` is the highest severity level seen (-1: none)."""

    def __init__(self, jsonl: bool, console=None, before_print: Callable[[], None] | None = None) -> None:
        self.jsonl = jsonl
        self.console = console
        self.before_print = before_print or (lambda: None)  # e.g. take a progress bar off the terminal
        self.worst = -1
        self.errors = self.total = 0
        self._window: list[tuple[str, ...]] = []
        self._since = 0.0
        self._table: RowWindows | None = None
        self._folded_view: bool | None = None
        #: fold key → [rule, flow, vb, sid, severity, count, first frame, last frame]
        self._repeats: dict[Any, list] = {}
        self._folded = 0  # occurrences counted, not printed
        self._max_keys = FOLDED.value()
        if jsonl:
            self._write = sys.stdout.write

    def add(self, row) -> None:
        severity = row.severity
        self.total += 1
        if severity == "error":
            self.errors += 1
        level = LEVELS[severity]
        if level > self.worst:
            self.worst = level
        if self.jsonl:
            self._write(dumps(row.record) + "\n")
            return
        key = row.fold_key
        seen = self._repeats.get(key)
        if seen is not None:
            seen[5] += 1
            seen[7] = row.frame_cell
            self._folded += 1
            return
        if len(self._repeats) < self._max_keys:
            f = row.finding
            self._repeats[key] = [f.rule, row.flow or "-", "-" if row.vbucket is None else str(row.vbucket),
                                  "-" if f.stream_id is None else str(f.stream_id), severity, 1, row.frame_cell,
                                  row.frame_cell]
        if not self._window:
            self._since = time.monotonic()
        self._window.append(tuple(map(safe, row.cells)))
        if len(self._window) >= WINDOW_ROWS or time.monotonic() - self._since > WINDOW_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Print the rows held (the table's window)."""
        if self.jsonl:
            sys.stdout.flush()
            return
        if not self._window:
            return
        rows, self._window = self._window, []
        self.before_print()
        if self._folded_view is None:
            self._table = RowWindows(self.console, HEADERS)
            self._folded_view = self._table.natural(rows) + MESSAGE_LEAST > self.console.width
        if self._folded_view:
            self._print_folded(rows)
        else:
            self._table.print(rows)

    def _print_folded(self, rows: list[tuple[str, ...]]) -> None:
        """Each finding on a few lines: its frame and rule, then its time, flow and stream,
        then its message, each wrapped to the terminal."""
        self._print_lines([(f"frame {frame}  {severity}  {cls}  {rule}",
                            "  ".join(x for x in (ts if ts != "-" else "", flow, _stream(vb, sid)) if x), message)
                           for frame, ts, flow, vb, sid, severity, cls, rule, message in rows])

    def _print_lines(self, entries: list[tuple[str, ...]]) -> None:
        """Each entry's lines wrapped to the terminal, all but the first indented."""
        width = max(20, self.console.width)
        out = []
        for lines in entries:
            for i, text in enumerate(lines):
                out.extend(textwrap.wrap(text, width, initial_indent="" if i == 0 else "    ",
                                         subsequent_indent="    ", break_on_hyphens=False) or [""])
        self.console.file.write("\n".join(out) + "\n")
        self.console.file.flush()

    def close(self, frames: int) -> None:
        """The rows left, the repeats folded, and the closing line."""
        self.flush()
        if self.jsonl:
            return
        self.before_print()
        console = self.console
        repeated = [r for r in self._repeats.values() if r[5] > 1]
        if repeated:
            console.print()
            console.print(f"Repeats: {self._folded:,} findings folded into the first of each rule and stream above")
            table = RowWindows(console, REPEAT_HEADERS)
            for start in range(0, len(repeated), WINDOW_ROWS):
                rows = [tuple(safe(str(x)) for x in r) for r in repeated[start:start + WINDOW_ROWS]]
                if self._folded_view:
                    self._print_lines([(f"{rule}  {severity}  {count} times, frames {first} to {last}",
                                        "  ".join(x for x in (flow, _stream(vb, sid)) if x))
                                       for rule, flow, vb, sid, severity, count, first, last in rows])
                else:
                    table.print(rows)
        console.print(f"{frames} frames checked: {self.errors} errors, {self.total - self.errors} other findings")


def _stream(vb: str, sid: str) -> str:
    """``vb 5 sid 1`` (the parts there are)."""
    return "" if vb == "-" else f"vb {vb}" + (f" sid {sid}" if sid != "-" else "")
