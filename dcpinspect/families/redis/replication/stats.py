"""What ``stats`` counts of Redis connections (the report's ``redis`` entry), from the
records the session decoded (:mod:`.frames`), in memory bounded whatever the capture's size.

- ``commands``: per command name, the replies that answered one (``count``) and their
  latency (``latency_ms``: ``p50``, ``p99``, ``max``, ``mean``), from the command's last
  byte to the reply's; p50 and p99 over at most :data:`MAX_LATENCIES` latencies kept
  evenly over the capture per command (``count`` and ``max`` are exact).
- ``slowest``: the :data:`SLOWEST` slowest replies, with their command, connection and
  frames.
- ``replication``: per replication connection, the sync's phases with their times:
  ``handshake`` (the connection's first frame to ``+FULLRESYNC`` / ``+CONTINUE``),
  ``transfer`` (the payload's header to its last byte: ``bytes``, ``bytes_per_s``,
  ``keys``), ``load`` (the payload's end to the replica's first ``REPLCONF ACK`` after it:
  the replica acknowledges nothing while it loads) and ``stable`` (from there on: the
  master's ``commands`` and their ``bytes``, per second; ``stream``: all of the master's
  stream the capture showed, the commands sent while the replica loaded too); the ACKs (``acks``, the last
  ``lag``: the master's offset minus the acknowledged one), and for the plot, the series
  ``master_offset``, ``replica_offset`` and ``ack_lag`` over time.
- ``dragonfly``: per Dragonfly sync (``<master replid> <SYNC id>``), each FLOW connection's
  phases (``full_sync``: its snapshot's first and last piece, bytes, keys; ``stable``: its
  journal's first and last record) and the LSNs of its journal.

A part is plain data: it pickles, and :meth:`RedisStats.merge` folds in one fed with other
connections of the same capture.
"""

from __future__ import annotations

import heapq
from typing import Any

from ....limits import RESP_LATENCIES
from ....sessions.bounded import DecimatedSeries, pick, round_to
from ....sessions.captured import flow_label

#: latencies kept per command for the percentiles (evenly over the capture past it)
MAX_LATENCIES = RESP_LATENCIES.default
#: replies listed as the slowest
SLOWEST = 10
#: points of each replication series
MAX_POINTS = 2000
#: characters of a command's arguments shown with the slowest
ARGS_TEXT = 80


class Latencies:
    """One command name's replies: how many, the slowest, and a bounded sample."""

    __slots__ = ("count", "total", "max", "kept", "stride", "seen")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.max = 0.0
        self.kept: list[float] = []
        self.stride = 1
        self.seen = 0

    def add(self, ms: float) -> None:
        self.count += 1
        self.total += ms
        self.max = max(self.max, ms)
        if self.seen % self.stride == 0:
            self.kept.append(ms)
            if len(self.kept) >= MAX_LATENCIES:
                self.kept = self.kept[::2]
                self.stride *= 2
        self.seen += 1

    def merge(self, other: "Latencies") -> None:
        self.count += other.count
        self.total += other.total
        self.max = max(self.max, other.max)
        self.kept += other.kept
        while len(self.kept) >= MAX_LATENCIES:
            self.kept = self.kept[::2]
        self.stride = max(self.stride, other.stride)
        self.seen += other.seen

    def json(self) -> dict[str, Any]:
        kept = sorted(self.kept)
        return {"count": self.count, "latency_ms": {
            "p50": _percentile(kept, 0.50), "p99": _percentile(kept, 0.99), "max": round_to(self.max, 3),
            "mean": round_to(self.total / self.count, 3) if self.count else None}}


