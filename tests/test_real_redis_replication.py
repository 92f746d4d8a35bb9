"""A real master→replica full sync on loopback (Debian's redis-server), disk-based and
diskless, captured with tcpdump and decoded: the payload's keys are the ones written
before the sync, the live writes after it appear as commands whose replication offsets
end at the master's own ``master_repl_offset``, and the replica's ACKs add up."""

from __future__ import annotations

import json
import socket
import subprocess
import time

import pytest

import servers
from servers import LOOPBACK, TcpDump, free_port, require, wait_until


def _resp(*words: str) -> bytes:
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w.encode()), w.encode()) for w in words)


class Client:
    """Just enough RESP to write keys and read INFO."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection((LOOPBACK, port), timeout=5)
        self.buf = b""

    def call(self, *words: str) -> bytes:
        self.sock.sendall(_resp(*words))
        while b"\r\n" not in self.buf:
            self.buf += self.sock.recv(65536)
        line, _, rest = self.buf.partition(b"\r\n")
        if line.startswith(b"$") and int(line[1:]) >= 0:
            n = int(line[1:])
            while len(rest) < n + 2:
                rest += self.sock.recv(65536)
            self.buf = rest[n + 2:]
            return rest[:n]
        self.buf = rest
        return line

    def info(self, field: str) -> str:
        for line in self.call("INFO", "replication").decode().splitlines():
            if line.startswith(field + ":"):
                return line.split(":", 1)[1]
        return ""

    def close(self) -> None:
        self.sock.close()


class Redis:
    """``redis-server`` on a free loopback port, without persistence, for a ``with`` block."""

    def __init__(self, workdir, *args: str) -> None:
        self.port = free_port()
        self.dir = workdir / f"redis-{self.port}"
        self.dir.mkdir(parents=True)
        self.args = args

    def __enter__(self) -> "Redis":
        binary = require("redis-server")["redis-server"]
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", LOOPBACK, "--save", "", "--appendonly", "no",
             "--dir", str(self.dir), "--daemonize", "no", *self.args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert wait_until(lambda: servers._connectable(self.port), 10), "redis-server did not start"
        return self

    def __exit__(self, *exc) -> None:
        servers._stop(self.proc)


@pytest.mark.parametrize("diskless", [False, True], ids=["disk", "diskless"])
def test_a_real_full_sync_and_live_writes(tmp_path, diskless):
    require("redis-server", "tcpdump", root=True)
    sync = ["--repl-diskless-sync", "yes" if diskless else "no", "--repl-diskless-sync-delay", "0"]
    with Redis(tmp_path, *sync, "--enable-debug-command", "yes") as master:
        mc = Client(master.port)
        before = {f"before:{i}": f"value-{i}" for i in range(50)}
        for k, v in before.items():
            mc.call("SET", k, v)
        mc.call("RPUSH", "list", "a", "b", "c")
        digest = mc.call("DEBUG", "DIGEST").decode().lstrip("+")  # of the data the full sync sends
        path = tmp_path / "sync.pcap"
        dump = TcpDump(path, master.port).start()
        try:
            with Redis(tmp_path, "--replicaof", LOOPBACK, str(master.port)) as replica:
                rc = Client(replica.port)
                assert wait_until(lambda: rc.info("master_link_status") == "up", 30), "the replica never synced"
                mc.call("SET", "after", "1")
                mc.call("DEL", "before:0")
                mc.call("SELECT", "0")
                assert wait_until(lambda: rc.call("EXISTS", "before:0") == b":0", 10)
                offset = int(mc.info("master_repl_offset"))
                # the replica ACKs once a second: wait for one covering the writes
                assert wait_until(lambda: int(rc.info("slave_repl_offset") or 0) >= offset, 10)
                time.sleep(2.5)
                offset = int(mc.info("master_repl_offset"))
                rc.close()
        finally:
            dump.stop()
        mc.close()
    res = servers.dcpinspect("decode", "-f", "jsonl", str(path))
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    keys = {r["key"]: r for r in rows if r["kind"] == "key"}
    assert set(before) | {"list"} <= set(keys)
    assert keys["list"]["type"] == "list" and keys["before:1"]["type"] == "string"
    head = [r for r in rows if r["kind"] == "payload"]
    assert len(head) == 1 and head[0]["form"] == ("eof" if diskless else "length")
    summary = [r for r in rows if r["kind"] == "summary"][0]
    assert summary["complete"] and summary["checksum"] in ("ok", "not computed")
    stream = [r for r in rows if r["kind"] == "frame" and r["repl_offset"] is not None]
    commands = [r["command"] for r in stream]
    assert ["SET", "after", "1"] in commands and ["DEL", "before:0"] in commands
    last = stream[-1]
    assert last["repl_offset"] + last["length"] == offset  # the master's own count of the stream
    acks = [r["ack_offset"] for r in rows if r.get("ack_offset") is not None]
    assert acks and acks[-1] == offset
    assert not [f for r in rows for f in r.get("findings", [])]
    # with --values: the payload's keys with their values, and the master's own digest
    res = servers.dcpinspect("decode", "-f", "jsonl", "--values", str(path))
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    keys = {r["key"]: r for r in rows if r["kind"] == "key"}
    assert {k: keys[k]["value"] for k in before} == before and keys["list"]["value"] == ["a", "b", "c"]
    assert [r["digest"] for r in rows if r["kind"] == "summary"] == [digest]
    res = servers.dcpinspect("validate", str(path))
    assert res.returncode == 0 and " 0 errors" in res.stdout, res.stdout
