"""A small generator of realistic DCP conversations for tests (a plain module).

A conversation is a list of ``(direction, frame bytes)``: ``"c2s"`` is the DCP
client (the consumer, which sent DCP_OPEN with the Producer flag), ``"s2c"`` is
the server (the producer).  :class:`Dcp` writes the connection-level traffic
(HELO, DCP_OPEN, DCP_CONTROL, STREAM_REQ and its answers, noops, buffer acks);
:class:`Producer` writes one stream's messages and keeps its seqno, so a valid
stream is a few lines and a test breaks exactly one rule by hand::

    dcp = Dcp().handshake()
    p = dcp.stream(vb=5)                      # STREAM_REQ + Success with a failover log
    p.snapshot(3)                             # marker 1..3, three mutations
    p.marker(4, 6); p.mutation(seqno=4); p.mutation(seqno=4)   # <- the one violation
    findings(dcp.frames)

Everything is built from the product's own layouts (``dcpinspect.messages``),
so frames are exactly what spec/dcp.md §8 describes.  ``findings`` runs a
conversation through the same core as the capture engine (negotiation,
frame rules, stream validator with directions, ``finish()``); ``pcap`` writes
it as a TCP capture with ``dcpinspect.transport.synth``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from dcpinspect.findings import Finding
from dcpinspect.families.mcbp.messages import dcp as L
from dcpinspect.families.mcbp.messages.build import build_frame
from dcpinspect.families.mcbp.messages.codecs.frameinfo import encode_frame_info
from dcpinspect.families.mcbp.messages.codecs.leb128 import encode_uleb128
from dcpinspect.families.mcbp.messages.codecs.sysevent import encode_sysevent_value

C2S, S2C = "c2s", "s2c"  # consumer (DCP client) -> producer (server), and back
MAX_SEQNO = 2**64 - 1

# DCP_OPEN flags (spec §8.1)
PRODUCER, INCLUDE_XATTRS, NO_VALUE, INCLUDE_DELETE_TIMES = 0x01, 0x04, 0x08, 0x20
# Snapshot marker flags (spec §8.7)
MEMORY, DISK, CHECKPOINT, ACK, HISTORY, MAY_DUPLICATE = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
# Stream request flags (spec §8.4)
TAKEOVER = 0x01
# Stream end reasons (spec §8.6)
END_OK, END_CLOSED, END_STATE_CHANGED, END_SLOW, END_ROLLBACK = 0, 1, 2, 4, 6
# System events (spec §9)
BEGIN_COLLECTION, END_COLLECTION, CREATE_SCOPE, DROP_SCOPE = 0, 1, 3, 4
# Status codes (spec §6)
SUCCESS, KEY_ENOENT, EINVAL, ERANGE, ROLLBACK = 0x00, 0x01, 0x04, 0x22, 0x23

FEATURES = {"xattr": 0x06, "xerror": 0x07, "snappy": 0x0A, "json": 0x0B, "collections": 0x12}


def key_bytes(name: str | bytes, cid: int | None) -> bytes:
    """A document key: LEB128 collection id + name when ``cid`` is given."""
    raw = name.encode() if isinstance(name, str) else name
    return raw if cid is None else encode_uleb128(cid) + raw


def sid_frame(sid: int) -> bytes:
    return encode_frame_info(2, sid.to_bytes(2, "big"))


def flow_size(frame: bytes) -> int:
    """Bytes a producer message counts against the consumer's buffer (spec §11.8)."""
    return len(frame) + (2 if frame[1] == 0x60 else 0)


