"""Per-connection and per-vbucket DCP statistics of a capture (``dcpinspect stats``).

:class:`StatsCollector` reads the :class:`Captured` frames (and :class:`Note`s)
of the capture engine one at a time and keeps, in memory bounded per vbucket,
counters, minima and maxima, a decimated ``(time, seqno)`` series and a shared
time-binned throughput histogram.  Streams are tracked from the messages
themselves — STREAM_REQ and its response, the producer's stream messages (by
opaque, else by vbucket + stream-id), STREAM_END — without reading the
validator's state.  :meth:`StatsCollector.report` returns a JSON-ready dict
that :func:`render` prints as rich tables plus a sparkline chart,
:func:`report_json` serialises, and ``outputs.plot.plot`` draws.

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

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..sessions.captured import Captured, Note, flow_label
from ..sessions.streams import STREAM_OPCODES
from ..sessions.tap import NOOP as TAP_NOOP, TapSession
from ..messages.dcp import STREAM_END_REASONS
from .escape import safe

SCHEMA_VERSION = 1
MAX_SERIES_POINTS = 2000  # per vbucket, plus the latest point
MAX_BINS = 512  # throughput histogram bins (the bin width doubles to stay under)
FIRST_BIN_WIDTH = 1e-4  # seconds; doubled as the capture grows
MAX_STREAM_RECORDS = 10_000  # per-stream rows kept for the report; aggregates keep counting
MAX_PENDING = 100_000  # outstanding STREAM_REQ opaques remembered
SPARK = "▁▂▃▄▅▆▇█"

STREAM_REQ, STREAM_END, SNAPSHOT_MARKER, CLOSE_STREAM = 0x53, 0x55, 0x56, 0x52
SEQNO_ADVANCED, OSO_SNAPSHOT = 0x64, 0x65
#: Producer → consumer messages that belong to a stream (vbucket + opaque).
#: Items and the report key that counts them.
ITEM_KINDS = {0x57: "mutations", 0x58: "deletions", 0x59: "expirations", 0x60: "prepares", 0x62: "commits",
              0x63: "aborts", 0x5F: "system_events"}
#: Messages carrying a seqno, and the value that holds it.
SEQNO_FIELD = {0x57: "by_seqno", 0x58: "by_seqno", 0x59: "by_seqno", 0x60: "by_seqno", 0x5F: "by_seqno",
               0x62: "commit_seqno", 0x63: "abort_seqno", 0x64: "by_seqno"}
COUNT_KEYS = (*ITEM_KINDS.values(), "seqno_advanced", "oso_snapshots")
#: Snapshot-type bits that name a type (Acknowledge is flow control, not a type).
SNAPSHOT_TYPE_BITS = ((0x01, "memory"), (0x02, "disk"), (0x04, "checkpoint"), (0x10, "history"),
                      (0x20, "may-duplicate"))
_TYPE_MASK = 0x01 | 0x02 | 0x04 | 0x08 | 0x10 | 0x20


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


# -- bounded building blocks ----------------------------------------------------------------


@dataclass(slots=True)
class Agg:
    """Count, sum, minimum and maximum of a stream of numbers."""

    n: int = 0
    total: float = 0
    lo: float | None = None
    hi: float | None = None

    def add(self, v: float) -> None:
        self.n += 1
        self.total += v
        self.lo = v if self.lo is None else min(self.lo, v)
        self.hi = v if self.hi is None else max(self.hi, v)

    def merged(self, values: Iterable[float]) -> "Agg":
        out = Agg(self.n, self.total, self.lo, self.hi)
        for v in values:
            out.add(v)
        return out

    @property
    def mean(self) -> float | None:
        return self.total / self.n if self.n else None

    def json(self, digits: int | None = 6) -> dict[str, Any]:
        r = (lambda v: _round(v, digits)) if digits is not None else (lambda v: v)  # noqa: E731
        return {"count": self.n, "min": r(self.lo), "mean": r(self.mean), "max": r(self.hi)}


class DecimatedSeries:
    """At most ``cap`` evenly strided points of a sequence, plus the latest one.

    Every ``stride``-th point is kept; when the buffer fills, every other kept
    point is dropped and the stride doubles, so the kept points stay evenly
    spread over the whole sequence.
    """

    __slots__ = ("cap", "points", "stride", "seen", "last")

    def __init__(self, cap: int = MAX_SERIES_POINTS) -> None:
        self.cap = max(2, cap)
        self.points: list[tuple[float, int]] = []
        self.stride = 1
        self.seen = 0
        self.last: tuple[float, int] | None = None

    def add(self, t: float, v: int) -> None:
        point = (t, v)
        self.last = point
        if self.seen % self.stride == 0:
            self.points.append(point)
            if len(self.points) >= self.cap:
                self.points = self.points[::2]
                self.stride *= 2
        self.seen += 1

    def values(self) -> list[tuple[float, int]]:
        pts = list(self.points)
        if self.last is not None and (not pts or pts[-1] is not self.last):
            pts.append(self.last)
        return pts


class Timeline:
    """Items and bytes per time bin, in total and per vbucket; at most ``max_bins`` bins.

    All bins share one width, which doubles (merging neighbours) whenever a
    timestamp would fall beyond the last bin.
    """

    def __init__(self, max_bins: int = MAX_BINS, width: float = FIRST_BIN_WIDTH) -> None:
        self.max_bins = max(2, max_bins)
        self.width = width
        self.t0: float | None = None
        self.items: list[int] = []
        self.bytes: list[int] = []
        self.vbuckets: dict[int, list[int]] = {}

    def _index(self, ts: float) -> int:
        if self.t0 is None:
            self.t0 = ts
        rel = ts - self.t0
        if rel <= 0:
            return 0
        i = int(rel / self.width)
        if i >= self.max_bins:
            factor = 1
            while i // factor >= self.max_bins:
                factor *= 2
            self._merge(factor)
            i = min(int(rel / self.width), self.max_bins - 1)
        return i

    def _merge(self, factor: int) -> None:
        def merge(bins: list[int]) -> list[int]:
            return [sum(bins[i:i + factor]) for i in range(0, len(bins), factor)]

        self.width *= factor
        self.items = merge(self.items)
        self.bytes = merge(self.bytes)
        self.vbuckets = {vb: merge(b) for vb, b in self.vbuckets.items()}

    @staticmethod
    def _bump(bins: list[int], i: int, n: int) -> None:
        if len(bins) <= i:
            bins.extend([0] * (i + 1 - len(bins)))
        bins[i] += n

    def add_bytes(self, ts: float, n: int) -> None:
        i = self._index(ts)
        self._bump(self.bytes, i, n)
        self._bump(self.items, i, 0)

    def add_item(self, ts: float, vbucket: int) -> None:
        i = self._index(ts)
        self._bump(self.items, i, 1)
        self._bump(self.vbuckets.setdefault(vbucket, []), i, 1)

    def json(self) -> dict[str, Any]:
        n = max(len(self.items), len(self.bytes))
        pad = lambda b: b + [0] * (n - len(b))  # noqa: E731
        return {
            "bin_width": self.width,
            "bins": n,
            "items": pad(list(self.items)),
            "bytes": pad(list(self.bytes)),
            "vbuckets": {str(vb): pad(list(b)) for vb, b in sorted(self.vbuckets.items())},
        }


# -- per connection, vbucket, stream --------------------------------------------------------


@dataclass(slots=True)
class ConnStats:
    frames: Counter = field(default_factory=Counter)  # direction → frames
    bytes: Counter = field(default_factory=Counter)
    opcodes: Counter = field(default_factory=Counter)
    notes: Counter = field(default_factory=Counter)  # note kind → n
    note_bytes: Counter = field(default_factory=Counter)
    findings: int = 0
    streams: int = 0
    items: int = 0
    first_ts: float | None = None
    last_ts: float | None = None


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


# -- the collector --------------------------------------------------------------------------


class StatsCollector:
    """Feed it every item of a capture with :meth:`add`; ask for :meth:`report` at any time."""

    def __init__(self, max_series_points: int = MAX_SERIES_POINTS, max_bins: int = MAX_BINS,
                 max_stream_records: int = MAX_STREAM_RECORDS) -> None:
        self.max_series_points = max_series_points
        self.max_stream_records = max_stream_records
        self.connections: dict[Any, ConnStats] = {}
        self.vbuckets: dict[int, VbStats] = {}
        self.timeline = Timeline(max_bins)
        self.stream_records: list[StreamStats] = []
        self.streams_omitted = 0
        self.notes: Counter = Counter()  # capture-level notes (no flow)
        self.frames = 0
        self.bytes = 0
        self.items = 0
        self.first_ts: float | None = None
        self.last_ts: float | None = None
        self._by_opaque: dict[tuple, StreamStats] = {}  # (flow, opaque) → requested or live stream
        self._active: dict[tuple, StreamStats] = {}  # (flow, vbucket, stream id) → live stream
        #: TAP connections: each its own session (sessions.tap), which counts what the report shows
        self._tap: dict[Any, TapSession] = {}

    def feed(self, items: Iterable[Captured | Note]) -> "StatsCollector":
        for item in items:
            self.add(item)
        return self

    # -- input ---------------------------------------------------------------------------

    def _time(self, ts: float | None) -> float | None:
        """The item's time; the engine stamps frames flushed at close without a time as 0.0."""
        if ts is None or (ts == 0.0 and self.last_ts is not None and self.last_ts > 0):
            return self.last_ts
        return ts

    def add(self, item: Captured | Note) -> None:
        if isinstance(item, Note):
            self._note(item)
        elif isinstance(item, Captured):
            self._captured(item)

    def _note(self, note: Note) -> None:
        if note.flow is None:
            self.notes[note.kind] += 1
            return
        cs = self._conn(note.flow)
        cs.notes[note.kind] += 1
        cs.note_bytes[note.kind] += note.size
        if note.kind == "finding":
            cs.findings += 1

    def _conn(self, flow: Any) -> ConnStats:
        cs = self.connections.get(flow)
        if cs is None:
            cs = self.connections[flow] = ConnStats()
        return cs

    def _vb(self, vbucket: int) -> VbStats:
        vs = self.vbuckets.get(vbucket)
        if vs is None:
            vs = self.vbuckets[vbucket] = VbStats(series=DecimatedSeries(self.max_series_points))
        return vs

    def _captured(self, item: Captured) -> None:
        msg = item.msg
        ts = self._time(item.ts)
        cs = self._conn(item.flow)
        self.frames += 1
        self.bytes += msg.size
        cs.frames[item.direction] += 1
        cs.bytes[item.direction] += msg.size
        cs.opcodes[msg.name if msg.is_request else msg.name + " (response)"] += 1
        cs.findings += len(msg.findings)
        if ts is not None:
            self.first_ts = ts if self.first_ts is None else min(self.first_ts, ts)
            self.last_ts = ts if self.last_ts is None else max(self.last_ts, ts)
            cs.first_ts = ts if cs.first_ts is None else min(cs.first_ts, ts)
            cs.last_ts = ts if cs.last_ts is None else max(cs.last_ts, ts)
            self.timeline.add_bytes(ts, msg.size)
        if msg.spec is None or msg.spec.family != "dcp":
            if msg.spec is not None and (msg.spec.family == "tap" or (msg.opcode == TAP_NOOP and item.flow in self._tap)):
                tap = self._tap.get(item.flow)
                if tap is None:
                    tap = self._tap[item.flow] = TapSession()
                tap.apply(msg, item.direction or None, ts, item.number)
            return
        op = msg.opcode
        if op == STREAM_REQ:
            if msg.is_request:
                self._stream_request(item, ts, cs)
            else:
                self._stream_response(item, ts)
        elif msg.is_request and op in STREAM_OPCODES:
            self._stream_message(item, ts, cs)
        elif msg.is_request and op == CLOSE_STREAM:
            s = self._active.get((item.flow, msg.vbucket, msg.stream_id))
            vs = self._vb(msg.vbucket or 0)
            vs.bytes += msg.size
            vs.frames += 1
            if s is not None:
                s.close_ts = ts
                s.bytes += msg.size

    # -- streams ---------------------------------------------------------------------------

    def _remember(self, s: StreamStats) -> None:
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
        if msg.status == 0:
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

    def _find_stream(self, item: Captured) -> StreamStats:
        msg = item.msg
        s = self._by_opaque.get((item.flow, msg.opaque))
        if s is not None and s.vbucket == msg.vbucket and (
            msg.stream_id is None or s.stream_id is None or msg.stream_id == s.stream_id
        ):
            if s.state == "requested":  # its response was not captured
                self._open(s)
            return s
        s = self._active.get((item.flow, msg.vbucket, msg.stream_id))
        if s is not None:
            return s
        s = StreamStats(item.flow, msg.vbucket or 0, msg.stream_id, msg.opaque, None, adopted=True)
        self._by_opaque[(item.flow, msg.opaque)] = s
        self._open(s)
        vs = self._vb(s.vbucket)
        vs.streams += 1
        vs.connections.add(item.flow)
        self._conn(item.flow).streams += 1
        self._remember(s)
        return s

    def _stream_message(self, item: Captured, ts: float | None, cs: ConnStats) -> None:
        msg = item.msg
        s = self._find_stream(item)
        vs = self._vb(s.vbucket)
        vs.bytes += msg.size
        vs.frames += 1
        s.bytes += msg.size
        op = msg.opcode
        if op == SNAPSHOT_MARKER:
            self._close_snapshot(s)
            v = msg.values
            start, end, flags = v.get("start_seqno"), v.get("end_seqno"), v.get("snapshot_type")
            s.snapshots += 1
            vs.snapshots += 1
            vs.snapshot_types[snapshot_type_label(flags)] += 1
            s.snap = OpenSnapshot(start, end, flags) if start is not None and end is not None else None
            return
        if op == STREAM_END:
            self._end(s, msg, ts)
            return
        if op == OSO_SNAPSHOT:
            flags = msg.values.get("flags", 0)
            if flags & 0x01:
                s.in_oso = True
                s.oso_max = None
                s.counts["oso_snapshots"] += 1
                vs.counts["oso_snapshots"] += 1
            if flags & 0x02 and s.in_oso:
                s.in_oso = False
                if s.oso_max is not None:
                    s.cursor = s.oso_max if s.cursor is None else max(s.cursor, s.oso_max)
                    if ts is not None and self.timeline.t0 is not None:
                        vs.series.add(ts - self.timeline.t0, s.cursor)
            return
        kind = ITEM_KINDS.get(op)
        if kind is not None:
            self._item(s, vs, cs, kind, ts)
        elif op == SEQNO_ADVANCED:
            s.counts["seqno_advanced"] += 1
            vs.counts["seqno_advanced"] += 1
        name = SEQNO_FIELD.get(op)
        seqno = msg.values.get(name) if name else None
        if isinstance(seqno, int):
            self._seqno(s, vs, seqno, ts, advance=op == SEQNO_ADVANCED)

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
        vs.first_item_ts = ts if vs.first_item_ts is None else min(vs.first_item_ts, ts)
        vs.last_item_ts = ts if vs.last_item_ts is None else max(vs.last_item_ts, ts)
        self.timeline.add_item(ts, s.vbucket)

    def _seqno(self, s: StreamStats, vs: VbStats, seqno: int, ts: float | None, advance: bool) -> None:
        if s.first_seqno is None:
            s.first_seqno = seqno
        s.last_seqno = seqno
        if vs.seqno_first is None:
            vs.seqno_first = seqno
        vs.seqno_last = seqno
        vs.seqno_min = seqno if vs.seqno_min is None else min(vs.seqno_min, seqno)
        vs.seqno_max = seqno if vs.seqno_max is None else max(vs.seqno_max, seqno)
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
            vs.series.add(ts - self.timeline.t0, seqno)

    def _close_snapshot(self, s: StreamStats) -> None:
        if s.snap is not None:
            vs = self._vb(s.vbucket)
            vs.snapshot_seqnos.add(s.snap.span)
            vs.snapshot_items.add(s.snap.items)
            s.snap = None

    def _end(self, s: StreamStats, msg, ts: float | None) -> None:
        vs = self._vb(s.vbucket)
        self._close_snapshot(s)
        s.state = "ended"
        s.end_ts = ts
        s.end_reason = end_reason_name(msg.values.get("reason", msg.fields.get("reason")))
        vs.end_reasons[s.end_reason] += 1
        if ts is not None and s.request_ts is not None:
            vs.time_to_end.add(ts - s.request_ts)
        if self._active.get(s.key) is s:
            del self._active[s.key]
        if self._by_opaque.get((s.flow, s.opaque)) is s:
            del self._by_opaque[(s.flow, s.opaque)]

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
                "duration": _round(duration),
                "frames": self.frames,
                "bytes": self.bytes,
                "items": self.items,
                "items_per_s": _rate(self.items, duration),
                "bytes_per_s": _rate(self.bytes, duration),
                "connections": len(self.connections),
                "vbuckets": len(self.vbuckets),
                "streams": len(self.stream_records) + self.streams_omitted,
                "notes": dict(self.notes),
            },
            "connections": {flow_label(flow): _conn_json(cs) for flow, cs in self.connections.items()},
            "vbuckets": {str(vb): _vb_json(vs, open_snaps.get(vb, ())) for vb, vs in sorted(self.vbuckets.items())},
            "streams": [_stream_json(s) for s in self.stream_records],
            "streams_omitted": self.streams_omitted,
            "timeline": {"t0": t0, **self.timeline.json()},
            "series": {
                str(vb): [[_round(t), v] for t, v in vs.series.values()]
                for vb, vs in sorted(self.vbuckets.items())
                if vs.series.last is not None
            },
        }
        if self._tap:  # TAP connections: per connection and vbucket (sessions.tap computes them)
            out["tap"] = {flow_label(flow): tap.stats() for flow, tap in self._tap.items()}
        return out


