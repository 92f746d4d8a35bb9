"""Captures → decoded frames: reassembled TCP flows through the same core as hex input.

Sans-I/O: :class:`CaptureDecoder` takes transport segments (from a file, a live
interface or a Spark partition) and returns :class:`Captured` frames and
:class:`Note`s about the capture itself (gaps, skipped bytes, encrypted flows).
"""

from __future__ import annotations

import json

from ..unguarded import builder
from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from ..framing.mcbp import FrameSplitter, RawFrame, RawRun, header_problem
from ..messages.frame import DecodeContext, Message
from ..messages.header import HEADER_SIZE
from ..findings import Finding
from .lane import Lane
from .streaming import Conversation
from .tails import DIRECTION, FLOW, SIDE, TS, WANT, Tail, Tails, carried, new_tail, reverse_raw, settle
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
    #: the capture frame number (1-based, as Wireshark numbers packets) of the record that
    #: completed the frame: what findings name, known without seeing other connections
    number: int = 0


_CapturedBuilder = builder(Captured)  # fast constructor, see dcpinspect/unguarded.py


def _captured(ts: float, flow: FlowKey, direction: str, msg: Message, number: int) -> Captured:
    c = _CapturedBuilder(ts, flow, direction, msg, number)
    c.__class__ = Captured
    return c

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


class Side:
    """One direction of a connection: its frame splitter, and which capture record carried
    which bytes, so a frame is numbered by the packet holding its last byte (as Wireshark
    numbers a reassembled PDU) however late the splitter could confirm it."""

    __slots__ = ("splitter", "fed", "marks")

    def __init__(self, synced: bool, runs: bool = False) -> None:
        self.splitter = FrameSplitter(synced=synced, runs=runs)
        self.fed = 0  # stream offset after the last byte handed over (gaps count)
        self.marks: deque[tuple[int, int]] = deque()  # (stream offset after a record's bytes, record)

    def carried(self, size: int, index: int) -> None:
        self.fed += size
        self.marks.append((self.fed, index))
        if len(self.marks) > MAX_MARKS:  # a splitter holding this much is skipping: numbers stay close
            self.marks.popleft()

    def lost(self, missing: int) -> None:
        self.fed += missing

    def record_of(self, end: int) -> int:
        """The record that carried stream byte ``end - 1`` (-1 if none is known)."""
        marks = self.marks
        while len(marks) > 1 and marks[0][0] < end:
            marks.popleft()
        return marks[0][1] if marks else -1


MAX_MARKS = 65536


@dataclass
class FlowDecoder:
    """One TCP connection: one conversation, one splitting side per direction."""

    flow: FlowKey
    conversation: Conversation
    midstream: bool
    protocol: str = "unknown"  # mcbp, tls, ignored, unknown
    sides: dict[str, Side] = field(default_factory=dict)
    pending: dict[str, bytearray] = field(default_factory=dict)
    first_index: int = 0  # the capture record that began the connection
    label: str = ""  # flow_label(flow) as a JSON string, for the lines of the jsonl lane
    runs: bool = False  # splitters hand whole frames over as runs, for the lane

    def side(self, direction: str) -> Side:
        sd = self.sides.get(direction)
        if sd is None:
            sd = self.sides[direction] = Side(not self.midstream, self.runs)
        return sd



