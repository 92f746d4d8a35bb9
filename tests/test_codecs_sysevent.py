import base64
import json
import struct

import flatbuffers
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dcpinspect.families.mcbp.messages.codecs.errors import CodecError
from dcpinspect.families.mcbp.messages.codecs.frameinfo import parse_frame_infos
from dcpinspect.families.mcbp.messages.codecs.sysevent import (
    SYSTEM_EVENT_IDS,
    decode_sysevent_value,
    encode_sysevent_value,
)
from corpus import corpus

CORPUS = corpus("dcp-gomemcached")

COLLECTION_DEFAULTS = {
    "manifest_uid": 0, "scope_id": 0, "collection_id": 0, "ttl_valid": False, "max_ttl": 0,
    "name": None, "history": False, "default_collection_mvs": 0, "metered": False, "flush_uid": 0,
}

# spec §9.3: (event id, hex, decoded fields)
FLATBUFFER_VECTORS = [
    (0, "1800000000001200200018000000140013000c0008000700120000000000000118000000100e000000"
        "0000010800000010000000000000000200000063310000",
     {**COLLECTION_DEFAULTS, "manifest_uid": 0x10, "collection_id": 8, "ttl_valid": True,
      "max_ttl": 3600, "name": "c1", "history": True}),
    (1, "1000000000000a0010000800000004000a000000080000001100000000000000",
     {"manifest_uid": 0x11, "scope_id": 0, "collection_id": 8, "system_collection": False}),
    (3, "140000000000000000000a0014000c00080004000a000000100000000900000012000000000000000200000073310000",
     {"manifest_uid": 0x12, "scope_id": 9, "name": "s1"}),
    (4, "1000000000000000080010000800040008000000090000001300000000000000",
     {"manifest_uid": 0x13, "scope_id": 9, "system_scope": False}),
]

# spec §14 rows 22, 22b, 23, 24 (whole frames, magic 0x80): (hex, key, decoded value)
FRAME_VECTORS = [
    ("805f000c0d0002100000002d000012100000000000000000000000000000000400000000016d79636f6c6c65"
     "6374696f6e0000000000000002000000000000000800011940",
     b"mycollection", {"manifest_uid": 2, "scope_id": 0, "collection_id": 8, "max_ttl": 72000}),
    ("805f000c0d0002100000002d000012100000000000000000000000000000000400000000016d79636f6c6c65"
     "6374696f6e0000000000000002000000080000000000011940",
     b"mycollection", {"manifest_uid": 2, "scope_id": 8, "collection_id": 0, "max_ttl": 72000}),
    ("805f00000d0002100000001d00001210000000000000000000000000000000050000000100000000000000"
     "00030000000000000008",
     b"", {"manifest_uid": 3, "scope_id": 0, "collection_id": 8}),
    ("805f00070d00021000000020000012100000000000000000000000000000000600000003006d7973636f70"
     "65000000000000000400000009",
     b"myscope", {"manifest_uid": 4, "scope_id": 9}),
    ("805f00000d000210000000190000121000000000000000000000000000000007000000040000000000000000"
     "0500000009",
     b"", {"manifest_uid": 5, "scope_id": 9}),
]


def split_frame(frame: bytes):
    """(framing extras, extras, key, value) of a whole MCBP frame."""
    if frame[0] in (0x08, 0x18):
        flex, keylen = frame[2], frame[3]
    else:
        flex, keylen = 0, struct.unpack_from(">H", frame, 2)[0]
    extlen = frame[4]
    bodylen = struct.unpack_from(">I", frame, 8)[0]
    body = frame[24:24 + bodylen]
    assert len(body) == bodylen
    extras = body[flex:flex + extlen]
    key = body[flex + extlen:flex + extlen + keylen]
    return body[:flex], extras, key, body[flex + extlen + keylen:]


def event_extras(extras: bytes):
    assert len(extras) == 13
    return struct.unpack(">QIB", extras)  # by_seqno, event id, version


