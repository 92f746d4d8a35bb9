"""``stats`` counts every byte of a decoded connection, what could not be cut into frames
too (skipped), each way."""

from __future__ import annotations

import json

from frames import request, response, run_cli
from dcpinspect.transport import synth

NOOP = 0x0A


def test_stats_counts_the_bytes_that_were_skipped(tmp_path):
    blob = b"\x00" * 490_000  # no frame: skipped, yet carried by the connection
    messages = [("c2s", request(NOOP, opaque=1)), ("s2c", response(NOOP, opaque=1)), ("c2s", request(NOOP, opaque=2)),
                ("s2c", blob)]
    path = tmp_path / "skipped.pcap"
    synth.write_pcap(path, synth.tcp_conversation(messages))
    res = run_cli("stats", "-f", "json", str(path))
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    (conn,) = report["connections"].values()
    assert conn["frames"] == {"c2s": 2, "s2c": 1, "total": 3}
    assert conn["skipped_bytes"] == len(blob)
    assert conn["bytes"] == {"c2s": 48, "s2c": 24 + len(blob), "total": 72 + len(blob)}
    assert report["capture"]["bytes"] == 72 + len(blob)
    assert report["capture"]["undecoded"] == {"connections": 0, "bytes": 0, "ports": {}}


def test_stats_tells_the_connections_it_did_not_decode(tmp_path):
    ours = synth.tcp_conversation([("c2s", request(NOOP, opaque=1)), ("s2c", response(NOOP, opaque=1))])
    http = synth.tcp_conversation([("c2s", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"), ("s2c", b"HTTP/1.1 204 No\r\n\r\n")],
                                  client=("10.0.0.1", 50001), server=("10.0.0.2", 8080))
    path = tmp_path / "mixed.pcap"
    synth.write_pcap(path, ours + http)
    report = json.loads(run_cli("stats", "-f", "json", str(path)).stdout)
    assert report["capture"]["undecoded"] == {"connections": 1, "bytes": 46,
                                             "ports": {"8080": {"connections": 1, "bytes": 46}}}
    assert list(report["connections"]) == ["10.0.0.1:50000-10.0.0.2:11210"]
    text = run_cli("stats", str(path)).stdout.decode()
    assert "1 TCP connection not decoded (46 bytes): server port 8080" in text
