"""What ``stats`` counts of MCBP connections: DCP's vbuckets and streams, each TAP
connection (its own :class:`~.sessions.tap.TapSession`, which counts what the report shows
of it) and memcached's operations on the timeline. The part of every collector's report
that the family makes (:class:`McbpStats`, the ``stats_parts`` of the family).

Streams are tracked from the messages themselves: STREAM_REQ and its response, the
producer's stream messages (by opaque, else by vbucket + stream-id), STREAM_END, with the
catalog's sets of stream messages and seqno fields (:mod:`.sessions.streams`). It keeps, in
memory bounded per vbucket, counters, minima and maxima and a decimated ``(time, seqno)``
series.

Definitions used in the report:

* *items*: mutations, deletions, expirations, prepares, commits, aborts and
  system events (SeqnoAdvanced moves the seqno but is not an item).
* *snapshot size in seqnos*: ``end - max(start, 1) + 1`` of the marker (seqno 0
  never holds an item); *size in items*: items received between the marker and
  the next marker or STREAM_END (snapshots still open at the end of the
  capture count as they are).
* *gap*: a hole between consecutive seqnos of one stream, outside OSO
  snapshots, counted from the requested start seqno.  SeqnoAdvanced closes a
  hole without counting it; a seqno at or below the previous one counts as
  ``backwards`` instead.
* times are capture seconds; ``time_to_first_item`` and ``time_to_end`` run from
  the STREAM_REQ request.
"""

from __future__ import annotations

import heapq
import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Sequence

from ...sessions.bounded import MAX_SERIES_POINTS, Agg, DecimatedSeries, comparable, in_order, later, merge_counts, \
    pick, round_to
from ...sessions.captured import Captured, flow_label
from ...sessions.stats import ConnStats, StatsCollector, rate, span
from .messages.dcp import (
    OSO_FLAGS,
    SNAPSHOT_CHECKPOINT,
    SNAPSHOT_DISK,
    SNAPSHOT_FLAGS,
    SNAPSHOT_HISTORY,
    SNAPSHOT_MAY_DUPLICATE,
    SNAPSHOT_MEMORY,
    STREAM_END_REASONS,
)
from .messages.opcodes import OP, ST
from .messages.registry import CLIENT_SPECS
from .sessions.streams import SEQNO_OPCODES, STREAM_OPCODES
from .sessions.tap import TapSession

#: what a connection's ``protocols`` count MCBP frames as
MCBP = "mcbp"


class StreamRun(NamedTuple):
    """Frames in a row of one DCP stream's request opaque and vbucket, completed by one
    capture record: what the statistics count of them, without their messages (the fast
    lane's ``Lines.counted``). ``frames``: each frame as :data:`RUN_FRAME` packs it (native
    order): its opcode, size and stream id (-1: none), and an item's seqno or a marker's
    start, end and snapshot type."""

    ts: float
    number: int
    opaque: int
    vbucket: int
    frames: bytes

    #: the part that counts it (the collector's standing part of that name)
    stats_part = "mcbp"


#: a frame of a StreamRun (what _lane.c's Counted holds)
RUN_FRAME = "=QQqQQQ"
_RUN_FRAMES = struct.Struct(RUN_FRAME).iter_unpack

MAX_STREAM_RECORDS = 10_000  # per-stream rows kept for the report; aggregates keep counting
MAX_PENDING = 100_000  # outstanding STREAM_REQ opaques remembered

#: the report's key that counts each kind of stream message, in the report's order
COUNT_KEYS = ("mutations", "deletions", "expirations", "prepares", "commits", "aborts", "system_events",
              "seqno_advanced", "oso_snapshots")


def _count_key(opcode: int) -> str:
    """``DCP_MUTATION`` → ``mutations``: the key the report counts a stream message under."""
    name = CLIENT_SPECS[opcode].name.removeprefix("DCP_").lower()
    return name if name + "s" not in COUNT_KEYS else name + "s"


