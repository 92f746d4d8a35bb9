"""What a capture's connections yield, for the engines to make and the outputs to read: a
decoded frame with where and when it was seen, or a note about the capture itself."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, NamedTuple

from ..findings import Finding
from ..messages.layout import Located
from .decoded import Decoded
from ..transport.reassembly import FlowKey


@dataclass(frozen=True, slots=True)
class DumpFile:
    """The one connection of a hex dump given as a file, where its frames' ``flow`` says
    they come from: named by the file, with no addresses, ports or times."""

    name: str


def flow_label(flow: FlowKey | DumpFile) -> str:
    """``client:port-server:port`` (IPv6 in brackets); a hex dump's is its file's name."""
    if type(flow) is DumpFile:
        return flow.name
    c, cp, s, sp = flow
    fmt = lambda a, p: f"[{a}]:{p}" if ":" in a else f"{a}:{p}"  # noqa: E731
    return f"{fmt(c, cp)}-{fmt(s, sp)}"


@dataclass(slots=True, unsafe_hash=True)
class Captured:
    """A decoded frame of a connection. Not frozen, as
    :class:`~dcpinspect.sources.capture.Record`: one is made a frame."""

    ts: float | None  # None: a hex dump, which has no times
    flow: FlowKey | DumpFile
    direction: str  # c2s or s2c ("" in a hex dump)
    msg: "Located | Decoded"
    #: the capture frame number (1-based, as Wireshark numbers packets) of the record that
    #: completed the frame: what findings name, known without seeing other connections
    number: int = 0


#: the capture engine's name for making one
captured = Captured


@dataclass(frozen=True, slots=True)
class Note:
    kind: str  # gap, skipped, encrypted, capture, finding, undecoded
    message: str
    ts: float | None = None
    flow: FlowKey | None = None
    direction: str | None = None
    offset: int | None = None
    size: int = 0
    finding: Finding | None = None
    #: bytes each way (c2s, s2c) of a connection an ``undecoded`` note tells of
    sides: tuple[int, int] | None = None


def undecoded_counts(notes: Iterable[Note]) -> dict:
    """``{"connections", "bytes", "ports": {port: {"connections", "bytes"}}}`` of the
    ``undecoded`` notes (a note for many connections counts them all)."""
    conns: Counter = Counter()
    nbytes: Counter = Counter()
    for note in notes:
        if note.flow is None:  # the connections past the listed ones, together
            conns[None] += int(note.message.split(" ", 1)[0])
        else:
            conns[note.flow[3]] += 1
        nbytes[note.flow[3] if note.flow is not None else None] += note.size
    ports = {str(p): {"connections": conns[p], "bytes": nbytes[p]}
             for p in sorted((p for p in conns if p is not None), key=lambda p: (-conns[p], p))}
    return {"connections": sum(conns.values()), "bytes": sum(nbytes.values()), "ports": ports}



class Lines(NamedTuple):
    """Lines already written of ``count`` frames in a row of one connection and direction
    (a family's fast path writes them: see ``families/mcbp/lane.py``), and what the
    statistics count of them: the one frame's :class:`Captured`, or a run of the family's
    own (with a ``stats_part`` that counts it: ``sessions/stats.py``)."""

    text: bytes  # ASCII lines, each ending in a newline
    count: int
    flow: tuple
    direction: str
    counted: Any
