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

from typing import Iterable, Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

#: up to this many rows rich lays the whole table out itself
RICH_ROWS = 200


def print_rows(console: Console, headers: Sequence[str], rows: Iterable[Sequence[str]], title: str = "") -> None:
    """Print ``rows`` of text cells under ``headers`` (no box, no styles in the cells), with
    ``title`` on a line of its own above them if given."""
    rows = list(rows)
    if len(rows) <= RICH_ROWS or console.is_terminal or console.record:
        table = Table(*headers, box=None, title=title or None, title_justify="left")
        for r in rows:
            table.add_row(*r)
        console.print(table)
        return
    sizes = [[_width(c) for c in r] for r in rows]
    widths = _widths(console, headers, rows, sizes)
    out, write = [], console.file.write
    if title:  # as rich writes a table's title: on its own line, as wide as the table
        with console.capture() as cap:
            console.print(Text(title.ljust(sum(widths) + 2 * len(widths)), style="table.title"))
        out.append(cap.get())
    lines = [headers, *rows]
    for i, cells in enumerate(lines):
        have = [_width(c) for c in cells] if i == 0 else sizes[i - 1]
        if all(n <= w for n, w in zip(have, widths)) and not any("\n" in c for c in cells):
            out.append("".join(" " + c + " " * (w - n) + " " for c, n, w in zip(cells, have, widths)) + "\n")
            if i == 0 and not _plain_header(console):
                out.pop()
                _rich_row(console, headers, widths, cells, header=True, out=out)
        else:
            _rich_row(console, headers, widths, cells, header=i == 0, out=out)
        if len(out) >= 4096:
            write("".join(out))
            out.clear()
    write("".join(out))
    console.file.flush()


def _width(text: str) -> int:
    """Terminal columns of ``text`` (as rich counts them)."""
    return len(text) if text.isascii() else cell_len(text)


def _widths(console: Console, headers: Sequence[str], rows: list[Sequence[str]],
            sizes: list[list[int]]) -> list[int]:
    """The column widths rich gives the whole table, found from the rows that decide them
    (``sizes``: each cell's width)."""
    keep: set[int] = set()
    for col in range(len(headers)):
        keep.add(max(range(len(rows)), key=lambda i: sizes[i][col]))
        keep.add(max(range(len(rows)), key=lambda i: max(map(_width, rows[i][col].split()), default=0)))
    table = Table(*headers, box=None)
    for i in sorted(keep):
        table.add_row(*rows[i])
    # rich's widths count the padding: the text of a cell has two columns less
    return [w - 2 for w in table._calculate_column_widths(console, console.options)]


def _plain_header(console: Console) -> bool:
    """The header written plainly is what rich writes (no colour system: no styles)."""
    return console.color_system is None


def _rich_row(console: Console, headers, widths, cells, header: bool, out: list) -> None:
    table = Table(*headers, box=None, show_header=header)
    for column, w in zip(table.columns, widths):
        column.width = w
    if not header or cells is not headers:
        table.add_row(*cells)
    with console.capture() as cap:
        console.print(table)
    out.append(cap.get())
