"""RDB files made by a real Redis (Debian's redis-server on a free loopback port), decoded
with ``dcpinspect rdb`` and compared key by key with what the server itself says of each
key: TYPE, OBJECT ENCODING, PTTL and PEXPIRETIME, the element counts and the values,
streams' consumer groups, pending entries and consumers. ``redis-check-rdb`` reads the
same file as a second oracle. Then the file is damaged (a flipped byte, a cut) and both
must say so, while every key before the damage is still reported.

The server writes every type and encoding its version can produce: the test asks the
server which it has (``redis-server --version``) and writes the newer ones (listpack lists
and sets from 7.2, hash field expiry from 7.4) only where they exist. One server run for
the whole module, a few seconds long.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

import servers
from servers import LOOPBACK, free_port, require, wait_until
from dcpinspect.families.redis.rdb.records import Ending, KeyRecord, OpRecord
from dcpinspect.families.redis.reports.snapshots import records as rdb_records
from dcpinspect.findings import Finding

# -- a client ------------------------------------------------------------------------------


class ReplyError(Exception):
    """A ``-ERR`` reply."""


def _command(*words) -> bytes:
    parts = [w if isinstance(w, bytes) else str(w).encode() for w in words]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


class Client:
    """RESP2 over a socket: commands one at a time or pipelined, replies parsed whole
    (arrays nested, errors as :class:`ReplyError` values)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection((LOOPBACK, port), timeout=10)
        self.buf = bytearray()

    def _fill(self) -> None:
        data = self.sock.recv(1 << 16)
        if not data:
            raise ConnectionError("redis-server closed the connection")
        self.buf += data

    def _line(self) -> bytes:
        while (end := self.buf.find(b"\r\n")) < 0:
            self._fill()
        line = bytes(self.buf[:end])
        del self.buf[:end + 2]
        return line

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return ReplyError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            out = bytes(self.buf[:n])
            del self.buf[:n + 2]
            return out
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise AssertionError(f"not RESP2: {line!r}")

    def pipeline(self, commands: list[tuple]) -> list:
        self.sock.sendall(b"".join(_command(*c) for c in commands))
        return [self._reply() for _ in commands]

    def call(self, *words):
        reply = self.pipeline([words])[0]
        if isinstance(reply, ReplyError):
            raise reply
        return reply

    def close(self) -> None:
        self.sock.close()


def version_line(binary: str | None = None) -> str:
    """What ``binary --version`` prints (by default, the redis-server on the PATH's)."""
    return subprocess.run([binary or require("redis-server")["redis-server"], "--version"], capture_output=True,
                          text=True, timeout=10).stdout.strip()


def server_version(binary: str | None = None) -> tuple[int, ...]:
    """The Redis version whose commands and formats ``binary`` (by default, the redis-server on
    the PATH) has: its own, or for Valkey 8 the ``redis_version`` it reports in INFO (7.2.4,
    the Redis it was forked from; hash field expiry came to Valkey only in 9.0)."""
    out = version_line(binary)
    if out.startswith("Valkey") and re.search(r"v=8\.", out):
        return (7, 2, 4)
    found = re.search(r"v=(\d+)\.(\d+)\.(\d+)", out)
    assert found, out
    return tuple(int(x) for x in found.groups())


# -- what the server writes ------------------------------------------------------------------

#: 60 distinct characters: longer than 44 (a "raw" string) and nothing for LZF to shorten
INCOMPRESSIBLE = "".join(chr(c) for c in range(33, 93))
COMPRESSIBLE = "redis-rdb " * 500
BINARY = bytes(range(256))
PLAIN_ELEMENT = "p" * 3000  # longer than the packed threshold set below: a PLAIN quicklist node
HOUR = 3_600_000


