"""Fuzz harnesses ``pcap`` and ``pcapng`` (fuzz/harness.py) in the suite: capture files
through the reader and the whole engine (the Python path and the C path print the same,
and so does the file gzipped), the summary, findings and stats outputs, and every capture
command (exit 0, 1 or 2; output bounded).

Files are real TCP conversations written by ``synth`` (spec vectors, link types, pcap
byte orders and resolutions, pcapng interface options), then damaged: bytes flipped
anywhere (global header, record headers, packet bytes), length fields made huge, a cut at
any byte, garbage appended.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))

import harness  # noqa: E402
from test_decoder_properties import FRAMES  # noqa: E402
from test_fuzz_frame import FRAME_INPUTS  # noqa: E402

from dcpinspect.transport import synth  # noqa: E402

BUDGET = settings(max_examples=10, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
LINKTYPES = sorted(synth.LINKTYPES)


def capture_bytes(fmt: str, payloads: list[bytes], linktype: str, mss: int, nanos: bool) -> bytes:
    messages = [("c2s" if i % 2 == 0 else "s2c", p) for i, p in enumerate(payloads)]
    packets = synth.tcp_conversation(messages, linktype=linktype, mss=mss)
    with harness.scratch_file(f"c.{fmt}", b"") as path:
        synth.write_pcap(path, packets, linktype, fmt=fmt, nanos=nanos)
        return path.read_bytes()


def pcapng_options(tsresol: int, tsoffset: int) -> bytes:
    """An interface whose time resolution and offset options are chosen, and one packet."""
    packet = synth.tcp_conversation([("c2s", FRAMES[0])], handshake=False, close=None, acks=False)[0]
    shb = synth._block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    opts = struct.pack("<HHB3x", 9, 1, tsresol) + struct.pack("<HHq", 14, 8, tsoffset) + b"\0\0\0\0"
    idb = synth._block(1, struct.pack("<HHI", 1, 0, 65535) + opts)
    pad = b"\0" * (-len(packet) % 4)
    epb = synth._block(6, struct.pack("<IIIII", 0, 0, 1000, len(packet), len(packet)) + packet + pad)
    return shb + idb + epb


@st.composite
def damaged(draw, fmt: str) -> bytes:
    payloads = draw(st.lists(st.one_of(st.sampled_from(FRAMES), FRAME_INPUTS.filter(bool)), min_size=1, max_size=5))
    data = bytearray(capture_bytes(fmt, payloads, draw(st.sampled_from(LINKTYPES)),
                                   draw(st.sampled_from([1460, 100, 9])), draw(st.booleans())))
    for at, val in draw(st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=4)):
        data[at % len(data)] = val
    for at in draw(st.lists(st.integers(0, 1 << 16), max_size=2)):  # a length field made huge
        at %= len(data)
        data[at: at + 4] = draw(st.sampled_from([b"\xff\xff\xff\xff", b"\x00\x00\x00\x10", b"\x7f\xff\xff\xf0"]))
    cut = draw(st.integers(0, len(data)))
    return bytes(data[:cut] if draw(st.booleans()) else data) + draw(st.binary(max_size=40))


@BUDGET
@given(data=damaged("pcap"))
@example(data=b"")
@example(data=b"\xd4\xc3\xb2\xa1")
def test_pcap_harness_holds(data: bytes) -> None:
    harness.check_pcap(data)


@BUDGET
@given(data=st.one_of(damaged("pcapng"), st.builds(pcapng_options, st.integers(0, 255),
                                                   st.sampled_from([0, 1, -1, 2**40, -2**40]))))
@example(data=pcapng_options(6, 0))
def test_pcapng_harness_holds(data: bytes) -> None:
    harness.check_pcapng(data)
