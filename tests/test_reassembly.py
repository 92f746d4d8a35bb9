"""TCP reassembly: ordering, loss, overlap, wrap-around, many flows, link types, bounds."""

from __future__ import annotations

import pickle
import random
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.layers.inet import TCP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrHopByHop
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import wrpcap

from dcpinspect.sources.capture import CaptureProblem, Record, read_records
from dcpinspect.transport import synth
from dcpinspect.transport.packet import Segment, parse_record
from dcpinspect.transport.reassembly import Data, End, Gap, Reassembler, Start
from dcpinspect.transport.synth import ACK, FIN, PSH, RST, SYN, TcpSeg

CLIENT = ("10.0.0.1", 50000)
SERVER = ("10.0.0.2", 11210)
FLOW = (*CLIENT, *SERVER)


def Eth(**kw):
    """Ethernet with fixed addresses (Scapy would otherwise resolve them on the network)."""
    return Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", **kw)


class Streams:
    """Events folded into per-(flow, direction) byte streams, checking that
    Data and Gap offsets are contiguous."""

    def __init__(self):
        self.data = defaultdict(bytearray)
        self.pos = defaultdict(int)
        self.gaps = defaultdict(list)
        self.events = []

    def add(self, events):
        for e in events:
            self.events.append(e)
            if isinstance(e, Data):
                key = (e.flow, e.direction)
                assert e.offset == self.pos[key], (e, self.pos[key])
                assert e.data
                self.data[key] += e.data
                self.pos[key] += len(e.data)
            elif isinstance(e, Start):  # a new connection on the same ports starts over
                self.pos[(e.flow, "c2s")] = self.pos[(e.flow, "s2c")] = 0
            elif isinstance(e, Gap):
                key = (e.flow, e.direction)
                assert e.offset == self.pos[key] and e.missing > 0, e
                self.gaps[key].append((e.offset, e.missing, e.reason))
                self.pos[key] += e.missing

    def of(self, kind):
        return [e for e in self.events if isinstance(e, kind)]


def frames_to_records(frames, linktype="ether"):
    lt = synth.LINKTYPES[linktype]
    return [Record(1000.0 + i * 1e-3, lt, f, len(f), i) for i, f in enumerate(frames)]


def reassemble(items, r=None, **kw):
    """Feed Records, Segments or frames; returns (Streams, Reassembler)."""
    r = r or Reassembler(**kw)
    out = Streams()
    for it in items:
        if isinstance(it, bytes):
            raise TypeError("convert frames with frames_to_records")
        seg = parse_record(it) if isinstance(it, Record) else it
        if isinstance(seg, Segment):
            out.add(r.feed(seg))
    out.add(r.flush())
    return out, r


def expected(messages):
    c2s = b"".join(m for d, m in messages if d == "c2s")
    s2c = b"".join(m for d, m in messages if d == "s2c")
    return c2s, s2c


def rnd_messages(rng, n=8, max_size=5000):
    return [(rng.choice(("c2s", "s2c")), rng.randbytes(rng.randint(1, max_size))) for _ in range(n)]


MESSAGES = [("c2s", b"GET " + bytes(range(256)) * 10), ("s2c", b"R" * 7000), ("c2s", b"x"),
            ("s2c", bytes(range(200)) * 30), ("c2s", b"tail" * 1000)]


def check_complete(out, messages=MESSAGES, flow=FLOW):
    c2s, s2c = expected(messages)
    assert bytes(out.data[(flow, "c2s")]) == c2s
    assert bytes(out.data[(flow, "s2c")]) == s2c
    assert not out.gaps[(flow, "c2s")] and not out.gaps[(flow, "s2c")]


def run_conv(messages=MESSAGES, linktype="ether", r=None, **kw):
    frames = synth.tcp_conversation(messages, CLIENT, SERVER, linktype=linktype, **kw)
    return reassemble(frames_to_records(frames, linktype), r)


# --- ordering, duplicates, overlap --------------------------------------------------------


def test_in_order():
    out, r = run_conv()
    check_complete(out)
    assert isinstance(out.events[0], Start) and out.events[0] == Start(FLOW, 1000.0, False)
    assert isinstance(out.events[-1], End) and out.events[-1].reason == "fin"
    st_ = r.stats(FLOW)
    assert st_.retransmissions == 0 and st_.gaps == 0 and st_.out_of_order == 0
    assert st_.bytes == sum(len(m) for _, m in MESSAGES)
    assert len(out.of(End)) == 1 and len(out.of(Start)) == 1


