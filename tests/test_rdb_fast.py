"""The RDB decoder's fast paths give what its reference readings give.

- The C helpers (dcpinspect/families/redis/rdb/_rdb.c): the CRC-64 agrees with the bit-by-bit definition;
  LZF, ziplists and listpacks give exactly what the Python readings give, and None exactly
  where those raise, on valid blobs built from the layouts and on damaged ones; strings in
  a row are passed over, or taken, where one at a time would read them.
- Values not kept (``summary``, ``jsonl``, the table: strings passed over, LZF checked but
  not inflated, packed layouts counted, whole key records read by the C lane) give the
  records and findings of values kept, byte for byte, fed whole or a few bytes at a time,
  with the C helpers and without them: on the librdb corpus, on a file of every layout, on
  damaged copies of it, on hypothesis' mutations of it, and on a file a real redis-server
  wrote.
"""

from __future__ import annotations

import json
import os
import random
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import rdbgen
from dcpinspect.families.redis.rdb.values import KEPT_ONLY
from dcpinspect.families.redis.rdb import crc64 as crc_module
from dcpinspect.families.redis.rdb import layouts
from dcpinspect.families.redis.rdb import lzf
from dcpinspect.families.redis.rdb import native
from dcpinspect.families.redis.rdb import primitives
from dcpinspect.families.redis.rdb import decoder as rdb
from dcpinspect.families.redis.rdb.primitives import Corrupt
from dcpinspect.families.redis.rdb.decoder import RdbParser
from dcpinspect.families.redis.rdb.records import Ending, KeyRecord
from dcpinspect.findings import Finding
from corpus import corpus

CORPUS = corpus("rdb-librdb")
#: librdb's files and Redis's own test files (nine empty collections among them, which the lane
#: leaves to the readers)
CORPUS_FILES = sorted(CORPUS.glob("*.rdb")) + sorted(corpus("redis-assets").glob("*.rdb"))

C = native.C
needs_c = pytest.mark.skipif(C is None, reason="dcpinspect.families.redis.rdb._rdb is not built (or DCPINSPECT_PURE is set)")


# ------------------------------------------------------------------------- an LZF compressor (§3.2)

def lzf_compress(data: bytes) -> bytes:
    """Greedy LZF as lzf_c.c writes it: literal runs of up to 32 bytes, back-references of
    3 to 264 bytes up to 8 KiB back (overlapping ones for runs), the long form past 8."""
    out, lit = bytearray(), bytearray()
    table: dict[bytes, int] = {}

    def flush():
        for i in range(0, len(lit), 32):
            chunk = lit[i:i + 32]
            out.append(len(chunk) - 1)
            out.extend(chunk)
        lit.clear()

    i, n = 0, len(data)
    while i < n:
        if i + 3 <= n:
            k = data[i:i + 3]
            j = table.get(k)
            table[k] = i
            if j is not None and i - j <= 8192:
                size, most = 3, min(264, n - i)
                while size < most and data[j + size] == data[i + size]:
                    size += 1
                flush()
                back, length = i - j - 1, size - 2
                if length < 7:
                    out += bytes([length << 5 | back >> 8, back & 0xFF])
                else:
                    out += bytes([7 << 5 | back >> 8, length - 7, back & 0xFF])
                i += size
                continue
        lit.append(data[i])
        i += 1
    flush()
    return bytes(out)


def samples() -> list[bytes]:
    rnd = random.Random(7)
    words = b"alpha beta gamma delta order user price status".split()
    return [
        b"", b"a", b"abc" * 3, b"x" * 1000, bytes(range(256)) * 40,
        b" ".join(rnd.choice(words) for _ in range(3000)),
        rnd.randbytes(5000), b"ab" * 700 + rnd.randbytes(100) + b"ab" * 700,
    ]


def test_the_compressor_makes_back_references_of_every_form():
    blob = lzf_compress(b"x" * 1000 + b"abcabcabcab")
    assert lzf.decompress_python(blob, 1011) == b"x" * 1000 + b"abcabcabcab"
    assert any(c >> 5 == 7 for c in blob) and any(0 < c >> 5 < 7 for c in blob[:2])


# ------------------------------------------------------------------------- C against the Python readings

