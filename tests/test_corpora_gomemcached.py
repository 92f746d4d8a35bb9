"""Real DCP traffic from couchbase/gomemcached's unit-test data (tests/corpora/dcp-gomemcached).

* ``header.0xNN.bin`` + ``body.0xNN.bin`` = one captured frame (0x56, 0x57, 0x5f);
* ``flexSnapOpHdr.bin`` is a header alone: a truncated frame whose header decodes;
* ``getSeqnoRespBody.bin`` is a GET_ALL_VB_SEQNOS (0x48) response body: we wrap it
  in a response header and check the (vbucket u16, seqno u64) pairs;
* ``client_unitTestData_*.json`` are MCRequest dumps (Opcode, VBucket, Opaque, Cas,
  DataType, base64 Extras/Key/Body): we rebuild each frame and compare our decode
  with what the JSON holds and what gomemcached's own tests
  (``client/upr_feed_test.go``) assert: scope 8, collection 9, names "S1"/"C1",
  key "d1" in collection 0 / 9, value ``{"key":"a sentence"}``.
"""

from __future__ import annotations

import base64
import json
import struct

import pytest

from dcpinspect.engines.streaming import decode_bytes
from dcpinspect.families.mcbp.framer import RawFrame, split_frames
from dcpinspect.families.mcbp.messages.frame import Message
from corpus import corpus
from frames import VECTORS, decode, errors, frame, frame_errors, judge, rules

CORPUS = corpus("dcp-gomemcached")


def read(name: str) -> bytes:
    return (CORPUS / name).read_bytes()


def captured(op: int) -> bytes:
    return read(f"unitTestData_header.0x{op:02x}.bin") + read(f"unitTestData_body.0x{op:02x}.bin")


# ------------------------------------------------------------------ header + body frames

@pytest.mark.parametrize("op,row", [(0x56, "37"), (0x57, "38"), (0x5F, "39")])
def test_captured_frames_are_spec_rows_37_to_39(op: int, row: str) -> None:
    assert captured(op) == bytes.fromhex(VECTORS[row])


@pytest.mark.parametrize("op", [0x56, 0x57, 0x5F])
def test_header_length_fields_match_the_body_file(op: int) -> None:
    header, body = read(f"unitTestData_header.0x{op:02x}.bin"), read(f"unitTestData_body.0x{op:02x}.bin")
    assert len(header) == 24
    assert struct.unpack_from(">I", header, 8)[0] == len(body)
    msg = decode(header + body, True)
    assert not msg.truncated and msg.size == 24 + len(body)
    assert msg.framing_length == header[2] == 3
    assert body[:3] == b"\x22\x00\x01"          # DcpStreamId frame info, sid 1
    assert msg.stream_id == 1
    assert msg.vbucket == int.from_bytes(header[6:8], "big") == 874
    assert msg.opaque == int.from_bytes(header[12:16], "big") == 0x0001036A
    assert errors(judge(msg)) == []


def test_captured_snapshot_marker() -> None:
    msg = decode(captured(0x56))
    body = read("unitTestData_body.0x56.bin")
    assert msg.name == "DCP_SNAPSHOT_MARKER" and msg.magic == 0x08 and msg.extras_length == 20
    assert msg.fields["start_seqno"] == struct.unpack_from(">Q", body, 3)[0] == 0
    assert msg.fields["end_seqno"] == struct.unpack_from(">Q", body, 11)[0] == 24
    assert msg.values["snapshot_type"] == struct.unpack_from(">I", body, 19)[0] == 0x06
    assert msg.fields["snapshot_type"] == ["Disk", "Checkpoint"]


def test_captured_mutation() -> None:
    msg = decode(captured(0x57), True)
    header, body = read("unitTestData_header.0x57.bin"), read("unitTestData_body.0x57.bin")
    ext = body[3:34]
    assert msg.name == "DCP_MUTATION" and msg.datatype == header[5] == 0x01
    assert msg.cas == 0x15C7C2B955AB0000
    assert msg.fields["by_seqno"] == struct.unpack_from(">Q", ext, 0)[0] == 24
    assert msg.fields["rev_seqno"] == struct.unpack_from(">Q", ext, 8)[0] == 1
    assert msg.fields["nru"] == ext[30] == 2
    key = body[34:34 + header[3]]
    assert key[0] == 0x08
    assert msg.collection_id == 8 and msg.key == key[1:] == b"xdcrProvCollections_C29854"
    value = body[34 + header[3]:]
    assert msg.value == value and len(value) == 87
    assert json.loads(msg.fields["value"]) == json.loads(value)


def test_captured_system_event() -> None:
    msg = decode(captured(0x5F))
    body = read("unitTestData_body.0x5f.bin")
    assert msg.name == "DCP_SYSTEM_EVENT"
    assert msg.fields["by_seqno"] == struct.unpack_from(">Q", body, 3)[0] == 4
    assert msg.values["event"] == 0 and msg.fields["event"] == "BeginCollection"
    assert msg.fields["version"] == body[15] == 0
    assert msg.fields["key"] == "col1"
    assert msg.fields["manifest_uid"] == struct.unpack_from(">Q", body, 20)[0] == 0
    assert msg.fields["scope_id"] == struct.unpack_from(">I", body, 28)[0] == 8
    assert msg.fields["collection_id"] == struct.unpack_from(">I", body, 32)[0] == 8