def test_in_order_data_is_the_payload_itself():
    frames = synth.tcp_conversation([("c2s", b"a" * 100)], CLIENT, SERVER)
    recs = frames_to_records(frames)
    r = Reassembler()
    for rec in recs:
        seg = parse_record(rec)
        for e in r.feed(seg):
            if isinstance(e, Data):
                assert e.data is seg.payload and e.index == rec.index


def test_reordered():
    out, r = run_conv(reorder={0, 3, 5, 9}, split=3)
    check_complete(out)
    assert r.stats(FLOW).out_of_order >= 1
    assert out.events[-1].reason == "fin"


def test_duplicated():
    plain, _ = run_conv(split=2)
    out, r = run_conv(split=2, duplicate={0, 1, 4, 7})
    check_complete(out)
    assert r.stats(FLOW).retransmissions == 4
    assert len(out.of(Data)) == len(plain.of(Data))


def _with_handshake_and_fin(data_segs, messages, isn):
    segs = synth.tcp_segments(messages, isn=isn, acks=False)
    head = [s for s in segs[:3]]
    tail = segs[-3:]
    return head + data_segs + tail


def test_overlapping_retransmission_with_different_split_points():
    isn = (123456, 654321)
    a = [s for s in synth.tcp_segments(MESSAGES, isn=isn, mss=1000) if s.payload]
    b = [s for s in synth.tcp_segments(MESSAGES, isn=isn, mss=700, split=3) if s.payload]
    rng = random.Random(3)
    mixed = [s for s in a if rng.random() < 0.6] + b
    rng.shuffle(mixed)
    segs = _with_handshake_and_fin(mixed, MESSAGES, isn)
    out, r = reassemble(frames_to_records(synth.frames(segs, CLIENT, SERVER)))
    check_complete(out)
    assert r.stats(FLOW).retransmissions > 0


def test_first_copy_wins_on_overlap():
    isn = 1000
    segs = [TcpSeg("c2s", isn, 0, SYN), TcpSeg("s2c", 5000, isn + 1, SYN | ACK),
            TcpSeg("c2s", isn + 1, 5001, ACK | PSH, b"A" * 100),
            TcpSeg("c2s", isn + 1 + 50, 5001, ACK | PSH, b"B" * 100),    # overlaps the tail of the first
            TcpSeg("c2s", isn + 1 + 300, 5001, ACK | PSH, b"D" * 50),    # out of order
            TcpSeg("c2s", isn + 1 + 280, 5001, ACK | PSH, b"E" * 40),    # overlaps the buffered one
            TcpSeg("c2s", isn + 1 + 120, 5001, ACK | PSH, b"C" * 200),   # fills the hole, overlaps both sides
            TcpSeg("c2s", isn + 1, 5001, ACK | PSH, b"Z" * 350)]         # old: nothing new
    out, r = reassemble(frames_to_records(synth.frames(segs, CLIENT, SERVER)))
    want = b"A" * 100 + b"B" * 50 + b"C" * 130 + b"E" * 20 + b"D" * 50
    assert bytes(out.data[(FLOW, "c2s")]) == want
    assert r.stats(FLOW).retransmissions == 4


def test_exact_duplicates_report_nothing():
    segs = synth.tcp_segments([("c2s", b"q" * 3000)], acks=False)
    data = [s for s in segs if s.payload]
    items = frames_to_records(synth.frames(segs[:3] + data + data + data, CLIENT, SERVER))
    r = Reassembler()
    evs = [e for it in items for e in r.feed(parse_record(it))]
    assert [type(e) for e in evs] == [Start] + [Data] * len(data)


# --- loss ----------------------------------------------------------------------------------


def test_dropped_segment_is_a_gap_and_later_data_is_delivered():
    segs = synth.tcp_segments(MESSAGES, isn=(77, 88))
    data = [s for s in segs if s.payload]
    lost = data[2]
    out, r = run_conv(drop={2}, isn=(77, 88))
    key = (FLOW, lost.direction)
    assert out.gaps[key] == [(lost.offset, len(lost.payload), "fin")]
    c2s, s2c = expected(MESSAGES)
    full = c2s if lost.direction == "c2s" else s2c
    got = bytes(out.data[key])
    assert got == full[:lost.offset] + full[lost.offset + len(lost.payload):]
    assert r.stats(FLOW).gaps == 1 and r.stats(FLOW).gap_bytes == len(lost.payload)
    assert out.events[-1] == End(FLOW, out.events[-1].ts, "fin")


