"""The output console: whatever reaches it, nothing reaches the terminal raw."""

from __future__ import annotations

import io
import unicodedata

from hypothesis import given, strategies as st
from rich.table import Table
from rich.text import Text

from dcpinspect.outputs.console import OutputConsole, make_console
from dcpinspect.outputs.escape import UNSAFE_CATEGORIES, safe, scrub


def _raw(out: str) -> list[str]:
    """Characters a terminal would act on or hide (the console's own line breaks aside)."""
    return [ch for ch in out if ch != "\n" and unicodedata.category(ch) in UNSAFE_CATEGORIES]


def _printed(*renderables) -> str:
    buf = io.StringIO()
    console = make_console(buf)
    assert isinstance(console, OutputConsole)
    for r in renderables:
        console.print(r)
    return buf.getvalue()


@given(st.text())
def test_unescaped_text_is_scrubbed_on_the_way_out(text):
    table = Table("field", "value")
    table.add_row(text, text)
    out = _printed(text, Text(text), table)
    assert _raw(out) == []


@given(st.text())
def test_text_made_safe_passes_unchanged(text):
    assert scrub(safe(text)) == safe(text)  # escapes are not escaped again


def test_known_attacks_are_shown_as_escapes():
    out = _printed("a\x1b]0;title\x07b", Text("c\u202ed\u200be"), "f\x9bg")
    assert "\x1b" not in out and "\u202e" not in out and "\u200b" not in out and "\x9b" not in out
    assert "\\x1b]0;title" in out and "\\u202e" in out and "\\u200b" in out and "\\x9b" in out
