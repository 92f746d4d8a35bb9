"""The jsonl fast lane (dcpinspect/families/mcbp/_lane.c, families/mcbp/lane.py) prints exactly what the
frame-by-frame path prints, and takes frames only where that path would find nothing.

Every comparison decodes the same capture twice in this process, with and without the
lane, and compares the jsonl text byte for byte and the totals. The captures are real TCP
conversations written by ``dcpgen``/``synth``: hand-made streams for each condition the
lane must decline, hypothesis-made streams that break them at random, and the samples.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import cramjam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dcpgen
from dcpgen import DISK, MAY_DUPLICATE, MEMORY, Dcp
from dcpinspect.families.mcbp import lane as lane_module
from dcpinspect.engines.connections import CaptureDecoder
from dcpinspect.engines.records import keyed_items
from dcpinspect.sessions.captured import Lines
from dcpinspect.engines.sinks import run_sink
from dcpinspect.engines.sinks import JsonlSink
from dcpinspect.families.mcbp.messages import dcp as L
from dcpinspect.families.mcbp.messages.codecs.leb128 import encode_uleb128
from dcpinspect.families import VALUES
from dcpinspect.families.mcbp.messages.values import json_text_ok
from dcpinspect.sources.capture import read_records
from dcpinspect.transport.packet import parse_record

pytestmark = pytest.mark.skipif(not lane_module.available(), reason="built without the C lane")

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def run(path: Path, lane: bool, **kw) -> tuple[str, tuple, Counter]:
    """(jsonl text, (frames, severities), frames the lane took by opcode name)."""
    sink = JsonlSink()
    taken: Counter = Counter()

    def counted(items):
        for key, item in items:
            if type(item) is Lines:
                taken.update(json.loads(line)["opcode_name"] for line in item.text.splitlines())
            yield key, item

    keyed = counted(keyed_items(read_records(path), detail=VALUES, lane=lane, **kw))
    text = b"".join(line for _, line in run_sink(sink, keyed)).decode("ascii")
    tally = sink.result()
    return text, (tally.frames, sorted(tally.severities.items())), taken


def same(path: Path, **kw) -> Counter:
    """Assert both ways print the same; return the frames the lane took, by opcode name."""
    fast, fast_totals, taken = run(path, True, **kw)
    slow, slow_totals, none = run(path, False, **kw)
    assert not none
    if fast != slow:
        for i, (a, b) in enumerate(zip(fast.split("\n"), slow.split("\n"))):
            assert a == b, f"line {i + 1} differs"
    assert fast == slow
    assert fast_totals == slow_totals
    return taken


def docs(taken: Counter) -> int:
    return taken["DCP_MUTATION"] + taken["DCP_DELETION"]


def marks(taken: Counter) -> int:
    return taken["DCP_SNAPSHOT_MARKER"]


def capture(tmp_path: Path, dcp: Dcp, name: str = "c.pcap", **kw) -> Path:
    return dcp.pcap(tmp_path / name, **kw)


# -- streams the lane takes whole ------------------------------------------------------

@pytest.mark.parametrize("collections", [True, False])
@pytest.mark.parametrize("sid", [None, 7])
def test_plain_stream_taken_and_identical(tmp_path, collections, sid):
    d = Dcp(collections=collections).handshake(stream_ids=sid is not None)
    p = d.stream(5, sid=sid)
    for _ in range(3):
        p.snapshot(40, kind="mutation")
        p.snapshot(5, kind="deletion")
    taken = same(capture(tmp_path, d))
    assert (docs(taken), marks(taken)) == (3 * 45, 6)  # every item and marker


@pytest.mark.parametrize("version", ["v1", "2.0", "2.2"])
def test_snapshots_in_one_packet_leave_the_same_state(tmp_path, version):
    """Short snapshots back to back, one write: runs cross several markers, and leave the
    stream's snapshot, the one before it and their key sets as the rules do."""
    d = Dcp().handshake(("max_marker_version", "2.2"))
    p = d.stream(4)
    for n in (1, 2, 3, 1, 2):
        p.snapshot(n, version=version, flags=DISK if n == 2 else MEMORY)
    p.marker(p.seqno + 1, p.seqno + 5, version=version)  # ends the run, unfinished
    p.mutation()
    path = capture(tmp_path, d)
    taken = same(path)
    assert (docs(taken), marks(taken)) == (10, 6)
    assert final_state(path, True) == final_state(path, False)


