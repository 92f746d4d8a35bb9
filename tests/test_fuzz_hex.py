"""Fuzz harness ``hex`` (fuzz/harness.py) in the suite: pasted text decoded and rendered in
every format in this process, then the ``hex`` command on it (exit 0, 1 or 2; output
bounded). Texts are the spec vectors, flipped, laid out by the hexdump tests' formatters
(plain, xxd, hexdump -C, document diagrams), cut anywhere, or any text at all.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))

import harness  # noqa: E402
from test_decoder_properties import FRAMES  # noqa: E402
from test_fuzz_frame import FRAME_INPUTS  # noqa: E402
from test_hexdump import _diagram, _hexdump_c_like, _plain, _xxd_like  # noqa: E402

BUDGET = settings(max_examples=20, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

LAYOUTS = {
    "plain": lambda data, n: _plain(data, n % 5),
    "xxd": lambda data, n: _xxd_like(data, (n % 4) * 16),
    "hexdump-C": lambda data, n: _hexdump_c_like(data),
    "diagram": lambda data, n: _diagram(data, 1 + n % 8, " " * (n % 3)),
}


def _laid_out(layout: str, data: bytes, n: int, cut: int) -> str:
    text = LAYOUTS[layout](data, n) if data else ""
    return text[: len(text) - cut % (len(text) + 1)] if cut else text


dumps = st.builds(_laid_out, st.sampled_from(sorted(LAYOUTS)), FRAME_INPUTS.filter(bool), st.integers(0, 7),
                  st.integers(0, 40))
HEX_TEXTS = st.one_of(dumps.map(str.encode), st.text(max_size=200).map(str.encode), st.binary(max_size=200))


@BUDGET
@given(mode=st.integers(0, 255), text=HEX_TEXTS)
@example(mode=0, text=b"")
@example(mode=0x22, text=_plain(b"".join(FRAMES), 0).encode())
def test_hex_harness_holds(mode: int, text: bytes) -> None:
    harness.check_hex(bytes([mode]) + text)
