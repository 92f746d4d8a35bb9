"""What a named input holds, told by its first bytes: the one place every command asks.

A capture (pcap, pcapng, gzip) goes to :mod:`.capture`; anything else is read as text,
a hex dump for :mod:`.hexdump`. Problems come back as one-line :class:`InputError`
messages worded the same for every command.
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO

from .capture import looks_like_capture

CAPTURE, TEXT = "capture", "text"

#: the most text read from a file or from standard input (a hex dump of 256 MiB holds
#: about 80 MiB of bytes); raise with DCPINSPECT_MAX_TEXT (bytes)
MAX_TEXT_INPUT = int(os.environ.get("DCPINSPECT_MAX_TEXT", 256 * 1024 * 1024))


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


def read_text(path: str | os.PathLike | None, stdin: BinaryIO | None = None) -> str:
    """A text input, from a file or (``None`` or ``-``) from ``stdin``, as UTF-8 with
    undecodable bytes replaced; at most :data:`MAX_TEXT_INPUT` bytes."""
    try:
        if path is None or os.fspath(path) == "-":
            if stdin is None:
                raise InputError("no input: give a file or pipe a hex dump on stdin")
            data = _read_upto(stdin, MAX_TEXT_INPUT + 1)
        else:
            with open(path, "rb") as fh:
                data = _read_upto(fh, MAX_TEXT_INPUT + 1)
    except OSError as exc:
        raise _problem("stdin" if path is None else path, exc) from None
    if len(data) > MAX_TEXT_INPUT:
        where = "stdin" if path is None or os.fspath(path) == "-" else os.fspath(path)
        raise InputError(f"{where}: more than {MAX_TEXT_INPUT} bytes of text "
                         f"(DCPINSPECT_MAX_TEXT raises the cap)")
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