#: a request's name by opcode (what the connections' opcode counts call it)
_REQUEST_NAMES = {op: spec.name for op, spec in CLIENT_SPECS.items()}
#: Items (every stream message with a seqno but SeqnoAdvanced) and the report key that counts them.
ITEM_KINDS = {op: _count_key(op) for op in SEQNO_OPCODES if op != OP.DCP_SEQNO_ADVANCED}
#: Snapshot-type bits that name a type (Acknowledge is flow control, not a type).
SNAPSHOT_TYPE_BITS = ((SNAPSHOT_MEMORY, "memory"), (SNAPSHOT_DISK, "disk"), (SNAPSHOT_CHECKPOINT, "checkpoint"),
                      (SNAPSHOT_HISTORY, "history"), (SNAPSHOT_MAY_DUPLICATE, "may-duplicate"))
_TYPE_MASK = sum(SNAPSHOT_FLAGS)
#: DCP_OSO_SNAPSHOT's flags (spec/dcp.md)
OSO_START, OSO_END = ({name: bit for bit, name in OSO_FLAGS.items()}[n] for n in ("Start", "End"))


def snapshot_type_label(flags: int | None) -> str:
    """``disk+checkpoint`` style name of a marker's snapshot type."""
    if flags is None:
        return "unknown"
    names = [name for bit, name in SNAPSHOT_TYPE_BITS if flags & bit]
    rest = flags & ~_TYPE_MASK
    if rest:
        names.append(f"0x{rest:x}")
    return "+".join(names) or "none"


def end_reason_name(value: Any) -> str:
    if isinstance(value, int):
        return STREAM_END_REASONS.get(value, f"unknown ({value})")
    return "unknown" if value is None else str(value)


# -- per connection, vbucket, stream --------------------------------------------------------


# -- per vbucket and stream ----------------------------------------------------------------




@dataclass(slots=True)
class OpenSnapshot:
    start: int
    end: int
    flags: int
    items: int = 0

    @property
    def span(self) -> int:
        return max(0, self.end - max(self.start, 1) + 1)


@dataclass(slots=True)
class StreamStats:
    flow: Any
    vbucket: int
    stream_id: int | None
    opaque: int
    request_ts: float | None
    start_seqno: int | None = None
    end_seqno: int | None = None
    flags: int | None = None
    adopted: bool = False  # first seen mid-stream, without its request
    state: str = "requested"  # requested, open, rejected, ended
    status: str | None = None
    rollback_seqno: int | None = None
    accept_ts: float | None = None
    first_item_ts: float | None = None
    last_item_ts: float | None = None
    end_ts: float | None = None
    close_ts: float | None = None  # consumer sent CLOSE_STREAM
    end_reason: str | None = None
    items: int = 0
    counts: Counter = field(default_factory=Counter)
    snapshots: int = 0
    snap: OpenSnapshot | None = None
    first_seqno: int | None = None
    last_seqno: int | None = None
    cursor: int | None = None  # highest seqno outside OSO, for gaps
    in_oso: bool = False
    oso_max: int | None = None
    gaps: int = 0
    gap_max: int = 0
    gap_missing: int = 0
    backwards: int = 0
    bytes: int = 0
    order: Any = None  # where in the capture the stream was first seen

    @property
    def key(self) -> tuple:
        return (self.flow, self.vbucket, self.stream_id)