def test_snappy_json_and_text_values(tmp_path):
    d = Dcp().handshake()
    p = d.stream(9)
    p.marker(1, 6)
    doc = json.dumps({"name": "x" * 300, "n": [1, 2.5, -3e2, True, None]}).encode()
    p.mutation(value=doc, datatype=0x01)
    p.mutation(value=bytes(cramjam.snappy.compress_raw(doc)), datatype=0x03)
    p.mutation(value=b"plain text\twith tab", datatype=0x00)
    p.mutation(value=bytes(cramjam.snappy.compress_raw(b"")), datatype=0x02)
    p.mutation(value=b"\x01\x02binary", datatype=0x00)  # ASCII, not printable: value_hex
    p.mutation(value=b"", datatype=0x01)
    assert (docs(same(capture(tmp_path, d))), marks(same(capture(tmp_path, d)))) == (6, 1)


def test_long_value_cut_like_python(tmp_path):
    d = Dcp().handshake()
    p = d.stream(9)
    p.marker(1, 2)
    p.mutation(value=json.dumps({"k": "v" * 10_000}).encode())
    p.mutation(value=b"t" * 4096, datatype=0)
    assert docs(same(capture(tmp_path, d))) == 2
    assert docs(same(capture(tmp_path, d, "small.pcap"), value_text=10)) == 2


# -- snapshot markers: read in C, judged by the rules ----------------------------------------

@pytest.mark.parametrize("version", ["v1", "2.0", "2.2"])
@pytest.mark.parametrize("sid", [None, 3])
def test_markers_of_every_version_identical(tmp_path, version, sid):
    d = Dcp().handshake(("max_marker_version", "2.2"), stream_ids=sid is not None)
    p = d.stream(6, sid=sid)
    p.snapshot(3, version=version, flags=MEMORY)
    p.snapshot(3, version=version, flags=DISK | 0x04, hcs=2, purge=1, hps=0)
    p.snapshot(2, version=version, flags=MEMORY | 0x08 | 0x10)
    taken = same(capture(tmp_path, d))
    assert (docs(taken), marks(taken)) == (8, 3)


BAD_MARKERS = {
    "end before the previous end": lambda p: p.marker(10, 5),
    "overlapping the previous snapshot": lambda p: p.marker(2, 9),
    "unknown flag bit": lambda p: p.marker(4, 6, flags=MEMORY | 0x4000),
    "v2.2 without its control": lambda p: p.marker(4, 6, version="2.2"),
    "v2.1, removed": lambda p: p.send(0x56, extras=L.SNAPSHOT_V2_EXTRAS.pack(version=1),
                                      value=L.SNAPSHOT_V21.pack(start_seqno=4, end_seqno=6)),
    "unknown version": lambda p: p.send(0x56, extras=L.SNAPSHOT_V2_EXTRAS.pack(version=7),
                                        value=L.SNAPSHOT_V20.pack(start_seqno=4, end_seqno=6)),
    "value of the wrong size": lambda p: p.send(0x56, extras=L.SNAPSHOT_V2_EXTRAS.pack(version=0),
                                                value=L.SNAPSHOT_V20.pack(start_seqno=4, end_seqno=6) + b"\0"),
    "v1 with a value": lambda p: p.send(0x56, extras=L.SNAPSHOT_V1.pack(start_seqno=4, end_seqno=6), value=b"x"),
    "with a key": lambda p: p.send(0x56, extras=L.SNAPSHOT_V1.pack(start_seqno=4, end_seqno=6), key=b"k"),
    "with a datatype": lambda p: p.send(0x56, extras=L.SNAPSHOT_V1.pack(start_seqno=4, end_seqno=6), datatype=1),
    "mvs above the end": lambda p: p.marker(4, 6, version="2.0", mvs=9),
    "inside an unfinished snapshot": lambda p: (p.marker(4, 9), p.mutation(seqno=4), p.marker(10, 12)),
}


