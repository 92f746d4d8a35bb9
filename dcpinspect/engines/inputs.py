"""The commands' inputs, as the engine opens them: a named file (a capture, or a hex dump
given as a file; ``-``, ``/dev/stdin``, a FIFO or a process substitution alike, each opened
once) or a dump pasted on stdin, and what each holds; ``engines/reading.py`` reads their
items.

What cannot be used at all is an :class:`Unusable`, whose message is the one line the
user sees (exit status 2).
"""

from __future__ import annotations

import os
import sys
import zlib

from ..families import Family, families
from ..sources.inputs import (CAPTURE, GZIP_MAGIC, TEXT, Input, InputError, is_stdin, kind_of_head, open_input,
                              read_text, stdin_binary)

__all__ = ["Unusable", "Truncated", "snapshot_family", "CAPTURE", "TEXT", "Input", "opened", "text_of", "kind_of",
           "pure"]


from . import Unusable  # noqa: E402  (here too, where the commands' inputs are read)


class Truncated(Exception):
    """The input ended inside a frame: everything before it was printed; the message is the
    one line on stderr (exit status 3)."""


def opened(path) -> Input:
    """A named input (``-`` for stdin) opened once; an :class:`Input` is itself."""
    if isinstance(path, Input):
        return path
    try:
        return open_input(path)
    except InputError as exc:
        raise Unusable(str(exc)) from None


def text_of(path) -> str:
    """A text input: the named file (or an opened :class:`Input`), or (none or ``-``) what
    is pasted on stdin, with a prompt when stdin is a terminal."""
    stdin = None
    if not isinstance(path, Input) and is_stdin(path):
        stdin = stdin_binary()
        if stdin is not None and sys.stdin.isatty():
            from ..outputs.console import make_console

            make_console(stderr=True).print("Paste a hex dump, then Ctrl-D:")
    try:
        return read_text(path, stdin)
    except InputError as exc:
        raise Unusable(str(exc)) from None


def kind_of(inp: Input) -> str:
    """What an opened input holds (:data:`CAPTURE` or :data:`TEXT`), by its first bytes; a
    family's snapshot file is :class:`Unusable`, with the command that reads it."""
    family = snapshot_family(inp)
    if family is not None:
        raise Unusable(f"{inp.name}: a snapshot file ({family.name}), not a capture or a hex dump: "
                       f"read it with `dcpinspect rdb {inp.name}`")
    try:
        return kind_of_head(inp)
    except InputError as exc:
        raise Unusable(str(exc)) from None


#: bytes of an input a family is shown to tell its snapshot files
SNAPSHOT_HEAD = 16


def snapshot_family(inp: Input) -> Family | None:
    """The family whose snapshot file the opened input is, by its first bytes (inflated,
    when they are gzip); None when no family says so."""
    readers = [f for f in families() if f.snapshots is not None]
    if not readers:
        return None
    head = inp.peek(64)
    if head[:2] == GZIP_MAGIC:
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, SNAPSHOT_HEAD)
        except zlib.error:
            return None
    return next((f for f in readers if f.snapshots.is_snapshot(head[:SNAPSHOT_HEAD])), None)


def pure() -> bool:
    """No C shortcuts (``DCPINSPECT_PURE``): the reference the tests compare with."""
    return bool(os.environ.get("DCPINSPECT_PURE"))
