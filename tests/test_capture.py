"""pcap / pcapng record reader: formats, damage, compression."""

from __future__ import annotations

import gzip
import struct
import tracemalloc

import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import CookedLinuxV2, Ether
from scapy.packet import Raw
from scapy.utils import PcapNgWriter, wrpcap, wrpcapng

from dcpinspect.sources.capture import CaptureError, CaptureProblem, Record, read_records
from dcpinspect.transport import synth
from dcpinspect.transport.packet import Segment, parse_record


def Eth(**kw):
    """Ethernet with fixed addresses (Scapy would otherwise resolve them on the network)."""
    return Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", **kw)


def _pkts(n=5):
    return [Eth() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=50000, dport=11210, seq=i)
            / Raw(bytes([i]) * (10 + i)) for i in range(n)]


def _split(items):
    recs = [r for r in items if isinstance(r, Record)]
    probs = [r for r in items if isinstance(r, CaptureProblem)]
    return recs, probs


def _to_big_endian_pcap(le: bytes) -> bytes:
    """Re-encode a little-endian microsecond pcap in big-endian byte order."""
    magic, vmaj, vmin, zone, sig, snap, lt = struct.unpack_from("<IHHiIII", le)
    out = [struct.pack(">IHHiIII", magic, vmaj, vmin, zone, sig, snap, lt)]
    pos = 24
    while pos < len(le):
        sec, usec, cap, wire = struct.unpack_from("<IIII", le, pos)
        out.append(struct.pack(">IIII", sec, usec, cap, wire) + le[pos + 16:pos + 16 + cap])
        pos += 16 + cap
    return b"".join(out)


def test_pcap_scapy_written(tmp_path):
    pkts = _pkts()
    for i, p in enumerate(pkts):
        p.time = 1_700_000_000 + i * 0.25
    path = tmp_path / "a.pcap"
    wrpcap(str(path), pkts)
    recs, probs = _split(list(read_records(path)))
    assert not probs
    assert [r.index for r in recs] == list(range(5))
    assert [r.data for r in recs] == [bytes(p) for p in pkts]
    assert all(r.linktype == 1 and r.wirelen == len(r.data) and not r.truncated for r in recs)
    assert recs[3].ts == pytest.approx(1_700_000_000.75, abs=1e-6)


def test_pcap_big_endian_and_nanoseconds(tmp_path):
    frames = [bytes(p) for p in _pkts(3)]
    le = tmp_path / "le.pcap"
    synth.write_pcap(le, frames, "ether", ts0=1_600_000_000.5, dt=0.001)
    be = tmp_path / "be.pcap"
    be.write_bytes(_to_big_endian_pcap(le.read_bytes()))
    ns = tmp_path / "ns.pcap"
    synth.write_pcap(ns, frames, "ether", ts0=1_600_000_000.5, dt=0.000000123, nanos=True)
    for path, step in ((le, 0.001), (be, 0.001), (ns, 0.000000123)):
        recs, probs = _split(list(read_records(path)))
        assert not probs
        assert [r.data for r in recs] == frames
        assert recs[2].ts == pytest.approx(1_600_000_000.5 + 2 * step, abs=1e-7)


def test_pcapng_scapy_written(tmp_path):
    pkts = _pkts()
    path = tmp_path / "a.pcapng"
    wrpcapng(str(path), pkts)
    recs, probs = _split(list(read_records(path)))
    assert not probs
    assert [r.data for r in recs] == [bytes(p) for p in pkts]
    assert {r.linktype for r in recs} == {1}


