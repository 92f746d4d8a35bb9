"""Per-flow, per-direction TCP stream reassembly (sans-I/O).

``Reassembler.feed`` takes ``Segment``s in capture order and returns events:
``Start`` when a flow is first seen, ``Data`` for each newly contiguous run of
bytes, ``Gap`` for bytes that will never come, ``End`` when the flow closes.
Sequence numbers are compared modulo 2**32; stream offsets are unbounded.
Out-of-order data is buffered up to ``max_buffer`` bytes per direction, then
the first hole is declared a ``Gap``. The state is plain picklable objects.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from dataclasses import dataclass, field
from typing import Iterator

from dcpinspect.transport.packet import Segment
from ..limits import FLOWS, OUT_OF_ORDER

__all__ = [
    "FlowKey", "Data", "Gap", "Start", "End", "FlowStats", "Reassembler", "DEFAULT_SERVER_PORTS",
]

FlowKey = tuple[str, int, str, int]
"""(client_ip, client_port, server_ip, server_port)"""

DEFAULT_SERVER_PORTS = frozenset({11210, 11209, 11211, 11207})
#: Default cap on the flows tracked at once (both directions of a connection are one flow);
#: a new flow past it ends the least recently active tenth with ``End(reason='evicted')``.
MAX_FLOWS = FLOWS.default

_FIN, _SYN, _RST, _ACK = 0x01, 0x02, 0x04, 0x10
_MASK = 0xFFFFFFFF
_HALF = 0x80000000


@dataclass(slots=True, unsafe_hash=True)
class Data:
    """Contiguous bytes of one direction's stream starting at ``offset``;
    ``index`` is the record that made them contiguous. Not frozen, as
    :class:`~dcpinspect.sources.capture.Record`: one is made a packet."""

    flow: FlowKey
    direction: str
    offset: int
    data: bytes
    ts: float
    index: int


@dataclass(frozen=True, slots=True)
class Gap:
    """``missing`` bytes at ``offset`` that will never be delivered. ``reason``:
    'overflow' (out-of-order buffer full), 'snaplen' (cut by the capture), or
    the reason of the ``End`` that gave up on them."""

    flow: FlowKey
    direction: str
    offset: int
    missing: int
    ts: float
    reason: str


@dataclass(frozen=True, slots=True)
class Start:
    """A flow is first seen; ``midstream`` when its opening SYN was not. ``state`` is the
    flow's record (of the reassembler's ``flow_type``), where its user keeps its own state."""

    flow: FlowKey
    ts: float
    midstream: bool
    index: int = field(default=0, compare=False)  # the capture record that began it
    state: "Flow | None" = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class End:
    """A flow is over. ``reason``: 'fin', 'rst', 'eof' (capture ended),
    'reuse' (a new SYN on the same ports) or 'evicted' (too many flows)."""

    flow: FlowKey
    ts: float
    reason: str
    state: "Flow | None" = field(default=None, compare=False, repr=False)  # as in Start


@dataclass(frozen=True, slots=True)
class FlowStats:
    """Counters of one flow, both directions together."""

    packets: int
    bytes: int
    gaps: int
    gap_bytes: int
    retransmissions: int
    out_of_order: int


class _Dir:
    """One direction: ``base`` is the sequence number of stream offset 0;
    ``off`` the next offset to deliver; out-of-order pieces sit in ``chunks``
    (offset -> bytes, or an int count of bytes known lost) with sorted ``starts``.
    Both are made when the first piece is held (an idle direction holds none), and the
    direction itself when its flow first needs it (a silent direction has none)."""

    __slots__ = ("flow", "name", "started", "base", "syn", "off", "fin", "starts", "chunks", "buffered")

    def __init__(self, flow: "Flow", name: str):
        self.flow = flow
        self.name = name
        self.started = False
        self.base = 0
        self.syn = -1
        self.off = 0
        self.fin = -1
        self.starts: list[int] | tuple = ()
        self.chunks: dict[int, bytes | int] | None = None
        self.buffered = 0


class Flow:
    """One tracked connection, both directions (each made when first needed). A user of
    the reassembler may extend it with slots of its own (``Reassembler(flow_type=...)``),
    so that a connection's state is one record, in one table."""

    __slots__ = ("key", "c2s", "s2c", "closed", "closing", "last_ts", "last_index",
                 "packets", "bytes", "gaps", "gap_bytes", "retrans", "ooo")

    def __init__(self, key: FlowKey, ts: float):
        self.key = key
        self.c2s: _Dir | None = None
        self.s2c: _Dir | None = None
        self.closed = False
        self.closing = False
        self.last_ts = ts
        self.last_index = -1
        self.packets = self.bytes = self.gaps = self.gap_bytes = self.retrans = self.ooo = 0


