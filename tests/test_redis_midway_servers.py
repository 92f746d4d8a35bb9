"""A real redis-server on a port no family owns, captured by tcpdump started after its
clients connected (no SYN: which side is the server is the reassembler's guess, the lower
port's). Its port is above the kernel's ephemeral range, so every client's port is the
lower one and the guess is wrong for every connection joined mid-way. A client that sends
only inline commands (which alone show nothing: POP3 and SMTP send such lines) is decoded
once another connection shows the server: a replica's handshake, a client's command
arrays answered by replies, or a replication link under way, the master's stream
acknowledged by the replica. The connections the guess got wrong are turned round, so
that commands are the client's and replies the server's, each paired with its command."""

from __future__ import annotations

import json
import socket
import time

import pytest

import servers
from servers import LOOPBACK, Redis, TcpDump, require, wait_until
from servers import RedisClient as Client


def high_port() -> int:
    """A free loopback port above the kernel's ephemeral range (every client's port is lower)."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        top = int(f.read().split()[1])
    if top >= 65000:
        pytest.skip("the ephemeral port range leaves no port above it")
    return servers.free_port_among(range(top + 1, 65536), "above the ephemeral range")


def inline(sock: socket.socket, line: bytes) -> bytes:
    """One inline command and its one-line reply."""
    sock.sendall(line + b"\r\n")
    got = b""
    while not got.endswith(b"\r\n"):
        got += sock.recv(4096)
    return got


#: what the inline client sends once the capture runs, as the server splits it
INLINE = [(b"SET a:1 one", ["SET", "a:1", "one"]), (b'SET a:2 "two words"', ["SET", "a:2", "two words"]),
          (b"SET a:3 three", ["SET", "a:3", "three"]), (b"INCR n", ["INCR", "n"])]


def midway_capture(tmp_path, evidence: str):
    """The capture (path, server port): an inline client and an idle RESP client connected
    before tcpdump starts; then, between the inline client's commands, ``evidence``: a
    replica syncing (``replica``), the RESP client's commands (``client``), or a replica
    synced before the capture (``synced``: the master's stream of the inline client's
    writes, and the replica's acknowledgements)."""
    require("redis-server", "tcpdump", root=True)
    with Redis(tmp_path, port=high_port()) as master:
        lines = socket.create_connection((LOOPBACK, master.port), timeout=5)
        assert inline(lines, b"SET before 1") == b"+OK\r\n"
        arrays = Client(master.port)
        assert arrays.call("PING") == b"+PONG"
        path = tmp_path / f"midway-{evidence}.pcap"
        replica = rc = None
        if evidence == "synced":
            replica = Redis(tmp_path, "--replicaof", LOOPBACK, str(master.port)).__enter__()
            rc = Client(replica.port)
            assert wait_until(lambda: rc.info("master_link_status") == "up", 30), "the replica never synced"
        with TcpDump(path, master.port):
            for line, _ in INLINE[:2]:
                assert inline(lines, line) == b"+OK\r\n"
            if evidence == "replica":
                with Redis(tmp_path, "--replicaof", LOOPBACK, str(master.port)) as replica:
                    rc = Client(replica.port)
                    assert wait_until(lambda: rc.info("master_link_status") == "up", 30), "the replica never synced"
                    assert inline(lines, INLINE[2][0]) == b"+OK\r\n"
                    assert wait_until(lambda: rc.call("EXISTS", "a:3") == b":1", 10)
                    rc.close()
            elif evidence == "synced":
                assert inline(lines, INLINE[2][0]) == b"+OK\r\n"
                assert wait_until(lambda: rc.call("EXISTS", "a:3") == b":1", 10)
                time.sleep(1.2)  # the replica acknowledges once a second
            else:
                assert arrays.call("SET", "b:1", "x") == b"+OK"
                assert arrays.call("GET", "b:1") == b"x"
                assert arrays.call("INCR", "m") == b":1"
                assert inline(lines, INLINE[2][0]) == b"+OK\r\n"
            assert inline(lines, INLINE[3][0]) == b":1\r\n"
            time.sleep(0.3)
        lines.close()
        arrays.sock.close()
        if replica is not None:
            rc.close()
            replica.__exit__(None, None, None)
    return path, master.port


@pytest.mark.parametrize("evidence", ["replica", "client", "synced"])
def test_an_inline_client_joined_midway_is_decoded_once_its_server_is_shown(tmp_path, evidence):
    path, port = midway_capture(tmp_path, evidence)
    res = servers.dcpinspect("decode", "-f", "jsonl", str(path))  # no --decode-as: the port is no family's
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert not [r for r in rows if r["kind"] == "undecoded"], "every connection to the server is decoded"
    frames = [r for r in rows if r["kind"] == "frame"]
    assert frames and all(r["flow"].endswith(f"-127.0.0.1:{port}") for r in frames), "the server's side is its own"
    mine = [r for r in frames if r.get("type") == "inline"]
    flow = mine[0]["flow"]
    commands = [r for r in frames if r["flow"] == flow and r["role"] == "command"]
    replies = [r for r in frames if r["flow"] == flow and r["role"] == "reply"]
    assert [r["command"] for r in commands] == [want for _, want in INLINE]
    assert all(r["direction"] == "c2s" for r in commands) and all(r["direction"] == "s2c" for r in replies)
    assert [r["reply_to"] for r in replies] == [r["frame"] for r in commands]
    assert [r["value"] for r in replies] == ["OK", "OK", "OK", 1]
    assert all(r["latency_ms"] > 0 for r in replies)
    if evidence == "client":  # the evidence itself was joined mid-way, the wrong way round
        others = [r for r in frames if r["flow"] != flow]
        assert [r["command"] for r in others if r["role"] == "command"] == [["SET", "b:1", "x"], ["GET", "b:1"],
                                                                              ["INCR", "m"]]
        assert [r["value"] for r in others if r["role"] == "reply"] == ["OK", "x", 1]
    else:
        link = [r for r in frames if r["flow"] != flow and r.get("command")]
        if evidence == "replica":
            assert ["REPLCONF", "capa", "eof", "capa", "psync2"] in [r["command"] for r in link]
        acks = [r for r in link if r["command"][:2] == ["REPLCONF", "ACK"]]
        assert acks and all(r["direction"] == "c2s" for r in acks)  # the replica is the client
        sets = [r["command"] for r in link if r["direction"] == "s2c" and r["command"][0] == "SET"]
        assert sets and sets == [want for _, want in INLINE[:3]][-len(sets):]  # the master's stream
    assert not [f for r in rows for f in r.get("findings", [])]
    res = servers.dcpinspect("validate", str(path))
    assert res.returncode == 0 and " 0 errors, 0 other findings" in res.stdout and "not decoded" not in res.stdout, \
        res.stdout