def test_dropped_segment_with_small_buffer_is_an_overflow_gap():
    messages = [("s2c", bytes(range(256)) * 100)]
    segs = synth.tcp_segments(messages)
    lost = [s for s in segs if s.payload][1]
    r = Reassembler(max_buffer=5000)
    frames = synth.tcp_conversation(messages, CLIENT, SERVER, drop={1})
    out = Streams()
    for rec in frames_to_records(frames):
        out.add(r.feed(parse_record(rec)))
        assert r.buffered(FLOW) <= 5000
    gaps = out.gaps[(FLOW, "s2c")]
    assert gaps == [(lost.offset, len(lost.payload), "overflow")]
    gap_event = out.of(Gap)[0]
    assert out.events.index(gap_event) < out.events.index(out.of(End)[0])
    want = messages[0][1]
    assert bytes(out.data[(FLOW, "s2c")]) == want[:lost.offset] + want[lost.offset + len(lost.payload):]


def test_hole_before_fin_and_holes_at_eof():
    # last data segment lost: the hole runs up to the FIN
    segs = synth.tcp_segments([("c2s", b"k" * 4000)])
    last = [s for s in segs if s.payload][-1]
    out, _ = run_conv([("c2s", b"k" * 4000)], drop={2})
    assert out.gaps[(FLOW, "c2s")] == [(last.offset, len(last.payload), "fin")]
    # no FIN: holes are declared at flush, the flow ends with 'eof'
    out, _ = run_conv([("c2s", b"k" * 6000)], drop={1}, close=None)
    assert out.gaps[(FLOW, "c2s")] == [(1460, 1460, "eof")]
    assert bytes(out.data[(FLOW, "c2s")]) == b"k" * (6000 - 1460)
    assert out.events[-1].reason == "eof"


def test_snaplen_cut_segments_become_gaps(tmp_path):
    frames = synth.tcp_conversation(MESSAGES, CLIENT, SERVER, reorder={2})
    path = tmp_path / "snap.pcap"
    synth.write_pcap(path, frames, snaplen=200)
    out, r = reassemble(read_records(path))
    for d, full in zip(("c2s", "s2c"), expected(MESSAGES)):
        assert out.pos[(FLOW, d)] == len(full)  # Data and Gaps tile the whole stream
        assert out.gaps[(FLOW, d)] and all(reason == "snaplen" for _, _, reason in out.gaps[(FLOW, d)])
        for e in out.of(Data):
            if e.direction == d:
                assert e.data == full[e.offset:e.offset + len(e.data)]
    assert out.events[-1].reason == "fin"


# --- stream starts, ends and sequence numbers -----------------------------------------------


def test_midstream_start():
    segs = synth.tcp_segments(MESSAGES, handshake=False)
    data = [s for s in segs if s.payload]
    first = data[3]
    start = segs.index(first)
    out, r = reassemble(frames_to_records(synth.frames(segs[start:], CLIENT, SERVER)))
    assert out.events[0] == Start(FLOW, 1000.0, True)
    c2s, s2c = expected(MESSAGES)
    full = c2s if first.direction == "c2s" else s2c
    assert bytes(out.data[(FLOW, first.direction)]) == full[first.offset:]
    assert not out.gaps[(FLOW, first.direction)]


@pytest.mark.parametrize("isn", [(2**32 - 1, 2**32 - 2), (2**32 - 3000, 2**32 - 100), (2**32 - 1461, 0)])
def test_sequence_wrap(isn):
    out, _ = run_conv(isn=isn, split=2, reorder={1, 4})
    check_complete(out)
    out, _ = run_conv(isn=isn, drop={1})
    assert sum(len(g) for g in out.gaps.values()) == 1


def test_rst_ends_the_flow():
    out, _ = run_conv(close="rst")
    check_complete(out)
    assert out.events[-1].reason == "rst" and len(out.of(End)) == 1
    out, _ = run_conv([("c2s", b"r" * 5000)], close="rst", drop={1})
    assert out.gaps[(FLOW, "c2s")] == [(1460, 1460, "rst")]
    assert out.events[-1].reason == "rst"