def test_pcapng_interfaces_of_different_link_types(tmp_path):
    a = Eth() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=1, dport=11210) / Raw(b"eth")
    b = CookedLinuxV2() / IP(src="10.0.0.3", dst="10.0.0.4") / TCP(sport=2, dport=11210) / Raw(b"sll2")
    a.sniffed_on, b.sniffed_on = "eth0", "any"
    path = tmp_path / "multi.pcapng"
    with PcapNgWriter(str(path)) as w:
        for p in (a, b, a, b):
            w.write(p)
    recs, probs = _split(list(read_records(path)))
    assert not probs
    assert [r.linktype for r in recs] == [1, 276, 1, 276]
    assert [parse_record(r).payload for r in recs] == [b"eth", b"sll2", b"eth", b"sll2"]

    # the same with synth: one interface per link type, nanosecond resolution
    frames = synth.tcp_conversation([("c2s", b"x" * 10)], linktype="sll")
    raw = synth.tcp_conversation([("c2s", b"y" * 10)], linktype="raw")
    items = [(1.5 + i, f, "sll") for i, f in enumerate(frames)] + [(9.25, raw[3], "raw")]
    synth.write_pcap(tmp_path / "m2.pcapng", items, fmt="pcapng", nanos=True)
    recs, probs = _split(list(read_records(tmp_path / "m2.pcapng")))
    assert not probs
    assert [r.linktype for r in recs] == [113] * len(frames) + [101]
    assert recs[-1].ts == pytest.approx(9.25)
    assert parse_record(recs[-1]).payload == b"y" * 10


def _shb(endian="<"):
    body = struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1)
    return _blk(0x0A0D0D0A, body, endian)


def _blk(btype, body, endian="<"):
    n = 12 + len(body)
    return struct.pack(endian + "II", btype, n) + body + struct.pack(endian + "I", n)


def _idb(linktype, endian="<", tsresol=None, tsoffset=None):
    opts = b""
    if tsresol is not None:
        opts += struct.pack(endian + "HHB3x", 9, 1, tsresol)
    if tsoffset is not None:
        opts += struct.pack(endian + "HHq", 14, 8, tsoffset)
    if opts:
        opts += b"\0\0\0\0"
    return _blk(1, struct.pack(endian + "HHI", linktype, 0, 0) + opts, endian)


def _epb(ifid, ticks, data, endian="<", wirelen=None):
    pad = b"\0" * (-len(data) % 4)
    return _blk(6, struct.pack(endian + "IIIII", ifid, ticks >> 32, ticks & 0xFFFFFFFF, len(data),
                               len(data) if wirelen is None else wirelen) + data + pad, endian)


def test_pcapng_sections_resolutions_and_other_blocks(tmp_path):
    f1, f2, f3, f4 = (bytes(p) for p in _pkts(4))
    content = b"".join([
        _shb("<"),
        _idb(1, "<", tsresol=9),                       # nanoseconds
        _idb(1, "<", tsresol=0x80 | 10, tsoffset=100),  # 2**-10 s, offset 100 s
        _blk(4, b"\x01\x00\x04\x00\x0a\x00\x00\x01host\x00\x00\x00\x00"),  # name resolution block
        _epb(0, 1_500_000_000_123_456_789, f1),
        _blk(5, struct.pack("<III", 0, 0, 0)),         # interface statistics block
        _epb(1, 3 * 1024 + 512, f2),
        _blk(0x00000BAD, struct.pack("<I", 32473) + b"cust"),  # custom block
        _blk(3, struct.pack("<I", len(f3)) + f3 + b"\0" * (-len(f3) % 4)),  # simple packet block
        _epb(7, 0, f3),                                # unknown interface: a problem, reading goes on
        _shb(">"),                                     # a second section, big-endian
        _idb(113, ">"),
        _epb(0, 2_000_000, f4, ">", wirelen=len(f4) + 100),
    ])
    path = tmp_path / "sections.pcapng"
    path.write_bytes(content)
    items = list(read_records(path))
    recs, probs = _split(items)
    assert [r.data for r in recs] == [f1, f2, f3, f4]
    assert [r.index for r in recs] == [0, 1, 2, 4]
    assert recs[0].ts == pytest.approx(1_500_000_000.123456789)
    assert recs[1].ts == pytest.approx(100 + 3.5)
    assert recs[3].ts == pytest.approx(2.0) and recs[3].linktype == 113
    assert recs[3].wirelen == len(f4) + 100 and recs[3].truncated
    assert len(probs) == 1 and probs[0].index == 3 and "interface 7" in probs[0].message