class Dcp:
    """One DCP connection, written in order.  ``frames`` is the result."""

    def __init__(self, collections: bool = True, delete_times: bool = True) -> None:
        self.frames: list[tuple[str, bytes]] = []
        self.collections = collections
        self.delete_times = delete_times
        self.stream_ids = False
        self._opaque = 0x10
        self._noop = 0xA000_0000
        self.buffer_size = 0
        self.ack_at = 0
        self.unacked = 0
        self.auto_ack = True

    # -- raw traffic --------------------------------------------------------------------

    def opaque(self) -> int:
        self._opaque += 1
        return self._opaque

    def client(self, frame: bytes) -> "Dcp":
        """A frame the consumer sends (requests to the producer, replies to its messages)."""
        self.frames.append((C2S, frame))
        return self

    def server(self, frame: bytes, counted: bool = True) -> "Dcp":
        """A frame the producer sends; stream messages count for flow control."""
        self.frames.append((S2C, frame))
        if counted and self.buffer_size and frame[0] in (0x80, 0x08):
            self.unacked += flow_size(frame)
            if self.auto_ack and self.unacked >= self.ack_at:
                self.buffer_ack()
        return self

    def exchange(self, opcode: int, *, status: int = SUCCESS, response_value: bytes = b"", **request) -> int:
        """A client request and the server's answer; returns the opaque."""
        op = request.pop("opaque", None) or self.opaque()
        self.client(build_frame(0x80, opcode, opaque=op, **request))
        self.server(build_frame(0x81, opcode, status=status, opaque=op, value=response_value), counted=False)
        return op

    # -- connection set-up ----------------------------------------------------------------

    def helo(self, agent: bytes = b"dcpgen/1.0", features: Iterable[str] | None = None) -> "Dcp":
        names = list(features) if features is not None else (
            ["xattr", "xerror", "json", "snappy"] + (["collections"] if self.collections else []))
        value = b"".join(FEATURES[n].to_bytes(2, "big") for n in names)
        op = self.opaque()
        self.client(build_frame(0x80, 0x1F, key=agent, value=value, opaque=op))
        self.server(build_frame(0x81, 0x1F, value=value, opaque=op), counted=False)
        return self

    def open(self, name: bytes = b"dcpgen:conn", flags: int | None = None, status: int = SUCCESS) -> "Dcp":
        if flags is None:
            flags = PRODUCER | INCLUDE_XATTRS | (INCLUDE_DELETE_TIMES if self.delete_times else 0)
        self.exchange(0x50, key=name, extras=L.OPEN.pack(flags=flags), status=status)
        return self

    def control(self, key: str, value: str, status: int = SUCCESS) -> "Dcp":
        self.exchange(0x5E, key=key.encode(), value=value.encode(), status=status)
        if key == "enable_stream_id" and value == "true" and status == SUCCESS:
            self.stream_ids = True
        return self

    def handshake(self, *controls: tuple[str, str], stream_ids: bool = False, buffer: int = 0,
                  ack_ratio: float = 0.5) -> "Dcp":
        """HELO, DCP_OPEN, enable_noop and the given controls (all answered Success)."""
        self.helo().open()
        self.control("enable_noop", "true").control("set_noop_interval", "60")
        if stream_ids:
            self.control("enable_stream_id", "true")
        for k, v in controls:
            self.control(k, v)
        if buffer:
            self.flow_control(buffer, ack_ratio)
        return self

    def flow_control(self, buffer: int, ack_ratio: float = 0.5) -> "Dcp":
        """connection_buffer_size = ``buffer``; the consumer acks once ``ack_ratio`` of it is used."""
        self.control("connection_buffer_size", str(buffer))
        self.buffer_size, self.ack_at = buffer, max(1, int(buffer * ack_ratio))
        return self

    # -- streams --------------------------------------------------------------------------

    def stream_request(self, vb: int, start: int = 0, end: int = MAX_SEQNO, uuid: int = 0,
                       snap_start: int | None = None, snap_end: int | None = None, sid: int | None = None,
                       flags: int = 0, value: dict | None = None, opaque: int | None = None) -> int:
        """Just the STREAM_REQ (C→P); returns its opaque."""
        op = opaque or self.opaque()
        doc = dict(value or {})
        if sid is not None:
            doc["sid"] = sid
        body = json.dumps(doc, separators=(",", ":")).encode() if doc else b""
        extras = L.STREAM_REQ.pack(flags=flags, start_seqno=start, end_seqno=end, vbucket_uuid=uuid,
                                   snap_start_seqno=start if snap_start is None else snap_start,
                                   snap_end_seqno=start if snap_end is None else snap_end)
        self.client(build_frame(0x80, 0x53, vbucket=vb, opaque=op, extras=extras, value=body))
        return op

    def stream_ok(self, opaque: int, failover: Iterable[tuple[int, int]] = ((0xFEEDFACE, 0),)) -> "Dcp":
        log = b"".join(L.FAILOVER_ENTRY.pack(vbucket_uuid=u, seqno=s) for u, s in failover)
        return self.server(build_frame(0x81, 0x53, opaque=opaque, value=log), counted=False)

    def stream_rollback(self, opaque: int, seqno: int) -> "Dcp":
        return self.server(build_frame(0x81, 0x53, status=ROLLBACK, opaque=opaque,
                                       value=L.ROLLBACK.pack(rollback_seqno=seqno)), counted=False)

    def stream_error(self, opaque: int, status: int, context: str | None = None) -> "Dcp":
        value = json.dumps({"error": {"context": context}}).encode() if context else b""
        return self.server(build_frame(0x81, 0x53, status=status, opaque=opaque, value=value,
                                       datatype=0x01 if value else 0), counted=False)

    def stream(self, vb: int, start: int = 0, end: int = MAX_SEQNO, uuid: int = 0,
               snap_start: int | None = None, snap_end: int | None = None, sid: int | None = None,
               flags: int = 0, value: dict | None = None,
               failover: Iterable[tuple[int, int]] = ((0xFEEDFACE, 0),)) -> "Producer":
        """STREAM_REQ + Success; returns the stream's :class:`Producer`."""
        op = self.stream_request(vb, start, end, uuid, snap_start, snap_end, sid, flags, value)
        self.stream_ok(op, failover)
        return Producer(self, vb, op, sid, start)

    # -- liveness and flow control ----------------------------------------------------------

    def noop(self, reply: bool = True) -> int:
        self._noop += 1
        self.server(build_frame(0x80, 0x5C, opaque=self._noop), counted=False)
        if reply:
            self.client(build_frame(0x81, 0x5C, opaque=self._noop))
        return self._noop

    def buffer_ack(self, n: int | None = None) -> "Dcp":
        n = self.unacked if n is None else n
        self.client(build_frame(0x80, 0x5D, extras=L.BUFFER_ACK.pack(buffer_bytes=n)))
        self.unacked = max(0, self.unacked - n)
        return self

    # -- output -------------------------------------------------------------------------------

    def bytes(self) -> bytes:
        return b"".join(f for _, f in self.frames)

    def pcap(self, path: str | Path, **kw) -> Path:
        return write_capture(self.frames, path, **kw)


