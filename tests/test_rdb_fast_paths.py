"""The C loops of ``rdb --values`` and of the memory reports give what their Python gives:
the digests' SHA1 loops (``_rdb.sha1_each``, ``digest_mix``, ``digest_xor``; SHA-NI and
portable) against ``hashlib`` and digest.py's own, the values' JSON shapes (``_rdb.json_items``) against
data.py's, the shortest digits of a double against ``Decimal``, and the memory model's
size-class tables made from their steps against every size, the packed entries as text
(``_rdb.texts``) against values.py's (``take_strings``, the
strings in a row, is tested beside ``skip_strings`` in test_rdb_fast.py)."""

from __future__ import annotations

import hashlib
import math
import random
import struct
from decimal import Decimal

import pytest

from dcpinspect.families.redis.rdb import data, digest
from dcpinspect.families.redis.reports import memory
from dcpinspect.families.redis.rdb.native import C

needs_c = pytest.mark.skipif(C is None, reason="the _rdb extension is not built")

#: elements as the readers make them: text, binary, empty, long (several SHA1 blocks), and
#: the lengths at SHA1's padding edges (55, 56, 63, 64 bytes)
ELEMENTS = [b"alpha", b"", b"\xff\xfe\x00", "été".encode(), bytes(range(256)) * 40,
            *(b"x" * n for n in (55, 56, 63, 64, 119, 120))]


@needs_c
@pytest.mark.parametrize("portable", [False, True])  # SHA-NI where the CPU has it, and the portable blocks
def test_sha1_each_is_hashlib(portable):
    rnd = random.Random(5)
    more = [rnd.randbytes(rnd.randrange(300)) for _ in range(500)]
    was = C.sha1_portable(portable)
    try:
        got = C.sha1_each(ELEMENTS + more + [bytearray(b"ba"), 12345])
    finally:
        C.sha1_portable(was)
    want = b"".join(hashlib.sha1(e).digest() for e in ELEMENTS + more + [b"ba", b"12345"])
    assert got == want


@needs_c
def test_digest_loops_match_python():
    rnd = random.Random(7)
    start = hashlib.sha1(b"start").digest()
    hashes = C.sha1_each(ELEMENTS)
    assert C.digest_mix(start, hashes) == digest._mix_all(start, hashes)
    assert C.digest_xor(ELEMENTS, False) == digest._xor_all(ELEMENTS, False)
    pairs = [(rnd.randbytes(rnd.randint(0, 80)), rnd.randbytes(rnd.randint(0, 80)),
              rnd.choice([None, 1700000000000])) for _ in range(200)] + [(b"f", 17), (b"g", b"v", None)]
    flag = hashlib.sha1(b"!!hexpire!!").digest()
    assert C.digest_xor(pairs, True, flag) == digest._xor_all(pairs, True, flag)
    scores = [(rnd.randbytes(8), rnd.uniform(-1e6, 1e6)) for _ in range(100)] + [(b"i", math.inf), (b"z", 3)]
    for score in (data.redis_double, data.g17):
        assert C.digest_xor(scores, True, None, score) == digest._xor_all(scores, True, None, score)
    with pytest.raises(ValueError):
        C.digest_mix(b"short", hashes)


@needs_c
def test_json_items_match_python():
    items = [*ELEMENTS, 7, -1 << 63, 1.5, math.inf, (b"m", 2.25), (b"f", b"\xff", None), bytearray(b"ba")]
    assert C.json_items(items, data._item) == data._items_python(items, data._item)


def test_shortest_digits_as_decimal_normalises_them():
    rnd = random.Random(11)
    values = [1e20, 1.5e-7, 1e-4, 5e18, 1e-300, 5e-324, 1.7976931348623157e308, 0.1, 100.5, 1e16, 123456.789]
    values += [abs(struct.unpack("<d", rnd.getrandbits(64).to_bytes(8, "little"))[0]) for _ in range(3000)]
    values += [rnd.random() * 10.0 ** rnd.randint(-30, 30) for _ in range(3000)]
    for v in values:
        if v != v or math.isinf(v) or v == 0:
            continue
        _, digits, k = Decimal(repr(v)).normalize().as_tuple()
        assert data._shortest(repr(v)) == ("".join(map(str, digits)), k), repr(v)


def test_size_class_tables_from_their_steps():
    n = memory.LANE_TABLE
    for quantum in memory.ALLOCATORS.values():
        sz = memory.sizes(quantum)
        assert memory.steps(sz.alloc, n) == [memory.jemalloc(i, quantum) for i in range(n)]
        assert memory.steps(sz.sds, n) == [memory.sds_alloc(i, quantum) for i in range(n)]
    # the bundled jemalloc's classes step by 8 up to 64 (--with-lg-quantum=3), the system's by 16
    assert [memory.jemalloc(i, 8) for i in (1, 9, 17, 25, 33, 41, 49, 57, 65, 81)] == [8, 16, 24, 32, 40, 48, 56, 64,
                                                                                       80, 96]
    assert [memory.jemalloc(i, 16) for i in (1, 9, 17, 25, 33, 41, 49, 57, 65, 81)] == [8, 16, 32, 32, 48, 48, 64, 64,
                                                                                        80, 96]
    assert memory.steps(lambda i: i // 3, 10) == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]



@needs_c
def test_texts_match_python():
    from dcpinspect.families.redis.rdb import values

    entries = [b"a", 0, -5, 1 << 62, -(1 << 63), b"", True, b"\xff"]
    assert C.texts(entries) == values._texts_python(entries)
    assert all(type(t) is bytes for t in C.texts(entries))