def test_data_on_syn_and_half_close():
    isn = 500
    segs = [TcpSeg("c2s", isn, 0, SYN, b"early"), TcpSeg("s2c", 9000, isn + 6, SYN | ACK),
            TcpSeg("c2s", isn + 6, 9001, ACK | PSH, b"more"),
            TcpSeg("c2s", isn + 10, 9001, ACK | FIN),
            TcpSeg("s2c", 9001, isn + 11, ACK | PSH, b"answer after the client's FIN"),
            TcpSeg("s2c", 9030, isn + 11, ACK | FIN)]
    out, _ = reassemble(frames_to_records(synth.frames(segs, CLIENT, SERVER)))
    assert bytes(out.data[(FLOW, "c2s")]) == b"earlymore"
    assert bytes(out.data[(FLOW, "s2c")]) == b"answer after the client's FIN"
    assert [type(e) for e in out.events][-1] is End and out.events[-1].reason == "fin"


def test_pure_acks_produce_no_events():
    r = Reassembler()
    ack = TcpSeg("c2s", 10, 20, ACK)
    rec = frames_to_records(synth.frames([ack], CLIENT, SERVER))[0]
    assert r.feed(parse_record(rec)) == [] and r.flows() == []
    out, r = run_conv()
    acks = [i for i, rec in enumerate(frames_to_records(synth.tcp_conversation(MESSAGES, CLIENT, SERVER)))
            if not parse_record(rec).payload and not parse_record(rec).flags & (SYN | FIN | RST)]
    assert acks and not [e for e in out.events if getattr(e, "index", None) in acks]


def test_client_and_server_roles():
    def first_flow(seg):
        r = Reassembler(server_ports={11210, 9999})
        r.feed(parse_record(frames_to_records(synth.frames([seg], ("10.0.0.1", a), ("10.0.0.2", b)))[0]))
        return r.flows()[0]

    a, b = 1000, 2000  # neither is a server port; 'c2s' is 10.0.0.1:1000 -> 10.0.0.2:2000
    assert first_flow(TcpSeg("c2s", 1, 0, SYN)) == ("10.0.0.1", 1000, "10.0.0.2", 2000)
    assert first_flow(TcpSeg("s2c", 1, 0, SYN)) == ("10.0.0.2", 2000, "10.0.0.1", 1000)
    assert first_flow(TcpSeg("s2c", 1, 2, SYN | ACK)) == ("10.0.0.1", 1000, "10.0.0.2", 2000)
    assert first_flow(TcpSeg("c2s", 1, 2, ACK, b"x")) == ("10.0.0.2", 2000, "10.0.0.1", 1000)  # lower port serves
    a, b = 50000, 9999
    assert first_flow(TcpSeg("s2c", 1, 2, ACK, b"x")) == ("10.0.0.1", 50000, "10.0.0.2", 9999)
    a, b = 9999, 50000
    assert first_flow(TcpSeg("c2s", 1, 2, ACK, b"x")) == ("10.0.0.2", 50000, "10.0.0.1", 9999)


def test_port_reuse_and_late_segments():
    m1, m2 = [("c2s", b"first")], [("c2s", b"second"), ("s2c", b"reply")]
    f1 = synth.tcp_conversation(m1, CLIENT, SERVER, isn=(100, 200))
    f2 = synth.tcp_conversation(m2, CLIENT, SERVER, isn=(900000, 800000))
    late = f1[3]  # a retransmission of the first connection's data after it closed
    out, r = reassemble(frames_to_records(f1 + [late] + f2))
    assert [type(e).__name__ for e in out.events if not isinstance(e, (Data, Gap))] == [
        "Start", "End", "Start", "End"]
    assert [e.data for e in out.of(Data)] == [b"first", b"second", b"reply"]
    assert [e.offset for e in out.of(Data)] == [0, 0, 0]
    # a new SYN while the old connection is still open ends it with 'reuse'
    out, r = reassemble(frames_to_records(f1[:5] + f2))
    assert [e.reason for e in out.of(End)] == ["reuse", "fin"]


def test_udp_is_ignored():
    from scapy.layers.inet import IP, UDP
    seg = parse_record(Record(0.0, 1, bytes(Eth() / IP() / UDP(dport=11211) / Raw(b"x")), 50, 0))
    assert seg.proto == "udp" and Reassembler().feed(seg) == []


# --- many flows, bounds, state ----------------------------------------------------------------


def _interleaved_flows(n, rng, **kw):
    convs = {}
    for i in range(n):
        client = (f"10.1.{i // 250}.{i % 250 + 1}", 30000 + i)
        msgs = rnd_messages(rng, n=rng.randint(1, 6), max_size=4000)
        isn = (rng.getrandbits(32), rng.getrandbits(32))
        convs[(*client, *SERVER)] = (msgs, synth.tcp_conversation(msgs, client, SERVER, isn=isn, **kw))
    order = [k for k, (_, fr) in convs.items() for _ in fr]
    rng.shuffle(order)
    pos = dict.fromkeys(convs, 0)
    frames = []
    for k in order:
        frames.append(convs[k][1][pos[k]])
        pos[k] += 1
    return convs, frames