def _writes(version: tuple[int, ...], now_ms: int) -> dict[int, list[tuple]]:
    """The commands that fill each db, by db."""
    big_list = [f"item-{i}" for i in range(2000)]
    db0 = [
        ("SET", "str:int", "12345"), ("SET", "str:neg", "-7"), ("SET", "str:wide", "9876543210123"),
        ("SET", "str:embstr", "hello"), ("SET", "str:raw", INCOMPRESSIBLE), ("SET", "str:lzf", COMPRESSIBLE),
        ("SET", "str:binary", BINARY), ("SET", "str:empty", ""),
        ("RPUSH", "list:small", "a", "b", "c", "1", "-2", "70000"),
        ("RPUSH", "list:big", *big_list),
        ("SADD", "set:intset", "1", "2", "3", "-5", "100000", "-2147483648"),
        ("SADD", "set:small", "a", "b", "c"),
        ("SADD", "set:big", *[f"member-{i}" for i in range(300)]),
        ("ZADD", "zset:small", "1", "a", "2.5", "b", "-3", "c", "0.1", "d"),
        ("ZADD", "zset:big", *[x for i in range(300) for x in (str(i * 1.5 - 100), f"m{i}")]),
        ("ZADD", "zset:big", "+inf", "top", "-inf", "bottom"),
        ("HSET", "hash:small", "f1", "v1", "f2", "v2", "n", "42"),
        ("HSET", "hash:big", *[x for i in range(600) for x in (f"field-{i}", f"value-{i}")]),
        ("HSET", "hash:long", "f", "v" * 100),
        ("SET", "exp:str", "soon"), ("PEXPIRE", "exp:str", str(HOUR)),
        ("RPUSH", "exp:list", "x"), ("PEXPIREAT", "exp:list", str(now_ms + 2 * HOUR)),
        ("HSET", "exp:hash", "a", "1"), ("PEXPIRE", "exp:hash", str(3 * HOUR)),
        # a stream: same and different fields, a deleted entry, nodes of 100 entries
        ("XADD", "stream", "1-1", "a", "1", "b", "2"), ("XADD", "stream", "1-2", "a", "3", "b", "4"),
        ("XADD", "stream", "1-3", "c", "5"), ("XADD", "stream", "2-0", "a", "6", "b", "7"),
        ("XDEL", "stream", "1-2"),
        *[("XADD", "stream", f"3-{i}", "n", str(i), "payload", f"entry {i}") for i in range(250)],
        ("XGROUP", "CREATE", "stream", "g1", "0"),
        ("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "3", "STREAMS", "stream", ">"),
        ("XREADGROUP", "GROUP", "g1", "bob", "COUNT", "2", "STREAMS", "stream", ">"),
        ("XACK", "stream", "g1", "1-1"),
        ("XGROUP", "CREATE", "stream", "g2", "$"),
        ("XGROUP", "CREATECONSUMER", "stream", "g2", "carol"),
        ("XGROUP", "CREATE", "stream:empty", "g", "$", "MKSTREAM"),
    ]
    if version >= (7, 4):  # hash field expiry: listpackex and a hashtable with metadata
        db0 += [("HSET", "hfe:small", "a", "1", "b", "2", "c", "3"),
                ("HPEXPIRE", "hfe:small", str(HOUR), "FIELDS", "1", "a"),
                ("HSET", "hfe:big", *[x for i in range(600) for x in (f"f{i}", f"v{i}")]),
                ("HPEXPIRE", "hfe:big", str(2 * HOUR), "FIELDS", "2", "f0", "f1")]
    return {
        0: db0,
        1: [("SET", "one", "1"), ("RPUSH", "l1", "x", "y"), ("SET", "str:embstr", "in db 1")],
        5: [("HSET", "h5", "a", "b"), ("SADD", "s5", "x"), ("PEXPIRE", "h5", str(4 * HOUR)),
            ("ZADD", "z5", "1", "one")],
    }


LIBRARY = "#!lua name=h9lib\nredis.register_function('h9', function() return 1 end)"


def _map(reply: list) -> dict:
    """A flat RESP2 list of names and values as a dict by name (values as they came)."""
    return {k.decode(): v for k, v in zip(reply[::2], reply[1::2])}


def _read_back(c: Client, version: tuple[int, ...]) -> dict:
    """Everything the server says of each key of the current db."""
    keys = sorted(c.call("KEYS", "*"))
    out = {}
    for raw in keys:
        key = raw.decode()
        type_, encoding, pttl, at, pexpiretime = c.pipeline(
            [("TYPE", raw), ("OBJECT", "ENCODING", raw), ("PTTL", raw), ("TIME",), ("PEXPIRETIME", raw)])
        now = int(at[0]) * 1000 + int(at[1]) // 1000
        fact = {"type": type_, "encoding": encoding.decode(), "pttl": pttl, "asked_ms": now,
                "pexpiretime": pexpiretime}
        count_cmd, value_cmd = {
            "string": ("STRLEN", ("GET",)), "list": ("LLEN", ("LRANGE", 0, -1)), "set": ("SCARD", ("SMEMBERS",)),
            "zset": ("ZCARD", ("ZRANGE", 0, -1, "WITHSCORES")), "hash": ("HLEN", ("HGETALL",)),
            "stream": ("XLEN", ("XRANGE", "-", "+")),
        }[type_]
        fact["count"], value = c.pipeline([(count_cmd, raw), (value_cmd[0], raw, *value_cmd[1:])])
        fact["value"] = value
        if type_ == "stream":
            info = c.call("XINFO", "STREAM", raw)
            fact["info"] = _map(info)
            groups = []
            for g in c.call("XINFO", "GROUPS", raw):
                g = _map(g)
                g["pending_entries"] = c.call("XPENDING", raw, g["name"], "-", "+", 1000)
                g["consumer_info"] = [_map(x) for x in c.call("XINFO", "CONSUMERS", raw, g["name"])]
                groups.append(g)
            fact["groups"] = groups
        if type_ == "hash" and version >= (7, 4):
            fields = [f for f in value[::2]]
            fact["field_expiry"] = dict(zip(fields, c.call("HPEXPIRETIME", raw, "FIELDS", len(fields), *fields)))
        out[key] = fact
    return out


class Snapshot:
    """The dump a real server saved, and what the server said of every key before it stopped
    (``binary``: that server, which is also its ``redis-check-rdb`` by the name it is called by)."""

    def __init__(self, path: Path, version: tuple[int, ...], facts: dict, plain_nodes: bool, library: str | None,
                 seconds: float, binary: str | None = None) -> None:
        self.path, self.version, self.facts, self.plain_nodes = path, version, facts, plain_nodes
        self.library, self.seconds, self.binary = library, seconds, binary
        #: what the server's ``--version`` says, and its own version in it (Valkey's, for a
        #: Valkey), as its ``redis-ver`` or ``valkey-ver`` aux field says
        self.binary_version = version_line(binary)
        self.release = re.search(r"v=(\d+\.\d+\.\d+)", self.binary_version)[1]


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory) -> Snapshot:
    require("redis-server", "redis-check-rdb")
    return take_snapshot(None, tmp_path_factory.mktemp("redis-rdb"))