@dataclass
class Producer:
    """The producer side of one stream: keeps its seqno, builds its messages."""

    dcp: Dcp
    vb: int
    opaque: int
    sid: int | None = None
    seqno: int = 0  # highest seqno sent (OSO items do not lower it)
    _keys: int = 0

    # -- framing ------------------------------------------------------------------------------

    def frame(self, opcode: int, extras: bytes = b"", key: bytes = b"", value: bytes = b"",
              cas: int = 0, datatype: int = 0, sid: int | None | bool = True) -> bytes:
        """A stream message: magic 0x08 + stream-id frame when the stream has a sid."""
        sid = self.sid if sid is True else (None if sid is False else sid)
        if sid is not None:
            return build_frame(0x08, opcode, framing=sid_frame(sid), extras=extras, key=key, value=value,
                               vbucket=self.vb, opaque=self.opaque, cas=cas, datatype=datatype)
        return build_frame(0x80, opcode, extras=extras, key=key, value=value, vbucket=self.vb,
                           opaque=self.opaque, cas=cas, datatype=datatype)

    def send(self, opcode: int, **kw) -> "Producer":
        self.dcp.server(self.frame(opcode, **kw))
        return self

    def key(self, name: str | bytes | None = None, cid: int = 0) -> bytes:
        if name is None:
            self._keys += 1
            name = f"vb{self.vb}:{self.sid or 0}:doc{self._keys:06d}"
        return key_bytes(name, cid if self.dcp.collections else None)

    def _next(self, seqno: int | None) -> int:
        seqno = self.seqno + 1 if seqno is None else seqno
        self.seqno = max(self.seqno, seqno)
        return seqno

    # -- snapshots ------------------------------------------------------------------------------

    def marker(self, start: int, end: int, flags: int = MEMORY, version: str = "v1", mvs: int | None = None,
               hcs: int = 0, purge: int = 0, hps: int = 0) -> "Producer":
        """A snapshot marker: ``version`` 'v1' (extras 20), '2.0' or '2.2' (1-byte extras + value)."""
        if version == "v1":
            return self.send(0x56, extras=L.SNAPSHOT_V1.pack(start_seqno=start, end_seqno=end, snapshot_type=flags))
        fields = dict(start_seqno=start, end_seqno=end, snapshot_type=flags,
                      max_visible_seqno=end if mvs is None else mvs, high_completed_seqno=hcs)
        if version == "2.0":
            return self.send(0x56, extras=L.SNAPSHOT_V2_EXTRAS.pack(version=0), value=L.SNAPSHOT_V20.pack(**fields))
        if version == "2.2":
            return self.send(0x56, extras=L.SNAPSHOT_V2_EXTRAS.pack(version=2),
                             value=L.SNAPSHOT_V22.pack(**fields, purge_seqno=purge, high_prepared_seqno=hps))
        raise ValueError(f"marker version {version!r}")

    def snapshot(self, n: int, flags: int = MEMORY, version: str = "v1", start: int | None = None,
                 kind: str = "mutation", cid: int = 0, **marker) -> "Producer":
        """A whole snapshot: marker (start..start+n-1, or ``start`` given) and ``n`` items."""
        first = self.seqno + 1
        self.marker(first if start is None else start, first + n - 1, flags, version, **marker)
        for _ in range(n):
            getattr(self, kind)(cid=cid)
        return self

    # -- items ----------------------------------------------------------------------------------

    def mutation(self, key: bytes | str | None = None, seqno: int | None = None, value: bytes = b'{"v":1}',
                 cid: int = 0, rev: int = 1, cas: int = 0x1600_0000_0000_0000, datatype: int = 0x01) -> "Producer":
        k = key if isinstance(key, bytes) else self.key(key, cid)
        s = self._next(seqno)
        return self.send(0x57, extras=L.MUTATION.pack(by_seqno=s, rev_seqno=rev), key=k, value=value,
                         cas=cas + s, datatype=datatype)

    def deletion(self, key: bytes | str | None = None, seqno: int | None = None, cid: int = 0,
                 v2: bool | None = None) -> "Producer":
        k = key if isinstance(key, bytes) else self.key(key, cid)
        s = self._next(seqno)
        v2 = self.dcp.delete_times if v2 is None else v2
        extras = (L.DELETION_V2.pack(by_seqno=s, rev_seqno=2, delete_time=1_760_000_000) if v2
                  else L.DELETION_V1.pack(by_seqno=s, rev_seqno=2))
        return self.send(0x58, extras=extras, key=k, cas=0x1700_0000_0000_0000 + s)

    def expiration(self, key: bytes | str | None = None, seqno: int | None = None, cid: int = 0) -> "Producer":
        k = key if isinstance(key, bytes) else self.key(key, cid)
        s = self._next(seqno)
        return self.send(0x59, extras=L.EXPIRATION.pack(by_seqno=s, rev_seqno=3, delete_time=1_760_000_000),
                         key=k, cas=0x1800_0000_0000_0000 + s)

    def prepare(self, key: bytes | str | None = None, seqno: int | None = None, cid: int = 0,
                level: int = 1, deleted: int = 0) -> "Producer":
        k = key if isinstance(key, bytes) else self.key(key, cid)
        s = self._next(seqno)
        return self.send(0x60, extras=L.PREPARE.pack(by_seqno=s, rev_seqno=1, durability_level=level,
                                                     deleted=deleted),
                         key=k, value=b'{"p":1}', cas=0x1900_0000_0000_0000 + s, datatype=0x01, sid=False)

    def commit(self, key: bytes | str, prepared: int, seqno: int | None = None, cid: int = 0) -> "Producer":
        k = key if isinstance(key, bytes) else self.key(key, cid)
        s = self._next(seqno)
        return self.send(0x62, extras=L.COMMIT.pack(prepared_seqno=prepared, commit_seqno=s), key=k, sid=False)

    def abort(self, key: bytes | str, prepared: int, seqno: int | None = None, cid: int = 0) -> "Producer":
        k = key if isinstance(key, bytes) else self.key(key, cid)
        s = self._next(seqno)
        return self.send(0x63, extras=L.ABORT.pack(prepared_seqno=prepared, abort_seqno=s), key=k, sid=False)

    def system_event(self, event: int = BEGIN_COLLECTION, name: bytes = b"orders", seqno: int | None = None,
                     manifest_uid: int = 1, scope_id: int = 0, collection_id: int = 8,
                     version: int = 0) -> "Producer":
        """A collection/scope event (binary v0 value unless ``version`` says otherwise)."""
        return self.event(event, name, seqno, version, manifest_uid=manifest_uid, scope_id=scope_id,
                          collection_id=collection_id)

    def event(self, event: int, name: bytes, seqno: int | None = None, version: int = 0, **fields) -> "Producer":
        if event in (CREATE_SCOPE, DROP_SCOPE):
            fields.pop("collection_id", None)
        if event in (END_COLLECTION, DROP_SCOPE):
            name = b""
        s = self._next(seqno)
        return self.send(0x5F, extras=L.SYSTEM_EVENT.pack(by_seqno=s, event=event, version=version), key=name,
                         value=encode_sysevent_value(event, version, **fields))

    def seqno_advanced(self, seqno: int) -> "Producer":
        s = self._next(seqno)
        return self.send(0x64, extras=L.SEQNO_ADVANCED.pack(by_seqno=s))

    def oso_start(self) -> "Producer":
        return self.send(0x65, extras=L.OSO_SNAPSHOT.pack(flags=0x01))

    def oso_end(self) -> "Producer":
        return self.send(0x65, extras=L.OSO_SNAPSHOT.pack(flags=0x02))

    def oso(self, seqnos: Iterable[int], advance_to: int | None = None, cid: int = 8) -> "Producer":
        """An OSO snapshot: items in key order with the given (unordered) seqnos, optional
        SeqnoAdvanced(max scanned) and OSO end."""
        self.oso_start()
        for i, s in enumerate(seqnos):
            self.mutation(f"oso::{i:05d}", seqno=s, cid=cid)
        if advance_to is not None:
            self.seqno_advanced(advance_to)
        return self.oso_end()

    def set_vbucket_state(self, state: int) -> "Producer":
        return self.send(0x5B, extras=L.SET_VBUCKET_STATE.pack(state=state), sid=False)

    def end(self, reason: int = END_OK) -> "Producer":
        return self.send(0x55, extras=L.STREAM_END.pack(reason=reason))

    # -- consumer replies -----------------------------------------------------------------------

    def ack_snapshot(self, status: int = SUCCESS) -> "Producer":
        """The consumer's 81 56 for an Ack-flagged snapshot (after its end seqno arrived)."""
        self.dcp.client(build_frame(0x81, 0x56, status=status, opaque=self.opaque))
        return self

    def seqno_ack(self, prepared: int) -> "Producer":
        """DCP_SEQNO_ACKNOWLEDGED (C→P, sync replication): the replica has this prepare."""
        self.dcp.client(build_frame(0x80, 0x61, extras=L.SEQNO_ACKNOWLEDGED.pack(prepared_seqno=prepared),
                                    vbucket=self.vb, opaque=self.opaque))
        return self

    def close(self) -> "Producer":
        """DCP_CLOSE_STREAM from the client (with the sid frame when the stream has one), answered."""
        op = self.dcp.opaque()
        framing = sid_frame(self.sid) if self.sid is not None else b""
        self.dcp.client(build_frame(0x08 if framing else 0x80, 0x52, framing=framing, vbucket=self.vb, opaque=op))
        self.dcp.server(build_frame(0x81, 0x52, opaque=op), counted=False)
        return self

    def reply(self, opcode: int, status: int) -> "Producer":
        """A consumer error (or success) reply to a stream message, with the stream opaque."""
        self.dcp.client(build_frame(0x81, opcode, status=status, opaque=self.opaque))
        return self


