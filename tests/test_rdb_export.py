"""``rdb --format resp``: the dump a real redis-server wrote (every type and encoding of its
version, three dbs, expiries, big and binary values, streams with consumer groups,
consumers and pending entries, a function library) exported as commands, piped with
``redis-cli --pipe`` into a second, empty redis-server: both servers then hold the same
data, by ``DEBUG DIGEST``, by each key's ``DEBUG DIGEST-VALUE``, and by what the digest
leaves out (streams' groups, consumers and pending entries, the functions)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import servers
import test_real_redis_rdb as real
from test_real_redis_rdb import snapshot  # noqa: F401  (the real server's dump, a fixture)
from test_rdb_values import loaded
from dcpinspect.families.redis.reports.export import BATCH_ARGS


def export(path) -> bytes:
    res = subprocess.run([*servers.dcpinspect_argv(), "rdb", "-f", "resp", str(path)], capture_output=True,
                         stdin=subprocess.DEVNULL, timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout


def commands(data: bytes) -> list[list[bytes]]:
    """The RESP arrays of bulk strings ``data`` holds, parsed."""
    out, i = [], 0
    while i < len(data):
        assert data[i:i + 1] == b"*"
        j = data.index(b"\r\n", i)
        n, i = int(data[i + 1:j]), j + 2
        parts = []
        for _ in range(n):
            assert data[i:i + 1] == b"$"
            j = data.index(b"\r\n", i)
            size, i = int(data[i + 1:j]), j + 2
            parts.append(data[i:i + size])
            assert data[i + size:i + size + 2] == b"\r\n"
            i += size + 2
        out.append(parts)
    return out


def _streams(c, keys) -> dict:
    out = {}
    for k in keys:
        groups = []
        for g in c.call("XINFO", "GROUPS", k):
            g = real._map(g)
            groups.append((g["name"], g["last-delivered-id"], g.get("entries-read"), g["pending"],
                           [(p[0], p[1], p[3]) for p in c.call("XPENDING", k, g["name"], "-", "+", 1000)],
                           sorted(real._map(x)["name"] for x in c.call("XINFO", "CONSUMERS", k, g["name"]))))
        info = real._map(c.call("XINFO", "STREAM", k))
        out[k] = (info["length"], info["last-generated-id"], info.get("entries-added"),
                  info.get("max-deleted-entry-id"), groups)
    return out


def _state(c, facts) -> dict:
    state = {"digest": c.call("DEBUG", "DIGEST")}
    for db, keys in facts.items():
        c.call("SELECT", db)
        names = sorted(keys)
        state[db] = dict(zip(names, c.call("DEBUG", "DIGEST-VALUE", *names)))
        state[(db, "streams")] = _streams(c, [k for k in names if keys[k]["type"] == "stream"])
        state[(db, "ttl")] = {k: c.call("PEXPIRETIME", k) for k in names}
    state["functions"] = c.call("FUNCTION", "LIST", "WITHCODE") if c.call("FUNCTION", "LIST") else []
    return state


def test_export_loads_into_an_empty_server(snapshot, tmp_path):
    data = export(snapshot.path)
    sent = commands(data)
    assert max(len(c) for c in sent if c[0] in (b"RPUSH", b"SADD", b"HSET")) <= BATCH_ARGS * 2 + 2
    assert sum(1 for c in sent if c[0] == b"RPUSH" and c[1] == b"list:big") == -(-2000 // BATCH_ARGS)
    cli = servers.require("redis-cli")["redis-cli"]
    with loaded(snapshot.path, tmp_path / "original") as original:
        want = _state(original, snapshot.facts)
        with loaded(None, tmp_path / "copy") as copy:
            assert copy.call("DBSIZE") == 0
            port = copy.sock.getpeername()[1]
            res = subprocess.run([cli, "-h", servers.LOOPBACK, "-p", str(port), "--pipe"], input=data,
                                 capture_output=True, timeout=120)
            assert res.returncode == 0 and b"errors: 0" in res.stdout, res.stdout + res.stderr
            got = _state(copy, snapshot.facts)
    assert got["digest"] == want["digest"]
    for db in snapshot.facts:
        assert got[db] == want[db], db
        assert got[(db, "streams")] == want[(db, "streams")], db
        assert got[(db, "ttl")] == want[(db, "ttl")], db
    assert got["functions"] == want["functions"]


def test_export_refuses_a_terminal(snapshot):
    pytest.importorskip("pty")
    import os
    import pty

    argv = servers.dcpinspect_argv()
    pid, fd = pty.fork()
    if pid == 0:  # the child: stdout is the terminal
        os.execvp(argv[0], [*argv, "rdb", "-f", "resp", str(snapshot.path)])
    out = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 2 and b"not to a terminal" in out and b"SELECT" not in out


def _pipe(copy, data: bytes) -> None:
    cli = servers.require("redis-cli")["redis-cli"]
    port = copy.sock.getpeername()[1]
    res = subprocess.run([cli, "-h", servers.LOOPBACK, "-p", str(port), "--pipe"], input=data,
                         capture_output=True, timeout=120)
    assert res.returncode == 0 and b"errors: 0" in res.stdout, res.stdout + res.stderr


def test_pending_entries_of_deleted_messages(tmp_path):
    """A message delivered, then deleted (``XDEL``: its pending entry stays, by the server's
    design), comes back pending in the copy; the stream's entries, last id, entries added
    and largest deleted id stay the original's."""
    with loaded(None, tmp_path / "original") as original:
        for cmd in (*[("XADD", "s", f"5-{i}", "n", str(i)) for i in range(6)],
                    ("XGROUP", "CREATE", "s", "g", "0"),
                    ("XREADGROUP", "GROUP", "g", "alice", "COUNT", "4", "STREAMS", "s", ">"),
                    ("XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", ">"),
                    ("XDEL", "s", "5-1", "5-4"), ("XDEL", "s", "5-5"),
                    ("XGROUP", "CREATE", "s", "late", "$")):
            original.call(*cmd)
        assert original.call("SAVE") == "OK"
        want = _streams(original, ["s"]), original.call("DEBUG", "DIGEST"), original.call("XRANGE", "s", "-", "+")
        data = export(tmp_path / "original" / "dump.rdb")
    assert [c for c in commands(data) if c[0] == b"XDEL"] == [[b"XDEL", b"s", b"5-1", b"5-4"]]
    with loaded(None, tmp_path / "copy") as copy:
        _pipe(copy, data)
        got = _streams(copy, ["s"]), copy.call("DEBUG", "DIGEST"), copy.call("XRANGE", "s", "-", "+")
    assert got == want
    (pending,) = [g[4] for g in want[0]["s"][4] if g[0] in ("g", b"g")]
    assert [p[0] if isinstance(p[0], str) else p[0].decode() for p in pending] == ["5-0", "5-1", "5-2", "5-3", "5-4"]  # 5-1 and 5-4 deleted, still pending


def test_module_values_are_named_not_dropped():
    """A module's value (librdb's test file): no command for it, and stderr names the key."""
    path = Path(__file__).parent / "corpora" / "rdb-librdb" / "module.rdb"
    res = subprocess.run([*servers.dcpinspect_argv(), "rdb", "-f", "resp", str(path)],
                         capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
    assert res.returncode == 0 and res.stdout == b""
    err = res.stderr.decode()
    assert "not exported: db 0 key 'key1' at offset 90: a value of module 'test__rdb'" in err
    assert "0 keys exported in 0 commands, 1 keys not exported" in err