def test_event_ids():
    assert SYSTEM_EVENT_IDS == {
        0: "begin_collection", 1: "end_collection", 2: "flush_collection",
        3: "create_scope", 4: "drop_scope", 5: "modify_collection",
    }


@pytest.mark.parametrize("event_id, hexstr, fields", FLATBUFFER_VECTORS)
def test_flatbuffer_vectors(event_id, hexstr, fields):
    raw = bytes.fromhex(hexstr)
    assert decode_sysevent_value(event_id, 2, raw) == fields
    assert decode_sysevent_value(event_id, 2, memoryview(raw)) == fields
    assert encode_sysevent_value(event_id, 2, **fields) == raw


def test_modify_collection_uses_collection_table():
    event_id, hexstr, fields = FLATBUFFER_VECTORS[0]
    assert decode_sysevent_value(5, 2, bytes.fromhex(hexstr)) == fields


@pytest.mark.parametrize("hexstr, key, fields", FRAME_VECTORS)
def test_frame_vectors(hexstr, key, fields):
    _, extras, frame_key, value = split_frame(bytes.fromhex(hexstr))
    _, event_id, version = event_extras(extras)
    assert frame_key == key
    assert decode_sysevent_value(event_id, version, value) == fields
    assert encode_sysevent_value(event_id, version, **fields) == value


def test_real_frame_body_0x5f():
    # spec §14 row 39: BeginCollection v0 "col1", sid 1, seq 4, manifest 0, scope 8, cid 8
    header_path, body_path = CORPUS / "unitTestData_header.0x5f.bin", CORPUS / "unitTestData_body.0x5f.bin"
    framing, extras, key, value = split_frame(header_path.read_bytes() + body_path.read_bytes())
    assert framing == bytes.fromhex("220001")
    assert parse_frame_infos(framing)[0].data == b"\x00\x01"
    assert event_extras(extras) == (4, 0, 0)
    assert key == b"col1"
    assert decode_sysevent_value(0, 0, value) == {"manifest_uid": 0, "scope_id": 8, "collection_id": 8}


@pytest.mark.parametrize(
    "name, seqno, event_id, key, fields",
    [
        ("client_unitTestData_collectionCreation.json", 4, 0, b"C1",
         {"manifest_uid": 4, "scope_id": 8, "collection_id": 9}),
        ("client_unitTestData_collectionDel.json", 5, 1, b"",
         {"manifest_uid": 5, "scope_id": 8, "collection_id": 9}),
        ("client_unitTestData_scopeCreation.json", 1, 3, b"S1", {"manifest_uid": 1, "scope_id": 8}),
        ("client_unitTestData_scopeDel.json", 4, 4, b"", {"manifest_uid": 4, "scope_id": 8}),
    ],
)
def test_real_decoded_events(name, seqno, event_id, key, fields):
    path = CORPUS / name
    doc = json.loads(path.read_text())
    assert doc["Opcode"] == 0x5F and doc["DataType"] == 0
    assert event_extras(base64.b64decode(doc["Extras"])) == (seqno, event_id, 0)
    assert base64.b64decode(doc["Key"]) == key
    value = base64.b64decode(doc["Body"])
    assert decode_sysevent_value(event_id, 0, value) == fields
    assert encode_sysevent_value(event_id, 0, **fields) == value


@pytest.mark.parametrize(
    "event_id, version, size, message",
    [
        (0, 0, 20, "begin_collection v0 value must be 16 bytes \\(got 20\\)"),
        (0, 1, 16, "begin_collection v1 value must be 20 bytes \\(got 16\\)"),
        (1, 0, 12, "end_collection v0 value must be 16 bytes \\(got 12\\)"),
        (1, 1, 20, "end_collection v1 value must be 16 bytes \\(got 20\\)"),
        (3, 0, 16, "create_scope v0 value must be 12 bytes \\(got 16\\)"),
        (4, 0, 0, "drop_scope v0 value must be 12 bytes \\(got 0\\)"),
    ],
)
def test_wrong_size(event_id, version, size, message):
    with pytest.raises(CodecError, match=f"^{message}$"):
        decode_sysevent_value(event_id, version, bytes(size))