# -- running conversations through the product ---------------------------------------------------

@dataclass(frozen=True)
class Found:
    """A finding and where it was reported: what ``dcpinspect validate`` prints as one row."""

    frame: int  # 1-based frame number it is attached to (finish-time findings: their related frame)
    finding: Finding
    msg_vbucket: int | None = None  # vbucket of the message it is attached to
    msg_stream_id: int | None = None

    def __getattr__(self, name):
        return getattr(self.finding, name)

    @property
    def row_vbucket(self) -> int | None:
        """The vbucket a validate row shows: the finding's, else its message's."""
        return self.finding.vbucket if self.finding.vbucket is not None else self.msg_vbucket


def findings(frames: list[tuple[str, bytes]], collections: bool | None = None) -> list[Found]:
    """Every finding (frame rules, stream rules, end-of-conversation ones) with its frame number.

    Frames are fed through the capture engine's per-connection core with their
    directions, in order; ``finish()`` findings carry their related frame.
    """
    from dcpinspect.families.mcbp.conversation import Conversation
    from dcpinspect.families.mcbp.framer import RawFrame

    # A conversation that opens with HELO or DCP_OPEN was seen from its start.
    from_start = bool(frames) and frames[0][1][1] in (0x1F, 0x50)
    conv = Conversation.new(collections, seen_from_start=from_start)
    out: list[Found] = []
    offset = 0
    for n, (direction, data) in enumerate(frames, 1):
        msg = conv.decode(RawFrame(offset, data), direction, 1_700_000_000 + n * 1e-4, n)
        offset += len(data)
        out.extend(Found(n, f, msg.vbucket, msg.stream_id) for f in msg.findings)
    out.extend(Found(f.frame or 0, f) for f in conv.validator.finish())
    return out