def test_captured_frames_back_to_back_through_the_stream_engine() -> None:
    stream = captured(0x56) + captured(0x5F) + captured(0x57)
    items = list(decode_bytes(stream))
    assert [type(i) for i in items] == [Message] * 3
    assert [i.name for i in items] == ["DCP_SNAPSHOT_MARKER", "DCP_SYSTEM_EVENT", "DCP_MUTATION"]
    assert [i.offset for i in items] == [0, len(captured(0x56)), len(captured(0x56)) + len(captured(0x5F))]
    # the system event (a collections-only opcode) tells the engine keys are prefixed
    assert items[2].collection_id == 8
    assert all(frame_errors(i.findings) == [] for i in items)


# ------------------------------------------------------------------ header-only frame

def test_flex_snapshot_header_alone_is_a_truncated_frame() -> None:
    header = read("unitTestData_flexSnapOpHdr.bin")
    assert len(header) == 24
    msg = decode(header)
    assert msg.truncated
    assert (msg.magic, msg.opcode, msg.name) == (0x08, 0x56, "DCP_SNAPSHOT_MARKER")
    assert msg.framing_length == 3 and msg.key_length == 0 and msg.extras_length == 20
    assert msg.vbucket == 0x039D == 925
    assert msg.body_length == 0x17 == 23
    assert msg.opaque == 0x0001039D and msg.cas == 0
    assert "truncated" in rules(judge(msg))


def test_flex_snapshot_header_alone_through_splitter_and_engine() -> None:
    header = read("unitTestData_flexSnapOpHdr.bin")
    (raw,) = split_frames(header)
    assert isinstance(raw, RawFrame) and raw.truncated and raw.data == header and raw.offset == 0
    (msg,) = list(decode_bytes(header))
    assert isinstance(msg, Message) and msg.truncated and msg.vbucket == 925
    assert "truncated" in rules(msg.findings)


def test_flex_snapshot_header_followed_by_row37_body_decodes() -> None:
    """The header's lengths (flex 3, extras 20, body 23) fit the captured 0x56 body."""
    msg = decode(read("unitTestData_flexSnapOpHdr.bin") + read("unitTestData_body.0x56.bin"))
    assert not msg.truncated and msg.fields["end_seqno"] == 24 and msg.stream_id == 1


# ------------------------------------------------------------------ GET_ALL_VB_SEQNOS body

def test_get_all_vb_seqnos_response_body() -> None:
    body = read("client_unitTestData_getSeqnoRespBody.bin")
    assert len(body) == 10240 and len(body) % 10 == 0
    expected = [{"vbucket": vb, "seqno": seq} for vb, seq in struct.iter_unpack(">HQ", body)]
    raw = frame(0x81, 0x48, value=body, status=0, opaque=0x1234)
    msg = decode(raw)
    assert msg.name == "GET_ALL_VB_SEQNOS" and msg.status == 0 and not msg.truncated
    assert msg.fields["vbucket_seqnos"] == expected
    assert len(expected) == 1024
    assert [e["vbucket"] for e in expected] == list(range(1024))
    # spot checks read off the file's first bytes: 0000 00000000 0000000b | 0001 00000000 00000007
    assert expected[0] == {"vbucket": 0, "seqno": 11}
    assert expected[1] == {"vbucket": 1, "seqno": 7}
    assert expected[1023] == {"vbucket": 1023, "seqno": 16}
    assert errors(judge(msg)) == []


def test_get_all_vb_seqnos_body_cut_mid_entry_is_a_value_size_problem() -> None:
    body = read("client_unitTestData_getSeqnoRespBody.bin")[:25]
    msg = decode(frame(0x81, 0x48, value=body, status=0))
    assert len(msg.fields["vbucket_seqnos"]) == 2
    assert "value-size" in rules(judge(msg))


# ------------------------------------------------------------------ client JSON dumps

def load(name: str) -> dict:
    return json.loads((CORPUS / f"client_unitTestData_{name}.json").read_text())


def rebuild(doc: dict) -> tuple[bytes, bytes, bytes, bytes]:
    extras, key, body = (base64.b64decode(doc[k]) for k in ("Extras", "Key", "Body"))
    if "Keylen" in doc:
        assert doc["Keylen"] == len(key)
    raw = frame(0x80, doc["Opcode"], extras=extras, key=key, value=body, vbucket=doc["VBucket"],
                opaque=doc["Opaque"], cas=doc["Cas"], datatype=doc["DataType"])
    return raw, extras, key, body


def check_header(msg: Message, doc: dict) -> None:
    assert msg.magic == 0x80 and msg.opcode == doc["Opcode"]
    assert msg.vbucket == doc["VBucket"]
    assert msg.opaque == doc["Opaque"]
    assert msg.cas == doc["Cas"]
    assert msg.datatype == doc["DataType"]
    assert not msg.truncated


