"""TAP rules (spec/tap.md): small registered judgements over a connection's TAP session.

Zeek's model: the session (``sessions.tap``) applies each message and never judges; each
rule here reads the session as it stood *before* the message and says what is wrong,
nothing else. A rule registers for the kinds of message it looks at (``connect``,
``event``, ``noop``, ``ack``) and, where it helps, their opcodes; ``once`` rules are said
at most once a connection. A rule of a state that lasts names what its finding ``begins``
in the session, which holds that episode and ends it; its condition reads that it lasts,
so it is said again only once the state ended and began again. :data:`ENDING` rules run
when the connection ends.
:class:`TapChecker` runs them for one connection: the conversation feeds it the TAP
frames (and the NOOPs and answers on a TAP connection) and asks it to finish.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

from ....findings import Finding
from ..messages.frame import Message
from ..messages.names import REQUEST_MAGICS, VBUCKET_STATES, status_name
from ..sessions.tap import (
    ACKED_EVENTS, ACTIVE, CHECKPOINT, CHECKPOINT_END, CHECKPOINT_START, CONNECT, EVENT_OPCODES, FIX_BYTEORDER,
    FLAG_ACK, FLAG_NETWORK_BYTE_ORDER, FLAG_NO_VALUE, KEYS_ONLY, KNOWN_CONNECT_FLAGS, LIST_VBUCKETS, MUTATION, NOOP,
    OPAQUE, PENDING, SUPPORT_ACK, TAKEOVER, VBUCKET_SET, TapSession, value_length,
)
from .book import TAP_RULES

#: what a rule yields: its id, the message, and context (vbucket, frame, severity)
Said = tuple[str, str, dict]
Judge = Callable[[TapSession, Message, "str | None"], Iterator[Said]]
Ending = Callable[[TapSession], Iterator[Said]]
Begins = Callable[[TapSession], None]
RULES: list[tuple[Judge, frozenset[str], frozenset[int] | None, bool, "Begins | None"]] = []
ENDING: list[Ending] = []


def rule(*kinds: str, opcodes: Iterable[int] | None = None, once: bool = False, begins: Begins | None = None):
    """Register a rule for messages of ``kinds`` (and ``opcodes``, when given); ``begins``:
    what its finding tells the session, for a rule of a state that lasts."""

    def register(fn: Judge) -> Judge:
        RULES.append((fn, frozenset(kinds), None if opcodes is None else frozenset(opcodes), once, begins))
        return fn

    return register


def ending(fn: Ending) -> Ending:
    """Register a rule that judges the connection once it has ended."""
    ENDING.append(fn)
    return fn


def kind_of(msg: Message) -> str | None:
    """``connect``, ``event`` or ``noop`` (requests), ``ack`` (answers to events), else None."""
    op = msg.opcode
    if msg.magic in REQUEST_MAGICS:
        return "connect" if op == CONNECT else "event" if op in EVENT_OPCODES else "noop" if op == NOOP else None
    return "ack" if op in EVENT_OPCODES else None


def _vb(msg: Message) -> dict:
    return {"vbucket": msg.vbucket}


# -- connect (spec §9) -------------------------------------------------------------------


@rule("event", "noop", once=True)
def _connect_missing(s: TapSession, msg: Message, direction) -> Iterator[Said]:
    if s.seen_from_start and s.connect is None:
        yield "tap-connect-missing", f"{msg.name} on a connection seen from its start whose TAP_CONNECT was not sent", _vb(msg)


@rule("connect")
def _connect_again(s: TapSession, msg: Message, direction) -> Iterator[Said]:
    if s.connect is not None:
        yield "tap-connect-missing", f"a second TAP_CONNECT (the first at frame {s.connect.index})", {}


@rule("connect")
def _connect_flags(s: TapSession, msg: Message, direction) -> Iterator[Said]:
    flags = msg.values.get("flags", 0)
    unknown = flags & ~KNOWN_CONNECT_FLAGS
    if unknown:
        yield "tap-connect-flags", f"TAP_CONNECT flags 0x{flags:x}: bits 0x{unknown:x} are defined by no server", {}
    if flags & TAKEOVER and not flags & LIST_VBUCKETS:
        yield "tap-connect-flags", "TakeoverVbuckets without ListVbuckets: no vbuckets named to take over", {}


# -- sequence numbers (spec §3.5) ----------------------------------------------------------


@rule("noop")
def _noop_seqno(s: TapSession, msg: Message, direction) -> Iterator[Said]:
    if msg.opaque != 0:
        yield "tap-seqno", f"NOOP carries opaque 0x{msg.opaque:08x}; a TAP NOOP carries 0", {}


@rule("event")
def _event_seqno(s: TapSession, msg: Message, direction) -> Iterator[Said]:
    want = s.expected_seqno()
    if want is None or s.lossy or msg.opaque == want:
        return
    # without SUPPORT_ACK the producer never advances its counter (requestAck returns first)
    if msg.opaque == s.last_seqno and s.connect is not None and not s.wants(SUPPORT_ACK):
        return
    yield "tap-seqno", f"{msg.name} sequence number {msg.opaque}, expected {want} (previous {s.last_seqno})", _vb(msg)


# -- ACK / NACK (spec §8) ------------------------------------------------------------------


# A state that lasts (the producer's ACK flags disagree with SupportAck; a producer sends
# values on a keys-only stream) is said on its first event, again only once it ended.
@rule("event", begins=TapSession.ack_flag_went_wrong)
def _ack_flag(s: TapSession, msg: Message, direction) -> Iterator[Said]:
    asks = msg.values.get("tap_flags", 0) & FLAG_ACK
    if s.connect is None or s.ack_flag_wrong:
        return
    if not s.wants(SUPPORT_ACK):
        if asks:
            yield "tap-ack-flag", (f"{msg.name} asks for an ACK; the consumer did not set SupportAck (once until a "
                                   "TAP_CONNECT sets it)"), _vb(msg)
    elif not asks and msg.opcode in ACKED_EVENTS:
        yield "tap-ack-flag", (f"{msg.name} without TAP_FLAG_ACK on a SupportAck connection (once until such an "
                               "event asks again)"), _vb(msg)


@rule("ack")
def _ack_unmatched(s: TapSession, msg: Message, direction) -> Iterator[Said]:
    if direction and s.producer and direction == s.producer:
        yield "tap-ack-unmatched", f"{msg.name} answer travels the producer's direction", {}
        return
    if s.answered(msg) is not None or s.lossy or s.log_dropped or not s.known_range(msg.opaque):
        return
    yield "tap-ack-unmatched", (f"{msg.name} answer ({msg.status_name}) opaque {msg.opaque}: no outstanding "
                                "event with that opcode and sequence number"), {}


@ending
def _ack_unanswered(s: TapSession) -> Iterator[Said]:
    due = s.unanswered()
    if not due or s.lossy:
        return
    first = due[0]
    more = f" and {len(due) - 1} later ACK requests" if len(due) > 1 else ""
    yield "tap-ack-unanswered", (f"{first.name} seqno {first.seqno} (frame {first.index}){more} asked for an ACK "
                                 "that never came"), {"vbucket": first.vbucket, "frame": first.index}


@ending
def _nack_not_resent(s: TapSession) -> Iterator[Said]:
    left = sum(s.resend_due.values())
    if left and not s.lossy:
        yield "tap-nack-not-resent", (f"{left} events a NACK (frame {s.nack_index}) asked for again were not "
                                      "sent again"), {"frame": s.nack_index}


@rule("event", once=True)
def _error_not_disconnected(s: TapSession, msg: Message, direction) -> Iterator[Said]:
    e = s.error
    if e is not None:
        yield "tap-error-not-disconnected", (f"{msg.name} after the consumer answered {e.event} seqno {e.seqno} with "
                                             f"{status_name(e.status)} (frame {e.index}): the producer must disconnect"), _vb(msg)


# -- takeover (spec §7) --------------------------------------------------------------------


@rule("event", opcodes=(VBUCKET_SET,))
def _takeover_state(s: TapSession, msg: Message, direction) -> Iterator[Said]:
    new = msg.values.get("vbucket_state")
    if not s.wants(TAKEOVER) or new is None:
        return
    known = s.vbuckets.get(msg.vbucket or 0)
    last = None if known is None else known.state
    name = VBUCKET_STATES.get(new, str(new))
    if new not in (PENDING, ACTIVE):
        yield "tap-takeover-state", f"vb {msg.vbucket} set {name} on a takeover stream (pending, then active)", _vb(msg)
    elif new == ACTIVE and last != PENDING:
        yield "tap-takeover-state", f"vb {msg.vbucket} set active without pending first", _vb(msg)
    elif new == PENDING and last == ACTIVE:
        yield "tap-takeover-state", f"vb {msg.vbucket} set pending after active", _vb(msg)


@ending
def _takeover_incomplete(s: TapSession) -> Iterator[Said]:
    if not s.wants(TAKEOVER) or s.lossy or not (s.closing or any(v.states for v in s.vbuckets.values())):
        return
    for vb in s.takeover_vbuckets():
        v = s.vbuckets.get(vb)
        if v is None or v.state != ACTIVE:
            seen = "no state" if v is None or not v.states else VBUCKET_STATES.get(v.state, str(v.state))
            yield "tap-takeover-incomplete", f"vb {vb} of the takeover stream ended at {seen}, not active", {"vbucket": vb}


# -- checkpoints (spec §5.5) ---------------------------------------------------------------


@rule("event", opcodes=(CHECKPOINT_START, CHECKPOINT_END))
def _checkpoint_order(s: TapSession, msg: Message, direction) -> Iterator[Said]:
    cid = msg.fields.get("checkpoint_id")
    v = s.vbuckets.get(msg.vbucket or 0)
    if not isinstance(cid, int) or v is None:
        return
    if msg.opcode == CHECKPOINT_START:
        if v.checkpoint_open is not None:
            yield "tap-checkpoint-order", f"vb {v.vbucket} START of checkpoint {cid} while {v.checkpoint_open} is open", _vb(msg)
    elif v.checkpoint_open is not None and cid != v.checkpoint_open:
        yield "tap-checkpoint-order", f"vb {v.vbucket} END of checkpoint {cid} while {v.checkpoint_open} is open", _vb(msg)
    elif v.checkpoint_open is None and v.checkpoint_frames:
        yield "tap-checkpoint-order", f"vb {v.vbucket} END of checkpoint {cid} without its START", _vb(msg)


@rule("event", opcodes=(CHECKPOINT_START,))
def _checkpoint_regression(s: TapSession, msg: Message, direction) -> Iterator[Said]:
    cid = msg.fields.get("checkpoint_id")
    v = s.vbuckets.get(msg.vbucket or 0)
    if isinstance(cid, int) and v is not None and v.checkpoint_last is not None and cid <= v.checkpoint_last:
        yield "tap-checkpoint-regression", f"vb {v.vbucket} checkpoint {cid} after {v.checkpoint_last}", _vb(msg)


@rule("event", opcodes=(CHECKPOINT_START, CHECKPOINT_END), once=True)
def _checkpoint_unrequested(s: TapSession, msg: Message, direction) -> Iterator[Said]:
    if s.connect is not None and not s.wants(CHECKPOINT):
        yield "tap-checkpoint-unrequested", f"{msg.name} on a connection whose TAP_CONNECT did not set Checkpoint", _vb(msg)


# -- event bodies (spec §3–§5) ---------------------------------------------------------------


_UNTIL_KEYS_ONLY = " (once until a mutation comes without a value)"


@rule("event", opcodes=(MUTATION,), begins=TapSession.sent_unwanted_value)
def _keys_only_value(s: TapSession, msg: Message, direction) -> Iterator[Said]:
    n = value_length(msg)
    if not n or s.unwanted_values:
        return
    if msg.values.get("tap_flags", 0) & FLAG_NO_VALUE:
        yield "tap-keys-only-value", (f"TAP_FLAG_NO_VALUE set, yet the mutation carries {n} value bytes"
                                      f"{_UNTIL_KEYS_ONLY}"), _vb(msg)
    elif s.wants(KEYS_ONLY) and s.keys_only_granted:
        yield "tap-keys-only-value", (f"{n} value bytes without TAP_FLAG_NO_VALUE after keys-only was granted"
                                      f"{_UNTIL_KEYS_ONLY}"), _vb(msg)


@rule("event")
def _ttl_zero(s: TapSession, msg: Message, direction) -> Iterator[Said]:
    if msg.values.get("ttl") == 0:
        yield "tap-ttl-zero", f"{msg.name} TTL 0: the receiving daemon rejects it (EINVAL)", _vb(msg)


@rule("event", opcodes=(OPAQUE, VBUCKET_SET))
def _engine_specific(s: TapSession, msg: Message, direction) -> Iterator[Said]:
    n = msg.values.get("engine_specific_length")
    if n is not None and n != 4:
        consequence = "the consumer disconnects" if msg.opcode == VBUCKET_SET else "the consumer ignores it"
        yield "tap-engine-specific", f"{msg.name} engine-specific length {n}, not 4: {consequence}", {
            **_vb(msg), "severity": None if msg.opcode == VBUCKET_SET else "warning"}


@rule("event", opcodes=(MUTATION,))
def _item_flags_byte_order(s: TapSession, msg: Message, direction) -> Iterator[Said]:
    v = msg.values
    flags = v.get("item_flags")
    if not flags or v.get("tap_flags", 0) & FLAG_NETWORK_BYTE_ORDER:
        return
    host = int.from_bytes(flags.to_bytes(4, "big"), "little")
    asked = s.wants(FIX_BYTEORDER)
    yield "tap-item-flags-byte-order", (
        f"item flags without TAP_FLAG_NETWORK_BYTE_ORDER: 0x{flags:08x} in network order, 0x{host:08x} in host "
        "(little-endian) order" + ("; the consumer asked for network order (FixFlagByteorder)" if asked else "")), {
        **_vb(msg), "severity": "warning" if asked else None}


# -- the checker ---------------------------------------------------------------------------


class TapChecker:
    """The TAP rules for one connection, over its :class:`TapSession`."""

    __slots__ = ("session", "said")

    def __init__(self, seen_from_start: bool = False) -> None:
        self.session = TapSession(seen_from_start)
        self.said: set[str] = set()  # ``once`` rules already said on this connection

    def feed(self, msg: Message, direction: str | None = None, ts: float | None = None,
             index: int | None = None) -> list[Finding]:
        """Judge ``msg`` against the session, then apply it; the findings also land on it."""
        out: list[Finding] = []
        if msg.truncated or msg.spec is None:
            return out
        kind = kind_of(msg)
        if kind is not None:
            s = self.session
            for fn, kinds, opcodes, once, begins in RULES:
                if kind not in kinds or (opcodes is not None and msg.opcode not in opcodes):
                    continue
                before = len(out)
                for rule_id, text, ctx in fn(s, msg, direction):
                    if once:
                        if rule_id in self.said:
                            continue
                        self.said.add(rule_id)
                    out.append(_finding(rule_id, text, msg.offset, ctx))
                if begins is not None and len(out) > before:
                    begins(s)
        self.session.apply(msg, direction, ts, index)
        if out:
            msg.findings.extend(out)
        return out

    def gap(self) -> None:
        self.session.gap()

    def finish(self) -> list[Finding]:
        """What only the end of the connection shows (unanswered ACKs, resends, takeover)."""
        return [_finding(rule_id, text, None, ctx) for fn in ENDING for rule_id, text, ctx in fn(self.session)]


def _finding(rule_id: str, text: str, offset: int | None, ctx: dict) -> Finding:
    ctx = dict(ctx)
    severity = ctx.pop("severity", None)
    return TAP_RULES[rule_id].finding(text, offset, severity, **ctx)


def once_per_connection(findings: list[Finding], rule_id: str, said: bool) -> tuple[list[Finding], bool]:
    """``findings`` without ``rule_id`` once it was ``said`` on the connection; and whether it
    has been said now. The first one says it is said once."""
    if not any(f.rule == rule_id for f in findings):
        return findings, said
    if said:
        return [f for f in findings if f.rule != rule_id], True
    return [f.replace(message=f.message + " (said once per connection)") if f.rule == rule_id else f
            for f in findings], True