def coalesce(frames: list[tuple[str, bytes]], limit: int = 16384) -> list[tuple[str, bytes]]:
    """Join runs of same-direction frames into writes of up to ``limit`` bytes (as a socket would)."""
    out: list[tuple[str, bytes]] = []
    buf: list[bytes] = []
    size, last = 0, None
    for direction, data in frames:
        if buf and (direction != last or size + len(data) > limit):
            out.append((last, b"".join(buf)))
            buf, size = [], 0
        buf.append(data)
        size += len(data)
        last = direction
    if buf:
        out.append((last, b"".join(buf)))
    return out


def write_capture(frames: list[tuple[str, bytes]], path: str | Path, *, handshake: bool = True,
                  coalesced: bool = True, client=("10.0.0.1", 50000), fmt: str = "pcap") -> Path:
    """The conversation as a pcap of one TCP connection to port 11210."""
    from dcpinspect.transport import synth

    messages = coalesce(frames) if coalesced else frames
    packets = synth.tcp_conversation(messages, client=client, handshake=handshake,
                                     close="fin" if handshake else None, acks=False)
    synth.write_pcap(path, packets, "ether", fmt=fmt, dt=1e-5)
    return Path(path)


def packet_numbers(path: str | Path, frames: list[tuple[str, bytes]]) -> list[int]:
    """For each frame of a conversation written by :func:`write_capture`, the capture frame
    number (1-based, as Wireshark counts) of the packet holding its last byte. Read with
    Scapy, apart from the product's reader, from the TCP payload sizes in each direction
    (the synthetic captures neither lose nor repeat segments)."""
    from scapy.all import TCP, rdpcap

    carried: dict[str, list[tuple[int, int]]] = {"c2s": [], "s2c": []}  # (bytes so far, number)
    for n, pkt in enumerate(rdpcap(str(path)), 1):
        size = len(bytes(pkt[TCP].payload)) if TCP in pkt else 0
        if size:
            direction = "c2s" if pkt[TCP].dport == 11210 else "s2c"
            before = carried[direction][-1][0] if carried[direction] else 0
            carried[direction].append((before + size, n))
    sent = {"c2s": 0, "s2c": 0}
    out = []
    for direction, data in frames:
        sent[direction] += len(data)
        out.append(next(n for total, n in carried[direction] if total >= sent[direction]))
    return out


