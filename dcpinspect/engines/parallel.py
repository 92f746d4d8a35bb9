"""One capture file over several processes, output in capture order.

Connections are independent (reassembly, negotiation and the stream validator are all per
connection), so each worker reads the whole file, parses every record's headers (cheap),
and decodes only the connections dealt to it (:class:`~.records.Owners`: in turn, as they
first appear, which every worker works out alike). Frames are numbered by the packet that
completed them, which a worker knows without seeing the other connections. A worker hands
each item to a *sink* that turns it into a small picklable payload (a JSON line, a findings
row) and keeps totals; the caller merges the payloads back by capture record, and
combines the sinks' totals.

The same sink runs in one process when there is nothing to split (:func:`~.sinks.run_sink`), so
both ways print the same bytes. ``keyed_items(records, part, parts)`` is the unit of work
any other scheduler can run the same way: a part's items, keyed for the merge.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
import gc
import os
import sys
import time
import traceback
from typing import Any, Callable, Iterator

from ..sources.capture import CaptureError, read_records
from .records import ReadStats, keyed_items
from .sinks import Sink

BATCH = 256  # payloads a message between processes (a few MB at most for large values)
TICK = 0.25  # seconds between progress messages of a worker that sends no payloads
QUEUED = 8  # batches of a part read ahead while another part's are awaited


def steady_gc() -> None:
    """Collect cycles less often while a capture is decoded: everything imported so far is
    set aside for good (it is never garbage), and the young generation is looked at every
    10,000 allocations, not 700. A capture's objects are freed by reference counting; what
    is left for the collector is rare."""
    gc.freeze()
    gc.set_threshold(10_000, 20, 20)


def _child(conn, path: str, part: int, parts: int, make_sink: Callable[[], Sink], kw: dict) -> None:
    """A worker: its connections' payloads to ``conn`` in batches, then its totals."""
    steady_gc()
    keys: list[int] = []
    payloads: list[Any] = []
    try:
        sink = make_sink()
        stats = ReadStats()
        take = sink.take
        quiet, last = 0, 0.0  # items not yet reported; the first item is reported at once
        records = read_records(path)

        def tick() -> None:  # the reader moves through a stretch that yields nothing
            nonlocal last
            if time.monotonic() - last > TICK:
                conn.send(("tick", 0, records.tell()))
                last = time.monotonic()

        records.on_read(tick)
        for key, item in keyed_items(records, part, parts, stats, **kw):
            payload = take(key, item)
            quiet += getattr(item, "count", 1)  # the lane's Lines stand for several frames
            if payload is None:
                if time.monotonic() - last > TICK:
                    conn.send(("tick", quiet, records.tell()))
                    quiet, last = 0, time.monotonic()
                continue
            keys.append(key)
            payloads.append(payload)
            if len(keys) >= BATCH:
                conn.send(("items", keys, payloads, records.tell(), quiet))
                keys, payloads, quiet = [], [], 0
            if sink.done():
                break
        if keys:
            conn.send(("items", keys, payloads, -1, quiet))
        conn.send(("done", sink.result(), stats))
    except CaptureError as exc:
        _send(conn, ("error", str(exc)))
    except (BrokenPipeError, EOFError, KeyboardInterrupt):
        pass  # the caller stopped early or was interrupted
    except BaseException:  # noqa: BLE001 - reported to the caller, which raises it
        _send(conn, ("crash", traceback.format_exc()))
    finally:
        conn.close()


def _send(conn, message) -> None:
    try:
        conn.send(message)
    except (BrokenPipeError, EOFError, OSError):
        pass


class WorkerCrash(RuntimeError):
    """A worker process failed; the message carries its traceback."""