@needs_c
def test_crc64_in_c_is_the_bitwise_crc():
    data = random.Random(3).randbytes(10_007)
    for cut in (0, 1, 7, 8, 9, 5000, len(data)):
        assert C.crc64(data[cut:], C.crc64(data[:cut])) == rdbgen.crc64_bitwise(data)
    assert C.crc64(memoryview(bytearray(b"123456789"))) == 0xE9C6D914C4B8D9CA
    assert crc_module.crc64(b"123456789") == 0xE9C6D914C4B8D9CA
    # every length around the 16- and 64-byte folds, from every alignment, continuing from a CRC
    for n in [*range(0, 200), 1000, 4096 + 13]:
        for at in (0, 1, 3, 8):
            piece = data[at:at + n]
            assert C.crc64(piece, 0x0123456789ABCDEF) == C.crc64_table(piece, 0x0123456789ABCDEF), (n, at)
    assert C.crc64_table(data) == rdbgen.crc64_bitwise(data)


@needs_c
@pytest.mark.parametrize("data", samples(), ids=lambda d: f"{len(d)}B")
def test_lzf_in_c_inflates_what_python_inflates(data):
    blob = lzf_compress(data)
    assert lzf.decompress_python(blob, len(data)) == data and lzf._fits(blob, len(data))
    assert C.lzf(blob, len(data)) == data and C.lzf_ok(blob, len(data)) and C.lzf_fast(blob, len(data)) == data
    assert C.lzf(bytearray(blob), len(data)) == data and C.lzf_ok(memoryview(blob), len(data))
    for ulen in (len(data) - 1, len(data) + 1, 88 * len(blob) + 1):
        assert C.lzf(blob, ulen) is None and not C.lzf_ok(blob, ulen) and C.lzf_fast(blob, ulen) is None
        with pytest.raises(lzf.LzfError):
            lzf.decompress(blob, ulen)
        with pytest.raises(lzf.LzfError):
            lzf.check(blob, ulen)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(samples()[1:]), st.data())
def test_lzf_counted_in_python_fails_exactly_where_it_inflates_wrong(data, draw):
    """lzf.check without the C helper counts the bytes the tokens make (lzf._fits) instead
    of making them: it passes exactly what decompress_python inflates to ulen bytes."""
    blob = bytearray(lzf_compress(data))
    for _ in range(draw.draw(st.integers(0, 3))):
        blob[draw.draw(st.integers(0, len(blob) - 1))] = draw.draw(st.integers(0, 255))
    blob = bytes(blob[:draw.draw(st.integers(0, len(blob)))])
    ulen = len(data) + draw.draw(st.integers(-2, 2))
    assert lzf._fits(blob, ulen) == (_python(lzf.decompress_python, blob, ulen) is not None)


def _python(fn, *args):
    try:
        return fn(*args)
    except (lzf.LzfError, Corrupt):
        return None


@needs_c
@settings(max_examples=400, deadline=None)
@given(st.sampled_from(samples()[1:]), st.data())
def test_lzf_in_c_declines_exactly_where_python_raises(data, draw):
    blob = bytearray(lzf_compress(data))
    for _ in range(draw.draw(st.integers(1, 3))):
        blob[draw.draw(st.integers(0, len(blob) - 1))] = draw.draw(st.integers(0, 255))
    blob = bytes(blob[:draw.draw(st.integers(0, len(blob)))])
    ulen = len(data) + draw.draw(st.integers(-2, 2))
    want = _python(lzf.decompress_python, blob, ulen)
    assert lzf._fits(blob, ulen) == (want is not None)
    assert C.lzf(blob, ulen) == want and C.lzf_fast(blob, ulen) == want
    assert C.lzf_ok(blob, ulen) == (want is not None)


ENTRIES = [b"", b"a", b"a" * 63, b"b" * 64, b"c" * 127, b"d" * 128, b"e" * 5000, 0, 1, 12, 13, 127, 128, -1, -4096,
           4095, 30000, -70000, 1 << 40, -(1 << 62)]


def _layouts():
    rnd = random.Random(11)
    out = [("listpack", rdbgen.listpack(ENTRIES)), ("ziplist", rdbgen.ziplist(ENTRIES)),
           ("listpack", rdbgen.listpack([])), ("ziplist", rdbgen.ziplist([]))]
    for _ in range(6):
        entries = rnd.choices(ENTRIES, k=rnd.randrange(1, 300))
        out += [("listpack", rdbgen.listpack(entries)), ("ziplist", rdbgen.ziplist(entries))]
    return out


LAYOUTS = _layouts()
READINGS = {"listpack": (layouts.listpack_python, "listpack", "listpack_count"),
            "ziplist": (layouts.ziplist_python, "ziplist", "ziplist_count")}


