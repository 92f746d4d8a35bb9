"""Stream rules: judge each DCP message against its connection's state; the state itself
is changed by the session (``sessions/streams.py``), never here.

The rules that a message of the fast path's opcodes can meet are declared
(``rules/checks.py``): a condition over named facts (``rules/facts.py``), its text and
the point of this walk where it is judged. The walk (which stream, which snapshot, which
point applies) is ``ConnectionValidator``'s; the few rules over what no fast path takes
(stream requests, OSO, system events, acks, answers) are judged here in code.
"""

from __future__ import annotations


from ....findings import Finding
from ..messages.dcp import OSO_END, OSO_START, SNAPSHOT_DISK, SNAPSHOT_HISTORY, SNAPSHOT_MAY_DUPLICATE, SNAPSHOT_VERSION_22
from ..messages.frame import Message
from ..messages.names import REQUEST_MAGICS, SUCCESS_LIKE_STATUS
from ..messages.opcodes import OP, ST
from ..messages.registry import CLIENT_SPECS
from ..sessions.negotiation import Negotiation
from ..sessions.streams import FLOW_CONTROLLED, ITEM_OPCODES, SEQNO_OPCODES, STREAM_OPCODES, DcpState, Stream, key_digest
from . import facts as F
from ....rules.checks import declare, judges
from .facts import INCLUDE_DELETE_TIMES, deletion_extras_for as deletion_extras
from .book import STATUS_CLASSES, STREAM_RULES

KEYED = frozenset({OP.DCP_MUTATION, OP.DCP_DELETION, OP.DCP_EXPIRATION, OP.DCP_PREPARE})
_NO_SID = frozenset({OP.DCP_SET_VBUCKET_STATE, OP.DCP_PREPARE, OP.DCP_COMMIT, OP.DCP_ABORT})  # sent without a stream-id frame (sync writes, takeover)
_DCP_REQUESTS = frozenset(op for op, spec in CLIENT_SPECS.items() if spec.family == "dcp") - {OP.DCP_OPEN}
_SYNC_WRITES = (OP.DCP_PREPARE, OP.DCP_COMMIT, OP.DCP_ABORT)
_COLLECTIONS = (OP.DCP_SEQNO_ADVANCED, OP.DCP_OSO_SNAPSHOT, OP.DCP_SYSTEM_EVENT)


_ONCE = " (once until negotiated)"


def _sid(c) -> str:
    return f" sid {c.msg.stream_id}" if c.msg.stream_id is not None else ""


# -- the declared checks, in the order they are judged ----------------------------------------

declare("dcp-open-missing", "stream.open", ~F.dcp_open_seen & ~F.producer_known & F.seen_from_start,
        lambda c: f"{c.msg.name} on a connection whose DCP_OPEN was not seen", on=_DCP_REQUESTS)
# A state that lasts (no open stream, a stream past its end, stream ids or a negotiation
# missing, items before any marker) is reported on its first message: an episode, that the
# session holds (rules/facts.py's episodes) and ends; again only once it ended and began again.
_no_stream = ~F.has_stream | F.stream_waiting
declare("no-stream", "stream.found", _no_stream & ~F.strayed,
        lambda c: f"{c.msg.name} for vb {c.msg.vbucket}{_sid(c)} opaque 0x{c.msg.opaque:08x}: no open stream "
        "(once until one opens)", on=STREAM_OPCODES)
declare("after-stream-end", "stream.ended", F.stream_ended & ~F.late,
        lambda c: f"{c.msg.name} after STREAM_END of {c.stream.label()} (frame {c.stream.end_index}; once a stream)", on=STREAM_OPCODES)
declare("stream-id-missing", "stream.live", F.stream_ids & ~F.has_sid & ~F.unlabelled,
        lambda c: f"{c.msg.name} without a stream-id frame (once a stream)", on=STREAM_OPCODES - _NO_SID,
        begins=lambda c: c.st.unlabelled(c.stream))
# only a connection seen from its start shows what was (not) negotiated; each said once
# until the connection negotiates it
declare("negotiation-missing", "stream.live", F.seen_from_start & F.collections_refused & ~F.collections_unmet,
        lambda c: f"{c.msg.name} on a connection that did not negotiate collections{_ONCE}", on=_COLLECTIONS,
        begins=lambda c: c.neg.went_without("collections"))
