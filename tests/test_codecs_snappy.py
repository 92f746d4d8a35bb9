import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dcpinspect.families.mcbp.messages.codecs.errors import CodecError
from dcpinspect.families.mcbp.messages.codecs.snappy import deflate, inflate, uncompressed_length
from corpus import corpus

CORPUS = corpus("dcp-gomemcached")

# spec §3.1 (GOMC client/unitTestData/defaultScopeDefaultColMutation.json, datatype 0x03)
VALUE = bytes.fromhex(
    "487c7b0a22636c69636b223a2022746f2065646974222c0a2277697468204a534f4e05188868657265"
    "20617265206e6f207265736572766564206669656c64206e616d6573220a7d"
)
JSON_DOC = b'{\n"click": "to edit",\n"with JSON": "there are no reserved field names"\n}'


def test_spec_vector():
    assert len(JSON_DOC) == 72
    assert uncompressed_length(VALUE) == (72, 1)
    out = inflate(VALUE)
    assert out == JSON_DOC
    assert json.loads(out) == {"click": "to edit", "with JSON": "there are no reserved field names"}
    assert inflate(memoryview(VALUE)) == JSON_DOC


@pytest.mark.parametrize(
    "name",
    [
        "client_unitTestData_defaultScopeDefaultColMutation.json",
        "client_unitTestData_origNoCollectionMut.json",
    ],
)
def test_real_mutation(name):
    path = CORPUS / name
    doc = json.loads(path.read_text())
    assert doc["Opcode"] == 0x57 and doc["DataType"] == 0x03  # JSON | Snappy
    body = base64.b64decode(doc["Body"])
    assert body == VALUE
    assert inflate(body) == JSON_DOC


def test_cap_checked_before_decompressing():
    with pytest.raises(CodecError, match="^snappy: uncompressed size 72 exceeds cap 71$"):
        inflate(VALUE, max_size=71)
    assert inflate(VALUE, max_size=72) == JSON_DOC
    # a header claiming 4 GiB followed by garbage: refused by the cap, not by the decompressor
    with pytest.raises(CodecError, match="^snappy: uncompressed size 4294967295 exceeds cap 20971520$"):
        inflate(b"\xff\xff\xff\xff\x0f" + b"\x00" * 10)
    over = 20 * 1024 * 1024 + 1
    with pytest.raises(CodecError, match=f"uncompressed size {over} exceeds cap"):
        inflate(bytes([0x81, 0x80, 0x80, 0x0A]) + b"\x00")


@pytest.mark.parametrize(
    "raw, message",
    [
        (b"", "snappy: truncated or overlong uncompressed-length varint"),
        (b"\x80", "snappy: truncated or overlong"),
        (b"\x80\x80\x80\x80\x80\x01", "snappy: truncated or overlong"),
        (b"\xff\xff\xff\xff\x1f", "snappy: uncompressed length exceeds u32"),
        (VALUE[:-1], "snappy: "),
        (VALUE[:20], "snappy: "),
        (b"\x05\xff\xff", "snappy: "),
        (b"\x03\x08ab", "snappy: "),  # literal shorter than declared length
    ],
)
def test_corrupt_input(raw, message):
    with pytest.raises(CodecError, match=f"^{message}"):
        inflate(raw)


def test_empty_payload():
    assert deflate(b"") == b"\x00"
    assert inflate(b"\x00") == b""


@given(st.binary(max_size=2048))
def test_round_trip(data):
    assert inflate(deflate(data)) == data


@given(st.binary(max_size=4096).map(lambda b: b * 3))
def test_round_trip_compressible(data):
    assert inflate(memoryview(deflate(data))) == data


@given(st.binary(max_size=64))
def test_random_bytes_raise_only_codec_error(raw):
    try:
        inflate(raw, max_size=1 << 16)
    except CodecError:
        pass


@given(st.integers(0, 300), st.binary(max_size=64))
def test_plausible_header_garbage_raises_only_codec_error(length, tail):
    header = bytes([length & 0x7F | 0x80, length >> 7]) if length > 0x7F else bytes([length])
    try:
        inflate(header + tail)
    except CodecError:
        pass
