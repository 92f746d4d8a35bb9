"""Captures → decoded frames: reassembled TCP flows through the same core as hex input.

Sans-I/O: :class:`CaptureDecoder` takes transport segments (from a file, a live
interface or a Spark partition) and returns :class:`Captured` frames and
:class:`Note`s about the capture itself (gaps, skipped bytes, encrypted flows).
"""

from __future__ import annotations

from ..unguarded import builder
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from ..framing.mcbp import FrameSplitter, RawFrame, Skipped, header_problem
from ..messages.frame import DecodeContext, Message
from ..messages.header import HEADER_SIZE
from ..findings import Finding
from .streaming import Conversation
from ..transport.packet import Segment
from ..transport.reassembly import Data, End, FlowKey, Gap, Reassembler, Start

MCBP_PORTS = frozenset({11210, 11209, 11211})
TLS_PORTS = frozenset({11207, 18091, 18092, 18093})
HEURISTIC_BYTES = 64 * 1024


def flow_label(flow: FlowKey) -> str:
    c, cp, s, sp = flow
    if c == "hex":
        return s
    fmt = lambda a, p: f"[{a}]:{p}" if ":" in a else f"{a}:{p}"  # noqa: E731
    return f"{fmt(c, cp)}-{fmt(s, sp)}"


@dataclass(frozen=True, slots=True)
class Captured:
    ts: float
    flow: FlowKey
    direction: str  # c2s or s2c
    msg: Message
    index: int  # capture record that completed the frame
    number: int = 0  # 1-based frame number across the capture


_CapturedBuilder = builder(Captured)  # fast constructor, see dcpinspect/unguarded.py

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


@dataclass
class FlowDecoder:
    """One TCP connection: one conversation, one frame splitter per direction."""

    flow: FlowKey
    conversation: Conversation
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
        self.frames = 0

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
            fd = FlowDecoder(ev.flow, Conversation.new(self.collections, self.base, not ev.midstream), ev.midstream)
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
                fd.conversation.validator.gap()
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
                self.frames += 1
                msg = fd.conversation.decode(item, direction, ts, self.frames)
                c = _CapturedBuilder(ts, fd.flow, direction, msg, index, self.frames)
                c.__class__ = Captured
                out.append(c)
            else:
                out.append(Note("skipped", item.reason, ts, fd.flow, direction, item.offset, item.size))

    def _close_flow(self, fd: FlowDecoder, out: list, ts: float | None) -> None:
        if fd.protocol != "mcbp":
            return
        for direction, sp in fd.splitters.items():
            if sp.buffered:
                self._items(fd, direction, sp.close(), ts if ts is not None else 0.0, -1, out)
        fd.splitters.clear()
        for f in fd.conversation.validator.finish():
            out.append(Note("finding", f.message, ts, fd.flow, None, None, 0, f))


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
