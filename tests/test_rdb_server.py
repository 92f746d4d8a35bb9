"""Every RDB rule against the real server: for each, a file that triggers it is loaded by
``redis-server`` (at its default ``sanitize-dump-payload no`` and with ``yes``, the deep
checks ``redis-check-rdb`` makes too) and read by ``redis-check-rdb``, and the tests assert
what the server does (serves or exits, its keys, its log line) as well as what the rule
says. The severities follow the server: a file it refuses in either mode gets an error
finding, a file it loads in both gets none (a warning says what it changed); a member twice in
a value the server keeps packed follows the default mode alone (``by_default``: a warning that
says what ``yes`` does). Redis's own test files (tests/corpora/redis-assets) are judged the
same way.

The files are RDB version 9 or 10, so that every Redis from 7.0 reads them; those of RDB
11 and 12 (set listpacks, hashes whose fields expire) are judged by a Redis 7.4 or later
where one is at hand (``DCPINSPECT_REDIS_72``, see tests/servers.py), and skipped without.
Valkey (``DCPINSPECT_VALKEY``) judges the files of RDB 9 and 10 a second time, with the
same assertions.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field

import pytest

import rdbgen as g
import servers
from corpus import corpus
from dcpinspect.families.redis.rdb.decoder import RdbParser
from dcpinspect.families.redis.rdb.records import AuxRecord, KeyRecord, OpRecord
from dcpinspect.findings import Finding
from dcpinspect.families.redis.rules import RDB_RULES
from test_real_redis_rdb import Client

ASSETS = corpus("redis-assets")
CTIME = g.aux("ctime", "1700000000")
AFTER = g.key(0, "after", g.string("kept"))  # a key after the one judged: loaded when the file is


def _file(body: bytes, version: int = 9) -> bytes:
    return g.rdb(body, version)


def _pairs(n: int, value: bytes = b"v") -> list:
    """``n`` distinct members or fields m0 .. m(n-1), each followed by ``value``."""
    return [x for i in range(n) for x in (f"m{i}".encode(), value)]


def _twice(type_: int, name: str, value: bytes, version: int = 9) -> bytes:
    return _file(g.key(type_, name, value) + AFTER, version)


def _node(n: int) -> bytes:
    """A stream node of ``n`` entries 1-0 .. 1-(n-1), one field each."""
    return g.stream_node(1, 0, ["n"], [(0, i, [i]) for i in range(n)])


PLAIN = _file(CTIME + g.key(0, "a", g.string("1")) + AFTER)
_LP_BAD = bytearray(g.listpack([b"f", b"v", b"g", b"w"]))
_LP_BAD[6] = 0xF5  # the first entry's encoding byte: none a listpack has; header and end mark hold


@dataclass
class Case:
    """A file, the findings it gets, and what the server does with it."""

    data: bytes
    rules: set[str]
    loads: bool  # at sanitize-dump-payload no, the default
    sanitized_loads: bool  # at sanitize-dump-payload yes
    log: str  # a line of the server's log (default mode)
    keys: int | None = None  # the keys it then holds
    check_ok: bool = False  # redis-check-rdb's verdict
    check_says: str = ""
    lacks: str = ""  # what the server lacks to load the sound file it refuses (then no error)
    parser: dict = field(default_factory=dict)  # RdbParser arguments
    env: dict = field(default_factory=dict)
    #: the severity follows the default mode alone (a warning where it loads the file, which
    #: the rule says sanitize-dump-payload yes refuses)
    by_default: bool = False


CASES = {
    "not an RDB": Case(b"RUBBISH00" + PLAIN[9:], {"rdb-magic"}, False, False,
                       "Wrong signature trying to load DB from file"),
    "version 16": Case(g.rdb(CTIME, 16), {"rdb-version"}, False, False, "Can't handle RDB format version 16"),
    "a flipped checksum bit": Case(PLAIN[:-1] + bytes([PLAIN[-1] ^ 1]), {"rdb-checksum"}, False, False,
                                   "Wrong RDB checksum expected", check_says="RDB CRC error"),
    "cut in the checksum": Case(PLAIN[:-3], {"rdb-truncated"}, False, False, "Short read or OOM loading DB",
                                check_says="Unexpected EOF reading RDB file"),
    "type 8": Case(_file(g.key(8, "x", b"")), {"rdb-unknown-type"}, False, False,
                   "Unknown RDB encoding type 8"),
    "a ziplist of zeros": Case(_file(g.key(10, "zl", g.string(b"\x00" * 12)) + AFTER), {"rdb-corrupt"}, False,
                               False, "List ziplist integrity check failed"),
    "bad LZF": Case(_file(g.key(0, "s", b"\xc3" + g.length(5) + g.length(40) + b"\x1f\x00\x00\x00\x00") + AFTER),
                    {"rdb-corrupt"}, False, False, "Invalid LZF compressed string"),
    "an empty intset": Case(_file(g.key(11, "i", g.string(g.intset([]))) + AFTER), {"rdb-corrupt"}, False, False,
                            "Intset integrity check failed"),
    "an empty zipmap": Case(_file(g.key(9, "zm", g.string(g.zipmap([]))) + AFTER), {"rdb-corrupt"}, False, False,
                            "Zipmap integrity check failed"),
    "a stream's length with no node": Case(_file(g.key(15, "st", g.stream([], 5, (1, 4))) + AFTER), {"rdb-corrupt"},
                                           False, False, "Stream length inconsistent with rax entries"),
    # the listpack's header and end mark hold: only the deep check reads its entries
    "a listpack entry no listpack has": Case(_file(g.key(16, "h", g.string(bytes(_LP_BAD))) + AFTER, 10),
                                             {"rdb-corrupt"}, True, False, "keys loaded: 2", keys=2,
                                             check_says="Hash listpack integrity check failed"),
    "a key twice": Case(_file(g.key(0, "a", g.string("1")) + g.key(0, "a", g.string("2"))), {"rdb-duplicate-key"},
                        False, False, "RDB has duplicated key 'a' in DB 0", check_ok=True),
    # a member (a hash's field) twice: refused where the server checks as it loads or makes a
    # table of the value (past its packed encoding's entries: an assertion), loaded as written
    # where it keeps the value packed
    "a set's member twice": Case(_twice(2, "s", g.length(2) + g.string("a") + g.string("a")),
                                 {"rdb-duplicate-member"}, False, False, "Duplicate set members detected"),
    "a sorted set's member twice": Case(_twice(5, "z", g.length(2) + g.string("a") + struct.pack("<d", 1)
                                               + g.string("a") + struct.pack("<d", 2)),
                                        {"rdb-duplicate-member"}, False, False, "Duplicate zset fields detected"),
    "a hash's field twice, a value of 65 bytes": Case(_twice(4, "h", g.length(2) + g.string("f") + g.string("v")
                                                             + g.string("f") + g.string("w" * 65)),
                                                      {"rdb-duplicate-member"}, False, False,
                                                      "Duplicate hash fields detected"),
    "a hash of 513 fields, one twice": Case(_twice(4, "h", g.length(513) + b"".join(map(g.string, _pairs(512)))
                                                   + g.string("m0") + g.string("v")),
                                            {"rdb-duplicate-member"}, False, False, "Duplicate hash fields detected"),
    "a zipmap's field twice": Case(_twice(9, "h", g.string(g.zipmap([(b"f", b"v"), (b"f", b"w")]))),
                                   {"rdb-duplicate-member"}, False, False, "Hash zipmap with dup elements"),
    "a hash ziplist's field twice": Case(_twice(13, "h", g.string(g.ziplist([b"f", b"v", b"f", b"w"]))),
                                         {"rdb-duplicate-member"}, False, False, "Hash ziplist integrity check failed"),
    "a sorted set ziplist's member twice": Case(_twice(12, "z", g.string(g.ziplist([b"a", 1, b"a", 2]))),
                                                {"rdb-duplicate-member"}, False, False,
                                                "Zset ziplist integrity check failed"),
    "an intset of 513 integers, one twice": Case(_twice(11, "i", g.string(g.intset([0, *range(512)]))),
                                                 {"rdb-duplicate-member"}, False, False, "ASSERTION FAILED"),
    "a sorted set listpack of 129, a member twice": Case(_twice(17, "z", g.string(g.listpack(
        [b"a", 1, *_pairs(128, 1), b"a", 2])), 10), {"rdb-duplicate-member"}, False, False, "ASSERTION FAILED"),
    "a hash listpack of 513, a field twice": Case(_twice(16, "h", g.string(g.listpack(
        [b"f", b"v", *_pairs(512), b"f", b"w"])), 10), {"rdb-duplicate-member"}, False, False,
        "Listpack corruption detected"),
    "a small hash's field twice": Case(_twice(4, "h", g.length(2) + g.string("f") + g.string("v") + g.string("f")
                                              + g.string("w")), {"rdb-duplicate-member-kept"}, True, False,
                                       "keys loaded: 2", keys=2, by_default=True),
    "an intset's integer twice": Case(_twice(11, "i", g.string(g.intset([1, 1, 2]))), {"rdb-duplicate-member-kept"},
                                      True, False, "keys loaded: 2", keys=2, by_default=True),
    "a sorted set listpack's member twice": Case(_twice(17, "z", g.string(g.listpack([b"a", 1, b"a", 2])), 10),
                                                 {"rdb-duplicate-member-kept"}, True, False, "keys loaded: 2", keys=2,
                                                 by_default=True),
    "a hash listpack's field twice": Case(_twice(16, "h", g.string(g.listpack([b"f", b"v", b"f", b"w"])), 10),
                                          {"rdb-duplicate-member-kept"}, True, False, "keys loaded: 2", keys=2,
                                          by_default=True),
    "an empty set": Case(_file(g.key(2, "s", g.length(0)) + AFTER), {"rdb-empty-key"}, True, True,
                         "skipping empty key: s", keys=1),
    "an empty hash listpack": Case(_file(g.key(16, "h", g.string(g.listpack([]))) + AFTER, 10), {"rdb-empty-key"},
                                   True, True, "skipping empty key: h", keys=1),
    "a quicklist of one empty node": Case(_file(g.key(18, "q", g.length(1) + g.length(2)
                                                     + g.string(g.listpack([]))) + AFTER, 10),
                                          {"rdb-empty-key"}, True, True, "skipping empty key: q", keys=1),
    "a stream of 118 entries saying 120": Case(_file(g.key(15, "st", g.stream([_node(118)], 120, (1, 117)))),
                                               {"rdb-stream-length"}, True, True, "keys loaded: 1", keys=1,
                                               check_ok=True),
    "an expired key": Case(_file(CTIME + g.key(0, "old", g.string("1"), expire_ms=1_600_000_000_000) + AFTER),
                           {"rdb-expired-key"}, True, True, "keys expired: 1", keys=1, check_ok=True),
    "bytes after the checksum": Case(PLAIN + b"junk", {"rdb-trailing-data"}, True, True, "keys loaded: 2", keys=2,
                                     check_ok=True),
    "a string past the cap": Case(_file(g.key(0, "big", g.string(b"x" * 2000)) + AFTER), {"rdb-string-too-long"},
                                  True, True, "keys loaded: 2", keys=2, check_ok=True, parser={"cap": 1024}),
    "LZF strings past a small budget": Case(_file(b"".join(g.key(0, f"k{i}", g.lzf_string(b"\x00a" + bytes([0xE0, 255, 0]),
                                                                                 265)) for i in range(10)) + AFTER),
                                            {"rdb-inflate-cap"}, True, True, "keys loaded: 11", keys=11, check_ok=True,
                                            env={"DCPINSPECT_MAX_RDB_INFLATED": "1024"}),
    "more keys than the cap": Case(PLAIN, {"rdb-keys-cap"}, True, True, "keys loaded: 2", keys=2, check_ok=True,
                                   env={"DCPINSPECT_MAX_RDB_KEYS": "1"}),
    "a module's value": Case(_file(g.key(7, "m", g.length(5) + g.length(2) + g.length(42) + g.length(0)) + AFTER),
                             {"rdb-module"}, False, False, "no matching module type 'AAAAAAAAA'", check_ok=True,
                             lacks="the module"),
    "a checksum of 0": Case(g.rdb(CTIME + g.key(0, "a", g.string("1")) + AFTER, 9, checksum=False), set(), True,
                            True, "RDB file was saved with checksum disabled", keys=2, check_ok=True),
    "nothing wrong": Case(PLAIN, set(), True, True, "keys loaded: 2", keys=2, check_ok=True),
}


T0 = 4_102_444_800_000  # 2100-01-01: a field expiry never reached


def _fields(n: int) -> list:
    """``n`` distinct fields m0 .. m(n-1) with no expiry (for the builders of rdbgen)."""
    return [(f"m{i}".encode(), b"v", None) for i in range(n)]


def _kept(type_: int, value: bytes, version: int = 12) -> Case:
    """A value whose member repeats, which the server keeps (by default), before AFTER."""
    return Case(_twice(type_, "k", value, version), {"rdb-duplicate-member-kept"}, True, False, "keys loaded: 2",
                keys=2, by_default=True)


def _refused(type_: int, value: bytes, log: str, version: int = 12) -> Case:
    return Case(_twice(type_, "k", value, version), {"rdb-duplicate-member"}, False, False, log)


TWICE = [(b"f", b"v", None), (b"f", b"w", T0)]
MANY = [(b"f", b"v", None), *_fields(512), (b"f", b"w", None)]  # 513 fields, f twice
#: Files that Redis 7.0 cannot read (RDB 11: set listpacks, Redis 7.2; RDB 12: hash field
#: expiry, Redis 7.4), judged the same way by a Redis 7.4 or later (DCPINSPECT_REDIS_72)
NEWER_CASES = {
    "a hash with field expiry, a field twice": _kept(24, g.hash_metadata(TWICE)),
    "a hash with field expiry (pre-GA), a field twice": _kept(22, g.hash_metadata(TWICE, True)),
    "a hash with field expiry of 513, a field twice": _refused(24, g.hash_metadata(MANY),
                                                               "Duplicate hash fields detected"),
    "a hash with field expiry, a field twice, a value of 65 bytes": _refused(24, g.hash_metadata(
        [(b"f", b"v", None), (b"f", b"w" * 65, None)]), "Duplicate hash fields detected"),
    "a hash listpack with field expiry, a field twice": _kept(25, g.hash_listpack_ex(TWICE)),
    "a hash listpack with field expiry (pre-GA), a field twice": _kept(23, g.hash_listpack_ex(
        [(b"f", b"v", None), (b"f", b"w", None)], True)),
    "a hash listpack with field expiry of 513, a field twice": _refused(25, g.hash_listpack_ex(MANY),
                                                                        "Listpack corruption detected"),
    "a set listpack's member twice": _kept(20, g.string(g.listpack([b"a", b"a", b"b"])), 11),
    "a set listpack of 129, a member twice": _refused(20, g.string(g.listpack(
        [b"a", *(f"m{i}".encode() for i in range(127)), b"a"])), "ASSERTION FAILED", 11),
    "nothing wrong in RDB 12": Case(_twice(25, "h", g.hash_listpack_ex([(b"f", b"v", T0), (b"g", b"w", None)]), 12),
                                    set(), True, True, "keys loaded: 2", keys=2, check_ok=True),
}


def findings(data: bytes, monkeypatch, parser: dict | None = None, env: dict | None = None) -> list[Finding]:
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    p = RdbParser(**(parser or {}))
    out = p.feed(data) + p.close()
    return [f for f in out if isinstance(f, Finding)] + [
        f for r in out if isinstance(r, (KeyRecord, OpRecord, AuxRecord)) for f in r.findings]


def _load_all(cases: dict, tmp_path_factory, binary: str | None = None) -> dict:
    """Each case's file loaded by the server in both modes (and read by redis-check-rdb)."""
    out = {}
    for i, (name, case) in enumerate(cases.items()):
        root = tmp_path_factory.mktemp(f"case{i}")
        (root / "in.rdb").write_bytes(case.data)
        out[name] = (servers.redis_load(root / "in.rdb", root / "no", binary=binary),
                     servers.redis_load(root / "in.rdb", root / "yes", "--sanitize-dump-payload", "yes",
                                        binary=binary))
    return out


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> dict:
    return _load_all(CASES, tmp_path_factory)


