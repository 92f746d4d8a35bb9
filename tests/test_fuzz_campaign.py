"""The fuzz harnesses at campaign speed (fuzz/campaign.py): the rich views, the gzipped copy
and the commands sampled out by a hash of the input, memory left to libFuzzer's limit. The
checks that run on every input must still run, and still fail when their property breaks."""

from __future__ import annotations

import random
import sys
import zlib
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
sys.path.insert(0, str(FUZZ))

import campaign  # noqa: E402
import harness  # noqa: E402
from test_decoder_properties import FRAMES  # noqa: E402
from test_fuzz_capture import capture_bytes  # noqa: E402
from test_hexdump import _plain  # noqa: E402

#: an "every" that the test inputs below are never sampled into
NEVER = 2**31 - 1


def inputs() -> dict[str, bytes]:
    frames = b"".join(FRAMES)
    return {
        "frame": bytes([0x45]) + FRAMES[0],
        "hex": bytes([0]) + _plain(frames, 0).encode(),
        "render": bytes([100, 0x48]) + frames,
        "pcap": capture_bytes("pcap", FRAMES[:4], "ether", 1460, False),
        "pcapng": capture_bytes("pcapng", FRAMES[:4], "sll", 100, True),
        "conversation": random.Random(1).randbytes(300),
    }


@pytest.fixture
def campaign_speed(monkeypatch):
    for name in ("RICH_EVERY", "GZIP_EVERY", "CLI_EVERY"):
        monkeypatch.setattr(harness, name, NEVER)
    monkeypatch.setattr(harness, "MEMORY_WAY", "none")
    monkeypatch.setattr(harness, "MAX_PACKETS", 256)


def test_turn_samples_one_input_in_every_the_same_way_each_time() -> None:
    rng = random.Random(7)
    data = [rng.randbytes(rng.randrange(1, 64)) for _ in range(6400)]
    assert all(harness.turn(d, 1) for d in data)
    chosen = [d for d in data if harness.turn(d, 64)]
    assert 50 <= len(chosen) <= 160, len(chosen)
    assert chosen == [d for d in data if harness.turn(d, 64)]
    salted = {d for d in data if harness.turn(d, 64, salt=0x9E3779B9)}
    assert salted != set(chosen)
    assert not any(harness.turn(d, NEVER) for d in data if zlib.crc32(d) % NEVER)


@pytest.mark.parametrize("entry", sorted(harness.CHECKS))
def test_each_harness_holds_at_campaign_speed(entry: str, campaign_speed) -> None:
    data = inputs()[entry]
    assert not harness.turn(data, NEVER)
    harness.CHECKS[entry](data)


@pytest.mark.parametrize("entry", ["frame", "hex", "render", "pcap"])
def test_output_bound_still_fails_when_the_rich_views_are_sampled_out(entry: str, campaign_speed, monkeypatch) -> None:
    monkeypatch.setattr(harness, "OUTPUT_FACTOR", 0)
    monkeypatch.setattr(harness, "OUTPUT_SLACK", 10)
    with pytest.raises(harness.PropertyFailure):
        harness.CHECKS[entry](inputs()[entry])


_RSS_CHECK = """
import sys
sys.path.insert(0, sys.argv[1])
import harness
harness.MEMORY_CAP = 1 << 20
with harness.bounded_memory("nothing measured", "none"):
    block = bytearray(8 << 20)
try:
    with harness.bounded_memory("eight megabytes", "rss"):
        block = bytearray(8 << 20)
        block[::4096] = b"\\1" * len(block[::4096])
except harness.PropertyFailure:
    print("caught")
"""


def test_memory_way_none_measures_nothing_and_rss_still_does() -> None:
    """In a fresh process: the resident-set way measures the growth of the process's peak,
    which a test process that has already been larger would hide."""
    import subprocess

    res = subprocess.run([sys.executable, "-c", _RSS_CHECK, str(FUZZ)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "caught", res.stderr


def test_campaign_sets_a_length_for_every_harness() -> None:
    assert set(campaign.MAX_LEN) == set(harness.CHECKS)
    assert all(64 <= n <= 1 << 16 for n in campaign.MAX_LEN.values())