@pytest.mark.parametrize("name", sorted(BAD_MARKERS))
def test_odd_markers_identical(tmp_path, name):
    d = Dcp().handshake()
    p = d.stream(6)
    p.snapshot(3)
    BAD_MARKERS[name](p)
    p.mutation(seqno=20)
    text = run(capture(tmp_path, d), True)[0]
    assert docs(same(capture(tmp_path, d))) >= 3
    assert '"findings":[{' in text or name in ("with a datatype",)


# -- other frames of fixed fields: read in C, judged by the rules -------------------------

def test_fixed_frames_identical_and_taken(tmp_path):
    d = Dcp().handshake(buffer=4000)  # controls answered with empty Success responses
    p = d.stream(8)
    p.snapshot(20)
    d.noop()
    d.buffer_ack(100)
    p.set_vbucket_state(1)
    p.set_vbucket_state(9)  # not a state: a finding
    p.end(0)
    q = d.stream(9)
    q.snapshot(2)
    q.end(99)  # an unknown reason: a finding
    d.client(dcpgen.build_frame(0x81, 0x5E, opaque=0x99))  # a Success nobody asked for
    d.server(dcpgen.build_frame(0x81, 0x53, opaque=0x98))  # STREAM_REQ Success without a failover log
    d.server(dcpgen.build_frame(0x81, 0x5E, status=0x04, opaque=0x97))  # an error: the ordinary way
    d.server(dcpgen.build_frame(0x81, 0x5E, opaque=0x96, value=b"x"))  # a body: the ordinary way
    text = run(capture(tmp_path, d), True)[0]
    assert "vbucket-state" in text and "stream-end-reason" in text
    taken = same(capture(tmp_path, d))
    for name in ("DCP_CONTROL", "DCP_NOOP", "DCP_BUFFER_ACKNOWLEDGEMENT", "DCP_STREAM_END", "DCP_OPEN",
                 "DCP_SET_VBUCKET_STATE", "DCP_STREAM_REQ"):
        assert taken[name] >= 1, name


def test_lists_taken_and_identical(tmp_path):
    """HELO's feature codes both ways and failover logs: written in C, judged by the rules."""
    d = Dcp().handshake()
    d.client(dcpgen.build_frame(0x80, 0x1F, key=b"agent", value=bytes.fromhex("0006000a000b0012"), opaque=7))
    d.server(dcpgen.build_frame(0x81, 0x1F, value=bytes.fromhex("0006000a"), opaque=7))
    d.client(dcpgen.build_frame(0x80, 0x1F, key=b"agent", value=bytes.fromhex("0006abcd"), opaque=8))  # unnamed
    d.server(dcpgen.build_frame(0x81, 0x1F, value=b"\x00\x06\x00", opaque=8))  # odd length: a finding
    p = d.stream(5, failover=((0xFEEDFACE, 0), (0xCAFE, 40), (1, 2)))
    p.snapshot(3)
    q = d.stream(6, failover=())  # no log: an empty answer
    q.snapshot(1)
    d.server(dcpgen.build_frame(0x81, 0x54, value=bytes(32), opaque=9))
    d.server(dcpgen.build_frame(0x81, 0x53, key=b"k", value=bytes(16), opaque=10))  # a key: a finding
    text = run(capture(tmp_path, d), True)[0]
    assert '"failover_log":[{"vbucket_uuid":4277009102,"seqno":0},{"vbucket_uuid":51966,"seqno":40}' in text
    assert '"features":["Xattr","Snappy","JSON","Collections"]' in text
    taken = same(capture(tmp_path, d))
    assert taken["HELO"] >= 3 and taken["DCP_STREAM_REQ"] >= 4 and taken["DCP_GET_FAILOVER_LOG"] == 1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.binary(max_size=12), st.binary(max_size=12) | st.text(max_size=5000).map(str.encode),
                          st.booleans()), min_size=1, max_size=6))
