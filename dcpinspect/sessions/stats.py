"""Per-connection statistics of a capture, and the parts the families add: every number
``dcpinspect stats`` shows, computed here and in the families' parts, printed by
``outputs.stats`` and the families' views.

:class:`StatsCollector` reads the :class:`Captured` frames (and :class:`Note`s) of a
capture one at a time, and the frames a fast path wrote as :class:`Lines` a run at a time
(by what the lines carry for it). It counts what every frame has (frames and bytes per
connection and direction, times, notes, findings, a shared time-binned throughput
histogram) and hands each record to its family's *part* (the record's ``stats_part``): an
object that counts what only that family knows and makes its entries of the report. The
parts a collector is made with (``parts``) are in every report, and a record names one of
them by its name; a record that names a part's class makes that part when the first such
record comes. :meth:`StatsCollector.report` returns a JSON-ready dict.

A collector is plain data: it pickles, and :meth:`StatsCollector.merge` combines
collectors fed with disjoint sets of connections (worker processes, Spark executors), so
that the parts compute and one place renders.

A part has a ``name`` (unique), ``add(captured, ts, key, collector)`` (a record, counted
already as every frame is; ``ts`` its time as the collector counts it; ``key`` its place
in the capture), ``merge(other)``, and either ``report(t0)`` (its one entry of the report,
under its name, at the end) or ``entries(t0)`` (its entries, keyed by the collector's
entry each group follows: ``connections``, ``timeline`` or ``findings_at``) with
``counts()`` (what the report's ``capture`` entry counts of it). A part fed runs of frames
that a fast path wrote has ``add_run(flow, direction, run, key, collector)``, and counts
their frames with :meth:`StatsCollector.count`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from .bounded import MAX_BINS, DecimatedSeries, Timeline, in_order, later, merge_counts, pick, round_to
from .captured import Captured, Lines, Note, flow_label, undecoded_counts

SCHEMA_VERSION = 1
MAX_MARKS = 1000  # where findings happened, kept for the plot


# -- per connection -------------------------------------------------------------------------


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


# -- the collector --------------------------------------------------------------------------


class StatsCollector:
    """Feed it every item of a capture with :meth:`add`; ask for :meth:`report` at any time.

    ``add(item, key)``: ``key`` orders the item in the capture (as ``engines.records.keyed_items``
    keys them); without one, the order of the calls does. Only :meth:`merge` needs keys.
    ``t0``: where the throughput bins start (default: the first frame's time); parts of
    one capture computed apart give the same ``t0`` for their bins to merge exactly.
    ``parts``: the parts made at once, whose entries every report has (the families' own:
    ``families.stats_collector`` makes a collector with them).
    """

    def __init__(self, max_bins: int = MAX_BINS, t0: float | None = None, parts: Iterable[Any] = ()) -> None:
        self.connections: dict[Any, ConnStats] = {}
        self.timeline = Timeline(max_bins, t0=t0)
        self.notes: Counter = Counter()  # capture-level notes (no flow)
        self.note_keys: dict[str, Any] = {}
        self.frames = 0
        self.bytes = 0
        #: data items the records carried (a family's part counts them)
        self.items = 0
        self.first_ts: float | None = None
        self.last_ts: float | None = None
        self.fed = 0  # items added: the key of an item added without one
        self.undecoded: list[Note] = []  # the connections no family decoded
        self._key: Any = None  # the key of the item being added
        #: the families' parts, by name (each :attr:`Decoded.stats_part` makes one when its first record comes)
        self.parts: dict[str, Any] = {part.name: part for part in parts}
        #: where findings happened: (time, rule), evenly thinned past MAX_MARKS
        self.finding_marks = DecimatedSeries(MAX_MARKS)

    def feed(self, items: Iterable[Captured | Note]) -> "StatsCollector":
        for item in items:
            self.add(item)
        return self

    def feed_keyed(self, pairs: Iterable[tuple[Any, Captured | Note]]) -> "StatsCollector":
        """``(key, item)`` pairs, as ``engines.records.keyed_items`` yields them."""
        for key, item in pairs:
            self.add(item, key)
        return self

    def _part_of(self, kind: type | str) -> Any:
        """The part a record names (its ``stats_part``): a part's class, whose part is made
        on first use, or the name of a part the collector was made with (None without it)."""
        if type(kind) is str:
            return self.parts.get(kind)
        part = self.parts.get(kind.name)
        if part is None:
            part = self.parts[kind.name] = kind()
        return part

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
            if type(counted) is Captured:
                self._captured(counted)
            else:
                part = self._part_of(counted.stats_part)
                if part is not None:
                    part.add_run(item.flow, item.direction, counted, self._key, self)
        elif isinstance(item, Note):
            self._note(item)
        elif isinstance(item, Captured):
            self._captured(item)

    def _note(self, note: Note) -> None:
        if note.kind == "undecoded":
            self.undecoded.append(note)
            return
        if note.kind == "skipped" and note.direction:  # bytes of the connection, though no frame's
            self.count(note.flow, note.direction, note.ts, 0, note.size)
        if note.flow is None:
            if note.kind not in self.notes:
                self.note_keys[note.kind] = self._key
            self.notes[note.kind] += 1
            return
        cs = self.conn(note.flow)
        cs.notes[note.kind] += 1
        cs.note_bytes[note.kind] += note.size
        if note.kind == "finding":
            cs.findings += 1
            if note.ts and note.finding is not None:
                self.finding_marks.add(note.ts, note.finding.rule, self._key)

    def conn(self, flow: Any) -> ConnStats:
        """The counters of connection ``flow``, made on first use."""
        cs = self.connections.get(flow)
        if cs is None:
            cs = self.connections[flow] = ConnStats(first_key=self._key)
        return cs

    def count(self, flow: Any, direction: str, ts: float | None, frames: int,
              size: int) -> tuple[ConnStats, float | None]:
        """What every frame counts: ``frames`` frames of ``size`` bytes together, of one
        connection and direction, at one time; the connection's counters and that time."""
        cs = self.conn(flow)
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

    def _captured(self, item: Captured) -> None:
        msg = item.msg
        cs, ts = self.count(item.flow, item.direction, item.ts, 1, msg.size)
        cs.opcodes[msg.name if msg.is_request else msg.name + " (response)"] += 1
        cs.protocols[msg.stats_protocol] += 1
        if msg.findings:
            cs.findings += len(msg.findings)
            if ts is not None:
                for f in msg.findings:
                    self.finding_marks.add(ts, f.rule, self._key)
        part_of = msg.stats_part
        if part_of is not None:
            # (_part_of's lookup by name inline: once a frame)
            part = self.parts.get(part_of) if type(part_of) is str else self._part_of(part_of)
            if part is not None:
                part.add(item, ts, self._key, self)

    # -- parts -----------------------------------------------------------------------------

    def merge(self, other: "StatsCollector") -> "StatsCollector":
        """Take in what ``other`` counted of other connections of the same capture (each
        connection fed whole to one of them); returns this collector.

        The report is the one a single collector fed with both would give when the items
        were added with their keys (the connections keep the order they came in, and the
        parts theirs) and the two timelines share their ``t0``; sums of times may differ
        in their last bits."""
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
        self.timeline.merge(other.timeline)
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
        duration = span(self.first_ts, self.last_ts)
        counts: dict[str, Any] = {}
        placed: dict[str, dict[str, Any]] = {"connections": {}, "timeline": {}, "findings_at": {}}
        for name, part in self.parts.items():
            if hasattr(part, "entries"):
                counts.update(part.counts())
                for after, entries in part.entries(t0).items():
                    placed[after].update(entries)
            else:
                placed["findings_at"][name] = part.report(t0)
        return {
            "schema": SCHEMA_VERSION,
            "capture": {
                "first_ts": self.first_ts,
                "last_ts": self.last_ts,
                "duration": round_to(duration),
                "frames": self.frames,
                "bytes": self.bytes,
                "items": self.items,
                "items_per_s": rate(self.items, duration),
                "bytes_per_s": rate(self.bytes, duration),
                "connections": len(self.connections),
                **counts,
                "notes": dict(self.notes),
                "undecoded": undecoded_counts(self.undecoded),
            },
            "connections": {flow_label(flow): _conn_json(cs) for flow, cs in self.connections.items()},
            **placed["connections"],
            "timeline": {"t0": t0, **self.timeline.json()},
            **placed["timeline"],
            "findings_at": [[round(t - t0, 6), rule] for t, rule in self.finding_marks.values()] if t0 is not None
            else [],
            **placed["findings_at"],
        }


def span(a: float | None, b: float | None) -> float | None:
    """Seconds from ``a`` to ``b`` (None if either is unknown)."""
    return None if a is None or b is None else b - a


def rate(n: float, seconds: float | None) -> float | None:
    """``n`` per second over ``seconds`` (None over no time)."""
    if seconds is None or seconds <= 0:
        return None
    return round(n / seconds, 3)


def _conn_json(cs: ConnStats) -> dict[str, Any]:
    duration = span(cs.first_ts, cs.last_ts)
    frames = {"c2s": cs.frames["c2s"], "s2c": cs.frames["s2c"], "total": sum(cs.frames.values())}
    nbytes = {"c2s": cs.bytes["c2s"], "s2c": cs.bytes["s2c"], "total": sum(cs.bytes.values())}
    return {
        "frames": frames,
        "bytes": nbytes,
        "first_ts": cs.first_ts,
        "last_ts": cs.last_ts,
        "duration": round_to(duration),
        "rates": {
            "frames_per_s": rate(frames["total"], duration),
            "bytes_per_s": {k: rate(v, duration) for k, v in nbytes.items()},
            "items_per_s": rate(cs.items, duration),
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

