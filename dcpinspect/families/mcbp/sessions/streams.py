"""DCP stream state per connection (sans-I/O, h11-style: state changes, no judging).

A stream is identified by (vbucket, stream-id or None) and by the opaque of its
STREAM_REQ; it lives from a Success response to STREAM_END.  Every P→C message
of a stream repeats that opaque.  The validator (``rules.stream``) reads this
state *before* applying each message, then calls :meth:`DcpState.apply`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ....limits import SNAPSHOT_KEYS
from ..messages.dcp import OSO_END, OSO_START, SNAPSHOT_ACK, SNAPSHOT_DISK, SNAPSHOT_HISTORY, SNAPSHOT_MAY_DUPLICATE
from ..messages.frame import Message
from ..messages.opcodes import OP, ST
from ..messages.registry import CLIENT_SPECS

# What the catalog (messages/) says of each opcode, as the sets the stream state looks up.
#: Opcodes that belong to a stream and travel producer → consumer.
STREAM_OPCODES = frozenset(op for op, spec in CLIENT_SPECS.items() if spec.stream)
#: Stream messages that carry the stream's next seqno, and the field that carries it.
SEQNO_OPCODES = {op: spec.seqno_field for op, spec in CLIENT_SPECS.items() if spec.seqno_field}
#: Data items that must fall inside the current snapshot (R3).
ITEM_OPCODES = frozenset(op for op, spec in CLIENT_SPECS.items() if spec.item)
#: Messages the producer counts against the consumer's flow-control buffer.
FLOW_CONTROLLED = STREAM_OPCODES
MAX_SEQNO = 0xFFFFFFFFFFFFFFFF
#: (vbucket, stream id) pairs remembered as having had messages with no open stream; past
#: it the oldest is forgotten (and a message for it reported again)
MAX_STRAYS = 65_536
#: keys of one snapshot remembered for the duplicate-key rule (read where they are added,
#: by this state and the jsonl lane alike)
MAX_SNAPSHOT_KEYS = SNAPSHOT_KEYS.default
#: the stream.counts key of each known message, ``DCP_SEQNO_ADVANCED`` → ``seqno_advanced``
_COUNT_NAMES = {op: spec.name.removeprefix("DCP_").lower() for op, spec in CLIENT_SPECS.items()}


@dataclass
class Snapshot:
    start: int
    end: int
    flags: int
    index: int  # frame index of the marker
    max_visible: int | None = None
    high_completed: int | None = None
    high_prepared: int | None = None
    keys: set = field(default_factory=set)
    complete: bool = False
    acked: bool = False
    #: an item of the stream came with a seqno outside this snapshot (reported on the first)
    strayed: bool = False

    @property
    def may_duplicate(self) -> bool:
        return bool(self.flags & (SNAPSHOT_MAY_DUPLICATE | SNAPSHOT_HISTORY))

    @property
    def wants_ack(self) -> bool:
        return bool(self.flags & SNAPSHOT_ACK)

    @property
    def disk(self) -> bool:
        return bool(self.flags & SNAPSHOT_DISK)


@dataclass
class Stream:
    vbucket: int
    stream_id: int | None
    opaque: int
    request: dict[str, Any]
    request_index: int
    request_ts: float | None
    state: str = "requested"  # requested, open, ended, rejected
    last_seqno: int = 0
    snapshot: Snapshot | None = None
    previous: Snapshot | None = None
    markers: int = 0
    in_oso: bool = False
    oso_base: int = 0
    oso_max: int = 0
    end_reached: bool = False  # the snapshot holding end_seqno is complete
    end_reason: str | None = None
    end_index: int | None = None
    end_ts: float | None = None
    first_item_ts: float | None = None
    counts: dict[str, int] = field(default_factory=dict)
    manifest_uid: int | None = None
    failover_log: list = field(default_factory=list)
    adopted: bool = False  # first seen mid-conversation, without its request
    # states that last, each reported on its first message (rules/facts.py's episodes):
    late: bool = False  # a message came after its STREAM_END
    unlabelled: bool = False  # a message came without the stream-id frame enable_stream_id asks for
    unmarked: bool = False  # an item came before any snapshot marker
    overran: bool = False  # a marker or item came after the snapshot holding its end seqno
    _context: dict | None = field(default=None, repr=False, compare=False)
    _label: tuple | None = field(default=None, repr=False, compare=False)  # (vbucket, stream id, opaque, label)

    @property
    def start_seqno(self) -> int:
        return self.request.get("start_seqno", 0)

    @property
    def end_seqno(self) -> int:
        return self.request.get("end_seqno", MAX_SEQNO)

    @property
    def context(self) -> dict:
        """vbucket and stream id, as findings about this stream carry them (do not mutate)."""
        ctx = self._context
        if ctx is None or ctx["vbucket"] != self.vbucket or ctx["stream_id"] != self.stream_id:
            ctx = self._context = {"vbucket": self.vbucket, "stream_id": self.stream_id}
        return ctx

    def label(self) -> str:
        """``vb 5 sid 1 (opaque 0x00000015)``, as findings about the stream name it (made once
        while they stay the same: a stream can have a finding an item)."""
        made = self._label
        if made is None or made[0] != self.vbucket or made[1] != self.stream_id or made[2] != self.opaque:
            sid = f" sid {self.stream_id}" if self.stream_id is not None else ""
            made = self._label = (self.vbucket, self.stream_id, self.opaque,
                                  f"vb {self.vbucket}{sid} (opaque 0x{self.opaque:08x})")
        return made[3]


_ABSENT = object()
_NO_VALUES: dict = {}  # the values of every request but a stream request (never written to)


class RequestRef:
    """What answers are judged against, without the request's bytes: up to 100k requests
    wait for an answer, and a whole Message (frame, value, value text) is ~3x its frame.
    Its ``fields`` (``key`` and ``stream_id``, when the request had them) are made when asked
    for: a connection waiting for many answers keeps two values a request, not a dict."""

    __slots__ = ("opcode", "opaque", "name", "vbucket", "stream_id", "values", "_key", "_sid")

    def refer_to(self, msg: Message) -> None:
        self.opcode, self.opaque, self.name, self.vbucket = msg.opcode, msg.opaque, msg.name, msg.vbucket
        self.stream_id = msg.stream_id
        self.values = msg.values if msg.opcode == OP.DCP_STREAM_REQ else _NO_VALUES
        fields = msg.fields
        self._key = fields["key"] if "key" in fields else _ABSENT
        self._sid = fields["stream_id"] if "stream_id" in fields else _ABSENT

    def item(self, opcode: int, opaque: int, name: str, vbucket: int, stream_id: int | None, key: str | None) -> None:
        """What :meth:`refer_to` takes from a request without values (a DCP item, or with
        ``key`` None a snapshot marker)."""
        self.opcode, self.opaque, self.name, self.vbucket, self.stream_id = opcode, opaque, name, vbucket, stream_id
        self.values = _NO_VALUES
        self._key = _ABSENT if key is None else key
        self._sid = _ABSENT if stream_id is None else stream_id

    @property
    def fields(self) -> dict[str, Any]:
        """``key`` and ``stream_id`` of the request's fields, those it had."""
        out = {}
        if self._key is not _ABSENT:
            out["key"] = self._key
        if self._sid is not _ABSENT:
            out["stream_id"] = self._sid
        return out


