"""The key selection of ``rdb`` (families/redis/selection.py): Redis's glob against a line by
line transliteration of ``stringmatchlen`` (redis/src/util.c) and against a real
redis-server's ``SCAN MATCH``; each criterion on the keys of a snapshot a real server wrote
(against what the server says of them); the selection applied to every output; and keys
passed over cost no value decoding."""

from __future__ import annotations

import json
import subprocess

import pytest
from hypothesis import given, settings, strategies as st

import rdbgen
import servers
import test_real_redis_rdb as real
from test_real_redis_rdb import snapshot  # noqa: F401  (the real server's dump, a fixture)
from dcpinspect.families.redis.rdb import values
from dcpinspect.families.redis.rdb.native import C
from dcpinspect.families.redis.rdb.decoder import RdbParser
from dcpinspect.families.redis.rdb.records import KeyRecord
from dcpinspect.families.redis.reports.selection import KeySelection, glob, parse_time


# -- stringmatchlen, as util.c writes it -------------------------------------------------------

def _signed(b: int) -> int:
    return b - 256 if b >= 128 else b


def stringmatchlen(pattern: bytes, string: bytes) -> bool:
    """util.c's stringmatchlen_impl (nocase off), statement for statement: indices for its
    pointers, a NUL past either end as C reads it."""
    skip = [False]

    def impl(pat: int, plen: int, s: int, slen: int, nesting: int) -> bool:
        P = lambda i: pattern[i] if i < len(pattern) else 0  # noqa: E731
        S = lambda i: string[i] if i < len(string) else 0  # noqa: E731
        if nesting > 1000:
            return False
        while plen and slen:
            c = P(pat)
            if c == ord("*"):
                while plen and P(pat + 1) == ord("*"):
                    pat += 1
                    plen -= 1
                if plen == 1:
                    return True
                while slen:
                    if impl(pat + 1, plen - 1, s, slen, nesting + 1):
                        return True
                    if skip[0]:
                        return False
                    s += 1
                    slen -= 1
                skip[0] = True
                return False
            elif c == ord("?"):
                s += 1
                slen -= 1
            elif c == ord("["):
                pat += 1
                plen -= 1
                neg = P(pat) == ord("^")
                if neg:
                    pat += 1
                    plen -= 1
                match = False
                while True:
                    if P(pat) == ord("\\") and plen >= 2:
                        pat += 1
                        plen -= 1
                        if P(pat) == S(s):
                            match = True
                    elif P(pat) == ord("]"):
                        break
                    elif plen == 0:
                        pat -= 1
                        plen += 1
                        break
                    elif plen >= 3 and P(pat + 1) == ord("-"):
                        start, end, ch = _signed(P(pat)), _signed(P(pat + 2)), _signed(S(s))
                        if start > end:
                            start, end = end, start
                        pat += 2
                        plen -= 2
                        if start <= ch <= end:
                            match = True
                    elif P(pat) == S(s):
                        match = True
                    pat += 1
                    plen -= 1
                if neg:
                    match = not match
                if not match:
                    return False
                s += 1
                slen -= 1
            else:
                if c == ord("\\") and plen >= 2:
                    pat += 1
                    plen -= 1
                if P(pat) != S(s):
                    return False
                s += 1
                slen -= 1
            pat += 1
            plen -= 1
            if slen == 0:
                while P(pat) == ord("*"):
                    pat += 1
                    plen -= 1
                break
        return plen == 0 and slen == 0

    if pattern == b"*":  # SCAN and KEYS take '*' alone as every key
        return True
    return impl(0, len(pattern), 0, len(string), 0)


ALPHABET = b"ab*?[]^-\\\x00\xe9\xff"
patterns = st.binary(max_size=10).map(lambda b: bytes(ALPHABET[x % len(ALPHABET)] for x in b))
keys = st.binary(max_size=10).map(lambda b: bytes(b"ab]^-\\*?[\x00\xe9\xff"[x % 12] for x in b))


@settings(max_examples=3000, deadline=None)
@given(patterns, keys)
def test_glob_answers_what_stringmatchlen_answers(pattern, key):
    assert glob(pattern)(key) == stringmatchlen(pattern, key), (pattern, key)


