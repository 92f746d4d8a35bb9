"""Byte ranges of a capture: a reader dropped anywhere finds the next record boundary, and
the ranges a plan keeps give every record of the file exactly once, equal to the records the
whole-file reader gives; a file whose walks do not chain (damage) is read whole.

Captures are real TCP conversations written by ``dcpgen``/``synth`` (pcap, pcap with
nanosecond times, pcapng) and the shipped samples.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dcpgen
from dcpinspect.sources.capture import CaptureProblem, read_records
from dcpinspect.sources.ranges import (Layout, candidate_ranges, layout_of, pcap_record_length, pcap_resync,
                                       pcapng_block_length, pcapng_resync, plan_ranges, range_records, walk_range)
from dcpinspect.transport import synth

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def boundaries(path: Path) -> list[int]:
    """Where each record (pcap) or block (pcapng) begins, read from the layout directly."""
    data = path.read_bytes()
    out = []
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        at = 0
        while at < len(data):
            out.append(at)
            at += struct.unpack_from("<I", data, at + 4)[0]
    else:
        at = 24
        while at < len(data):
            out.append(at)
            at += 16 + struct.unpack_from("<I", data, at + 8)[0]
    return out


@pytest.fixture(scope="module", params=["pcap", "nanos", "pcapng"])
def capture(request, tmp_path_factory) -> Path:
    """Three interleaved connections (one of them long), with violations."""
    flows = [dcpgen.busy_collections_connection(400, seed=s).frames for s in (1, 2)]
    flows.append(dcpgen.mid_conversation_connection(100))
    path = tmp_path_factory.mktemp("ranges") / f"three.{request.param}"
    packets = []
    for n, frames in enumerate(flows):
        packets.append(synth.tcp_conversation(dcpgen.coalesce(frames), client=("10.0.0.1", 50000 + n),
                                              acks=False, handshake=n != 2, close=None if n == 2 else "fin"))
    mixed = [p for group in zip(*packets) for p in group] + [p for f in packets for p in f[min(map(len, packets)):]]
    synth.write_pcap(path, mixed, "ether", fmt="pcapng" if request.param == "pcapng" else "pcap",
                     nanos=request.param == "nanos", dt=1e-5)
    return path


def read_planned(path: Path, range_size: int):
    layout, size, pieces = candidate_ranges(str(path), range_size)
    walks = [walk_range(str(path), layout, s, e, size) for s, e in pieces]
    plan = plan_ranges(str(path), layout, size, walks)
    return pieces, plan, [r for part in plan for r in range_records(part)]


@pytest.mark.parametrize("range_size", [2000, 9000, 30_000])
def test_ranges_give_every_record_once_as_the_whole_file_reader(capture, range_size):
    whole = list(read_records(capture))
    pieces, plan, got = read_planned(capture, range_size)
    assert len(pieces) >= 2 and len(plan) == len(pieces) and not plan[0].whole
    assert got == whole
    assert [r.index for r in got] == list(range(len(whole)))


def test_every_range_begins_on_a_real_boundary(capture):
    real = set(boundaries(capture)) | {capture.stat().st_size}
    _, plan, _ = read_planned(capture, 3000)
    assert all(part.start in real and part.stop in real for part in plan)
    assert [p.stop for p in plan[:-1]] == [p.start for p in plan[1:]]


@pytest.mark.parametrize("name", ["memcached-binary.pcap", "tap-backfill.pcap", "dcp-lossy.pcapng"])
@pytest.mark.parametrize("range_size", [300, 1000, 4096])
def test_samples_split_read_the_same(name, range_size):
    path = SAMPLES / name
    _, plan, got = read_planned(path, range_size)
    assert got == list(read_records(path))


@settings(max_examples=60, deadline=None)
@given(start=st.integers(0, 40_000))
def test_resync_from_any_byte_finds_the_next_real_boundary(start):
    path = SAMPLES / "memcached-binary.pcap"
    data = path.read_bytes()
    layout = layout_of(data[:24])
    real = boundaries(path)
    start = max(start, 24)
    found, at = pcap_resync(data, start, layout, 1 << 20, final=True)
    assert found and at == min(b for b in real + [len(data)] if b >= start)


def test_pcapng_resync_lands_on_the_next_block():
    path = SAMPLES / "dcp-lossy.pcapng"
    data = path.read_bytes()
    real = boundaries(path)
    for start in range(0, len(data), 7):
        found, at = pcapng_resync(data, start, "<", 1 << 20, final=True)
        assert found and at == min(b for b in real + [len(data)] if b >= start), start


def test_resync_asks_for_more_bytes_rather_than_guess():
    data = (SAMPLES / "dcp-session.pcap").read_bytes()
    layout = layout_of(data[:24])
    first = 24 + 16 + struct.unpack_from("<I", data, 32)[0]
    found, at = pcap_resync(data[:first + 10], 25, layout, 1 << 20, final=False)
    assert not found and at <= first


def test_record_and_block_plausibility():
    layout = Layout("pcap", snaplen=65535)
    good = struct.pack("<IIII", 1_700_000_000, 999_999, 60, 60)
    assert pcap_record_length(good + bytes(60), 0, layout, 1 << 20) == 76
    assert pcap_record_length(struct.pack("<IIII", 1, 1_000_000, 60, 60), 0, layout, 1 << 20) is None  # fraction
    assert pcap_record_length(struct.pack("<IIII", 1, 0, 61, 60), 0, layout, 1 << 20) is None  # cap > wire
    assert pcap_record_length(struct.pack("<IIII", 1, 0, 0, 0), 0, layout, 1 << 20) is None  # nothing on the wire
    assert pcap_record_length(struct.pack("<IIII", 1, 0, 70_000, 70_000), 0, layout, 1 << 20) is None  # snaplen
    block = struct.pack("<II", 6, 32) + bytes(20) + struct.pack("<I", 32)
    assert pcapng_block_length(block, 0, "<", 1 << 20) == 32
    assert pcapng_block_length(block[:-4] + struct.pack("<I", 28), 0, "<", 1 << 20) is None  # trailer
    assert pcapng_block_length(struct.pack("<II", 6, 30) + bytes(22), 0, "<", 1 << 20) is None  # not 4-aligned


def test_damaged_file_is_read_whole_with_its_notes(capture, tmp_path):
    data = capture.read_bytes()
    real = boundaries(capture)
    cut = tmp_path / ("cut" + capture.suffix)
    cut.write_bytes(data[:real[len(real) * 2 // 3] + 7])  # ends inside a record
    pieces, plan, got = read_planned(cut, 3000)
    assert len(pieces) > 2 and len(plan) == 1 and plan[0].whole
    assert got == list(read_records(cut))
    assert isinstance(got[-1], CaptureProblem)
    zeroed = tmp_path / ("zeroed" + capture.suffix)
    mid = real[len(real) // 2]
    zeroed.write_bytes(data[:mid] + bytes(4096) + data[mid:])
    pieces, plan, got = read_planned(zeroed, 3000)
    assert len(plan) == 1 and got == list(read_records(zeroed))


def test_gzip_is_read_whole(capture, tmp_path):
    import gzip

    gz = tmp_path / "three.gz"
    gz.write_bytes(gzip.compress(capture.read_bytes()))
    pieces, plan, got = read_planned(gz, 2000)
    assert len(pieces) == 1 and plan[0].whole and got == list(read_records(capture))
