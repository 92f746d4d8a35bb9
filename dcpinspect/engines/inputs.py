"""The commands' inputs, as the engine reads them: a named file (a capture, or a hex dump
given as a file; ``-``, ``/dev/stdin``, a FIFO or a process substitution alike, each opened
once) or a dump pasted on stdin, turned into text, items or sink payloads.

What cannot be used at all is an :class:`Unusable`, whose message is the one line the
user sees (exit status 2).
"""

from __future__ import annotations

import os
import sys
import zlib
from pathlib import Path
from typing import Callable, Iterator

from ..families import VALUES, Family, families
from ..framing.framer import Skipped
from ..sessions.captured import Captured, DumpFile, Note
from ..sources.capture import GZIP_MAGIC, CaptureError, read_records
from ..sources.inputs import (CAPTURE, TEXT, Input, InputError, is_stdin, kind_of_head, open_input, read_text,
                              stdin_binary)
from .capture import concluded, merge_correlators
from .files import CONCLUDED_KEY, keyed_items
from .hexinput import decode_hex_text
from .options import CaptureOptions
from .parallel import Partitioned, WorkerCrash, run_sink, worker_count

__all__ = ["Unusable", "Truncated", "snapshot_family", "CAPTURE", "TEXT", "Input", "opened", "text_of", "kind_of", "dump_items", "items_of", "keyed",
           "jobs_for", "sink_run", "capture_unusable", "tap", "pure"]


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


def capture_unusable(path, exc: Exception) -> Unusable:
    """A capture file that cannot be read, or whose worker failed, said with its name."""
    name = path.name if isinstance(path, Input) else str(path)
    if isinstance(exc, WorkerCrash):
        return Unusable(f"{name}: a worker process failed: {exc}")
    text = str(exc)
    return Unusable(text if name in text else f"{name}: {text}")


def dump_items(inp: Input, collections: bool | None) -> Iterator[tuple[int, Captured]]:
    """A hex dump given as a file, as ``(number, item)``: its frames, numbered in order, of
    one connection named by the file (:class:`DumpFile`); a dump has no times."""
    inp = opened(inp)
    text = text_of(inp)
    result = decode_hex_text(text, collections)
    if not result.dump.data:
        raise Unusable(f"{inp.name}: " + ("empty file" if not text.strip()
                                          else "neither a capture (pcap, pcapng, gzip) nor a hex dump"))
    source = DumpFile(inp.name)
    frames = (i for i in result.items if not isinstance(i, Skipped))
    for n, msg in enumerate(frames, 1):
        yield n, Captured(None, source, "", msg, n)


def items_of(path, capture: CaptureOptions, collections: bool | None, progress=None) -> Iterator[Captured | Note]:
    """Captured frames and notes of a capture or of a hex dump given as a file (a path,
    ``-``, a pipe), decoded without field rows; ``progress(inp)``, if given, makes the
    progress line (or None), which hears of each item and of the reader's position."""
    with opened(path) as inp:
        if kind_of(inp) == TEXT:
            yield from (item for _, item in dump_items(inp, collections))
            return
        bar = progress(inp) if progress is not None else None
        try:
            pairs = keyed(inp, dict(collections=collections, detail=VALUES, **capture.decoder()), bar)
            if bar is not None:
                pairs = tap(pairs, bar)
            for _, item in pairs:
                yield item
        except CaptureError as exc:
            raise capture_unusable(inp, exc) from None
        finally:
            if bar is not None:
                bar.close()


def keyed(inp: Input, kw: dict, progress=None) -> Iterator[tuple[int, Captured | Note]]:
    """``(key, item)`` pairs of a whole capture in this process; the progress bar, if any,
    follows the reader's position."""
    records = read_records(inp)
    if progress is not None:
        progress.where = records.tell
        records.on_read(lambda: progress(0))  # moves on through stretches that yield nothing
    return keyed_items(records, **kw)


def jobs_for(inp: Input, jobs: int, eligible: bool) -> int:
    """Worker processes for one input: as :func:`worker_count` says for a regular file
    named by a path (each worker opens it again); one for a stream, read once."""
    return worker_count(jobs, inp.path, eligible) if inp.path is not None else 1


def tap(keyed: Iterator[tuple[int, Captured | Note]], progress: Callable) -> Iterator[tuple[int, Captured | Note]]:
    """The same pairs, each told to ``progress`` as it passes."""
    for pair in keyed:
        progress(pair[1])
        yield pair


def sink_run(path: Path, jobs: int, recipe: Callable, kw: dict, progress=None):
    """A capture file's sink payloads, over ``jobs`` worker processes or in this one, and a
    function giving every sink's result once the payloads are read."""
    inp = opened(path)
    if jobs > 1 and inp.path is not None:
        inp.close()
        parts = Partitioned(inp.path, jobs, recipe, progress=progress, **kw)
        last: list = []  # the result of the sink that takes what the merged correlators find

        def payloads() -> Iterator:
            yield from parts
            sink = recipe()
            yield from run_sink(sink, ((CONCLUDED_KEY, note) for note in
                                       concluded(merge_correlators(parts.correlated))))
            last.append(sink.result())

        return payloads(), lambda: parts.results + last
    pairs = keyed(inp, kw, progress)
    if progress is not None:
        pairs = tap(pairs, progress)
    sink = recipe()
    return run_sink(sink, pairs), lambda: [sink.result()]


def pure() -> bool:
    """No C shortcuts (``DCPINSPECT_PURE``): the reference the tests compare with."""
    return bool(os.environ.get("DCPINSPECT_PURE"))
