"""Make packet-derived text safe for a terminal.

What a terminal cannot show faithfully is escaped by its Unicode category, not by a list:
controls (Cc, C0 and C1 and DEL), format characters (Cf: zero-width spaces and joiners,
bidi marks, overrides and isolates, the BOM, ...), surrogates (Cs), private use (Co),
unassigned code points (Cn) and the line and paragraph separators (Zl, Zp). Those are the
characters ``str.isprintable`` rejects, apart from the space separators (Zs), which show as
blanks and are kept with the letters, marks, digits, symbols and punctuation of every
script. The backslash is escaped too, so that an escape in the output always means one.

Escapes are Python's: ``\\n``, ``\\r``, ``\\t``, ``\\\\``, ``\\xNN`` below U+0100,
``\\uXXXX`` up to U+FFFF and ``\\UXXXXXXXX`` above, so ``codecs.decode(out,
"unicode_escape")`` gives the text back.
"""

from __future__ import annotations

import re
import unicodedata

#: Unicode general categories that are escaped (every other one is shown as it is).
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}

#: Code points whose answer is remembered, at most: the table stays bounded whatever
#: a capture holds.
_CACHE_LIMIT = 1 << 16


def escape_char(ch: str) -> str:
    """The escape of one character (whether it needs one or not)."""
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def unsafe(ch: str) -> bool:
    """Whether ``safe`` escapes the character ``ch``."""
    return ch == "\\" or (not ch.isprintable() and unicodedata.category(ch) in UNSAFE_CATEGORIES)


class _Table(dict):
    """Each code point to itself or to its escape, filled on first sight (``str.translate``'s
    table for ASCII text, the regex's answer for the rest)."""

    def __missing__(self, code: int):
        ch = chr(code)
        out = escape_char(ch) if unsafe(ch) else ch
        if len(self) < _CACHE_LIMIT:
            self[code] = out
        return out


# ASCII in full up front: str.translate takes a fast path for ASCII text with it.
_TABLE = _Table()
for _code in range(0x80):
    _TABLE[_code]  # noqa: B018 - fills the entry
del _code

_pattern = None


def _unsafe_pattern():
    """A regex matching what may need escaping outside ASCII: the unsafe code points of the
    Basic Multilingual Plane by range, and any code point above it (checked one by one). Made
    on first use (some 10 ms), since most runs never see such text."""
    global _pattern
    if _pattern is None:
        category = unicodedata.category
        bad = [code for code in range(0x80, 0x10000)
               if not chr(code).isprintable() and category(chr(code)) in UNSAFE_CATEGORIES]
        ranges: list[list[int]] = []
        for code in bad:
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
        parts = "".join(f"\\u{a:04x}-\\u{b:04x}" if a != b else f"\\u{a:04x}" for a, b in ranges)
        # two classes: sre looks a class of BMP code points up in one step, a class that
        # also spans the planes above range by range
        _pattern = re.compile(f"[\\x00-\\x1f\\x7f\\\\{parts}]|[\\U00010000-\\U0010ffff]")
    return _pattern


def _replace(m: re.Match) -> str:
    return _TABLE[ord(m.group())]


def safe(text: object) -> str:
    """Escape anything that could move the cursor, recolour, reorder or hide in the terminal."""
    s = text if isinstance(text, str) else str(text)
    if s.isprintable() and "\\" not in s:
        return s  # every character is shown as it is: the common case, in two passes of C
    if s.isascii():
        return s.translate(_TABLE)
    return _unsafe_pattern().sub(_replace, s)


# What ``scrub`` maps ASCII to: as ``safe``, but the backslash stays as it is.
_SCRUB_ASCII = {code: _TABLE[code] for code in range(0x80)}
_SCRUB_ASCII[ord("\\")] = "\\"


def _scrub_match(m: re.Match) -> str:
    ch = m.group()
    return ch if ch == "\\" else _TABLE[ord(ch)]


def scrub(text: str) -> str:
    """The console's last line of defence: escape what :func:`safe` escapes except the
    backslash and the line breaks the console itself writes. Text already made safe passes
    unchanged (its escapes are not escaped again); text that was not cannot act on the
    terminal."""
    if text.isprintable():
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.isprintable():
            lines[i] = line.translate(_SCRUB_ASCII) if line.isascii() else _unsafe_pattern().sub(_scrub_match, line)
    return "\n".join(lines)