def test_controls_identical(tmp_path, controls):
    """DCP_CONTROL requests (a text key and a text value) with any bytes, as negotiation sees them."""
    d = Dcp().handshake()
    for key, value, flex in controls:
        framing = dcpgen.sid_frame(4) if flex else b""
        d.client(dcpgen.build_frame(0x08 if flex else 0x80, 0x5E, framing=framing, key=key, value=value))
        d.server(dcpgen.build_frame(0x81, 0x5E))
    d.stream(3).snapshot(2)
    same(capture(tmp_path, d))


def test_controls_taken(tmp_path):
    d = Dcp().handshake(("a\tkey", "x" * 5000), ("k", "\x01binary"), ("", ""))
    assert same(capture(tmp_path, d))["DCP_CONTROL"] == 2 * 5 - 1  # the empty one has findings


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from([0x80, 0x08, 0x81, 0x18]),
                          st.sampled_from([0x50, 0x55, 0x56, 0x5B, 0x5C, 0x5D, 0x5E, 0x1F, 0x53, 0x54, 0x99]),
                          st.sampled_from([0, 1, 4, 8, 20, 48]), st.binary(max_size=3),
                          st.binary(max_size=4) | st.sampled_from([bytes(16), bytes(range(32)), bytes(17),
                                                                   bytes.fromhex("0006000700ffff12")]),
                          st.integers(0, 3)),
                min_size=1, max_size=12))
def test_random_fixed_frames_identical(tmp_path, frames):
    d = Dcp().handshake()
    p = d.stream(2, sid=None)
    for magic, op, extras, key, value, status in frames:
        framing = dcpgen.sid_frame(5) if magic in (0x08, 0x18) else b""
        d.server(dcpgen.build_frame(magic, op, framing=framing, extras=bytes(range(extras)), key=key, value=value,
                                    status=status if magic & 1 else 0, opaque=p.opaque, vbucket=2))
    same(capture(tmp_path, d))


# -- what the lane must leave to the frame-by-frame path ---------------------------------

def _declined(tmp_path, build) -> int:
    d = Dcp().handshake()
    p = d.stream(3)
    p.marker(1, 100)
    p.mutation()  # taken
    build(d, p)
    p.mutation(seqno=99)  # taken again after the odd one (if the state allows)
    return docs(same(capture(tmp_path, d)))


