"""``rdb --format jsonl --values`` writes the keys the C record lane reads as whole lines made
in C (``RdbParser(lines=...)``, ``KeyRecord.line``): each line must be byte for byte the
one ``report.key_json`` and ``dumps_line`` make of the same key read by the Python readers,
and the snapshot's digest the same, on every RDB file of the repository and on files built
here with what the lane must write exactly or leave to the readers (escapes, text that is
not UTF-8, every packed layout, scores of every form, expiries)."""

from __future__ import annotations

import math
import random
import struct
from pathlib import Path

import pytest

import rdbgen as g
from dcpinspect.families.redis.rdb import data
from dcpinspect.families.redis.rdb.decoder import RdbParser
from dcpinspect.families.redis.rdb.digest import Digester, SnapshotDigest
from dcpinspect.families.redis.rdb.native import C
from dcpinspect.families.redis.rdb.records import KeyRecord
from dcpinspect.families.redis.reports import report
from dcpinspect.outputs.jsonl import dumps_line

needs_c = pytest.mark.skipif(C is None, reason="the _rdb extension is not built")
ROOT = Path(__file__).resolve().parent.parent
#: (Dragonfly's files are left out: the lane reads none of their keys, and the zstd bomb's
#: values kept whole take minutes)
FILES = sorted(p for d in ("tests", "samples") for p in (ROOT / d).rglob("*.rdb") if "dragonfly" not in p.name)


def python_lines(raw: bytes, chunk: int) -> tuple[list[bytes], str]:
    """Every key's line as the readers and key_json make it, and the snapshot's digest."""
    parser, digester, out = RdbParser(keep=True), Digester(), []
    for i in range(0, len(raw) + 1, chunk):
        for rec in parser.feed(raw[i:i + chunk]) if i < len(raw) else parser.close():
            if type(rec) is KeyRecord:
                assert rec.line is None
                out.append(dumps_line(report.key_json(rec, digester, True), False))
            else:
                digester.see(rec)
    return out, digester.snapshot.hexdigest()


def lane_lines(raw: bytes, chunk: int) -> tuple[list[bytes], str, int]:
    """The same with the lane's lines: and how many keys it wrote."""
    digester = Digester()
    parser, out, made = RdbParser(keep=True, lines=digester.snapshot), [], 0
    for i in range(0, len(raw) + 1, chunk):
        for rec in parser.feed(raw[i:i + chunk]) if i < len(raw) else parser.close():
            if type(rec) is KeyRecord and rec.line is not None:
                assert rec.value is None
                out.append(rec.line)
                made += 1
            elif type(rec) is KeyRecord:
                out.append(dumps_line(report.key_json(rec, digester, True), False))
            else:
                digester.see(rec)
    return out, digester.snapshot.hexdigest(), made


def same(raw: bytes, chunk: int = 1 << 20) -> int:
    want, want_digest = python_lines(raw, chunk)
    got, got_digest, made = lane_lines(raw, chunk)
    assert got == want
    assert got_digest == want_digest
    return made


@needs_c
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_lines_of_every_file_are_key_json(path):
    raw = path.read_bytes()
    same(raw)
    same(raw, 4093)  # records cut across reads: the lane stops at the end of each buffer


def _text_zoo(rnd: random.Random) -> list[bytes]:
    return [b"plain", b"", b'quote " back \\ slash', b"ctl \x00\x01\x1f\x7f\b\f\n\r\t",
            "été ✓ 😀 \u2028".encode(), b"\xff\xfe bad", b"\xed\xa0\x80 surrogate", b"\xc0\xaf overlong",
            b"\xf4\x90\x80\x80 past U+10FFFF", b"\xe2\x82 cut", "ü".encode()[:1], b"x" * 300,
            rnd.randbytes(1000), rnd.randbytes(2), rnd.randbytes(3), b"12345", b"-7",
            # what must be escaped, at every place in and across 8-byte words
            *(b"a" * p + c + b"b" * (17 - p) for c in (b'"', b"\\", b"\x1f", b"\x7f", b"\x80", "é".encode(), b"\x00")
              for p in range(0, 18, 3))]


