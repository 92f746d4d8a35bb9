"""The console on a file or pipe writes what the rich console writes there, byte for byte:
lines of text and tables (with titles, empty, wide, non-ASCII, too wide for the line),
whichever of the two writes them; plain ones without making the rich console at all."""

from __future__ import annotations

import io

from hypothesis import given, settings, strategies as st

from dcpinspect.outputs.console import make_console
from dcpinspect.outputs.plain import FILE_WIDTH, PlainConsole
from dcpinspect.outputs.rows import print_rows

cells = st.one_of(st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7e), max_size=12),
                  st.text(max_size=6),  # non-ASCII, controls, wide characters: rich's to measure
                  st.text(alphabet="ab ", min_size=40, max_size=90))  # too wide for the line together


@st.composite
def tables(draw):
    n = draw(st.integers(1, 6))
    headers = draw(st.lists(st.text(alphabet="abcdefgh /", min_size=1, max_size=10), min_size=n, max_size=n))
    rows = draw(st.lists(st.lists(cells, min_size=n, max_size=n).map(tuple), max_size=6))
    title = draw(st.sampled_from(["", "Keys", "Biggest keys", "A title longer than most of these tables are wide"]))
    return tuple(headers), rows, title


def _both(act) -> tuple[str, str, PlainConsole]:
    plain_out, rich_out = io.StringIO(), io.StringIO()
    plain = PlainConsole(plain_out)
    act(plain)
    act(make_console(rich_out))
    return plain_out.getvalue(), rich_out.getvalue(), plain


@settings(max_examples=600, deadline=None)
@given(tables(), st.one_of(st.text(max_size=30), st.text(alphabet="ab ", min_size=150, max_size=200)))
def test_tables_and_lines_are_written_as_rich_writes_them(table, line):
    headers, rows, title = table

    def act(console):
        print_rows(console, headers, rows, title=title)
        console.print(line)
        print_rows(console, headers, rows)

    plain, rich, _ = _both(act)
    assert plain == rich


def test_plain_tables_need_no_rich_console():
    rows = [("0", "key:1", "string", "12"), ("15", "a longer key name", "hash", "1,024")]
    plain, rich, console = _both(lambda c: (print_rows(c, ("db", "key", "type", "size"), rows, title="Biggest keys"),
                                            c.print("tests/x.rdb: 2 keys in 2 dbs")))
    assert plain == rich and console._rich is None
    assert plain.splitlines()[0] == "Biggest keys".ljust(len(plain.splitlines()[1]))
    wide = [("x" * (FILE_WIDTH // 2), "y" * (FILE_WIDTH // 2))]
    plain, rich, console = _both(lambda c: print_rows(c, ("a", "b"), wide))
    assert plain == rich and console._rich is not None  # wrapped: rich's to lay out