# -- long, busy, valid conversations -------------------------------------------------------------
#
# Each episode leaves its stream's last snapshot complete, so episodes mix freely.
# Left out on purpose (the product reports them wrongly; see the strict xfails in
# test_stream_rules.py): ROLLBACK answers, first markers resuming a partial
# snapshot, a mutation and a prepare of one key in a snapshot, new STREAM_REQs
# on a connection captured mid-conversation.

def _items(rng, p: Producer, start: int, end: int, cid: int | None, kinds=("mutation",)) -> None:
    """Items with increasing seqnos in start..end (gaps = de-duplication), the last one at end."""
    seqnos = sorted(rng.sample(range(start, end), k=rng.randint(0, min(6, end - start)))) + [end]
    for s in seqnos:
        kind = rng.choice(kinds)
        if kind == "deletion":
            p.deletion(seqno=s, cid=cid or 0)
        elif kind == "expiration":
            p.expiration(seqno=s, cid=cid or 0)
        else:
            p.mutation(seqno=s, cid=cid or 0)


def violating_connection(n: int) -> "Dcp":
    """A conversation with a seqno regression, an unacknowledged takeover snapshot (a finding
    only the end of input gives) and an unanswered noop; ``n`` varies its vbuckets and
    whether it uses stream ids."""
    d = Dcp().handshake(stream_ids=n % 2 == 0)
    p = d.stream(100 + n, sid=1 if n % 2 == 0 else None)
    p.marker(1, 10).mutation(seqno=3).mutation(seqno=2)
    t = d.stream(200 + n, flags=TAKEOVER)
    t.snapshot(2, flags=MEMORY | ACK)
    d.noop(reply=False)
    return d


