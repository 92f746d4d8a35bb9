"""RDB primitives and packed layouts (dcpinspect/families/redis/{primitives,lzf,crc64,layouts}.py)
on bytes built from spec/rdb.md §3, §6, §7 and its §14 vectors."""

from __future__ import annotations

import struct

import pytest

import rdbgen
from dcpinspect.families.redis.rdb import layouts
from dcpinspect.families.redis.rdb.crc64 import crc64, crc64_python
from dcpinspect.families.redis.rdb.lzf import LzfError, decompress
from dcpinspect.families.redis.rdb.primitives import (
    Corrupt, NeedMore, TooLong, read_len, read_string, read_string_double, read_stream_id,
)

CAP = 1 << 20


# ------------------------------------------------------------------------- CRC-64 (§7, §14 #3)

@pytest.mark.parametrize("crc", [crc64, crc64_python])
def test_crc64_check_value(crc):
    assert crc(b"123456789") == 0xE9C6D914C4B8D9CA


@pytest.mark.parametrize("crc", [crc64, crc64_python])
def test_crc64_continues_across_pieces_and_agrees_with_the_bitwise_definition(crc):
    data = bytes(range(256)) * 3 + b"redis"
    assert crc(data[500:], crc(data[:500])) == rdbgen.crc64_bitwise(data) == crc(data)


# ------------------------------------------------------------------------- lengths (§3.1)

@pytest.mark.parametrize("n", [0, 1, 63, 64, 300, 16383, 16384, 1 << 31, (1 << 32) - 1, 1 << 32, (1 << 64) - 1])
def test_every_length_form_round_trips(n):
    enc = rdbgen.length(n)
    assert read_len(enc, 0) == (n, len(enc))


def test_lengths_are_big_endian():
    assert read_len(b"\x41\x02", 0) == (0x102, 2)
    assert read_len(b"\x80\x00\x01\x00\x00", 0) == (0x10000, 5)


@pytest.mark.parametrize("enc", [b"\x41", b"\x80\x00\x00", b"\x81" + b"\x00" * 7, b""])
def test_a_cut_length_asks_for_the_bytes_it_needs(enc):
    with pytest.raises(NeedMore) as more:
        read_len(enc, 0)
    assert more.value.args[0] == {0x41: 2, 0x80: 5, 0x81: 9}.get(enc[:1][0] if enc else None, 1)


@pytest.mark.parametrize("b", [0x82, 0xBF, 0xC0])
def test_a_byte_that_is_no_length_is_corrupt(b):
    with pytest.raises(Corrupt):
        read_len(bytes([b, 0, 0, 0, 0, 0, 0, 0, 0]), 0)


# ------------------------------------------------------------------------- strings (§3.2)

@pytest.mark.parametrize("v", [0, -1, 127, -128, 128, -32768, 32767, 40000, -(1 << 31), (1 << 31) - 1])
def test_integer_encoded_strings_come_back_in_decimal(v):
    enc = rdbgen.int_string(v)
    assert read_string(enc, 0, CAP) == (str(v).encode(), len(enc))


def test_plain_strings_of_each_length_form():
    for size in (0, 5, 63, 64, 20000):
        enc = rdbgen.string(b"x" * size)
        assert read_string(enc, 0, CAP) == (b"x" * size, len(enc))


def test_an_lzf_string_with_a_back_reference():
    # "abcabcabcabc": 3 literals, then a back-reference of 9 bytes at distance 3
    # control 0x02 + "abc"; back-ref: len 9 -> (9-2)=7 -> c>>5 == 7 plus extra byte 0, off 3-1 = 2
    compressed = b"\x02abc" + bytes([0xE0, 0x00, 0x02])
    enc = rdbgen.lzf_string(compressed, 12)
    assert read_string(enc, 0, CAP) == (b"abc" * 4, len(enc))


def test_lzf_literals_and_lengths_that_lie():
    data = b"hello lzf world, " * 5
    assert decompress(rdbgen.lzf_literals(data), len(data)) == data
    with pytest.raises(LzfError):
        decompress(rdbgen.lzf_literals(data), len(data) + 1)
    with pytest.raises(LzfError):
        decompress(rdbgen.lzf_literals(data), len(data) - 1)
    with pytest.raises(LzfError):
        decompress(b"\x20\x05", 10)  # a back-reference before the start
    with pytest.raises(LzfError):
        decompress(b"\x05ab", 6)  # a literal run past the end


def test_damaged_lzf_is_corrupt_with_the_place_to_resume():
    enc = rdbgen.lzf_string(b"\x20\x05", 10) + b"next"
    with pytest.raises(Corrupt) as bad:
        read_string(enc, 0, CAP)
    assert bad.value.resume == len(enc) - 4