@pytest.mark.parametrize(
    "event_id, version, message",
    [
        (5, 0, "modify_collection requires version 2 \\(got 0\\)"),
        (5, 1, "modify_collection requires version 2 \\(got 1\\)"),
        (6, 0, "unknown system event id 6"),
        (0xFFFFFFFF, 2, "unknown system event id 4294967295"),
        (2, 0, "system event 2 \\(flush_collection\\) is reserved"),
        (0, 3, "unknown system event version 3"),
    ],
)
def test_bad_event_or_version(event_id, version, message):
    with pytest.raises(CodecError, match=f"^{message}$"):
        decode_sysevent_value(event_id, version, bytes(16))
    with pytest.raises(CodecError, match=f"^{message}$"):
        encode_sysevent_value(event_id, version)


def test_absent_slots_take_defaults():
    builder = flatbuffers.Builder(0)
    builder.StartObject(0)
    builder.Finish(builder.EndObject())
    empty = bytes(builder.Output())
    assert decode_sysevent_value(0, 2, empty) == COLLECTION_DEFAULTS
    assert decode_sysevent_value(1, 2, empty) == {
        "manifest_uid": 0, "scope_id": 0, "collection_id": 0, "system_collection": False}
    assert decode_sysevent_value(3, 2, empty) == {"manifest_uid": 0, "scope_id": 0, "name": None}
    assert decode_sysevent_value(4, 2, empty) == {"manifest_uid": 0, "scope_id": 0, "system_scope": False}
    assert encode_sysevent_value(4, 2) == empty


def test_newer_fields_and_unknown_trailing_slots():
    fields = {**COLLECTION_DEFAULTS, "collection_id": 8, "name": "c", "metered": True,
              "default_collection_mvs": 77, "flush_uid": 0x1234}
    assert decode_sysevent_value(0, 2, encode_sysevent_value(0, 2, **fields)) == fields
    # a table from a newer schema with an extra slot 4 is still readable as DroppedScope
    builder = flatbuffers.Builder(0)
    builder.StartObject(5)
    builder.PrependUint64Slot(0, 7, 0)
    builder.PrependUint32Slot(4, 99, 0)
    builder.Finish(builder.EndObject())
    assert decode_sysevent_value(4, 2, bytes(builder.Output())) == {
        "manifest_uid": 7, "scope_id": 0, "system_scope": False}


def patched(hexstr: str, offset: int, fmt: str, value: int) -> bytes:
    raw = bytearray(bytes.fromhex(hexstr))
    struct.pack_into(fmt, raw, offset, value)
    return bytes(raw)


COLLECTION_HEX = FLATBUFFER_VECTORS[0][1]
SCOPE_HEX = FLATBUFFER_VECTORS[2][1]


@pytest.mark.parametrize(
    "event_id, raw, message",
    [
        (0, b"", "root offset"),
        (0, b"\x18\x00", "root offset"),
        (0, patched(COLLECTION_HEX, 0, "<I", 0x1000), "root table"),
        (0, patched(COLLECTION_HEX, 0, "<I", 62), "root table"),
        (0, patched(COLLECTION_HEX, 24, "<i", 0x7FFF0000), "vtable header"),
        (0, patched(COLLECTION_HEX, 24, "<i", -100), "vtable header"),
        (0, patched(COLLECTION_HEX, 6, "<H", 0x400), "vtable at"),
        (0, patched(COLLECTION_HEX, 6, "<H", 3), "vtable length 3 is invalid"),
        (0, patched(COLLECTION_HEX, 8, "<H", 0x400), "table at"),
        (0, patched(COLLECTION_HEX, 8, "<H", 2), "table length 2 is invalid"),
        (0, patched(COLLECTION_HEX, 10, "<H", 0x1C), "field manifest_uid at table offset 28"),
        (0, patched(COLLECTION_HEX, 10, "<H", 2), "field manifest_uid at table offset 2"),
        (0, patched(COLLECTION_HEX, 32, "<I", 0x100), "string length"),
        (0, patched(COLLECTION_HEX, 56, "<I", 0x100), "flatbuffer string at"),
        (0, patched(COLLECTION_HEX, 56, "<I", 1), "not NUL-terminated"),
        (0, patched(COLLECTION_HEX, 60, "<H", 0xFFFE), "not valid UTF-8"),
        (3, bytes.fromhex(SCOPE_HEX)[:-4], "flatbuffer string"),
    ],
)
def test_lying_flatbuffers(event_id, raw, message):
    with pytest.raises(CodecError, match=message):
        decode_sysevent_value(event_id, 2, raw)