def busy_collections_connection(target: int, seed: int = 1, resume: bool = True) -> Dcp:
    """Collections, stream-ids (two streams on vb 0 and 1), flow control, OSO initial backfills,
    SeqnoAdvanced, v2.2 disk markers, History/MayContainDuplicates, system events, noops."""
    import random

    rng = random.Random(seed)
    d = Dcp().handshake(("enable_out_of_order_snapshots", "true_with_seqno_advanced"), ("change_streams", "true"),
                        ("max_marker_version", "2.2"), ("enable_expiry_opcode", "true"), stream_ids=True,
                        buffer=256 * 1024, ack_ratio=0.5)
    streams: list[tuple[Producer, int]] = []
    for vb in range(8):
        for sid in ((1, 2) if vb < 2 else (1,)):
            cid = 8 + sid if vb < 2 else 8
            p = d.stream(vb, sid=sid, value={"collections": [f"{cid:x}"]})
            if vb % 2 == 0:  # initial backfill out of seqno order
                n = rng.randint(5, 30)
                order = rng.sample(range(1, n + 1), n)
                p.oso_start()
                for i, s in enumerate(order):
                    p.mutation(f"oso:{vb}:{sid}:{i:04d}", seqno=s, cid=cid)
                top = n + rng.randint(0, 5)
                if top > n:
                    p.seqno_advanced(top)
                p.oso_end()
            streams.append((p, cid))
    uid = {id(p): 1 for p, _ in streams}

    def memory(p, cid):
        s = p.seqno
        end = s + rng.randint(1, 12)
        # items are a random subset ending at `end`: the marker start is often never delivered
        p.marker(s + 1, end, MEMORY | (CHECKPOINT if rng.random() < 0.5 else 0))
        _items(rng, p, s + 1, end, cid, ("mutation", "mutation", "deletion", "expiration"))

    def closed_by_seqno_advanced(p, cid):
        s = p.seqno
        end = s + rng.randint(2, 10)
        p.marker(s + 1, end, MEMORY | CHECKPOINT)
        for x in sorted(rng.sample(range(s + 1, end), k=rng.randint(0, min(4, end - s - 1)))):
            p.mutation(seqno=x, cid=cid)
        p.seqno_advanced(end)

    def disk(p, cid):
        s = p.seqno
        end = s + rng.randint(1, 20)
        p.marker(s + 1, end, DISK | CHECKPOINT, "2.2", mvs=end, hcs=rng.randint(0, end), hps=rng.randint(0, end),
                 purge=rng.randint(0, s))
        _items(rng, p, s + 1, end, cid)

    def history(p, cid):
        s = p.seqno
        mid = s + rng.randint(1, 5)
        end = mid + rng.randint(2, 8)
        p.marker(s + 1, end, DISK | CHECKPOINT)
        _items(rng, p, s + 1, mid, cid)
        p.marker(mid + 1, end, DISK | CHECKPOINT | HISTORY | MAY_DUPLICATE)
        name = f"hist:{p.vb}:{p.seqno}"
        for x in range(mid + 1, end + 1):
            p.mutation(name, seqno=x, cid=cid)  # one key, many versions
        p.marker(end + 1, end + 2, MEMORY | CHECKPOINT | HISTORY | MAY_DUPLICATE)
        p.mutation(name, seqno=end + 1, cid=cid).mutation(name, seqno=end + 2, cid=cid)

    def events(p, cid):
        s = p.seqno
        uid[id(p)] += 1
        p.marker(s + 1, s + 2, MEMORY | CHECKPOINT)
        p.system_event(BEGIN_COLLECTION, f"c{uid[id(p)]}".encode(), seqno=s + 1, manifest_uid=uid[id(p)],
                       scope_id=0, collection_id=cid)
        p.mutation(seqno=s + 2, cid=cid)

    episodes = [memory] * 6 + [closed_by_seqno_advanced] * 2 + [disk] * 2 + [history, events]
    while len(d.frames) < target:
        i = rng.randrange(len(streams))
        p, cid = streams[i]
        rng.choice(episodes)(p, cid)
        if resume and rng.random() < 0.01:  # end at a requested end seqno, then resume
            s = p.seqno
            p.end(END_STATE_CHANGED)
            q = d.stream(p.vb, start=s, end=s + 5, uuid=0xFEEDFACE, snap_start=s, snap_end=s, sid=p.sid,
                         value={"collections": [f"{cid:x}"]})
            q.seqno = s
            q.marker(s + 1, s + 8, MEMORY | CHECKPOINT)
            for x in range(s + 1, s + 9):
                q.mutation(seqno=x, cid=cid)  # 6..8 lie above end_seqno, inside the same snapshot: legal
            q.end(END_OK)
            r = d.stream(p.vb, start=s + 8, uuid=0xFEEDFACE, snap_start=s + 8, snap_end=s + 8, sid=p.sid,
                         value={"collections": [f"{cid:x}"]})
            r.seqno = s + 8
            streams[i] = (r, cid)
            uid[id(r)] = uid.pop(id(p))
        elif resume and rng.random() < 0.005:  # the client closes the stream and opens it again
            s = p.seqno
            p.close()
            r = d.stream(p.vb, start=s, uuid=0xFEEDFACE, snap_start=s, snap_end=s, sid=p.sid,
                         value={"collections": [f"{cid:x}"]})
            r.seqno = s
            streams[i] = (r, cid)
            uid[id(r)] = uid.pop(id(p))
        if rng.random() < 0.003:
            log = L.FAILOVER_ENTRY.pack(vbucket_uuid=0xFEEDFACE, seqno=0)
            d.exchange(0x54, vbucket=p.vb, response_value=log)
        if rng.random() < 0.02:
            d.noop()
    d.noop()
    d.buffer_ack()
    return d


