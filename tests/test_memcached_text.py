"""memcached's text protocol on the port memcached serves MCBP on: a real memcached, one
client speaking text (``set``, ``get``, ``stats``, ``version``) and one speaking MCBP on
the same port, captured with tcpdump. The binary client's frames are decoded; the text
client's connection is not taken for MCBP frames (whose "header" would be its first 24
bytes of text) but told as an undecoded connection of the memcached text protocol, its
bytes each way counted, in ``decode``, ``validate`` and ``stats``."""

from __future__ import annotations

import json
import socket
import time

import pytest

import servers
from dcpinspect.families.mcbp.text import refuses
from servers import LOOPBACK, capture_traffic

TEXT = [b"set greeting 0 0 5\r\nhello\r\n", b"get greeting\r\n", b"version\r\n", b"stats\r\n"]


def _talk(port: int, cap) -> None:
    text = socket.create_connection((LOOPBACK, port), timeout=5)
    for line in TEXT:
        text.sendall(line)
        buf = b""
        while not buf.endswith((b"STORED\r\n", b"END\r\n")) and not buf.startswith(b"VERSION"):
            buf += text.recv(65536)
        if line.startswith(b"get"):
            assert buf == b"VALUE greeting 0 5\r\nhello\r\nEND\r\n"
    with servers.McClient(port) as mc:
        assert mc.get(b"greeting").value == b"hello"
        cap.clients.append(mc)
    text.close()
    time.sleep(0.2)


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    return capture_traffic(tmp_path_factory.mktemp("text"), "text", _talk)


def test_the_text_client_is_undecoded_and_the_binary_one_decoded(capture):
    res = servers.dcpinspect("decode", "-f", "jsonl", "--port", str(capture.port), str(capture.path))
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    frames = [r for r in rows if r["kind"] == "frame"]
    assert frames and len({r["flow"] for r in frames}) == 1
    assert [r["opcode_name"] for r in frames] == ["GET", "GET"]
    undecoded = [r for r in rows if r["kind"] == "undecoded"]
    assert len(undecoded) == 1 and undecoded[0]["flow"] not in {r["flow"] for r in frames}
    assert undecoded[0]["message"].startswith(f"memcached text protocol on port {capture.port}:")
    assert undecoded[0]["bytes_c2s"] == sum(len(t) for t in TEXT) and undecoded[0]["bytes_s2c"] > 1000
    assert not [r for r in rows if r["kind"] == "skipped" or r.get("findings")]


def test_validate_and_stats_tell_the_text_connection(capture):
    res = servers.dcpinspect("validate", "--port", str(capture.port), str(capture.path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 TCP connection not decoded (" in res.stdout and f"server port {capture.port}" in res.stdout
    res = servers.dcpinspect("stats", "--format", "json", "--port", str(capture.port), str(capture.path))
    assert res.returncode == 0, res.stderr
    undecoded = json.loads(res.stdout)["capture"]["undecoded"]
    assert undecoded["connections"] == 1 and undecoded["ports"] == {
        str(capture.port): {"bytes": undecoded["bytes"], "connections": 1}} and undecoded["bytes"] > 1000


@pytest.mark.parametrize("head", TEXT + [b"gets a b\r\n", b"mg key v\r\n", b"flush_all\r\n", b"stats slabs\r\n"])
def test_text_commands_are_refused(head):
    assert refuses(head) == "memcached text protocol"


@pytest.mark.parametrize("head", [b"\x80\x00\x00\x05" + bytes(20), b"\x08\x1f\x00\x00" + bytes(20), b"settings",
                                  b"GET / HTTP/1.1\r\n", b""])
def test_mcbp_and_other_bytes_are_not(head):
    assert refuses(head) is None