BAD_ITEMS = {
    "seqno regression": lambda d, p: p.mutation(seqno=1),
    "seqno outside snapshot": lambda d, p: p.mutation(seqno=500),
    "seqno zero": lambda d, p: p.mutation(seqno=0),
    "duplicate key": lambda d, p: (p.mutation(key="same", seqno=10), p.mutation(key="same", seqno=11)),
    "nmeta": lambda d, p: p.send(0x57, extras=L.MUTATION.pack(by_seqno=20, rev_seqno=1, nmeta=2),
                                 key=p.key(), value=b"{}", datatype=1),
    "invalid json": lambda d, p: p.mutation(value=b'{"a":', seqno=21),
    "nan is not json": lambda d, p: p.mutation(value=b"NaN", seqno=22),
    "bad snappy": lambda d, p: p.mutation(value=b"\x05\x00ab", datatype=0x03, seqno=23),
    "xattr": lambda d, p: p.mutation(value=b"\x00\x00\x00\x00{}", datatype=0x05, seqno=24),
    "non-ascii value": lambda d, p: p.mutation(value='{"a":"é"}'.encode(), seqno=25),
    "non-ascii key": lambda d, p: p.mutation(key="clé", seqno=26),
    "control chars in key": lambda d, p: p.mutation(key="a\x01b\x7f\"\\", seqno=27),
    "reserved collection": lambda d, p: p.mutation(seqno=28, cid=3),
    "empty logical key": lambda d, p: p.send(0x57, extras=L.MUTATION.pack(by_seqno=29, rev_seqno=1),
                                             key=encode_uleb128(8), value=b"{}", datatype=1),
    "key too long": lambda d, p: p.mutation(key="k" * 247, seqno=30),
    "deletion v1 when v2 negotiated": lambda d, p: p.deletion(seqno=31, v2=False),
    "deletion with json datatype": lambda d, p: p.send(
        0x58, extras=L.DELETION_V2.pack(by_seqno=32, rev_seqno=1), key=p.key(), datatype=1),
    "wrong vbucket": lambda d, p: d.server(dcpgen.build_frame(
        0x80, 0x57, vbucket=4, opaque=p.opaque, extras=L.MUTATION.pack(by_seqno=33, rev_seqno=1), key=p.key())),
    "unknown opaque": lambda d, p: d.server(dcpgen.build_frame(
        0x80, 0x57, vbucket=3, opaque=0x7777, extras=L.MUTATION.pack(by_seqno=34, rev_seqno=1), key=p.key())),
    "sid on a stream without one": lambda d, p: p.send(
        0x57, extras=L.MUTATION.pack(by_seqno=35, rev_seqno=1), key=p.key(), sid=9),
    "snapshot end reached": lambda d, p: (p.mutation(seqno=100), p.mutation(seqno=101)),
    "big integer": lambda d, p: p.mutation(value=b"1" * 5000, seqno=36),
    "deep nesting": lambda d, p: p.mutation(value=b"[" * 100 + b"]" * 100, seqno=37),
}


@pytest.mark.parametrize("name", sorted(BAD_ITEMS))
def test_odd_items_identical(tmp_path, name):
    assert _declined(tmp_path, BAD_ITEMS[name]) >= 1


def test_flow_control_overrun_identical(tmp_path):
    d = Dcp().handshake(buffer=2000)
    d.auto_ack = False
    p = d.stream(3)
    p.snapshot(50)  # runs past the buffer without an ack: one buffer-overrun finding
    d.buffer_ack()
    p.snapshot(50)  # and past it again after an ack brought it below: a second
    text, _, taken = run(capture(tmp_path, d), True)
    assert text.count('"rule":"buffer-overrun"') == 2
    assert docs(same(capture(tmp_path, d))) == 98  # all but the two frames that found an overrun


def test_may_duplicate_snapshot_keeps_no_keys(tmp_path):
    d = Dcp().handshake()
    p = d.stream(3)
    p.marker(1, 4, flags=MEMORY | MAY_DUPLICATE)
    for s in range(1, 5):
        p.mutation(key="same", seqno=s)
    assert docs(same(capture(tmp_path, d))) == 4


def test_stream_state_after_a_run_is_the_same(tmp_path):
    """What the lane leaves behind (last seqno, counts, snapshot completion, the request an
    error answer is paired with) shows in what follows: an error reply to the last item."""
    d = Dcp().handshake()
    p = d.stream(3, end=30)
    p.snapshot(10, flags=DISK)
    p.snapshot(20)
    d.client(dcpgen.build_frame(0x81, 0x57, status=0x04, opaque=p.opaque))
    p.mutation(seqno=31)  # after the snapshot holding the end seqno
    p.end()
    d.noop(reply=False)
    text = run(capture(tmp_path, d), True)[0]
    assert "answered-error" in text and "seqno-outside-snapshot" in text
    assert docs(same(capture(tmp_path, d))) == 30


