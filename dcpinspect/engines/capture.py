"""Captures → decoded frames: reassembled TCP flows through the same core as hex input.

Sans-I/O: :class:`CaptureDecoder` takes transport segments (from a file, a live
interface or a Spark partition) and returns :class:`Captured` frames and
:class:`Note`s about the capture itself (gaps, skipped bytes, encrypted flows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator

from ..framing.mcbp import FrameSplitter, RawFrame, Skipped, header_problem
from ..messages.frame import DecodeContext, Message, decode_frame
from ..messages.header import HEADER_SIZE
from ..rules.frame import check_frame
from ..sessions.negotiation import Negotiation
from ..transport.packet import Segment
from ..transport.reassembly import Data, End, FlowKey, Gap, Reassembler, Start

MCBP_PORTS = frozenset({11210, 11209, 11211})
TLS_PORTS = frozenset({11207, 18091, 18092, 18093})
HEURISTIC_BYTES = 64 * 1024


def flow_label(flow: FlowKey) -> str:
    c, cp, s, sp = flow
    fmt = lambda a, p: f"[{a}]:{p}" if ":" in a else f"{a}:{p}"  # noqa: E731
    return f"{fmt(c, cp)}-{fmt(s, sp)}"


@dataclass(frozen=True, slots=True)
class Captured:
    ts: float
    flow: FlowKey
    direction: str  # c2s or s2c
    msg: Message
    index: int  # capture record that completed the frame


@dataclass(frozen=True, slots=True)
class Note:
    kind: str  # gap, skipped, truncated-record, encrypted, not-mcbp, capture, start, end
    message: str
    ts: float | None = None
    flow: FlowKey | None = None
    direction: str | None = None
    offset: int | None = None
    size: int = 0


@dataclass
class FlowDecoder:
    """One TCP connection: shared negotiation, one frame splitter per direction."""

    flow: FlowKey
    negotiation: Negotiation
    base: DecodeContext
    midstream: bool
    protocol: str = "unknown"  # mcbp, tls, ignored, unknown
    splitters: dict[str, FrameSplitter] = field(default_factory=dict)
    pending: dict[str, bytearray] = field(default_factory=dict)
    frames: int = 0

    def splitter(self, direction: str) -> FrameSplitter:
        sp = self.splitters.get(direction)
        if sp is None:
            sp = self.splitters[direction] = FrameSplitter(synced=not self.midstream)
        return sp

    def decode(self, raw: RawFrame) -> Message:
        msg = decode_frame(raw.data, raw.offset, self.negotiation.context(self.base))
        check_frame(msg)
        self.negotiation.observe(msg)
        self.frames += 1
        return msg


class CaptureDecoder:
    def __init__(
        self,
        ports: Iterable[int] = (),
        collections: bool | None = None,
        heuristic: bool = True,
        base: DecodeContext | None = None,
        max_buffer: int = 4 * 1024 * 1024,
    ) -> None:
        self.ports = MCBP_PORTS | frozenset(ports)
        self.collections = collections
        self.heuristic = heuristic
        self.base = base or DecodeContext()
        self.reassembler = Reassembler(server_ports=self.ports | TLS_PORTS, max_buffer=max_buffer)
        self.flows: dict[FlowKey, FlowDecoder] = {}

    def feed(self, seg: Segment) -> list[Captured | Note]:
        out: list[Captured | Note] = []
        for ev in self.reassembler.feed(seg):
            self._event(ev, out)
        return out

    def finish(self) -> list[Captured | Note]:
        out: list[Captured | Note] = []
        for ev in self.reassembler.flush():
            self._event(ev, out)
        for fd in self.flows.values():
            self._close_flow(fd, out, None)
        return out

    # -- events ------------------------------------------------------------------------

    def _event(self, ev, out: list) -> None:
        if isinstance(ev, Start):
            fd = FlowDecoder(ev.flow, Negotiation(collections_override=self.collections), self.base, ev.midstream)
            self.flows[ev.flow] = fd
            sport = ev.flow[3]
            if sport in TLS_PORTS:
                fd.protocol = "tls"
                out.append(Note("encrypted", f"port {sport} carries TLS: not decoded", ev.ts, ev.flow))
            elif sport in self.ports or ev.flow[1] in self.ports:
                fd.protocol = "mcbp"
            elif not self.heuristic:
                fd.protocol = "ignored"
            return
        fd = self.flows.get(ev.flow)
        if fd is None:
            return
        if isinstance(ev, Data):
            self._data(fd, ev, out)
        elif isinstance(ev, Gap):
            if fd.protocol == "mcbp":
                out.append(Note("gap", f"{ev.missing} bytes lost ({ev.reason})", ev.ts, ev.flow, ev.direction,
                                ev.offset, ev.missing))
                self._items(fd, ev.direction, fd.splitter(ev.direction).gap(ev.missing), ev.ts, -1, out)
            elif fd.protocol == "unknown":
                fd.pending.pop(ev.direction, None)
        elif isinstance(ev, End):
            self._close_flow(fd, out, ev.ts)
            del self.flows[ev.flow]

    def _data(self, fd: FlowDecoder, ev: Data, out: list) -> None:
        if fd.protocol == "unknown":
            buf = fd.pending.setdefault(ev.direction, bytearray())
            buf += ev.data
            verdict = _sniff(buf, fd.midstream)
            if verdict is None and len(buf) < HEURISTIC_BYTES:
                return
            if verdict:
                fd.protocol = "mcbp"
                data = bytes(buf)
                fd.pending.clear()
                self._items(fd, ev.direction, fd.splitter(ev.direction).feed(data), ev.ts, ev.index, out)
            else:
                fd.protocol = "ignored"
                fd.pending.clear()
            return
        if fd.protocol != "mcbp":
            return
        self._items(fd, ev.direction, fd.splitter(ev.direction).feed(ev.data), ev.ts, ev.index, out)

    def _items(self, fd: FlowDecoder, direction: str, items, ts: float, index: int, out: list) -> None:
        for item in items:
            if isinstance(item, RawFrame):
                out.append(Captured(ts, fd.flow, direction, fd.decode(item), index))
            else:
                out.append(Note("skipped", item.reason, ts, fd.flow, direction, item.offset, item.size))

    def _close_flow(self, fd: FlowDecoder, out: list, ts: float | None) -> None:
        if fd.protocol != "mcbp":
            return
        for direction, sp in fd.splitters.items():
            if sp.buffered:
                self._items(fd, direction, sp.close(), ts if ts is not None else 0.0, -1, out)
        fd.splitters.clear()


def _sniff(buf: bytearray, midstream: bool) -> bool | None:
    """MCBP on a port we do not know? Decide from the first bytes (None: need more)."""
    if len(buf) < HEADER_SIZE:
        return None
    if header_problem(buf, 0) is None:
        return True
    if not midstream:
        return False
    probe = FrameSplitter(synced=False).feed(bytes(buf))
    return True if any(isinstance(i, RawFrame) for i in probe) else None


def decode_segments(segments: Iterable[Segment], **kw) -> Iterator[Captured | Note]:
    dec = CaptureDecoder(**kw)
    for seg in segments:
        yield from dec.feed(seg)
    yield from dec.finish()
