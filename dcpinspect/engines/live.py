"""The ``live`` command: an interface sniffed on a thread of its own (:mod:`..sources.live`)
while this one decodes and prints what arrives, then a summary of the connections."""

from __future__ import annotations

import queue
import threading
from typing import Iterator

from ..outputs.console import make_console
from ..outputs.shown import Shown
from ..outputs.summary import CaptureSummary
from ..sources.capture import Record
from ..sources.live import LiveError, check_interface, sniff_records
from .files import keyed_items
from .filters import frame_filter
from .inputs import Unusable
from .show import judged_failed, recipe, show_capture

#: records waiting for the decoder before the sniffing thread waits for it
QUEUED = 10000


class Sniffer:
    """Records of ``iface`` from a producer thread, in order: iterate them (until the capture
    stops: ``count`` packets, ``duration`` seconds, or a failure, kept in :attr:`errors`)."""

    def __init__(self, iface: str, bpf: str | None, count: int, duration: float | None) -> None:
        self.records: queue.Queue = queue.Queue(maxsize=QUEUED)
        self.errors: list[str] = []
        self._done = object()
        self._args = (iface, self.records.put, bpf, count, duration)
        threading.Thread(target=self._produce, daemon=True).start()

    def _produce(self) -> None:
        try:
            sniff_records(*self._args)
        except LiveError as exc:
            self.errors.append(str(exc))
        finally:
            self.records.put(self._done)

    def __iter__(self) -> Iterator[Record]:
        while True:
            rec = self.records.get()
            if rec is self._done:
                return
            yield rec


def live_capture(iface: str, bpf: str | None, count: int, duration: float | None, fmt: str, criteria: dict,
                 ports: set[int], collections: bool | None, strict: bool, shown: Shown) -> bool:
    """Decode and print the frames that meet ``criteria`` (the record filters by name, as
    :func:`~.filters.frame_filter` takes them; all frames when none) as they arrive, until
    the capture stops or Ctrl-C, then the connections' summary on stderr (unless the
    summary is the output)."""
    try:
        check_interface(iface)
    except LiveError as exc:
        raise Unusable(str(exc)) from None
    keep = frame_filter(criteria)
    sniffer = Sniffer(iface, bpf, count, duration)
    keyed = keyed_items(iter(sniffer), ports=ports, collections=collections)
    if fmt == "summary":  # the output: whatever stops the capture (Ctrl-C too), it is printed
        sink = recipe("summary", keep)()
        try:
            for key, item in keyed:
                sink.take(key, item)
        except KeyboardInterrupt:
            pass
        if sniffer.errors:
            raise Unusable(sniffer.errors[0])
        sink.summary.render(make_console())
        return judged_failed(sink.tally, strict)
    summary = CaptureSummary()
    failed = False
    try:
        failed = show_capture(keyed, fmt, keep, None, strict, progress=summary.add, shown=shown)
    except KeyboardInterrupt:
        pass
    if sniffer.errors:
        raise Unusable(sniffer.errors[0])
    summary.render(make_console(stderr=True))
    return failed