def _round(v: float | None, digits: int | None = 6) -> float | None:
    if v is None or digits is None:
        return v
    return round(v, digits)


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
        "duration": _round(duration),
        "rates": {
            "frames_per_s": _rate(frames["total"], duration),
            "bytes_per_s": {k: _rate(v, duration) for k, v in nbytes.items()},
            "items_per_s": _rate(cs.items, duration),
        },
        "opcodes": dict(cs.opcodes.most_common()),
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
            "seqnos": {"mean": _round(seqnos.mean, 3), "max": seqnos.hi},
            "items": {"mean": _round(items.mean, 3), "max": items.hi},
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
        "time_to_first_item": _round(ttfi),
        "time_to_end": _round(tte),
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


# -- JSON --------------------------------------------------------------------------------


def report_json(report: dict[str, Any], *, series: bool = True, indent: int | None = 2) -> str:
    """The report as JSON (``--format json``); ``series=False`` leaves out the per-vbucket
    ``series`` and the per-vbucket timeline bins (the bulk of a big capture)."""
    if not series:
        report = dict(report)
        report.pop("series", None)
        if isinstance(report.get("timeline"), dict):
            report["timeline"] = {k: v for k, v in report["timeline"].items() if k != "vbuckets"}
    return json.dumps(report, indent=indent, ensure_ascii=True, default=str)