class CaptureDecoder:
    def __init__(
        self,
        ports: Iterable[int] = (),
        collections: bool | None = None,
        heuristic: bool = True,
        base: DecodeContext | None = None,
        max_buffer: int = 4 * 1024 * 1024,
        lane: bool = False,
        max_flows: int = 100_000,
    ) -> None:
        self.ports = MCBP_PORTS | frozenset(ports)
        self.collections = collections
        self.heuristic = heuristic
        self.base = base or DecodeContext()
        self.reassembler = Reassembler(server_ports=self.ports | TLS_PORTS, max_buffer=max_buffer,
                                       max_flows=max_flows)
        self.flows: dict[FlowKey, FlowDecoder] = {}
        #: jsonl only (``lane=True``): plain DCP items become Lines, not Captured (engines/lane.py)
        self.lane = Lane(self.base) if lane and Lane.usable(self.base) else None
        #: the directions a reader follows in C (see tails.py); None: it follows none
        self.tails: Tails | None = None

    def feed(self, seg: Segment) -> list[Captured | Note]:
        tails = self.tails
        if tails is not None and tails.raw:
            if self.reassembler.full:  # eviction looks at every flow
                self._settle(tails.drop_all())
            else:
                self._settle(tails.drop((seg.src, seg.sport, seg.dst, seg.dport)))
        out: list[Captured | Note] = []
        for ev in self.reassembler.feed(seg):
            self._event(ev, out)
        return out

    def finish(self) -> list[Captured | Note]:
        if self.tails is not None:
            self._settle(self.tails.drop_all())
        out: list[Captured | Note] = []
        for ev in self.reassembler.flush():
            self._event(ev, out)
        for fd in self.flows.values():
            self._close_flow(fd, out, None)
        return out

    # -- directions followed by the reader ----------------------------------------------

    def follow_with(self, raw: dict) -> None:
        """A reader takes the records of followed directions, by their 12 raw address and
        port bytes in ``raw`` (see tails.py): from now on :meth:`follow` fills it."""
        self.tails = Tails(raw)

    def follow(self, raw: bytes, seg: Segment) -> None:
        """After ``seg`` (whose plain Ethernet/IPv4/TCP record had ``raw`` as its 12 address
        and port bytes) went the ordinary way: follow its connection, both ways, if it is
        tracked and open; a direction's bytes too when they are in order and go to a splitter."""
        key = (seg.src, seg.sport, seg.dst, seg.dport)  # feed dropped its tails, if any
        reassembler = self.reassembler
        mine = reassembler.in_order(key)
        if mine is None:
            return
        fd = self.flows.get(mine[0])
        if fd is None:
            return
        back = (seg.dst, seg.dport, seg.src, seg.sport)
        theirs = reassembler.in_order(back)
        if theirs is None:
            return
        # a direction's bytes are taken once it has a splitter (made by its first bytes: the
        # order sides are made in is the order a closing connection flushes them in)
        sides = fd.sides if fd.protocol == "mcbp" else {}
        self.tails.add([new_tail(k, r, nxt, sides.get(direction), fd, direction)
                   for k, r, (_, direction, nxt) in ((key, raw, mine), (back, reverse_raw(raw), theirs))])

    def taken(self, tail: Tail) -> list[Captured | Note]:
        """What the frames a followed direction's buffer now holds make (the reader's hit)."""
        carried(tail)
        splitter = tail[SIDE].splitter
        out: list[Captured | Note] = []
        self._items(tail[FLOW], tail[DIRECTION], splitter.feed(b""), tail[TS], out)
        tail[WANT] = splitter.wanted
        return out

    def _settle(self, tails: list[Tail]) -> None:
        for tail in tails:
            settle(tail, self.reassembler)

    # -- events ------------------------------------------------------------------------

    def _event(self, ev, out: list) -> None:
        if isinstance(ev, Start):
            fd = FlowDecoder(ev.flow, Conversation.new(self.collections, self.base, not ev.midstream), ev.midstream,
                             first_index=ev.index)
            if self.lane is not None:
                fd.label, fd.runs = json.dumps(flow_label(ev.flow)), True
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
                sd = fd.side(ev.direction)
                items = sd.splitter.gap(ev.missing)
                sd.lost(ev.missing)
                self._items(fd, ev.direction, items, ev.ts, out)
            elif fd.protocol == "unknown":
                fd.pending.pop(ev.direction, None)
        elif isinstance(ev, End):
            self._close_flow(fd, out, ev.ts)
            del self.flows[ev.flow]

    def _data(self, fd: FlowDecoder, ev: Data, out: list) -> None:
        if fd.protocol == "unknown":
            buf = fd.pending.setdefault(ev.direction, bytearray())
            buf += ev.data
            fd.side(ev.direction).carried(len(ev.data), ev.index)
            verdict = _sniff(buf, fd.midstream)
            if verdict is None and len(buf) < HEURISTIC_BYTES:
                return
            if verdict:
                fd.protocol = "mcbp"
                data = bytes(buf)
                fd.pending.clear()
                self._items(fd, ev.direction, fd.side(ev.direction).splitter.feed(data), ev.ts, out)
            else:
                fd.protocol = "ignored"
                fd.pending.clear()
            return
        if fd.protocol != "mcbp":
            return
        sd = fd.side(ev.direction)
        sd.carried(len(ev.data), ev.index)
        self._items(fd, ev.direction, sd.splitter.feed(ev.data), ev.ts, out)

    def _items(self, fd: FlowDecoder, direction: str, items, ts: float, out: list) -> None:
        sd = fd.sides[direction]
        for item in items:
            if isinstance(item, RawFrame):
                out.append(self._frame(fd, sd, direction, item, ts))
            elif type(item) is RawRun:
                self._run(fd, sd, direction, item, ts, out)
            else:
                sd.record_of(item.offset + item.size)
                out.append(Note("skipped", item.reason, ts, fd.flow, direction, item.offset, item.size))

    def _frame(self, fd: FlowDecoder, sd: Side, direction: str, raw: RawFrame, ts: float) -> Captured:
        number = sd.record_of(raw.offset + len(raw.data)) + 1
        return _captured(ts, fd.flow, direction, fd.conversation.decode(raw, direction, ts, number), number)

    def _run(self, fd: FlowDecoder, sd: Side, direction: str, run: RawRun, ts: float, out: list) -> None:
        """Whole frames in a row: what the lane takes, and the rest frame by frame."""
        data, offset, take = run.data, run.offset, self.lane.take
        pos, n = 0, len(data)
        while pos < n:
            end, got = take(fd, sd, direction, data, pos, offset, ts)
            if got is None:
                end = pos + HEADER_SIZE + int.from_bytes(data[pos + 8:pos + 12], "big")
                got = self._frame(fd, sd, direction, RawFrame(offset + pos, data[pos:end]), ts)
            elif type(got) is tuple:  # decoded and judged with findings: the ordinary record
                got = _captured(ts, fd.flow, direction, *got)
            out.append(got)
            pos = end

    def _close_flow(self, fd: FlowDecoder, out: list, ts: float | None) -> None:
        if fd.protocol != "mcbp":
            return
        for direction, sd in fd.sides.items():
            if sd.splitter.buffered:
                self._items(fd, direction, sd.splitter.close(), ts if ts is not None else 0.0, out)
        fd.sides.clear()
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