@pytest.fixture(scope="module")
def newer(tmp_path_factory) -> tuple[str, dict]:
    binary = servers.redis_server_at_least(7, 4)
    return binary, _load_all(NEWER_CASES, tmp_path_factory, binary)


@pytest.fixture(scope="module")
def valkey(tmp_path_factory) -> dict:
    """The same files judged by Valkey (``DCPINSPECT_VALKEY``), which loads a Redis file by
    the same rules (it was forked from Redis 7.2): a second server, whose verdict must be the
    rule's too."""
    binary = os.environ.get("DCPINSPECT_VALKEY")
    if not binary:
        pytest.skip("DCPINSPECT_VALKEY names no valkey-server (scripts/test.sh sets it: scripts/newer_redis.py)")
    return _load_all(CASES, tmp_path_factory, binary)


def test_every_rdb_rule_is_judged_by_the_server():
    assert set(RDB_RULES) == {r for c in CASES.values() for r in c.rules}
    assert all(r.server for r in RDB_RULES.values())


@pytest.mark.parametrize("name", list(CASES))
def test_what_the_server_does_and_what_the_rule_says(name, judged, monkeypatch):
    _server_and_rule(CASES[name], *judged[name], monkeypatch)


@pytest.mark.parametrize("name", list(CASES))
def test_what_valkey_does_and_what_the_rule_says(name, valkey, monkeypatch):
    _server_and_rule(CASES[name], *valkey[name], monkeypatch)


