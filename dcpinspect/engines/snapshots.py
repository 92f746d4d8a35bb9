"""Snapshot files: a file goes to the protocol family whose snapshot it is (told by its
first bytes, peeked from the one handle it is read through), which reads it as a stream and
prints it."""

from __future__ import annotations

import os
import zlib

from ..families import Family, SentData, families
from ..findings import LEVELS
from ..outputs.shown import Shown
from ..sources.inputs import Contents, Input, InputError, open_input
from . import Unusable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

#: bytes a family is shown to tell its snapshot files
HEAD = 16


def snapshot_files(files: list[Path], fmt: str, key: str | None = None, offset: int | None = None,
                   shown: Shown | None = None, fail_on: str = "error", select: dict | None = None,
                   values: bool = False, digest: bool = False, reports: dict | None = None, jobs: int = 0) -> bool:
    """Print each file (or set of files read as one snapshot) as its family prints its
    snapshots (``fmt``: "table", "jsonl" or "summary"; or the keys named by ``key`` /
    covering ``offset``), of its keys those ``select`` (the key selection's options by
    name, which the family reads) chooses, with each key's value (``values``) and digests
    (``digest``) where asked, or the memory ``reports`` asked (a dict of their names and
    options the family reads; ``fmt`` "csv" too); returns whether a finding of ``fail_on``'s severity or worse
    was made. A file no family can read is :class:`Unusable`. A file given alone (``-``, a
    pipe, a FIFO too) is opened once: its family is told from the first bytes of that one
    handle (inflated when gzip), which the family then reads from the start."""
    shown = shown or Shown()
    select = {k: v for k, v in (select or {}).items() if v not in (None, (), [], False)}
    worst = -1
    for item in _gathered(files):
        extra = {k: v for k, v in (("select", select), ("values", values), ("digest", digest),
                                   ("reports", reports), ("jobs", jobs)) if v}
        try:
            if reports and not isinstance(item, tuple) and _sent(item):
                worst = max(worst, _sent_reports(item, fmt, extra))
                continue
            if isinstance(item, tuple):
                worst = max(worst, _family_of(_head_of(item[0])).snapshots.show(item, fmt, key, offset, shown, **extra))
                continue
            with Contents(_opened(item)) as contents:
                head = _peek(contents)
                if not any(f.snapshots.is_snapshot(head) for f in families() if f.snapshots is not None) \
                        and _frames_instead(contents, head):
                    again = "-" if contents.name == "stdin" else contents.name
                    hint = "" if again == "-" else "; --report reads the data a full sync in a capture file sends"
                    raise Unusable(f"{contents.name}: a capture or hex dump, not a snapshot file: read it with "
                                   f"`dcpinspect decode {again}` (or validate, stats{hint})")
                worst = max(worst, _family_of(head).snapshots.show(contents, fmt, key, offset, shown, **extra))
        except InputError as exc:
            raise Unusable(str(exc)) from None
    return worst >= LEVELS[fail_on]


def _sent(path) -> bool:
    """Whether ``path`` names a capture file (or ``capture#N``): the data sets sent whole in
    it are what is read."""
    if not isinstance(path, (str, os.PathLike)) or os.fspath(path) == "-":
        return False
    from .sent import chosen  # (the capture engines': not imported by a snapshot file's run)

    path, which = chosen(path)
    if which is not None:
        return True
    from ..sources.capture import looks_like_capture  # only for a file named so

    try:
        return looks_like_capture(_head_of(path)[:4])
    except InputError:
        return False


def _sent_reports(path, fmt: str, extra: dict) -> int:
    """The reports of the data set a full sync sends in the capture ``path`` (``#N``: the
    N-th), by the family that reads it as it reads a snapshot; notes on stderr."""
    import sys

    from ..outputs.escape import safe
    from .sent import chosen, sent_data

    path, which = chosen(path)
    readers = [f for f in families() if f.snapshots is not None and f.snapshots.record_data is not None]
    if not readers:
        raise Unusable(f"{path}: no protocol family reports on data sent in captures")
    family, notes = readers[0], []
    name = f"{path}#{which}" if which else str(path)
    worst = family.snapshots.show(SentData(name, sent_data(path, which, [family.snapshots.record_data], notes)),
                                  fmt, None, None, Shown(), **extra)
    for note in notes:
        sys.stderr.write(safe(f"note: {note}") + "\n")
    return worst


def _gathered(files: list[Path]) -> list:
    """The files given, with those a family reads together as one snapshot (a set of files
    written at once) made one tuple."""
    items: list = list(files)
    for family in families():
        if family.snapshots is not None and family.snapshots.sets is not None:
            items = family.snapshots.sets(items)
    return items


def _peek(contents: Contents) -> bytes:
    try:
        return contents.peek(HEAD)
    except (OSError, EOFError, zlib.error) as exc:  # gzip that is corrupt or cut before any data
        raise InputError(f"{contents.name}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None


def _frames_instead(contents: Contents, head: bytes) -> bool:
    """Whether what no family takes for a snapshot is a capture, or text (no NUL in its
    first bytes) that reads as a hex dump of frames: what the other commands read."""
    from ..sources.capture import looks_like_capture  # only for a file no family reads

    if looks_like_capture(head[:4]):
        return True
    try:
        text = contents.peek(1 << 16)
    except (OSError, EOFError):
        return False
    if b"\0" in text:
        return False
    from ..framing.framer import Skipped
    from .hexinput import decode_hex_text

    return any(not isinstance(i, Skipped) for i in decode_hex_text(text.decode("utf-8", "replace"), None).items)


def _opened(path) -> Input:
    """A named input opened once (an :class:`Input` is itself); InputError when it cannot be."""
    return path if isinstance(path, Input) else open_input(path)


def _head_of(path: Path) -> bytes:
    with Contents(_opened(path)) as contents:
        return _peek(contents)


def _family_of(head: bytes) -> Family:
    """The family whose snapshot starts with ``head``; if none says so, the first that has
    snapshot files, which says what is wrong with it."""
    readers = [f for f in families() if f.snapshots is not None]
    if not readers:
        raise Unusable("no protocol family reads snapshot files")
    return next((f for f in readers if f.snapshots.is_snapshot(head)), readers[0])