declare("negotiation-missing", "stream.live", F.seen_from_start & ~F.sync_writes & ~F.sync_writes_unmet,
        lambda c: f"{c.msg.name} without DCP_CONTROL enable_sync_writes=true{_ONCE}", on=_SYNC_WRITES,
        begins=lambda c: c.neg.went_without("enable_sync_writes"))
declare("negotiation-missing", "stream.live", F.seen_from_start & ~F.expiry_opcode & ~F.expiry_unmet,
        lambda c: f"{c.msg.name} without DCP_CONTROL enable_expiry_opcode=true{_ONCE}", on=(OP.DCP_EXPIRATION,),
        begins=lambda c: c.neg.went_without("enable_expiry_opcode"))
declare("negotiation-missing", "stream.live",
        F.seen_from_start & F.marker_version.eq(SNAPSHOT_VERSION_22) & ~F.v22_negotiated & ~F.v22_unmet,
        lambda c: f"v2.2 snapshot marker without DCP_CONTROL max_marker_version=2.2{_ONCE}", on=(OP.DCP_SNAPSHOT_MARKER,),
        begins=lambda c: c.neg.went_without("max_marker_version"))

# a snapshot marker (judged with the snapshot it follows, if any: snap_*)
_MARKER = (OP.DCP_SNAPSHOT_MARKER,)
_history_repeat = (F.snapshot_type.has(SNAPSHOT_HISTORY) & F.snapshot_type.has(SNAPSHOT_DISK)
                   & F.snap_type.has(SNAPSHOT_DISK) & ~F.snap_type.has(SNAPSHOT_HISTORY) & F.marker_end.eq(F.snap_end))
_follows = F.has_snapshot
declare("oso-unbalanced", "stream.marker", F.in_oso, lambda c: "snapshot marker inside an OSO snapshot", on=_MARKER)
declare("first-marker-start", "stream.marker", ~_follows & (F.marker_start < F.first_floor) & ~F.adopted,
        lambda c: f"first snapshot starts at {c.v['start_seqno']}, below the requested snapshot start "
        f"{F.first_floor.get(c)}", on=_MARKER)
declare("marker-end-regression", "stream.marker", _follows & (F.marker_end <= F.snap_end) & ~_history_repeat,
        lambda c: f"snapshot end {c.v['end_seqno']} <= previous end {c.snap.end}", on=_MARKER)
declare("marker-overlap", "stream.marker",
        _follows & ((F.marker_start < F.snap_start) | ((F.marker_start <= F.snap_end) & ~_history_repeat)),
        lambda c: f"snapshot {c.v['start_seqno']}..{c.v['end_seqno']} starts before previous snapshot "
        f"{c.snap.start}..{c.snap.end} ended", on=_MARKER)
# without collections a snapshot may end on an item this client never sees (R7): info
declare("marker-inside-snapshot", "stream.marker",
        _follows & ~F.snap_complete & (F.last_seqno < F.snap_end) & ~_history_repeat,
        lambda c: f"new marker while snapshot {c.snap.start}..{c.snap.end} only reached {c.stream.last_seqno}",
        on=_MARKER, severity=lambda c: None if c.neg.collections else "info")


def _overran(c) -> None:
    """beyond-end-seqno is a state too (the producer goes on past the requested end): once a
    stream, on its first marker or item."""
    c.st.overran(c.stream)


declare("beyond-end-seqno", "stream.marker", _follows & F.end_reached & ~F.overran,
        lambda c: f"new snapshot {c.v['start_seqno']}..{c.v['end_seqno']} after end seqno {c.stream.end_seqno} "
        "was reached (once a stream)", on=_MARKER, begins=_overran)
declare("marker-end-regression", "stream.marker", F.marker_start > F.marker_end,
        lambda c: f"snapshot start {c.v['start_seqno']} > end {c.v['end_seqno']}", on=_MARKER)