# name -> (event name, event id, key, manifest uid, scope, collection or None, by_seqno)
SYSTEM_EVENTS = {
    "collectionCreation": ("BeginCollection", 0, "C1", 4, 8, 9, 4),
    "collectionDel": ("EndCollection", 1, None, 5, 8, 9, 5),
    "scopeCreation": ("CreateScope", 3, "S1", 1, 8, None, 1),
    "scopeDel": ("DropScope", 4, None, 4, 8, None, 4),
}


@pytest.mark.parametrize("name", list(SYSTEM_EVENTS))
def test_system_event_dumps(name: str) -> None:
    doc = load(name)
    event, event_id, key, manifest, scope, collection, seqno = SYSTEM_EVENTS[name]
    raw, extras, _, body = rebuild(doc)
    msg = decode(raw)
    check_header(msg, doc)
    assert msg.name == "DCP_SYSTEM_EVENT"
    # extras: by_seqno u64, event u32, version u8 (as gomemcached reads Extras[:8])
    assert msg.fields["by_seqno"] == struct.unpack_from(">Q", extras)[0] == seqno
    assert msg.values["event"] == struct.unpack_from(">I", extras, 8)[0] == event_id
    assert msg.fields["event"] == event
    assert msg.fields["version"] == extras[12] == 0
    if key is None:
        assert msg.key_length == 0 and "key" not in msg.fields
    else:
        assert msg.fields["key"] == key
    assert msg.fields["manifest_uid"] == struct.unpack_from(">Q", body)[0] == manifest
    assert msg.fields["scope_id"] == scope
    if collection is None:
        assert "collection_id" not in msg.fields and len(body) == 12
    else:
        assert msg.fields["collection_id"] == collection and len(body) == 16
    assert msg.problems == [] and errors(judge(msg)) == []


@pytest.mark.parametrize("name", ["collectionCreation", "scopeCreation"])
def test_system_event_opaque_low_half_is_the_vbucket(name: str) -> None:
    """gomemcached composes opaque = (opaque << 16) | vb; its tests assert vbOpaque == 511."""
    msg = decode(rebuild(load(name))[0])
    assert msg.opaque & 0xFFFF == 511 == msg.vbucket


SNAPPY_TEXT = '{\n"click": "to edit",\n"with JSON": "there are no reserved field names"\n}'


@pytest.mark.parametrize("collections", [True, None])
def test_default_collection_snappy_json_mutation(collections) -> None:
    doc = load("defaultScopeDefaultColMutation")
    raw, extras, key, body = rebuild(doc)
    assert key == b"\x00d1" and doc["DataType"] == 0x03
    msg = decode(raw, collections)
    check_header(msg, doc)
    assert msg.name == "DCP_MUTATION"
    assert msg.collection_id == 0 and msg.fields["key"] == "d1"
    assert msg.fields["by_seqno"] == struct.unpack_from(">Q", extras)[0] == 1
    assert msg.fields["rev_seqno"] == 1
    assert msg.values["flags"] == struct.unpack_from(">I", extras, 16)[0] == 0x02000006
    assert msg.fields["nru"] == extras[30] == 2
    assert msg.fields["value"] == SNAPPY_TEXT                 # spec §3.1 vector
    assert msg.fields["value_inflated_length"] == 72
    assert json.loads(msg.fields["value"]) == {"click": "to edit", "with JSON": "there are no reserved field names"}
    assert errors(judge(msg)) == []


@pytest.mark.parametrize("collections", [False, None])
def test_legacy_mutation_without_collections(collections) -> None:
    doc = load("origNoCollectionMut")
    raw, _, key, body = rebuild(doc)
    msg = decode(raw, collections)
    check_header(msg, doc)
    assert key == b"d1"
    assert msg.fields["key"] == "d1" and msg.collection_id is None
    assert msg.fields["value"] == SNAPPY_TEXT
    assert errors(judge(msg)) == []


@pytest.mark.parametrize("collections", [True, None])
def test_non_default_collection_mutation(collections) -> None:
    doc = load("scope_and_collection_mutation")
    raw, extras, key, body = rebuild(doc)
    msg = decode(raw, collections)
    check_header(msg, doc)
    assert key == b"\x09d1"
    assert msg.collection_id == 9 and msg.fields["collection_id"] == 9
    assert msg.fields["key"] == "d1"
    assert msg.fields["value"] == '{"key":"a sentence"}'
    assert msg.fields["by_seqno"] == 5
    assert msg.values["flags"] == 0x02000000
    assert errors(judge(msg)) == []


def test_all_json_dumps_as_one_stream() -> None:
    names = ["scopeCreation", "collectionCreation", "defaultScopeDefaultColMutation",
             "scope_and_collection_mutation", "collectionDel", "scopeDel"]
    stream = b"".join(rebuild(load(n))[0] for n in names)
    items = list(decode_bytes(stream))
    assert [i.name for i in items] == ["DCP_SYSTEM_EVENT"] * 2 + ["DCP_MUTATION"] * 2 + ["DCP_SYSTEM_EVENT"] * 2
    assert [i.collection_id for i in items[2:4]] == [0, 9]
    assert all(not i.truncated and frame_errors(i.findings) == [] for i in items)
