"""A real master→replica full sync on loopback (Debian's redis-server), disk-based and
diskless, captured with tcpdump and decoded: the payload's keys are the ones written
before the sync, the live writes after it appear as commands whose replication offsets
end at the master's own ``master_repl_offset``, and the replica's ACKs add up."""

from __future__ import annotations

import json
import time

import pytest

import servers
from servers import LOOPBACK, Redis, TcpDump, require, wait_until
from servers import RedisClient as Client

LIBRARY = "#!lua name=synclib\nredis.register_function('hello', function() return 'hi' end)\n"


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
        mc.call("FUNCTION", "LOAD", LIBRARY)
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
    assert not [r for r in rows if r["kind"] == "function"]
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
    # and the function library the master sent, its code whole (not without --values)
    assert [r["code"] for r in rows if r["kind"] == "function"] == [LIBRARY]
    res = servers.dcpinspect("validate", str(path))
    assert res.returncode == 0 and " 0 errors" in res.stdout, res.stdout
    _stats_of_the_sync(tmp_path, path, len(before) + 1, offset, acks)


def _stats_of_the_sync(tmp_path, path, keys: int, offset: int, acks: list[int]) -> None:
    """``stats``: the sync's phases in order, the payload's keys, the stream up to the
    master's offset, the ACKs and their lag; the plot's panels by their titles."""
    res = servers.dcpinspect("stats", "--format", "json", str(path))
    assert res.returncode == 0, res.stderr
    links = json.loads(res.stdout)["redis"]["replication"]
    assert len(links) == 1
    link = next(iter(links.values()))
    ph = link["phases"]
    assert link["resync"] == "FULLRESYNC"
    order = [ph["handshake"]["start"], ph["handshake"]["end"], ph["transfer"]["start"], ph["transfer"]["end"],
             ph["load"]["end"], ph["stable"]["end"]]
    assert None not in order and order == sorted(order)
    assert ph["transfer"]["keys"] == keys and ph["transfer"]["bytes"] > 0
    assert ph["stable"]["seconds"] > 0 and ph["stable"]["commands_per_s"] is not None
    assert link["master_offset"] == offset and link["acks"] == len(acks) and link["lag"] == offset - acks[-1] == 0
    series = link["series"]
    assert series["master_offset"][-1][1] == offset and series["replica_offset"][-1][1] == acks[-1]
    assert [p[1] for p in series["replica_offset"]] == sorted(p[1] for p in series["replica_offset"])
    svg = tmp_path / "sync.svg"
    res = servers.dcpinspect("stats", "--no-chart", "--plot", str(svg), str(path))
    assert res.returncode == 0, res.stderr
    text = svg.read_text()
    assert "Redis replication offset over time" in text and "replica ACK lag" in text and "throughput" in text
    assert "seqno over time per vbucket" not in text  # no DCP here
    assert "Redis replication" in res.stdout and "FULLRESYNC" in res.stdout
