"""Link / IP / TCP-UDP header parsing, checked against frames built by Scapy."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import (IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop,
                                IPv6ExtHdrRouting)
from scapy.layers.l2 import ARP, CookedLinux, CookedLinuxV2, Dot1AD, Dot1Q, Ether, Loopback
from scapy.packet import Raw

from dcpinspect.sources.capture import Record
from dcpinspect.transport import synth
from dcpinspect.transport.packet import ACK, FIN, PSH, SYN, Segment, Skip, parse_record

TCP4 = IP(src="192.168.1.10", dst="192.168.1.20") / TCP(sport=51000, dport=11210, seq=1000, ack=2000,
                                                         flags="PA") / Raw(b"hello dcp")
TCP6 = IPv6(src="2001:db8::1", dst="2001:db8::2") / TCP(sport=51000, dport=11210, seq=7, ack=9,
                                                          flags="A") / Raw(b"v6 payload")


def Eth(**kw):
    """Ethernet with fixed addresses (Scapy would otherwise resolve them on the network)."""
    return Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", **kw)


def rec(frame, linktype, wirelen=None, index=7):
    data = bytes(frame)
    return Record(1234.5, linktype, data, len(data) if wirelen is None else wirelen, index)


def check4(seg):
    assert isinstance(seg, Segment), seg
    assert (seg.src, seg.sport, seg.dst, seg.dport) == ("192.168.1.10", 51000, "192.168.1.20", 11210)
    assert (seg.proto, seg.seq, seg.ack, seg.flags) == ("tcp", 1000, 2000, PSH | ACK)
    assert seg.payload == b"hello dcp" and seg.payload_len == 9
    assert seg.index == 7 and seg.ts == 1234.5 and not seg.truncated


def check6(seg):
    assert isinstance(seg, Segment), seg
    assert (seg.src, seg.dst, seg.seq, seg.ack, seg.flags) == ("2001:db8::1", "2001:db8::2", 7, 9, ACK)
    assert seg.payload == b"v6 payload" and not seg.truncated


@pytest.mark.parametrize("frame,linktype", [
    (Eth() / TCP4, 1),
    (Eth() / Dot1Q(vlan=10) / TCP4, 1),
    (Eth() / Dot1AD(vlan=20) / Dot1Q(vlan=10) / TCP4, 1),
    (Eth(type=0x9100) / Dot1Q(vlan=1) / Dot1Q(vlan=2) / Dot1Q(vlan=3) / TCP4, 1),
    (CookedLinux() / TCP4, 113),
    (CookedLinux(proto=0x8100) / Dot1Q(vlan=5) / TCP4, 113),
    (CookedLinuxV2() / TCP4, 276),
    (Loopback() / TCP4, 0),
    (struct.pack(">I", 2) + bytes(TCP4), 0),      # DLT_NULL written on a big-endian host
    (struct.pack(">I", 2) + bytes(TCP4), 108),    # OpenBSD loop, network order
    (struct.pack("<I", 2) + bytes(TCP4), 108),    # ... and the other order
    (struct.pack(">I", 2) + bytes(TCP4), 12),     # 12 as OpenBSD loop
    (TCP4, 12),                                   # 12 as raw IP
    (TCP4, 14),
    (TCP4, 101),
    (TCP4, 228),
])
def test_ipv4_tcp_on_each_link_type(frame, linktype):
    check4(parse_record(rec(frame, linktype)))


@pytest.mark.parametrize("frame,linktype", [
    (Eth() / TCP6, 1),
    (Eth() / Dot1Q() / TCP6, 1),
    (CookedLinux() / TCP6, 113),
    (CookedLinuxV2() / TCP6, 276),
    (struct.pack("<I", 30) + bytes(TCP6), 0),   # Darwin AF_INET6
    (struct.pack("<I", 28) + bytes(TCP6), 0),   # FreeBSD
    (struct.pack(">I", 24) + bytes(TCP6), 108),  # OpenBSD
    (TCP6, 101),
    (TCP6, 229),
])
def test_ipv6_tcp_on_each_link_type(frame, linktype):
    check6(parse_record(rec(frame, linktype)))


@pytest.mark.parametrize("ext", [
    IPv6ExtHdrHopByHop(),
    IPv6ExtHdrDestOpt(),
    IPv6ExtHdrRouting(addresses=["2001:db8::99"]),
    IPv6ExtHdrHopByHop() / IPv6ExtHdrRouting() / IPv6ExtHdrDestOpt(),
    IPv6ExtHdrFragment(offset=0, m=0),
])
def test_ipv6_extension_headers_are_skipped(ext):
    p = Eth() / IPv6(src="2001:db8::1", dst="2001:db8::2") / ext / TCP(
        sport=51000, dport=11210, seq=7, ack=9, flags="A") / Raw(b"v6 payload")
    check6(parse_record(rec(p, 1)))


def test_ipv6_fragments():
    base = Eth() / IPv6(src="2001:db8::1", dst="2001:db8::2")
    later = base / IPv6ExtHdrFragment(offset=100, m=1, nh=6) / Raw(b"x" * 40)
    skip = parse_record(rec(later, 1))
    assert isinstance(skip, Skip) and "fragment" in skip.reason
    first = base / IPv6ExtHdrFragment(offset=0, m=1) / TCP(sport=1, dport=2) / Raw(b"part")
    seg = parse_record(rec(first, 1))
    assert seg.payload == b"part" and seg.truncated and seg.payload_len == -1


def test_ipv4_options_and_ethernet_padding():
    p = Eth() / IP(src="192.168.1.10", dst="192.168.1.20", options=b"\x01\x01\x01\x00") / TCP(
        sport=51000, dport=11210, seq=1000, ack=2000, flags="PA") / Raw(b"hello dcp")
    check4(parse_record(rec(p, 1)))
    short = Eth() / IP(src="1.2.3.4", dst="5.6.7.8") / TCP(sport=1, dport=11210, flags="A")
    padded = bytes(short) + b"\0" * (60 - len(short))
    assert len(padded) == 60
    seg = parse_record(rec(padded, 1))
    assert seg.payload == b"" and seg.payload_len == 0 and not seg.truncated
    opts = Eth() / IP(src="1.2.3.4", dst="5.6.7.8") / TCP(
        sport=1, dport=11210, options=[("MSS", 1460), ("NOP", None), ("WScale", 7)]) / Raw(b"after opts")
    assert parse_record(rec(opts, 1)).payload == b"after opts"


def test_ipv4_fragments():
    frags = (IP(src="1.2.3.4", dst="5.6.7.8", id=5) / TCP(sport=1, dport=11210) / Raw(b"a" * 400)).fragment(200)
    assert len(frags) >= 2
    first = parse_record(rec(Eth() / frags[0], 1))
    assert isinstance(first, Segment) and first.truncated and first.payload_len == -1
    assert first.payload == (b"a" * 400)[:len(first.payload)]
    for f in frags[1:]:
        skip = parse_record(rec(Eth() / f, 1))
        assert isinstance(skip, Skip) and "fragment" in skip.reason


def test_udp():
    p = Eth() / IP(src="1.2.3.4", dst="5.6.7.8") / UDP(sport=40000, dport=11211) / Raw(b"\0\1\0\0\0\1\0\0get k\r\n")
    seg = parse_record(rec(p, 1))
    assert (seg.proto, seg.sport, seg.dport, seg.seq, seg.flags) == ("udp", 40000, 11211, 0, 0)
    assert seg.payload == b"\0\1\0\0\0\1\0\0get k\r\n"
    p6 = Eth() / IPv6(src="::1", dst="::2") / UDP(sport=5, dport=6) / Raw(b"u6")
    assert parse_record(rec(p6, 1)).payload == b"u6"


def test_snaplen_cut_segment():
    full = bytes(Eth() / TCP4)
    seg = parse_record(rec(full[:60], 1, wirelen=len(full)))
    assert seg.truncated and seg.payload == b"hello dcp"[:6] and seg.payload_len == 9
    header_only = parse_record(rec(full[:54], 1, wirelen=len(full)))
    assert header_only.truncated and header_only.payload == b"" and header_only.payload_len == 9
    cut_in_tcp = parse_record(rec(full[:40], 1, wirelen=len(full)))
    assert isinstance(cut_in_tcp, Skip) and "truncated" in cut_in_tcp.reason


def test_segmentation_offload_zero_length():
    raw = bytearray(bytes(Eth() / TCP4))
    raw[16:18] = b"\0\0"  # IPv4 total length 0, as captured before the NIC splits the segment
    seg = parse_record(rec(bytes(raw), 1))
    assert seg.payload == b"hello dcp" and not seg.truncated


@pytest.mark.parametrize("frame,linktype,words", [
    (Eth() / ARP(), 1, "ethertype 0x0806"),
    (Eth() / IP() / ICMP(), 1, "protocol 1"),
    (Eth(type=0x0800) / b"\x45", 1, "truncated IPv4"),
    (Eth(type=0x86DD) / (b"\x60" * 20), 1, "truncated IPv6"),
    (Eth() / IP(ihl=3) / TCP(), 1, "header length"),
    (Eth() / IP(version=5) / TCP(), 1, "version"),
    (Eth() / IP() / TCP(dataofs=3), 1, "data offset"),
    (Eth() / IPv6(nh=59), 1, "no next header"),
    (b"\x12\x34", 1, "truncated Ethernet"),
    (b"", 101, "empty"),
    (bytes(TCP4), 147, "link type 147"),
    (bytes(TCP6), 228, "version 6"),
    (struct.pack("<I", 7) + bytes(TCP4), 0, "address family 7"),
    (b"\x80" + bytes(TCP4)[1:], 101, "version 8"),
])
def test_skips_with_reasons(frame, linktype, words):
    skip = parse_record(rec(frame, linktype))
    assert isinstance(skip, Skip) and skip.index == 7
    assert words in skip.reason


LINKTYPES = [0, 1, 12, 14, 101, 108, 113, 228, 229, 276, 9999]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(LINKTYPES), st.binary(max_size=200), st.integers(0, 100_000))
def test_random_bytes_never_raise(linktype, data, wirelen):
    out = parse_record(Record(0.0, linktype, data, wirelen, 0))
    assert isinstance(out, (Segment, Skip))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["ether", "vlan", "qinq", "sll", "sll2", "null", "loop", "raw", "ipv6"]),
       st.binary(min_size=0, max_size=120), st.integers(0, 2**32 - 1), st.data())
def test_mutated_valid_frames_never_raise(linktype, payload, isn, data):
    frame = bytearray(synth.tcp_conversation([("c2s", payload or b"x")], isn=isn, linktype=linktype)[3])
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(frame) - 1))
        frame[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(frame)))
    out = parse_record(Record(0.0, synth.LINKTYPES[linktype], bytes(frame[:cut]), len(frame), 3))
    assert isinstance(out, (Segment, Skip))


@pytest.mark.parametrize("linktype", ["ether", "vlan", "qinq", "sll", "sll2", "null", "loop", "raw", "ipv6"])
def test_synth_frames_agree_with_scapy(linktype):
    """synth's frames dissect in Scapy with valid checksums and the intended fields."""
    classes = {"ether": Ether, "vlan": Ether, "qinq": Ether, "ipv6": Ether, "sll": CookedLinux,
               "sll2": CookedLinuxV2, "null": Loopback}
    segs = synth.tcp_segments([("c2s", b"G" * 2000), ("s2c", b"R" * 10)], isn=(2**32 - 5, 77))
    frames = synth.frames(segs, ("10.9.8.7", 40001), ("10.9.8.6", 11210), linktype)
    for s, f in zip(segs, frames):
        if linktype == "loop":
            pkt = IP(f[4:])
        elif linktype == "raw":
            pkt = IP(f)
        else:
            pkt = classes[linktype](f)
        tcp = pkt[TCP]
        assert tcp.seq == s.seq % 2**32 and tcp.ack == s.ack and int(tcp.flags) == s.flags
        assert (pkt[Raw].load if Raw in pkt else b"") == s.payload
        ip = pkt[IPv6] if linktype == "ipv6" else pkt[IP]
        if linktype != "ipv6":
            chk = ip.chksum
            del ip.chksum
            assert IP(bytes(ip)).chksum == chk
        chk = tcp.chksum
        del tcp.chksum
        rebuilt = (IPv6 if linktype == "ipv6" else IP)(bytes(ip))
        assert rebuilt[TCP].chksum == chk
        seg = parse_record(Record(0.0, synth.LINKTYPES[linktype], f, len(f), 0))
        assert (seg.seq, seg.ack, seg.flags, seg.payload) == (s.seq % 2**32, s.ack, s.flags, s.payload)
    assert segs[0].flags == SYN and segs[-3].flags == FIN | ACK