def test_joined_mid_stream_and_several_streams(tmp_path):
    d = Dcp().handshake()
    streams = [d.stream(vb) for vb in (1, 2, 3)]
    for round_ in range(4):
        for p in streams:
            p.snapshot(7, kind="deletion" if round_ == 2 else "mutation")
    path = capture(tmp_path, d)
    taken = same(path)
    assert (docs(taken), marks(taken)) == (4 * 3 * 7, 4 * 3)
    late = dcpgen.write_capture(d.frames[len(d.frames) // 3:], tmp_path / "late.pcap", handshake=False)
    assert docs(same(late)) > 0  # streams adopted from their first message, then taken


@pytest.mark.parametrize("name", ["dcp-session.pcap", "dcp-lossy.pcapng", "memcached-binary.pcap"])
def test_samples_identical(name):
    same(SAMPLES / name)


def test_busy_capture_interleaved_identical(tmp_path):
    conns = [dcpgen.busy_collections_connection(400, seed=s) for s in range(3)]
    path = tmp_path / "busy.pcap"
    from dcpinspect.transport import synth

    packets = []
    for n, c in enumerate(conns):
        msgs = dcpgen.coalesce(c.frames, limit=1400)
        packets.append(synth.tcp_conversation(msgs, client=(f"10.0.0.{n + 1}", 40000 + n), handshake=True,
                                              close="fin", acks=False))
    merged = [pkt for group in zip(*packets) for pkt in group]
    synth.write_pcap(path, merged, "ether", dt=1e-5)
    assert docs(same(path)) > 0


# -- random streams ----------------------------------------------------------------------

_KEYS = st.one_of(st.sampled_from(["k1", "k2", "doc::1"]), st.text(max_size=12),
                  st.binary(max_size=8).map(lambda b: b.decode("latin-1")))
_VALUES = st.one_of(
    st.sampled_from([b'{"v":1}', b"[]", b" 1 ", b'"s"', b"{", b"nul", b"-", b"1.", b"1e", b'{"a":1,}', b"\t{}\n"]),
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                 lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
                 max_leaves=6).map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=20),
)


@st.composite
def streams(draw):
    d = Dcp(collections=draw(st.booleans()), delete_times=draw(st.booleans()))
    controls = [("max_marker_version", "2.2")] if draw(st.booleans()) else []
    d.handshake(*controls, stream_ids=draw(st.booleans()), buffer=draw(st.sampled_from([0, 0, 3000])))
    sid = 4 if d.stream_ids else None
    p = d.stream(draw(st.integers(0, 3)), sid=sid, end=draw(st.sampled_from([2**64 - 1, 2**64 - 1, 20, 40])))
    seqno = 0
    for _ in range(draw(st.integers(1, 6))):
        start = max(0, seqno + draw(st.integers(-1, 2)))
        end = max(0, start + draw(st.integers(-1, 12)))
        flags = draw(st.sampled_from([MEMORY, MEMORY, DISK, DISK | 0x04, MEMORY | 0x04, MEMORY | MAY_DUPLICATE,
                                      MEMORY | 0x08, DISK | 0x10, 0x4001, 0]))
        p.marker(start, end, flags=flags, version=draw(st.sampled_from(["v1", "2.0", "2.2"])),
                 mvs=draw(st.sampled_from([None, None, end + 1, max(0, end - 1)])), hcs=draw(st.sampled_from([0, 0, 1])),
                 hps=draw(st.sampled_from([0, 0, 1, end + 1])))
        if draw(st.integers(0, 5)) == 0:
            p.mutation(seqno=end)  # the snapshot is complete at once
        for _ in range(draw(st.integers(0, 14))):
            seqno = max(0, seqno + draw(st.sampled_from([1, 1, 1, 0, -1, 2])))
            key = draw(_KEYS)
            cid = draw(st.sampled_from([0, 0, 8, 200, 2]))
            if draw(st.integers(0, 4)) == 0:
                p.deletion(key=key, seqno=max(seqno, 0), cid=cid, v2=draw(st.booleans()))
                continue
            value = draw(_VALUES)
            datatype = draw(st.sampled_from([0, 1, 1, 2, 3, 5]))
            if datatype & 2:
                value = bytes(cramjam.snappy.compress_raw(value)) if draw(st.booleans()) else value
            p.mutation(key=key, seqno=max(seqno, 0), value=value, datatype=datatype, cid=cid)
    return d


