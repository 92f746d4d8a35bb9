"""TAP conversation state per connection (sans-I/O, h11-style: state changes, no judging).

One consumer opens the connection with TAP_CONNECT; from then on the producer sends TAP
events (0x41–0x47) and NOOPs as requests, and the consumer answers the events that ask
for it (TAP_FLAG_ACK) with responses of the same opcode and opaque (spec/tap.md §1, §8).
:class:`TapSession` keeps what that conversation said: the connect flags and their
values, the producer's sequence numbers (the opaque of each event), the events not yet
covered by a cumulative ACK, each vbucket's phase (backfill, takeover), its checkpoints,
and the counters ``stats`` prints. The TAP rules (``rules.tap``) read this state
*before* each message and then call :meth:`TapSession.apply`; ``sessions.stats`` feeds a
session of its own and reports :meth:`TapSession.stats`, which ``families/mcbp/stats_view.py`` prints.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ..messages.frame import Message
from ..messages.names import REQUEST_MAGICS, VBUCKET_STATES
from ..messages.opcodes import OP, ST
from ..messages.tap import TAP_CONNECT_FLAGS, TAP_FLAGS, TAP_OPAQUE_CODES

CONNECT, NOOP = OP.TAP_CONNECT, OP.NOOP
#: the producer's events, and the opcodes of the consumer's ACKs
MUTATION, DELETE, FLUSH, OPAQUE, VBUCKET_SET, CHECKPOINT_START, CHECKPOINT_END = (
    OP.TAP_MUTATION, OP.TAP_DELETE, OP.TAP_FLUSH, OP.TAP_OPAQUE, OP.TAP_VBUCKET_SET, OP.TAP_CHECKPOINT_START,
    OP.TAP_CHECKPOINT_END)
EVENT_OPCODES = frozenset({MUTATION, DELETE, FLUSH, OPAQUE, VBUCKET_SET, CHECKPOINT_START, CHECKPOINT_END})
#: the events a producer asks an ACK for on every SupportAck connection (spec §8)
ACKED_EVENTS = frozenset({OPAQUE, VBUCKET_SET, CHECKPOINT_START, CHECKPOINT_END})
#: TAP_CONNECT flags (spec §9.2)
BACKFILL, DUMP, LIST_VBUCKETS, TAKEOVER, SUPPORT_ACK, KEYS_ONLY, CHECKPOINT, REGISTERED_CLIENT, FIX_BYTEORDER = (
    TAP_CONNECT_FLAGS)
KNOWN_CONNECT_FLAGS = sum(TAP_CONNECT_FLAGS)
#: TAP flags of an event (spec §4)
FLAG_ACK, FLAG_NO_VALUE, FLAG_NETWORK_BYTE_ORDER = TAP_FLAGS
#: TAP_OPAQUE codes (spec §6)
_OPAQUE_CODE = {name: code for code, name in TAP_OPAQUE_CODES.items()}
ENABLE_AUTO_NACK, INITIAL_VBUCKET_STREAM, ENABLE_CHECKPOINT_SYNC, OPEN_CHECKPOINT, CLOSE_TAP_STREAM, CLOSE_BACKFILL = (
    _OPAQUE_CODE[name] for name in ("EnableAutoNack", "InitialVbucketStream", "EnableCheckpointSync",
                                    "OpenCheckpoint", "CloseTapStream", "CloseBackfill"))
#: vbucket states (spec §7)
_STATE = {name: code for code, name in VBUCKET_STATES.items()}
ACTIVE, REPLICA, PENDING, DEAD = (_STATE[name] for name in ("active", "replica", "pending", "dead"))
#: NACK statuses: the producer resends the event and those after it (spec §8)
NACK_STATUSES = frozenset({ST.Ebusy, ST.Etmpfail})
MAX_SEQNO = 0xFFFFFFFF
#: events remembered until an ACK covers them (ep-engine's window is 10 × 1000 by default)
MAX_LOG = 16384
#: the kind each event is counted as in ``stats``
KINDS = {MUTATION: "mutation", DELETE: "delete", FLUSH: "flush", OPAQUE: "opaque", VBUCKET_SET: "vbucket_set",
         CHECKPOINT_START: "checkpoint_start", CHECKPOINT_END: "checkpoint_end", NOOP: "noop"}


def next_seqno(seqno: int) -> int:
    """The TAP sequence number after ``seqno``: one more, 1 after 0xFFFFFFFF (spec §3.5)."""
    return 1 if seqno >= MAX_SEQNO else seqno + 1


def value_length(msg: Message) -> int:
    """The bytes of an event's value: the body less extras, engine-specific bytes and key."""
    return max(0, msg.body_length - msg.extras_length - msg.key_length - msg.values.get("engine_specific_length", 0))


