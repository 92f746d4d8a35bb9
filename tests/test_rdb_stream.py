"""The RDB decoder as a stream: the same records whatever the chunks, every key before a
cut or a damage, and no exception or hang for any bytes (hypothesis, bounded budget)."""

from __future__ import annotations

import struct

from hypothesis import HealthCheck, given, settings, strategies as st

import rdbgen
from dcpinspect.families.redis.rdb.decoder import RdbParser
from dcpinspect.families.redis.rdb.records import Ending, KeyRecord
from dcpinspect.findings import Finding
from corpus import corpus

CORPUS = corpus("rdb-librdb")


def run(data: bytes, sizes: list[int] | None = None, keep: bool = True) -> list:
    parser = RdbParser(keep=keep)
    out, i, k = [], 0, 0
    if not sizes:
        out += parser.feed(data)
    else:
        while i < len(data):
            n = sizes[k % len(sizes)]
            out += parser.feed(data[i:i + n])
            i, k = i + n, k + 1
    return out + parser.close()


def signature(out: list) -> list:
    """What a record says, without the object identity."""
    sig = []
    for r in out:
        if isinstance(r, Finding):
            sig.append(("finding", r.rule, r.offset))
        elif isinstance(r, Ending):
            sig.append(("end", r.checksum, r.eof_offset, r.bytes_read, r.stopped))
        elif isinstance(r, KeyRecord):
            sig.append(("key", r.db, r.key, r.type_id, r.offset, r.length, r.size, r.elements, r.expire_ms,
                        repr(r.value), [f.rule for f in r.findings]))
        else:
            sig.append((r.kind, r.offset, r.length))
    return sig


def mixed_file() -> bytes:
    """Keys of most layouts, an LZF value, expiries, two dbs."""
    body = rdbgen.aux("redis-ver", "7.2.0") + rdbgen.aux("ctime", "1700000000")
    body += b"\xfe\x00\xfb\x06\x01"
    body += rdbgen.key(0, "s", rdbgen.string("hello"), expire_ms=1_800_000_000_000)
    body += rdbgen.key(0, "n", rdbgen.int_string(-300))
    data = b"compressible " * 10
    body += rdbgen.key(0, "z", rdbgen.lzf_string(rdbgen.lzf_literals(data), len(data)))
    body += rdbgen.key(1, "l", rdbgen.length(2) + rdbgen.string("a") + rdbgen.string("b"))
    body += rdbgen.key(18, "q", rdbgen.length(1) + rdbgen.length(2) + rdbgen.string(rdbgen.listpack([b"x", 7])))
    body += rdbgen.key(11, "i", rdbgen.string(rdbgen.intset([1, 5, 9])))
    body += b"\xfe\x01" + rdbgen.key(16, "h", rdbgen.string(rdbgen.listpack([b"f", b"v"])))
    return rdbgen.rdb(body)


def test_any_chunking_gives_the_same_records():
    data = mixed_file()
    whole = signature(run(data))
    assert [s[2] for s in whole if s[0] == "key"] == [b"s", b"n", b"z", b"l", b"q", b"i", b"h"]
    for sizes in ([1], [2, 3], [7], [64, 1, 1]):
        assert signature(run(data, sizes)) == whole


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(1, 300), min_size=1, max_size=8), st.sampled_from(
    ["100_lists.rdb", "stream_v11.rdb", "string_int_encoded.rdb", "quicklist2_v11.rdb", "function2.rdb",
     "plain_zset_v6.rdb", "hash_zm_v2.rdb", "module_aux_v12.rdb"]))
def test_corpus_files_in_random_chunks_give_the_same_records(sizes, name):
    path = CORPUS / name
    data = path.read_bytes()
    assert signature(run(data, sizes)) == signature(run(data))


def test_a_cut_at_every_offset_reports_every_key_before_it():
    data = mixed_file()
    full = [r for r in run(data) if isinstance(r, KeyRecord)]
    for cut in range(len(data)):
        out = run(data[:cut])
        keys = [r for r in out if isinstance(r, KeyRecord)]
        complete = [k for k in full if k.offset + k.length <= cut]
        assert [(k.key, k.value) for k in keys] == [(k.key, k.value) for k in complete], cut
        assert [f.rule for f in out if isinstance(f, Finding)] == ["rdb-truncated"], cut
        assert out[-1].stopped


def test_a_lying_length_neither_hangs_nor_holds_its_claim():
    body = rdbgen.key(0, "before", rdbgen.string("ok"))
    body += b"\x00" + rdbgen.string("liar") + b"\x80" + struct.pack(">I", 0xFFFFFFFF) + b"tail"
    out = run(b"REDIS0011" + body, [3])
    keys = [r.key for r in out if isinstance(r, KeyRecord)]
    rules = [f.rule for r in out if isinstance(r, KeyRecord) for f in r.findings] + [
        f.rule for f in out if isinstance(f, Finding)]
    assert keys == [b"before"] and "rdb-truncated" in rules


def test_a_string_past_the_cap_is_passed_over_and_decoding_goes_on():
    big = b"x" * 5000
    body = rdbgen.key(0, "big", rdbgen.string(big)) + rdbgen.key(0, "after", rdbgen.string("ok"))
    parser = RdbParser(keep=True, cap=1024)
    out = []
    data = rdbgen.rdb(body)
    for i in range(0, len(data), 100):
        out += parser.feed(data[i:i + 100])
        assert len(parser.buf) <= 1024 + 200  # never holds the big string
    out += parser.close()
    keys = {r.key: r for r in out if isinstance(r, KeyRecord)}
    assert keys[b"after"].value == b"ok" and keys[b"big"].value is None
    assert [f.rule for f in keys[b"big"].findings] == ["rdb-string-too-long"]
    assert out[-1].checksum == "ok"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.integers(1, 50))
def test_arbitrary_bytes_after_a_header_never_raise(tail, chunk):
    for head in (b"REDIS0011", b"REDIS0009", b"VALKEY080", b"REDIS0003"):
        data = head + tail
        out = run(data, [chunk])
        assert isinstance(out[-1], Ending)
        assert signature(out) == signature(run(data))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10_000), st.binary(min_size=1, max_size=4))
def test_damaged_corpus_bytes_never_raise(position, junk):
    data = bytearray((CORPUS / "misc_with_stream.rdb").read_bytes())
    at = position % len(data)
    data[at:at + len(junk)] = junk
    out = run(bytes(data), [97])
    assert isinstance(out[-1], Ending)
