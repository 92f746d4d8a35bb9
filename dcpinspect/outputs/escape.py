"""Make packet-derived text safe for a terminal."""

from __future__ import annotations

import re

# C0/C1 controls, DEL, bidi overrides and isolates, line/paragraph separators.
_UNSAFE = re.compile("[\\\\\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def _replace(m: re.Match) -> str:
    ch = m.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: object) -> str:
    """Escape anything that could move the cursor, recolour, or reorder the terminal."""
    s = text if isinstance(text, str) else str(text)
    return _UNSAFE.sub(_replace, s)