def busy_sync_replication_connection(target: int, seed: int = 2) -> Dcp:
    """No collections, sync replication (v2.0 markers, prepares, commits, aborts), expirations,
    takeover streams whose Ack snapshots are acknowledged, answered noops."""
    import random

    rng = random.Random(seed)
    d = Dcp(collections=False).handshake(("enable_sync_writes", "true"), ("consumer_name", "replica:ns_1@n2"),
                                         ("enable_expiry_opcode", "true"), ("set_priority", "high"))
    streams = [d.stream(vb) for vb in range(100, 108)]
    next_vb = 200

    def memory(p):
        s = p.seqno
        seq = s
        kinds = rng.choices(["m", "pc", "pa", "d", "x"], k=rng.randint(1, 6))
        plan = []
        for k in kinds:
            if k in ("pc", "pa"):
                plan.append(("p", seq + 1))
                plan.append((k[1], seq + 2))
                seq += 2
            else:
                plan.append((k, seq + 1))
                seq += 1
        visible = max([x for k, x in plan if k in ("m", "c", "d", "x")], default=s)
        disk = rng.random() < 0.2
        p.marker(s + 1, seq, (DISK if disk else MEMORY) | CHECKPOINT, "2.0", mvs=visible,
                 hcs=rng.randint(0, s) if disk else 0)
        prepared = None
        for k, x in plan:
            if k == "m":
                p.mutation(seqno=x, datatype=0x01)
            elif k == "d":
                p.deletion(seqno=x)
            elif k == "x":
                p.expiration(seqno=x)
            elif k == "p":
                prepared = (p.key(), x)
                p.prepare(prepared[0], seqno=x, level=rng.randint(1, 3))
                if rng.random() < 0.5:
                    p.seqno_ack(x)
            elif k == "c":
                p.commit(prepared[0], prepared=prepared[1], seqno=x)
            else:
                p.abort(prepared[0], prepared=prepared[1], seqno=x)

    while len(d.frames) < target:
        i = rng.randrange(len(streams))
        memory(streams[i])
        if rng.random() < 0.03:
            d.noop()
        if rng.random() < 0.004:  # a takeover of a new vbucket, acknowledged snapshot by snapshot
            t = d.stream(next_vb, flags=TAKEOVER)
            next_vb += 1
            for _ in range(rng.randint(1, 3)):
                t.snapshot(rng.randint(1, 4), flags=MEMORY | CHECKPOINT | ACK)
                t.ack_snapshot()
            t.set_vbucket_state(3)
            t.reply(0x5B, SUCCESS)
            t.snapshot(1, flags=MEMORY | ACK)
            t.ack_snapshot()
            t.set_vbucket_state(1)
            t.reply(0x5B, SUCCESS)
            t.end(END_STATE_CHANGED)
    d.noop()
    return d


def mid_conversation_connection(target: int, seed: int = 3) -> list[tuple[str, bytes]]:
    """A busy collections connection whose capture starts after all its stream requests."""
    d = busy_collections_connection(target + 2000, seed, resume=False)
    frames = d.frames
    last_request = max(i for i, (direction, f) in enumerate(frames) if direction == C2S and f[1] == 0x53)
    assert last_request < 2000
    return frames[2000:]


def long_clean_capture(path: str | Path) -> int:
    """Three busy, valid connections in one pcap, interleaved (the third joined after its
    stream requests), 100k frames and more; returns how many frames."""
    a = busy_collections_connection(60_000, seed=11)
    b = busy_sync_replication_connection(28_000, seed=12)
    c = mid_conversation_connection(12_000, seed=13)
    write_flows([a.frames, b.frames, c], path, midstream=[2])
    return len(a.frames) + len(b.frames) + len(c)


def write_flows(flows: list[list[tuple[str, bytes]]], path: str | Path, midstream: Iterable[int] = (),
                chunk: int = 64) -> Path:
    """Several TCP connections in one pcap, their packets interleaved ``chunk`` at a time.
    Flows whose index is in ``midstream`` start without a handshake."""
    from dcpinspect.transport import synth

    mid = set(midstream)
    per_flow = []
    for n, frames in enumerate(flows):
        per_flow.append(synth.tcp_conversation(coalesce(frames), client=("10.0.0.1", 50000 + n),
                                               handshake=n not in mid, close=None if n in mid else "fin",
                                               acks=False))
    packets: list[bytes] = []
    pos = [0] * len(per_flow)
    while any(p < len(f) for p, f in zip(pos, per_flow)):
        for n, f in enumerate(per_flow):
            packets.extend(f[pos[n]:pos[n] + chunk])
            pos[n] += chunk
    synth.write_pcap(path, packets, "ether", dt=1e-5)
    return Path(path)