@pytest.mark.parametrize("pattern,key,expected", [
    (b"*", b"", True), (b"**", b"", False), (b"", b"", True), (b"a*", b"a", True), (b"a*b*", b"a", False),
    (b"[a-]", b"]", True), (b"[a-]", b"b", False), (b"[z-a]", b"m", True), (b"[^a]", b"a", False),
    (b"[^a]", b"b", True), (b"[", b"x", False), (b"[^", b"x", True), (b"a\\*", b"a*", True),
    (b"a\\*", b"ab", False), (b"a\\", b"a\\", True), (b"[\\]]", b"]", True), (b"h?llo", b"hallo", True),
    (b"*x*y*z", b"__x__y__z", True), (b"*x*y*z", b"__x__z__y", False),
])
def test_glob_cases(pattern, key, expected):
    assert glob(pattern)(key) is expected
    assert stringmatchlen(pattern, key) is expected


def test_glob_gives_up_past_redis_nesting():
    many = b"a*" * 1001 + b"a"  # 1001 runs of stars before the last segment: Redis answers no
    assert glob(many)(b"a" * 1002) is False
    assert glob(b"a*" * 1000 + b"a")(b"a" * 1001) is True


def test_glob_is_linear_on_hostile_keys():
    test = glob(b"*a*a*a*a*a*a*a*a*b")
    assert test(b"a" * 200_000) is False  # a backtracking regex would not return


# -- the real server's SCAN MATCH ----------------------------------------------------------------

SCAN_KEYS = [b"", b"a", b"b", b"ab", b"abc", b"a*c", b"a?c", b"[x]", b"]", b"^", b"-", b"\\", b"a\\b", b"\xe9t\xe9",
             b"\xff\x00\x01", b"user:1", b"user:10", b"user:2:name", b"hello", b"hallo", b"hxllo", b"heeeello"]
SCAN_PATTERNS = [b"*", b"a*", b"*c", b"a?c", b"a\\*c", b"[ab]", b"[^ab]", b"[a-]", b"[z-a]", b"[\\]]", b"[",
                 b"[^", b"user:*", b"user:?", b"user:[0-9]", b"user:*:name", b"h[ae]llo", b"h[^e]llo", b"h*llo",
                 b"*\\\\*", b"\xe9*", b"[\x80-\xff]*", b"[\xff-\x00]*", b"**", b"?", b"", b"*[", b"\\"]


def test_glob_selects_what_scan_match_returns():
    binary = servers.require("redis-server")["redis-server"]
    port = servers.free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", servers.LOOPBACK, "--save", "", "--appendonly",
                             "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert servers.wait_until(lambda: servers._connectable(port), 10)
        c = real.Client(port)
        for k in SCAN_KEYS:
            c.call("SET", k, "1")
        for pattern in SCAN_PATTERNS:
            found, cursor = set(), b"0"
            while True:
                cursor, batch = c.call("SCAN", cursor, "MATCH", pattern, "COUNT", 1000)
                found |= set(batch)
                if cursor == b"0":
                    break
            test = glob(pattern)
            assert {k for k in SCAN_KEYS if test(k)} == found, pattern
        c.close()
    finally:
        servers._stop(proc)


# -- each criterion --------------------------------------------------------------------------

def _file() -> bytes:
    body = rdbgen.aux("ctime", "1700000000") + b"\xfe\x00"
    body += rdbgen.key(0, "user:1", rdbgen.string("x" * 100), expire_ms=1_800_000_000_000)
    body += rdbgen.key(0, "user:2", rdbgen.string("y"), expire_ms=1_600_000_000_000)  # expired at ctime
    body += b"\xfe\x01" + rdbgen.key(1, "list:1", rdbgen.length(3) + rdbgen.string("a") + rdbgen.string("b") + rdbgen.string("c"))
    body += rdbgen.key(11, "set:1", rdbgen.string(rdbgen.intset([1, 2])))
    body += b"\xfe\x02" + rdbgen.key(16, "hash:1", rdbgen.string(rdbgen.listpack([b"f", b"v"])))
    return rdbgen.rdb(body)


def _keys(select: dict, keep=False, data: bytes | None = None) -> list[KeyRecord]:
    parser = RdbParser(keep=keep, select=KeySelection.from_options(select))
    out = parser.feed(data or _file()) + parser.close()
    return [r for r in out if isinstance(r, KeyRecord)]


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("select,names", [
    ({}, ["user:1", "user:2", "list:1", "set:1", "hash:1"]),
    ({"match": "user:*"}, ["user:1", "user:2"]),
    ({"regex": r"^(list|set):"}, ["list:1", "set:1"]),
    ({"type": ("list", "hash")}, ["list:1", "hash:1"]),
    ({"db": (0, 2)}, ["user:1", "user:2", "hash:1"]),
    ({"min_size": 20}, ["user:1"]),
    ({"max_size": 2}, ["user:2"]),
    ({"min_elements": 2}, ["list:1", "set:1"]),
    ({"max_elements": 1}, ["user:1", "user:2", "hash:1"]),
    ({"expiring": True}, ["user:1"]),
    ({"expired": True}, ["user:2"]),
    ({"persistent": True, "expired": True}, ["user:2", "list:1", "set:1", "hash:1"]),
    ({"expired": True, "at": "2030-01-01T00:00:00Z"}, ["user:1", "user:2"]),
    ({"expiring": True, "at": "1500000000"}, ["user:1", "user:2"]),
    ({"match": "*:1", "type": ("string",), "expiring": True}, ["user:1"]),
])
def test_each_criterion(select, names, keep):
    assert [r.key.decode() for r in _keys(select, keep)] == names