# -- terminal ------------------------------------------------------------------------------


def sparkline(values: Sequence[float], top: float | None = None) -> str:
    """One block character per value scaled to ``top`` (default: the maximum); zero is a space."""
    top = max(values, default=0) if top is None else top
    out = []
    for v in values:
        if v <= 0 or top <= 0:
            out.append(" ")
        else:
            out.append(SPARK[min(len(SPARK) - 1, max(0, math.ceil(v / top * len(SPARK)) - 1))])
    return "".join(out)


def regroup(bins: Sequence[int], width: float, columns: int) -> tuple[list[float], float]:
    """Rates per second of ``bins`` merged into at most ``columns`` columns; and the column width."""
    if not bins or width <= 0:
        return [], width
    group = max(1, math.ceil(len(bins) / max(1, columns)))
    rates = []
    for i in range(0, len(bins), group):
        chunk = bins[i:i + group]
        rates.append(sum(chunk) / (len(chunk) * width))
    return rates, width * group


def chart_columns(items: int, limit: int) -> int:
    """How many time columns to draw: ``limit``, fewer for a sparse capture (about 2 items a column)."""
    return max(1, min(limit, max(10, items // 2)))


def _fmt_num(v: float | None, digits: int = 1) -> str:
    if v is None:
        return "-"
    if abs(v) >= 1e6:
        return f"{v / 1e6:.{digits}f}M"
    if abs(v) >= 1e4:
        return f"{v / 1e3:.{digits}f}k"
    if float(v).is_integer():
        return f"{int(v)}"
    return f"{v:.{digits}f}"


def _fmt_s(v: float | None) -> str:
    if v is None:
        return "-"
    if abs(v) < 1:
        return f"{v * 1000:.3g} ms"
    return f"{v:.3f} s"


def _fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def _t(value: Any, style: str = "") -> Text:
    return Text(safe(value), style=style)


def _counter_text(d: dict | None, limit: int = 4) -> Text:
    if not d:
        return Text("-")
    items = list(d.items())
    parts = [f"{safe(k)} {v}" for k, v in items[:limit]]
    if len(items) > limit:
        parts.append(f"+{len(items) - limit} more")
    return Text(", ".join(parts))


_SHORT_TYPES = {"memory": "mem", "checkpoint": "ckpt", "history": "hist", "may-duplicate": "dup"}


def _short_type(label: str) -> str:
    return "+".join(_SHORT_TYPES.get(p, p) for p in str(label).split("+"))


@dataclass(frozen=True)
class Col:
    """A column of a terminal table; ``rank`` 0 is always shown, higher ranks go first when narrow."""

    name: str
    rank: int = 1
    right: bool = False
    wrap: bool = False


def fit_table(title: str, columns: Sequence[Col], rows: Sequence[dict[str, Text]], console: Console) -> Table:
    """A table of ``rows`` (column name → cell) without the least important columns that would not fit."""
    cols = list(columns)
    while True:
        table = Table(title=title, title_justify="left", box=None, pad_edge=False)
        for c in cols:
            table.add_column(c.name, justify="right" if c.right else "left", no_wrap=not c.wrap,
                             overflow="fold" if c.wrap else "ellipsis")
        for row in rows:
            table.add_row(*(row.get(c.name, Text("")) for c in cols))
        droppable = [c for c in cols if c.rank > 0]
        if not droppable or _needed_width(cols, rows) <= console.width:
            return table
        cols.remove(max(droppable, key=lambda c: (c.rank, cols.index(c))))


def _needed_width(cols: Sequence[Col], rows: Sequence[dict[str, Text]]) -> int:
    """Width of the table with every no-wrap cell whole and wrapping cells at most ``WRAP_WIDTH`` wide."""
    total = 2 * (len(cols) - 1)
    for c in cols:
        w = max([len(c.name)] + [r[c.name].cell_len for r in rows if c.name in r])
        total += min(w, WRAP_WIDTH) if c.wrap else w
    return total


WRAP_WIDTH = 24
_CONN_COLS = (Col("connection", 0, wrap=True), Col("frames c2s/s2c", 1, True), Col("bytes c2s/s2c", 1, True),
              Col("duration", 1, True), Col("frames/s", 3, True), Col("bytes/s", 2, True), Col("streams", 2, True),
              Col("items", 1, True), Col("items/s", 2, True), Col("gaps", 3, True), Col("findings", 4, True))
_VB_COLS = (Col("vb", 0, True), Col("streams", 2), Col("snapshots", 1, wrap=True), Col("snap seqnos", 2, True),
            Col("snap items", 2, True), Col("mut/del/exp", 0, True), Col("prep/com/abt", 3, True),
            Col("sys", 4, True), Col("seqnos", 1, True), Col("gaps (max)", 1, True), Col("bytes", 3, True),
            Col("items/s", 2, True), Col("to 1st item", 3, True), Col("to end", 3, True),
            Col("end reasons", 2, wrap=True))
_STREAM_COLS = (Col("connection", 2, wrap=True), Col("vb", 0, True), Col("sid", 3, True), Col("opaque", 4),
                Col("requested", 4), Col("state", 1), Col("items", 0, True), Col("seqnos", 1, True),
                Col("gaps", 2, True), Col("to 1st item", 2, True), Col("to end", 2, True),
                Col("end reason", 1, wrap=True))


def _by_direction(counts: dict, fmt) -> str:
    """``c2s/s2c``; a hex dump's frames have no direction, so their total stands alone."""
    c2s, s2c, total = counts.get("c2s", 0), counts.get("s2c", 0), counts.get("total", 0)
    if total and c2s + s2c < total:
        return f"{fmt(total)} (no direction)"
    return f"{fmt(c2s)}/{fmt(s2c)}"


def render(report: dict[str, Any], console: Console, *, chart: bool | None = None, max_rows: int = 200,
           chart_lines: int = 10) -> None:
    """Tables of connections, vbuckets and streams; then, when ``chart`` (default: the console
    is a terminal), a sparkline of items per second, total and for the busiest vbuckets.

    Every string of the report goes out through :func:`safe` inside a ``Text``: a report
    read back from JSON is as untrusted as the capture it came from.  On a narrow console
    the least important columns are left out.
    """
    cap = report.get("capture", {})
    rows = []
    for name, c in report.get("connections", {}).items():
        rates = c.get("rates", {})
        frames, nbytes = c.get("frames", {}), c.get("bytes", {})
        bps = rates.get("bytes_per_s", {}).get("total")
        rows.append({
            "connection": _t(name),
            "frames c2s/s2c": _t(_by_direction(frames, str)),
            "bytes c2s/s2c": _t(_by_direction(nbytes, _fmt_bytes)),
            "duration": _t(_fmt_s(c.get("duration"))),
            "frames/s": _t(_fmt_num(rates.get("frames_per_s"))),
            "bytes/s": _t("-" if bps is None else _fmt_bytes(bps) + "/s"),
            "streams": _t(c.get("streams", 0)),
            "items": _t(c.get("items", 0)),
            "items/s": _t(_fmt_num(rates.get("items_per_s"))),
            "gaps": _t(c.get("capture_gaps", 0), "yellow" if c.get("capture_gaps") else ""),
            "findings": _t(c.get("findings", 0)),
        })
    console.print(fit_table("Connections", _CONN_COLS, rows, console))
    console.print()

    vbs = report.get("vbuckets", {})
    ordered = sorted(vbs.items(), key=lambda kv: _vb_sort(kv[0]))
    rows = []
    for vb, v in ordered[:max_rows]:
        snaps = v.get("snapshots", {})
        seq = v.get("seqno", {})
        gaps = v.get("gaps", {})
        types = snaps.get("by_type") or {}
        snap_text = Text(str(snaps.get("count", 0)))
        if types:
            snap_text.append(": ")
            snap_text.append_text(_counter_text({_short_type(k): n for k, n in types.items()}))
        rows.append({
            "vb": _t(vb),
            "streams": _t(str(v.get("streams", 0))
                          + (f" ({v['rejected_streams']} rej.)" if v.get("rejected_streams") else "")),
            "snapshots": snap_text,
            "snap seqnos": _t(f"{_fmt_num((snaps.get('seqnos') or {}).get('mean'))}/"
                              f"{_fmt_num((snaps.get('seqnos') or {}).get('max'))}"),
            "snap items": _t(f"{_fmt_num((snaps.get('items') or {}).get('mean'))}/"
                             f"{_fmt_num((snaps.get('items') or {}).get('max'))}"),
            "mut/del/exp": _t(f"{v.get('mutations', 0)}/{v.get('deletions', 0)}/{v.get('expirations', 0)}"),
            "prep/com/abt": _t(f"{v.get('prepares', 0)}/{v.get('commits', 0)}/{v.get('aborts', 0)}"),
            "sys": _t(v.get("system_events", 0)),
            "seqnos": _t(f"{_fmt_seqno(seq.get('first'))}→{_fmt_seqno(seq.get('last'))}"),
            "gaps (max)": _t(f"{gaps.get('count', 0)} ({gaps.get('largest', 0)})",
                             "yellow" if gaps.get("count") else ""),
            "bytes": _t(_fmt_bytes(v.get("bytes"))),
            "items/s": _t(_fmt_num(v.get("items_per_s"))),
            "to 1st item": _t(_fmt_s((v.get("time_to_first_item") or {}).get("mean"))),
            "to end": _t(_fmt_s((v.get("time_to_end") or {}).get("mean"))),
            "end reasons": _counter_text(v.get("end_reasons")),
        })
    console.print(fit_table("Vbuckets", _VB_COLS, rows, console))
    if len(ordered) > max_rows:
        console.print(Text(f"… {len(ordered) - max_rows} more vbuckets (--format json for all)", style="dim"))
    if rows:
        console.print(Text("snap seqnos / snap items: mean/max snapshot size; mem=memory, ckpt=checkpoint, "
                           "hist=history, dup=may-duplicate; times: mean from the stream request", style="dim"))
    console.print()

    streams = report.get("streams", [])
    rows = []
    for s in streams[:max_rows]:
        req = s.get("request") or {}
        state = str(s.get("state"))
        if s.get("state") == "rejected":
            state += f" ({s.get('status')})"
        seq = s.get("seqno") or {}
        opaque = s.get("opaque")
        rows.append({
            "connection": _t(s.get("connection")),
            "vb": _t(s.get("vbucket")),
            "sid": _t("-" if s.get("stream_id") is None else s["stream_id"]),
            "opaque": _t(f"0x{opaque:08x}" if isinstance(opaque, int) else opaque),
            "requested": _t("?" if s.get("adopted") else
                            f"{_fmt_seqno(req.get('start_seqno'))}→{_fmt_seqno(req.get('end_seqno'))}"),
            "state": _t(state, "red" if s.get("state") == "rejected" else ""),
            "items": _t(s.get("items", 0)),
            "seqnos": _t(f"{_fmt_seqno(seq.get('first'))}→{_fmt_seqno(seq.get('last'))}"),
            "gaps": _t((s.get("gaps") or {}).get("count", 0)),
            "to 1st item": _t(_fmt_s(s.get("time_to_first_item"))),
            "to end": _t(_fmt_s(s.get("time_to_end"))),
            "end reason": _t(s.get("end_reason") or "-"),
        })
    console.print(fit_table("Streams", _STREAM_COLS, rows, console))
    hidden = len(streams) - min(len(streams), max_rows) + int(report.get("streams_omitted", 0) or 0)
    if hidden:
        console.print(Text(f"… {hidden} more streams (--format json for all)", style="dim"))
    if report.get("tap"):
        render_tap(report["tap"], console, max_rows)
    if chart is None:
        chart = console.is_terminal
    if chart:
        console.print()
        render_chart(report, console, lines=chart_lines)
    console.print()
    console.print(Text(f"{totals_line(cap)} over {_fmt_s(cap.get('duration'))}", style="bold"))


_TAP_CONN_COLS = (Col("connection", 0, wrap=True), Col("name", 2), Col("connect flags", 3, wrap=True),
                  Col("events", 1, wrap=True), Col("acks asked/answered", 1, True), Col("unanswered", 0, True),
                  Col("ack rtt mean/max", 2, True), Col("longest wait at", 4, True), Col("nacks", 1, True),
                  Col("errors", 3, True), Col("checkpoints", 2, True), Col("bytes", 2, True))
_TAP_VB_COLS = (Col("connection", 3, wrap=True), Col("vb", 0, True), Col("phase", 1), Col("states", 2, wrap=True),
                Col("mut/del", 0, True), Col("other events", 3, wrap=True), Col("backfill", 1, True),
                Col("checkpoints", 2, True), Col("acks", 2, True), Col("nacks", 1, True), Col("bytes", 2, True))


def render_tap(tap: dict[str, Any], console: Console, max_rows: int = 200) -> None:
    """The TAP tables: per connection (events, ACK round trips and the longest wait, NACKs,
    checkpoints, bytes) and per vbucket (phase, takeover states, backfill duration)."""
    rows, vb_rows = [], []
    for name, t in list(tap.items())[:max_rows]:
        acks = t.get("acks") or {}
        rtt = acks.get("round_trip") or {}
        wait = acks.get("longest_wait") or {}
        events = t.get("events") or {}
        rows.append({
            "connection": _t(name),
            "name": _t(t.get("name") or "-"),
            "connect flags": _t("+".join(map(str, t.get("connect_flags") or [])) or
                                ("-" if t.get("connect_flags") is None else "none")),
            "events": _counter_text(events),
            "acks asked/answered": _t(f"{acks.get('requested', 0)}/{acks.get('answered', 0)}"),
            "unanswered": _t(acks.get("unanswered", 0), "red" if acks.get("unanswered") else ""),
            "ack rtt mean/max": _t(f"{_fmt_s(rtt.get('mean'))}/{_fmt_s(rtt.get('max'))}"),
            "longest wait at": _t("-" if not wait else f"frame {wait.get('frame')}, vb {wait.get('vbucket')}"),
            "nacks": _t(t.get("nacks", 0), "yellow" if t.get("nacks") else ""),
            "errors": _t(t.get("errors", 0), "red" if t.get("errors") else ""),
            "checkpoints": _t(t.get("checkpoints", 0)),
            "bytes": _t(_fmt_bytes(t.get("bytes"))),
        })
        for vb, v in sorted((t.get("vbuckets") or {}).items(), key=lambda kv: _vb_sort(kv[0])):
            ev = dict(v.get("events") or {})
            backfill = v.get("backfill") or {}
            cps = v.get("checkpoints") or {}
            vb_rows.append({
                "connection": _t(name),
                "vb": _t(vb),
                "phase": _t(v.get("phase") or "-"),
                "states": _t("→".join(map(str, v.get("states") or [])) or "-"),
                "mut/del": _t(f"{ev.pop('mutation', 0)}/{ev.pop('delete', 0)}"),
                "other events": _counter_text(ev),
                "backfill": _t("-" if not backfill.get("count") else
                               _fmt_s(backfill.get("seconds")) + (" (open)" if backfill.get("open") else "")),
                "checkpoints": _t(f"{cps.get('count', 0)}" + (f" (last {cps['last']})" if cps.get("last") is not None else "")),
                "acks": _t(v.get("acks", 0)),
                "nacks": _t(v.get("nacks", 0)),
                "bytes": _t(_fmt_bytes(v.get("bytes"))),
            })
    console.print()
    console.print(fit_table("TAP connections", _TAP_CONN_COLS, rows, console))
    console.print()
    console.print(fit_table("TAP vbuckets", _TAP_VB_COLS, vb_rows[:max_rows], console))
    if len(vb_rows) > max_rows:
        console.print(Text(f"… {len(vb_rows) - max_rows} more TAP vbuckets (--format json for all)", style="dim"))
    console.print(Text("acks: ACK requests (TAP_FLAG_ACK) and the answers that matched one; an answer covers the "
                       "requests before it; rtt: from the request to the answer that covered it", style="dim"))


def _plural(n: Any, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def totals_line(cap: dict[str, Any]) -> str:
    """``18 items in 4 streams, 3 vbuckets, 2 connections`` for a report's ``capture`` part."""
    return (f"{_plural(cap.get('frames', 0), 'frame')}, {_plural(cap.get('items', 0), 'item')} in "
            f"{_plural(cap.get('streams', 0), 'stream')}, {_plural(cap.get('vbuckets', 0), 'vbucket')}, "
            f"{_plural(cap.get('connections', 0), 'connection')}")


def _vb_sort(vb: str) -> tuple:
    return (0, int(vb), "") if str(vb).isdigit() else (1, 0, str(vb))


def _fmt_seqno(v: Any) -> str:
    if v is None:
        return "-"
    if v == 0xFFFFFFFFFFFFFFFF:
        return "max"
    return str(v)


def render_chart(report: dict[str, Any], console: Console, *, lines: int = 10, columns: int | None = None) -> None:
    """Items per second over time: one sparkline for the total and one per busy vbucket."""
    tl = report.get("timeline") or {}
    width = tl.get("bin_width") or 0
    total = tl.get("items") or []
    if not total or not any(total) or width <= 0:
        console.print(Text("items/s: no DCP items", style="dim"))
        return
    vb_bins = tl.get("vbuckets") or {}
    busy = sorted(vb_bins.items(), key=lambda kv: (-sum(kv[1]), _vb_sort(kv[0])))[:lines]
    label_w = max([5] + [len(f"vb {safe(vb)}") for vb, _ in busy])
    if columns is None:
        columns = chart_columns(sum(total), max(10, min(60, console.width - label_w - 22)))
    rates, col_w = regroup(total, width, columns)
    console.print(Text(f"Items per second (1 column = {_fmt_s(col_w)}, {len(rates)} columns; "
                       "each line scaled to its peak)", style="bold"))
    chart = Table(box=None, show_header=False, pad_edge=False)
    chart.add_column(no_wrap=True)
    chart.add_column(no_wrap=True)
    chart.add_column(no_wrap=True, justify="right")
    chart.add_row(Text("total", style="bold"), Text(sparkline(rates), style="green"),
                  Text(f"peak {_fmt_num(max(rates))}/s"))
    for vb, bins in busy:
        r, _ = regroup(list(bins) + [0] * (len(total) - len(bins)), width, columns)
        chart.add_row(_t(f"vb {vb}"), Text(sparkline(r), style="cyan"), Text(f"peak {_fmt_num(max(r))}/s"))
    console.print(chart)
    if len(vb_bins) > len(busy):
        console.print(Text(f"… {len(vb_bins) - len(busy)} quieter vbuckets not charted", style="dim"))
