"""``outputs.escape.safe`` escapes by Unicode category, not by a list.

Every code point of the categories a terminal cannot show faithfully (Cc, Cf, Cs, Co, Cn,
Zl, Zp) comes out as its Python escape and decodes back to itself; every other code point
(letters, marks, digits, punctuation, symbols and spaces of every script) is kept as it is,
apart from the backslash, which is escaped. Packet text reaches the terminal through the
commands with rich markup off: ``[bold]`` in a key is printed, not obeyed.
"""

from __future__ import annotations

import codecs
import sys
import unicodedata

import pytest

from dcpgen import Dcp
from frames import invoke_cli
from dcpinspect.families.mcbp.messages import dcp as L
from dcpinspect.families.mcbp.messages.build import build_frame
from dcpinspect.outputs import escape
from dcpinspect.outputs.escape import UNSAFE_CATEGORIES, safe

ALL = [chr(c) for c in range(sys.maxunicode + 1)]
UNSAFE = [ch for ch in ALL if unicodedata.category(ch) in UNSAFE_CATEGORIES]
KEPT = [ch for ch in ALL if unicodedata.category(ch) not in UNSAFE_CATEGORIES and ch != "\\"]


def expected(ch: str) -> str:
    code = ord(ch)
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    if ch in named:
        return named[ch]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def test_the_categories_are_those_a_terminal_cannot_show():
    assert UNSAFE_CATEGORIES == {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
    assert {unicodedata.category(ch) for ch in UNSAFE} == UNSAFE_CATEGORIES


@pytest.mark.parametrize("category", sorted(UNSAFE_CATEGORIES))
def test_every_unsafe_code_point_is_escaped_and_round_trips(category):
    chars = [ch for ch in UNSAFE if unicodedata.category(ch) == category]
    assert chars
    # each alone, between letters, and all of them in one string
    for ch in chars[:: max(1, len(chars) // 2000)]:
        assert safe(ch) == expected(ch), hex(ord(ch))
        assert safe(f"a{ch}b") == f"a{expected(ch)}b", hex(ord(ch))
    text = "x".join(chars)
    out = safe(text)
    assert out == "x".join(map(expected, chars))
    assert out.isascii() and out.isprintable()
    assert codecs.decode(out, "unicode_escape") == text


def test_named_ones():
    for ch in "\u200b\u200c\u200d\u2060\u061c\u200e\u200f\u202e\u2066\u2069\ufeff\u00ad\U000e0001":
        assert unicodedata.category(ch) == "Cf"
        assert safe(f"key{ch}") == f"key{expected(ch)}"
    assert safe("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m"
    assert safe("\x9b2J") == "\\x9b2J"  # C1 CSI
    assert safe("line\u2028next\u2029") == "line\\u2028next\\u2029"
    assert safe("\ud83d") == "\\ud83d"  # a lone surrogate
    assert safe("\ue000\U000f0000") == "\\ue000\\U000f0000"  # private use
    assert safe("\U0010ffff\u0378") == "\\U0010ffff\\u0378"  # unassigned


def test_every_other_code_point_is_kept():
    text = "".join(KEPT)
    assert safe(text) == text
    for sample in ("é", "日本", "🎉", "ключ", "עברית", "العربية", "e\u0301", "\u00a0\u3000", "👩‍💻"[:1]):
        assert safe(sample) == sample


def test_backslash_stays_escaped():
    assert safe("a\\b") == "a\\\\b"
    assert safe("\\u200b") == "\\\\u200b"  # text that looks like an escape is not one
    assert codecs.decode(safe("a\\b\u200b"), "unicode_escape") == "a\\b\u200b"


def test_plain_ascii_is_returned_as_it_is():
    for text in ("", "DCP_MUTATION", "bucketstream vb[100-105]", "".join(map(chr, range(0x20, 0x7F))).replace("\\", "")):
        assert safe(text) is text
    assert safe(12) == "12"


def test_remembered_answers_are_bounded():
    assert len(escape._TABLE) <= escape._CACHE_LIMIT


# -- through the commands --------------------------------------------------------------------

KEY = "[bold red]k\u200bey[/bold red]\u202e\U000e0001"
SHOWN = "[bold red]k\\u200bey[/bold red]\\u202e\\U000e0001"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    d = Dcp(collections=False).handshake()
    p = d.stream(3)
    p.marker(1, 1)
    p.mutation(key=KEY.encode(), value=b'"[blink]v[/blink] caf\xc3\xa9"')
    where = tmp_path_factory.mktemp("hostile")
    (where / "h.hex").write_text(d.bytes().hex())
    return d.pcap(where / "h.pcap"), where / "h.hex"


@pytest.mark.parametrize("args", [("hex", 1), ("decode", 0), ("decode", 0, "-f", "summary")],
                         ids=["hex", "decode", "summary"])
def test_packet_text_is_escaped_and_not_markup(hostile, args):
    command, which, *more = args
    result = invoke_cli(command, *more, str(hostile[which]))
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    for ch in "\u200b\u202e\U000e0001":
        assert ch not in out
    if command == "decode" and not more or command == "hex":
        assert SHOWN in out
        assert '"[blink]v[/blink] café"' in out


def test_validate_and_stats_print_nothing_raw(hostile):
    for args in (("validate",), ("stats",)):
        result = invoke_cli(*args, str(hostile[0]))
        assert result.returncode in (0, 1), result.stderr
        out = result.stdout.decode()
        assert not [ch for ch in out if not ch.isprintable() and ch not in "\n"
                    and unicodedata.category(ch) in UNSAFE_CATEGORIES]
