"""``dcpinspect diff A B`` on data a real redis-server holds: two dumps of one server before
and after known changes (a value, a type, an expiry set and one dropped, a key deleted, one
added) are told apart exactly, a dump against itself and against a capture of a full sync
of the same data is the same; the keys cap; exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

import servers
import test_real_redis_rdb as real
from test_rdb_values import loaded


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    """(A, B): a server's dump, and its dump after the changes."""
    tmp = tmp_path_factory.mktemp("diff")
    version = real.server_version()
    with loaded(None, tmp / "server") as c:
        now_ms = int(c.call("TIME")[0]) * 1000
        for db, commands in real._writes(version, now_ms).items():
            c.call("SELECT", db)
            for reply, cmd in zip(c.pipeline(commands), commands):
                assert not isinstance(reply, real.ReplyError), (cmd[:3], reply)
        assert c.call("SAVE") == "OK"
        shutil.copy(tmp / "server" / "dump.rdb", tmp / "a.rdb")
        c.call("SELECT", 0)
        for cmd in [("SET", "str:int", "999"), ("DEL", "set:small"), ("SET", "new:key", "x"),
                    ("DEL", "zset:small"), ("RPUSH", "zset:small", "now a list"),
                    ("PEXPIRE", "hash:small", 3_600_000), ("PERSIST", "exp:str"),
                    ("ZADD", "zset:big", "7", "m1")]:
            c.call(*cmd)
        c.call("SELECT", 5)
        c.call("SADD", "s5", "another")
        assert c.call("SAVE") == "OK"
        shutil.copy(tmp / "server" / "dump.rdb", tmp / "b.rdb")
    return tmp / "a.rdb", tmp / "b.rdb"


def diff(*args, env=None):
    return subprocess.run([*servers.dcpinspect_argv(), "diff", *map(str, args)], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, env=env)


def test_the_changes_are_found(dumps):
    a, b = dumps
    res = diff(a, b, "-f", "jsonl")
    assert res.returncode == 1, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    found = {(r["db"], r["key"]): tuple(r["changes"]) for r in rows if r["kind"] == "diff"}
    assert found == {(0, "str:int"): ("value",), (0, "set:small"): ("only_in_a",), (0, "new:key"): ("only_in_b",),
                     (0, "zset:small"): ("type",), (0, "hash:small"): ("expiry",), (0, "exp:str"): ("expiry",),
                     (0, "zset:big"): ("value",), (5, "s5"): ("value",)}
    (summary,) = [r for r in rows if r["kind"] == "diff_summary"]
    assert summary["different"] and summary["only_in_a"] == summary["only_in_b"] == summary["type"] == 1
    assert summary["value"] == 3 and summary["expiry"] == 2 and summary["unchecked"] == 0
    assert summary["same"] == summary["keys_a"] - 7
    row = next(r for r in rows if r.get("key") == "str:int")
    assert row["a"]["digest"] != row["b"]["digest"] and row["a"]["type"] == row["b"]["type"] == "string"
    line = diff(a, b, "-f", "summary")
    assert line.returncode == 1 and "different" in line.stdout and "1 only in A, 1 only in B" in line.stdout
    table = diff(a, b)
    assert table.returncode == 1 and "new:key" in table.stdout and "only_in_b" in table.stdout


def test_a_dump_and_itself_are_the_same(dumps):
    a, _ = dumps
    res = diff(a, a, "-f", "summary")
    assert res.returncode == 0 and ": same;" in res.stdout


def test_past_the_keys_cap_keys_are_unchecked(dumps):
    a, b = dumps
    env = dict(os.environ, DCPINSPECT_MAX_DIFF_KEYS="3")
    res = diff(a, b, "-f", "jsonl", env=env)
    (summary,) = [json.loads(line) for line in res.stdout.splitlines() if '"diff_summary"' in line]
    assert summary["unchecked"] > 0 and summary["only_in_b"] == 0
    assert any("DCPINSPECT_MAX_DIFF_KEYS" in n for n in summary["notes"])


def test_unusable_inputs_exit_2(dumps, tmp_path):
    a, _ = dumps
    junk = tmp_path / "junk.rdb"
    junk.write_bytes(b"not a snapshot at all")
    res = diff(a, junk)
    assert res.returncode == 2 and "not an RDB file" in res.stderr
    assert diff(a, tmp_path / "missing.rdb").returncode == 2


def test_a_full_sync_capture_against_the_masters_dump(tmp_path):
    """The data a master sends a replica (captured) is the data of its own dump."""
    servers.require("redis-server", "tcpdump", root=True)
    import test_real_redis_replication as repl

    with repl.Redis(tmp_path, "--repl-diskless-sync", "no") as master:
        mc = real.Client(master.port)
        version = real.server_version()
        for db, commands in real._writes(version, int(mc.call("TIME")[0]) * 1000).items():
            mc.call("SELECT", db)
            mc.pipeline(commands)
        assert mc.call("SAVE") == "OK"
        dump = tmp_path / "master.rdb"
        shutil.copy(master.dir / "dump.rdb", dump)
        path = tmp_path / "sync.pcap"
        capture = servers.TcpDump(path, master.port).start()
        try:
            sync_a_replica(tmp_path, master)
        finally:
            capture.stop()
        mc.call("SELECT", 0)
        mc.call("SET", "str:int", "changed")
        assert mc.call("SAVE") == "OK"
        changed = tmp_path / "changed.rdb"
        shutil.copy(master.dir / "dump.rdb", changed)
        mc.close()
    res = diff(path, dump, "-f", "summary")
    assert res.returncode == 0 and ": same;" in res.stdout, res.stdout + res.stderr
    res = diff(changed, path, "-f", "jsonl")
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert res.returncode == 1 and [(r["key"], r["changes"]) for r in rows if r["kind"] == "diff"] == \
        [("str:int", ["value"])]


