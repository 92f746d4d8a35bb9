"""Stream rules: judge each DCP message against its connection's state, then apply it."""

from __future__ import annotations

from dataclasses import replace

from ..findings import Finding
from ..messages.dcp import DELETION_V1, DELETION_V2, OPEN_FLAGS, SNAPSHOT_DISK, SNAPSHOT_HISTORY
from ..messages.frame import Message
from ..messages.names import REQUEST_MAGICS, SUCCESS_LIKE_STATUS
from ..messages.opcodes import OP, ST
from ..sessions.negotiation import Negotiation
from ..sessions.streams import FLOW_CONTROLLED, ITEM_OPCODES, SEQNO_OPCODES, STREAM_OPCODES, DcpState, Stream
from .registry import STATUS_CLASSES, STREAM_RULES
from ..limits import SNAPSHOT_KEYS

INCLUDE_DELETE_TIMES = next(bit for bit, name in OPEN_FLAGS.items() if name == "IncludeDeleteTimes")
#: keys of one snapshot remembered for the duplicate-key rule (read where it is applied,
#: by this rule and the jsonl lane alike)
MAX_SNAPSHOT_KEYS = SNAPSHOT_KEYS.default


def deletion_extras(open_flags: int) -> int:
    """The extras size of a DCP_DELETION on a connection whose DCP_OPEN had ``open_flags``
    (the deletion-version rule's expectation)."""
    return DELETION_V2.size if open_flags & INCLUDE_DELETE_TIMES else DELETION_V1.size
_KEYED = frozenset({OP.DCP_MUTATION, OP.DCP_DELETION, OP.DCP_EXPIRATION, OP.DCP_PREPARE})
_NO_SID = frozenset({OP.DCP_SET_VBUCKET_STATE, OP.DCP_PREPARE, OP.DCP_COMMIT, OP.DCP_ABORT})  # sent without a stream-id frame (sync writes, takeover)
#: Messages that need something negotiated first: (control key, value wanted) or "collections".
_NEEDS = {OP.DCP_PREPARE: ("enable_sync_writes", "true"), OP.DCP_COMMIT: ("enable_sync_writes", "true"),
          OP.DCP_ABORT: ("enable_sync_writes", "true"), OP.DCP_EXPIRATION: ("enable_expiry_opcode", "true"),
          OP.DCP_SEQNO_ADVANCED: "collections", OP.DCP_OSO_SNAPSHOT: "collections", OP.DCP_SYSTEM_EVENT: "collections"}
_NEGOTIATED = frozenset(_NEEDS) | {OP.DCP_SNAPSHOT_MARKER}  # the opcodes _negotiated looks at


