"""``validate``'s findings printed as they are found, in capture order, holding no more than
a window of rows whatever their number.

JSON Lines writes every occurrence, one line each: at once on a terminal, else a window of
lines at a time (or a second after the first of them was found). The table prints a window of
rows at a time (:class:`~.rows.RowWindows`: the first window decides the column widths)
and folds repeats: a finding whose ``fold_key`` (the row's: its rule and where it is) was
seen before is counted, not printed again; after the last window one row for each rule and stream that repeated gives its
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
from .rows import RowWindows

#: rows a window holds before it is printed; a window is printed sooner when it has waited
#: this many seconds, so that findings appear as they are found
WINDOW_ROWS, WINDOW_SECONDS = 256, 1.0
#: columns the message keeps beside the others before the table is folded
MESSAGE_LEAST = 24

#: the columns of the repeats table after the row's ``repeat_cells``
REPEAT_COUNTS = ("count", "first frame", "last frame")


def _terminal(out) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):  # no file, or a closed one
        return False


class FindingsStream:
    """Takes findings rows (``validate``'s ``FindingRow``: ``record``, ``cells`` under
    ``headers``, ``severity``, ``fold_key``, ``frame_cell``, ``repeat_cells`` under
    ``repeat_headers``, ``folded``: the lines of the narrow view) one at a time; :meth:`close`
    prints what is left and the closing line. ``worst`` is the highest severity level seen
    (-1: none)."""

    def __init__(self, jsonl: bool, console=None, headers: tuple[str, ...] = (),
                 repeat_headers: tuple[str, ...] = (), before_print: Callable[[], None] | None = None) -> None:
        self.jsonl = jsonl
        self.headers, self.repeat_headers = headers, (*repeat_headers, *REPEAT_COUNTS)
        self.console = console
        self.before_print = before_print or (lambda: None)  # e.g. take a progress bar off the terminal
        self.worst = -1
        self.errors = self.total = 0
        self._window: list[tuple[tuple[str, ...], tuple[str, ...]]] = []  # (cells, folded lines)
        self._since = 0.0
        self._table: RowWindows | None = None
        self._folded_view: bool | None = None
        #: fold key → [*repeat cells, count, first frame, last frame, where (narrow view)]
        self._repeats: dict[Any, list] = {}
        self._folded = 0  # occurrences counted, not printed
        self._max_keys = FOLDED.value()
        #: JSON Lines: the lines not yet written, and how many they are: a window at a time
        #: when the output is no terminal (one write each would be a system call each on an
        #: unbuffered output), each at once on a terminal, as its line buffering would, and
        #: after :meth:`as_found`
        self._lines: list[str] = []
        self._held = 0
        self._window_lines = WINDOW_ROWS if jsonl and not _terminal(sys.stdout) else 1

    def as_found(self) -> None:
        """Write each JSON line as it is found from now on: the input comes as it happens."""
        self._window_lines = 1

    def add(self, row) -> None:
        severity = row.severity
        self.total += 1
        if severity == "error":
            self.errors += 1
        level = LEVELS[severity]
        if level > self.worst:
            self.worst = level
        if self.jsonl:
            self._hold(row.line, 1)
            return
        key = row.fold_key
        seen = self._repeats.get(key)
        if seen is not None:
            seen[-4] += 1
            seen[-2] = row.frame_cell
            self._folded += 1
            return
        if len(self._repeats) < self._max_keys:
            self._repeats[key] = [*row.repeat_cells, 1, row.frame_cell, row.frame_cell, row.where]
        if not self._window:
            self._since = time.monotonic()
        self._window.append((tuple(map(safe, row.cells)), tuple(map(safe, row.folded))))
        if len(self._window) >= WINDOW_ROWS or time.monotonic() - self._since > WINDOW_SECONDS:
            self.flush()

    def add_written(self, lines: str, total: int, errors: int, worst: int) -> None:
        """JSON Lines: ``total`` rows written already as their ``lines``, ``errors`` of them
        errors, the highest severity level ``worst``."""
        self.total += total
        self.errors += errors
        if worst > self.worst:
            self.worst = worst
        self._hold(lines, total)

    def _hold(self, lines: str, count: int) -> None:
        if not self._lines:
            self._since = time.monotonic()
        self._lines.append(lines)
        self._held += count
        if self._held >= self._window_lines or time.monotonic() - self._since > WINDOW_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Print the rows held (the table's window, the lines not yet written)."""
        if self.jsonl:
            if self._lines:
                lines, self._lines, self._held = self._lines, [], 0
                sys.stdout.write("".join(lines))
            sys.stdout.flush()
            return
        if not self._window:
            return
        rows, self._window = self._window, []
        self.before_print()
        cells = [c for c, _ in rows]
        if self._folded_view is None:
            self._table = RowWindows(self.console, self.headers)
            self._folded_view = self._table.natural(cells) + MESSAGE_LEAST > self.console.width
        if self._folded_view:  # each finding on a few lines, wrapped to the terminal
            self._print_lines([lines for _, lines in rows])
        else:
            self._table.print(cells)

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
        repeated = [r for r in self._repeats.values() if r[-4] > 1]
        if repeated:
            console.print()
            console.print(f"Repeats: {self._folded:,} findings folded into the first of each rule and stream above")
            table = RowWindows(console, self.repeat_headers)
            for start in range(0, len(repeated), WINDOW_ROWS):
                rows = [tuple(safe(str(x)) for x in r) for r in repeated[start:start + WINDOW_ROWS]]
                if self._folded_view:  # rule, flow, ..., severity, count, first, last, where
                    self._print_lines([(f"{r[0]}  {r[-5]}  {r[-4]} times, frames {r[-3]} to {r[-2]}",
                                        "  ".join(x for x in (r[1], r[-1]) if x)) for r in rows])
                else:
                    table.print([r[:-1] for r in rows])
        console.print(f"{frames} frames checked: {self.errors} errors, {self.total - self.errors} other findings")

