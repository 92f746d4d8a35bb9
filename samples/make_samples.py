"""Write the sample inputs the README and docs/ use (run: python samples/make_samples.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from dcpinspect.families.mcbp.messages import dcp
from dcpinspect.families.mcbp.messages.build import build_frame, request, response
from dcpinspect.families.mcbp.messages.codecs.frameinfo import encode_frame_info
from dcpinspect.families.mcbp.messages.codecs.leb128 import encode_uleb128
from dcpinspect.families.mcbp.messages.codecs.snappy import deflate
from dcpinspect.families.mcbp.messages.codecs.sysevent import encode_sysevent_value

HERE = Path(__file__).resolve().parent


def dcp_session(vb: int = 5, opaque: int = 0x1000) -> list[bytes]:
    """A client's DCP conversation: HELO with collections, open, stream, a snapshot, end."""
    sid = encode_frame_info(2, (1).to_bytes(2, "big"))
    key = lambda cid, k: encode_uleb128(cid) + k  # noqa: E731
    doc = b'{"name":"dcpinspect","tags":["dcp","sample"]}'
    return [
        build_frame(0x80, 0x1F, key=b"dcpinspect-sample", value=bytes.fromhex("0006000a000b0012"), opaque=1),
        build_frame(0x81, 0x1F, value=bytes.fromhex("0006000a000b0012"), opaque=1),
        request(0x50, dcp.OPEN, key=b"dcpinspect:sample", flags=0x25, opaque=2),
        response(0x50, opaque=2),
        build_frame(0x80, 0x5E, key=b"enable_noop", value=b"true", opaque=3),
        response(0x5E, opaque=3),
        build_frame(0x80, 0x5E, key=b"enable_stream_id", value=b"true", opaque=4),
        response(0x5E, opaque=4),
        request(0x53, dcp.STREAM_REQ, vbucket=vb, opaque=opaque, start_seqno=0, end_seqno=2**64 - 1,
                vbucket_uuid=0, snap_start_seqno=0, snap_end_seqno=0, value=b'{"sid":1}'),
        response(0x53, opaque=opaque, value=dcp.FAILOVER_ENTRY.pack(vbucket_uuid=0x4F2A61D3C0DE, seqno=0)),
        build_frame(0x08, 0x56, framing=sid, vbucket=vb, opaque=opaque, extras=dcp.SNAPSHOT_V2_EXTRAS.pack(version=2),
                    value=dcp.SNAPSHOT_V22.pack(start_seqno=0, end_seqno=4, snapshot_type=0x06, max_visible_seqno=4,
                                                high_completed_seqno=0, purge_seqno=0, high_prepared_seqno=0)),
        build_frame(0x08, 0x5F, framing=sid, vbucket=vb, opaque=opaque, key=b"orders",
                    extras=dcp.SYSTEM_EVENT.pack(by_seqno=1, event=0, version=0),
                    value=encode_sysevent_value(0, 0, manifest_uid=1, scope_id=0, collection_id=8)),
        build_frame(0x08, 0x57, framing=sid, vbucket=vb, opaque=opaque, key=key(8, b"order::1001"), datatype=0x01,
                    cas=0x17E3A0B2C4D50000, extras=dcp.MUTATION.pack(by_seqno=2, rev_seqno=1), value=doc),
        build_frame(0x08, 0x57, framing=sid, vbucket=vb, opaque=opaque, key=key(8, b"order::1002"), datatype=0x03,
                    cas=0x17E3A0B2C4D60000, extras=dcp.MUTATION.pack(by_seqno=3, rev_seqno=1), value=deflate(b"[" + b",".join([doc] * 4) + b"]")),
        build_frame(0x08, 0x58, framing=sid, vbucket=vb, opaque=opaque, key=key(8, b"order::0999"),
                    cas=0x17E3A0B2C4D70000, extras=dcp.DELETION_V2.pack(by_seqno=4, rev_seqno=2, delete_time=1763800000)),
        build_frame(0x08, 0x55, framing=sid, vbucket=vb, opaque=opaque, extras=dcp.STREAM_END.pack(reason=0)),
    ]


def hexlines(frames: list[bytes]) -> str:
    return "".join(f.hex(" ") + "\n" for f in frames)


CLIENT_OPCODES = (0x1F, 0x50, 0x53, 0x5D, 0x5E)


def directions(frames: list[bytes]) -> list[tuple[str, bytes]]:
    """Who sent each frame: the consumer sends HELO, open, controls, stream requests, buffer acks."""
    out = []
    for f in frames:
        request = f[0] in (0x80, 0x08)
        from_client = (f[1] in CLIENT_OPCODES) == request
        out.append(("c2s" if from_client else "s2c", f))
    return out


def main(out: Path = HERE) -> None:
    from dcpinspect.transport import synth

    (out / "dcp-session.hex").write_text(hexlines(dcp_session()))
    conversation = directions(dcp_session())
    synth.write_pcap(out / "dcp-session.pcap", synth.tcp_conversation(conversation), "ether", ts0=1763800000.0)
    lossy = synth.tcp_conversation(conversation, mss=64, linktype="sll2", reorder=(5, 9), duplicate=(7,), drop=(20,))
    synth.write_pcap(out / "dcp-lossy.pcapng", lossy, "sll2", ts0=1763800000.0, fmt="pcapng")
    broken = dcp_session()[8:12]
    broken[2] = broken[2][:27] + bytes([0x01]) + broken[2][28:]  # marker version 0x01: removed v2.1
    (out / "dcp-broken.hex").write_text(hexlines(broken))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
