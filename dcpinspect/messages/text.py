"""Bytes from a capture or a file as text: what every family shows of a key or a name."""

from __future__ import annotations


def key_text(raw: bytes) -> str:
    """The bytes as UTF-8, each byte that is not part of a valid character as ``\\xNN``
    (the terminal's escaping of control characters is the outputs', ``outputs/escape.py``)."""
    return raw.decode("utf-8", "backslashreplace")