def test_200_concurrent_interleaved_flows(tmp_path):
    rng = random.Random(11)
    convs, frames = _interleaved_flows(200, rng)
    path = tmp_path / "many.pcapng"
    synth.write_pcap(path, frames, fmt="pcapng")
    out, r = reassemble(read_records(path))
    assert len(out.of(Start)) == 200 and len(out.of(End)) == 200
    assert all(e.reason == "fin" for e in out.of(End))
    for flow, (msgs, _) in convs.items():
        check_complete(out, msgs, flow)
    assert sorted(r.flows()) == sorted(convs)


def test_many_flows_with_loss_and_reordering():
    rng = random.Random(5)
    convs, frames = _interleaved_flows(60, rng, split=2, reorder={0, 2}, duplicate={1})
    out, _ = reassemble(frames_to_records(frames))
    for flow, (msgs, _) in convs.items():
        check_complete(out, msgs, flow)


def test_max_flows_evicts_least_recently_active():
    rng = random.Random(2)
    r = Reassembler(max_flows=10)
    out = Streams()
    for i in range(30):
        frames = synth.tcp_conversation(rnd_messages(rng, 2, 100), ("10.5.0.1", 40000 + i), SERVER,
                                        close=None)
        for rec in frames_to_records(frames):
            out.add(r.feed(parse_record(rec)))
        assert len(r.flows()) <= 10
    assert {e.reason for e in out.of(End)} == {"evicted"}
    assert len(out.of(End)) + len(r.flows()) == 30


def test_buffer_stays_bounded_when_a_hole_never_fills():
    """A sender whose first segment is lost keeps sending, and also sends far-ahead data
    with holes everywhere; buffered bytes never exceed max_buffer."""
    limit = 64 * 1024
    r = Reassembler(max_buffer=limit)
    isn = 2**32 - 50_000
    segs = [TcpSeg("c2s", isn, 0, SYN), TcpSeg("s2c", 7, isn + 1, SYN | ACK)]
    out = Streams()
    for seg in frames_to_records(synth.frames(segs, CLIENT, SERVER)):
        out.add(r.feed(parse_record(seg)))
    rng = random.Random(1)
    base = isn + 1 + 1000  # bytes 0..999 never arrive
    for k in range(4000):
        off = k * 1000 + (rng.randrange(0, 3) * 1_000_000 if k % 7 == 0 else 0)  # some far ahead
        if k % 3 == 1:
            continue  # and holes everywhere
        seg = TcpSeg("c2s", (base + off) % 2**32, 8, ACK, bytes([k % 256]) * 1000)
        rec = frames_to_records(synth.frames([seg], CLIENT, SERVER, checksum=False))[0]
        out.add(r.feed(parse_record(rec)))
        assert r.buffered(FLOW) <= limit
    assert out.of(Gap) and all(g.reason == "overflow" for g in out.of(Gap))
    out.add(r.flush())
    assert r.buffered(FLOW) == 0


def test_many_tiny_out_of_order_segments_are_bounded_too():
    r = Reassembler(max_buffer=64 * 1024)
    isn = 10
    out = Streams()
    for rec in frames_to_records(synth.frames([TcpSeg("c2s", isn, 0, SYN)], CLIENT, SERVER)):
        out.add(r.feed(parse_record(rec)))
    for k in range(1, 20000, 2):  # one-byte segments, every other byte missing
        seg = Segment(0.0, *CLIENT, *SERVER, "tcp", isn + 1 + k, 0, ACK, b"z", k, False, 1)
        out.add(r.feed(seg))
        c2s = r._flows[(*CLIENT, *SERVER)].c2s
        assert len(c2s.starts) <= r.max_chunks
    assert out.of(Gap)