def take_snapshot(binary: str | None, workdir: Path) -> Snapshot:
    """What a server (``binary``; None: the redis-server on the PATH) writes of every type
    and encoding its version has, in ``workdir``."""
    path = binary or require("redis-server")["redis-server"]
    version = server_version(path)
    began = time.monotonic()
    port = free_port()
    args = [path, "--port", str(port), "--bind", LOOPBACK, "--save", "", "--appendonly", "no",
            "--dir", str(workdir), "--dbfilename", "dump.rdb", "--rdbcompression", "yes", "--rdbchecksum", "yes",
            "--daemonize", "no"]
    if version >= (7, 0):
        args += ["--enable-debug-command", "yes"]
    log = open(workdir / "redis.log", "wb")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log.close()
    try:
        assert wait_until(lambda: proc.poll() is not None or servers._connectable(port), 10), "redis-server is slow"
        assert proc.poll() is None, (workdir / "redis.log").read_text()
        c = Client(port)
        now_ms = int(c.call("TIME")[0]) * 1000
        facts: dict[int, dict] = {}
        plain_nodes = False
        for db, commands in _writes(version, now_ms).items():
            c.call("SELECT", db)
            if db == 0 and version >= (7, 0):  # a list with an element past the packed threshold
                plain_nodes = c.pipeline([("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "1000")])[0] == "OK"
                if plain_nodes:
                    commands = commands + [("RPUSH", "list:plain", "x", PLAIN_ELEMENT, "y")]
            for reply, cmd in zip(c.pipeline(commands), commands):
                assert not isinstance(reply, ReplyError), (cmd[:3], reply)
        library = None
        if version >= (7, 0):
            assert c.call("FUNCTION", "LOAD", LIBRARY) == b"h9lib"
            library = LIBRARY
        for db in _writes(version, now_ms):
            c.call("SELECT", db)
            facts[db] = _read_back(c, version)
        assert c.call("SAVE") == "OK"
        c.close()
    finally:
        servers._stop(proc)
    return Snapshot(workdir / "dump.rdb", version, facts, plain_nodes, library, time.monotonic() - began, binary)


def decode_jsonl(path: Path, *args: str) -> tuple[int, list[dict]]:
    res = servers.dcpinspect("rdb", "--format", "jsonl", path, *args)
    assert res.returncode in (0, 1), res.stderr
    return res.returncode, [json.loads(line) for line in res.stdout.splitlines()]


def key_records(path: Path) -> list[KeyRecord]:
    return [r for r in rdb_records(path, keep=True) if isinstance(r, KeyRecord)]


def check_rdb(path: Path, binary: str | None = None) -> subprocess.CompletedProcess:
    """``redis-check-rdb`` on ``path``: the one on the PATH, or ``binary`` called by that name."""
    return subprocess.run(["redis-check-rdb", str(path)], executable=binary or require("redis-check-rdb")["redis-check-rdb"],
                          capture_output=True, text=True, timeout=60)


# -- what the RDB says of each key, against the server ----------------------------------------

#: OBJECT ENCODING as the RDB can tell it: a list is saved as a quicklist whatever its
#: encoding in memory (7.2 loads a small one back as a listpack); embstr and raw are
#: both plain strings in the file (or LZF when compression shortens them)
def expected_encodings(fact: dict) -> set[str]:
    kind, enc = fact["type"], fact["encoding"]
    if kind == "string":
        if enc == "int":
            return {"int"} if -2**31 <= int(fact["value"]) < 2**31 else {"raw"}
        return {"raw"} if fact["count"] <= 20 else {"raw", "lzf"}
    if kind == "list":
        return {"quicklist"}
    return {enc}


def test_the_server_run_is_short(snapshot):
    assert snapshot.seconds < 20


def test_jsonl_has_every_key_with_the_servers_type_encoding_count_and_expiry(snapshot):
    code, rows = decode_jsonl(snapshot.path)
    assert code == 0
    keys = [r for r in rows if r["kind"] == "key"]
    (summary,) = [r for r in rows if r["kind"] == "summary"]
    assert summary["checksum"] == "ok" and summary["complete"]
    assert summary["keys"] == len(keys) == sum(len(f) for f in snapshot.facts.values())
    assert {(r["db"], r["key"]) for r in keys} == {(db, k) for db, f in snapshot.facts.items() for k in f}
    for row in keys:
        fact = snapshot.facts[row["db"]][row["key"]]
        where = f"db {row['db']} {row['key']}"
        assert row["findings"] == [], where
        assert row["type"] == fact["type"], where
        assert row["encoding"] in expected_encodings(fact), (where, row["encoding"], fact["encoding"])
        if fact["type"] != "string":
            assert row["elements"] == fact["count"], where
        if fact["pexpiretime"] == -1:
            assert row["expire_ms"] is None and fact["pttl"] == -1, where
        else:
            assert row["expire_ms"] == fact["pexpiretime"], where
            assert abs(row["expire_ms"] - fact["asked_ms"] - fact["pttl"]) <= 1000, where
    # the file holds what the test meant it to: each encoding of this server's version
    seen = {(r["type"], r["encoding"]) for r in keys}
    wanted = {("string", "int"), ("string", "raw"), ("string", "lzf"), ("list", "quicklist"), ("set", "intset"),
              ("set", "hashtable"), ("zset", "listpack"), ("zset", "skiplist"), ("hash", "listpack"),
              ("hash", "hashtable"), ("stream", "stream")}
    if snapshot.version >= (7, 2):
        wanted.add(("set", "listpack"))
    if snapshot.version >= (7, 4):
        wanted.add(("hash", "listpackex"))
    assert wanted <= seen
    by_key = {(r["db"], r["key"]): r for r in keys}
    assert by_key[(0, "str:lzf")]["encoding"] == "lzf" and by_key[(0, "str:raw")]["encoding"] == "raw"
    assert by_key[(0, "str:wide")]["encoding"] == "raw"  # an int in memory, past 32 bits in the file
    assert {r["db"] for r in keys} == {0, 1, 5}
    aux = {r["key"]: r["value"] for r in rows if r["kind"] == "aux"}
    assert aux.get("valkey-ver", aux.get("redis-ver")) == snapshot.release
    (summary,) = [r for r in rows if r["kind"] == "summary"]
    assert summary["vendor"] == ("valkey" if "valkey-ver" in aux else "redis")


def _score(raw: bytes) -> float:
    return float(raw.decode())  # "inf" and "-inf" included


def _sid(text: bytes | str) -> tuple[int, int]:
    ms, seq = (text.decode() if isinstance(text, bytes) else text).split("-")
    return int(ms), int(seq)


def test_values_are_the_servers(snapshot):
    recs = key_records(snapshot.path)
    assert len(recs) == sum(len(f) for f in snapshot.facts.values())
    for rec in recs:
        fact = snapshot.facts[rec.db][rec.key.decode()]
        where = f"db {rec.db} {rec.key!r}"
        value = fact["value"]
        kind = fact["type"]
        if kind == "string":
            assert rec.value == value and len(rec.value) == fact["count"], where
        elif kind == "list":
            assert rec.value == value, where
        elif kind == "set":
            assert sorted(rec.value) == sorted(value), where
        elif kind == "zset":
            ours = [(m, s) for m, s in rec.value]
            theirs = [(value[i], _score(value[i + 1])) for i in range(0, len(value), 2)]
            assert sorted(ours, key=lambda p: (p[1], p[0])) == theirs, where
        elif kind == "hash":
            theirs = dict(zip(value[::2], value[1::2]))
            assert {p[0]: p[1] for p in rec.value} == theirs and len(rec.value) == len(theirs), where
            if "field_expiry" in fact:
                expiry = {p[0]: p[2] if len(p) > 2 else None for p in rec.value}
                assert expiry == {f: (None if t == -1 else t) for f, t in fact["field_expiry"].items()}, where
        elif kind == "stream":
            assert [(sid, dict(pairs)) for sid, pairs in rec.value] == [
                (_sid(sid), dict(zip(fields[::2], fields[1::2]))) for sid, fields in value], where
    by_key = {(r.db, r.key): r for r in recs}
    assert by_key[(0, b"str:binary")].value == BINARY and by_key[(0, b"str:empty")].value == b""
    assert by_key[(1, b"str:embstr")].value == b"in db 1"
    if snapshot.plain_nodes:
        # a quicklist keeps the long element in a PLAIN node of its own; a 7.2+ server holds
        # so short a list as one listpack, saved as one node
        rec = by_key[(0, b"list:plain")]
        nodes = 3 if snapshot.facts[0]["list:plain"]["encoding"] == "quicklist" else 1
        assert rec.value == [b"x", PLAIN_ELEMENT.encode(), b"y"] and rec.extra["nodes"] == nodes
    assert by_key[(0, b"list:big")].extra["nodes"] > 1


def test_streams_groups_pel_and_consumers_are_the_servers(snapshot):
    recs = {(r.db, r.key): r for r in key_records(snapshot.path)}
    for name in ("stream", "stream:empty"):
        fact = snapshot.facts[0][name]
        meta = recs[(0, name.encode())].extra["stream"]
        info = fact["info"]
        assert meta["length"] == info["length"] == fact["count"]
        assert meta["last_id"] == _sid(info["last-generated-id"])
        if "max-deleted-entry-id" in info:  # streams v2 (RDB 10) and later
            assert meta["max_deleted_id"] == _sid(info["max-deleted-entry-id"])
            assert meta["entries_added"] == info["entries-added"]
            assert meta["first_id"] == _sid(info["recorded-first-entry-id"])
        groups = {g["name"]: g for g in meta["groups"]}
        assert set(groups) == {g["name"] for g in fact["groups"]}
        for theirs in fact["groups"]:
            ours = groups[theirs["name"]]
            assert ours["last_id"] == _sid(theirs["last-delivered-id"])
            if "entries-read" in theirs and theirs["entries-read"] is not None:
                assert ours["entries_read"] == theirs["entries-read"]
            pending = theirs["pending_entries"]
            assert [(p["id"], p["delivery_count"]) for p in ours["pel"]] == [(_sid(p[0]), p[3]) for p in pending]
            assert len(ours["pel"]) == theirs["pending"]
            consumers = {c["name"]: c for c in ours["consumers"]}
            assert set(consumers) == {c["name"] for c in theirs["consumer_info"]}
            for c in theirs["consumer_info"]:
                owned = [_sid(p[0]) for p in pending if p[1] == c["name"]]
                assert consumers[c["name"]]["pel"] == owned and len(owned) == c["pending"]
    fact = snapshot.facts[0]["stream"]
    assert fact["count"] == 253 and recs[(0, b"stream")].extra["stream"]["nodes"] >= 3
    assert sum(len(g["pending_entries"]) for g in fact["groups"]) == 4  # 3 + 2 read, 1 acknowledged


def test_functions_and_aux_fields(snapshot):
    ops = [r for r in rdb_records(snapshot.path) if isinstance(r, OpRecord)]
    if snapshot.library is not None:
        (fn,) = [r for r in ops if r.name == "FUNCTION2"]
        assert fn.fields["code"] == snapshot.library.encode()
    selected = [r.fields["db"] for r in ops if r.name == "SELECTDB"]
    assert selected == [0, 1, 5]


def _check_rdb_counts(text: str) -> tuple[int, int]:
    keys = re.search(r"\[info\] (\d+) keys read", text)
    expires = re.search(r"\[info\] (\d+) expires", text)
    assert keys and expires, text
    return int(keys.group(1)), int(expires.group(1))


def test_redis_check_rdb_agrees(snapshot):
    res = check_rdb(snapshot.path, snapshot.binary)
    assert res.returncode == 0 and "RDB looks OK" in res.stdout, res.stdout + res.stderr
    _, rows = decode_jsonl(snapshot.path)
    (summary,) = [r for r in rows if r["kind"] == "summary"]
    assert _check_rdb_counts(res.stdout) == (summary["keys"], summary["expiring"])


# -- damage ----------------------------------------------------------------------------------


def _damaged(tmp_path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _record(snapshot, db: int, key: bytes) -> KeyRecord:
    return next(r for r in key_records(snapshot.path) if r.db == db and r.key == key)


def test_a_flipped_byte_in_a_string_value_is_a_checksum_mismatch(snapshot, tmp_path):
    rec = _record(snapshot, 0, b"str:embstr")
    data = bytearray(snapshot.path.read_bytes())
    at = rec.offset + rec.length - 1  # the last byte of "hello"
    assert data[at] == ord("o")
    data[at] ^= 0x01
    path = _damaged(tmp_path, "flipped.rdb", bytes(data))
    code, rows = decode_jsonl(path)
    assert code == 1
    findings = [r for r in rows if r["kind"] == "finding"]
    assert [f["rule"] for f in findings] == ["rdb-checksum"]
    (summary,) = [r for r in rows if r["kind"] == "summary"]
    assert summary["checksum"] == "mismatch" and summary["keys"] == sum(len(f) for f in snapshot.facts.values())
    (row,) = [r for r in rows if r["kind"] == "key" and r["key"] == "str:embstr" and r["db"] == 0]
    assert row["length"] == rec.length
    assert next(r for r in key_records(path) if r.key == b"str:embstr" and r.db == 0).value == b"helln"
    res = check_rdb(path, snapshot.binary)
    assert res.returncode != 0 and "CRC" in res.stdout, res.stdout


def test_a_flipped_byte_in_a_listpack_is_corruption_of_that_key(snapshot, tmp_path):
    rec = _record(snapshot, 0, b"zset:small")
    data = bytearray(snapshot.path.read_bytes())
    end = rec.offset + rec.length - 1  # the listpack's end mark
    assert data[end] == 0xFF
    data[end] = 0x00
    path = _damaged(tmp_path, "listpack.rdb", bytes(data))
    code, rows = decode_jsonl(path)
    assert code == 1
    (row,) = [r for r in rows if r["kind"] == "key" and r["key"] == "zset:small"]
    assert [f["rule"] for f in row["findings"]] == ["rdb-corrupt"]
    others = [r for r in rows if r["kind"] == "key" and r["key"] != "zset:small"]
    assert len(others) == sum(len(f) for f in snapshot.facts.values()) - 1 and not any(r["findings"] for r in others)
    assert "rdb-checksum" in [r["rule"] for r in rows if r["kind"] == "finding"]
    assert check_rdb(path, snapshot.binary).returncode != 0


@pytest.mark.parametrize("where", ["inside a big list", "between two keys", "inside the checksum"])
def test_a_cut_file_reports_every_key_before_the_cut(snapshot, tmp_path, where):
    recs = key_records(snapshot.path)
    data = snapshot.path.read_bytes()
    if where == "inside a big list":
        # the big list, unless the server wrote it first (its key order is its dict's): then
        # the biggest value after the first key, so that some key lies before the cut
        big = next(r for r in recs if r.key == b"list:big")
        if big is recs[0]:
            big = max(recs[1:], key=lambda r: r.length)
        cut = big.offset + big.length // 2
    elif where == "between two keys":
        cut = recs[len(recs) // 2].offset
    else:
        cut = len(data) - 3
    path = _damaged(tmp_path, "cut.rdb", data[:cut])
    code, rows = decode_jsonl(path)
    assert code == 1
    before = [(r.db, r.key.decode()) for r in recs if r.offset + r.length <= cut]
    assert [(r["db"], r["key"]) for r in rows if r["kind"] == "key"] == before
    assert before and len(before) < len(recs) or where == "inside the checksum"
    (truncated,) = [r for r in rows if r["kind"] == "finding" and r["rule"] == "rdb-truncated"]
    assert truncated["offset"] == cut
    (summary,) = [r for r in rows if r["kind"] == "summary"]
    assert not summary["complete"] and summary["checksum"] == "unchecked"
    assert check_rdb(path, snapshot.binary).returncode != 0


# -- one record laid out -----------------------------------------------------------------------


def test_the_key_view_lays_out_a_real_record(snapshot):
    from test_rdb_detail import table

    _, rows = decode_jsonl(snapshot.path)
    for key, flat in (("hash:small", lambda v: [x.decode() for x in v]),
                      ("set:intset", lambda v: sorted(v, key=int))):
        (row,) = [r for r in rows if r["kind"] == "key" and r["key"] == key and r["db"] == 0]
        res = servers.dcpinspect("rdb", snapshot.path, "--key", key)
        assert res.returncode == 0, res.stderr
        fields = table(res.stdout)
        assert fields[0][2] == row["offset"] and max(f[3] for f in fields) == row["offset"] + row["length"] - 1
        entries = [f[4] for f in fields if f[1].startswith(("Entry ", "Value "))]
        theirs = snapshot.facts[0][key]["value"]
        assert entries == (flat(theirs) if key == "hash:small" else [m.decode() for m in flat(theirs)])
        assert f"Total {row['length']} bytes" in res.stdout
