"""Write samples/tap-backfill.pcap (run: python samples/make_tap_sample.py).

A replication consumer's TAP connection as ep-engine 2.x serves it (spec/tap.md): a
TAP_CONNECT with Backfill, ListVbuckets {0, 1} and SupportAck; for each vbucket an
INITIAL_VBUCKET_STREAM, a backfill with an ACK asked at every 5th mutation, CLOSE_BACKFILL;
then live mutations, a deletion and a NOOP. The consumer answers every ACK request but the
last one, which is left unanswered: ``dcpinspect validate`` reports it (tap-ack-unanswered)."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

from dcpinspect.families.mcbp.messages import tap
from dcpinspect.families.mcbp.messages.build import build_frame
from dcpinspect.transport import synth

HERE = Path(__file__).resolve().parent
CONNECT, MUTATION, DELETE, OPAQUE = 0x40, 0x41, 0x42, 0x44
BACKFILL, LIST_VBUCKETS, SUPPORT_ACK = 0x01, 0x04, 0x10
ACK = 0x01
INITIAL_VBUCKET_STREAM, CLOSE_BACKFILL = 1, 8
ACK_INTERVAL = 5


def event(opcode: int, seqno: int, vb: int, engine: bytes, key: bytes = b"", value: bytes = b"",
          ack: bool = False) -> bytes:
    """A producer event: TAP extras, engine-specific bytes, key, value (spec §3)."""
    header = dict(engine_specific_length=len(engine), tap_flags=ACK if ack else 0, ttl=255, reserved=b"\0\0\0")
    extras = tap.ITEM.pack(**header, item_flags=0, expiration=0) if opcode == MUTATION else tap.HEADER.pack(**header)
    frame = build_frame(0x80, opcode, extras=extras, key=key, value=value, vbucket=vb, opaque=seqno)
    body = frame[24:]
    out = frame[:24] + body[:len(extras)] + engine + body[len(extras):]
    return out[:8] + struct.pack(">I", len(out) - 24) + out[12:]


def conversation() -> list[tuple[str, bytes]]:
    vbs = (0, 1)
    userdata = struct.pack(">Q", 0) + struct.pack(">H", len(vbs)) + b"".join(struct.pack(">H", vb) for vb in vbs)
    out = [("c2s", build_frame(0x80, CONNECT, extras=tap.CONNECT.pack(flags=BACKFILL | LIST_VBUCKETS | SUPPORT_ACK),
                               key=b"replication:ns_1@10.0.0.1", value=userdata))]
    seqno = 0

    def send(opcode: int, vb: int, engine: bytes, key: bytes = b"", value: bytes = b"", ack: bool = False,
             answer: bool = True) -> None:
        nonlocal seqno
        seqno += 1
        out.append(("s2c", event(opcode, seqno, vb, engine, key, value, ack)))
        if ack and answer:
            out.append(("c2s", build_frame(0x81, opcode, opaque=seqno)))

    for vb, items in zip(vbs, (20, 10)):
        send(OPAQUE, vb, struct.pack(">I", INITIAL_VBUCKET_STREAM), ack=True)
        for n in range(1, items + 1):
            doc = b'{"vb":%d,"n":%d}' % (vb, n)
            send(MUTATION, vb, struct.pack(">QB", n, 0), b"doc-%d-%03d" % (vb, n), doc, ack=n % ACK_INTERVAL == 0)
        send(OPAQUE, vb, struct.pack(">I", CLOSE_BACKFILL), ack=True)
    send(MUTATION, 0, struct.pack(">QB", 21, 0), b"doc-0-live", b'{"live":true}')
    send(DELETE, 1, struct.pack(">Q", 11), b"doc-1-001")
    out.append(("s2c", build_frame(0x80, 0x0A)))  # NOOP: keep-alive, opaque 0
    send(MUTATION, 1, struct.pack(">QB", 12, 0), b"doc-1-live", b'{"live":true}', ack=True, answer=False)
    return out


def main(out: Path = HERE) -> Path:
    path = out / "tap-backfill.pcap"
    synth.write_pcap(path, synth.tcp_conversation(conversation()), "ether", ts0=1763800000.0, dt=1e-3)
    return path


if __name__ == "__main__":
    print(main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE))