class Reassembler:
    """TCP reassembly over many concurrent flows; see the module docstring."""

    def __init__(self, server_ports: frozenset[int] | set[int] = DEFAULT_SERVER_PORTS,
                 max_buffer: int = OUT_OF_ORDER.default, max_flows: int = MAX_FLOWS,
                 flow_type: type[Flow] = Flow):
        self.server_ports = frozenset(server_ports)
        self.flow_type = flow_type
        #: one int object for each server port, however many flow keys hold it
        self._ports: dict[int, int] = {}
        self.max_buffer = max_buffer
        self.max_flows = max(1, max_flows)
        self.max_chunks = max(64, max_buffer // 64)
        self._flows: dict[tuple[str, int, str, int], Flow] = {}  # by their (client, server) keys
        #: ``record(flow)``: the record of a tracked flow (open, or closed and not yet
        #: evicted), or None; the table's own lookup, as it is asked once an event
        self.record = self._flows.get
        self._count = 0

    # -- public -----------------------------------------------------------------------

    def feed(self, seg: Segment) -> list[Data | Gap | Start | End]:
        """Events caused by one segment (UDP segments are ignored)."""
        if seg.proto != "tcp":
            return []
        payload = seg.payload
        d = self._dir((seg.src, seg.sport, seg.dst, seg.dport))
        if d is None:
            if not payload and not seg.flags & (_SYN | _FIN) and not seg.truncated:
                return []  # pure ACKs and stray RSTs do not open flows
            ev = self._create(seg)
            d = self._dir((seg.src, seg.sport, seg.dst, seg.dport))
        else:
            ev = None
        flow = d.flow
        flow.packets += 1
        flow.bytes += len(payload)
        flow.last_ts = seg.ts
        flow.last_index = seg.index
        if ev is None and not seg.flags & 7 and not flow.closed:
            if not payload and not seg.truncated:
                return []
            if d.started:
                off = d.off
                if (not ((seg.seq - d.base - off) & _MASK) and not d.starts and d.fin < 0
                        and not seg.truncated):
                    d.off = off + len(payload)
                    return [Data(flow.key, d.name, off, payload, seg.ts, seg.index)]
        if ev is None:
            ev = []
        self._process(flow, d, seg, ev)
        return ev

    def flush(self) -> list[Data | Gap | Start | End]:
        """At end of input: deliver what is buffered (with Gaps over holes) and end open flows."""
        return [ev for evs in self.flushing() for ev in evs]

    def flushing(self) -> Iterator[list[Data | Gap | Start | End]]:
        """:meth:`flush`, one flow's events at a time (the caller need not hold them all)."""
        for flow in list(self._flows.values()):
            if not flow.closed:
                ev: list = []
                self._close(flow, "fin" if flow.closing else "eof", flow.last_ts, flow.last_index, ev)
                yield ev

    def in_order(self, key: tuple[str, int, str, int]) -> tuple[FlowKey, str, int | None] | None:
        """One direction of a tracked, open flow (``key``: the ``(src, sport, dst, dport)`` of
        its segments): its flow key, its name, and the sequence number its next bytes carry
        when :meth:`feed` would deliver them at once (nothing held out of order, no FIN yet),
        else None there. None for a flow not tracked, or closed."""
        d = self._dir(key)
        if d is None or d.flow.closed:
            return None
        flow = d.flow
        nxt = (d.base + d.off) & _MASK if d.started and not d.starts and d.fin < 0 else None
        return flow.key, d.name, nxt

    def advance(self, key: tuple[str, int, str, int], packets: int, size: int, ts: float, index: int) -> None:
        """Count ``packets`` segments of one direction that were taken elsewhere while it was
        in order (:meth:`in_order`): pure ACKs, and ``size`` bytes delivered in order. The
        last of them came at ``ts`` in record ``index``. The flow stands as if :meth:`feed`
        had had them."""
        d = self._dir(key)
        flow = d.flow
        flow.packets += packets
        flow.bytes += size
        d.off += size
        if index > flow.last_index:
            flow.last_ts, flow.last_index = ts, index

    def packets(self, key: tuple[str, int, str, int]) -> int:
        """Segments seen of the flow of direction ``key`` (0 if it is not tracked)."""
        d = self._dir(key)
        return 0 if d is None else d.flow.packets

    @property
    def full(self) -> bool:
        """The next new flow evicts old ones."""
        return self._count >= self.max_flows

    def stats(self, flow: FlowKey) -> FlowStats | None:
        """Counters of a tracked flow (open, or closed and not yet evicted)."""
        f = self._flows.get(flow)
        if f is None:
            return None
        return FlowStats(f.packets, f.bytes, f.gaps, f.gap_bytes, f.retrans, f.ooo)

    def buffered(self, flow: FlowKey) -> int:
        """Out-of-order bytes held for a flow, both directions."""
        f = self._flows.get(flow)
        return 0 if f is None else sum(d.buffered for d in (f.c2s, f.s2c) if d is not None)

    def flows(self) -> list[FlowKey]:
        """Tracked flows, oldest first."""
        return list(self._flows)

    def records(self) -> list[Flow]:
        """The records of the tracked flows, oldest first."""
        return list(self._flows.values())

    def turn(self, flow: FlowKey) -> Flow | None:
        """A flow whose sides were guessed (joined without its SYN) is the other way round:
        its record is kept under the reversed key, its directions swapped. None if it is
        not tracked."""
        f = self._flows.pop(flow, None)
        if f is None:
            return None
        f.key = (flow[2], flow[3], flow[0], flow[1])
        f.c2s, f.s2c = f.s2c, f.c2s
        for d, name in ((f.c2s, "c2s"), (f.s2c, "s2c")):
            if d is not None:
                d.name = name
        self._flows[f.key] = f
        return f

    # -- flow table ---------------------------------------------------------------------

    def _dir(self, key: tuple[str, int, str, int]) -> _Dir | None:
        """The direction whose segments carry ``key`` as (src, sport, dst, dport): a flow is
        kept once, by its (client, server) key, so the server's segments look it up reversed."""
        flow = self._flows.get(key)
        if flow is not None:
            d = flow.c2s
            if d is None:
                d = flow.c2s = _Dir(flow, "c2s")
            return d
        src, sport, dst, dport = key
        flow = self._flows.get((dst, dport, src, sport))
        if flow is None:
            return None
        d = flow.s2c
        if d is None:
            d = flow.s2c = _Dir(flow, "s2c")
        return d

    def _create(self, seg: Segment) -> list:
        ev: list = []
        if self._count >= self.max_flows:
            self._evict(ev)
        flags = seg.flags
        a, b = (seg.src, seg.sport), (seg.dst, seg.dport)
        if flags & _SYN:
            src_is_client = not flags & _ACK
        elif (seg.dport in self.server_ports) != (seg.sport in self.server_ports):
            src_is_client = seg.dport in self.server_ports
        elif seg.sport != seg.dport:
            src_is_client = seg.sport > seg.dport
        else:
            src_is_client = True
        client, server = (a, b) if src_is_client else (b, a)
        ports = self._ports  # a server's port is shared by many flows, a client's by few
        if len(ports) >= 4096:
            ports.clear()
        flow = self.flow_type((client[0], client[1], server[0], ports.setdefault(server[1], server[1])), seg.ts)
        self._flows[flow.key] = flow
        self._count += 1
        ev.append(Start(flow.key, seg.ts, not flags & _SYN, seg.index, flow))
        return ev

    def _evict(self, ev: list) -> None:
        flows = list(self._flows.values())
        flows.sort(key=lambda f: (not f.closed, f.last_ts))
        for f in flows[:max(1, self.max_flows // 10)]:
            if not f.closed:
                self._close(f, "evicted", f.last_ts, f.last_index, ev)
            del self._flows[f.key]
            self._count -= 1

    # -- segment processing -------------------------------------------------------------

    def _process(self, flow: Flow, d: _Dir, seg: Segment, ev: list) -> None:
        flags = seg.flags
        seq = seg.seq
        if flow.closed:
            if flags & _SYN and not flags & _ACK:
                self._reopen(flow, seg, ev)
            elif seg.payload:
                flow.retrans += 1
            return
        if flags & _SYN:
            if not d.started:
                d.started = True
                d.syn = seq
                d.base = (seq + 1) & _MASK
                other = flow.s2c if d is flow.c2s else flow.c2s
                if other is None:
                    other = self._other(flow, d)
                if flags & _ACK and not other.started:  # SYN-ACK: its ack is the peer's first byte
                    other.started = True
                    other.base = seg.ack
                    other.syn = (seg.ack - 1) & _MASK
            elif seq != d.syn and d is flow.c2s and not flags & _ACK:
                self._close(flow, "reuse", seg.ts, seg.index, ev)
                self._reopen(flow, seg, ev)
                return
            elif not seg.payload:
                flow.retrans += 1
            seq = (seq + 1) & _MASK
        elif not d.started:
            d.started = True
            d.base = seq
        if flags & _RST:
            self._close(flow, "rst", seg.ts, seg.index, ev)
            return
        o = d.off + (((seq - d.base - d.off + _HALF) & _MASK) - _HALF)
        payload = seg.payload
        span = len(payload)
        if seg.truncated and seg.payload_len > span:
            span = seg.payload_len
        if span:
            self._add(flow, d, o, payload, span, seg, ev)
        if flags & _FIN and d.fin < 0:
            d.fin = max(o + span, d.off)
        c2s, s2c = flow.c2s, flow.s2c
        if c2s is not None and s2c is not None and c2s.fin >= 0 and s2c.fin >= 0:
            flow.closing = True
            if _done(c2s) and _done(s2c):
                self._close(flow, "fin", seg.ts, seg.index, ev)

    @staticmethod
    def _other(flow: Flow, d: _Dir) -> _Dir:
        """The direction opposite ``d``, made if it was not yet."""
        if d is flow.c2s:
            if flow.s2c is None:
                flow.s2c = _Dir(flow, "s2c")
            return flow.s2c
        if flow.c2s is None:
            flow.c2s = _Dir(flow, "c2s")
        return flow.c2s

    def _reopen(self, old: Flow, seg: Segment, ev: list) -> None:
        del self._flows[old.key]
        self._count -= 1
        ev.extend(self._create(seg))
        d = self._dir((seg.src, seg.sport, seg.dst, seg.dport))
        flow = d.flow
        flow.packets += 1
        flow.bytes += len(seg.payload)
        flow.last_index = seg.index
        self._process(flow, d, seg, ev)

    def _add(self, flow: Flow, d: _Dir, o: int, payload: bytes, span: int, seg: Segment,
             ev: list) -> None:
        """Place ``span`` bytes at stream offset ``o``: ``payload`` then (span - len) lost bytes."""
        if d.fin >= 0 and o + span > d.fin:  # nothing exists past the FIN
            if o >= d.fin:
                return
            span = d.fin - o
            payload = payload[:span]
        end = o + span
        if end <= d.off:
            flow.retrans += 1
            return
        seen = o < d.off  # some of it was delivered already: a retransmission
        if seen:
            payload = payload[d.off - o:]
            o = d.off
        elif o > d.off:
            flow.ooo += 1
        lost = end - o - len(payload)
        if o == d.off and not d.starts:
            if payload:
                ev.append(Data(flow.key, d.name, o, payload, seg.ts, seg.index))
            if lost:
                self._gap(flow, d, o + len(payload), lost, seg.ts, "snaplen", ev)
            d.off = end
            if seen:
                flow.retrans += 1
            return
        if payload and _insert(d, o, payload):
            seen = True
        if lost and _insert(d, end - lost, lost):
            seen = True
        if seen:
            flow.retrans += 1
        self._drain(flow, d, seg.ts, seg.index, ev)
        while d.starts and (d.buffered > self.max_buffer or len(d.starts) > self.max_chunks):
            self._skip_hole(flow, d, seg.ts, seg.index, "overflow", ev)

    def _drain(self, flow: Flow, d: _Dir, ts: float, index: int, ev: list) -> None:
        """Deliver buffered pieces that have become contiguous."""
        starts, chunks = d.starts, d.chunks
        if not starts or starts[0] != d.off:
            return
        parts: list[bytes] = []
        first = d.off
        n = 0
        while n < len(starts) and starts[n] == d.off:
            v = chunks.pop(starts[n])
            n += 1
            if type(v) is int:
                if parts:
                    self._data(flow, d, first, parts, ts, index, ev)
                    parts = []
                self._gap(flow, d, d.off, v, ts, "snaplen", ev)
                d.off += v
                first = d.off
            else:
                parts.append(v)
                d.off += len(v)
                d.buffered -= len(v)
        del starts[:n]
        if not starts:  # nothing held any more
            d.starts, d.chunks = (), None
        if parts:
            self._data(flow, d, first, parts, ts, index, ev)

    def _skip_hole(self, flow: Flow, d: _Dir, ts: float, index: int, reason: str, ev: list) -> None:
        """Give up on the bytes before the first buffered piece and deliver from there."""
        nxt = d.starts[0]
        if nxt > d.off:
            self._gap(flow, d, d.off, nxt - d.off, ts, reason, ev)
            d.off = nxt
        self._drain(flow, d, ts, index, ev)

    def _close(self, flow: Flow, reason: str, ts: float, index: int, ev: list) -> None:
        for d in (flow.c2s, flow.s2c):
            if d is None:
                continue
            while d.starts:
                self._skip_hole(flow, d, ts, index, reason, ev)
            if d.fin > d.off:
                self._gap(flow, d, d.off, d.fin - d.off, ts, reason, ev)
                d.off = d.fin
            d.chunks = None
            d.starts = ()
            d.buffered = 0
        flow.closed = True
        ev.append(End(flow.key, ts, reason, flow))

    @staticmethod
    def _data(flow: Flow, d: _Dir, offset: int, parts: list[bytes], ts: float, index: int,
              ev: list) -> None:
        ev.append(Data(flow.key, d.name, offset, parts[0] if len(parts) == 1 else b"".join(parts),
                       ts, index))

    @staticmethod
    def _gap(flow: Flow, d: _Dir, offset: int, missing: int, ts: float, reason: str, ev: list) -> None:
        flow.gaps += 1
        flow.gap_bytes += missing
        ev.append(Gap(flow.key, d.name, offset, missing, ts, reason))


def _done(d: _Dir) -> bool:
    return d.fin >= 0 and d.off >= d.fin and not d.starts


def _insert(d: _Dir, o: int, v: bytes | int) -> bool:
    """Buffer ``v`` at offset ``o`` (>= d.off) where nothing is buffered yet
    (earlier copies win). Returns True if any of it was already there."""
    size = v if type(v) is int else len(v)
    end = o + size
    starts, chunks = d.starts, d.chunks
    if chunks is None:  # the first piece held
        starts = d.starts = []
        chunks = d.chunks = {}
    i = bisect_right(starts, o) - 1
    cur = o
    covered = False
    if i >= 0:
        s = starts[i]
        w = chunks[s]
        e = s + (w if type(w) is int else len(w))
        if e > cur:
            cur = min(e, end)
            covered = True
    i += 1
    pieces = []
    while cur < end:
        if i < len(starts) and starts[i] < end:
            s = starts[i]
            if s > cur:
                pieces.append((cur, s))
            covered = True
            w = chunks[s]
            cur = max(cur, s + (w if type(w) is int else len(w)))
            i += 1
        else:
            pieces.append((cur, end))
            break
    for a, b in pieces:
        if type(v) is int:
            chunks[a] = b - a
        else:
            piece = v if (a == o and b == end) else v[a - o:b - o]
            chunks[a] = piece
            d.buffered += b - a
        insort(starts, a)
    return covered