@needs_c
@pytest.mark.parametrize("kind,blob", LAYOUTS, ids=lambda v: v if isinstance(v, str) else f"{len(v)}B")
def test_packed_layouts_in_c_give_the_python_entries(kind, blob):
    python, entries, count = READINGS[kind]
    want = python(blob)
    assert getattr(C, entries)(blob) == want and getattr(C, count)(blob) == len(want)
    assert [type(e) for e in getattr(C, entries)(blob)] == [type(e) for e in want]
    assert getattr(layouts, entries)(blob) == want and getattr(layouts, count)(blob) == len(want)


@needs_c
@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(LAYOUTS), st.data())
def test_packed_layouts_in_c_decline_exactly_where_python_raises(layout, draw):
    kind, blob = layout
    python, entries, count = READINGS[kind]
    blob = bytearray(blob)
    for _ in range(draw.draw(st.integers(1, 3))):
        at = draw.draw(st.integers(0, len(blob) - 1))
        blob[at] = draw.draw(st.sampled_from([0, 1, 0x7F, 0x80, 0xC0, 0xE0, 0xF0, 0xF1, 0xF4, 0xFE, 0xFF,
                                              blob[at] ^ 1, blob[at] + 1 & 0xFF, draw.draw(st.integers(0, 255))]))
    if draw.draw(st.booleans()):
        blob = blob[:draw.draw(st.integers(0, len(blob)))]
        blob[0:4] = struct.pack("<I", len(blob))[:len(blob[0:4])]
    blob = bytes(blob)
    want = _python(python, blob)
    assert getattr(C, entries)(blob) == want
    assert getattr(C, count)(blob) == (None if want is None else len(want))


# ------------------------------------------------------------------------- values kept or not: the same records

def _signature(records: list) -> list:
    """Everything a record says but its value (and a stream's metadata, summed up when values
    are not kept, and a list's node sizes are there only when they are)."""
    out = []
    for r in records:
        if isinstance(r, Finding):
            out.append(("finding", r.rule, r.offset, r.message))
        elif isinstance(r, Ending):
            out.append(("end", r.checksum, r.eof_offset, r.stopped, r.bytes_read, r.trailing))
        else:
            extra = {k: v for k, v in getattr(r, "extra", {}).items() if k not in KEPT_ONLY}
            out.append((r.kind, r.offset, r.length, getattr(r, "size", None), getattr(r, "elements", None),
                        getattr(r, "encoding", None), getattr(r, "expire_ms", None), getattr(r, "key", None),
                        repr(extra), [(f.rule, f.offset, f.message) for f in r.findings],
                        [getattr(r, name, None) for name in ("db", "type_id", "vtype", "idle", "freq", "blob_offset")]))
    return out


def decode(data: bytes, keep: bool, chunk: int | None = None, cap: int | None = None) -> list:
    parser = RdbParser(keep=keep, cap=cap)
    out = []
    step = chunk or len(data) or 1
    for i in range(0, len(data), step):
        out += parser.feed(data[i:i + step])
    return out + parser.close()


@pytest.fixture(params=["c", "python"])
def helpers(request, monkeypatch):
    """Each test once with the C helpers (when built) and once without them."""
    if request.param == "python":
        for module in (layouts, lzf, primitives, rdb):
            monkeypatch.setattr(module, "C", None)
    elif C is None:
        pytest.skip("dcpinspect.families.redis.rdb._rdb is not built")
    return request.param


def assert_same(data: bytes, chunks=(None, 7), cap: int | None = None) -> list:
    kept = _signature(decode(data, True, cap=cap))
    for chunk in chunks:
        assert _signature(decode(data, False, chunk, cap)) == kept, chunk
    return kept


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_corpus_files_decode_the_same_with_values_kept_or_not(path, helpers):
    assert_same(path.read_bytes(), chunks=(None, 13))


