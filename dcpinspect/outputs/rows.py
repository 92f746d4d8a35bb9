"""A table of many plain-text rows, printed as rich's ``Table(box=None)`` prints it, in time
linear in the rows.

rich measures and renders every cell several times (about 1 ms a row): a capture with a
finding on each of 100,000 connections spent over a minute there. Here rich lays out
only a handful of rows, the ones that decide the column widths (the widest cell and the
longest word of each column); every row whose cells fit those widths is then written as
rich would write it (one space of padding each side, cells left-aligned and padded), and
only a row that must wrap is rendered by rich, alone, at the same widths.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Sequence

    from rich.console import Console

#: up to this many rows rich lays the whole table out itself
RICH_ROWS = 200


def print_rows(console: Console, headers: Sequence[str], rows: Iterable[Sequence[str]], title: str = "") -> None:
    """Print ``rows`` of text cells under ``headers`` (no box, no styles in the cells), with
    ``title`` on a line of its own above them if given."""
    rows = list(rows)
    plain = getattr(console, "plain_rows", None)  # a console on a file or pipe (plain.py): rich not needed
    if plain is not None and plain(headers, rows, title):
        return
    from rich.table import Table

    if len(rows) <= RICH_ROWS or console.is_terminal or console.record:
        table = Table(*headers, box=None, title=title or None, title_justify="left")
        for r in rows:
            table.add_row(*r)
        console.print(table)
        return
    sizes = [[_width(c) for c in r] for r in rows]
    widths = _widths(console, headers, rows, sizes)
    if title:  # as rich writes a table's title: on its own line, as wide as the table
        from rich.text import Text

        with console.capture() as cap:
            console.print(Text(title.ljust(sum(widths) + 2 * len(widths)), style="table.title"))
        console.file.write(cap.get())
    _write(console, headers, widths, rows, sizes, True)


class RowWindows:
    """Rows printed a window at a time under one header, as they come: the first window
    decides the column widths (those before the last as wide as their widest cell, the
    last taking what is left of the line), and every later window is written at the same
    widths, so the windows read as one table; a cell wider than its column wraps in it."""

    def __init__(self, console: Console, headers: Sequence[str]) -> None:
        self.console, self.headers = console, tuple(headers)
        self.widths: list[int] | None = None

    def natural(self, rows: list[Sequence[str]]) -> int:
        """Columns the cells before the last need (padding included), at their widest."""
        return sum(max([_width(h), *(_width(r[i]) for r in rows)]) + 2 for i, h in enumerate(self.headers[:-1]))

    def print(self, rows: list[Sequence[str]]) -> None:
        if not rows and self.widths is not None:
            return
        sizes = [[_width(c) for c in r] for r in rows]
        first = self.widths is None
        if first:
            self.widths = _widths(self.console, self.headers, rows, sizes, keep_whole=True)
        _write(self.console, self.headers, self.widths, rows, sizes, first)


def _write(console: Console, headers: Sequence[str], widths: list[int], rows: list[Sequence[str]],
           sizes: list[list[int]], header: bool) -> None:
    """Write ``rows`` (and ``headers`` first when ``header``) at column ``widths``, as rich
    would: a row that fits plainly, one that must wrap rendered by rich alone."""
    out, write = [], console.file.write
    lines = [headers, *rows] if header else rows
    for i, cells in enumerate(lines):
        is_header = header and i == 0
        have = [_width(c) for c in cells] if is_header else sizes[i - 1 if header else i]
        if all(n <= w for n, w in zip(have, widths)) and not any("\n" in c for c in cells):
            out.append("".join(" " + c + " " * (w - n) + " " for c, n, w in zip(cells, have, widths)) + "\n")
            if is_header and not _plain_header(console):
                out.pop()
                _rich_row(console, headers, widths, cells, header=True, out=out)
        else:
            _rich_row(console, headers, widths, cells, header=is_header, out=out)
        if len(out) >= 4096:
            write("".join(out))
            out.clear()
    write("".join(out))
    console.file.flush()


def _width(text: str) -> int:
    """Terminal columns of ``text`` (as rich counts them)."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def _widths(console: Console, headers: Sequence[str], rows: list[Sequence[str]],
            sizes: list[list[int]], keep_whole: bool = False) -> list[int]:
    """The column widths rich gives the whole table, found from the rows that decide them
    (``sizes``: each cell's width); ``keep_whole``: only the last column wraps."""
    from rich.table import Table

    keep: set[int] = set()
    for col in range(len(headers)):
        keep.add(max(range(len(rows)), key=lambda i: sizes[i][col]))
        keep.add(max(range(len(rows)), key=lambda i: max(map(_width, rows[i][col].split()), default=0)))
    table = Table(*headers, box=None)
    if keep_whole:
        for column in table.columns[:-1]:
            column.no_wrap = True
    for i in sorted(keep):
        table.add_row(*rows[i])
    # rich's widths count the padding: the text of a cell has two columns less
    return [w - 2 for w in table._calculate_column_widths(console, console.options)]


def _plain_header(console: Console) -> bool:
    """The header written plainly is what rich writes (no colour system: no styles)."""
    return console.color_system is None


def _rich_row(console: Console, headers, widths, cells, header: bool, out: list) -> None:
    from rich.table import Table

    table = Table(*headers, box=None, show_header=header)
    for column, w in zip(table.columns, widths):
        column.width = w
    if not header or cells is not headers:
        table.add_row(*cells)
    with console.capture() as cap:
        console.print(table)
    out.append(cap.get())