def test_a_string_longer_than_the_cap_says_where_its_bytes_are():
    enc = b"\x80" + struct.pack(">I", 1 << 31)
    with pytest.raises(TooLong) as long:
        read_string(enc, 0, CAP)
    assert (long.value.length, long.value.start) == (1 << 31, 5)
    with pytest.raises(NeedMore):
        read_string(rdbgen.string(b"x" * 100)[:50], 0, CAP)


def test_an_unknown_string_encoding_is_corrupt():
    with pytest.raises(Corrupt):
        read_string(b"\xc4\x00", 0, CAP)


# ------------------------------------------------------------------------- numbers (§3.3)

def test_string_doubles_and_their_special_lengths():
    assert read_string_double(b"\x031.5", 0) == (1.5, 4)
    assert read_string_double(b"\xfe", 0) == (float("inf"), 1)
    assert read_string_double(b"\xff", 0) == (float("-inf"), 1)
    v, _ = read_string_double(b"\xfd", 0)
    assert v != v
    with pytest.raises(Corrupt):
        read_string_double(b"\x03abc", 0)


def test_stream_ids_are_big_endian():
    raw = struct.pack(">QQ", 1695649068107, 3)
    assert read_stream_id(raw, 0) == ((1695649068107, 3), 16)


# ------------------------------------------------------------------------- packed layouts (§6, §14 #4–#6)

def test_ziplist_vector():
    assert layouts.ziplist(bytes.fromhex("0f0000000c0000000200 00f3 02f6 ff".replace(" ", ""))) == [2, 5]


def test_ziplist_of_every_encoding():
    entries = [b"a", b"x" * 100, 0, 12, 13, -5, 70000, -(1 << 40)]
    assert layouts.ziplist(rdbgen.ziplist(entries)) == entries


@pytest.mark.parametrize("damage", ["zlbytes", "zllen", "prevlen", "end", "encoding"])
def test_damaged_ziplists_are_corrupt(damage):
    blob = bytearray(rdbgen.ziplist([b"ab", b"cd"]))
    if damage == "zlbytes":
        blob[0] += 1
    elif damage == "zllen":
        blob[8] = 3
    elif damage == "prevlen":
        blob[14] = 9  # the second entry's prevlen
    elif damage == "end":
        blob[-1] = 0
    else:
        blob[11] = 0x80 | 0x3F  # a 10xxxxxx encoding other than 0x80
    with pytest.raises(Corrupt):
        layouts.ziplist(bytes(blob))


def test_listpack_vector():
    blob = bytes.fromhex("18000000 0300 0201 0501 8b48656c6c6f20576f726c640c ff".replace(" ", ""))
    assert layouts.listpack(blob) == [2, 5, b"Hello World"]


def test_listpack_of_every_encoding():
    entries = [b"", b"a" * 63, b"b" * 64, b"c" * 5000, 0, 127, 128, -1, -4096, 4095, 30000, -70000, 1 << 40]
    assert layouts.listpack(rdbgen.listpack(entries)) == entries


@pytest.mark.parametrize("damage", ["total", "count", "backlen", "end", "string"])
def test_damaged_listpacks_are_corrupt(damage):
    blob = bytearray(rdbgen.listpack([b"ab", 5]))
    if damage == "total":
        blob[0] += 1
    elif damage == "count":
        blob[4] = 7
    elif damage == "backlen":
        blob[9] = 1
    elif damage == "end":
        blob[-1] = 0
    else:
        blob[6] = 0x80 | 40  # a string longer than the blob
    with pytest.raises(Corrupt):
        layouts.listpack(bytes(blob))


def test_intset_vector_and_widths():
    assert layouts.intset(bytes.fromhex("0200000003000000010002000300")) == [1, 2, 3]
    assert layouts.intset(rdbgen.intset([-(1 << 40), 5], 8)) == [-(1 << 40), 5]
    with pytest.raises(Corrupt):
        layouts.intset(rdbgen.intset([3, 1]))  # not sorted
    with pytest.raises(Corrupt):
        layouts.intset(rdbgen.intset([1, 2])[:-1])
    with pytest.raises(Corrupt):
        layouts.intset(struct.pack("<II", 3, 0))


def test_zipmap_vector():
    blob = bytes.fromhex("0203666f6f0300626172 0568656c6c6f0500776f726c64 ff".replace(" ", ""))
    assert layouts.zipmap(blob) == [b"foo", b"bar", b"hello", b"world"]
    with pytest.raises(Corrupt):
        layouts.zipmap(blob[:-1])
    with pytest.raises(Corrupt):
        layouts.zipmap(b"\x05" + blob[1:])