@dataclass(slots=True)
class VbStats:
    streams: int = 0
    rejected: int = 0
    snapshots: int = 0
    snapshot_types: Counter = field(default_factory=Counter)
    snapshot_seqnos: Agg = field(default_factory=Agg)  # closed snapshots only
    snapshot_items: Agg = field(default_factory=Agg)
    counts: Counter = field(default_factory=Counter)
    seqno_first: int | None = None
    seqno_last: int | None = None
    seqno_min: int | None = None
    seqno_max: int | None = None
    gaps: int = 0
    gap_max: int = 0
    gap_missing: int = 0
    backwards: int = 0
    bytes: int = 0
    frames: int = 0
    items: int = 0
    first_item_ts: float | None = None
    last_item_ts: float | None = None
    time_to_first_item: Agg = field(default_factory=Agg)
    time_to_end: Agg = field(default_factory=Agg)
    end_reasons: Counter = field(default_factory=Counter)
    connections: set = field(default_factory=set)
    series: DecimatedSeries = field(default_factory=DecimatedSeries)
    #: where in the capture the first and the last seqno came, and each snapshot type and end reason first
    seqno_first_key: Any = None
    seqno_last_key: Any = None
    snapshot_type_keys: dict = field(default_factory=dict)
    end_reason_keys: dict = field(default_factory=dict)

    def merge(self, other: "VbStats") -> None:
        for name in ("streams", "rejected", "snapshots", "gaps", "gap_missing", "backwards", "bytes", "frames",
                     "items"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.gap_max = max(self.gap_max, other.gap_max)
        self.snapshot_types, self.snapshot_type_keys = merge_counts(
            self.snapshot_types, self.snapshot_type_keys, other.snapshot_types, other.snapshot_type_keys)
        self.end_reasons, self.end_reason_keys = merge_counts(
            self.end_reasons, self.end_reason_keys, other.end_reasons, other.end_reason_keys)
        for name in ("snapshot_seqnos", "snapshot_items", "time_to_first_item", "time_to_end"):
            getattr(self, name).merge(getattr(other, name))
        self.counts.update(other.counts)
        if other.seqno_first is not None and (self.seqno_first is None or
                                              later(self.seqno_first_key, other.seqno_first_key)):
            self.seqno_first, self.seqno_first_key = other.seqno_first, other.seqno_first_key
        if other.seqno_last is not None and (self.seqno_last is None or
                                             not later(self.seqno_last_key, other.seqno_last_key)):
            self.seqno_last, self.seqno_last_key = other.seqno_last, other.seqno_last_key
        self.seqno_min = pick(min, self.seqno_min, other.seqno_min)
        self.seqno_max = pick(max, self.seqno_max, other.seqno_max)
        self.first_item_ts = pick(min, self.first_item_ts, other.first_item_ts)
        self.last_item_ts = pick(max, self.last_item_ts, other.last_item_ts)
        self.connections |= other.connections
        self.series.merge(other.series)


# -- the part ---------------------------------------------------------------------------------


class McbpStats:
    """The MCBP part of a :class:`~dcpinspect.sessions.stats.StatsCollector`: made with
    every collector (its entries are in every report), fed each MCBP frame and each run of
    frames the fast lane wrote. Plain data: it pickles, and :meth:`merge` folds in one fed
    with other connections of the same capture."""

    name = "mcbp"

    def __init__(self, max_series_points: int = MAX_SERIES_POINTS,
                 max_stream_records: int = MAX_STREAM_RECORDS) -> None:
        self.max_series_points = max_series_points
        self.max_stream_records = max_stream_records
        self.vbuckets: dict[int, VbStats] = {}
        self.stream_records: list[StreamStats] = []
        self.streams_omitted = 0
        self._by_opaque: dict[tuple, StreamStats] = {}  # (flow, opaque) → requested or live stream
        self._active: dict[tuple, StreamStats] = {}  # (flow, vbucket, stream id) → live stream
        #: TAP connections: each its own session (sessions.tap), which counts what the report shows
        self._tap: dict[Any, TapSession] = {}
        self._tap_keys: dict[Any, Any] = {}
        self._c: StatsCollector | None = None  # the collector being fed
        self._key: Any = None  # the key of the item being added

    def _vb(self, vbucket: int) -> VbStats:
        vs = self.vbuckets.get(vbucket)
        if vs is None:
            vs = self.vbuckets[vbucket] = VbStats(series=DecimatedSeries(self.max_series_points))
        return vs

    # -- input ---------------------------------------------------------------------------

    def add_run(self, flow: Any, direction: str, run: StreamRun, key: Any, collector: StatsCollector) -> None:
        """A stream's frames in a row, each counted as its message is by :meth:`add`."""
        self._c, self._key = collector, key
        frames = list(_RUN_FRAMES(run.frames))
        cs, ts = collector.count(flow, direction, run.ts, len(frames), sum(f[1] for f in frames))
        cs.protocols[MCBP] += len(frames)
        opcodes, message, vbucket, opaque = cs.opcodes, self._stream_message, run.vbucket, run.opaque
        for op, size, sid, a, b, c in frames:
            opcodes[_REQUEST_NAMES[op]] += 1
            values = {"start_seqno": a, "end_seqno": b, "snapshot_type": c} if op == OP.DCP_SNAPSHOT_MARKER \
                else {SEQNO_OPCODES[op]: a}
            message(flow, op, vbucket, opaque, None if sid < 0 else sid, size, values, values, ts, cs)

    def add(self, item: Captured, ts: float | None, key: Any, collector: StatsCollector) -> None:
        """A decoded MCBP frame, counted already as every frame is (``ts``: its time as the
        collector counts it)."""
        self._c, self._key = collector, key
        msg = item.msg
        request = msg.is_request
        spec = msg.spec
        if spec is None or spec.family != "dcp":
            if spec is not None and (spec.family == "tap" or (msg.opcode == OP.NOOP and item.flow in self._tap)):
                tap = self._tap.get(item.flow)
                if tap is None:
                    tap = self._tap[item.flow] = TapSession()
                    self._tap_keys[item.flow] = key
                tap.apply(msg, item.direction or None, ts, item.number)
            elif spec is not None and request and ts is not None:  # a memcached operation
                collector.timeline.add_op(ts, msg.name)
            return
        cs = collector.conn(item.flow)
        op = msg.opcode
        if op == OP.DCP_STREAM_REQ:
            if request:
                self._stream_request(item, ts, cs)
            else:
                self._stream_response(item, ts)
        elif request and op in STREAM_OPCODES:
            self._stream_message(item.flow, op, msg.vbucket, msg.opaque, msg.stream_id, msg.size, msg.values,
                                 msg.fields, ts, cs)
        elif request and op == OP.DCP_CLOSE_STREAM:
            s = self._active.get((item.flow, msg.vbucket, msg.stream_id))
            vs = self._vb(msg.vbucket or 0)
            vs.bytes += msg.size
            vs.frames += 1
            if s is not None:
                s.close_ts = ts
                s.bytes += msg.size

    # -- streams ---------------------------------------------------------------------------

    def _remember(self, s: StreamStats) -> None:
        s.order = self._key
        if len(self.stream_records) < self.max_stream_records:
            self.stream_records.append(s)
        else:
            self.streams_omitted += 1

    def _stream_request(self, item: Captured, ts: float | None, cs: ConnStats) -> None:
        msg = item.msg
        sid = msg.fields.get("stream_id")
        if not isinstance(sid, int) or isinstance(sid, bool):
            sid = msg.stream_id
        v = msg.values
        s = StreamStats(item.flow, msg.vbucket or 0, sid, msg.opaque, ts, v.get("start_seqno"), v.get("end_seqno"),
                        v.get("flags"))
        s.cursor = s.start_seqno
        s.bytes += msg.size
        key = (item.flow, msg.opaque)
        self._by_opaque.pop(key, None)
        self._by_opaque[key] = s
        if len(self._by_opaque) > MAX_PENDING:
            self._by_opaque.pop(next(iter(self._by_opaque)))
        vs = self._vb(s.vbucket)
        vs.streams += 1
        vs.bytes += msg.size
        vs.frames += 1
        vs.connections.add(item.flow)
        cs.streams += 1
        self._remember(s)

    def _stream_response(self, item: Captured, ts: float | None) -> None:
        msg = item.msg
        key = (item.flow, msg.opaque)
        s = self._by_opaque.get(key)
        if s is None or s.state != "requested":
            return
        vs = self._vb(s.vbucket)
        vs.bytes += msg.size
        vs.frames += 1
        s.bytes += msg.size
        s.status = msg.status_name
        if msg.status == ST.Success:
            s.accept_ts = ts
            self._open(s)
        else:
            s.state = "rejected"
            vs.rejected += 1
            rb = msg.fields.get("rollback_seqno")
            s.rollback_seqno = rb if isinstance(rb, int) else None
            del self._by_opaque[key]

    def _open(self, s: StreamStats) -> None:
        s.state = "open"
        old = self._active.get(s.key)
        if old is not None and old is not s:  # a new stream replaces one that never ended
            self._close_snapshot(old)
            self._by_opaque.pop((old.flow, old.opaque), None)
        self._active[s.key] = s

    def _find_stream(self, flow: Any, vbucket: int | None, opaque: int, stream_id: int | None) -> StreamStats:
        s = self._by_opaque.get((flow, opaque))
        if s is not None and s.vbucket == vbucket and (
            stream_id is None or s.stream_id is None or stream_id == s.stream_id
        ):
            if s.state == "requested":  # its response was not captured
                self._open(s)
            return s
        s = self._active.get((flow, vbucket, stream_id))
        if s is not None:
            return s
        s = StreamStats(flow, vbucket or 0, stream_id, opaque, None, adopted=True)
        self._by_opaque[(flow, opaque)] = s
        self._open(s)
        vs = self._vb(s.vbucket)
        vs.streams += 1
        vs.connections.add(flow)
        self._c.conn(flow).streams += 1
        self._remember(s)
        return s

    def _stream_message(self, flow: Any, op: int, vbucket: int | None, opaque: int, stream_id: int | None,
                        size: int, values: dict, fields: dict, ts: float | None, cs: ConnStats) -> None:
        """A producer's stream message (request): its header members, size, values (the
        layouts' integers) and fields (as shown)."""
        s = self._find_stream(flow, vbucket, opaque, stream_id)
        vs = self._vb(s.vbucket)
        vs.bytes += size
        vs.frames += 1
        s.bytes += size
        if op == OP.DCP_SNAPSHOT_MARKER:
            self._close_snapshot(s)
            start, end, flags = values.get("start_seqno"), values.get("end_seqno"), values.get("snapshot_type")
            s.snapshots += 1
            vs.snapshots += 1
            label = snapshot_type_label(flags)
            if label not in vs.snapshot_types:
                vs.snapshot_type_keys[label] = self._key
            vs.snapshot_types[label] += 1
            s.snap = OpenSnapshot(start, end, flags) if start is not None and end is not None else None
            return
        if op == OP.DCP_STREAM_END:
            self._end(s, values.get("reason", fields.get("reason")), ts)
            return
        if op == OP.DCP_OSO_SNAPSHOT:
            flags = values.get("flags", 0)
            if flags & OSO_START:
                s.in_oso = True
                s.oso_max = None
                s.counts["oso_snapshots"] += 1
                vs.counts["oso_snapshots"] += 1
            if flags & OSO_END and s.in_oso:
                s.in_oso = False
                if s.oso_max is not None:
                    s.cursor = s.oso_max if s.cursor is None else max(s.cursor, s.oso_max)
                    if ts is not None and self._c.timeline.t0 is not None:
                        vs.series.add(ts, s.cursor, self._key)
            return
        kind = ITEM_KINDS.get(op)
        if kind is not None:
            self._item(s, vs, cs, kind, ts)
        elif op == OP.DCP_SEQNO_ADVANCED:
            s.counts["seqno_advanced"] += 1
            vs.counts["seqno_advanced"] += 1
        name = SEQNO_OPCODES.get(op)
        seqno = values.get(name) if name else None
        if isinstance(seqno, int):
            self._seqno(s, vs, seqno, ts, advance=op == OP.DCP_SEQNO_ADVANCED)

    def _item(self, s: StreamStats, vs: VbStats, cs: ConnStats, kind: str, ts: float | None) -> None:
        s.items += 1
        s.counts[kind] += 1
        vs.items += 1
        vs.counts[kind] += 1
        cs.items += 1
        self._c.items += 1
        if s.snap is not None:
            s.snap.items += 1
        if ts is None:
            return
        if s.first_item_ts is None:
            s.first_item_ts = ts
            if s.request_ts is not None:
                vs.time_to_first_item.add(ts - s.request_ts)
        s.last_item_ts = ts
        if vs.first_item_ts is None or ts < vs.first_item_ts:
            vs.first_item_ts = ts
        if vs.last_item_ts is None or ts > vs.last_item_ts:
            vs.last_item_ts = ts
        self._c.timeline.add_item(ts, s.vbucket)

    def _seqno(self, s: StreamStats, vs: VbStats, seqno: int, ts: float | None, advance: bool) -> None:
        if s.first_seqno is None:
            s.first_seqno = seqno
        s.last_seqno = seqno
        if vs.seqno_first is None:
            vs.seqno_first, vs.seqno_first_key = seqno, self._key
        vs.seqno_last, vs.seqno_last_key = seqno, self._key
        if vs.seqno_min is None or seqno < vs.seqno_min:
            vs.seqno_min = seqno
        if vs.seqno_max is None or seqno > vs.seqno_max:
            vs.seqno_max = seqno
        if s.in_oso:
            s.oso_max = seqno if s.oso_max is None else max(s.oso_max, seqno)
            return
        cur = s.cursor
        if cur is not None:
            if seqno > cur + 1 and not advance:
                hole = seqno - cur - 1
                s.gaps += 1
                s.gap_missing += hole
                s.gap_max = max(s.gap_max, hole)
                vs.gaps += 1
                vs.gap_missing += hole
                vs.gap_max = max(vs.gap_max, hole)
            elif seqno <= cur:
                s.backwards += 1
                vs.backwards += 1
        s.cursor = seqno if cur is None else max(cur, seqno)
        if ts is not None and self._c.timeline.t0 is not None:
            vs.series.add(ts, seqno, self._key)

    def _close_snapshot(self, s: StreamStats) -> None:
        if s.snap is not None:
            vs = self._vb(s.vbucket)
            vs.snapshot_seqnos.add(s.snap.span)
            vs.snapshot_items.add(s.snap.items)
            s.snap = None

    def _end(self, s: StreamStats, reason: Any, ts: float | None) -> None:
        vs = self._vb(s.vbucket)
        self._close_snapshot(s)
        s.state = "ended"
        s.end_ts = ts
        s.end_reason = end_reason_name(reason)
        if s.end_reason not in vs.end_reasons:
            vs.end_reason_keys[s.end_reason] = self._key
        vs.end_reasons[s.end_reason] += 1
        if ts is not None and s.request_ts is not None:
            vs.time_to_end.add(ts - s.request_ts)
        if self._active.get(s.key) is s:
            del self._active[s.key]
        if self._by_opaque.get((s.flow, s.opaque)) is s:
            del self._by_opaque[(s.flow, s.opaque)]

    # -- parts -----------------------------------------------------------------------------

    def merge(self, other: "McbpStats") -> None:
        """Take in what ``other`` counted of other connections of the same capture (the
        streams and TAP connections keep the order they came in; a vbucket series that
        either part had to thin is thinned again from what both kept)."""
        for vb, vs in other.vbuckets.items():
            if vb in self.vbuckets:
                self.vbuckets[vb].merge(vs)
            else:
                self.vbuckets[vb] = vs
        records = list(heapq.merge(self.stream_records, other.stream_records, key=lambda s: s.order)) \
            if comparable([s.order for s in self.stream_records + other.stream_records]) \
            else self.stream_records + other.stream_records
        kept = self.max_stream_records
        self.streams_omitted += other.streams_omitted + max(0, len(records) - kept)
        self.stream_records = records[:kept]
        self._by_opaque.update(other._by_opaque)
        self._active.update(other._active)
        self._tap.update(other._tap)
        self._tap_keys.update(other._tap_keys)
        self._tap = in_order(self._tap, lambda flow, tap: self._tap_keys.get(flow))

    # -- output ----------------------------------------------------------------------------

    def counts(self) -> dict[str, Any]:
        """What the report's ``capture`` entry counts of it."""
        return {"vbuckets": len(self.vbuckets), "streams": len(self.stream_records) + self.streams_omitted}

    def entries(self, t0: float | None) -> dict[str, dict[str, Any]]:
        """Its entries of the report, by the entry of the collector's they follow."""
        open_snaps: dict[int, list[OpenSnapshot]] = {}
        for s in self._active.values():
            if s.snap is not None:
                open_snaps.setdefault(s.vbucket, []).append(s.snap)
        out = {
            "connections": {
                "vbuckets": {str(vb): _vb_json(vs, open_snaps.get(vb, ())) for vb, vs in sorted(self.vbuckets.items())},
                "streams": [_stream_json(s) for s in self.stream_records],
                "streams_omitted": self.streams_omitted,
            },
            "timeline": {
                "series": {
                    str(vb): [[round(t - t0, 6), v] for t, v in vs.series.values()]  # (round_to, inline)
                    for vb, vs in sorted(self.vbuckets.items())
                    if vs.series.last is not None
                },
            },
        }
        if self._tap:  # TAP connections: per connection and vbucket (sessions.tap computes them)
            out["findings_at"] = {"tap": {flow_label(flow): tap.stats() for flow, tap in self._tap.items()}}
        return out



def _vb_json(vs: VbStats, open_snaps: Sequence[OpenSnapshot]) -> dict[str, Any]:
    seqnos = vs.snapshot_seqnos.merged(sn.span for sn in open_snaps)
    items = vs.snapshot_items.merged(sn.items for sn in open_snaps)
    active = span(vs.first_item_ts, vs.last_item_ts)
    return {
        "connections": len(vs.connections),
        "streams": vs.streams,
        "rejected_streams": vs.rejected,
        "snapshots": {
            "count": vs.snapshots,
            "by_type": dict(vs.snapshot_types.most_common()),
            "seqnos": {"mean": round_to(seqnos.mean, 3), "max": seqnos.hi},
            "items": {"mean": round_to(items.mean, 3), "max": items.hi},
        },
        **{k: vs.counts[k] for k in COUNT_KEYS},
        "items": vs.items,
        "seqno": {"first": vs.seqno_first, "last": vs.seqno_last, "min": vs.seqno_min, "max": vs.seqno_max},
        "gaps": {"count": vs.gaps, "largest": vs.gap_max, "missing": vs.gap_missing, "backwards": vs.backwards},
        "frames": vs.frames,
        "bytes": vs.bytes,
        "first_item_ts": vs.first_item_ts,
        "last_item_ts": vs.last_item_ts,
        "items_per_s": rate(vs.items, active),
        "time_to_first_item": vs.time_to_first_item.json(),
        "time_to_end": vs.time_to_end.json(),
        "end_reasons": dict(vs.end_reasons.most_common()),
    }


def _stream_json(s: StreamStats) -> dict[str, Any]:
    ttfi = span(s.request_ts, s.first_item_ts)
    tte = span(s.request_ts, s.end_ts)
    snap = s.snap
    return {
        "connection": flow_label(s.flow),
        "vbucket": s.vbucket,
        "stream_id": s.stream_id,
        "opaque": s.opaque,
        "adopted": s.adopted,
        "request": {"start_seqno": s.start_seqno, "end_seqno": s.end_seqno, "flags": s.flags},
        "state": s.state,
        "status": s.status,
        "rollback_seqno": s.rollback_seqno,
        "request_ts": s.request_ts,
        "accept_ts": s.accept_ts,
        "first_item_ts": s.first_item_ts,
        "end_ts": s.end_ts,
        "close_ts": s.close_ts,
        "time_to_first_item": round_to(ttfi),
        "time_to_end": round_to(tte),
        "end_reason": s.end_reason,
        "items": s.items,
        "counts": {k: s.counts[k] for k in COUNT_KEYS},
        "snapshots": s.snapshots,
        "open_snapshot": None if snap is None else {
            "start": snap.start, "end": snap.end, "type": snapshot_type_label(snap.flags), "items": snap.items},
        "seqno": {"first": s.first_seqno, "last": s.last_seqno},
        "gaps": {"count": s.gaps, "largest": s.gap_max, "missing": s.gap_missing, "backwards": s.backwards},
        "bytes": s.bytes,
        "items_per_s": rate(s.items, span(s.first_item_ts, s.last_item_ts)),
    }
