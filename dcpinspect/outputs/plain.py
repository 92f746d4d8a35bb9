"""Standard output as a file or a pipe, without rich: lines of text and tables of plain
rows written as the outputs' rich console (:mod:`.console`) writes them there, so that a
small file's table or summary costs no import of rich (a fifth of such a run). Whatever
is not plain (text past the line's width, a cell rich would wrap or measure otherwise,
anything but text) goes to that console, made on first need."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence, TextIO

#: columns of the outputs' console when it writes to a file or pipe, not a terminal
FILE_WIDTH = 160
#: rich's variables that make it write styles or take a pipe for a terminal
RICH_ENVIRONMENT = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


class PlainConsole:
    """The outputs' console on a file or pipe (``stream``), for what it prints plainly; any
    other use of it is the rich console's (:attr:`rich`)."""

    def __init__(self, stream: TextIO) -> None:
        self.file = stream
        self._rich = None

    @property
    def rich(self):
        if self._rich is None:
            from .console import make_console

            self._rich = make_console(self.file)
        return self._rich

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rich, name)

    def print(self, *objects: Any, **options: Any) -> None:
        text = objects[0] if len(objects) == 1 and not options else None
        if type(text) is str and len(text) <= FILE_WIDTH and _plain(text):
            self.file.write(text + "\n")
        else:
            self.rich.print(*objects, **options)

    def plain_rows(self, headers: Sequence[str], rows: Sequence[Sequence[str]], title: str = "") -> bool:
        """Write a table as rich's ``Table(box=None)`` writes it here, if it is plain: every
        cell printable ASCII, the columns at their widest within the line and the title
        within the table; whether it was written."""
        lines = [headers, *rows]
        if any(len(r) != len(headers) or not all(_plain(c) for c in r) for r in lines) or not _plain(title):
            return False
        widths = [max(len(r[i]) for r in lines) for i in range(len(headers))]
        wide = sum(widths) + 2 * len(widths)
        if wide > FILE_WIDTH or len(title) > wide:
            return False
        out = [title.ljust(wide) + "\n"] if title else []
        out += ["".join(" " + c + " " * (w - len(c)) + " " for c, w in zip(r, widths)) + "\n" for r in lines]
        self.file.write("".join(out))
        return True


def _plain(text: str) -> bool:
    return text.isascii() and text.isprintable()


def stdout_console():
    """The outputs' console on standard output: a :class:`PlainConsole` on a file or pipe
    where rich writes no styles, else the rich console itself."""
    if sys.stdout.isatty() or any(os.environ.get(name) is not None for name in RICH_ENVIRONMENT):
        from .console import make_console

        return make_console()
    return PlainConsole(sys.stdout)