def test_values_of_keys_passed_over_are_not_decoded(monkeypatch):
    """With values kept, a key the selection passes over is read by the record lane (or
    the readers with values off): no reader makes its value."""
    made = []
    for layout, fn in list(values.READERS.items()):
        def spy(r, p, rec, fn=fn):
            if r.keeping:
                made.append(rec.key)
            return (yield from fn(r, p, rec))
        monkeypatch.setitem(values.READERS, layout, spy)
    recs = _keys({"match": "set:*"}, keep=True)
    assert [(r.key, r.value) for r in recs] == [(b"set:1", [b"1", b"2"])]
    assert made == [b"set:1"]


@pytest.mark.skipif(C is None, reason="dcpinspect.families.redis.rdb._rdb is not built")
def test_the_lane_reads_the_keys_passed_over(monkeypatch):
    called = []
    for layout, fn in list(values.READERS.items()):
        def spy(r, p, rec, fn=fn):
            called.append(rec.key)
            return (yield from fn(r, p, rec))
        monkeypatch.setitem(values.READERS, layout, spy)
    body = b"\xfe\x00" + b"".join(rdbgen.key(0, f"k{i}", rdbgen.string(f"v{i}")) for i in range(50))
    recs = _keys({"match": "k4?"}, keep=True, data=rdbgen.rdb(body))
    assert [r.key for r in recs] == [f"k4{i}".encode() for i in range(10)]
    assert all(r.value == f"v4{i}".encode() for i, r in zip(range(10), recs))
    assert called == [r.key for r in recs]  # the other 40 never reached a reader


def test_options_that_cannot_be_taken():
    for bad in ({"type": ("strng",)}, {"regex": "("}, {"at": "yesterday"}):
        with pytest.raises(ValueError):
            KeySelection.from_options(bad)
    assert KeySelection.from_options({"match": None, "type": ()}) is None
    assert parse_time("1700000000") == parse_time("2023-11-14T22:13:20Z") == 1_700_000_000_000


# -- every output, on a real server's snapshot -----------------------------------------------

def test_jsonl_selection_against_the_server(snapshot):
    dump = snapshot
    facts = dump.facts
    res = servers.dcpinspect("rdb", "-f", "jsonl", dump.path, "--match", "str:*", "--db", "0", "--db", "1")
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    got = {(r["db"], r["key"]) for r in rows if r["kind"] == "key"}
    assert got == {(db, k) for db in (0, 1) for k in facts[db] if k.startswith("str:")}
    (summary,) = [r for r in rows if r["kind"] == "summary"]
    assert summary["keys"] == len(got)
    res = servers.dcpinspect("rdb", "-f", "jsonl", dump.path, "--type", "zset", "--type", "hash", "--expiring")
    got = {(r["db"], r["key"]) for r in map(json.loads, res.stdout.splitlines()) if r["kind"] == "key"}
    assert got == {(db, k) for db, f in facts.items() for k, v in f.items()
                   if v["type"] in ("zset", "hash") and v["pexpiretime"] != -1}
    assert got  # the file has such keys


def test_table_and_summary_take_the_selection(snapshot):
    dump = snapshot
    res = servers.dcpinspect("rdb", dump.path, "--match", "list:*", "--db", "0")
    assert res.returncode == 0, res.stderr
    assert "list:big" in res.stdout and "str:int" not in res.stdout
    n = sum(1 for k in dump.facts[0] if k.startswith("list:"))
    assert f" {n} keys in 1 db" in res.stdout
    res = servers.dcpinspect("rdb", "-f", "summary", dump.path, "--persistent", "--db", "5")
    assert res.returncode == 0, res.stderr
    persistent = sum(1 for v in dump.facts[5].values() if v["pexpiretime"] == -1)
    assert f" {persistent} keys in 1 db" in res.stdout


def test_a_selection_that_cannot_be_taken_exits_2(snapshot):
    dump = snapshot
    res = servers.dcpinspect("rdb", dump.path, "--regex", "(")
    assert res.returncode == 2 and "--regex" in res.stderr
