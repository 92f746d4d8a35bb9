"""A server shown speaking a family has every connection to it decoded, from its first
byte: a real redis-server on a port no family owns, captured with tcpdump, with client
connections that write by inline commands (which alone tell nothing: POP3 and SMTP send
such lines) before, while and after a replica syncs from it. The replica's handshake shows
the server; the clients' connections are decoded, those that ended before it too."""

from __future__ import annotations

import json
import socket
import time

import servers
from servers import LOOPBACK, TcpDump, require, wait_until
from test_real_redis_replication import Client, Redis


def inline(sock: socket.socket, line: str) -> bytes:
    """One inline command and its one-line reply."""
    sock.sendall(line.encode() + b"\r\n")
    got = b""
    while not got.endswith(b"\r\n"):
        got += sock.recv(4096)
    return got


def test_a_servers_other_connections_are_decoded_from_their_first_byte(tmp_path):
    require("redis-server", "tcpdump", root=True)
    path = tmp_path / "clients.pcap"
    with Redis(tmp_path) as master:
        assert master.port not in (6379, 6380)
        with TcpDump(path, master.port):
            early = socket.create_connection((LOOPBACK, master.port), timeout=5)  # open throughout
            assert inline(early, "SET early:1 one") == b"+OK\r\n"
            gone = socket.create_connection((LOOPBACK, master.port), timeout=5)  # over before the sync
            assert inline(gone, "SET gone:1 two") == b"+OK\r\n"
            gone.close()
            time.sleep(0.2)
            with Redis(tmp_path, "--replicaof", LOOPBACK, str(master.port)) as replica:
                rc = Client(replica.port)
                assert wait_until(lambda: rc.info("master_link_status") == "up", 30), "the replica never synced"
                assert inline(early, "SET early:2 three") == b"+OK\r\n"
                late = socket.create_connection((LOOPBACK, master.port), timeout=5)  # after the sync began
                assert inline(late, "SET late:1 four") == b"+OK\r\n"
                assert wait_until(lambda: rc.call("EXISTS", "late:1") == b":1", 10)
                late.close()
                rc.close()
            early.close()
    res = servers.dcpinspect("decode", "-f", "jsonl", str(path))
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert not [r for r in rows if r["kind"] == "undecoded"], "every connection to the server is decoded"
    sent = [r["command"] for r in rows if r["kind"] == "frame" and r.get("direction") == "c2s" and r.get("command")]
    for command in (["SET", "early:1", "one"], ["SET", "gone:1", "two"], ["SET", "early:2", "three"],
                    ["SET", "late:1", "four"]):
        assert command in sent, command
    replies = [r for r in rows if r["kind"] == "frame" and r.get("direction") == "s2c"]
    flows = {r["flow"] for r in rows if r["kind"] == "frame"}
    assert len(flows) == 4  # the three clients and the replica's link
    assert {r["flow"] for r in replies} == flows  # the clients' replies too
    res = servers.dcpinspect("decode", "-f", "summary", str(path))
    assert res.returncode == 0 and "not decoded" not in res.stdout, res.stdout
    res = servers.dcpinspect("validate", str(path))
    assert res.returncode == 0 and " 0 errors, 0 other findings" in res.stdout and "not decoded" not in res.stdout, \
        res.stdout
