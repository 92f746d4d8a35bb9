"""The ``live`` command: an interface sniffed on a thread of its own (:mod:`..sources.live`)
while this one decodes and prints what arrives (and, with ``--write``, keeps it as pcapng),
then a summary of the connections."""

from __future__ import annotations

import queue
import threading
from pathlib import Path
from typing import Iterator

from ..outputs.console import make_console
from ..outputs.escape import safe
from ..outputs.shown import Shown
from ..outputs.summary import CaptureSummary
from ..sources.capture import Record
from ..sources.live import LiveError, check_interface, sniff_records
from ..sources.pcapng import PcapngWriter
from .records import keyed_items
from .filters import frame_filter
from .inputs import Unusable
from .options import CaptureOptions
from .show import judged_failed, show_capture
from .sinks import recipe

#: records waiting for the decoder before the sniffing thread waits for it
QUEUED = 10000


class Sniffer:
    """Records of ``iface`` from a producer thread, in order: iterate them (until the capture
    stops: ``count`` packets, ``duration`` seconds, or a failure, kept in :attr:`errors`)."""

    def __init__(self, iface: str, bpf: str | None, count: int, duration: float | None,
                 writer: PcapngWriter | None = None) -> None:
        self.writer = writer  # each record is written as it is taken (``live --write``)
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
            if self.writer is not None:
                self.writer.write(rec)
            yield rec

    def keep(self) -> None:
        """Write what was sniffed and not yet decoded (stopped by Ctrl-C), then close the file."""
        if self.writer is None:
            return
        while True:
            try:
                rec = self.records.get_nowait()
            except queue.Empty:
                break
            if rec is not self._done:
                self.writer.write(rec)
        self.writer.close()


def live_capture(iface: str, bpf: str | None, count: int, duration: float | None, fmt: str, criteria: dict,
                 capture: CaptureOptions, collections: bool | None, strict: bool, shown: Shown,
                 write: Path | None = None) -> bool:
    """Decode and print the frames that meet ``criteria`` (the record filters by name, as
    :func:`~.filters.frame_filter` takes them; all frames when none) as they arrive, until
    the capture stops or Ctrl-C, then the connections' summary on stderr (unless the
    summary is the output). ``write``: keep every packet sniffed in this pcapng file."""
    try:
        check_interface(iface)
    except LiveError as exc:
        raise Unusable(str(exc)) from None
    keep = frame_filter(criteria)
    writer = None
    if write is not None:
        try:
            writer = PcapngWriter(open(write, "wb"), iface)
        except OSError as exc:
            raise Unusable(f"cannot write {write}: {exc.strerror or exc}") from None
    sniffer = Sniffer(iface, bpf, count, duration, writer)
    summary = CaptureSummary()
    sink = recipe("summary", keep)() if fmt == "summary" else None
    failed = False
    try:
        keyed = keyed_items(iter(sniffer), collections=collections, **capture.decoder())
        if sink is not None:  # the output: whatever stops the capture (Ctrl-C too), it is printed
            for key, item in keyed:
                sink.take(key, item)
        else:
            failed = show_capture(keyed, fmt, keep, None, strict, progress=summary.add, shown=shown)
    except KeyboardInterrupt:
        pass
    finally:
        sniffer.keep()
    if writer is not None:
        make_console(stderr=True).print(safe(f"wrote {writer.records} packets to {write}"), markup=False)
    if sniffer.errors:
        raise Unusable(sniffer.errors[0])
    if sink is not None:
        sink.summary.render(make_console())
        return judged_failed(sink.tally, strict)
    summary.render(make_console(stderr=True))
    return failed