@dataclass(slots=True)
class Pending:
    msg: Message
    index: int
    ts: float | None
    direction: str | None


class _Made:
    """A container of :class:`DcpState` made on first use: a connection that is not DCP
    (or is idle) holds none of the ones it never needed."""

    __slots__ = ("slot", "make")

    def __init__(self, slot: str, make: type) -> None:
        self.slot, self.make = slot, make

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = getattr(obj, self.slot)
        if value is None:
            value = self.make()
            setattr(obj, self.slot, value)
        return value

    def __set__(self, obj, value) -> None:
        setattr(obj, self.slot, value)


class DcpState:
    """All streams and outstanding requests of one connection.

    ``streams_by_opaque``: stream by the opaque of its request; ``live`` / ``ended``: open and
    ended streams by (vb, sid); ``all_streams`` in order; ``pending``: requests awaiting an
    answer by (direction, opaque); ``rollbacks``: (vb, sid) → rollback seqno; ``noops``;
    ``acks_due``: snapshots whose ack is awaited; ``strays``: (vb, sid) that had messages
    while no stream of theirs was open, until one opens."""

    _CONTAINERS = {"streams_by_opaque": dict, "live": dict, "ended": dict, "all_streams": list,
                   "pending": dict, "rollbacks": dict, "noops": dict, "acks_due": list,
                   "strays": dict}
    __slots__ = tuple("_" + name for name in _CONTAINERS) + (
        "buffer_size", "unacked", "sent_total", "acked_total", "dcp_open_seen", "requests_seen", "lossy",
        "producer_direction", "overrun")

    streams_by_opaque: dict[int, Stream] = _Made("_streams_by_opaque", dict)
    live: dict[tuple[int, int | None], Stream] = _Made("_live", dict)
    ended: dict[tuple[int, int | None], Stream] = _Made("_ended", dict)
    all_streams: list[Stream] = _Made("_all_streams", list)
    pending: dict[tuple[str | None, int], Pending] = _Made("_pending", dict)
    rollbacks: dict[tuple[int, int | None], int] = _Made("_rollbacks", dict)
    noops: dict[int, Pending] = _Made("_noops", dict)
    acks_due: list[tuple[Stream, Snapshot]] = _Made("_acks_due", list)
    strays: dict[tuple[int, int | None], None] = _Made("_strays", dict)

    def __init__(self) -> None:
        for name in self._CONTAINERS:
            setattr(self, "_" + name, None)
        self.buffer_size = self.unacked = self.sent_total = self.acked_total = 0
        self.dcp_open_seen = self.requests_seen = self.lossy = False
        self.producer_direction: str | None = None
        #: the last flow-controlled message went with the consumer's buffer already full, and
        #: no acknowledgement has since brought the unacknowledged bytes below it
        self.overrun = False

    # -- lookups -------------------------------------------------------------------------

    def stream_for(self, msg: Message) -> Stream | None:
        """The stream of a producer→consumer message, as the state has it once the message
        is seen: joined (adopted) if the connection's start was missed, open if its data
        shows the producer accepted a request whose answer was not seen."""
        stream = self.stream_of(msg)
        if stream is None and not self.dcp_open_seen:
            stream = self.adopt(msg)  # joined mid-conversation: follow the stream from here
        if stream is not None and stream.state == "requested" and msg.opaque == stream.opaque:
            self.accept(stream, msg)  # the producer only streams after a Success answer we did not see
        return stream

    def stream_of(self, msg: Message) -> Stream | None:
        """The stream a producer→consumer message belongs to (by opaque, then vb + sid)."""
        s = self.streams_by_opaque.get(msg.opaque)
        if s is not None and s.vbucket == msg.vbucket and (msg.stream_id is None or msg.stream_id == s.stream_id):
            return s
        key = (msg.vbucket, msg.stream_id)
        return self.live.get(key) or self.ended.get(key)

    def strayed(self, stream: Stream | None, msg: Message | None) -> bool:
        """Whether messages for the vbucket and stream id of ``msg`` (else of ``stream``)
        came while none of their streams was open, and none has opened since."""
        key = (msg.vbucket, msg.stream_id) if msg is not None else (stream.vbucket, stream.stream_id)
        return self._strays is not None and key in self._strays

    def request_for(self, msg: Message, direction: str | None) -> Pending | None:
        other = _other(direction)
        return self.pending.get((other, msg.opaque)) or (self.pending.get((None, msg.opaque)) if other else None)

    # -- state changes -------------------------------------------------------------------

    def opened(self, direction: str | None) -> None:
        """A DCP_OPEN went ``direction``: the other side produces."""
        self.dcp_open_seen = True
        self.producer_direction = _other(direction)

    def stray(self, msg: Message) -> None:
        """A stream message with no open stream (none known, or only one requested or
        rejected): its vbucket and stream id are astray until a stream of theirs opens."""
        strays = self.strays
        strays[(msg.vbucket, msg.stream_id)] = None
        if len(strays) > MAX_STRAYS:
            strays.pop(next(iter(strays)))

    def late(self, stream: Stream) -> None:
        """A message on a stream after its STREAM_END (it changes nothing else)."""
        stream.late = True

    def unlabelled(self, stream: Stream) -> None:
        """A message of the stream came without the stream-id frame it should carry."""
        stream.unlabelled = True

    def unmarked(self, stream: Stream) -> None:
        """An item of the stream came before any snapshot marker."""
        stream.unmarked = True

    def overran(self, stream: Stream) -> None:
        """A marker or item of the stream came after the snapshot holding its end seqno."""
        stream.overran = True

    def outside(self, snap: Snapshot) -> None:
        """An item came with a seqno outside the stream's current snapshot ``snap``."""
        snap.strayed = True

    def _opened(self, key: tuple[int, int | None]) -> None:
        if self._strays:
            self._strays.pop(key, None)

    def noop(self, msg: Message, index: int, ts: float | None, direction: str | None) -> None:
        self.noops[msg.opaque] = Pending(msg, index, ts, direction)

    def sent(self, msg: Message, buffer_size: int | None) -> None:
        """A flow-controlled message counted against the consumer's buffer (if it has one)."""
        if buffer_size:
            size = msg.body_length + 24 + (2 if msg.opcode == OP.DCP_PREPARE else 0)
            self.overrun = self.unacked >= buffer_size
            self.unacked += size
            self.sent_total += size

    def acked(self, count: int, buffer_size: int | None = None) -> None:
        """A DCP_BUFFER_ACKNOWLEDGEMENT of ``count`` bytes: an overrun ends when it brings the
        unacknowledged bytes below the buffer."""
        self.acked_total += count
        self.unacked = max(0, self.unacked - count)
        if self.unacked < (buffer_size or 0):
            self.overrun = False

    def answered(self, msg: Message, direction: str | None) -> Pending | None:
        """A response: what it changes, and the request it answers (None if none of its
        opcode waits)."""
        pending, op = self.request_for(msg, direction), msg.opcode
        if op == OP.DCP_NOOP:
            self.noops.pop(msg.opaque, None)
        if op == OP.DCP_SNAPSHOT_MARKER and msg.status == 0:
            for stream, snap in self.acks_due:
                if stream.opaque == msg.opaque and snap.complete and not snap.acked:
                    snap.acked = True
                    break
            self.acks_due = [(s, sn) for s, sn in self.acks_due if not sn.acked]
        if op == OP.DCP_STREAM_REQ:
            stream = self.streams_by_opaque.get(msg.opaque)
            if stream is not None and stream.state == "requested":
                (self.accept if msg.status == 0 else self.reject)(stream, msg)
        if pending is None or pending.msg.opcode != op:
            return None
        self.pending.pop((pending.direction, msg.opaque), None)
        return pending

    def remember_request(self, msg: Message, index: int, ts: float | None, direction: str | None) -> None:
        self.remember(direction, msg.opaque, index, ts).refer_to(msg)

    def remember(self, direction: str | None, opaque: int, index: int, ts: float | None) -> RequestRef:
        """The reference that answers from the other side are judged against, for the caller
        to fill. A stream's messages share its opaque: each reuses the last one's in place
        (no one else holds these)."""
        key = (direction, opaque)
        pending = self.pending.get(key)
        if pending is not None:
            pending.index, pending.ts = index, ts
            return pending.msg
        ref = RequestRef()
        self.pending[key] = Pending(ref, index, ts, direction)
        if len(self.pending) > 100_000:  # bounded: forget the oldest
            self.pending.pop(next(iter(self.pending)))
        return ref

    def open_request(self, msg: Message, index: int, ts: float | None) -> Stream:
        sid = msg.fields.get("stream_id") if isinstance(msg.fields.get("stream_id"), int) else msg.stream_id
        stream = Stream(msg.vbucket or 0, sid, msg.opaque, dict(msg.values), index, ts)
        stream.last_seqno = stream.start_seqno
        self.requests_seen = True
        self.streams_by_opaque[msg.opaque] = stream
        self.all_streams.append(stream)
        return stream

    def adopt(self, msg: Message) -> Stream:
        """A stream whose request was not captured: known from its first message on."""
        stream = Stream(msg.vbucket or 0, msg.stream_id, msg.opaque, {}, -1, None, state="open", adopted=True)
        self.streams_by_opaque[msg.opaque] = stream
        key = (stream.vbucket, stream.stream_id)
        self.live[key] = stream
        self._opened(key)
        self.all_streams.append(stream)
        return stream

    def accept(self, stream: Stream, response: Message) -> None:
        stream.state = "open"
        stream.failover_log = list(response.fields.get("failover_log", []))
        key = (stream.vbucket, stream.stream_id)
        self.live[key] = stream
        self.ended.pop(key, None)
        self._opened(key)

    def reject(self, stream: Stream, response: Message) -> None:
        stream.state = "rejected"
        if response.status == ST.Rollback and "rollback_seqno" in response.fields:
            self.rollbacks[(stream.vbucket, stream.stream_id)] = response.fields["rollback_seqno"]

    def end(self, stream: Stream, msg: Message, index: int, ts: float | None) -> None:
        stream.state = "ended"
        stream.end_reason = msg.fields.get("reason")
        stream.end_index, stream.end_ts = index, ts
        key = (stream.vbucket, stream.stream_id)
        if self.live.get(key) is stream:
            del self.live[key]
        self.ended[key] = stream

    def start_snapshot(self, stream: Stream, msg: Message, index: int) -> Snapshot:
        v = msg.values
        snap = Snapshot(v.get("start_seqno", 0), v.get("end_seqno", 0), v.get("snapshot_type", 0), index,
                        v.get("max_visible_seqno"), v.get("high_completed_seqno"), v.get("high_prepared_seqno"))
        stream.previous, stream.snapshot = stream.snapshot, snap
        stream.markers += 1
        return snap

    def snapshot_marker(self, stream: Stream, msg: Message, index: int) -> Snapshot:
        snap = self.start_snapshot(stream, msg, index)
        if snap.wants_ack:
            self.acks_due.append((stream, snap))
        return snap

    def oso(self, stream: Stream, flags: int) -> None:
        """A DCP_OSO_SNAPSHOT: OSO_START starts one, OSO_END ends it."""
        if flags == OSO_START:
            stream.in_oso, stream.oso_base, stream.oso_max = True, stream.last_seqno, stream.last_seqno
        elif flags == OSO_END:
            stream.in_oso = False
            stream.last_seqno = max(stream.last_seqno, stream.oso_max)

    def system_event(self, stream: Stream, manifest_uid: int | None) -> None:
        if manifest_uid is not None:
            stream.manifest_uid = max(manifest_uid, stream.manifest_uid or 0)

    def item(self, stream: Stream, msg: Message, seqno: int, ts: float | None, digest: int | None = None) -> None:
        """A message with a seqno; ``digest``: its key's (:func:`key_digest`), remembered in
        the current snapshot (up to the rules' cap of keys a snapshot) when duplicates there
        are worth judging."""
        snap = stream.snapshot
        if digest is not None and snap is not None and not stream.in_oso and not snap.may_duplicate:
            keys = snap.keys
            if digest not in keys and len(keys) < MAX_SNAPSHOT_KEYS:
                keys.add(digest)
        name = _COUNT_NAMES.get(msg.opcode) if msg.spec is CLIENT_SPECS.get(msg.opcode) else None
        if name is None:
            name = msg.name.removeprefix("DCP_").lower()
        self.items(stream, name, 1, seqno, ts, msg.opcode in ITEM_OPCODES)

    def took_run(self, stream: Stream, markers: int, first_complete: bool, before: Snapshot | None,
                 newest: Snapshot | None, counts: tuple[tuple[str, int], ...], last_seqno: int, ts: float | None,
                 unacked: int | None, size: int) -> None:
        """What the messages of a run that a fast path took change, as they would one by
        one: ``markers`` snapshot markers (the snapshot the stream was in then complete as
        ``first_complete`` says; the last two, ``before`` and ``newest``), items counted by
        name, the last at ``last_seqno``; ``unacked`` the bytes then unacknowledged (None:
        no flow control), ``size`` the run's bytes."""
        if markers:
            snap = stream.snapshot
            snap.complete = first_complete
            stream.previous = snap if before is None else before
            stream.snapshot = newest
            stream.markers += markers
        for name, count in counts:
            if count:
                self.items(stream, name, count, last_seqno, ts)
        if unacked is not None:
            self.unacked = unacked
            self.sent_total += size

    def items(self, stream: Stream, name: str, count: int, seqno: int, ts: float | None, data: bool = True) -> None:
        """``count`` messages of a kind (counted as ``name``), the last of them at ``seqno``:
        what :meth:`item` does for each of them in turn (only the last can end a snapshot)."""
        stream.counts[name] = stream.counts.get(name, 0) + count
        if data and stream.first_item_ts is None:
            stream.first_item_ts = ts
        if stream.in_oso:
            stream.oso_max = max(stream.oso_max, seqno)
        else:
            stream.last_seqno = seqno
        snap = stream.snapshot
        if snap is not None and not stream.in_oso and seqno >= snap.end:
            snap.complete = True
            if snap.end >= stream.end_seqno or seqno >= stream.end_seqno:
                stream.end_reached = True


def key_digest(opcode: int, msg: Message) -> int:
    """What a snapshot remembers of a key: prepares apart from the rest, the collection and
    the logical key (``_lane.c`` makes the same number from a frame's bytes)."""
    return hash((opcode == OP.DCP_PREPARE, msg.collection_id, msg.key))


def _other(direction: str | None) -> str | None:
    return {"c2s": "s2c", "s2c": "c2s"}.get(direction or "", None)
