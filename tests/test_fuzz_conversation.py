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


def test_the_packet_cap_keeps_the_front_of_the_same_conversation(monkeypatch) -> None:
    """A campaign's cap on packets gives the first packets of what the suite builds from the
    same choices (link type, format, segment sizes, lost, repeated and reordered segments, a
    second connection, times), not another capture: the choices read do not depend on the cut."""
    from dcpgen import Dcp

    d = Dcp().handshake(("enable_noop", "true"))
    p = d.stream(5)
    p.snapshot(12)
    p.marker(13, 20)
    for n in range(13, 21):
        p.mutation(seqno=n, value=bytes(range(n * 5)))
    cut_some = 0
    for seed in range(40):
        choices = random.Random(seed).randbytes(64)
        monkeypatch.setattr(harness, "MAX_PACKETS", 4000)
        packets, linktype, fmt = harness._carry(harness.Choices(choices), d.frames)
        monkeypatch.setattr(harness, "MAX_PACKETS", 16)
        assert harness._carry(harness.Choices(choices), d.frames) == (packets[:16], linktype, fmt)
        cut_some += len(packets) > 16
    assert cut_some >= 30


@BUDGET
@given(data=st.binary(max_size=1200))
@example(data=b"")
@example(data=random.Random(1).randbytes(600))
def test_conversation_harness_holds(data: bytes) -> None:
    harness.check_conversation(data)
