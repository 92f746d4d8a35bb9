"""Resynchronising over hostile bytes costs work linear in the bytes looked at.

A stream full of plausible headers that each claim a large body (1 MiB, the way a crafted
capture or paste would) used to make the splitter rescan to the end of the buffer for every
candidate header: n candidates cost n² header checks. Here the work is counted, not timed:
the calls of ``header_problem`` and the bytes the magic-byte search walks over, for n and
8n candidates, in several hostile shapes (back to back, spaced by garbage, fed whole, in
1-byte and in 1460-byte segments, to a splitter that starts synced or not). Eight times the
candidates may cost about eight times the work, never sixty-four. A real frame after them
still comes out whole at its offset, and the ranges before it are reported skipped.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dcpgen
from dcpinspect.engines.records import decode_capture_file
from dcpinspect.engines.connections import Captured, Note
import dcpinspect.families.mcbp.framer as mcbp
from dcpinspect.families.mcbp.framer import FrameSplitter, RawFrame, Skipped
from dcpinspect.families.mcbp.messages.names import MAGICS
from dcpinspect.families.mcbp.messages.registry import CLIENT_SPECS, SERVER_SPECS
from frames import frame, request, run_cli

CLAIM = 1 << 20  # what each hostile header says its body holds
#: 8n candidates may cost this many times the work of n (linear: ~8; the old rescan: ~64)
GROWTH = 10
NOT_MAGIC = bytes(b for b in range(256) if b not in MAGICS)
REAL = request(0x57, extras=bytes(31), key=b"key", value=b"after the noise", opaque=0x1234)


class Work:
    """Counts header checks and bytes walked by the magic-byte search of the splitter."""

    def __init__(self, monkeypatch) -> None:
        self.checks = 0
        self.walked = 0
        check, search = mcbp.header_problem, mcbp._MAGIC_RE.search

        def counted_check(*args, **kw):
            self.checks += 1
            return check(*args, **kw)

        class CountedSearch:
            def search(_, buf, pos=0, *rest):
                m = search(buf, pos, *rest)
                self.walked += (m.start() + 1 if m else len(buf)) - pos
                return m

        monkeypatch.setattr(mcbp, "header_problem", counted_check)
        monkeypatch.setattr(mcbp, "_MAGIC_RE", CountedSearch())

    def total(self) -> int:
        return self.checks + self.walked // 24

    def reset(self) -> None:
        self.checks = self.walked = 0


@st.composite
def hostile_headers(draw) -> bytes:
    """A header that passes every plausibility check and claims a body far longer than the input."""
    magic = draw(st.sampled_from([0x80, 0x81, 0x82, 0x83]))
    table = SERVER_SPECS if magic in (0x82, 0x83) else CLIENT_SPECS
    opcode = draw(st.sampled_from(sorted(table)))
    extras = bytes(draw(st.integers(0, 31)))
    key = b"k" * draw(st.integers(0, 16))
    claim = draw(st.sampled_from([CLAIM, CLAIM + 7, 30 * 1024 * 1024]))
    return frame(magic, opcode, extras=extras, key=key, datatype=draw(st.integers(0, 7)),
                 body_length=claim, opaque=draw(st.integers(0, 2**32 - 1)))[:24]


SHAPES = st.fixed_dictionaries({
    "header": hostile_headers(),
    "gap": st.sampled_from([0, 1, 5, 24, 100]),  # garbage bytes between two headers
    "filler": st.binary(min_size=1, max_size=8).map(
        lambda b: bytes(NOT_MAGIC[x % len(NOT_MAGIC)] for x in b)),
    "lead": st.sampled_from([b"\x00", b"\x00" * 30, b""]),  # garbage before the first header
    "synced": st.booleans(),
    "segment": st.sampled_from([0, 1, 1460, 997]),  # 0: the whole input at once
})


def hostile_stream(shape: dict, n: int) -> tuple[bytes, int]:
    """n hostile headers laid out as ``shape`` says, then a real frame; and that frame's offset."""
    gap = (shape["filler"] * (shape["gap"] // len(shape["filler"]) + 1))[: shape["gap"]]
    lead = shape["lead"] if shape["synced"] else shape["lead"] or b"\x00"
    body = lead + (shape["header"] + gap) * n
    return body + REAL, len(body)


def split(data: bytes, synced: bool, segment: int) -> list:
    splitter = FrameSplitter(synced=synced)
    if not segment:
        return splitter.close(data)
    out = []
    for i in range(0, len(data), segment):
        out += splitter.feed(data[i:i + segment])
    return out + splitter.close()


def run_shape(shape: dict, n: int, work: Work) -> tuple[int, list]:
    data, at = hostile_stream(shape, n)
    work.reset()
    out = split(data, shape["synced"] and shape["lead"] == b"", shape["segment"])
    return work.total(), out


@settings(max_examples=12, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(shape=SHAPES, n=st.integers(25, 50))
def test_resync_work_grows_linearly(monkeypatch, shape: dict, n: int) -> None:
    work = Work(monkeypatch)
    small, _ = run_shape(shape, n, work)
    large, out = run_shape(shape, 8 * n, work)
    assert large <= GROWTH * small + 200, (small, large)
    data, at = hostile_stream(shape, 8 * n)
    frames = [i for i in out if isinstance(i, RawFrame)]
    if shape["lead"] or not shape["synced"]:
        # resynchronising: the noise is one skipped range, the real frame comes out whole
        assert frames == [RawFrame(at, REAL)]
        assert [(s.offset, s.size) for s in out if isinstance(s, Skipped)] == [(0, at)]
    else:
        # a stream known to start at a frame trusts its first header: one truncated frame
        assert frames == [RawFrame(0, data, truncated=True)]


@pytest.mark.parametrize("segment", [0, 1, 1460])
def test_back_to_back_claims_fixed_sizes(monkeypatch, segment: int) -> None:
    """The issue's shape: 1 MiB-claiming headers back to back after one stray byte."""
    work = Work(monkeypatch)
    header = request(0x57, extras=bytes(31), key=b"k", body_length=CLAIM)[:24]
    totals = []
    for n in (200, 1600):
        work.reset()
        out = split(b"\x00" + header * n + REAL, True, segment)
        totals.append(work.total())
        assert out[-1] == RawFrame(1 + 24 * n, REAL)
        assert [(s.offset, s.size) for s in out if isinstance(s, Skipped)] == [(0, 1 + 24 * n)]
    assert totals[1] <= GROWTH * totals[0], totals


def test_small_segments_do_not_rescan_the_buffer(monkeypatch) -> None:
    """Fed a byte at a time while a candidate waits for its claimed body, each feed looks at
    a bounded number of bytes, not at the whole buffer again."""
    work = Work(monkeypatch)
    header = request(0x57, extras=bytes(31), key=b"k", body_length=CLAIM)[:24]
    data = b"\x00" + header * 2000
    splitter = FrameSplitter(synced=False)
    per_feed = []
    for i in range(len(data)):
        work.reset()
        splitter.feed(data[i:i + 1])
        per_feed.append(work.total())
    assert max(per_feed) <= 4, max(per_feed)
    assert splitter.buffered >= 24 * 2000  # the first candidate is still waiting for its body


def test_capture_of_hostile_headers(monkeypatch, tmp_path) -> None:
    """The same noise in a capture joined mid-stream: linear work, the frame after it decodes."""
    work = Work(monkeypatch)
    header = request(0x57, extras=bytes(31), key=b"k", body_length=CLAIM)[:24]
    totals = []
    for n in (200, 1600):
        path = dcpgen.write_capture([("c2s", b"\x00" + header * n + REAL)], tmp_path / f"noise{n}.pcap",
                                    handshake=False)
        work.reset()
        items = list(decode_capture_file(path))
        totals.append(work.total())
        frames = [i.msg for i in items if isinstance(i, Captured)]
        assert [(m.offset, m.data) for m in frames] == [(1 + 24 * n, REAL)]
        skipped = [(i.offset, i.size) for i in items if isinstance(i, Note) and i.kind == "skipped"]
        assert skipped == [(0, 1 + 24 * n)]
    assert totals[1] <= GROWTH * totals[0], totals


def test_hex_command_over_hostile_headers(tmp_path) -> None:
    header = request(0x57, extras=bytes(31), key=b"k", body_length=CLAIM)[:24]
    n = 4000
    path = tmp_path / "noise.hex"
    path.write_text((b"\x00" + header * n + REAL).hex())
    proc = run_cli("hex", "-f", "jsonl", str(path))
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert [(r["kind"], r["offset"], r["length"]) for r in records] == [
        ("skipped", 0, 1 + 24 * n), ("frame", 1 + 24 * n, len(REAL))]
    assert records[1]["fields"]["value"] == "after the noise"


# --- deciding whether an unknown port speaks MCBP -------------------------------------


def _unknown_port_capture(path, payload: bytes, mss: int) -> None:
    """A connection on a port no one names, joined mid-stream (no handshake), carrying
    ``payload`` from the client in segments of ``mss`` bytes."""
    from dcpinspect.transport import synth

    synth.write_pcap(path, synth.tcp_conversation([("c2s", payload)], server=("10.0.0.2", 40000), mss=mss,
                                                  handshake=False, close=None, acks=False))


def test_sniffing_an_unknown_port_is_linear(tmp_path, monkeypatch):
    """Bytes that look like the start of frames, one byte a segment: every segment used to
    re-probe the whole buffer (n² for n bytes, about 50 minutes for 64 KiB)."""
    work = Work(monkeypatch)
    costs = []
    for n in (500, 4000):
        path = tmp_path / f"sniff{n}.pcap"
        _unknown_port_capture(path, b"\x80" * n, mss=1)
        work.reset()
        items = list(decode_capture_file(path))
        assert not [i for i in items if isinstance(i, Captured)]
        costs.append(work.total())
    assert costs[1] <= GROWTH * costs[0], costs


@given(st.lists(st.integers(1, 200), min_size=1, max_size=30), st.integers(0, 300))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_sniffing_finds_the_same_frame_however_the_bytes_are_cut(tmp_path, cuts, noise):
    """The verdict, and the frames after it, do not depend on the segment sizes."""
    payload = bytes(range(1, 256))[:noise] + REAL * 3
    decoded = []
    for mss in (1460, min(cuts), max(cuts)):
        path = tmp_path / f"cut{mss}.pcap"
        _unknown_port_capture(path, payload, mss)
        decoded.append([(i.msg.offset, i.msg.data) for i in decode_capture_file(path) if isinstance(i, Captured)])
    assert decoded[0] == decoded[1] == decoded[2]
    assert [d for _, d in decoded[0]][-2:] == [REAL, REAL]