def final_state(path: Path, lane: bool) -> tuple:
    """Every stream of the capture's one connection as the validator left it, and what
    answers would be judged against (the lane's runs and the frame-by-frame path must leave
    the same)."""
    dec = CaptureDecoder(detail=VALUES, lane=lane)
    conversations = []
    for rec in read_records(path):
        seg = parse_record(rec)
        dec.feed(seg)
        conversations += [fd.session for fd in dec.flows.values() if fd.session not in conversations]
    dec.finish()
    (conversation,) = conversations
    st = conversation.validator.state
    pending = {k: (p.index, p.ts, p.direction, p.msg.opcode, p.msg.name, p.msg.vbucket, p.msg.stream_id,
                   p.msg.values, p.msg.fields) for k, p in st.pending.items()}
    return (st.all_streams, pending, st.unacked, st.sent_total, st.acked_total, conversation.validator.frames)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(streams())
def test_random_streams_identical(tmp_path, d):
    path = capture(tmp_path, d, coalesced=random.Random(len(d.frames)).random() < 0.8)
    same(path)
    assert final_state(path, True) == final_state(path, False)


# -- the C JSON check agrees with the Python one -------------------------------------------

_JSONISH = st.text(alphabet=st.sampled_from(list('{}[]:,"\\ \t\n-+.eE0123456789tfrunlasNIy\x01u/')), max_size=24)


@settings(max_examples=3000, deadline=None)
@given(st.one_of(_JSONISH, st.tuples(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
    max_leaves=8), st.sampled_from([None, 1])).map(lambda t: json.dumps(t[0], indent=t[1]))))
def test_json_check_agrees(text):
    raw = text.encode("ascii", "backslashreplace")
    got = lane_module._lane.valid_json(raw)
    if got != -1:
        assert bool(got) == json_text_ok(raw.decode("ascii")), raw


# -- bytes from anywhere -------------------------------------------------------------------

_CONNECTION, _RULES, _ = lane_module.compile_rules() if lane_module.available() else ((), None, False)


def scan_params(opaque: int, vbucket: int, collections: int, keys: set | None, snap: tuple = (0, 1 << 63),
                last: int = 0, complete: bool = False) -> tuple:
    """What Lane._run passes to scan, for an open stream of a connection that negotiated
    nothing, in snapshot ``snap`` at seqno ``last``."""
    facts = tuple(int(f.name == "has_stream") for f in _CONNECTION)
    return lane_module.Run(opaque, vbucket, -1, collections, 4096, 1 << 20, last, *snap, 0, complete, keys, 10, 0, 0,
                           2**64 - 1, '{"kind":"frame",', facts, lane_module._MARKER_SHAPES,
                           lane_module._MARKER_FIELDS)