def stream_value(version: int) -> bytes:
    """A stream of layout ``version`` (§6.4): one node of three entries (one with the master
    entry's fields, one with its own, one deleted), a consumer group with a pending entry
    and a consumer, and from version 4 an IDMP producer."""
    ms = 1_700_000_000_000
    items = [2, 1, 2, b"type", b"user", 0,
             2, 0, 0, b"click", 17, 5,
             0, 5, 0, 2, b"a", b"1", b"b", b"2", 7,
             3, 9, 0, b"view", 18, 5]
    node_key = struct.pack(">QQ", ms, 0)
    two = rdbgen.length(ms + 9) + rdbgen.length(0)
    out = rdbgen.length(1) + rdbgen.string(node_key) + rdbgen.string(rdbgen.listpack(items))
    out += rdbgen.length(2) + two
    if version >= 2:
        out += rdbgen.length(ms) + rdbgen.length(0) + two + rdbgen.length(3)
    out += rdbgen.length(1) + rdbgen.string("group") + two
    if version >= 2:
        out += rdbgen.length(2)
    out += rdbgen.length(1) + node_key + struct.pack("<q", ms + 100) + rdbgen.length(1)
    out += rdbgen.length(1) + rdbgen.string("consumer") + struct.pack("<q", ms + 200)
    if version >= 3:
        out += struct.pack("<q", ms + 300)
    out += rdbgen.length(1) + node_key
    if version >= 4:
        out += rdbgen.length(60) + rdbgen.length(100) + rdbgen.length(1) + rdbgen.string("producer")
        out += rdbgen.length(1) + rdbgen.string("iid") + two + rdbgen.length(1) + rdbgen.length(0)
    return out


def _every_layout() -> bytes:
    """A version-11 file with a key of every layout Redis 7 and earlier write, plain and
    LZF-compressed, with an expiry on some."""
    rnd = random.Random(5)
    text = b" ".join(rnd.choice(b"user order price status alpha beta".split()) for _ in range(400))
    big = lzf_compress(text)
    lp = rdbgen.listpack([b"field", b"value" * 20, b"n", 12345, b"t", text[:300]])
    lzf_lp = rdbgen.lzf_string(lzf_compress(lp), len(lp))
    zl = rdbgen.ziplist([b"m1", 1, b"m2", b"2.5", b"m3", b"-inf"])
    keys = [
        rdbgen.key(0, "plain", rdbgen.string(b"v" * 10)),
        rdbgen.key(0, "long", rdbgen.string(text), expire_ms=4_102_444_800_000),
        rdbgen.key(0, "int", rdbgen.int_string(-300)),
        rdbgen.key(0, "lzf", rdbgen.lzf_string(big, len(text))),
        rdbgen.key(1, "list", rdbgen.length(3) + rdbgen.string("a") + rdbgen.lzf_string(big, len(text))
                   + rdbgen.int_string(7)),
        rdbgen.key(2, "set", rdbgen.length(2) + rdbgen.string("x") + rdbgen.string("y" * 100)),
        rdbgen.key(3, "zset", rdbgen.length(2) + rdbgen.string("a") + b"\x031.5" + rdbgen.string("b") + b"\xfe"),
        rdbgen.key(4, "hash", rdbgen.length(2) + rdbgen.string("f") + rdbgen.string("v")
                   + rdbgen.string("g") + rdbgen.lzf_string(big, len(text))),
        rdbgen.key(5, "zset2", rdbgen.length(2) + rdbgen.string("a") + struct.pack("<d", 1.5)
                   + rdbgen.string("b") + struct.pack("<d", -2.0)),
        rdbgen.key(10, "ziplist", rdbgen.string(rdbgen.ziplist([b"a", 5, b"b" * 70]))),
        rdbgen.key(11, "intset", rdbgen.string(rdbgen.intset([1, 5, 9]))),
        rdbgen.key(12, "zsetzl", rdbgen.string(zl)),
        rdbgen.key(13, "hashzl", rdbgen.string(rdbgen.ziplist([b"f", b"v", b"g", 5]))),
        rdbgen.key(14, "quicklist", rdbgen.length(2) + rdbgen.string(rdbgen.ziplist([b"a", 1]))
                   + rdbgen.string(rdbgen.ziplist([b"b"]))),
        rdbgen.key(16, "hashlp", lzf_lp),
        rdbgen.key(16, "hashlp2", rdbgen.string(rdbgen.listpack([b"f", b"v"]))),
        rdbgen.key(17, "zsetlp", rdbgen.string(rdbgen.listpack([b"a", 1, b"b", b"2.5"]))),
        rdbgen.key(18, "quicklist2", rdbgen.length(3) + rdbgen.length(2) + lzf_lp + rdbgen.length(1)
                   + rdbgen.string(b"plain" * 30) + rdbgen.length(2) + rdbgen.string(rdbgen.listpack([1, 2, 3]))),
        rdbgen.key(20, "setlp", rdbgen.string(rdbgen.listpack([b"x", 1, b"y"]))),
        rdbgen.key(25, "hashlpex", struct.pack("<q", 1000) + rdbgen.string(rdbgen.listpack([b"f", b"v", 0]))),
        rdbgen.key(24, "hashmeta", struct.pack("<q", 1000) + rdbgen.length(1) + rdbgen.length(0)
                   + rdbgen.string("f") + rdbgen.string("v")),
        rdbgen.key(15, "stream1", stream_value(1)),
        rdbgen.key(19, "stream2", stream_value(2)),
        rdbgen.key(21, "stream3", stream_value(3)),
        rdbgen.key(26, "stream4", stream_value(4)),
    ]
    body = rdbgen.aux("redis-ver", "7.4.0") + rdbgen.aux("ctime", "1700000000") + b"\xfe\x00" + b"".join(keys)
    return rdbgen.rdb(body, version=11)


