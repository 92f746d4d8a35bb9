"""Data sets sent whole in a capture (a full sync's payload): one chosen among several.

A capture may hold several (replicas synced one after another, a replica resynced); a
family says where each begins in a connection (:class:`~dcpinspect.families.DataStart`),
and the rest of that connection's data is that set's until the next. ``PATH#N`` names the
N-th to begin (1-based); by default the first, with a note when there are more.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from ..families import DataStart
from .inputs import Unusable


def chosen(path: str | Path) -> tuple[Path, int | None]:
    """``capture.pcap#N``: the file and the data set chosen in it (1-based), when no file
    is named so; else the path, none chosen."""
    name = str(path)
    head, sep, n = name.rpartition("#")
    if sep and n.isdigit() and int(n) >= 1 and not Path(name).exists():
        return Path(head), int(n)
    return Path(path), None


def sent_data(path: Path, which: int | None, readers: list, notes: list) -> Iterator:
    """What the families' ``readers`` (their snapshot files' ``record_keys`` or ``record_data``) give of the
    ``which``-th data set sent whole in the capture at ``path`` (the first when None), as it
    comes; notes (strings) go to ``notes``. A ``which`` past the capture's sets is
    :class:`Unusable`, at the end."""
    from ..sources.capture import CaptureError
    from .records import decode_capture_file

    started = 0  # data sets begun so far
    of_flow: dict = {}  # each connection's data set now (its number)
    want = which or 1
    try:
        for item in decode_capture_file(path, detail="values", data=True):
            msg = getattr(item, "msg", None)
            if msg is None:
                continue
            for read in readers:
                for got in read(msg):
                    if isinstance(got, DataStart):
                        started += 1
                        of_flow[item.flow] = started
                    elif of_flow.get(item.flow, 1) != want:
                        continue
                    elif isinstance(got, str):
                        notes.append(got)
                    else:
                        yield got
    except CaptureError as exc:
        from .reading import capture_unusable  # the capture engines': not imported by a snapshot's run

        raise capture_unusable(path, exc) from None
    if which is not None and which > started:
        raise Unusable(f"{path}#{which}: the capture holds {started} data set{'s' if started != 1 else ''} "
                       "sent whole (full syncs)")
    if started > 1 and which is None:
        notes.append(f"{path}: the capture holds {started} full syncs; used the first (choose another as {path}#N)")
    if not started:
        notes.append(f"{path}: the capture holds no data sent whole (no full sync's payload)")