@settings(max_examples=2000, deadline=None)
@given(st.binary(max_size=300), st.integers(-5, 320), st.integers(-5, 320), st.booleans(), st.integers(-1, 1))
def test_scan_and_cut_take_any_bytes(data, pos, stop, keys, collections):
    """Garbage in: no crash, no read outside the buffer (ASan-free, but positions are checked)."""
    c = lane_module._lane
    try:
        end, count = c.cut(data, pos, len(data), b"\x80\x81\x08\x18\x82\x83", 30 << 20)
    except ValueError:
        assert pos < 0 or pos > len(data)
    else:
        assert pos <= end <= len(data) and count >= 0
    params = scan_params(0, 0, collections, set() if keys else None, complete=keys)
    try:
        out = c.scan(data, pos, stop, 0, params, lane_module._PLANS, _RULES, lane_module._MAGIC_NAMES)
    except ValueError:
        assert pos < 0 or pos > min(stop, len(data))
    else:
        assert pos <= out[0] <= len(data)
        assert out[6].count(b"\n") == out[1] + out[2] + out[10]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), max_size=6), st.integers(0, 3),
       st.sampled_from([b'{"a":[1,2]}', b"text", b""]), st.booleans(), st.sampled_from(["v1", "2.0", "2.2"]))
def test_scan_takes_mutated_frames(flips, datatype, value, snappy, version):
    """A real marker and item frame with bytes changed anywhere: scan stays inside them and
    whatever it takes carries exactly one line a frame."""
    if snappy and value:
        value, datatype = bytes(cramjam.snappy.compress_raw(value)), datatype | 2
    d = Dcp()
    d.stream(3).marker(11, 20, version=version)
    marker = d.frames[-1][1]
    marker = marker[:12] + (9).to_bytes(4, "big") + marker[16:]  # the stream's opaque
    item = dcpgen.build_frame(0x80, 0x57, vbucket=3, opaque=9, datatype=datatype, key=b"\x08doc",
                              extras=L.MUTATION.pack(by_seqno=15, rev_seqno=1), value=value)
    frame = bytearray(marker + item)
    for at, byte in flips:
        if at < len(frame):
            frame[at] = byte
    data = bytes(frame) * 2
    out = lane_module._lane.scan(data, 0, len(data), 0, scan_params(9, 3, -1, set(), (1, 10), 10, True),
                                 lane_module._PLANS, _RULES, lane_module._MAGIC_NAMES)
    end, mutations, deletions, text, markers = out[0], out[1], out[2], out[6], out[10]
    assert 0 <= end <= len(data) and text.count(b"\n") == mutations + deletions + markers <= 4
    assert markers <= 2 and (markers == 0) == (out[13] is None)
    if not flips and datatype == 0:
        assert (markers, mutations) == (1, 1)  # the second marker is no later than the first
    for line in text.splitlines():
        json.loads(line)


@pytest.mark.parametrize("cap", [0, 2, 3, 1000])
def test_the_duplicate_key_threshold_moves_both_paths(tmp_path, monkeypatch, cap):
    """The keys a snapshot remembers for duplicate-key are the rule's threshold
    (sessions.streams.MAX_SNAPSHOT_KEYS), read where it is applied: changed, the lane and the
    rule still print the same, and where the repeat is found moves with it."""
    from dcpinspect.families.mcbp.sessions import streams

    monkeypatch.setattr(streams, "MAX_SNAPSHOT_KEYS", cap)
    d = Dcp().handshake()
    p = d.stream(3)
    p.marker(1, 5, flags=MEMORY)
    for seqno, key in enumerate(["a", "b", "c", "d", "c"], 1):  # "c" again, third key remembered
        p.mutation(key=key, seqno=seqno)
    path = capture(tmp_path, d)
    same(path)
    text, _, taken = run(path, True)
    assert ("duplicate-key" in text) == (cap >= 3)
    assert docs(taken) >= 4  # the lane took the run either way


def test_deletion_extras_follow_the_open_flag():
    """The deletion-version rule and the lane ask one function what a deletion's extras
    must be: the v2 layout's size once DCP_OPEN set IncludeDeleteTimes, v1's otherwise."""
    from dcpinspect.families.mcbp.rules.stream import deletion_extras

    bit = next(b for b, name in L.OPEN_FLAGS.items() if name == "IncludeDeleteTimes")
    assert [deletion_extras(f) for f in (0, bit, bit | 1)] == [L.DELETION_V1.size, L.DELETION_V2.size,
                                                                 L.DELETION_V2.size]