def sync_a_replica(tmp_path, master) -> None:
    """A replica of ``master`` started, synced in full, and stopped."""
    import test_real_redis_replication as repl

    with repl.Redis(tmp_path, "--replicaof", servers.LOOPBACK, str(master.port)) as replica:
        rc = repl.Client(replica.port)
        assert servers.wait_until(lambda: rc.info("master_link_status") == "up", 30)
        rc.close()


def two_full_syncs(tmp_path, writes: list, path) -> list:
    """A master holding ``writes``, two replicas synced from it one after the other, ``k:3``
    set to ``changed`` between them, captured into ``path``; [the master's dump at each]."""
    import test_real_redis_replication as repl

    dumps = []
    with repl.Redis(tmp_path, "--repl-diskless-sync", "no") as master:
        mc = real.Client(master.port)
        mc.pipeline(writes)
        capture = servers.TcpDump(path, master.port).start()
        try:
            for change in (None, ("SET", "k:3", "changed")):
                if change:
                    mc.call(*change)
                assert mc.call("SAVE") == "OK"
                dumps.append(tmp_path / f"master-{len(dumps) + 1}.rdb")
                shutil.copy(master.dir / "dump.rdb", dumps[-1])
                sync_a_replica(tmp_path, master)
        finally:
            capture.stop()
        mc.close()
    return dumps


#: the strings and the list of tests/data/pcap/redis-two-syncs.pcap
TWO_SYNCS_WRITES = [("SET", f"k:{i}", f"v{i}") for i in range(20)] + [("RPUSH", "l", "a", "b")]


@pytest.fixture(scope="module")
def two_syncs(tmp_path_factory):
    """(a capture of two full syncs, [the master's dump at each]), a hash table besides."""
    servers.require("redis-server", "tcpdump", root=True)
    tmp_path = tmp_path_factory.mktemp("syncs")
    path = tmp_path / "syncs.pcap"
    writes = TWO_SYNCS_WRITES + [("HSET", "h", *(x for j in range(200) for x in (f"f{j}", "x" * j)))]
    return path, two_full_syncs(tmp_path, writes, path)


def test_a_capture_of_two_full_syncs_chooses_one(two_syncs):
    """``PATH#N`` picks the N-th full sync of the capture; by default the first, with a
    note that there are more; a sync the capture does not hold is exit 2."""
    path, dumps = two_syncs
    res = diff(path, dumps[0], "-f", "summary")
    assert res.returncode == 0 and ": same;" in res.stdout, res.stdout + res.stderr
    assert "holds 2 full syncs; used the first" in res.stdout + res.stderr
    for n, dump in ((1, dumps[0]), (2, dumps[1])):
        res = diff(f"{path}#{n}", dump, "-f", "summary")
        assert res.returncode == 0 and ": same;" in res.stdout and "holds 2" not in res.stdout, res.stdout + res.stderr
    res = diff(f"{path}#1", f"{path}#2", "-f", "jsonl")
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert res.returncode == 1 and [(r["key"], r["changes"]) for r in rows if r["kind"] == "diff"] == \
        [("k:3", ["value"])]
    res = diff(f"{path}#3", dumps[0])
    assert res.returncode == 2 and "holds 2 data sets" in res.stdout + res.stderr
    res = diff(f"{dumps[0]}#1", dumps[0])
    assert res.returncode == 2 and "only a capture" in res.stdout + res.stderr


def test_reports_on_a_full_sync_are_the_masters_dumps(two_syncs):
    """``rdb CAPTURE --report ...``: the memory reports of what each full sync sent are
    those of the master's dump of the same data (``#N`` for the second), selection too."""
    path, dumps = two_syncs

    def reports(*args):
        res = subprocess.run([*servers.dcpinspect_argv(), "rdb", *map(str, args), "-r", "memory", "-r", "types",
                              "-r", "prefix", "-r", "bigkeys", "-f", "jsonl"], capture_output=True, text=True,
                             timeout=120, stdin=subprocess.DEVNULL)
        assert res.returncode == 0, res.stderr
        return [json.loads(line) for line in res.stdout.splitlines()], res.stderr

    for cap, dump in ((path, dumps[0]), (f"{path}#2", dumps[1])):
        got, err = reports(cap)
        want, _ = reports(dump)
        assert got == want and len(got) > 10
    got, err = reports(path, "--match", "k:*")
    assert "holds 2 full syncs; used the first" in err
    assert {r["key"] for r in got if r["kind"] == "memory"} <= {f"k:{i}" for i in range(20)}
    assert got == reports(dumps[0], "--match", "k:*")[0]
    res = subprocess.run([*servers.dcpinspect_argv(), "rdb", str(path), "-f", "summary"], capture_output=True,
                         text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert res.returncode == 2 and "--report" in res.stderr + res.stdout