@pytest.mark.parametrize("event_id, hexstr, fields", FLATBUFFER_VECTORS)
def test_every_truncation_or_byte_flip_raises_only_codec_error(event_id, hexstr, fields):
    raw = bytes.fromhex(hexstr)
    for cut in range(len(raw)):
        try:
            decode_sysevent_value(event_id, 2, raw[:cut])
        except CodecError:
            pass
    for index in range(len(raw)):
        for flip in (0x01, 0x80, 0xFF):
            mutated = bytearray(raw)
            mutated[index] ^= flip
            try:
                decode_sysevent_value(event_id, 2, bytes(mutated))
            except CodecError:
                pass


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"bogus": 1}, "unknown system event field\\(s\\): bogus"),
        ({"manifest_uid": -1}, "does not fit 64 bits"),
        ({"scope_id": 1 << 32}, "does not fit 32 bits"),
        ({"name": b"bytes"}, "is not a string"),
    ],
)
def test_encoder_rejects_v2(kwargs, message):
    with pytest.raises(CodecError, match=message):
        encode_sysevent_value(0, 2, **kwargs)


def test_encoder_rejects_v0():
    with pytest.raises(CodecError, match="unknown system event field"):
        encode_sysevent_value(3, 0, collection_id=1)
    with pytest.raises(CodecError, match="cannot encode"):
        encode_sysevent_value(0, 0, manifest_uid=1 << 64)


u64, u32 = st.integers(0, (1 << 64) - 1), st.integers(0, (1 << 32) - 1)
names = st.none() | st.text(max_size=30)


@st.composite
def events(draw):
    event_id = draw(st.sampled_from([0, 1, 3, 4, 5]))
    version = 2 if event_id == 5 else draw(st.sampled_from([0, 1, 2]))
    fields = {"manifest_uid": draw(u64), "scope_id": draw(u32)}
    if version == 2:
        if event_id in (0, 5):
            fields.update(collection_id=draw(u32), ttl_valid=draw(st.booleans()), max_ttl=draw(u32),
                          name=draw(names), history=draw(st.booleans()),
                          default_collection_mvs=draw(u64), metered=draw(st.booleans()),
                          flush_uid=draw(u64))
        elif event_id == 1:
            fields.update(collection_id=draw(u32), system_collection=draw(st.booleans()))
        elif event_id == 3:
            fields.update(name=draw(names))
        else:
            fields.update(system_scope=draw(st.booleans()))
    else:
        if event_id in (0, 1):
            fields["collection_id"] = draw(u32)
        if event_id == 0 and version == 1:
            fields["max_ttl"] = draw(u32)
    return event_id, version, fields


@given(events())
def test_round_trip(event):
    event_id, version, fields = event
    raw = encode_sysevent_value(event_id, version, **fields)
    assert decode_sysevent_value(event_id, version, raw) == fields


@given(st.integers(0, 7), st.integers(0, 3), st.binary(max_size=96))
def test_random_bytes_raise_only_codec_error(event_id, version, raw):
    try:
        decode_sysevent_value(event_id, version, raw)
    except CodecError:
        pass


@given(st.sampled_from([0, 1, 3, 4]), st.integers(0, 40), st.binary(min_size=4, max_size=96))
def test_random_flatbuffer_with_plausible_root_raises_only_codec_error(event_id, root, tail):
    try:
        decode_sysevent_value(event_id, 2, struct.pack("<I", root) + tail)
    except CodecError:
        pass