EVERY = _every_layout()


def test_a_file_of_every_layout_decodes_the_same_with_values_kept_or_not(helpers):
    kept = assert_same(EVERY, chunks=(None, 1, 5, 64))
    keys = [s for s in kept if s[0] == "key"]
    assert len(keys) == 25 and all(s[9] == [] for s in keys)  # undamaged: no finding
    assert kept[-1][1] == "ok"


def _damaged_copies() -> list[tuple[str, bytes]]:
    """The file of every layout with one kind of damage each, inside a value the decoder
    gets past (a finding on the key) or not (decoding stops)."""
    zl = rdbgen.ziplist([b"a", 5, b"b" * 70])
    out = []
    for name, find, at, byte, said in [
        ("lzf", b"\x03lzf\xc3", 5 + 4, 0x20, "LZF string: back-reference at 0"),  # nothing to refer to
        ("lzf in a list", b"\x04list\x03\x01a\xc3", 13, 0x20, "LZF string: back-reference at 0"),
        ("listpack", b"\x81f\x02\x81v\x02", 2, 0x7F, "the backlen of the entry at 6"),
        ("ziplist", zl, len(zl) - 1, 0, "the ziplist does not end with 0xff"),
        ("intset", rdbgen.intset([1, 5, 9]), 8, 9, "not in increasing order at 1"),
        ("listpack score", b"\x832.5", 2, ord("x"), "listpack of key 'zsetlp': score b'2x5' is not a number"),
        ("string double", b"\x031.5", 2, ord("z"), "score b'1z5' is not a number"),
        ("encoding", b"\x07ziplist", 0, 0xC7, "string encoding 0xc7 is none of"),
    ]:
        where = EVERY.find(find)
        assert where > 0, name
        copy = bytearray(EVERY)
        copy[where + at] = byte
        out.append((name, bytes(copy), said))
    odd = [(16, "oddhash", rdbgen.listpack([b"f", b"v", b"g"])), (17, "oddzset", rdbgen.listpack([b"m", 1, b"n"])),
           (13, "oddzl", rdbgen.ziplist([b"f", b"v", b"g"])), (12, "oddzlz", rdbgen.ziplist([b"m", 1, b"n"]))]
    for type_, name, blob in odd:
        body = b"\xfe\x00" + rdbgen.key(type_, name, rdbgen.string(blob)) + rdbgen.key(0, "after", rdbgen.string("x"))
        out.append((f"odd {name}", rdbgen.rdb(body), f"of key '{name}': 3 entries do not make"))
    for name, change, said in [
        ("stream count", lambda v: v.replace(rdbgen.length(2) + rdbgen.length(1_700_000_000_009), rdbgen.length(3)
                                             + rdbgen.length(1_700_000_000_009), 1), "says 3 entries, its nodes hold 2"),
        ("stream node", lambda v: v.replace(b"\x02\x01\x01\x01\x02\x01", b"\x02\x01\x02\x01\x02\x01", 1),
         "the node's master entry counts 2 live and 2 deleted entries"),
        ("stream node key", lambda v: v.replace(rdbgen.string(struct.pack(">QQ", 1_700_000_000_000, 0)),
                                                rdbgen.string(b"x" * 15), 1), "a stream node key is 16 bytes"),
    ]:
        good = stream_value(2)
        bad = change(good)
        assert bad != good, name
        out.append((name, rdbgen.rdb(b"\xfe\x00" + rdbgen.key(19, "s", bad) + rdbgen.key(0, "after", rdbgen.string("x"))),
                    said))
    again = rdbgen.key(0, "plain", rdbgen.string(b"w"))  # the first key, once more, at the end
    body = EVERY[9:-9] + again + b"\xfe\x01" + again  # and in db 1: not again there
    out.append(("duplicate", rdbgen.rdb(body), "key 'plain' of db 0 is serialised again"))
    past = rdbgen.key(0, "past", rdbgen.string(b"v"), expire_ms=1_600_000_000_000)  # before the ctime
    out.append(("expired", rdbgen.rdb(EVERY[9:-9] + past), "key 'past' expired at 1600000000000 ms"))
    out.append(("cut", EVERY[:len(EVERY) // 2], "the input ends in the value of key "))
    out.append(("long string", EVERY, "a string of 2,354 bytes in the value of key 'long' at offset 64 is more "
                                      "than the 256 held"))
    return out


@pytest.mark.parametrize("name,data,said", _damaged_copies(), ids=[d[0] for d in _damaged_copies()])
def test_damaged_files_give_the_same_findings_with_values_kept_or_not(name, data, said, helpers):
    cap = 256 if name == "long string" else None  # the 400-word text is too long: passed over
    kept = assert_same(data, chunks=(None, 3), cap=cap)
    messages = [f[2] for s in kept if s[0] == "key" for f in s[9]] + [s[3] for s in kept if s[0] == "finding"]
    assert any(said in m for m in messages), messages


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_files_decode_the_same_with_values_kept_or_not(draw):
    data = bytearray(EVERY)
    # as another version or vendor numbers its types (a version-9 file that turns out Dragonfly's)
    data[:9] = draw.draw(st.sampled_from([b"REDIS0011", b"REDIS0009", b"VALKEY080", b"REDIS0007", b"REDIS0012"]))
    for _ in range(draw.draw(st.integers(1, 4))):
        data[draw.draw(st.integers(9, len(data) - 1))] = draw.draw(st.integers(0, 255))
    assert_same(bytes(data), chunks=(None, draw.draw(st.integers(1, 40))), cap=draw.draw(st.sampled_from([None, 200])))


def test_the_pure_setting_turns_the_helpers_off():
    code = "from dcpinspect.families.redis.rdb import native; print(native.C)"
    import subprocess
    import sys

    env = {**os.environ, "DCPINSPECT_PURE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "None"


def _string_run(rnd: random.Random, scores: bool = True) -> tuple[bytes, int]:
    """Strings in a row as RDB writes them (plain of each length form, integer-encoded, LZF),
    each followed by 8 bytes (a ZSET_2 score) unless not ``scores``: the bytes and how many."""
    text = b"order user price " * 40
    lzf_text = rdbgen.lzf_string(lzf_compress(text), len(text))
    out, n = bytearray(), rnd.randrange(1, 12)
    for _ in range(n):
        kind = rnd.randrange(5)
        if kind == 0:
            out += rdbgen.string(rnd.randbytes(rnd.randrange(64)))
        elif kind == 1:
            out += rdbgen.string(rnd.randbytes(rnd.choice([64, 300, 20000])))
        elif kind == 2:
            out += rdbgen.int_string(rnd.choice([5, -300, 1 << 20]))
        elif kind == 3:
            out += lzf_text
        else:
            out += b"\x80" + struct.pack(">I", 70) + rnd.randbytes(70)  # the 32-bit length form
        if scores:
            out += struct.pack("<d", rnd.random())
    return bytes(out), n


def _damaged(buf: bytes, data) -> tuple[bytearray, int]:
    """``buf`` with up to three bytes changed, cut anywhere, and a string cap to read it with."""
    buf = bytearray(buf)
    for _ in range(data.draw(st.integers(0, 3))):
        buf[data.draw(st.integers(0, len(buf) - 1))] = data.draw(st.integers(0, 255))
    buf = buf[:data.draw(st.integers(0, len(buf)))]
    return buf, data.draw(st.sampled_from([1 << 20, 100]))


@pytest.mark.parametrize("helper", ["c", "python"])
@settings(max_examples=400, deadline=None)
@given(seed=st.integers(0, 10**9), data=st.data())
def test_strings_in_a_row_are_passed_over_only_where_one_at_a_time_would_pass(helper, seed, data):
    """skip_strings stops before any string skip_string would complain about or cannot see
    whole (C: and only there, for the encodings Redis writes), and otherwise ends where
    skip_string one at a time ends."""
    if helper == "c" and C is None:
        pytest.skip("dcpinspect.families.redis.rdb._rdb is not built")
    rnd = random.Random(seed)
    buf, n = _string_run(rnd)
    buf, cap = _damaged(buf, data)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(primitives, "C", C if helper == "c" else None)
        p, done = primitives.skip_strings(buf, 0, n, cap, 8)
    q = 0
    for _ in range(done):
        q = primitives.skip_string(buf, q, cap)[1] + 8
        assert q <= len(buf)
    assert q == p
    if helper == "c" and done < n and not (p < len(buf) and buf[p] in (0x81, 0xC3)):  # LZF: read one at a time
        with pytest.raises((primitives.NeedMore, primitives.TooLong, Corrupt)):
            primitives.read_binary_double(buf, primitives.skip_string(buf, p, cap)[1])


@pytest.mark.parametrize("helper", ["c", "python"])
@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 10**9), data=st.data())
def test_strings_taken_in_a_row_are_read_strings(helper, seed, data):
    """take_strings (a collection's strings, values kept) gives, of the strings it takes,
    what read_string gives one at a time, and stops where skip_strings stops."""
    if helper == "c" and C is None:
        pytest.skip("dcpinspect.families.redis.rdb._rdb is not built")
    buf, n = _string_run(random.Random(seed), scores=False)
    buf, cap = _damaged(buf, data)
    items: list = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(primitives, "C", C if helper == "c" else None)
        p, done = primitives.take_strings(buf, 0, n, cap, items)
        assert (p, done) == primitives.skip_strings(buf, 0, n, cap)
    assert len(items) == done
    q = 0
    for got in items:
        want, q = primitives.read_string(buf, q, cap)
        assert got == want and type(got) is bytes
    assert q == p


def test_the_lane_reads_the_keys_it_knows(monkeypatch):
    """The C lane, not the readers, makes the records of the every-layout file's keys whose
    layouts it reads (every one but the hash with field expiry, the listpack-ex hash, the
    ZSET of string scores, and the ziplist ZSET with a score of "-inf", which float() reads
    and the lane leaves to it)."""
    if C is None:
        pytest.skip("dcpinspect.families.redis.rdb._rdb is not built")
    seen = []

    def scan(*args):
        q, found, inflated, need = C.scan(*args)
        seen.extend(r.key for r in found)
        return q, found, inflated, need

    monkeypatch.setattr(rdb, "C", type("Lane", (), {"scan": staticmethod(scan)}))
    keys = [r.key for r in decode(EVERY, False) if getattr(r, "kind", "") == "key"]
    assert sorted(seen) == sorted(set(keys) - {b"hashmeta", b"hashlpex", b"zset", b"zsetzl"})
    damaged = dict((name, data) for name, data, _ in _damaged_copies())["listpack"]
    seen.clear()
    keys = [r.key for r in decode(damaged, False) if getattr(r, "kind", "") == "key"]
    assert b"hashlp2" in keys and b"hashlp2" not in seen  # left to the readers, which say why


def test_a_real_servers_file_decodes_the_same_with_values_kept_or_not(tmp_path, helpers):
    """bench/make_rdb_corpus.py's mix, written by redis-server (about 2 MB)."""
    import shutil
    import sys

    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import make_rdb_corpus

    out = tmp_path / "dump.rdb"
    assert make_rdb_corpus.main(["--size", "2", "--out", str(out), "--seed", "3"]) == 0
    kept = assert_same(out.read_bytes(), chunks=(None, 4093))
    keys = [s for s in kept if s[0] == "key"]
    assert len(keys) == json.loads(out.with_suffix(".json").read_text())["keys"]
    assert kept[-1][1] == "ok" and not [s for s in kept if s[0] == "finding"]


@pytest.mark.parametrize("remembered", [1, 2, 5, 24, 25, 26])
def test_the_keys_remembered_stop_at_the_cap_with_values_kept_or_not(remembered, helpers, monkeypatch):
    """DCPINSPECT_MAX_RDB_KEYS: the key that fills the remembered keys gets the note,
    wherever the cap falls among the lane's keys, and keys after it are not checked (the
    first key again at the end is no finding when the cap comes before it)."""
    monkeypatch.setenv("DCPINSPECT_MAX_RDB_KEYS", str(remembered))
    body = EVERY[9:-9] + rdbgen.key(0, "plain", rdbgen.string(b"w"))
    kept = assert_same(rdbgen.rdb(body), chunks=(None, 11))
    notes = [s for s in kept if s[0] == "finding" and s[1] == "rdb-keys-cap"]
    again = [f for s in kept if s[0] == "key" for f in s[9] if f[0] == "rdb-duplicate-key"]
    if remembered <= 25:  # the file's 25 keys fill it at the latest: the 26th is not checked
        assert len(notes) == 1 and notes[0][3].startswith(f"{remembered:,} keys remembered") and not again
    else:
        assert not notes and len(again) == 1


def test_the_lanes_records_are_whole_keyrecords():
    """Every field of a record the lane makes in C is set, as KeyRecord's __init__ sets it
    (a dict and a list of their own for extra and findings); a class whose slots the fields
    given do not cover is refused, and then the lane stays off."""
    if rdb._MAKER is None:
        pytest.skip("dcpinspect.families.redis.rdb._rdb is not built")
    from dcpinspect.families.redis.rdb.records import KeyRecord
    from dcpinspect.slots import names

    recs = [r for r in decode(EVERY, False) if isinstance(r, KeyRecord)]
    for r in recs:
        assert r == KeyRecord(**{name: getattr(r, name) for name in names(KeyRecord)})
        assert type(r.extra) is dict and type(r.findings) is list and r.value is None
    assert len({id(r.extra) for r in recs} | {id(r.findings) for r in recs}) == 2 * len(recs)
    with pytest.raises(TypeError):
        C.Maker(KeyRecord, rdb._LANE_FIELDS, [("value", None, False), ("findings", list, True)])
    with pytest.raises(TypeError):
        C.Maker(KeyRecord, rdb._LANE_FIELDS, [("value", None, False), ("findings", list, True), ("key", None, False)])


def _full(records: list) -> list:
    """The signature and the records' extra values whole (a stream's metadata included)."""
    return list(zip(_signature(records), [repr(getattr(r, "extra", None)) for r in records]))


@pytest.mark.skipif(C is None, reason="dcpinspect.families.redis.rdb._rdb is not built")
@pytest.mark.parametrize("name", ["every", "corpus", "damaged"])
def test_values_not_kept_give_the_same_records_with_the_c_helpers_or_without(name, monkeypatch):
    """The lane and the C layouts against the Python readers alone, values not kept: every
    field, the extra values included (a stream's nodes, length and groups)."""
    if name == "every":
        files = [EVERY]
    elif name == "corpus":
        files = [p.read_bytes() for p in CORPUS_FILES]
    else:
        files = [data for _, data, _ in _damaged_copies()]
    with_c = [_full(decode(data, False)) for data in files]
    for module in (layouts, lzf, primitives, rdb):
        monkeypatch.setattr(module, "C", None)
    assert [_full(decode(data, False)) for data in files] == with_c


@pytest.mark.parametrize("n", [30, 1000, 40000])
@pytest.mark.parametrize("kind", ["set", "hash", "intset-like"])
def test_a_repeated_member_among_many_is_found_whatever_their_number(n, kind):
    """The lane tells a repeat among a collection's members by a table of their hashes (a
    sort past 32,768): wherever the repeat is, the readers are given the key and say it;
    without one, no finding."""
    from dcpinspect.families.redis.rdb.decoder import RdbParser

    def members(repeat_at):
        names = [b"%d" % (i * 7 - 5000) if kind == "intset-like" else b"member:%d" % i for i in range(n)]
        if repeat_at is not None:
            names[repeat_at] = names[0]
        return names

    def value(names):
        if kind == "hash":
            return rdbgen.length(len(names)) + b"".join(rdbgen.string(m) + rdbgen.string(b"v") for m in names)
        return rdbgen.length(len(names)) + b"".join(rdbgen.string(m) for m in names)

    type_ = 4 if kind == "hash" else 2
    for repeat_at in (None, 1, n // 2, n - 1):
        raw = rdbgen.rdb(rdbgen.key(type_, "k", value(members(repeat_at))) + rdbgen.key(0, "after", rdbgen.string(b"x")),
                         version=10, checksum=False)
        recs = [r for r in RdbParser().feed(raw) if type(r) is KeyRecord]
        rules = [f.rule for f in recs[0].findings]
        assert [r.key for r in recs] == [b"k", b"after"]
        # (-kept: a hash small enough that the server, loading it as a listpack, keeps both)
        assert rules in (([],) if repeat_at is None else (["rdb-duplicate-member"], ["rdb-duplicate-member-kept"])), \
            (repeat_at, rules)