def is_event(msg: Message) -> bool:
    """A producer's TAP event: a request of 0x41–0x47."""
    return msg.opcode in EVENT_OPCODES and msg.magic in REQUEST_MAGICS


def is_ack(msg: Message) -> bool:
    """A consumer's answer to an event: a response of 0x41–0x47."""
    return msg.opcode in EVENT_OPCODES and msg.magic not in REQUEST_MAGICS


@dataclass(slots=True)
class Connect:
    """What the consumer's TAP_CONNECT asked for (spec §9)."""

    flags: int
    name: str | None
    index: int | None
    ts: float | None
    backfill_time: int | None = None
    vbuckets: tuple[int, ...] | None = None
    checkpoints: dict[int, int] = field(default_factory=dict)  # vbucket → last checkpoint id the client has
    closed_checkpoint_only: int | None = None

    def has(self, flag: int) -> bool:
        return bool(self.flags & flag)

    @property
    def flag_names(self) -> list[str]:
        names = [name for bit, name in TAP_CONNECT_FLAGS.items() if self.flags & bit]
        rest = self.flags & ~KNOWN_CONNECT_FLAGS
        return names + ([f"0x{rest:x}"] if rest else [])


@dataclass(slots=True)
class Sent:
    """An event the producer sent, until an ACK covers it."""

    seqno: int
    opcode: int
    vbucket: int
    index: int | None
    ts: float | None
    ack: bool  # TAP_FLAG_ACK: an answer is due
    ident: int  # what a resend of it repeats (opcode, vbucket, key, engine code)

    @property
    def name(self) -> str:
        return f"TAP_{KINDS[self.opcode].upper()}"


@dataclass(slots=True)
class Answer:
    """An error answer to an event that is not a NACK: the producer must disconnect."""

    status: int
    index: int | None
    event: str
    seqno: int
    events_after: int = 0
    first_after: int | None = None  # frame of the first event sent after it


@dataclass(slots=True)
class Vbucket:
    """One vbucket of a TAP connection: its phase, states, checkpoints and counts."""

    vbucket: int
    phase: str = "stream"  # backfill, stream, takeover (after CLOSE_TAP_STREAM), pending, active, ...
    backfill_start: float | None = None
    backfill_index: int | None = None
    backfills: int = 0
    backfill_seconds: float = 0.0
    states: list[int] = field(default_factory=list)  # TAP_VBUCKET_SET states in order (the last 8)
    checkpoint_open: int | None = None  # id of a START not yet ENDed
    checkpoint_last: int | None = None  # id of the last START
    checkpoint_frames: int = 0
    checkpoints: int = 0  # STARTs
    events: Counter = field(default_factory=Counter)
    bytes: int = 0
    acks: int = 0
    nacks: int = 0

    @property
    def state(self) -> int | None:
        return self.states[-1] if self.states else None


@dataclass(slots=True)
class Waits:
    """ACK round trips: how many, their total, and the longest with its event's frame."""

    count: int = 0
    total: float = 0.0
    longest: float | None = None
    longest_index: int | None = None
    longest_vbucket: int | None = None

    def add(self, seconds: float, sent: Sent) -> None:
        self.count += 1
        self.total += seconds
        if self.longest is None or seconds > self.longest:
            self.longest, self.longest_index, self.longest_vbucket = seconds, sent.index, sent.vbucket


