"""Snapshot files: a file goes to the protocol family whose snapshot it is (told by its
first bytes), which reads it as a stream and prints it."""

from __future__ import annotations

import gzip
from pathlib import Path

from ..families import Family, families
from ..findings import LEVELS
from ..outputs.shown import Shown
from ..sources.inputs import InputError, _problem, gzipped
from .inputs import Unusable

#: bytes a family is shown to tell its snapshot files
HEAD = 16


def snapshot_files(files: list[Path], fmt: str, key: str | None = None, offset: int | None = None,
                   shown: Shown | None = None, fail_on: str = "error", select: dict | None = None,
                   reports: dict | None = None) -> bool:
    """Print each file (or set of files read as one snapshot) as its family prints its
    snapshots (``fmt``: "table", "jsonl", "summary", or "csv" for reports; or the keys
    named by ``key`` / covering ``offset``; or the ``reports`` asked, a dict of their names
    and options the family reads), of its keys those ``select`` (the key selection's
    options by name, which the family reads) chooses; returns whether a finding of
    ``fail_on``'s severity or worse was made. A file no family can read is
    :class:`Unusable`."""
    shown = shown or Shown()
    select = {k: v for k, v in (select or {}).items() if v not in (None, (), [], False)}
    worst = -1
    for item in _gathered(files):
        family = _family_of(item[0] if isinstance(item, tuple) else item)
        extra = {"select": select} if select else {}
        if reports:
            extra["reports"] = reports
        try:
            worst = max(worst, family.snapshots(item, fmt, key, offset, shown, **extra))
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
    """The family whose snapshot ``path`` is; if none says so, the first that has snapshot
    files, which says what is wrong with it."""
    readers = [f for f in families() if f.snapshots is not None]
    if not readers:
        raise Unusable("no protocol family reads snapshot files")
    try:
        with (gzip.open(path, "rb") if gzipped(path) else open(path, "rb")) as fh:
            head = fh.read(HEAD)
    except OSError as exc:
        raise Unusable(str(_problem(path, exc))) from None
    except EOFError:
        head = b""
    return next((f for f in readers if f.is_snapshot(head)), readers[0])
