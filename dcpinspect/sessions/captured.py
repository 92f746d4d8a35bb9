"""What a capture's connections yield, for the engines to make and the outputs to read: a
decoded frame with where and when it was seen, or a note about the capture itself."""

from __future__ import annotations

from dataclasses import dataclass

from ..findings import Finding
from ..messages.frame import Message
from ..transport.reassembly import FlowKey


def flow_label(flow: FlowKey) -> str:
    """``client:port-server:port`` (IPv6 in brackets); a hex dump's pseudo-flow is its name."""
    c, cp, s, sp = flow
    if c == "hex":
        return s
    fmt = lambda a, p: f"[{a}]:{p}" if ":" in a else f"{a}:{p}"  # noqa: E731
    return f"{fmt(c, cp)}-{fmt(s, sp)}"


@dataclass(slots=True, unsafe_hash=True)
class Captured:
    """A decoded frame of a connection. Not frozen, as
    :class:`~dcpinspect.sources.capture.Record`: one is made a frame."""

    ts: float | None  # None: a hex dump, which has no times
    flow: FlowKey
    direction: str  # c2s or s2c ("" in a hex dump)
    msg: Message
    #: the capture frame number (1-based, as Wireshark numbers packets) of the record that
    #: completed the frame: what findings name, known without seeing other connections
    number: int = 0


#: the capture engine's name for making one
captured = Captured


@dataclass(frozen=True, slots=True)
class Note:
    kind: str  # gap, skipped, encrypted, capture, finding
    message: str
    ts: float | None = None
    flow: FlowKey | None = None
    direction: str | None = None
    offset: int | None = None
    size: int = 0
    finding: Finding | None = None
