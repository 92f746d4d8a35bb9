"""A small generator of TAP conversations for tests (a plain module).

A conversation is a list of ``(direction, frame bytes)``: ``"c2s"`` is the TAP consumer,
which opens the connection with TAP_CONNECT; ``"s2c"`` the producer, which sends the
events as requests and gets ACKs back as responses (spec/tap.md §1, §8). :class:`Tap`
writes both sides and keeps the producer's sequence number, so a valid conversation is a
few lines and a test breaks exactly one rule by hand::

    tap = Tap().connect(SUPPORT_ACK | BACKFILL, backfill=0)
    tap.backfill(vb=5, items=10, interval=4)   # INITIAL_VBUCKET_STREAM .. CLOSE_BACKFILL, ACKed
    seq = tap.mutation(5, b"k", b"v", ack=True)  # <- never answered
    findings(tap.frames)

Frames are packed from the product's TAP layouts (``dcpinspect.families.mcbp.messages.tap``): extras
from ``ITEM`` / ``HEADER``, the connect flags from ``CONNECT``, the engine-specific bytes
from ``ENGINE_*``; ``frames.frame`` lays them out (extras, engine bytes, key, value).
"""

from __future__ import annotations

import struct
from pathlib import Path

from dcpinspect.families.mcbp.messages import tap as L
from frames import frame

C2S, S2C = "c2s", "s2c"
# TAP_CONNECT flags (spec §9.2)
BACKFILL, DUMP, LIST_VBUCKETS, TAKEOVER, SUPPORT_ACK, KEYS_ONLY, CHECKPOINT, REGISTERED_CLIENT, FIX_BYTEORDER = (
    1 << n for n in range(9))
# TAP flags (spec §4)
ACK, NO_VALUE, NETWORK_BYTE_ORDER = 0x01, 0x02, 0x04
# opcodes and TAP_OPAQUE codes (spec §2, §6)
CONNECT, MUTATION, DELETE, FLUSH, OPAQUE, VBUCKET_SET, CHECKPOINT_START, CHECKPOINT_END = range(0x40, 0x48)
NOOP = 0x0A
AUTO_NACK, INITIAL_VBUCKET_STREAM, CHECKPOINT_SYNC, OPEN_CHECKPOINT, CLOSE_TAP_STREAM, CLOSE_BACKFILL = 0, 1, 2, 3, 7, 8
ACTIVE, REPLICA, PENDING, DEAD = 1, 2, 3, 4
SUCCESS, EBUSY, ETMPFAIL, EINVAL = 0x00, 0x85, 0x86, 0x04


def connect_frame(flags: int = 0, name: bytes = b"node1", *, backfill: int | None = None,
                  vbuckets: list[int] | None = None, checkpoints: dict[int, int] | None = None,
                  closed_only: int | None = None, value: bytes | None = None, extras: bool = True) -> bytes:
    """TAP_CONNECT: the flags, then each flag's value in ascending bit order (spec §9.1)."""
    if value is None:
        value = b""
        if flags & BACKFILL:
            value += struct.pack(">Q", backfill or 0)
        if flags & LIST_VBUCKETS:
            vbs = vbuckets or []
            value += struct.pack(">H", len(vbs)) + b"".join(struct.pack(">H", vb) for vb in vbs)
        if flags & CHECKPOINT:
            cps = checkpoints or {}
            value += struct.pack(">H", len(cps)) + b"".join(struct.pack(">HQ", vb, cid) for vb, cid in cps.items())
        if flags & REGISTERED_CLIENT and closed_only is not None:
            value += bytes([closed_only])
    return frame(0x80, CONNECT, extras=L.CONNECT.pack(flags=flags) if extras else b"", key=name, value=value)


def event_frame(opcode: int, seqno: int, vb: int = 0, *, flags: int = 0, key: bytes = b"", value: bytes = b"",
                engine: bytes = b"", ttl: int = 255, item_flags: int = 0, expiration: int = 0,
                engine_length: int | None = None, cas: int = 0) -> bytes:
    """One producer event: 8 or 16 bytes of TAP extras (spec §3), engine bytes, key, value."""
    header = dict(engine_specific_length=len(engine) if engine_length is None else engine_length, tap_flags=flags,
                  ttl=ttl, reserved=b"\0\0\0")
    if opcode in (MUTATION, CHECKPOINT_START, CHECKPOINT_END):
        extras = L.ITEM.pack(**header, item_flags=item_flags, expiration=expiration)
    else:
        extras = L.HEADER.pack(**header)
    return frame(0x80, opcode, extras=extras, engine=engine, key=key, value=value, vbucket=vb, opaque=seqno, cas=cas)


def ack_frame(opcode: int, seqno: int, status: int = SUCCESS) -> bytes:
    """The consumer's answer to an event (spec §8): same opcode, the event's opaque."""
    return frame(0x81, opcode, status=status, opaque=seqno)