declare("mvs-above-end", "stream.marker", F.has_mvs & (F.mvs > F.marker_end),
        lambda c: f"max visible seqno {c.v['max_visible_seqno']} > snapshot end {c.v['end_seqno']}", on=_MARKER)
declare("mvs-above-end", "stream.marker", F.has_hps & (F.hps > F.marker_end) & F.snapshot_type.has(SNAPSHOT_DISK),
        lambda c: f"high prepared seqno {c.v['high_prepared_seqno']} > snapshot end {c.v['end_seqno']}", on=_MARKER)
declare("hcs-without-disk", "stream.marker",
        ~F.snapshot_type.has(SNAPSHOT_DISK) & ((F.has_hcs & F.hcs.ne(0)) | (F.has_hps & F.hps.ne(0))),
        lambda c: f"HCS {c.v.get('high_completed_seqno')} / HPS {c.v.get('high_prepared_seqno')} in a snapshot "
        "without the Disk flag (not meaningful)", on=_MARKER)

declare("deletion-version", "stream.deletion", F.open_flags_known & F.extras_length.ne(F.deletion_extras),
        lambda c: f"deletion extras {c.msg.extras_length} but DCP_OPEN "
        f"{'set' if c.neg.dcp_open_flags & INCLUDE_DELETE_TIMES else 'did not set'} IncludeDeleteTimes "
        f"(expect {deletion_extras(c.neg.dcp_open_flags)})", on=(OP.DCP_DELETION,))

# a message with a seqno: OSO items against the seqno before OSO, the others in order
_SEQNO = tuple(SEQNO_OPCODES)
declare("oso-below-start", "stream.seqno", F.in_oso & (F.seqno <= F.oso_base),
        lambda c: f"{c.msg.name} seqno {c.seqno} <= {c.stream.oso_base} (last before OSO)", on=_SEQNO)
declare("seqno-regression", "stream.seqno",
        (F.seqno <= F.last_seqno) & ~F.in_oso & ~(F.adopted & F.last_seqno.eq(0)),
        lambda c: f"{c.msg.name} seqno {c.seqno} <= previous {c.stream.last_seqno} on {c.stream.label()}", on=_SEQNO)
_in_snapshot = (F.seqno >= F.snap_start) & (F.seqno <= F.snap_end)
declare("item-before-marker", "stream.seqno", ~F.has_snapshot & ~F.in_oso & ~F.adopted & ~F.unmarked,
        lambda c: f"{c.msg.name} seqno {c.seqno} before any snapshot marker (once a stream)", on=ITEM_OPCODES,
        begins=lambda c: c.st.unmarked(c.stream))
# a state too (items go on past a snapshot whose next marker is missing): once a snapshot
declare("seqno-outside-snapshot", "stream.seqno", F.has_snapshot & ~_in_snapshot & ~F.in_oso & ~F.outside,
        lambda c: f"{c.msg.name} seqno {c.seqno} outside snapshot {c.snap.start}..{c.snap.end} "
        f"(marker frame {c.snap.index}; once a snapshot)", on=ITEM_OPCODES,
        begins=lambda c: c.st.outside(c.snap))
declare("beyond-end-seqno", "stream.seqno",
        F.end_reached & F.has_snapshot & F.snap_complete & _in_snapshot & ~F.in_oso & ~F.overran,
        lambda c: f"{c.msg.name} seqno {c.seqno} after the snapshot holding end seqno {c.stream.end_seqno} "
        "(once a stream)", on=ITEM_OPCODES, begins=_overran)
# prepares are indexed apart; keys are kept as digests, up to sessions.streams.MAX_SNAPSHOT_KEYS a snapshot
declare("duplicate-key", "stream.seqno",
        F.has_snapshot & F.key_seen & ~F.in_oso & ~F.snap_type.has(SNAPSHOT_MAY_DUPLICATE | SNAPSHOT_HISTORY),
        lambda c: f"key {c.msg.fields.get('key', '')!r} repeats in snapshot {c.snap.start}..{c.snap.end}", on=KEYED)