@pytest.mark.parametrize("name", list(NEWER_CASES))
def test_what_a_newer_server_does_and_what_the_rule_says(name, newer, monkeypatch):
    _server_and_rule(NEWER_CASES[name], *newer[1][name], monkeypatch)


def _server_and_rule(case: Case, plain, sanitized, monkeypatch) -> None:
    # the server
    assert plain.serving == case.loads and sanitized.serving == case.sanitized_loads, plain.log[-2000:]
    assert case.log in plain.log, plain.log[-2000:]
    if case.loads:
        assert plain.keys == case.keys
    else:  # it exited (with status 0 for module data it cannot load, 1 or SIGABRT otherwise)
        assert plain.returncode is not None
    assert (plain.check_code == 0) == case.check_ok, plain.check_out
    assert case.check_says in plain.check_out
    # the rule, and its severity by the server's verdict
    found = findings(case.data, monkeypatch, case.parser, case.env)
    assert {f.rule for f in found} - ({"rdb-truncated"} if "rdb-magic" in case.rules else set()) == case.rules
    refused = not case.loads if case.by_default else not (case.loads and case.sanitized_loads)
    assert any(f.severity == "error" for f in found) == (refused and not case.lacks)
    for f in found:
        assert f.severity == RDB_RULES[f.rule].severity