class ConnectionValidator:
    """Per-connection stream validator; ``feed`` every decoded message in order."""

    __slots__ = ("negotiation", "state", "frames", "seen_from_start", "_emit", "tap")

    def __init__(self, negotiation: Negotiation | None = None, seen_from_start: bool = False) -> None:
        self.negotiation = negotiation or Negotiation()
        self.state = DcpState()
        self.frames = 0
        # Only a connection seen from its first byte can prove a DCP_OPEN is missing.
        self.seen_from_start = seen_from_start
        self._emit = _Emitter([], None)  # re-aimed at each message by feed
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
            self._request(msg, direction, ts, index, emit)
        else:
            self._response(msg, direction, index, emit)
        emit.out = emit.msg = None  # the message is not kept past its judging
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

    def _request(self, msg: Message, direction, ts, index, emit) -> None:
        st, op = self.state, msg.opcode
        if (not st.dcp_open_seen and st.producer_direction is None and self.seen_from_start
                and msg.spec.family == "dcp" and op != OP.DCP_OPEN):
            st.producer_direction = "unknown"  # report once
            emit("dcp-open-missing", f"{msg.name} on a connection whose DCP_OPEN was not seen")
        if op in STREAM_OPCODES:  # first: most requests are (none of the opcodes below is)
            self._stream_message(msg, index, ts, emit)
        elif op == OP.DCP_OPEN:
            if st.dcp_open_seen:
                emit("dcp-open-missing", "a second DCP_OPEN on the same connection")
            st.dcp_open_seen = True
            st.producer_direction = _other(direction)
        elif op == OP.DCP_STREAM_REQ:
            self._stream_request(msg, index, ts, emit)
        elif op == OP.DCP_BUFFER_ACKNOWLEDGEMENT:
            self._buffer_ack(msg, emit)
        elif op == OP.DCP_NOOP:
            st.noops[msg.opaque] = _pending(msg, index, ts, direction)
        if op in FLOW_CONTROLLED and op != OP.DCP_NOOP:
            self._flow_control(msg, emit)
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

    def _stream_message(self, msg: Message, index, ts, emit) -> None:
        st, op = self.state, msg.opcode
        stream = st.stream_of(msg)
        if stream is None and not st.dcp_open_seen:
            stream = st.adopt(msg)  # joined mid-conversation: follow the stream from here
        if stream is not None and stream.state == "requested" and msg.opaque == stream.opaque:
            st.accept(stream, msg)  # the producer only streams after a Success answer we did not see
        if stream is None or stream.state in ("requested", "rejected"):
            emit("no-stream", vbucket=msg.vbucket, stream_id=msg.stream_id, message= f"{msg.name} for vb {msg.vbucket}"
                 + (f" sid {msg.stream_id}" if msg.stream_id is not None else "")
                 + f" opaque 0x{msg.opaque:08x}: no open stream")
            return
        ctx = stream.context
        if stream.state == "ended":
            emit("after-stream-end", f"{msg.name} after STREAM_END of {stream.label()} (frame {stream.end_index})", **ctx)
            return
        if self.negotiation.stream_ids and msg.stream_id is None and op not in _NO_SID:
            emit("stream-id-missing", f"{msg.name} without a stream-id frame", **ctx)
        if op in _NEGOTIATED:  # not mutations and deletions, most of a stream
            self._negotiated(msg, emit, ctx)
        if op == OP.DCP_SNAPSHOT_MARKER:
            self._marker(stream, msg, index, emit, ctx)
        elif op == OP.DCP_OSO_SNAPSHOT:
            self._oso(stream, msg, emit, ctx)
        elif op == OP.DCP_STREAM_END:
            st.end(stream, msg, index, ts)
        elif op == OP.DCP_DELETION:
            self._deletion_version(msg, emit, ctx)
        if op == OP.DCP_SYSTEM_EVENT:
            self._system_event(stream, msg, emit, ctx)
        field = SEQNO_OPCODES.get(op)
        if field is not None:
            seqno = msg.values.get(field)
            if seqno is not None:
                self._seqno(stream, msg, seqno, index, ts, emit, ctx)

    def _negotiated(self, msg: Message, emit, ctx) -> None:
        """Only a connection seen from its start shows what was (not) negotiated."""
        if not self.seen_from_start:
            return
        need, n = _NEEDS.get(msg.opcode), self.negotiation
        if need == "collections":
            if n.collections_source == "HELO" and not n.collections:
                emit("negotiation-missing", f"{msg.name} on a connection that did not negotiate collections", **ctx)
        elif need is not None and n.controls.get(need[0]) != need[1]:
            emit("negotiation-missing", f"{msg.name} without DCP_CONTROL {need[0]}={need[1]}", **ctx)
        if msg.opcode == OP.DCP_SNAPSHOT_MARKER and msg.values.get("version") == 0x02 and n.controls.get("max_marker_version") != "2.2":
            emit("negotiation-missing", "v2.2 snapshot marker without DCP_CONTROL max_marker_version=2.2", **ctx)

    def _seqno(self, stream: Stream, msg: Message, seqno: int, index, ts, emit, ctx) -> None:
        snap, op = stream.snapshot, msg.opcode
        if stream.in_oso:
            if seqno <= stream.oso_base:
                emit("oso-below-start", f"{msg.name} seqno {seqno} <= {stream.oso_base} (last before OSO)", **ctx)
        else:
            if seqno <= stream.last_seqno and not (stream.adopted and stream.last_seqno == 0):
                emit("seqno-regression", f"{msg.name} seqno {seqno} <= previous {stream.last_seqno} on {stream.label()}", **ctx)
            if op in ITEM_OPCODES:
                if snap is None:
                    if not stream.adopted:
                        emit("item-before-marker", f"{msg.name} seqno {seqno} before any snapshot marker", **ctx)
                elif not snap.start <= seqno <= snap.end:
                    emit("seqno-outside-snapshot",
                         f"{msg.name} seqno {seqno} outside snapshot {snap.start}..{snap.end} (marker frame {snap.index})", **ctx)
                elif stream.end_reached and snap.complete:
                    emit("beyond-end-seqno", f"{msg.name} seqno {seqno} after the snapshot holding end seqno {stream.end_seqno}", **ctx)
            if snap is not None and op in _KEYED and not snap.may_duplicate:
                # Prepares are indexed apart; keys are kept as digests, and a snapshot larger
                # than MAX_SNAPSHOT_KEYS stops being checked rather than growing without bound.
                keys = snap.keys
                key = hash((op == OP.DCP_PREPARE, msg.collection_id, msg.key))
                if key in keys:
                    emit("duplicate-key", f"key {msg.fields.get('key', '')!r} repeats in snapshot {snap.start}..{snap.end}", **ctx)
                elif len(keys) < MAX_SNAPSHOT_KEYS:
                    keys.add(key)
        self.state.item(stream, msg, seqno, ts)

    def _marker(self, stream: Stream, msg: Message, index, emit, ctx) -> None:
        v = msg.values
        if "start_seqno" not in v:
            return
        start, end, flags = v["start_seqno"], v["end_seqno"], v.get("snapshot_type", 0)
        prev = stream.snapshot
        if stream.in_oso:
            emit("oso-unbalanced", "snapshot marker inside an OSO snapshot", **ctx)
        if prev is None:
            floor = min(stream.start_seqno, stream.request.get("snap_start_seqno", stream.start_seqno))
            if start < floor and not stream.adopted:
                emit("first-marker-start", f"first snapshot starts at {start}, below the requested snapshot start {floor}", **ctx)
        else:
            history_repeat = (flags & SNAPSHOT_HISTORY and flags & SNAPSHOT_DISK and prev.disk
                              and not prev.flags & SNAPSHOT_HISTORY and end == prev.end)
            if end <= prev.end and not history_repeat:
                emit("marker-end-regression", f"snapshot end {end} <= previous end {prev.end}", **ctx)
            if start < prev.start or (start <= prev.end and not history_repeat):
                emit("marker-overlap", f"snapshot {start}..{end} starts before previous snapshot {prev.start}..{prev.end} ended", **ctx)
            if not prev.complete and stream.last_seqno < prev.end and not history_repeat:
                # Without collections a snapshot may end on an item this client never sees (R7).
                emit("marker-inside-snapshot",
                     f"new marker while snapshot {prev.start}..{prev.end} only reached {stream.last_seqno}",
                     severity=None if self.negotiation.collections else "info", **ctx)
            if stream.end_reached:
                emit("beyond-end-seqno", f"new snapshot {start}..{end} after end seqno {stream.end_seqno} was reached", **ctx)
        if start > end:
            emit("marker-end-regression", f"snapshot start {start} > end {end}", **ctx)
        mvs, hcs, hps = v.get("max_visible_seqno"), v.get("high_completed_seqno"), v.get("high_prepared_seqno")
        if mvs is not None and mvs > end:
            emit("mvs-above-end", f"max visible seqno {mvs} > snapshot end {end}", **ctx)
        if hps is not None and hps > end and flags & SNAPSHOT_DISK:
            emit("mvs-above-end", f"high prepared seqno {hps} > snapshot end {end}", **ctx)
        if not flags & SNAPSHOT_DISK and (hcs or hps):
            emit("hcs-without-disk", f"HCS {hcs} / HPS {hps} in a snapshot without the Disk flag (not meaningful)", **ctx)
        snap = self.state.start_snapshot(stream, msg, index)
        if snap.wants_ack:
            self.state.acks_due.append((stream, snap))

    def _oso(self, stream: Stream, msg: Message, emit, ctx) -> None:
        flags = msg.values.get("flags", 0)
        if flags == 0x01:
            if stream.in_oso:
                emit("oso-unbalanced", "OSO start inside an OSO snapshot", **ctx)
            stream.in_oso, stream.oso_base, stream.oso_max = True, stream.last_seqno, stream.last_seqno
        elif flags == 0x02:
            if not stream.in_oso:
                emit("oso-unbalanced", "OSO end without an OSO start", **ctx)
            stream.in_oso = False
            stream.last_seqno = max(stream.last_seqno, stream.oso_max)

    def _system_event(self, stream: Stream, msg: Message, emit, ctx) -> None:
        v = msg.values
        uid = v.get("manifest_uid")
        if uid is not None:
            if stream.manifest_uid is not None and uid < stream.manifest_uid:
                emit("manifest-regression", f"manifest uid {uid} < previous {stream.manifest_uid}", **ctx)
            stream.manifest_uid = max(uid, stream.manifest_uid or 0)
        cid = v.get("collection_id")
        if v.get("event") in (0, 1, 5) and cid is not None and 1 <= cid <= 7:
            emit("reserved-collection", f"system event names reserved collection id {cid}", **ctx)

    def _deletion_version(self, msg: Message, emit, ctx) -> None:
        flags = self.negotiation.dcp_open_flags
        if flags is None:
            return
        want = deletion_extras(flags)
        if msg.extras_length != want:
            emit("deletion-version", f"deletion extras {msg.extras_length} but DCP_OPEN "
                 f"{'set' if flags & INCLUDE_DELETE_TIMES else 'did not set'} IncludeDeleteTimes (expect {want})", **ctx)

    def _flow_control(self, msg: Message, emit) -> None:
        limit = self.negotiation.buffer_size
        if not limit:
            return
        st = self.state
        size = msg.body_length + 24 + (2 if msg.opcode == OP.DCP_PREPARE else 0)
        if st.unacked >= limit:
            emit("buffer-overrun", f"{msg.name} sent with {st.unacked} unacknowledged bytes >= buffer {limit}")
        st.unacked += size
        st.sent_total += size

    def _buffer_ack(self, msg: Message, emit) -> None:
        st = self.state
        n = msg.values.get("buffer_bytes", 0)
        st.acked_total += n
        if self.seen_from_start and self.negotiation.buffer_size and st.acked_total > st.sent_total:
            emit("buffer-ack-excess", f"acknowledged {st.acked_total} bytes in all, only {st.sent_total} were sent")
        st.unacked = max(0, st.unacked - n)

    # -- responses ---------------------------------------------------------------------

    def _response(self, msg: Message, direction, index, emit) -> None:
        st, op = self.state, msg.opcode
        pending = st.request_for(msg, direction)
        if op == OP.DCP_NOOP:
            st.noops.pop(msg.opaque, None)
        if op == OP.DCP_SNAPSHOT_MARKER and msg.status == 0:
            for stream, snap in st.acks_due:
                if stream.opaque == msg.opaque and snap.complete and not snap.acked:
                    snap.acked = True
                    break
            st.acks_due = [(s, sn) for s, sn in st.acks_due if not sn.acked]
        if op == OP.DCP_STREAM_REQ:
            stream = st.streams_by_opaque.get(msg.opaque)
            if stream is not None and stream.state == "requested":
                (st.accept if msg.status == 0 else st.reject)(stream, msg)
        if pending is not None and pending.msg.opcode == op:
            st.pending.pop((pending.direction, msg.opaque), None)
            if msg.status not in SUCCESS_LIKE_STATUS or msg.status == ST.Rollback:
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
            f = replace(f, cls=cls)
        self.out.append(f)


def _pending(msg, index, ts, direction):
    from ..sessions.streams import Pending

    return Pending(msg, index, ts, direction)


def _other(direction: str | None) -> str | None:
    return {"c2s": "s2c", "s2c": "c2s"}.get(direction or "", None)
