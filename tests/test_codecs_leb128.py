import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dcpinspect.families.mcbp.messages.codecs.errors import CodecError
from dcpinspect.families.mcbp.messages.codecs.leb128 import (
    decode_uleb128,
    encode_uleb128,
    split_collection_key,
)
from corpus import corpus

CORPUS = corpus("dcp-gomemcached")
ROW_38 = (
    "0857031b1f01036a000000940001036a15c7c2b955ab0000220001000000000000001800000000"
    "00000001000000000000000000000000000002087864637250726f76436f6c6c656374696f6e73"
    "5f4332393835347b226e616d65223a20227864637250726f76436f6c6c656374696f6e735f4332"
    "39383534222c2022616765223a2035372c2022696e646578223a202239383534222c2022626f64"
    "79223a2230303030303030303030227d"
)

# spec §5 (KV unsigned_leb128_test.cc, docs/Collections.md, GOCB uleb128_test.go)
VECTORS = [
    (0x00, "00"),
    (0x01, "01"),
    (0x7F, "7f"),
    (0x80, "8001"),
    (0x555, "d50a"),
    (0x7FFF, "ffff01"),
    (0xBFFF, "ffff02"),
    (0xFFFF, "ffff03"),
    (0x8000, "808002"),
    (0x5555, "d5aa01"),
    (0xCAFEF00, "80debf65"),
    (0xCAFEF00D, "8de0fbd70c"),
    (0xFFFFFFFF, "ffffffff0f"),
    (555, "ab04"),
]


@pytest.mark.parametrize("value, hexstr", VECTORS)
def test_vectors_encode(value, hexstr):
    assert encode_uleb128(value) == bytes.fromhex(hexstr)


@pytest.mark.parametrize("value, hexstr", VECTORS)
def test_vectors_decode(value, hexstr):
    raw = bytes.fromhex(hexstr)
    assert decode_uleb128(raw) == (value, len(raw))
    assert decode_uleb128(memoryview(raw + b"trailing")) == (value, len(raw))
    assert decode_uleb128(b"\xaa\xbb" + raw, offset=2) == (value, len(raw))


@pytest.mark.parametrize("hexstr", ["8100", "8000", "ff00", "feff00", "cad78000", "ffffffff00"])
def test_non_canonical_rejected(hexstr):
    with pytest.raises(CodecError, match="^non-canonical leb128$"):
        decode_uleb128(bytes.fromhex(hexstr))


@pytest.mark.parametrize("hexstr", ["", "80", "ffff", "ffffffffff", "8080808080", "808080808001"])
def test_no_stop_byte(hexstr):
    with pytest.raises(CodecError, match="^no stop-byte found$"):
        decode_uleb128(bytes.fromhex(hexstr))


@pytest.mark.parametrize("hexstr", ["ffffffff10", "8080808070"])
def test_value_beyond_u32(hexstr):
    with pytest.raises(CodecError, match="exceeds u32"):
        decode_uleb128(bytes.fromhex(hexstr))


def test_offset_past_end_and_negative():
    with pytest.raises(CodecError, match="no stop-byte found"):
        decode_uleb128(b"\x01", offset=1)
    with pytest.raises(CodecError, match="negative"):
        decode_uleb128(b"\x01", offset=-1)


@pytest.mark.parametrize("bad", [-1, 0x1_0000_0000, 1.0])
def test_encode_out_of_range(bad):
    with pytest.raises(CodecError):
        encode_uleb128(bad)


def test_split_collection_key():
    assert split_collection_key(b"\x00d1") == (0, b"d1", 1)
    assert split_collection_key(b"\xab\x04doc") == (555, b"doc", 2)
    # spec §14 row 38: real mutation frame (magic 0x08), cid 8
    frame = bytes.fromhex(ROW_38)
    flex, keylen, extlen = frame[2], frame[3], frame[4]
    start = 24 + flex + extlen
    key = memoryview(frame)[start:start + keylen]
    assert split_collection_key(key) == (8, b"xdcrProvCollections_C29854", 1)


@pytest.mark.parametrize(
    "key, message",
    [
        (b"", "no stop-byte found"),
        (b"\x80", "no stop-byte found"),
        (b"\x08", "empty logical key"),
        (b"\x81\x00k", "non-canonical leb128"),
        (b"\x01k", "collection id 1 is reserved"),
        (b"\x07k", "collection id 7 is reserved"),
    ],
)
def test_split_collection_key_rejects(key, message):
    with pytest.raises(CodecError, match=message):
        split_collection_key(key)


def test_split_collection_key_allow_reserved():
    assert split_collection_key(b"\x01k", allow_reserved=True) == (1, b"k", 1)


@pytest.mark.parametrize(
    "name, cid",
    [
        ("client_unitTestData_defaultScopeDefaultColMutation.json", 0),
        ("client_unitTestData_scope_and_collection_mutation.json", 9),
    ],
)
def test_split_real_keys(name, cid):
    path = CORPUS / name
    doc = json.loads(path.read_text())
    key = base64.b64decode(doc["Key"])
    assert len(key) == doc["Keylen"]
    assert split_collection_key(key) == (cid, b"d1", 1)


@given(st.integers(0, 0xFFFFFFFF), st.binary(max_size=8))
def test_round_trip(value, suffix):
    raw = encode_uleb128(value)
    assert 1 <= len(raw) <= 5
    assert decode_uleb128(raw + suffix) == (value, len(raw))


@given(st.binary(min_size=1, max_size=6))
def test_decoded_bytes_are_canonical(raw):
    try:
        value, used = decode_uleb128(raw)
    except CodecError:
        return
    assert encode_uleb128(value) == raw[:used]


@given(st.binary(max_size=12), st.integers(-2, 14))
def test_random_bytes_raise_only_codec_error(raw, offset):
    try:
        decode_uleb128(raw, offset)
    except CodecError:
        pass
    try:
        split_collection_key(raw)
    except CodecError:
        pass
