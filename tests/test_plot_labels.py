"""``stats --plot``: each family's plot names the family and counts in its own unit, on real
captures (memcached's binary protocol from a real memcached, redis-cli's session from nDPI's
tests, a DCP session): the title is the family's (``memcached stats``, ``Redis stats``,
``DCP stats``), the throughput counts DCP items or memcached operations per second, and a
capture with neither (Redis) is drawn in MB/s alone, never as "items/s". Read from the text
the SVG carries (matplotlib writes each string drawn as a comment before its glyphs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import servers

REPO = Path(__file__).resolve().parents[1]


def texts(path: Path, tmp_path: Path) -> list[str]:
    pytest.importorskip("matplotlib")
    svg = tmp_path / "plot.svg"
    res = servers.dcpinspect("stats", str(path), "--plot", str(svg), "--no-chart")
    assert res.returncode == 0, res.stderr
    return re.findall(r"<!-- (.*?) -->", svg.read_text())


def test_a_memcached_capture_is_titled_memcached_and_counts_operations(tmp_path):
    shown = texts(REPO / "samples" / "memcached-binary.pcap", tmp_path)
    assert "memcached stats: 549 frames in 3 connections over 2.218 s" in shown
    assert "memcached ops/s" in shown and "MB/s" in shown
    assert not [t for t in shown if "DCP" in t or "items" in t]


def test_a_redis_capture_is_titled_redis_and_drawn_in_bytes(tmp_path):
    shown = texts(REPO / "tests" / "corpora" / "resp-ndpi" / "resp.pcap", tmp_path)
    assert "Redis stats: 8 frames in 1 connection over 25.441 s" in shown
    assert "MB/s" in shown
    assert not [t for t in shown if "DCP" in t or "items" in t or "memcached" in t]


def test_a_dcp_capture_counts_items(tmp_path):
    shown = texts(REPO / "samples" / "dcp-session.pcap", tmp_path)
    assert [t for t in shown if t.startswith("DCP stats: 16 frames, 4 items in 1 stream")]
    assert "DCP items/s" in shown and "seqno over time per vbucket" in shown