# a state, reported once an episode: when the unacknowledged bytes first reach the buffer,
# again only after an acknowledgement brought them below it
declare("buffer-overrun", "stream.flow", F.buffer_size.ne(0) & (F.unacked >= F.buffer_size) & ~F.overrun,
        lambda c: f"{c.msg.name} sent with {c.st.unacked} unacknowledged bytes >= buffer {c.neg.buffer_size}",
        on=FLOW_CONTROLLED - {OP.DCP_NOOP})


#: the walk's own questions, by the facts the checks read
_NO_STREAM = _no_stream.python(False)
_ENDED = F.stream_ended.get


class Judging:
    """What the declared checks read of one message: the message and the state it meets."""

    __slots__ = ("msg", "v", "stream", "snap", "st", "neg", "validator", "seqno", "digest")

    def __init__(self, validator: "ConnectionValidator") -> None:
        self.validator, self.st, self.neg = validator, validator.state, validator.negotiation
        self.msg = self.v = self.stream = self.snap = self.seqno = self.digest = None

    def of_stream(self, stream: Stream) -> "Judging":
        """This context aimed at a stream and its snapshot, no message (what a fast path
        reads the connection facts from)."""
        self.stream, self.snap = stream, stream.snapshot
        return self


class ConnectionValidator:
    """Per-connection stream validator; ``feed`` every decoded message in order."""

    __slots__ = ("negotiation", "state", "frames", "seen_from_start", "_emit", "judging", "tap")

    def __init__(self, negotiation: Negotiation | None = None, seen_from_start: bool = False) -> None:
        self.negotiation = negotiation or Negotiation()
        self.state = DcpState()
        self.frames = 0
        # Only a connection seen from its first byte can prove a DCP_OPEN is missing.
        self.seen_from_start = seen_from_start
        self._emit = _Emitter([], None)  # re-aimed at each message by feed
        #: the context the declared checks read (re-aimed at each message; a fast path
        #: aims it at a stream between messages)
        self.judging = Judging(self)
        #: the connection's TAP checker (rules.tap), made by the conversation on its first TAP
        #: frame; it ends and loses bytes with the connection (finish, gap)
        self.tap = None

    # -- entry points ------------------------------------------------------------------

    def feed(self, msg: Message, direction: str | None = None, ts: float | None = None,
             index: int | None = None) -> list[Finding]:
        self.frames += 1
        if index is None:
            index = self.frames
        out: list[Finding] = []
        if msg.truncated or msg.spec is None:
            return out
        emit = self._emit
        emit.out, emit.msg = out, msg
        if msg.magic in REQUEST_MAGICS:
            c = self.judging
            c.msg, c.v, c.stream, c.snap = msg, msg.values, None, None
            self._request(msg, direction, ts, index, emit, c)
            c.msg = c.v = c.stream = c.snap = None  # the message is not kept past its judging
        else:
            self._response(msg, direction, index, emit)
        emit.out = emit.msg = None
        if out:
            msg.findings.extend(out)
        return out

    def gap(self) -> None:
        """Bytes of this connection were lost: replies may have gone with them."""
        self.state.lossy = True
        if self.tap is not None:
            self.tap.gap()

    def finish(self) -> list[Finding]:
        """What can only be said at the end: unanswered acks and noops."""
        out: list[Finding] = []
        st = self.state
        if st.lossy:  # the answers may be in the lost bytes
            st.acks_due.clear()
            st.noops.clear()
        for stream, snap in st.acks_due:
            if snap.complete and not snap.acked:
                out.append(STREAM_RULES["ack-unanswered"].finding(
                    f"{stream.label()}: snapshot {snap.start}..{snap.end} (marker frame {snap.index}) "
                    "was never acknowledged", vbucket=stream.vbucket, stream_id=stream.stream_id, frame=snap.index))
        st.acks_due.clear()
        for pending in st.noops.values():
            out.append(STREAM_RULES["noop-unanswered"].finding(
                f"DCP_NOOP opaque 0x{pending.msg.opaque:08x} (frame {pending.index}) got no reply",
                frame=pending.index))
        st.noops.clear()
        if self.tap is not None:
            out.extend(self.tap.finish())
        return out

    # -- requests ----------------------------------------------------------------------

    def _request(self, msg: Message, direction, ts, index, emit, c: Judging) -> None:
        st, op = self.state, msg.opcode
        J = judges(op)
        if _judge(c, J["stream.open"], emit):
            st.producer_direction = "unknown"  # reported once
        if op in STREAM_OPCODES:  # first: most requests are (none of the opcodes below is)
            self._stream_message(msg, index, ts, emit, c, J)
        elif op == OP.DCP_OPEN:
            if st.dcp_open_seen:
                emit("dcp-open-missing", "a second DCP_OPEN on the same connection")
            st.opened(direction)
        elif op == OP.DCP_STREAM_REQ:
            self._stream_request(msg, index, ts, emit)
        elif op == OP.DCP_BUFFER_ACKNOWLEDGEMENT:
            self._buffer_ack(msg, emit)
        elif op == OP.DCP_NOOP:
            st.noop(msg, index, ts, direction)
        if op in FLOW_CONTROLLED and op != OP.DCP_NOOP:
            _judge(c, J["stream.flow"], emit)
            st.sent(msg, self.negotiation.buffer_size)
        st.remember_request(msg, index, ts, direction)

    def _stream_request(self, msg: Message, index, ts, emit) -> None:
        st, v = self.state, msg.values
        sid = msg.fields.get("stream_id")
        ctx = dict(vbucket=msg.vbucket, stream_id=sid if isinstance(sid, int) else None)
        start, end = v.get("start_seqno", 0), v.get("end_seqno", 0)
        ss, se = v.get("snap_start_seqno", 0), v.get("snap_end_seqno", 0)
        if start > end:
            emit("stream-request-range", f"start seqno {start} > end seqno {end}", **ctx)
        if not ss <= start <= se:
            emit("stream-request-range", f"snap_start {ss} <= start {start} <= snap_end {se} does not hold", **ctx)
        if self.negotiation.stream_ids and not sid:
            emit("stream-id-missing", "enable_stream_id is on but the request has no sid", **ctx)
        key = (msg.vbucket or 0, sid if isinstance(sid, int) else None)
        rollback = st.rollbacks.pop(key, None)
        if rollback is not None and start > rollback:
            emit("rollback-ignored", f"vb {key[0]} was told to roll back to {rollback}, re-requested from {start}", **ctx)
        st.open_request(msg, index, ts)

    def _stream_message(self, msg: Message, index, ts, emit, c: Judging, J) -> None:
        st, op = self.state, msg.opcode
        stream = c.stream = st.stream_for(msg)
        _judge(c, J["stream.found"], emit, _OF_MESSAGE)
        if _NO_STREAM(c):
            st.stray(msg)
            return
        ctx = stream.context
        c.snap = stream.snapshot
        _judge(c, J["stream.ended"], emit, ctx)
        if _ENDED(c):
            st.late(stream)
            return
        _judge(c, J["stream.live"], emit, ctx)
        if op == OP.DCP_SNAPSHOT_MARKER:
            if "start_seqno" in msg.values:
                _judge(c, J["stream.marker"], emit, ctx)
                st.snapshot_marker(stream, msg, index)
        elif op == OP.DCP_OSO_SNAPSHOT:
            self._oso(stream, msg, emit, ctx)
        elif op == OP.DCP_STREAM_END:
            st.end(stream, msg, index, ts)
        elif op == OP.DCP_DELETION:
            _judge(c, J["stream.deletion"], emit, ctx)
        if op == OP.DCP_SYSTEM_EVENT:
            self._system_event(stream, msg, emit, ctx)
        field = SEQNO_OPCODES.get(op)
        if field is not None:
            seqno = c.seqno = msg.values.get(field)
            if seqno is not None:
                c.digest = key_digest(op, msg) if op in KEYED else None
                _judge(c, J["stream.seqno"], emit, ctx)
                st.item(stream, msg, seqno, ts, c.digest)

    def _oso(self, stream: Stream, msg: Message, emit, ctx) -> None:
        flags = msg.values.get("flags", 0)
        if flags == OSO_START and stream.in_oso:
            emit("oso-unbalanced", "OSO start inside an OSO snapshot", **ctx)
        elif flags == OSO_END and not stream.in_oso:
            emit("oso-unbalanced", "OSO end without an OSO start", **ctx)
        self.state.oso(stream, flags)

    def _system_event(self, stream: Stream, msg: Message, emit, ctx) -> None:
        v = msg.values
        uid = v.get("manifest_uid")
        if uid is not None and stream.manifest_uid is not None and uid < stream.manifest_uid:
            emit("manifest-regression", f"manifest uid {uid} < previous {stream.manifest_uid}", **ctx)
        cid = v.get("collection_id")
        if v.get("event") in (0, 1, 5) and cid is not None and 1 <= cid <= 7:
            emit("reserved-collection", f"system event names reserved collection id {cid}", **ctx)
        self.state.system_event(stream, uid)

    def _buffer_ack(self, msg: Message, emit) -> None:
        st = self.state
        n = msg.values.get("buffer_bytes", 0)
        if self.seen_from_start and self.negotiation.buffer_size and st.acked_total + n > st.sent_total:
            emit("buffer-ack-excess", f"acknowledged {st.acked_total + n} bytes in all, only {st.sent_total} were sent")
        st.acked(n, self.negotiation.buffer_size)

    # -- responses ---------------------------------------------------------------------

    def _response(self, msg: Message, direction, index, emit) -> None:
        pending = self.state.answered(msg, direction)
        if pending is not None and (msg.status not in SUCCESS_LIKE_STATUS or msg.status == ST.Rollback):
            self._pair_error(msg, pending, emit)

    def _pair_error(self, msg: Message, pending, emit) -> None:
        req = pending.msg
        what = f"{req.name} vb {req.vbucket}"
        if req.opcode == OP.DCP_STREAM_REQ:
            v = req.values
            what += f" start {v.get('start_seqno')} end {v.get('end_seqno')} snap {v.get('snap_start_seqno')}..{v.get('snap_end_seqno')}"
        elif req.fields.get("key"):
            what += f" key {req.fields['key']!r}"
        text = f"{what} (frame {pending.index}) answered {msg.status_name}"
        if "rollback_seqno" in msg.fields:
            text += f": roll back to {msg.fields['rollback_seqno']}"
        if msg.fields.get("error_context"):
            text += f": {msg.fields['error_context']}"
        msg.findings[:] = [f for f in msg.findings if f.rule != "peer-error"]
        sid = req.fields.get("stream_id") if isinstance(req.fields.get("stream_id"), int) else req.stream_id
        emit("answered-error", text, cls=STATUS_CLASSES.get(msg.status, "PEER_ERROR"), vbucket=req.vbucket,
             stream_id=sid, frame=pending.index, severity="info" if msg.status == ST.Rollback else None)