def test_the_streams_length_field_is_what_xlen_answers(tmp_path):
    def ask(port):
        c = Client(port)
        try:
            return c.call("XLEN", "st"), len(c.call("XRANGE", "st", "-", "+"))
        finally:
            c.close()

    path = tmp_path / "stream.rdb"
    path.write_bytes(CASES["a stream of 118 entries saying 120"].data)
    assert servers.redis_load(path, tmp_path / "srv", ask=ask).asked == (120, 118)


def _counted(tmp_path, cases: dict, asked: list, binary: str | None = None) -> None:
    for i, (name, command, key, count) in enumerate(asked):
        def ask(port):
            c = Client(port)
            try:
                return c.call(command, key)
            finally:
                c.close()

        path = tmp_path / f"{i}.rdb"
        path.write_bytes(cases[name].data)
        assert servers.redis_load(path, tmp_path / f"srv{i}", ask=ask, binary=binary).asked == count, name


def test_a_member_kept_twice_is_counted_twice(tmp_path):
    """What rdb-duplicate-member-kept says the server does: SCARD, ZCARD and HLEN count both."""
    _counted(tmp_path, CASES, [("an intset's integer twice", "SCARD", "i", 3),
                               ("a sorted set listpack's member twice", "ZCARD", "z", 2),
                               ("a hash listpack's field twice", "HLEN", "h", 2),
                               ("a small hash's field twice", "HLEN", "h", 2)])