class Partitioned:
    """``parts`` worker processes over one file; iterate for the merged payloads, then read
    :attr:`results` (each worker's sink result, in part order), :attr:`stats` and
    :attr:`correlated` (each worker's correlators, not concluded: see ``families.Correlator``).
    ``progress(items, position)`` hears of items done and of how far into the file the
    slowest worker has read (-1: all of it)."""

    def __init__(self, path, parts: int, make_sink: Callable[[], Sink],
                 progress: Callable[[int, int], None] | None = None, **kw) -> None:
        import multiprocessing as mp

        methods = mp.get_all_start_methods()
        ctx = mp.get_context("fork" if "fork" in methods and sys.platform != "darwin" else "spawn")
        self.results: list[Any] = [None] * parts
        self.correlated: list[dict] = [{} for _ in range(parts)]
        self.stats = ReadStats()
        self._progress = progress
        self._read = [0] * parts  # bytes of the file each worker has read
        self._queued: list[deque] = [deque() for _ in range(parts)]  # batches read ahead (None: the end)
        self._ended = [False] * parts
        self._procs = []
        self._conns = []
        for part in range(parts):
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(send, str(path), part, parts, make_sink, kw),
                               name=f"dcpinspect-part-{part}", daemon=True)
            proc.start()
            send.close()
            self._procs.append(proc)
            self._conns.append(recv)

    def __iter__(self) -> Iterator[Any]:
        try:
            yield from _merge([self._batches(part) for part in range(len(self._conns))])
        finally:
            self.close()

    def _batches(self, part: int) -> Iterator[tuple[list[int], list[Any]]]:
        """Part ``part``'s batches in order. While it waits for them it also reads the
        other parts, so that their progress is heard (a part whose sink gives no payloads
        sends only ticks), keeping at most :data:`QUEUED` batches of each."""
        queue = self._queued[part]
        while True:
            if queue:
                batch = queue.popleft()
                if batch is None:
                    return
                yield batch
                continue
            from multiprocessing.connection import wait

            others = [self._conns[p] for p in range(len(self._conns))
                      if p != part and not self._ended[p] and len(self._queued[p]) < QUEUED]
            for conn in wait([self._conns[part], *others]):
                self._receive(self._conns.index(conn))

    def _receive(self, part: int) -> None:
        """One message of ``part``: progress, a batch (queued), its totals (the end)."""
        try:
            message = self._conns[part].recv()
        except EOFError:
            raise WorkerCrash(f"worker {part} ended without its results") from None
        kind = message[0]
        if kind == "items":
            self._tell(part, message[4], message[3])
            self._queued[part].append((message[1], message[2]))
        elif kind == "tick":
            self._tell(part, message[1], message[2])
        elif kind == "done":
            self.results[part] = message[1]
            self.correlated[part] = message[2].correlated
            if part == 0:
                self.stats = message[2]
            self._ended[part] = True
            self._queued[part].append(None)
        elif kind == "error":
            raise CaptureError(message[1])
        else:
            raise WorkerCrash(message[1])

    def _tell(self, part: int, items: int, read: int) -> None:
        if self._progress is not None:
            self._read[part] = read if read >= 0 else 1 << 62
            slowest = min(self._read)
            self._progress(items, -1 if slowest == 1 << 62 else slowest)

    def close(self) -> None:
        for conn in self._conns:
            conn.close()
        for proc in self._procs:
            proc.join(timeout=0.05)
            if proc.is_alive():
                proc.terminate()
                proc.join()
        self._procs, self._conns = [], []


def _merge(streams: list[Iterator[tuple[list[int], list[Any]]]]) -> Iterator[Any]:
    """Payloads of all parts by key, equal keys in part order (as ``heapq.merge`` would give
    them), a run at a time: the part with the smallest key goes on until another part's key
    comes first, found by bisection, so the cost is per run of one part, not per payload."""
    heads: list[list | None] = []
    for stream in streams:
        batch = next(stream, None)
        heads.append(None if batch is None else [batch[0], batch[1], 0])
    while True:
        live = [p for p, h in enumerate(heads) if h is not None]
        if not live:
            return
        p = min(live, key=lambda q: (heads[q][0][heads[q][2]], q))
        keys, payloads, i = heads[p]
        end = len(keys)
        for q in live:
            if q != p:
                k = heads[q][0][heads[q][2]]
                # a later part waits for equal keys of this one; an earlier one comes first
                end = min(end, bisect_right(keys, k, i, end) if q > p else bisect_left(keys, k, i, end))
        yield from payloads[i:end]
        if end < len(keys):
            heads[p][2] = end
        else:
            batch = next(streams[p], None)
            heads[p] = None if batch is None else [batch[0], batch[1], 0]


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


#: a file this big repays starting workers; at most this many are started unasked
AUTO_JOBS_BYTES = 16 * 1024 * 1024
MAX_AUTO_JOBS = 8


def worker_count(jobs: int, path, eligible: bool) -> int:
    """Worker processes for one file: ``--jobs`` as given, or (0) one per CPU for captures
    big enough to repay starting them; one when the output cannot be split (``eligible``
    false: a ``--limit``)."""
    if not eligible:
        return 1
    if jobs > 0:
        return jobs
    try:
        big = os.stat(path).st_size >= AUTO_JOBS_BYTES
    except OSError:
        big = False
    return min(available_cpus(), MAX_AUTO_JOBS) if big else 1