class _Emitter:
    __slots__ = ("out", "msg")

    def __init__(self, out: list[Finding], msg: Message) -> None:
        self.out, self.msg = out, msg

    def __call__(self, rule: str, message: str, cls: str | None = None, severity: str | None = None, **ctx) -> None:
        f = STREAM_RULES[rule].finding(message, self.msg.offset, severity, **ctx)
        if cls:
            f = f.replace(cls=cls)
        self.out.append(f)

    def declared(self, check, c: Judging, vbucket: int | None, stream_id: int | None) -> None:
        """The finding of a declared check that holds, about that vbucket and stream."""
        self.out.append(STREAM_RULES[check.rule].finding(check.say(c), self.msg.offset,
                                                         check.severity(c) if check.severity else None,
                                                         vbucket, stream_id))


_OF_MESSAGE: dict = {}  # a finding's context: the message's vbucket and stream id


def _judge(c: Judging, judge, emit: "_Emitter", ctx: dict = {}) -> bool:
    """Judge the checks of one point (``judge``: the message's opcode's judge of it,
    checks.judges), reporting in ``ctx`` (the stream's context, or _OF_MESSAGE): whether
    any found something."""
    hit = judge(c)
    if not hit:
        return False
    if ctx is _OF_MESSAGE:
        vbucket, stream_id = c.msg.vbucket, c.msg.stream_id
    else:
        vbucket, stream_id = ctx.get("vbucket"), ctx.get("stream_id")
    for check in hit:
        emit.declared(check, c, vbucket, stream_id)
        if check.begins is not None:
            check.begins(c)
    return True