def test_a_newer_server_counts_a_member_kept_twice_twice(tmp_path, newer):
    _counted(tmp_path, NEWER_CASES, [(name, "HLEN", "k", 2) for name in NEWER_CASES
                                     if name.startswith("a hash") and NEWER_CASES[name].loads]
             + [("a set listpack's member twice", "SCARD", "k", 3)], newer[0])


def test_redis_corrupt_empty_keys_asset(tmp_path, monkeypatch):
    """Redis's own nine empty collections: the server skips each and serves none; redis-check-rdb
    stops at the first; each is an rdb-empty-key warning."""
    path = ASSETS / "corrupt_empty_keys.rdb"
    load = servers.redis_load(path, tmp_path / "srv")
    assert load.serving and load.keys == 0 and "empty keys skipped: 9" in load.log
    skipped = {line.rsplit("skipping empty key: ", 1)[1] for line in load.log.splitlines()
               if "skipping empty key: " in line}
    assert load.check_code != 0 and "RDB ERROR DETECTED" in load.check_out
    found = findings(path.read_bytes(), monkeypatch)
    assert [f.rule for f in found] == ["rdb-empty-key"] * 9 and all(f.severity == "warning" for f in found)
    assert {f.message.split("'")[1] for f in found} == skipped and len(skipped) == 9


