"""Captures of other protocols are never ours: public captures (tests/corpora/negatives-ndpi,
with their source) and an HTTPS conversation built here whose SSLv2-compatible hello reads as a
DCP_STREAM_END header. Nothing is decoded, every connection is told as undecoded, and
``validate`` exits 0 with no findings."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from corpus import corpus
from frames import run_cli as cli
from dcpinspect.transport import synth

DATA = corpus("negatives-ndpi")
CAPTURES = sorted(p for p in DATA.iterdir() if p.suffix in (".pcap", ".pcapng"))


def https_with_an_ssl2_hello(path: Path) -> Path:
    """A TLS 1.0 conversation on port 443 opened by an 85-byte SSLv2-compatible ClientHello:
    as MCBP, magic 0x80 (a request) and opcode 0x55 (DCP_STREAM_END)."""
    body = b"\x01\x03\x01" + struct.pack(">HHH", 60, 0, 16) + bytes(60) + bytes(range(16))
    hello = struct.pack(">H", 0x8000 | len(body)) + body
    server = b"\x16\x03\x01\x00\x4a\x02\x00\x00\x46\x03\x01" + bytes(64) + b"\x16\x03\x01\x03\x00" + bytes(0x300)
    app = b"\x17\x03\x01\x01\x00" + bytes(range(256))
    messages = [("c2s", hello), ("s2c", server), ("c2s", b"\x14\x03\x01\x00\x01\x01" + app), ("s2c", app * 3)]
    synth.write_pcap(path, synth.tcp_conversation(messages, server=("10.0.0.2", 443)))
    return path


@pytest.fixture(params=[*CAPTURES, "built"], ids=[*(p.name for p in CAPTURES), "https-ssl2-hello-built"])
def negative(request, tmp_path) -> Path:
    return https_with_an_ssl2_hello(tmp_path / "https.pcap") if request.param == "built" else request.param


def test_nothing_is_claimed_and_validate_is_silent(negative):
    res = cli("decode", "-f", "jsonl", str(negative))
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert rows and {r["kind"] for r in rows} == {"undecoded"}, rows[:3]
    for r in rows:
        assert r["bytes_c2s"] + r["bytes_s2c"] > 0 and r["server_port"] == int(r["flow"].rsplit(":", 1)[1])
    res = cli("validate", str(negative))
    out = res.stdout.decode()
    assert res.returncode == 0, out + res.stderr.decode()
    assert "0 frames checked: 0 errors, 0 other findings" in out
    assert f"{len(rows)} TCP connection" in out and "not decoded" in out
    res = cli("validate", "-f", "jsonl", str(negative))
    assert res.returncode == 0
    assert {json.loads(line)["kind"] for line in res.stdout.splitlines()} == {"undecoded"}  # no findings


def test_the_summary_and_stats_say_what_was_not_decoded():
    pop3 = DATA / "pop3-stls.pcap"
    res = cli("decode", "-f", "summary", str(pop3))
    assert res.returncode == 0
    assert "1 TCP connection not decoded (8,267 bytes): server port 110" in res.stdout.decode()
    res = cli("stats", str(pop3))  # no frame: unusable, and the message says why
    assert res.returncode == 2 and "1 TCP connection not decoded" in res.stderr.decode()