def _zoo_file(rnd: random.Random) -> bytes:
    texts = _text_zoo(rnd)
    scores = [0.0, -0.0, 1.5, -2.25, 1e20, 1.5e-7, 1e-4, 123456.789, 5e18, 4611686018427387904.0, 1e16,
              math.inf, -math.inf, 0.1, 1 / 3, 1e300, 5e-324, -1e-10, 100.5, 2.5e15]
    scores += [struct.unpack("<d", rnd.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(60)]
    scores = [s for s in scores if s == s]
    body = g.aux("redis-ver", "7.2.4") + g.aux("ctime", "1700000000")
    body += b"\xfe\x00"
    n = 0

    def name() -> str:
        nonlocal n
        n += 1
        return f"k{n}"

    for t in texts:
        body += g.key(0, name(), g.string(t))
        body += g.key(0, name(), g.string(t), expire_ms=1800000000000)
    for v in (0, -1, 127, -128, 30000, -30000, 2**31 - 1, -2**31):
        body += g.key(0, name(), g.int_string(v))
    body += g.key(0, name(), g.lzf_string(g.lzf_literals(b"lzf text " * 40), 360))
    body += g.key(0, name(), g.lzf_string(g.lzf_literals(rnd.randbytes(200)), 200))
    body += g.key(0, b"\xff not utf-8 name", g.string(b"v"))  # key_base64: left to the readers
    body += g.key(0, "é name ✓", g.string(b"v"))
    body += g.key(0, 'na"me\\\x01', g.string(b"v"))
    members = [t for t in texts if t] + [b"m%d" % i for i in range(30)]
    rnd.shuffle(members)
    body += g.key(1, name(), g.length(len(texts)) + b"".join(g.string(t) for t in texts))  # list
    body += g.key(2, name(), g.length(len(members)) + b"".join(g.string(m) for m in members))  # set
    body += g.key(4, name(), g.length(len(members)) + b"".join(g.string(m) + g.string(t) for m, t in
                                                               zip(members, texts * 4)))  # hash
    zs = list(zip(members, scores))
    body += g.key(5, name(), g.length(len(zs)) + b"".join(g.string(m) + struct.pack("<d", s) for m, s in zs),
                  expire_ms=1800000000000)  # zset2
    for width, vals in ((2, [-5, 0, 7, 300]), (4, [-70000, 1, 70000]), (8, [-(1 << 40), 0, 1 << 40])):
        body += g.key(11, name(), g.string(g.intset(vals, width)))
    entries = [t for t in texts if len(t) < 64] + [0, 12, 127, -1, 4095, -4096, 30000, 2**31 - 1, -(1 << 40)]
    body += g.key(10, name(), g.string(g.ziplist(entries)))  # ziplist list
    body += g.key(14, name(), g.length(2) + g.string(g.ziplist(entries[:5])) + g.string(g.ziplist(entries[5:])))
    body += g.key(18, name(), g.length(3) + g.length(2) + g.string(g.listpack(entries))
                  + g.length(1) + g.string(b"plain node \xff") + g.length(2) + g.string(g.listpack([b"z", 5])))
    body += g.key(20, name(), g.string(g.listpack(members[:20] + [1, 2, -3])))  # listpack set
    pairs = [x for m, t in zip(members[:15], entries) for x in (m, t)]
    body += g.key(16, name(), g.string(g.listpack(pairs)))  # listpack hash
    body += g.key(13, name(), g.string(g.ziplist([x for x in pairs if not isinstance(x, bytes) or len(x) < 64])))
    score_texts = [b"1.5", b"-0", b"1e3", b"2.50", b"-17", b"0.1", b"3.0e-5", b"1e400", b"+4"]
    zl = [x for i, s in enumerate(score_texts + [7, -9, 1 << 40]) for x in (b"z%d" % i, s)]
    body += g.key(17, name(), g.string(g.listpack(zl)))  # listpack zset
    body += g.key(12, name(), g.string(g.ziplist(zl)))  # ziplist zset
    body += g.key(21, name(), _stream_value(3, rnd))
    body += b"\xfe\x03"
    body += g.key(0, name(), g.string(b"in db 3"))
    return g.rdb(body, version=11)


def _stream_value(version: int, rnd: random.Random) -> bytes:
    """A stream of layout ``version`` (1-4): two nodes (one entry deleted, one with fields
    of its own), and consumer groups with pending entries, one of them claimed by two
    consumers (the later one owns it, as the JSON says)."""
    L, S = g.length, g.string
    first = g.stream_node(1700000000000, 0, ["type", "user"], [(0, 0, [b"a", 1]), (0, 1, [b"\xff", b"x"])])
    own = [2, 1, 2, "f1", "f2", 0,
           0, 5, 0, 2, b"o1", 77, b"o2", "\u00e9", 7,  # fields of its own
           2, 6, 0, b"v", -3, 5,  # the master's fields (SAMEFIELDS)
           1, 7, 0, 2, b"gone", b"1", b"x", b"y", 7]  # deleted
    node2 = S(struct.pack(">QQ", 1700000000100, 0)) + S(g.listpack(own))
    body = L(2) + first + node2 + L(4) + L(1700000000107) + L(0)
    if version >= 2:
        body += L(1700000000000) + L(0) + L(1700000000107) + L(0) + L(9)
    ids = [(1700000000000, 0), (1700000000000, 1), (1700000000100, 0)]
    groups = [(b"g1", ids, [(b"c1", ids[:2]), (b"\xfe c2", ids[1:])]), (b"g2", [], [])]
    body += L(len(groups))
    for name, pel, consumers in groups:
        body += S(name) + L(1700000000000) + L(1)
        if version >= 2:
            body += L((1 << 64) - 1 if name == b"g1" else 3)
        body += L(len(pel)) + b"".join(struct.pack(">QQ", *i) + struct.pack("<q", 1700000000500 + k) + L(k + 1)
                                       for k, i in enumerate(pel))
        body += L(len(consumers))
        for cname, cpel in consumers:
            body += S(cname) + struct.pack("<q", 1700000000600)
            if version >= 3:
                body += struct.pack("<q", 1700000000700)
            body += L(len(cpel)) + b"".join(struct.pack(">QQ", *i) for i in cpel)
    if version >= 4:
        body += L(0) + L(0) + L(0) + L(0) + L(0)
    return body


@needs_c
@pytest.mark.parametrize("version,type_", [(1, 15), (2, 19), (3, 21), (4, 26)])
def test_lines_of_streams(version, type_):
    rdb_version = {1: 9, 2: 10, 3: 11, 4: 13}[version]
    value = _stream_value(version, random.Random(version))
    raw = g.rdb(g.aux("redis-ver", "7.4.0") + g.key(type_, "s", value) + g.key(type_, "t", value, 1800000000000),
                version=rdb_version)
    assert same(raw) == 2


@needs_c
def test_lines_of_every_layout_and_text():
    raw = _zoo_file(random.Random(3))
    made = same(raw)
    keys = sum(1 for line in python_lines(raw, 1 << 20)[0])
    assert made >= keys - 2  # all but the name that is not UTF-8 (and none it should not)
    # a key cut across two reads of the input is still the lane's: it waits for the rest
    assert same(raw, 97) == made
    assert same(raw, 1) == made


@needs_c
def test_a_key_past_the_lanes_reach_goes_to_the_readers(monkeypatch):
    """The lane waits for at most LANE_REACH bytes of one record; past them, the readers
    take the key as its bytes come, and the line is the same."""
    from dcpinspect.families.redis.rdb import decoder

    big = g.length(100) + b"".join(g.string(b"element %03d " % i + bytes(range(65, 100))) for i in range(100))
    raw = g.rdb(g.key(0, "small", g.string(b"v")) + g.key(1, "big", big) + g.key(0, "after", g.string(b"w")))
    assert same(raw, 512) == 3
    monkeypatch.setattr(decoder, "LANE_REACH", 2048)
    monkeypatch.setattr(decoder, "LANE_STEP", 512)
    assert same(raw, 512) == 2  # "big" is the readers'


@needs_c
def test_lines_declined_keys_go_to_the_readers():
    """A name that is not UTF-8 is the readers' (key_text's escapes, key_base64)."""
    raw = g.rdb(g.key(0, b"\xff\xfe", g.string(b"v")) + g.key(0, b"ok", g.string(b"v")))
    got, _, made = lane_lines(raw, 1 << 20)
    assert made == 1
    assert b'"key_base64":"//4="' in got[0]


@needs_c
def test_lines_scores_under_old_servers_digest_as_g17():
    zs = [(b"a", 0.1), (b"b", 1 / 3), (b"c", 1e20)]
    value = g.length(3) + b"".join(g.string(m) + struct.pack("<d", s) for m, s in zs)
    for ver in ("7.0.15", "7.2.0", "6.2.1"):
        raw = g.rdb(g.aux("redis-ver", ver) + g.key(5, "z", value), version=10)
        assert same(raw) == 1


@needs_c
def test_double_text_is_datas():
    rnd = random.Random(11)
    values = [0.0, -0.0, math.inf, -math.inf, 1e20, 1.5e-7, 1e-4, 5e18, 1e-300, 5e-324, 1.7976931348623157e308,
              0.1, 100.5, 1e16, 123456.789, 4611686018427387903.0, 4611686018427387904.0, -4611686018427387904.0,
              1e22, 1.25e-5, 12345678.5, 1234567.125]
    values += [struct.unpack("<d", rnd.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(5000)]
    values += [rnd.random() * 10.0 ** rnd.randint(-30, 30) * rnd.choice((1, -1)) for _ in range(5000)]
    values += [float(rnd.randint(-1 << 64, 1 << 64)) for _ in range(500)]
    # the range written by 128-bit integers (about 3.8e-6 to 2^53): scores as files hold
    # them, halves and other short fractions, the neighbours of powers of ten and of two
    # (where the digits carry over and where the lower neighbour is nearer), and the ends
    values += [rnd.random() * 10.0 ** rnd.randint(-6, 16) for _ in range(20000)]
    values += [rnd.random() * 1e4 for _ in range(5000)]
    values += [rnd.randrange(10 ** 6) + rnd.choice((0.5, 0.25, 0.1, 0.125, 0.3, 0.7)) for _ in range(2000)]
    for edge in [10.0 ** p for p in range(-7, 18)] + [2.0 ** p for p in range(-20, 55)]:
        for way in (0.0, math.inf):
            x = edge
            for _ in range(12):
                values.append(x)
                x = math.nextafter(x, way)
    values += [3.814697265625e-06, math.nextafter(3.814697265625e-06, 0), 2.0 ** 53 - 0.5, 9007199254740991.0]
    # exact ties at the 17th digit (%.17g rounds them to the even digit): 2^(50-b) <= d < 2^(51-b)
    # with b + 1 binary places, an odd number of the last
    values += [float(2 ** (50 - b) + rnd.randrange(2 ** (50 - b))) + rnd.randrange(1, 2 ** (b + 2), 2) / 2 ** (b + 2)
               for b in range(4) for _ in range(500)]
    values += [-v for v in values[-3000:]]
    for v in values:
        assert C.double_text(v, False) == data.redis_double(v), repr(v)
        assert C.double_text(v, True) == data.g17(v), repr(v)


def test_a_parser_asked_for_lines_with_a_selection_keeps_values():
    """Lines are made only of every key with values kept: a selection reads as before."""
    from dcpinspect.families.redis.reports.selection import KeySelection

    raw = g.rdb(g.key(0, "a", g.string(b"1")) + g.key(0, "b", g.string(b"2")))
    select = KeySelection.from_options({"match": ["a"]})
    parser = RdbParser(keep=True, select=select, lines=SnapshotDigest())
    keys = [r for r in parser.feed(raw) + parser.close() if type(r) is KeyRecord]
    assert [(k.key, k.value, k.line) for k in keys] == [(b"a", b"1", None)]


@needs_c
def test_lines_of_damaged_files_are_key_json():
    """Bytes changed at random in a file of every layout: whatever the lane still writes is
    what the readers make of the same key, and nothing crashes or hangs."""
    rnd = random.Random(29)
    raw = _zoo_file(random.Random(3)) + b""
    body = raw[9:-9]
    for _ in range(100):
        damaged = bytearray(body)
        for _ in range(rnd.randint(1, 4)):
            damaged[rnd.randrange(len(damaged))] = rnd.randrange(256)
        same(g.rdb(bytes(damaged), version=11))


@needs_c
@pytest.mark.parametrize("trailing_ok", [False, True])
def test_a_key_cut_across_reads_is_given_once_its_last_byte_comes(trailing_ok):
    """The lane waits for the bytes the record needs, not for more: a key whose last byte
    has come is handed on by that feed, before any byte after it."""
    value = g.length(40) + b"".join(g.string(b"e%02d" % i) for i in range(40))
    head = g.rdb(b"")[:9]
    first, second = g.key(1, "a", value), g.key(0, "b", g.string(b"x" * 300))
    raw = head + first + second
    parser = RdbParser(keep=False, trailing_ok=trailing_ok)
    got = []
    for i in range(0, len(raw), 7):
        keys = [rec.key for rec in parser.feed(raw[i:i + 7]) if type(rec) is KeyRecord]
        got += keys
        if i + 7 >= len(head + first) and b"a" not in keys:
            assert b"a" in got
    assert got == [b"a", b"b"]
    lines = RdbParser(keep=True, lines=SnapshotDigest(), trailing_ok=trailing_ok)
    made = [rec for i in range(0, len(raw), 7) for rec in lines.feed(raw[i:i + 7]) if type(rec) is KeyRecord]
    assert [rec.key for rec in made] == [b"a", b"b"] and all(rec.line is not None for rec in made)