class Tap:
    """One TAP connection's frames, both ways, with the producer's sequence number."""

    def __init__(self, first_seqno: int = 1) -> None:
        self.frames: list[tuple[str, bytes]] = []
        self.next = first_seqno

    def add(self, direction: str, data: bytes) -> "Tap":
        self.frames.append((direction, data))
        return self

    def connect(self, flags: int = 0, name: bytes = b"node1", **kw) -> "Tap":
        return self.add(C2S, connect_frame(flags, name, **kw))

    # -- producer ------------------------------------------------------------------------

    def event(self, opcode: int, vb: int = 0, *, ack: bool = False, flags: int = 0, seqno: int | None = None,
              **kw) -> int:
        """An event with the next sequence number (or ``seqno``); returns the number used."""
        if seqno is None:
            seqno = self.next
            self.next = 1 if seqno >= 0xFFFFFFFF else seqno + 1
        self.add(S2C, event_frame(opcode, seqno, vb, flags=flags | (ACK if ack else 0), **kw))
        return seqno

    def mutation(self, vb: int, key: bytes, value: bytes = b"v", *, rev: int = 1, **kw) -> int:
        return self.event(MUTATION, vb, key=key, value=value, engine=struct.pack(">QB", rev, 0), **kw)

    def delete(self, vb: int, key: bytes, *, rev: int = 1, **kw) -> int:
        return self.event(DELETE, vb, key=key, engine=struct.pack(">Q", rev), **kw)

    def opaque(self, vb: int, code: int, **kw) -> int:
        return self.event(OPAQUE, vb, engine=struct.pack(">I", code), **kw)

    def vbucket_set(self, vb: int, state: int, **kw) -> int:
        return self.event(VBUCKET_SET, vb, engine=struct.pack(">I", state), **kw)

    def checkpoint(self, opcode: int, vb: int, cid: int, **kw) -> int:
        """CHECKPOINT_START / END as the code ships them (spec §5.5): 16-byte extras, START with
        8 engine bytes, key ``checkpoint_start`` / ``checkpoint_end``, value the BE u64 id."""
        start = opcode == CHECKPOINT_START
        return self.event(opcode, vb, key=b"checkpoint_start" if start else b"checkpoint_end",
                          value=struct.pack(">Q", cid), engine=bytes(8) if start else b"", **kw)

    def noop(self, opaque: int = 0) -> "Tap":
        return self.add(S2C, frame(0x80, NOOP, opaque=opaque))

    # -- consumer ------------------------------------------------------------------------

    def ack(self, seqno: int, opcode: int, status: int = SUCCESS) -> "Tap":
        return self.add(C2S, ack_frame(opcode, seqno, status))

    # -- whole passages ------------------------------------------------------------------

    def backfill(self, vb: int, items: int, interval: int = 0, answer: bool = True) -> list[int]:
        """INITIAL_VBUCKET_STREAM, ``items`` mutations with an ACK asked at every
        ``interval``-th (0: none), CLOSE_BACKFILL; the consumer answers each ACK request when
        ``answer``. Returns the sequence numbers that asked for an ACK."""
        asked = [self.opaque(vb, INITIAL_VBUCKET_STREAM, ack=True)]
        if answer:
            self.ack(asked[-1], OPAQUE)
        for n in range(1, items + 1):
            want = bool(interval) and n % interval == 0
            seq = self.mutation(vb, b"key-%d-%d" % (vb, n), b'{"n":%d}' % n, ack=want)
            if want:
                asked.append(seq)
                if answer:
                    self.ack(seq, MUTATION)
        asked.append(self.opaque(vb, CLOSE_BACKFILL, ack=True))
        if answer:
            self.ack(asked[-1], OPAQUE)
        return asked

    def takeover(self, vbs: list[int]) -> None:
        """CLOSE_TAP_STREAM, then each vbucket set pending, then active, each ACKed (spec §7)."""
        seq = self.opaque(vbs[0], CLOSE_TAP_STREAM, ack=True)
        self.ack(seq, OPAQUE)
        for vb in vbs:
            for state in (PENDING, ACTIVE):
                seq = self.vbucket_set(vb, state, ack=True)
                self.ack(seq, VBUCKET_SET)


def write_capture(frames: list[tuple[str, bytes]], path: str | Path, **kw) -> Path:
    """The conversation as a pcap of one TCP connection to port 11210 (with its SYN)."""
    from dcpgen import write_capture as write

    return write(frames, path, **kw)


def findings(frames: list[tuple[str, bytes]], seen_from_start: bool = False, dt: float = 1e-3):
    """Every finding of the conversation (frame rules, DCP and TAP rules, end-of-connection
    ones) as ``(frame number, Finding)``, through the capture engine's per-connection core;
    frame n is stamped ``n * dt`` seconds."""
    from dcpinspect.families.mcbp.conversation import Conversation
    from dcpinspect.families.mcbp.framer import RawFrame

    conv = Conversation.new(seen_from_start=seen_from_start)
    out, offset = [], 0
    for n, (direction, data) in enumerate(frames, 1):
        msg = conv.decode(RawFrame(offset, data), direction, n * dt, n)
        offset += len(data)
        out.extend((n, f) for f in msg.findings)
    out.extend((f.frame, f) for f in conv.validator.finish())
    return out


def session_of(frames: list[tuple[str, bytes]], dt: float = 1e-3, seen_from_start: bool = True):
    """The TapSession after every frame, applied in order (frame n at ``n * dt`` seconds)."""
    from dcpinspect.families.mcbp.messages.frame import DecodeContext, decode_frame
    from dcpinspect.families.mcbp.sessions.tap import TapSession

    s = TapSession(seen_from_start)
    for n, (direction, data) in enumerate(frames, 1):
        s.apply(decode_frame(data, 0, DecodeContext(detail=False)), direction, n * dt, n)
    return s
