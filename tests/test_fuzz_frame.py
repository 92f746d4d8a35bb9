"""Fuzz harness ``frame`` (fuzz/harness.py) in the suite: single frames decoded with and
without a collections context, and byte streams split, decoded and judged after each
negotiated HELO / DCP_OPEN prelude. Inputs reuse the decoder property tests' material:
random bytes, spec vectors with flipped bytes or huge length fields, frames around garbage.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))

import harness  # noqa: E402
from test_decoder_properties import ALL_VECTORS, FRAMES, HUGE_PATCHES, NO_MAGIC  # noqa: E402

BUDGET = settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def _flipped(name: str, flips: list[tuple[int, int]]) -> bytes:
    data = bytearray(bytes.fromhex(ALL_VECTORS[name]))
    for at, val in flips:
        data[at % len(data)] = val
    return bytes(data)


def _patched(name: str, patch: str) -> bytes:
    at, new = HUGE_PATCHES[patch]
    data = bytearray(bytes.fromhex(ALL_VECTORS[name]))
    data[at: at + len(new)] = new
    return bytes(data)


VECTOR_NAMES = st.sampled_from(sorted(ALL_VECTORS))
flipped = st.builds(_flipped, VECTOR_NAMES, st.lists(st.tuples(st.integers(0, 500), st.integers(0, 255)),
                                                     min_size=1, max_size=6))
huge = st.builds(_patched, VECTOR_NAMES, st.sampled_from(sorted(HUGE_PATCHES)))
stream = st.lists(st.one_of(st.sampled_from(FRAMES), st.lists(NO_MAGIC, min_size=1, max_size=20).map(bytes),
                            flipped, huge), min_size=1, max_size=6).map(b"".join)
FRAME_INPUTS = st.one_of(st.binary(max_size=300), flipped, huge, stream)


@BUDGET
@given(mode=st.integers(0, 255), body=FRAME_INPUTS)
@example(mode=0, body=b"")
@example(mode=0x45, body=bytes.fromhex(ALL_VECTORS["38"]))
def test_frame_harness_holds(mode: int, body: bytes) -> None:
    harness.check_frame(bytes([mode]) + body)


def test_frame_harness_reports_output_beyond_the_bound(monkeypatch) -> None:
    """The bound is live: with no allowance at all, any frame's rendering breaks it."""
    monkeypatch.setattr(harness, "OUTPUT_FACTOR", 0)
    monkeypatch.setattr(harness, "OUTPUT_SLACK", 10)
    try:
        harness.check_frame(b"\0" + FRAMES[0])
    except harness.PropertyFailure as exc:
        assert "bytes of output" in str(exc)
    else:
        raise AssertionError("no PropertyFailure")


def test_frame_harness_reports_memory_beyond_the_cap(monkeypatch) -> None:
    monkeypatch.setattr(harness, "MEMORY_CAP", 1000)
    try:
        harness.check_frame(b"\0" + b"".join(FRAMES))
    except harness.PropertyFailure as exc:
        assert "peak memory" in str(exc)
    else:
        raise AssertionError("no PropertyFailure")