class TapSession:
    """Everything one TAP connection said so far; :meth:`apply` each message in order."""

    def __init__(self, seen_from_start: bool = False) -> None:
        self.seen_from_start = seen_from_start
        self.connect: Connect | None = None
        self.connects = 0
        self.producer: str | None = None  # the direction events travel
        self.first_seqno: int | None = None
        self.last_seqno: int | None = None
        self.log: OrderedDict[int, Sent] = OrderedDict()  # seqno → event not yet covered by an ACK
        self.log_dropped = 0
        self.resend_due: Counter = Counter()  # idents a NACK asked to be sent again
        self.nack_index: int | None = None  # frame of the NACK the resends answer
        self.error: Answer | None = None
        self.lossy = False
        self.checkpoint_sync = False  # TAP_OPAQUE ENABLE_CHECKPOINT_SYNC seen
        self.auto_nack = False
        self.closing = False  # TAP_OPAQUE CLOSE_TAP_STREAM seen: the takeover phase
        self.keys_only_granted = False  # an event came with TAP_FLAG_NO_VALUE
        # states that last, each reported on its first event (rules.tap's episodes):
        #: an event's TAP_FLAG_ACK disagreed with SupportAck; ended by a TAP_CONNECT, or on a
        #: SupportAck connection by an event of ACKED_EVENTS that asks for its ACK
        self.ack_flag_wrong = False
        #: a mutation carried a value it should not have (keys only); ended by one without a value
        self.unwanted_values = False
        self.vbuckets: dict[int, Vbucket] = {}
        self.events: Counter = Counter()
        self.frames = 0
        self.bytes = 0
        self.acks_requested = 0
        self.acks = 0  # answers that matched an event
        self.covered = 0  # ACK requests an answer covered (cumulatively)
        self.nacks = 0
        self.errors = 0
        self.waits = Waits()
        self.first_ts: float | None = None
        self.last_ts: float | None = None

    # -- lookups ---------------------------------------------------------------------------

    def vb(self, vbucket: int | None) -> Vbucket:
        vbucket = vbucket or 0
        v = self.vbuckets.get(vbucket)
        if v is None:
            v = self.vbuckets[vbucket] = Vbucket(vbucket)
        return v

    def wants(self, flag: int) -> bool:
        """The consumer's TAP_CONNECT set ``flag`` (False when none was seen)."""
        return self.connect is not None and self.connect.has(flag)

    def expected_seqno(self) -> int | None:
        """The opaque the producer's next event should carry (None before the first)."""
        return None if self.last_seqno is None else next_seqno(self.last_seqno)

    def answered(self, msg: Message) -> Sent | None:
        """The remembered event an ACK answers: same opaque and same opcode."""
        sent = self.log.get(msg.opaque)
        return sent if sent is not None and sent.opcode == msg.opcode else None

    def known_range(self, seqno: int) -> bool:
        """Whether an event with ``seqno`` would have been seen: the capture began with the
        connection, or the producer's first event seen is not after it."""
        return self.seen_from_start or (self.first_seqno is not None and self.first_seqno <= seqno)

    def unanswered(self) -> list[Sent]:
        """ACK requests no answer covered, oldest first."""
        return [s for s in self.log.values() if s.ack]

    def takeover_vbuckets(self) -> tuple[int, ...]:
        """The vbuckets a takeover stream hands over: its list, else those it sent."""
        c = self.connect
        if c is not None and c.vbuckets:
            return c.vbuckets
        return tuple(sorted(self.vbuckets))

    # -- state changes ---------------------------------------------------------------------

    def apply(self, msg: Message, direction: str | None = None, ts: float | None = None,
              index: int | None = None) -> None:
        """Take one message of the connection (any direction) into the state."""
        self.frames += 1
        self.bytes += msg.size
        if ts is not None:
            self.first_ts = ts if self.first_ts is None else self.first_ts
            self.last_ts = ts
        op = msg.opcode
        if msg.magic in REQUEST_MAGICS:
            if op == CONNECT:
                self._connect(msg, direction, ts, index)
            elif op in EVENT_OPCODES:
                self._event(msg, direction, ts, index)
            elif op == NOOP:
                self.events["noop"] += 1
                if self.producer is None and direction:
                    self.producer = direction
        elif op in EVENT_OPCODES:
            self._answer(msg, ts, index)

    def gap(self) -> None:
        """Bytes were lost: answers and events may have gone with them."""
        self.lossy = True

    def ack_flag_went_wrong(self) -> None:
        """An event asked for an ACK the connection did not agree to, or did not ask for one
        it must (the state lasts until :attr:`ack_flag_wrong` says it ended)."""
        self.ack_flag_wrong = True

    def sent_unwanted_value(self) -> None:
        """A mutation carried a value under TAP_FLAG_NO_VALUE or after keys-only was granted."""
        self.unwanted_values = True

    def _connect(self, msg: Message, direction, ts, index) -> None:
        f = msg.fields
        vbs = f.get("vbuckets")
        cps = f.get("checkpoints")
        self.connect = Connect(msg.values.get("flags", 0), f.get("key"), index, ts, f.get("backfill_time"),
                               tuple(vbs) if isinstance(vbs, list) else None,
                               {c["vbucket"]: c["checkpoint_id"] for c in cps} if isinstance(cps, list) else {},
                               f.get("closed_checkpoint_only"))
        self.connects += 1
        self.ack_flag_wrong = False  # negotiated again
        if direction:
            self.producer = {"c2s": "s2c", "s2c": "c2s"}.get(direction)

    def _event(self, msg: Message, direction, ts, index) -> None:
        op, v = msg.opcode, msg.values
        if self.producer is None and direction:
            self.producer = direction
        vb = self.vb(msg.vbucket)
        kind = KINDS[op]
        self.events[kind] += 1
        vb.events[kind] += 1
        vb.bytes += msg.size
        flags = v.get("tap_flags", 0)
        if flags & FLAG_NO_VALUE:
            self.keys_only_granted = True
        if op == MUTATION and self.unwanted_values and not value_length(msg):
            self.unwanted_values = False
        if op in ACKED_EVENTS and flags & FLAG_ACK and self.wants(SUPPORT_ACK):
            self.ack_flag_wrong = False
        if self.error is not None:
            self.error.events_after += 1
            if self.error.first_after is None:
                self.error.first_after = index
        ident = event_ident(msg)
        if self.resend_due.get(ident):
            self.resend_due[ident] -= 1
            if not self.resend_due[ident]:
                del self.resend_due[ident]
        seqno = msg.opaque
        if self.first_seqno is None:
            self.first_seqno = seqno
        self.last_seqno = seqno
        ack = bool(flags & FLAG_ACK)
        if ack:
            self.acks_requested += 1
        self.log.pop(seqno, None)
        self.log[seqno] = Sent(seqno, op, msg.vbucket or 0, index, ts, ack, ident)
        if len(self.log) > MAX_LOG:
            self.log.popitem(last=False)
            self.log_dropped += 1
        if op == OPAQUE:
            self._opaque(vb, v.get("opaque_code"), ts, index)
        elif op == VBUCKET_SET and "vbucket_state" in v:
            vb.states.append(v["vbucket_state"])
            del vb.states[:-8]
            vb.phase = VBUCKET_STATES.get(v["vbucket_state"], "unknown")
        elif op == CHECKPOINT_START or op == CHECKPOINT_END:
            cid = msg.fields.get("checkpoint_id")
            vb.checkpoint_frames += 1
            if op == CHECKPOINT_START:
                vb.checkpoints += 1
                vb.checkpoint_open = vb.checkpoint_last = cid if isinstance(cid, int) else None
            else:
                vb.checkpoint_open = None

    def _opaque(self, vb: Vbucket, code: int | None, ts, index) -> None:
        if code == INITIAL_VBUCKET_STREAM:
            vb.phase = "backfill"
            vb.backfills += 1
            vb.backfill_start, vb.backfill_index = ts, index
        elif code == CLOSE_BACKFILL:
            if vb.phase == "backfill" and ts is not None and vb.backfill_start is not None:
                vb.backfill_seconds += ts - vb.backfill_start
            vb.phase = "stream"
            vb.backfill_start = None
        elif code == ENABLE_CHECKPOINT_SYNC:
            self.checkpoint_sync = True
        elif code == ENABLE_AUTO_NACK:
            self.auto_nack = True
        elif code == CLOSE_TAP_STREAM:
            self.closing = True
            for each in self.vbuckets.values():
                if each.phase in ("stream", "backfill"):
                    each.phase = "takeover"

    def _answer(self, msg: Message, ts, index) -> None:
        sent = self.answered(msg)
        if sent is None:
            return
        self.acks += 1
        vb = self.vb(sent.vbucket)
        status = msg.status or 0
        if status == 0:
            vb.acks += 1
            self._cover(msg.opaque, ts, inclusive=True)
            return
        if status in NACK_STATUSES:
            self.nacks += 1
            vb.nacks += 1
            self._cover(msg.opaque, ts, inclusive=False)
            # the NACKed event and all after it go again (with new sequence numbers)
            if len(self.resend_due) < MAX_LOG:  # bounded: NACKs that are never followed stop adding
                self.resend_due.update(s.ident for s in self.log.values())
            self.nack_index = index
            self.log.clear()
            return
        self.errors += 1
        if self.error is None:
            self.error = Answer(status, index, sent.name, sent.seqno)
        self._cover(msg.opaque, ts, inclusive=True)

    def _cover(self, seqno: int, ts, inclusive: bool) -> None:
        """An answer to ``seqno`` covers every event sent up to it (spec §8: cumulative)."""
        log = self.log
        while log:
            first = next(iter(log.values()))
            if first.seqno == seqno and not inclusive:
                return
            log.popitem(last=False)
            if first.ack:
                self.covered += 1
                if ts is not None and first.ts is not None:
                    self.waits.add(ts - first.ts, first)
            if first.seqno == seqno:
                return

    # -- statistics ------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """What ``stats`` prints of this connection, JSON-ready."""
        c = self.connect
        w = self.waits
        return {
            "name": None if c is None else c.name,
            "connect_flags": None if c is None else c.flag_names,
            "frames": self.frames,
            "bytes": self.bytes,
            "events": dict(sorted(self.events.items())),
            "seqno": {"first": self.first_seqno, "last": self.last_seqno},
            "acks": {
                "requested": self.acks_requested,
                "answered": self.acks,
                "covered": self.covered,
                "unanswered": len(self.unanswered()),
                "round_trip": {"count": w.count, "mean": _round(w.total / w.count if w.count else None),
                               "max": _round(w.longest)},
                "longest_wait": None if w.longest is None else {
                    "seconds": _round(w.longest), "frame": w.longest_index, "vbucket": w.longest_vbucket},
            },
            "nacks": self.nacks,
            "errors": self.errors,
            "checkpoints": sum(v.checkpoints for v in self.vbuckets.values()),
            "vbuckets": {str(vb): _vb_stats(v, self.last_ts) for vb, v in sorted(self.vbuckets.items())},
        }


def event_ident(msg: Message) -> int:
    """What identifies an event apart from its sequence number: a resend repeats it."""
    v = msg.values
    return hash((msg.opcode, msg.vbucket, msg.key, v.get("opaque_code"), v.get("vbucket_state"),
                 msg.value if msg.opcode in (CHECKPOINT_START, CHECKPOINT_END) else None))


def _vb_stats(v: Vbucket, last_ts: float | None) -> dict[str, Any]:
    seconds = v.backfill_seconds
    if v.phase == "backfill" and v.backfill_start is not None and last_ts is not None:
        seconds += last_ts - v.backfill_start  # still under way when the capture ends
    return {
        "phase": v.phase,
        "state": VBUCKET_STATES.get(v.state) if v.state is not None else None,
        "states": [VBUCKET_STATES.get(s, str(s)) for s in v.states],
        "events": dict(sorted(v.events.items())),
        "backfill": {"count": v.backfills, "seconds": _round(seconds) if v.backfills else None,
                     "open": v.phase == "backfill"},
        "checkpoints": {"count": v.checkpoints, "last": v.checkpoint_last, "open": v.checkpoint_open},
        "acks": v.acks,
        "nacks": v.nacks,
        "bytes": v.bytes,
    }


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 6)

