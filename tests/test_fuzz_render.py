"""Fuzz harness ``render`` (fuzz/harness.py) in the suite: whatever a byte stream decodes
to, through the table, diagram, jsonl, summary and stats outputs at any console width,
with output bounded in the size of the input."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))

import harness  # noqa: E402
from test_decoder_properties import FRAMES  # noqa: E402
from test_fuzz_frame import FRAME_INPUTS  # noqa: E402

BUDGET = settings(max_examples=20, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@BUDGET
@given(width=st.integers(0, 255), mode=st.integers(0, 255), body=FRAME_INPUTS)
@example(width=0, mode=0x50, body=b"".join(FRAMES))
def test_render_harness_holds(width: int, mode: int, body: bytes) -> None:
    harness.check_render(bytes([width, mode]) + body)