def _percentile(values: list[float], q: float) -> float | None:
    """The nearest-rank percentile of sorted ``values``."""
    if not values:
        return None
    rank = max(1, -(-len(values) * q // 1))
    return round_to(values[int(rank) - 1], 3)


class Link:
    """One replication connection: the times of its sync's phases and what flowed in them."""

    __slots__ = ("first_ts", "resync_ts", "resync", "replid", "payload_ts", "payload_end_ts", "payload_bytes",
                 "keys", "load_end_ts", "last_ts", "commands", "stream_bytes", "streamed", "streamed_bytes", "acks", "lag", "sent",
                 "master_offset", "replica_offset", "ack_lag", "order")

    def __init__(self, order: Any) -> None:
        self.first_ts: float | None = None
        self.resync_ts: float | None = None
        self.resync = ""  # FULLRESYNC or CONTINUE
        self.replid: str | None = None
        self.payload_ts: float | None = None
        self.payload_end_ts: float | None = None
        self.payload_bytes = 0
        self.keys: int | None = None
        self.load_end_ts: float | None = None
        self.last_ts: float | None = None
        self.commands = 0  # of the master's stream, in stable sync
        self.stream_bytes = 0
        self.streamed = 0  # of the master's stream, all
        self.streamed_bytes = 0
        self.acks = 0
        self.lag: int | None = None
        self.sent: int | None = None  # the master's offset after its last command
        self.master_offset = DecimatedSeries(MAX_POINTS)
        self.replica_offset = DecimatedSeries(MAX_POINTS)
        self.ack_lag = DecimatedSeries(MAX_POINTS)
        self.order = order

    def json(self, t0: float | None) -> dict[str, Any]:
        transfer = _span(self.payload_ts, self.payload_end_ts)
        stable = _span(self.load_end_ts, self.last_ts)
        return {
            "resync": self.resync or None,
            "replid": self.replid,
            "phases": {
                "handshake": {"start": self.first_ts, "end": self.resync_ts,
                              "seconds": _span(self.first_ts, self.resync_ts)},
                "transfer": {"start": self.payload_ts, "end": self.payload_end_ts, "seconds": transfer,
                             "bytes": self.payload_bytes if self.payload_ts is not None else None,
                             "bytes_per_s": _rate(self.payload_bytes, transfer), "keys": self.keys},
                "load": {"start": self.payload_end_ts, "end": self.load_end_ts,
                         "seconds": _span(self.payload_end_ts, self.load_end_ts)},
                "stable": {"start": self.load_end_ts, "end": self.last_ts if self.load_end_ts is not None else None,
                           "seconds": stable, "commands": self.commands, "bytes": self.stream_bytes,
                           "commands_per_s": _rate(self.commands, stable),
                           "bytes_per_s": _rate(self.stream_bytes, stable)},
            },
            "stream": {"commands": self.streamed, "bytes": self.streamed_bytes},
            "acks": self.acks,
            "master_offset": self.sent,
            "lag": self.lag,
            "series": {name: _points(getattr(self, name), t0) for name in ("master_offset", "replica_offset",
                                                                           "ack_lag")},
        }


class Flow:
    """One Dragonfly FLOW connection: its snapshot and its journal."""

    __slots__ = ("sync", "flow_id", "full_start", "full_end", "full_bytes", "keys", "stable_start", "stable_end",
                 "records", "first_lsn", "last_lsn", "order")

    def __init__(self, order: Any) -> None:
        self.sync: str | None = None
        self.flow_id: int | None = None
        self.full_start = self.full_end = self.stable_start = self.stable_end = None
        self.full_bytes = 0
        self.keys: int | None = None
        self.records = 0
        self.first_lsn: int | None = None
        self.last_lsn: int | None = None
        self.order = order

    def json(self) -> dict[str, Any]:
        return {"flow_id": self.flow_id, "phases": {
            "full_sync": {"start": self.full_start, "end": self.full_end,
                          "seconds": _span(self.full_start, self.full_end),
                          "bytes": self.full_bytes if self.full_start is not None else None, "keys": self.keys},
            "stable": {"start": self.stable_start, "end": self.stable_end,
                       "seconds": _span(self.stable_start, self.stable_end), "records": self.records}},
            "lsns": {"first": self.first_lsn, "last": self.last_lsn}}


class RedisStats:
    """The ``redis`` entry of a stats report (see the module's docstring)."""

    name = "redis"

    def __init__(self) -> None:
        self.commands: dict[str, Latencies] = {}
        self.slowest: list[tuple] = []  # a min-heap of (latency, key, row)
        self.links: dict[Any, Link] = {}
        self.flows: dict[Any, Flow] = {}
        self.first_ts: dict[Any, float | None] = {}  # each Redis connection's first frame

    def add(self, item: Any, ts: float | None, key: Any, collector: Any = None) -> None:
        """A decoded record of a Redis connection (``item``: the Captured frame; ``ts``: its
        time as the collector counts it; ``key``: its place in the capture)."""
        msg = item.msg
        protocol = msg.protocol
        if item.flow not in self.first_ts:
            self.first_ts[item.flow] = ts
        if protocol == "resp":
            if msg.latency_ms is not None:
                self._reply(item, msg, key)
            self._replication(item, msg, ts, key)
        elif protocol == "rdb":
            self._payload(item, msg, ts, key)
        elif protocol == "journal":
            self._journal(item, msg, ts, key)

    # -- commands and replies --------------------------------------------------------------

    def _reply(self, item: Any, msg: Any, key: Any) -> None:
        ms = msg.latency_ms
        name = msg.answers or "?"
        lat = self.commands.get(name)
        if lat is None:
            lat = self.commands[name] = Latencies()
        lat.add(ms)
        if len(self.slowest) < SLOWEST or ms > self.slowest[0][0]:
            row = {"command": name, "latency_ms": ms, "connection": flow_label(item.flow),
                   "command_frame": msg.reply_to, "reply_frame": item.number}
            entry = (ms, _sortable(key), row)
            if len(self.slowest) < SLOWEST:
                heapq.heappush(self.slowest, entry)
            else:
                heapq.heapreplace(self.slowest, entry)

    # -- replication ------------------------------------------------------------------------

    def _link(self, flow: Any, key: Any) -> Link:
        link = self.links.get(flow)
        if link is None:
            link = self.links[flow] = Link(key)
            link.first_ts = self.first_ts.get(flow)
        return link

    def _replication(self, item: Any, msg: Any, ts: float | None, key: Any) -> None:
        fields = msg.fields
        if "flow_id" in fields or item.flow in self.flows:  # a Dragonfly FLOW connection
            if "flow_id" not in fields:
                return
            flow = self._flow(item.flow, key)
            flow.sync = flow.sync or _sync(fields)
            flow.flow_id = fields["flow_id"]
            return
        link = self.links.get(item.flow)
        if "master_offset" in fields or msg.name == "+CONTINUE":
            link = self._link(item.flow, key)
            link.resync_ts, link.resync = ts, "FULLRESYNC" if "master_offset" in fields else "CONTINUE"
            link.replid = fields.get("replid")
            if link.resync == "CONTINUE":
                link.load_end_ts = ts  # a partial sync goes on with the stream at once
        elif msg.verb in (b"PSYNC", b"SYNC") or (msg.verb == b"REPLCONF" and "ack_offset" in fields):
            link = self._link(item.flow, key)
        if link is None:
            return
        link.last_ts = pick(max, link.last_ts, ts)
        if msg.repl_offset is not None:  # the master's stream
            link.sent = msg.repl_offset + msg.size
            link.streamed += 1
            link.streamed_bytes += msg.size
            if link.load_end_ts is not None:
                link.commands += 1
                link.stream_bytes += msg.size
            if ts is not None:
                link.master_offset.add(ts, link.sent, key)
        ack = fields.get("ack_offset")
        if isinstance(ack, int):
            link.acks += 1
            if link.load_end_ts is None and link.payload_end_ts is not None:
                link.load_end_ts = ts
            if ts is not None:
                link.replica_offset.add(ts, ack, key)
            if link.sent is not None:
                link.lag = link.sent - ack
                if ts is not None:
                    link.ack_lag.add(ts, link.lag, key)

    def _payload(self, item: Any, msg: Any, ts: float | None, key: Any) -> None:
        summary = msg.summary or {}
        if "sync_id" in summary or item.flow in self.flows:
            flow = self._flow(item.flow, key)
            if flow.full_start is None:
                flow.full_start = ts
            flow.full_end = ts
            flow.full_bytes += msg.size
            if msg.summary is not None:
                flow.keys = summary.get("keys")
                flow.sync = flow.sync or _sync(summary)
                flow.flow_id = summary.get("flow_id", flow.flow_id)
            return
        link = self._link(item.flow, key)
        link.last_ts = pick(max, link.last_ts, ts)
        if msg.head is not None:
            link.payload_ts, link.payload_bytes = ts, 0
            if link.resync_ts is None:  # the bare payload that answers SYNC
                link.resync_ts, link.resync = ts, "SYNC"
            return
        link.payload_bytes += msg.size
        link.payload_end_ts = ts
        if msg.summary is not None:
            link.keys = msg.summary.get("keys")

    # -- Dragonfly ----------------------------------------------------------------------------

    def _flow(self, flow_key: Any, key: Any) -> Flow:
        flow = self.flows.get(flow_key)
        if flow is None:
            flow = self.flows[flow_key] = Flow(key)
        return flow

    def _journal(self, item: Any, msg: Any, ts: float | None, key: Any) -> None:
        flow = self._flow(item.flow, key)
        flow.sync = flow.sync or _sync(msg.fields)
        if flow.flow_id is None:
            flow.flow_id = msg.fields.get("flow_id")
        if flow.stable_start is None:
            flow.stable_start = ts
        flow.stable_end = ts
        flow.records += 1
        if msg.lsn is not None:
            if flow.first_lsn is None:
                flow.first_lsn = msg.lsn
            flow.last_lsn = msg.lsn

    # -- parts and the report ----------------------------------------------------------------

    def merge(self, other: "RedisStats") -> None:
        for name, lat in other.commands.items():
            if name in self.commands:
                self.commands[name].merge(lat)
            else:
                self.commands[name] = lat
        self.slowest = heapq.nlargest(SLOWEST, self.slowest + other.slowest, key=lambda e: (e[0], e[1]))
        heapq.heapify(self.slowest)
        self.links.update(other.links)
        self.flows.update(other.flows)
        self.first_ts.update(other.first_ts)

    def report(self, t0: float | None) -> dict[str, Any]:
        commands = sorted(self.commands.items(), key=lambda kv: (-kv[1].count, kv[0]))
        syncs: dict[str, dict] = {}
        for key, flow in sorted(self.flows.items(), key=lambda kv: _order(kv[1].order)):
            syncs.setdefault(flow.sync or "?", {})[flow_label(key)] = flow.json()
        return {
            "commands": {name: lat.json() for name, lat in commands},
            "slowest": [row for _, _, row in sorted(self.slowest, key=lambda e: (-e[0], e[1]))],
            "replication": {flow_label(k): link.json(t0)
                            for k, link in sorted(self.links.items(), key=lambda kv: _order(kv[1].order))},
            "dragonfly": syncs,
        }


def _sync(fields: dict) -> str | None:
    replid, sync = fields.get("master_replid"), fields.get("sync_id")
    return None if sync is None else f"{replid} {sync}"


def _span(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round_to(b - a)


def _rate(n: float, seconds: float | None) -> float | None:
    return None if not seconds or seconds <= 0 else round(n / seconds, 3)


def _points(series: DecimatedSeries, t0: float | None) -> list[list]:
    base = t0 or 0.0
    return [[round(t - base, 6), v] for t, v in series.values()]


def _sortable(key: Any) -> tuple:
    return key if isinstance(key, tuple) else (key,)


def _order(key: Any) -> tuple:
    return (0, _sortable(key)) if key is not None else (1, ())