def test_state_pickles_mid_stream():
    rng = random.Random(9)
    convs, frames = _interleaved_flows(20, rng, split=2, reorder={1})
    recs = frames_to_records(frames)
    whole, _ = reassemble(recs)
    r = Reassembler()
    half = Streams()
    for rec in recs[:len(recs) // 2]:
        half.add(r.feed(parse_record(rec)))
    r2 = pickle.loads(pickle.dumps(r))
    for rec in recs[len(recs) // 2:]:
        half.add(r2.feed(parse_record(rec)))
    half.add(r2.flush())
    assert half.events == whole.events


# --- link types and file formats, end to end ---------------------------------------------------


@pytest.mark.parametrize("linktype", ["ether", "vlan", "qinq", "sll", "sll2", "null", "loop", "raw", "raw4",
                                      "raw6", "ipv6"])
@pytest.mark.parametrize("suffix", ["pcap", "pcapng", "pcap.gz"])
def test_link_types_and_formats(tmp_path, linktype, suffix):
    frames = synth.tcp_conversation(MESSAGES, CLIENT, SERVER, linktype=linktype, reorder={2}, duplicate={4})
    path = tmp_path / f"conv.{suffix}"
    synth.write_pcap(path, frames, linktype, fmt="pcapng" if suffix == "pcapng" else "pcap")
    items = list(read_records(path))
    assert not [p for p in items if isinstance(p, CaptureProblem)]
    out, r = reassemble(items)
    flow = r.flows()[0]
    if linktype in ("raw6", "ipv6"):
        assert flow == ("fd00::a00:1", 50000, "fd00::a00:2", 11210)
    else:
        assert flow == FLOW
    check_complete(out, MESSAGES, flow)
    assert out.events[-1].reason == "fin"


def test_ipv6_with_extension_headers_written_by_scapy(tmp_path):
    segs = synth.tcp_segments(MESSAGES, isn=(2**32 - 10, 12345), mss=1400)
    segs = synth.impair(segs, reorder={1})
    c, s = ("2001:db8::10", 50000), ("2001:db8::20", 11210)
    pkts = []
    for i, t in enumerate(segs):
        (src, sport), (dst, dport) = (c, s) if t.direction == "c2s" else (s, c)
        ext = IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() if i % 2 else IPv6ExtHdrHopByHop()
        p = Eth() / IPv6(src=src, dst=dst) / ext / TCP(sport=sport, dport=dport, seq=t.seq, ack=t.ack,
                                                         flags=t.flags) / Raw(t.payload)
        p.time = 10 + i * 0.001
        pkts.append(p)
    path = tmp_path / "v6ext.pcap"
    wrpcap(str(path), pkts)
    out, r = reassemble(read_records(path))
    check_complete(out, MESSAGES, (*c, *s))


# --- property: any order and duplication of the data gives back the streams -------------------


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["c2s", "s2c"]), st.binary(min_size=1, max_size=3000)),
                min_size=1, max_size=6),
       st.integers(1, 1500), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), st.randoms(),
       st.booleans())
def test_any_order_and_duplication_reassembles(messages, mss, cisn, sisn, rnd, dup):
    segs = synth.tcp_segments(messages, mss=mss, isn=(cisn, sisn), acks=False)
    data = [s for s in segs[3:-3]]
    if dup:
        data += rnd.sample(data, k=len(data) // 2)
    rnd.shuffle(data)
    out, _ = reassemble(frames_to_records(synth.frames(segs[:3] + data + segs[-3:], CLIENT, SERVER,
                                                       checksum=False)))
    check_complete(out, messages)
    assert out.events[-1].reason == "fin"


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.integers(0, 2**32 - 1), st.integers(0, 0x1FF),
                          st.binary(max_size=300), st.booleans(), st.integers(-1, 400)), max_size=60),
       st.integers(0, 2**32 - 1))
def test_arbitrary_segments_never_break_the_invariants(items, base):
    """Any segments at all: no exception, offsets stay contiguous, buffers stay bounded."""
    r = Reassembler(max_buffer=1000)
    out = Streams()
    ports = [(50000, 11210), (40000, 11211)]
    for i, (second_flow, c2s, seq, flags, payload, truncated, plen) in enumerate(items):
        (cp, sp) = ports[second_flow]
        src, dst = (("10.0.0.1", cp), ("10.0.0.2", sp)) if c2s else (("10.0.0.2", sp), ("10.0.0.1", cp))
        seq = (base + seq % 5000) % 2**32 if i % 5 else seq
        seg = Segment(float(i), src[0], src[1], dst[0], dst[1], "tcp", seq, 0, flags, payload, i,
                      truncated, plen if truncated else len(payload))
        out.add(r.feed(seg))
        for flow in r.flows():
            assert r.buffered(flow) <= 2000
    out.add(r.flush())
    starts = out.of(Start)
    assert len(out.of(End)) == len(starts)
