"""Snapshot files: a file goes to the protocol family whose snapshot it is (told by its
first bytes), which reads it as a stream and prints it."""

from __future__ import annotations

import gzip
from pathlib import Path

from ..families import Family, families
from ..findings import LEVELS
from ..outputs.shown import Shown
from ..sources.inputs import InputError, _problem, gzipped
from ..framing.framer import Skipped
from ..sources.inputs import CAPTURE, input_kind, read_text
from .inputs import SNAPSHOT_HEAD, Unusable



def snapshot_files(files: list[Path], fmt: str, key: str | None = None, offset: int | None = None,
                   shown: Shown | None = None, fail_on: str = "error") -> bool:
    """Print each file (or set of files read as one snapshot) as its family prints its
    snapshots (``fmt``: "table", "jsonl" or "summary"; or the keys named by ``key`` /
    covering ``offset``); returns whether a finding of ``fail_on``'s severity or worse was
    made. A file no family can read is :class:`Unusable`."""
    shown = shown or Shown()
    worst = -1
    for item in _gathered(files):
        family = _family_of(item[0] if isinstance(item, tuple) else item)
        try:
            worst = max(worst, family.snapshots(item, fmt, key, offset, shown))
        except InputError as exc:
            raise Unusable(str(exc)) from None
    return worst >= LEVELS[fail_on]


def _gathered(files: list[Path]) -> list:
    """The files given, with those a family reads together as one snapshot (a set of files
    written at once) made one tuple."""
    items: list = list(files)
    for family in families():
        if family.snapshot_sets is not None:
            items = family.snapshot_sets(items)
    return items


def _family_of(path: Path) -> Family:
    """The family whose snapshot ``path`` is; if none says so, a capture or hex dump is
    :class:`Unusable` with the commands that read it, and anything else goes to the first
    family that has snapshot files, which says what is wrong with it."""
    readers = [f for f in families() if f.snapshots is not None]
    if not readers:
        raise Unusable("no protocol family reads snapshot files")
    try:
        with (gzip.open(path, "rb") if gzipped(path) else open(path, "rb")) as fh:
            head = fh.read(SNAPSHOT_HEAD)
    except OSError as exc:
        raise Unusable(str(_problem(path, exc))) from None
    except EOFError:
        head = b""
    family = next((f for f in readers if f.is_snapshot(head)), None)
    if family is not None:
        return family
    if _readable_as_frames(path, head):
        raise Unusable(f"{path}: a capture or hex dump, not a snapshot file: read it with "
                       f"`dcpinspect decode {path}` (or validate, stats)")
    return readers[0]


def _readable_as_frames(path: Path, head: bytes) -> bool:
    """Whether ``path`` is a capture, or text (no NUL in its first bytes) that reads as a
    hex dump of frames."""
    try:
        if input_kind(path) == CAPTURE:
            return True
        if b"\0" in head:
            return False
        text = read_text(path)
    except InputError:
        return False
    from .hexinput import decode_hex_text

    return any(not isinstance(i, Skipped) for i in decode_hex_text(text[:1 << 16], None).items)