def test_gzip_pcap_and_pcapng(tmp_path):
    frames = synth.tcp_conversation([("c2s", b"q" * 5000), ("s2c", b"r" * 300)])
    for fmt in ("pcap", "pcapng"):
        plain = tmp_path / f"c.{fmt}"
        gz = tmp_path / f"c.{fmt}.gz"
        synth.write_pcap(plain, frames, fmt=fmt)
        synth.write_pcap(gz, frames, fmt=fmt)
        assert gz.read_bytes()[:2] == b"\x1f\x8b"
        assert list(read_records(gz)) == list(read_records(plain))
        # gzip detection is by content, not name
        odd = tmp_path / f"no_suffix_{fmt}"
        odd.write_bytes(gzip.compress(plain.read_bytes()))
        assert list(read_records(odd)) == list(read_records(plain))


def test_truncated_gzip(tmp_path):
    frames = [bytes(p) for p in _pkts(50)]
    path = tmp_path / "t.pcap.gz"
    synth.write_pcap(path, frames)
    blob = path.read_bytes()
    for cut in (len(blob) - 8, len(blob) // 2, 300):
        cutp = tmp_path / f"cut{cut}.pcap.gz"
        cutp.write_bytes(blob[:cut])
        recs, probs = _split(list(read_records(cutp)))
        assert [r.data for r in recs] == frames[:len(recs)]
        assert len(probs) == 1
    corrupt = bytearray(blob)
    corrupt[len(blob) // 2] ^= 0xFF
    (tmp_path / "bad.pcap.gz").write_bytes(bytes(corrupt))
    items = list(read_records(tmp_path / "bad.pcap.gz"))
    recs, probs = _split(items)
    assert len(probs) == 1 and items[-1] is probs[0]
    bad_crc = bytearray(blob)
    bad_crc[-6] ^= 0xFF  # the trailer's CRC: every record decompresses, then the check fails
    (tmp_path / "crc.pcap.gz").write_bytes(bytes(bad_crc))
    recs, probs = _split(list(read_records(tmp_path / "crc.pcap.gz")))
    assert [r.data for r in recs] == frames
    assert len(probs) == 1 and "corrupt" in probs[0].message


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_truncated_at_every_offset_of_last_record(tmp_path, fmt):
    frames = [bytes(p) for p in _pkts(4)]
    path = tmp_path / f"full.{fmt}"
    synth.write_pcap(path, frames, fmt=fmt)
    blob = path.read_bytes()
    last = (16 + len(frames[-1])) if fmt == "pcap" else (32 + len(frames[-1]) + (-len(frames[-1]) % 4))
    start = len(blob) - last
    for cut in range(start + 1, len(blob)):
        cutp = tmp_path / "cut"
        cutp.write_bytes(blob[:cut])
        items = list(read_records(cutp))
        recs, probs = _split(items)
        assert [r.data for r in recs] == frames[:3], cut
        assert len(probs) == 1 and items[-1] is probs[0], cut
        assert probs[0].index == 3
    cutp.write_bytes(blob[:start])  # cut exactly between records: nothing wrong
    assert _split(list(read_records(cutp))) == (_split(list(read_records(path)))[0][:3], [])


def test_truncated_inside_file_header(tmp_path):
    path = tmp_path / "h.pcap"
    synth.write_pcap(path, [])
    blob = path.read_bytes()
    path.write_bytes(blob[:10])
    recs, probs = _split(list(read_records(path)))
    assert not recs and len(probs) == 1


def test_snaplen_cut_packets_are_kept_and_marked(tmp_path):
    frames = synth.tcp_conversation([("c2s", b"z" * 1000)], linktype="ether")
    path = tmp_path / "snap.pcap"
    synth.write_pcap(path, frames, snaplen=100)
    recs, probs = _split(list(read_records(path)))
    assert not probs and len(recs) == len(frames)
    data_rec = recs[3]
    assert len(data_rec.data) == 100 and data_rec.wirelen == len(frames[3]) and data_rec.truncated
    seg = parse_record(data_rec)
    assert isinstance(seg, Segment) and seg.truncated
    assert seg.payload == b"z" * (100 - 54) and seg.payload_len == 1000
    assert not recs[0].truncated


def test_bad_record_length(tmp_path):
    frames = [bytes(p) for p in _pkts(5)]
    path = tmp_path / "ok.pcap"
    synth.write_pcap(path, frames)
    blob = bytearray(path.read_bytes())
    third = 24 + sum(16 + len(f) for f in frames[:2])
    for caplen, words in ((0x7FFFFFFF, "bad record length"), (300 * 2**20, "bad record length"),
                          (100_000, "bytes left")):
        struct.pack_into("<I", blob, third + 8, caplen)
        bad = tmp_path / "bad.pcap"
        bad.write_bytes(bytes(blob))
        recs, probs = _split(list(read_records(bad)))
        assert [r.data for r in recs] == frames[:2]
        assert len(probs) == 1 and probs[0].index == 2 and words in probs[0].message


def test_bad_pcapng_block_length(tmp_path):
    frames = [bytes(p) for p in _pkts(3)]
    path = tmp_path / "ok.pcapng"
    synth.write_pcap(path, frames, fmt="pcapng")
    blob = path.read_bytes()
    shb_idb = len(_shb()) + len(_idb(1, tsresol=6))
    second = shb_idb + len(_epb(0, 0, frames[0]))
    for blen in (0xFFFFFFF0, 7, 13, 10_000):
        bad = bytearray(blob)
        struct.pack_into("<I", bad, second + 4, blen)
        (tmp_path / "bad.pcapng").write_bytes(bytes(bad))
        recs, probs = _split(list(read_records(tmp_path / "bad.pcapng")))
        assert [r.data for r in recs] == frames[:1], blen
        assert len(probs) == 1, blen


@pytest.mark.parametrize("content", [b"", b"hello world, this is not a capture at all", b"\x00" * 100,
                                     b"\x0a\x0d\x0d\x0a" + b"\x00" * 40])
def test_not_a_capture(tmp_path, content):
    path = tmp_path / "x.pcap"
    path.write_bytes(content)
    with pytest.raises(CaptureError):
        read_records(path)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(CaptureError):
        read_records(tmp_path / "nope.pcap")
    with pytest.raises(CaptureError):
        read_records(tmp_path)
    (tmp_path / "junk.gz").write_bytes(gzip.compress(b"plain text, gzipped"))
    with pytest.raises(CaptureError):
        read_records(tmp_path / "junk.gz")


def test_memory_stays_flat(tmp_path):
    frame = synth.tcp_conversation([("c2s", b"m" * 1400)], handshake=False, close=None, acks=False)[0]
    path = tmp_path / "big.pcap"
    synth.write_pcap(path, [frame] * 20_000)  # about 29 MB
    tracemalloc.start()
    try:
        n = 0
        for r in read_records(path):
            n += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == 20_000
    assert peak < 8 * 2**20


def test_records_tell_how_far_reading_has_got(tmp_path):
    """For progress bars: bytes of the file read so far (compressed bytes for gzip), -1 at the end."""
    plain = tmp_path / "t.pcap"
    wrpcap(str(plain), [Eth() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=50000, dport=11210, seq=i)
                        / Raw(bytes([i % 256]) * (1000 + i % 400)) for i in range(3000)])  # > 4 MiB
    gz = tmp_path / "t.pcap.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes(), compresslevel=0))  # stored: as big as the pcap
    for path, total in ((plain, plain.stat().st_size), (gz, gz.stat().st_size)):
        records = read_records(path)
        seen = []
        for _ in records:
            seen.append(records.tell())
        # the reader takes the file a MiB at a time: the position moves by those steps
        assert len(seen) == 3000 and seen == sorted(seen) and 0 < seen[0] < seen[-1] <= total
        assert len(set(seen)) >= 3
        assert records.tell() == -1
