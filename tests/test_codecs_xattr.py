import json
import string
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dcpinspect.families.mcbp.messages.codecs.errors import CodecError
from dcpinspect.families.mcbp.messages.codecs.xattr import encode_xattrs, parse_xattrs

# spec §3.2 (KV docs/Document.md)
DOC_PAIRS = [
    ("_sync", '{"cas":"deadbeefcafefeed"}'),
    ("meta", '{"author":"Trond Norbye","content-type":"application/octet-stream"}'),
]


def pair(key: bytes, value: bytes) -> bytes:
    raw = key + b"\x00" + value + b"\x00"
    return struct.pack(">I", len(raw)) + raw


def section(*pairs: bytes) -> bytes:
    body = b"".join(pairs)
    return struct.pack(">I", len(body)) + body


def test_document_vector_encode():
    blob = encode_xattrs(DOC_PAIRS)
    assert len(blob) == 118
    assert blob.hex().startswith("00000072" "00000021" "5f73796e6300" "7b22636173223a")
    assert struct.unpack_from(">I", blob, 4 + 4 + 0x21)[0] == 0x49


def test_document_vector_decode():
    blob = encode_xattrs(DOC_PAIRS)
    assert parse_xattrs(blob) == (DOC_PAIRS, 118)
    document = blob + b'{"body":true}'
    pairs, offset = parse_xattrs(memoryview(document))
    assert pairs == DOC_PAIRS and document[offset:] == b'{"body":true}'


def test_empty_section():
    assert parse_xattrs(b"\x00\x00\x00\x00body") == ([], 4)


@pytest.mark.parametrize(
    "key",
    ["a", "_a", "$document", "x" * 15, "é", "日本語", "a.b", "9lives"],
)
def test_valid_keys(key):
    blob = section(pair(key.encode(), b"1"))
    assert parse_xattrs(blob) == ([(key, "1")], len(blob))


@pytest.mark.parametrize(
    "blob, message",
    [
        (b"", "shorter than 4"),
        (b"\x00\x00\x00", "shorter than 4"),
        (b"\x00\x00\x00\x10" + b"\x00" * 4, "total length 16 exceeds blob"),
        (section(b"\x00\x00\x00\x02a\x00"), "shorter than 7 bytes"),
        (section(pair(b"a", b"1"), b"\x00\x00"), "shorter than 7 bytes"),
        (section(b"\x00\x00\x00\x09a\x001\x00"), "runs past the section"),
        (section(b"\x00\x00\x00\x00abc"), "key at offset 8 is not NUL-terminated"),
        (section(b"\x00\x00\x00\x04abcd"), "key at offset 8 is not NUL-terminated"),
        (section(b"\x00\x00\x00\x05a\x00123"), "value at offset 10 is not NUL-terminated"),
        (section(b"\x00\x00\x00\x06a\x001\x00\x00\x00"), "pair length 6 != key \\+ value \\+ 2 \\(4\\)"),
        (section(pair(b"a", b"{")), "not valid JSON"),
        (section(pair(b"a", b"")), "not valid JSON"),
        (section(pair(b"a", b"NaN")), "not valid JSON"),
        (section(pair(b"a", b"[1,]")), "not valid JSON"),
        (section(pair(b"a", b"[" * 100_000)), "nests deeper than 512 levels"),
        (section(pair(b"a", b'"\xff"')), "value of 'a' is not valid UTF-8"),
        (section(pair(b"a", b"1"), pair(b"a", b"2")), "duplicate xattr key 'a'"),
        (section(pair(b"\xff", b"1")), "key is not valid UTF-8"),
        (section(pair(b"\xed\xa0\x80", b"1")), "key is not valid UTF-8"),
        (section(pair(b"x" * 16, b"1")), "key length 16 not in 1..15"),
        (section(pair("ééééééééé".encode(), b"1")), "key length 18 not in 1..15"),
        (section(b"\x00\x00\x00\x03\x001\x00"), "key length 0 not in 1..15"),
        (section(pair(b".a", b"1")), "starts with a reserved character"),
        (section(pair(b"#a", b"1")), "starts with a reserved character"),
        (section(pair(b"\x01a", b"1")), "starts with a reserved character"),
        (section(pair(b"\x7fa", b"1")), "starts with a reserved character"),
        (section(pair(b"_", b"1")), "only a prefix character"),
        (section(pair(b"$", b"1")), "only a prefix character"),
    ],
)
def test_invalid_rules(blob, message):
    with pytest.raises(CodecError, match=message):
        parse_xattrs(blob)


leading = st.sampled_from(["", "_", "$"])
rest = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="\x00", min_codepoint=0x30),
    min_size=1, max_size=6)
keys = st.builds(lambda a, b: a + b, leading, rest).filter(
    lambda k: len(k.encode()) <= 15 and k not in ("_", "$")
    and (k[0] in "_$" or (k[0] not in string.punctuation and k[0] != "\x7f")))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
).map(json.dumps)


@given(st.dictionaries(keys, json_values, max_size=5), st.binary(max_size=16))
def test_round_trip(mapping, body):
    pairs = list(mapping.items())
    blob = encode_xattrs(pairs) + body
    parsed, offset = parse_xattrs(blob)
    assert parsed == pairs and blob[offset:] == body


@given(st.binary(max_size=64))
def test_random_bytes_raise_only_codec_error(raw):
    try:
        parse_xattrs(raw)
    except CodecError:
        pass


@given(st.lists(st.tuples(st.binary(max_size=17), st.binary(max_size=12)), max_size=4), st.binary(max_size=8))
def test_structured_garbage_raises_only_codec_error(raw_pairs, tail):
    blob = section(*(pair(k, v) for k, v in raw_pairs), tail)
    try:
        parse_xattrs(blob)
    except CodecError:
        pass
