"""How the commands read an input's items: a hex dump given as a file as its frames, a
capture in this process or over worker processes (``engines/parallel.py``), each item
told to the progress line; what cannot be read said with the input's name.

A capture goes one way through the stages below this module, each handing on to the
next: records (``sources/capture.py``) → keyed items (``engines/records.py``: each record
parsed into a TCP segment by ``transport/packet.py``, dealt to its connection's part) →
connections (``engines/connections.py``: ordered bytes per direction from
``transport/reassembly.py``, cut into frames, decoded and judged by the connection's
family) → sinks (``engines/sinks.py``: a payload an item, totals at the end). The commands
print what comes out (``engines/show.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

from ..families import VALUES
from ..framing.framer import Skipped
from ..sessions.captured import Captured, DumpFile, Note
from ..sources.capture import CaptureError
from ..sources.inputs import TEXT, Input
from .connections import concluded, merge_correlators
from .records import CONCLUDED_KEY, keyed
from .hexinput import decode_hex_text
from .inputs import Unusable, kind_of, opened, text_of
from ..outputs.progress import told
from .options import CaptureOptions
from .parallel import Partitioned, WorkerCrash, worker_count
from .sinks import run_sink


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
                pairs = told(pairs, bar)
            for _, item in pairs:
                yield item
        except CaptureError as exc:
            raise capture_unusable(inp, exc) from None
        finally:
            if bar is not None:
                bar.close()


def jobs_for(inp: Input, jobs: int, eligible: bool) -> int:
    """Worker processes for one input: as :func:`worker_count` says for a regular file
    named by a path (each worker opens it again); one for a stream, read once."""
    return worker_count(jobs, inp.path, eligible) if inp.path is not None else 1


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
        pairs = told(pairs, progress)
    sink = recipe()
    return run_sink(sink, pairs), lambda: [sink.result()]
