"""Per-connection, per-vbucket and per-stream statistics of a capture: every number
``dcpinspect stats`` shows, computed here and printed by ``outputs.stats`` and the families' views.

:class:`StatsCollector` reads the :class:`Captured` frames (and :class:`Note`s) of a
capture one at a time, and the frames a fast path wrote as :class:`Lines` a run at a time
(by what the lines carry for it: each frame counted as its message is). It keeps, in
memory bounded per vbucket, counters, minima and maxima, a decimated ``(time, seqno)``
series and a shared time-binned throughput histogram. Streams are tracked from the
messages themselves — STREAM_REQ and its response, the producer's stream messages (by
opaque, else by vbucket + stream-id), STREAM_END — with the catalog's sets of stream
messages and seqno fields (``sessions.streams``); TAP connections each feed a
:class:`TapSession`, which counts what the report shows of them.
:meth:`StatsCollector.report` returns a JSON-ready dict.

A collector is plain data: it pickles, and :meth:`StatsCollector.merge` combines
collectors fed with disjoint sets of connections (worker processes, Spark executors), so
that the parts compute and one place renders.

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
from typing import Any, Iterable, Sequence

from ..families.mcbp.messages.dcp import (
    OSO_FLAGS,
    SNAPSHOT_CHECKPOINT,
    SNAPSHOT_DISK,
    SNAPSHOT_FLAGS,
    SNAPSHOT_HISTORY,
    SNAPSHOT_MAY_DUPLICATE,
    SNAPSHOT_MEMORY,
    STREAM_END_REASONS,
)
from ..families.mcbp.messages.opcodes import OP, ST
from ..families.mcbp.messages.registry import CLIENT_SPECS
from .bounded import (
    MAX_BINS,
    MAX_SERIES_POINTS,
    Agg,
    DecimatedSeries,
    Timeline,
    comparable,
    in_order,
    later,
    merge_counts,
    pick,
    round_to,
)
from .captured import RUN_FRAME, Captured, Lines, Note, StreamRun, flow_label, undecoded_counts
from .decoded import Decoded
from ..families.mcbp.sessions.streams import SEQNO_OPCODES, STREAM_OPCODES
from ..families.mcbp.sessions.tap import TapSession

SCHEMA_VERSION = 1
#: what a connection's ``protocols`` count MCBP frames as (other records give their own)
MCBP = "mcbp"
MAX_STREAM_RECORDS = 10_000  # per-stream rows kept for the report; aggregates keep counting
MAX_PENDING = 100_000  # outstanding STREAM_REQ opaques remembered
MAX_MARKS = 1000  # where findings happened, kept for the plot

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
_RUN_FRAMES = struct.Struct(RUN_FRAME).iter_unpack


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


@dataclass(slots=True)
class ConnStats:
    frames: Counter = field(default_factory=Counter)  # direction → frames
    bytes: Counter = field(default_factory=Counter)
    opcodes: Counter = field(default_factory=Counter)
    #: frames by the protocol of their records (MCBP frames as "mcbp")
    protocols: Counter = field(default_factory=Counter)
    notes: Counter = field(default_factory=Counter)  # note kind → n
    note_bytes: Counter = field(default_factory=Counter)
    findings: int = 0
    streams: int = 0
    items: int = 0
    first_ts: float | None = None
    last_ts: float | None = None
    first_key: Any = None  # where in the capture the connection first showed up

    def merge(self, other: "ConnStats") -> None:
        for name in ("frames", "bytes", "opcodes", "protocols", "notes", "note_bytes"):
            getattr(self, name).update(getattr(other, name))
        self.findings += other.findings
        self.streams += other.streams
        self.items += other.items
        self.first_ts = pick(min, self.first_ts, other.first_ts)
        self.last_ts = pick(max, self.last_ts, other.last_ts)
        if later(self.first_key, other.first_key):
            self.first_key = other.first_key


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


# -- the collector --------------------------------------------------------------------------


class StatsCollector:
    """Feed it every item of a capture with :meth:`add`; ask for :meth:`report` at any time.

    ``add(item, key)``: ``key`` orders the item in the capture (as ``engines.files.keyed_items``
    keys them); without one, the order of the calls does. Only :meth:`merge` needs keys.
    ``t0``: where the throughput bins start (default: the first frame's time); parts of
    one capture computed apart give the same ``t0`` for their bins to merge exactly.
    """

    def __init__(self, max_series_points: int = MAX_SERIES_POINTS, max_bins: int = MAX_BINS,
                 max_stream_records: int = MAX_STREAM_RECORDS, t0: float | None = None) -> None:
        self.max_series_points = max_series_points
        self.max_stream_records = max_stream_records
        self.connections: dict[Any, ConnStats] = {}
        self.vbuckets: dict[int, VbStats] = {}
        self.timeline = Timeline(max_bins, t0=t0)
        self.stream_records: list[StreamStats] = []
        self.streams_omitted = 0
        self.notes: Counter = Counter()  # capture-level notes (no flow)
        self.note_keys: dict[str, Any] = {}
        self.frames = 0
        self.bytes = 0
        self.items = 0
        self.first_ts: float | None = None
        self.last_ts: float | None = None
        self.fed = 0  # items added: the key of an item added without one
        self.undecoded: list[Note] = []  # the connections no family decoded
        self._key: Any = None  # the key of the item being added
        self._by_opaque: dict[tuple, StreamStats] = {}  # (flow, opaque) → requested or live stream
        self._active: dict[tuple, StreamStats] = {}  # (flow, vbucket, stream id) → live stream
        #: TAP connections: each its own session (sessions.tap), which counts what the report shows
        self._tap: dict[Any, TapSession] = {}
        self._tap_keys: dict[Any, Any] = {}
        #: the parts of other families' records (Decoded.stats_part), by the report entry they make
        self.parts: dict[str, Any] = {}
        #: where findings happened: (time, rule), evenly thinned past MAX_MARKS
        self.finding_marks = DecimatedSeries(MAX_MARKS)

    def feed(self, items: Iterable[Captured | Note]) -> "StatsCollector":
        for item in items:
            self.add(item)
        return self

    def feed_keyed(self, pairs: Iterable[tuple[Any, Captured | Note]]) -> "StatsCollector":
        """``(key, item)`` pairs, as ``engines.files.keyed_items`` yields them."""
        for key, item in pairs:
            self.add(item, key)
        return self

    # -- input ---------------------------------------------------------------------------

    def _time(self, ts: float | None, cs: ConnStats) -> float | None:
        """The item's time. A hex dump's frames have none: they take the latest time seen.
        The engine stamps frames flushed at the end of input 0.0: they take the latest time
        of their connection (else the latest time seen)."""
        if ts is None:
            return self.last_ts
        if ts == 0.0:
            latest = cs.last_ts if cs.last_ts is not None else self.last_ts
            if latest is not None and latest > 0:
                return latest
        return ts

    def add(self, item: Captured | Lines | Note, key: Any = None) -> None:
        """One item: a frame, a note, or the frames a family's fast path wrote as lines
        (counted from what the lines carry for the statistics, each as its message would be)."""
        self._key = self.fed if key is None else key
        self.fed += 1
        if type(item) is Lines:
            counted = item.counted
            if type(counted) is StreamRun:
                self._run(item.flow, item.direction, counted)
            else:
                self._captured(counted)
        elif isinstance(item, Note):
            self._note(item)
        elif isinstance(item, Captured):
            self._captured(item)

    def _note(self, note: Note) -> None:
        if note.kind == "undecoded":
            self.undecoded.append(note)
            return
        if note.kind == "skipped" and note.direction:  # bytes of the connection, though no frame's
            self._counted(note.flow, note.direction, note.ts, 0, note.size)
        if note.flow is None:
            if note.kind not in self.notes:
                self.note_keys[note.kind] = self._key
            self.notes[note.kind] += 1
            return
        cs = self._conn(note.flow)
        cs.notes[note.kind] += 1
        cs.note_bytes[note.kind] += note.size
        if note.kind == "finding":
            cs.findings += 1
            if note.ts and note.finding is not None:
                self.finding_marks.add(note.ts, note.finding.rule, self._key)

    def _conn(self, flow: Any) -> ConnStats:
        cs = self.connections.get(flow)
        if cs is None:
            cs = self.connections[flow] = ConnStats(first_key=self._key)
        return cs

    def _vb(self, vbucket: int) -> VbStats:
        vs = self.vbuckets.get(vbucket)
        if vs is None:
            vs = self.vbuckets[vbucket] = VbStats(series=DecimatedSeries(self.max_series_points))
        return vs

    def _counted(self, flow: Any, direction: str, ts: float | None, frames: int,
                 size: int) -> tuple[ConnStats, float | None]:
        """What every frame counts: ``frames`` frames of ``size`` bytes together, of one
        connection and direction, at one time; the connection's counters and that time."""
        cs = self._conn(flow)
        ts = self._time(ts, cs)
        self.frames += frames
        self.bytes += size
        cs.frames[direction] += frames
        cs.bytes[direction] += size
        if ts is not None:  # (comparisons, not min and max: once a frame)
            if self.first_ts is None or ts < self.first_ts:
                self.first_ts = ts
            if self.last_ts is None or ts > self.last_ts:
                self.last_ts = ts
            if cs.first_ts is None or ts < cs.first_ts:
                cs.first_ts = ts
            if cs.last_ts is None or ts > cs.last_ts:
                cs.last_ts = ts
            self.timeline.add_bytes(ts, size, self._key)
        return cs, ts

    def _run(self, flow: Any, direction: str, run: StreamRun) -> None:
        """A stream's frames in a row, each counted as its message is by _captured."""
        frames = list(_RUN_FRAMES(run.frames))
        cs, ts = self._counted(flow, direction, run.ts, len(frames), sum(f[1] for f in frames))
        cs.protocols[MCBP] += len(frames)
        opcodes, message, vbucket, opaque = cs.opcodes, self._stream_message, run.vbucket, run.opaque
        for op, size, sid, a, b, c in frames:
            opcodes[_REQUEST_NAMES[op]] += 1
            values = {"start_seqno": a, "end_seqno": b, "snapshot_type": c} if op == OP.DCP_SNAPSHOT_MARKER \
                else {SEQNO_OPCODES[op]: a}
            message(flow, op, vbucket, opaque, None if sid < 0 else sid, size, values, values, ts, cs)

    def _captured(self, item: Captured) -> None:
        msg = item.msg
        cs, ts = self._counted(item.flow, item.direction, item.ts, 1, msg.size)
        request = msg.is_request
        cs.opcodes[msg.name if request else msg.name + " (response)"] += 1
        cs.protocols[msg.protocol if isinstance(msg, Decoded) else MCBP] += 1
        if msg.findings:
            cs.findings += len(msg.findings)
            if ts is not None:
                for f in msg.findings:
                    self.finding_marks.add(ts, f.rule, self._key)
        part_of = getattr(msg, "stats_part", None)
        if part_of is not None:
            part = self.parts.get(part_of.name)
            if part is None:
                part = self.parts[part_of.name] = part_of()
            part.add(item, ts, self._key)
        spec = msg.spec
        if spec is None or spec.family != "dcp":
            if spec is not None and (spec.family == "tap" or (msg.opcode == OP.NOOP and item.flow in self._tap)):
                tap = self._tap.get(item.flow)
                if tap is None:
                    tap = self._tap[item.flow] = TapSession()
                    self._tap_keys[item.flow] = self._key
                tap.apply(msg, item.direction or None, ts, item.number)
            elif spec is not None and request and ts is not None:  # a memcached operation
                self.timeline.add_op(ts, msg.name)
            return
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
        self._conn(flow).streams += 1
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
                    if ts is not None and self.timeline.t0 is not None:
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
        self.items += 1
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
        self.timeline.add_item(ts, s.vbucket)

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
        if ts is not None and self.timeline.t0 is not None:
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

    def merge(self, other: "StatsCollector") -> "StatsCollector":
        """Take in what ``other`` counted of other connections of the same capture (each
        connection fed whole to one of them); returns this collector.

        The report is the one a single collector fed with both would give when the items
        were added with their keys (the connections, streams and TAP connections keep
        the order they came in) and the two timelines share their ``t0``; sums of times
        may differ in their last bits, and a vbucket series that either part had to thin
        is thinned again from what both kept."""
        self.frames += other.frames
        self.bytes += other.bytes
        self.items += other.items
        self.fed += other.fed
        self.first_ts = pick(min, self.first_ts, other.first_ts)
        self.last_ts = pick(max, self.last_ts, other.last_ts)
        self.notes, self.note_keys = merge_counts(self.notes, self.note_keys, other.notes, other.note_keys)
        self.undecoded = sorted(self.undecoded + other.undecoded, key=lambda n: n.offset or 0)
        for flow, cs in other.connections.items():
            if flow in self.connections:
                self.connections[flow].merge(cs)
            else:
                self.connections[flow] = cs
        self.connections = in_order(self.connections, lambda flow, cs: cs.first_key)
        for vb, vs in other.vbuckets.items():
            if vb in self.vbuckets:
                self.vbuckets[vb].merge(vs)
            else:
                self.vbuckets[vb] = vs
        self.timeline.merge(other.timeline)
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
        self.finding_marks.merge(other.finding_marks)
        for name, part in other.parts.items():
            if name in self.parts:
                self.parts[name].merge(part)
            else:
                self.parts[name] = part
        return self

    # -- output ----------------------------------------------------------------------------

    def report(self) -> dict[str, Any]:
        """JSON-ready statistics; does not change the collector (call it as often as you like)."""
        t0 = self.timeline.t0
        open_snaps: dict[int, list[OpenSnapshot]] = {}
        for s in self._active.values():
            if s.snap is not None:
                open_snaps.setdefault(s.vbucket, []).append(s.snap)
        duration = _span(self.first_ts, self.last_ts)
        out = {
            "schema": SCHEMA_VERSION,
            "capture": {
                "first_ts": self.first_ts,
                "last_ts": self.last_ts,
                "duration": round_to(duration),
                "frames": self.frames,
                "bytes": self.bytes,
                "items": self.items,
                "items_per_s": _rate(self.items, duration),
                "bytes_per_s": _rate(self.bytes, duration),
                "connections": len(self.connections),
                "vbuckets": len(self.vbuckets),
                "streams": len(self.stream_records) + self.streams_omitted,
                "notes": dict(self.notes),
                "undecoded": undecoded_counts(self.undecoded),
            },
            "connections": {flow_label(flow): _conn_json(cs) for flow, cs in self.connections.items()},
            "vbuckets": {str(vb): _vb_json(vs, open_snaps.get(vb, ())) for vb, vs in sorted(self.vbuckets.items())},
            "streams": [_stream_json(s) for s in self.stream_records],
            "streams_omitted": self.streams_omitted,
            "timeline": {"t0": t0, **self.timeline.json()},
            "series": {
                str(vb): [[round(t - t0, 6), v] for t, v in vs.series.values()]  # (round_to, inline)
                for vb, vs in sorted(self.vbuckets.items())
                if vs.series.last is not None
            },
            "findings_at": [[round(t - t0, 6), rule] for t, rule in self.finding_marks.values()] if t0 is not None
            else [],
        }
        if self._tap:  # TAP connections: per connection and vbucket (sessions.tap computes them)
            out["tap"] = {flow_label(flow): tap.stats() for flow, tap in self._tap.items()}
        for name, part in self.parts.items():  # other families' entries, each its part's report
            out[name] = part.report(t0)
        return out


def _span(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def _rate(n: float, seconds: float | None) -> float | None:
    if seconds is None or seconds <= 0:
        return None
    return round(n / seconds, 3)


def _conn_json(cs: ConnStats) -> dict[str, Any]:
    duration = _span(cs.first_ts, cs.last_ts)
    frames = {"c2s": cs.frames["c2s"], "s2c": cs.frames["s2c"], "total": sum(cs.frames.values())}
    nbytes = {"c2s": cs.bytes["c2s"], "s2c": cs.bytes["s2c"], "total": sum(cs.bytes.values())}
    return {
        "frames": frames,
        "bytes": nbytes,
        "first_ts": cs.first_ts,
        "last_ts": cs.last_ts,
        "duration": round_to(duration),
        "rates": {
            "frames_per_s": _rate(frames["total"], duration),
            "bytes_per_s": {k: _rate(v, duration) for k, v in nbytes.items()},
            "items_per_s": _rate(cs.items, duration),
        },
        "opcodes": dict(cs.opcodes.most_common()),
        "protocols": dict(sorted(cs.protocols.items())),
        "streams": cs.streams,
        "items": cs.items,
        "capture_gaps": cs.notes["gap"],
        "lost_bytes": cs.note_bytes["gap"],
        "skipped_bytes": cs.note_bytes["skipped"],
        "findings": cs.findings,
    }


def _vb_json(vs: VbStats, open_snaps: Sequence[OpenSnapshot]) -> dict[str, Any]:
    seqnos = vs.snapshot_seqnos.merged(sn.span for sn in open_snaps)
    items = vs.snapshot_items.merged(sn.items for sn in open_snaps)
    active = _span(vs.first_item_ts, vs.last_item_ts)
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
        "items_per_s": _rate(vs.items, active),
        "time_to_first_item": vs.time_to_first_item.json(),
        "time_to_end": vs.time_to_end.json(),
        "end_reasons": dict(vs.end_reasons.most_common()),
    }


def _stream_json(s: StreamStats) -> dict[str, Any]:
    ttfi = _span(s.request_ts, s.first_item_ts)
    tte = _span(s.request_ts, s.end_ts)
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
        "items_per_s": _rate(s.items, _span(s.first_item_ts, s.last_item_ts)),
    }