@pytest.mark.parametrize("name", ["encodings.rdb", "hash-zipmap.rdb", "hash-ziplist.rdb", "zset-ziplist.rdb",
                                  "list-quicklist.rdb", "scriptbackup.rdb", "corrupt_ziplist.rdb"])
def test_redis_assets(name, tmp_path):
    path = ASSETS / name
    load = servers.redis_load(path, tmp_path / "srv")
    res = servers.dcpinspect("rdb", "--format", "jsonl", path)
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    keys = [r for r in rows if r["kind"] == "key"]
    rules = [r["rule"] for r in rows if r["kind"] == "finding"] + [f["rule"] for r in keys for f in r["findings"]]
    if name == "corrupt_ziplist.rdb":  # the server refuses it
        assert not load.serving and "Hash ziplist integrity check failed" in load.log
        assert res.returncode == 1 and "rdb-corrupt" in rules
    else:
        assert load.serving and load.check_code == 0, load.log[-2000:]
        assert res.returncode == 0 and not rules and len(keys) == load.keys


def test_the_rule_book_says_what_the_server_does():
    res = servers.dcpinspect("rules", "-f", "jsonl")
    rows = {r["rule"]: r for r in map(json.loads, res.stdout.splitlines())}
    assert res.returncode == 0
    for rule in RDB_RULES.values():
        assert rows[rule.id]["server"] == rule.server and rows[rule.id]["severity"] == rule.severity
    assert "skipping empty key" in rows["rdb-empty-key"]["server"] and rows["rdb-empty-key"]["severity"] == "warning"
    assert "XLEN" in rows["rdb-stream-length"]["server"] and rows["rdb-stream-length"]["severity"] == "warning"


def test_a_stream_node_read_twice_is_no_finding():
    """The stream builder's own check: a healthy stream of two nodes is clean."""
    data = _file(g.key(15, "st", g.stream([_node(3), g.stream_node(2, 0, ["n"], [(0, 0, [7])])], 4, (2, 0))))
    p = RdbParser()
    out = p.feed(data) + p.close()
    (rec,) = [r for r in out if isinstance(r, KeyRecord)]
    assert rec.elements == 4 and not rec.findings and not [f for f in out if isinstance(f, Finding)]


@pytest.mark.parametrize("keep", [False, True])
def test_a_member_twice_is_judged_alike_with_or_without_c(keep, monkeypatch):
    """The record lane declines a value whose members hash alike and the readers judge it:
    the findings are the same with dcpinspect.families.redis.rdb._rdb and without, values kept or not."""
    from dcpinspect.families.redis.rdb import decoder as rdb, layouts, lzf, primitives

    def judged():
        out = []
        for name, case in {**CASES, **NEWER_CASES}.items():
            if case.rules & {"rdb-duplicate-member", "rdb-duplicate-member-kept"} or name.startswith("nothing wrong"):
                p = RdbParser(keep=keep)
                records = p.feed(case.data) + p.close()
                out.append((name, sorted((f.rule, f.severity, f.message) for r in records
                                         for f in getattr(r, "findings", [])), len(records)))
        return out

    with_c = judged()
    assert sum(bool(found) for _, found, _ in with_c) == len(with_c) - 2
    for module in (layouts, lzf, primitives, rdb):
        monkeypatch.setattr(module, "C", None)
    assert judged() == with_c
