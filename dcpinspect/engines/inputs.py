"""The commands' inputs, as the engine reads them: a named file (a capture, or a hex dump
given as a file) or a dump pasted on stdin, turned into text, items or sink payloads.

What cannot be used at all is an :class:`Unusable`, whose message is the one line the
user sees (exit status 2).
"""

from __future__ import annotations

import gzip
import os
import sys
from pathlib import Path
from typing import Callable, Iterator

from ..families import VALUES, Family, families
from ..framing.framer import Skipped
from ..sessions.captured import Captured, DumpFile, Note
from ..sources.capture import CaptureError, read_records
from ..sources.inputs import CAPTURE, TEXT, InputError, gzipped, input_kind, read_text, stdin_binary
from .capture import concluded, merge_correlators
from .files import CONCLUDED_KEY, keyed_items
from .hexinput import decode_hex_text
from .parallel import Partitioned, WorkerCrash, run_sink

__all__ = ["Unusable", "Truncated", "CAPTURE", "TEXT", "text_of", "kind_of", "dump_items", "items_of", "keyed", "sink_run",
           "capture_unusable", "tap", "pure"]


class Unusable(Exception):
    """An input or option a command cannot use: its message is the one line on stderr."""


class Truncated(Exception):
    """The input ended inside a frame: everything before it was printed; the message is the
    one line on stderr (exit status 3)."""


def text_of(path: Path | None) -> str:
    """A text input: the named file, or (none or ``-``) what is pasted on stdin, with a
    prompt when stdin is a terminal."""
    stdin = None
    if path is None or str(path) == "-":
        stdin = stdin_binary()
        if stdin is not None and sys.stdin.isatty():
            from ..outputs.console import make_console

            make_console(stderr=True).print("Paste a hex dump, then Ctrl-D:")
    try:
        return read_text(path, stdin)
    except InputError as exc:
        raise Unusable(str(exc)) from None


def kind_of(path: Path) -> str:
    """What a named input holds (:data:`CAPTURE` or :data:`TEXT`); a family's snapshot file
    is :class:`Unusable`, with the command that reads it."""
    family = snapshot_family(path)
    if family is not None:
        raise Unusable(f"{path}: a snapshot file ({family.name}), not a capture or a hex dump: "
                       f"read it with `dcpinspect rdb {path}`")
    try:
        return input_kind(path)
    except InputError as exc:
        raise Unusable(str(exc)) from None


#: bytes of a file a family is shown to tell its snapshot files
SNAPSHOT_HEAD = 16


def snapshot_family(path: Path) -> Family | None:
    """The family whose snapshot file ``path`` is, by its first bytes (inflated, when it is
    gzip); None when no family says so, or when it cannot be read (the caller says why)."""
    readers = [f for f in families() if f.snapshots is not None and f.is_snapshot is not None]
    if not readers or str(path) == "-":
        return None
    try:
        with (gzip.open(path, "rb") if gzipped(path) else open(path, "rb")) as fh:
            head = fh.read(SNAPSHOT_HEAD)
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    return next((f for f in readers if f.is_snapshot(head)), None)


def capture_unusable(path: Path, exc: Exception) -> Unusable:
    """A capture file that cannot be read, or whose worker failed, said with its name."""
    if isinstance(exc, WorkerCrash):
        return Unusable(f"{path}: a worker process failed: {exc}")
    text = str(exc)
    return Unusable(text if str(path) in text else f"{path}: {text}")


def dump_items(path: Path, collections: bool | None) -> Iterator[tuple[int, Captured]]:
    """A hex dump given as a file, as ``(number, item)``: its frames, numbered in order, of
    one connection named by the file (:class:`DumpFile`); a dump has no times."""
    text = text_of(path)
    result = decode_hex_text(text, collections)
    if not result.dump.data:
        raise Unusable(f"{path}: " + ("empty file" if not text.strip()
                                      else "neither a capture (pcap, pcapng, gzip) nor a hex dump"))
    source = DumpFile(str(path))
    frames = (i for i in result.items if not isinstance(i, Skipped))
    for n, msg in enumerate(frames, 1):
        yield n, Captured(None, source, "", msg, n)


def items_of(path: Path, ports: set[int], collections: bool | None, progress=None) -> Iterator[Captured | Note]:
    """Captured frames and notes of a capture file or of a hex dump given as a file, decoded
    without field rows; ``progress`` (if any) told of each, and of the reader's position."""
    if kind_of(path) == TEXT:
        yield from (item for _, item in dump_items(path, collections))
        return
    try:
        pairs = keyed(path, dict(ports=ports, collections=collections, detail=VALUES), progress)
        if progress is not None:
            pairs = tap(pairs, progress)
        for _, item in pairs:
            yield item
    except CaptureError as exc:
        raise capture_unusable(path, exc) from None


def keyed(path: Path, kw: dict, progress=None) -> Iterator[tuple[int, Captured | Note]]:
    """``(key, item)`` pairs of a whole capture file in this process; the progress bar, if
    any, follows the reader's position."""
    records = read_records(path)
    if progress is not None:
        progress.where = records.tell
        records.on_read(lambda: progress(0))  # moves on through stretches that yield nothing
    return keyed_items(records, **kw)


def tap(keyed: Iterator[tuple[int, Captured | Note]], progress: Callable) -> Iterator[tuple[int, Captured | Note]]:
    """The same pairs, each told to ``progress`` as it passes."""
    for pair in keyed:
        progress(pair[1])
        yield pair


def sink_run(path: Path, jobs: int, recipe: Callable, kw: dict, progress=None):
    """A capture file's sink payloads, over ``jobs`` worker processes or in this one, and a
    function giving every sink's result once the payloads are read."""
    if jobs > 1:
        parts = Partitioned(path, jobs, recipe, progress=progress, **kw)
        last: list = []  # the result of the sink that takes what the merged correlators find

        def payloads() -> Iterator:
            yield from parts
            sink = recipe()
            yield from run_sink(sink, ((CONCLUDED_KEY, note) for note in
                                       concluded(merge_correlators(parts.correlated))))
            last.append(sink.result())

        return payloads(), lambda: parts.results + last
    pairs = keyed(path, kw, progress)
    if progress is not None:
        pairs = tap(pairs, progress)
    sink = recipe()
    return run_sink(sink, pairs), lambda: [sink.result()]


def pure() -> bool:
    """No C shortcuts (``DCPINSPECT_PURE``): the reference the tests compare with."""
    return bool(os.environ.get("DCPINSPECT_PURE"))
