"""What a named input holds, told by its first bytes: the one place every command asks.

A capture (pcap, pcapng, gzip) goes to :mod:`.capture`; anything else is read as text,
a hex dump for :mod:`.hexdump`. Problems come back as one-line :class:`InputError`
messages worded the same for every command.
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO

from ..limits import TEXT_INPUT, LimitError
from .capture import GZIP_MAGIC, looks_like_capture

CAPTURE, TEXT = "capture", "text"


class InputError(Exception):
    """An input that cannot be used at all: its message is the one line the user sees."""


def _problem(path: str | os.PathLike, exc: OSError) -> InputError:
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{os.fspath(path)}: no such file")
    if isinstance(exc, IsADirectoryError):
        return InputError(f"{os.fspath(path)}: is a directory, not a file")
    if isinstance(exc, PermissionError):
        return InputError(f"{os.fspath(path)}: permission denied")
    return InputError(f"{os.fspath(path)}: cannot read ({exc.strerror or exc})")


def input_kind(path: str | os.PathLike) -> str:
    """:data:`CAPTURE` or :data:`TEXT`, by the file's first bytes."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise _problem(path, exc) from None
    return CAPTURE if looks_like_capture(head) else TEXT


def gzipped(path: str | os.PathLike) -> bool:
    """Whether the file is gzip-compressed (False when it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == GZIP_MAGIC
    except OSError:
        return False


def read_text(path: str | os.PathLike | None, stdin: BinaryIO | None = None) -> str:
    """A text input, from a file or (``None`` or ``-``) from ``stdin``, as UTF-8 with
    undecodable bytes replaced; at most :data:`dcpinspect.limits.TEXT_INPUT` bytes."""
    try:
        cap = TEXT_INPUT.value()
    except LimitError as exc:
        raise InputError(str(exc)) from None
    try:
        if path is None or os.fspath(path) == "-":
            if stdin is None:
                raise InputError("no input: give a file or pipe a hex dump on stdin")
            data = _read_upto(stdin, cap + 1)
        else:
            with open(path, "rb") as fh:
                data = _read_upto(fh, cap + 1)
    except OSError as exc:
        raise _problem("stdin" if path is None else path, exc) from None
    if len(data) > cap:
        where = "stdin" if path is None or os.fspath(path) == "-" else os.fspath(path)
        raise InputError(f"{where}: more than {cap} bytes of text ({TEXT_INPUT.env} raises the cap)")
    return data.decode("utf-8", "replace")


def _read_upto(stream: BinaryIO, limit: int, chunk: int = 1 << 20) -> bytes:
    """At most ``limit`` bytes, read a chunk at a time: memory follows what is there, not
    the cap (``read(limit)`` would reserve the whole cap up front)."""
    parts, got = [], 0
    while got < limit:
        piece = stream.read(min(chunk, limit - got))
        if not piece:
            break
        parts.append(piece)
        got += len(piece)
    return b"".join(parts)


def stdin_binary() -> BinaryIO | None:
    """Standard input's byte stream, or None when there is none (closed, or not given)."""
    stream = sys.stdin
    if stream is None or stream.closed:
        return None
    return getattr(stream, "buffer", None)
