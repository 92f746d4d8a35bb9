"""Real Redis clients captured mid-connection (Debian's redis-server and redis-cli on
loopback, tcpdump started after every connection opened): redis-cli's commands (quoted
arguments, a transaction, a big reply, PUBLISH), a subscriber's messages and a raw client's
pipelined and inline commands are each decoded, and every reply is paired with the command
it answers, with a positive latency."""

from __future__ import annotations

import json
import socket
import subprocess
import time

import servers
from dcpinspect.engines.files import decode_capture_file
from dcpinspect.families import VALUES
from dcpinspect.sessions.stats import StatsCollector
from servers import LOOPBACK, Redis, TcpDump, require, server_port, wait_until
from servers import RedisClient as Client

BIG = 300_000


def _read_until(sock: socket.socket, end: bytes, timeout: float = 5) -> bytes:
    buf = b""
    deadline = time.monotonic() + timeout
    while not buf.endswith(end) and time.monotonic() < deadline:
        buf += sock.recv(65536)
    return buf


def _traffic(tmp_path) -> tuple:
    require("redis-server", "redis-cli", "tcpdump", root=True)
    with Redis(tmp_path, port=server_port()) as redis:
        setup = Client(redis.port)
        setup.call("SET", "big", "b" * BIG)
        setup.call("RPUSH", "list", *[f"item-{i}" for i in range(500)])
        setup.close()
        # every connection opens before the capture starts
        cli = subprocess.Popen(["redis-cli", "-p", str(redis.port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        cli.stdin.write(b"PING\n")
        cli.stdin.flush()
        assert cli.stdout.readline() == b"PONG\n"
        sub = subprocess.Popen(["redis-cli", "-p", str(redis.port), "SUBSCRIBE", "news"], stdout=subprocess.PIPE)
        assert sub.stdout.readline() == b"subscribe\n"
        raw = socket.create_connection((LOOPBACK, redis.port), timeout=5)
        raw.sendall(b"PING\r\n")
        assert _read_until(raw, b"\r\n") == b"+PONG\r\n"
        path = tmp_path / "clients.pcap"
        dump = TcpDump(path, redis.port).start()
        try:
            # pipelined: three commands in one write, then inline commands with quotes
            raw.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n"
                        b"*2\r\n$3\r\nGET\r\n$1\r\na\r\n")
            assert _read_until(raw, b"$1\r\n1\r\n") == b"+OK\r\n:1\r\n$1\r\n1\r\n"
            raw.sendall(b'SET ikey "inline \\x41 value"\r\n')
            assert _read_until(raw, b"\r\n") == b"+OK\r\n"
            raw.sendall(b"GET ikey\r\n")
            assert _read_until(raw, b"\r\n").endswith(b"inline A value\r\n")
            script = (b'SET key "my value"\nGET key\nGET big\nLRANGE list 0 -1\nMULTI\nINCR counter\n'
                      b"SET other 'single quoted'\nEXEC\nPUBLISH news hello\nPUBLISH news world\n")
            out, _ = cli.communicate(script, timeout=30)
            assert b"my value" in out and b"QUEUED" in out
            assert wait_until(lambda: True, 0.2)
            time.sleep(0.3)
        finally:
            dump.stop()
            raw.close()
            sub.terminate()
            sub.wait(5)
    return path, redis.port


def test_every_command_and_reply_of_real_clients_joined_midway(tmp_path):
    path, port = _traffic(tmp_path)
    # the port is no Redis port: say so, as with tshark's "decode as" (the sniffer would
    # take the connections too, but only from the direction whose bytes showed them)
    res = servers.dcpinspect("decode", "-f", "jsonl", "--decode-as", f"{port}=redis", str(path))
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    frames = [r for r in rows if r["kind"] == "frame"]
    flows = {r["flow"] for r in frames}
    assert len(flows) == 3
    commands = [r for r in frames if r["role"] == "command"]
    replies = [r for r in frames if r.get("role") == "reply"]
    names = [r["command"][0].upper() for r in commands]
    assert names.count("PUBLISH") == 2 and "EXEC" in names and "LRANGE" in names
    assert ["SET", "ikey", "inline A value"] in [r["command"] for r in commands]
    assert ["SET", "key", "my value"] in [r["command"] for r in commands]
    assert ["SET", "other", "single quoted"] in [r["command"] for r in commands]
    # every command answered once, by a reply on its own connection that names its frame
    answered = [(r["flow"], r["reply_to"]) for r in replies]
    assert sorted(answered) == sorted((c["flow"], c["frame"]) for c in commands)
    assert all(r["latency_ms"] is not None and r["latency_ms"] > 0 for r in replies)
    big = [r for r in replies if r["length"] > BIG]
    assert len(big) == 1 and big[0]["type"] == "bulk"
    lrange = next(r for r in replies if r["type"] == "array" and len(r["value"]) == 500)
    assert lrange["value"][0] == "item-0"
    messages = [r for r in frames if r.get("role") == "message"]
    assert [m["value"] for m in messages] == [["message", "news", "hello"], ["message", "news", "world"]]
    assert not [f for r in rows for f in r.get("findings", [])]
    assert not [r for r in rows if r["kind"] in ("skipped", "gap")]

    collector = StatsCollector()
    for item in decode_capture_file(path, ports={port: "redis"}, detail=VALUES):
        collector.add(item)
    report = collector.report()
    latency = report["redis"]["commands"]
    assert latency["PUBLISH"]["count"] == 2 and latency["GET"]["count"] >= 3
    for entry in latency.values():
        assert 0 < entry["latency_ms"]["p50"] <= entry["latency_ms"]["p99"] <= entry["latency_ms"]["max"]
    slowest = report["redis"]["slowest"]
    assert slowest and slowest[0]["latency_ms"] == max(e["latency_ms"]["max"] for e in latency.values())
