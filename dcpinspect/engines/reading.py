"""How the engines read an input's items: a hex dump given as a file as its frames, a
capture in this process or over worker processes (``engines/parallel.py``), each item
told to the progress line; what cannot be read said with the input's name.

The chain each capture goes through is ``engines/files.py``'s (records → packets → TCP
segments → ordered bytes per direction → frames → decoded and judged records); the
sinks (``engines/sinks.py``) take what comes out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

from ..families import VALUES
from ..framing.framer import Skipped
from ..sessions.captured import Captured, DumpFile, Note
from ..sources.capture import CaptureError, read_records
from ..sources.inputs import TEXT, Input
from .capture import concluded, merge_correlators
from .files import CONCLUDED_KEY, keyed_items
from .hexinput import decode_hex_text
from .inputs import Unusable, kind_of, opened, text_of
from .options import CaptureOptions
from .parallel import Partitioned, WorkerCrash, run_sink, worker_count


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
