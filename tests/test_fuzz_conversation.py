"""Fuzz harness ``conversation`` (fuzz/harness.py) in the suite: whole TCP conversations
built from the fuzzer's choices (tests/dcpgen.py exchanges, valid or broken, spec vectors
with flipped bytes, made-up frames with lying lengths, garbage; segment sizes, sequence
numbers, lost, repeated and reordered segments, how the connection ends, link type,
a second interleaved connection, time going back), then the engine and every capture
command."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))

import harness  # noqa: E402

BUDGET = settings(max_examples=10, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def test_choices_build_real_conversations() -> None:
    """The builder makes captures with frames in them, from almost any bytes."""
    sizes = []
    for seed in range(20):
        packets, _, _ = harness.build_conversation(random.Random(seed).randbytes(400))
        sizes.append(sum(len(p if isinstance(p, bytes) else p[1]) for p in packets))
    assert sum(1 for s in sizes if s > 500) >= 15, sizes


@BUDGET
@given(data=st.binary(max_size=1200))
@example(data=b"")
@example(data=random.Random(1).randbytes(600))
def test_conversation_harness_holds(data: bytes) -> None:
    harness.check_conversation(data)
