"""Every test vector of spec/dcp.md §14 (plus §4 HELO and §13 TAP), field by field.

Expected values are read off the spec text (its table, §8 layouts and §15 errata),
not from running the decoder.  Where the spec notes that a vector's bytes differ
from what a document says (row 6's snap start, row 22b's scope/collection order,
row 41's status bytes ``22 00``), the tests assert what the BYTES say.
"""

from __future__ import annotations

import json
import struct

import pytest

from dcpinspect.families.mcbp.messages import dcp
from dcpinspect.families.mcbp.messages.codecs.frameinfo import encode_frame_info, parse_frame_infos
from dcpinspect.families.mcbp.messages.codecs.leb128 import encode_uleb128
from dcpinspect.families.mcbp.messages.codecs.snappy import deflate
from dcpinspect.families.mcbp.messages.codecs.xattr import encode_xattrs
from dcpinspect.families.mcbp.messages.record import frame_record
from frames import TAP_VECTORS, VECTORS, decode, errors, frame, judge, request, response, rules, vector

U64_MAX = 0xFFFFFFFFFFFFFFFF

# The failover log shared by rows 8 and 9 (newest first): (vb uuid, seqno) pairs.
FAILOVER_LOG = [
    {"vbucket_uuid": 0xFEEDDECA, "seqno": 0x5432},
    {"vbucket_uuid": 0xDECAFE, "seqno": 0x1343214},
    {"vbucket_uuid": 0xFEEDFACE, "seqno": 4},
    {"vbucket_uuid": 0xDEADBEEF, "seqno": 0x6524},
]
ROW38_VALUE = '{"name": "xdcrProvCollections_C29854", "age": 57, "index": "9854", "body":"0000000000"}'
ROW41_CONTEXT = "snap start seqno <= start seqno <= snap end seqno is required"

# row -> (collections mode, header expectations, field expectations, raw value expectations)
# Header: name, magic, opcode, vbucket or status, opaque, cas, datatype, key length,
# extras length, body length (and framing length / stream id where flexible).
EXPECTED: dict[str, dict] = {
    "1": dict(
        head=dict(name="DCP_OPEN", magic=0x80, opcode=0x50, vbucket=0, opaque=1, cas=0, datatype=0,
                  key_length=24, extras_length=8, body_length=0x20),
        fields=dict(seqno=0, flags=[], key="bucketstream vb[100-105]"),
        values=dict(seqno=0, flags=0),
    ),
    "2": dict(
        head=dict(name="DCP_OPEN", magic=0x81, opcode=0x50, status=0, opaque=1, cas=0, body_length=0),
        fields={},
    ),
    "3": dict(
        head=dict(name="DCP_ADD_STREAM", magic=0x80, opcode=0x51, vbucket=5, opaque=1, extras_length=4, body_length=4),
        fields=dict(flags=["TakeOver"]),
        values=dict(flags=0x01),
    ),
    "4": dict(
        head=dict(name="DCP_ADD_STREAM", magic=0x81, opcode=0x51, status=0, opaque=1, extras_length=4, body_length=4),
        fields=dict(stream_opaque=0x1000),
    ),
    "5": dict(
        head=dict(name="DCP_CLOSE_STREAM", magic=0x80, opcode=0x52, vbucket=5, opaque=0xDEADBEEF, body_length=0),
        fields={},
    ),
    "6": dict(
        head=dict(name="DCP_STREAM_REQ", magic=0x80, opcode=0x53, vbucket=0, opaque=0x1000, extras_length=48,
                  body_length=48),
        # The doc's field list says snap start 0; the bytes say 0xffeedd (§14 note).
        fields=dict(flags=[], reserved=0, start_seqno=0xFFEEDD, end_seqno=U64_MAX, vbucket_uuid=0xFEEDDECA,
                    snap_start_seqno=0xFFEEDD, snap_end_seqno=0xFFEEFF),
    ),
    "7": dict(
        head=dict(name="DCP_STREAM_REQ", magic=0x81, opcode=0x53, status=0x23, opaque=0x1000, body_length=8),
        fields=dict(rollback_seqno=0),
    ),
    "8": dict(
        head=dict(name="DCP_STREAM_REQ", magic=0x81, opcode=0x53, status=0, opaque=0x1000, body_length=0x40),
        fields=dict(failover_log=FAILOVER_LOG),
    ),
    "9req": dict(
        head=dict(name="DCP_GET_FAILOVER_LOG", magic=0x80, opcode=0x54, vbucket=0, opaque=0xDEADBEEF, body_length=0),
        fields={},
    ),
    "9resp": dict(
        head=dict(name="DCP_GET_FAILOVER_LOG", magic=0x81, opcode=0x54, status=0, opaque=0xDEADBEEF, body_length=0x40),
        fields=dict(failover_log=FAILOVER_LOG),
    ),
    "10": dict(
        head=dict(name="DCP_STREAM_END", magic=0x80, opcode=0x55, vbucket=0, opaque=0xDEADBEEF, extras_length=4),
        fields=dict(reason="Ok"),
        values=dict(reason=0),
    ),
    "11": dict(
        head=dict(name="DCP_SNAPSHOT_MARKER", magic=0x80, opcode=0x56, opaque=0xDEADBEEF, extras_length=20,
                  body_length=20),
        fields=dict(start_seqno=0, end_seqno=8, snapshot_type=["Memory"]),
        values=dict(snapshot_type=0x01),
    ),
    "12": dict(
        head=dict(name="DCP_SNAPSHOT_MARKER", magic=0x80, opcode=0x56, opaque=0xDEADBEEF, extras_length=1,
                  body_length=0x25),
        fields=dict(version="v2.0", start_seqno=1, end_seqno=8, snapshot_type=["Disk"], max_visible_seqno=8,
                    high_completed_seqno=7),
        values=dict(version=0, snapshot_type=0x02, max_visible_seqno=8, high_completed_seqno=7),
    ),
    "13": dict(
        head=dict(name="DCP_SNAPSHOT_MARKER", magic=0x80, opcode=0x56, opaque=0xDEADBEEF, extras_length=1,
                  body_length=0x35),
        fields=dict(version="v2.2", start_seqno=1, end_seqno=8, snapshot_type=["Disk", "Checkpoint"],
                    max_visible_seqno=8, high_completed_seqno=7, purge_seqno=3, high_prepared_seqno=6),
        values=dict(version=2, snapshot_type=0x06, purge_seqno=3, high_prepared_seqno=6),
    ),
    "14": dict(
        collections=False,
        head=dict(name="DCP_MUTATION", magic=0x80, opcode=0x57, vbucket=0x210, opaque=0x1210, cas=0,
                  key_length=5, extras_length=31, body_length=0x29),
        fields=dict(by_seqno=4, rev_seqno=1, flags=0, expiration=0, lock_time=0, nmeta=0, nru=0, key="hello",
                    value="world"),
        collection_id=None,
    ),
    "15": dict(
        collections=False,
        head=dict(name="DCP_DELETION", magic=0x80, opcode=0x58, vbucket=0x210, opaque=0x1210, key_length=5,
                  extras_length=18, body_length=0x17),
        fields=dict(by_seqno=5, rev_seqno=1, nmeta=0, key="hello"),
        collection_id=None,
    ),
    "16": dict(
        collections=True,
        head=dict(name="DCP_DELETION", magic=0x80, opcode=0x58, vbucket=0x210, opaque=0x1210, key_length=6,
                  extras_length=21, body_length=0x1B),
        fields=dict(by_seqno=5, rev_seqno=1, delete_time=1600000000, unused=0, collection_id=0, key="hello"),
        collection_id=0,
    ),
    "17": dict(
        collections=False,
        head=dict(name="DCP_EXPIRATION", magic=0x80, opcode=0x59, vbucket=0x210, opaque=0x1210, key_length=5,
                  extras_length=20, body_length=0x19),
        fields=dict(by_seqno=5, rev_seqno=1, delete_time=0, key="hello"),
        collection_id=None,
    ),
    "18": dict(
        head=dict(name="DCP_SET_VBUCKET_STATE", magic=0x80, opcode=0x5B, opaque=0xDEADBEEF, extras_length=1,
                  body_length=1),
        fields=dict(state="dead"),
        values=dict(state=4),
    ),
    "19req": dict(head=dict(name="DCP_NOOP", magic=0x80, opcode=0x5C, opaque=5, body_length=0), fields={}),
    "19resp": dict(head=dict(name="DCP_NOOP", magic=0x81, opcode=0x5C, status=0, opaque=5, body_length=0), fields={}),
    "20": dict(
        head=dict(name="DCP_BUFFER_ACKNOWLEDGEMENT", magic=0x80, opcode=0x5D, opaque=5, extras_length=4),
        fields=dict(buffer_bytes=4096),
    ),
    "21req": dict(
        head=dict(name="DCP_CONTROL", magic=0x80, opcode=0x5E, opaque=1, key_length=11, extras_length=0,
                  body_length=15),
        fields=dict(key="enable_noop", value="true"),
    ),
    "21resp": dict(head=dict(name="DCP_CONTROL", magic=0x81, opcode=0x5E, status=0, opaque=1), fields={}),
    "22": dict(
        head=dict(name="DCP_SYSTEM_EVENT", magic=0x80, opcode=0x5F, vbucket=0x210, opaque=0x1210, key_length=12,
                  extras_length=13, body_length=0x2D),
        fields=dict(by_seqno=4, event="BeginCollection", version=1, key="mycollection", manifest_uid=2, scope_id=0,
                    collection_id=8, max_ttl=72000),
        values=dict(event=0, version=1),
    ),
    # The doc's own bytes: 8 sits in the scope slot (struct order is scope, then collection).
    "22b": dict(
        head=dict(name="DCP_SYSTEM_EVENT", magic=0x80, opcode=0x5F, vbucket=0x210, opaque=0x1210, key_length=12),
        fields=dict(by_seqno=4, event="BeginCollection", version=1, key="mycollection", manifest_uid=2, scope_id=8,
                    collection_id=0, max_ttl=72000),
    ),
    "23": dict(
        head=dict(name="DCP_SYSTEM_EVENT", magic=0x80, opcode=0x5F, vbucket=0x210, key_length=0, body_length=0x1D),
        fields=dict(by_seqno=5, event="EndCollection", version=0, manifest_uid=3, scope_id=0, collection_id=8),
        values=dict(event=1, version=0),
    ),
    "24create": dict(
        head=dict(name="DCP_SYSTEM_EVENT", magic=0x80, opcode=0x5F, vbucket=0x210, key_length=7, body_length=0x20),
        fields=dict(by_seqno=6, event="CreateScope", version=0, key="myscope", manifest_uid=4, scope_id=9),
        values=dict(event=3),
    ),
    "24drop": dict(
        head=dict(name="DCP_SYSTEM_EVENT", magic=0x80, opcode=0x5F, vbucket=0x210, key_length=0, body_length=0x19),
        fields=dict(by_seqno=7, event="DropScope", version=0, manifest_uid=5, scope_id=9),
        values=dict(event=4),
    ),
    "25": dict(
        collections=False,
        head=dict(name="DCP_PREPARE", magic=0x80, opcode=0x60, vbucket=0x210, opaque=0x1210, cas=1, key_length=5,
                  extras_length=31, body_length=0x29),
        fields=dict(by_seqno=4, rev_seqno=1, flags=0, expiration=0, lock_time=0, nru=0, deleted=0,
                    durability_level="Majority", key="hello", value="world"),
        values=dict(durability_level=1),
    ),
    "26": dict(
        head=dict(name="DCP_SEQNO_ACKNOWLEDGED", magic=0x80, opcode=0x61, vbucket=0x210, opaque=0x1210, cas=0,
                  extras_length=8),
        fields=dict(prepared_seqno=4),
    ),
    "27": dict(
        collections=False,
        head=dict(name="DCP_COMMIT", magic=0x80, opcode=0x62, vbucket=0x210, opaque=0x1210, cas=0, key_length=5,
                  extras_length=16, body_length=0x15),
        fields=dict(prepared_seqno=4, commit_seqno=5, key="hello"),
    ),
    "28": dict(
        collections=False,
        head=dict(name="DCP_ABORT", magic=0x80, opcode=0x63, vbucket=0x210, opaque=0x1210, cas=0, key_length=5,
                  extras_length=16, body_length=0x15),
        fields=dict(prepared_seqno=4, abort_seqno=5, key="hello"),
    ),
    "29": dict(
        head=dict(name="DCP_SEQNO_ADVANCED", magic=0x80, opcode=0x64, opaque=0xDEADBEEF, extras_length=8,
                  body_length=8),
        fields=dict(by_seqno=4),
    ),
    "30start": dict(
        head=dict(name="DCP_OSO_SNAPSHOT", magic=0x80, opcode=0x65, opaque=0xDEADBEEF, extras_length=4, body_length=4),
        fields=dict(flags=["Start"]),
        values=dict(flags=0x01),
    ),
    "30end": dict(
        head=dict(name="DCP_OSO_SNAPSHOT", magic=0x80, opcode=0x65, opaque=0xDEADBEEF, extras_length=4, body_length=4),
        fields=dict(flags=["End"]),
        values=dict(flags=0x02),
    ),
    "31": dict(
        head=dict(name="DCP_CACHE_TRANSFER", magic=0x80, opcode=0x66, vbucket=0x210, opaque=0x1210, cas=0,
                  key_length=0, extras_length=0, body_length=0x33),
        fields=dict(records=[dict(cas=4, by_seqno=1, rev_seqno=5, value_length=5, flags=0, expiration=0,
                                  key_length=6, datatype=0, cache_hint=0x0A, collection_id=0, key="hello",
                                  value="world")]),
    ),
    "32": dict(
        head=dict(name="DCP_CACHE_TRANSFER_END", magic=0x80, opcode=0x67, vbucket=0x210, opaque=0x1210, cas=0,
                  body_length=0),
        fields={},
    ),
    "33": dict(
        collections=True,
        head=dict(name="DCP_MUTATION", magic=0x08, opcode=0x57, vbucket=5, opaque=0x10, framing_length=3,
                  key_length=6, extras_length=31, body_length=0x2D),
        fields=dict(stream_id=7, by_seqno=4, rev_seqno=1, flags=0, expiration=0, lock_time=0, nmeta=0, nru=0,
                    collection_id=8, key="hello", value="world"),
        collection_id=8,
        stream_id=7,
    ),
    "34": dict(
        head=dict(name="DCP_STREAM_END", magic=0x08, opcode=0x55, vbucket=5, opaque=0x10, framing_length=3,
                  extras_length=4, body_length=7),
        fields=dict(stream_id=7, reason="FilterEmpty"),
        values=dict(reason=7),
        stream_id=7,
    ),
    "35": dict(
        head=dict(name="DCP_SNAPSHOT_MARKER", magic=0x81, opcode=0x56, status=0, opaque=0x10, body_length=0),
        fields={},
    ),
    "36": dict(
        head=dict(name="DCP_STREAM_REQ", magic=0x80, opcode=0x53, opaque=0x1000, extras_length=48, body_length=0x45),
        fields=dict(flags=[], start_seqno=0, end_seqno=U64_MAX, vbucket_uuid=0, snap_start_seqno=0,
                    snap_end_seqno=0, value='{"collections":["8"]}', collections=[8]),
    ),
    "37": dict(
        head=dict(name="DCP_SNAPSHOT_MARKER", magic=0x08, opcode=0x56, vbucket=874, opaque=0x0001036A, cas=0,
                  framing_length=3, key_length=0, extras_length=20, body_length=0x17),
        fields=dict(stream_id=1, start_seqno=0, end_seqno=24, snapshot_type=["Disk", "Checkpoint"]),
        values=dict(snapshot_type=0x06),
        stream_id=1,
    ),
    "38": dict(
        collections=True,
        head=dict(name="DCP_MUTATION", magic=0x08, opcode=0x57, vbucket=874, opaque=0x0001036A,
                  cas=0x15C7C2B955AB0000, datatype=0x01, framing_length=3, key_length=27, extras_length=31,
                  body_length=0x94),
        fields=dict(stream_id=1, by_seqno=24, rev_seqno=1, flags=0, expiration=0, lock_time=0, nmeta=0, nru=2,
                    collection_id=8, key="xdcrProvCollections_C29854", value=ROW38_VALUE),
        collection_id=8,
        stream_id=1,
    ),
    "39": dict(
        head=dict(name="DCP_SYSTEM_EVENT", magic=0x08, opcode=0x5F, vbucket=874, opaque=0x0001036A, cas=0,
                  framing_length=3, key_length=4, extras_length=13, body_length=0x24),
        fields=dict(stream_id=1, by_seqno=4, event="BeginCollection", version=0, key="col1", manifest_uid=0,
                    scope_id=8, collection_id=8),
        stream_id=1,
    ),
    # Status bytes are `22 00`: the status is 0x2200 (an unknown code), NOT 0x0022 Erange.
    "41": dict(
        head=dict(name="DCP_STREAM_REQ", magic=0x81, opcode=0x53, status=0x2200, opaque=0x1001, cas=0,
                  datatype=0x01, key_length=0, extras_length=0, body_length=0x55),
        fields=dict(error_context=ROW41_CONTEXT),
    ),
    "42req": dict(
        head=dict(name="HELO", magic=0x80, opcode=0x1F, vbucket=0, opaque=0, key_length=12, extras_length=0,
                  body_length=0x16),
        # value: u16 codes 0x0001..0x0005 (§4 feature table)
        fields=dict(key="mchello v1.0", features=["Datatype (retired)", "TLS", "TcpNoDelay", "MutationSeqno",
                                                   "TcpDelay"]),
    ),
    "42resp": dict(
        head=dict(name="HELO", magic=0x81, opcode=0x1F, status=0, body_length=4),
        fields=dict(features=["TcpNoDelay", "MutationSeqno"]),
    ),
}

TAP_EXPECTED: dict[str, dict] = {
    "connect": dict(
        head=dict(name="TAP_CONNECT", magic=0x80, opcode=0x40, key_length=5, extras_length=4, body_length=9),
        fields=dict(flags=[], key="node1"),
    ),
    "connect_backfill": dict(
        head=dict(name="TAP_CONNECT", opcode=0x40, body_length=0x11),
        fields=dict(flags=["Backfill"], key="node1", backfill_time=U64_MAX),
    ),
    "connect_list_vb": dict(
        head=dict(name="TAP_CONNECT", opcode=0x40, body_length=0x11),
        fields=dict(flags=["ListVbuckets"], key="node1", vbuckets=[0, 1, 2]),
    ),
    "connect_mixed": dict(
        head=dict(name="TAP_CONNECT", opcode=0x40, body_length=0x1D),
        # 0x35 = Backfill 0x01 | ListVbuckets 0x04 | SupportAck 0x10 | KeysOnly 0x20
        fields=dict(flags=["Backfill", "ListVbuckets", "SupportAck", "KeysOnly"], key="node1", backfill_time=5,
                    vbuckets=[0, 1, 2, 3, 4]),
        values=dict(flags=0x35),
    ),
    "mutation": dict(
        head=dict(name="TAP_MUTATION", opcode=0x41, vbucket=102, cas=3, key_length=5, extras_length=16,
                  body_length=0x1A),
        fields=dict(engine_specific_length=0, tap_flags=[], ttl=0xFF, item_flags=0, expiration=0, key="mykey",
                    value="value"),
    ),
    "delete": dict(
        head=dict(name="TAP_DELETE", opcode=0x42, vbucket=102, key_length=5, extras_length=8, body_length=0x0D),
        fields=dict(engine_specific_length=0, tap_flags=[], ttl=0xFF, key="mykey"),
    ),
    "flush": dict(
        head=dict(name="TAP_FLUSH", opcode=0x43, vbucket=0, key_length=0, extras_length=8, body_length=8),
        fields=dict(engine_specific_length=0, tap_flags=[], ttl=0xFF),
    ),
    "opaque": dict(
        head=dict(name="TAP_OPAQUE", opcode=0x44, vbucket=1023, extras_length=8, body_length=0x0C),
        fields=dict(engine_specific_length=4, tap_flags=[], ttl=0xFF, opaque_code=0xFFFFFFFF),
    ),
    "vbucket_set": dict(
        head=dict(name="TAP_VBUCKET_SET", opcode=0x45, vbucket=0x38, opaque=0x39, extras_length=8, body_length=0x0C),
        fields=dict(engine_specific_length=4, tap_flags=["Ack"], ttl=0xFF, vbucket_state="pending"),
        values=dict(tap_flags=0x01, vbucket_state=3),
    ),
}


def _check(msg, exp: dict) -> None:
    for attr, want in exp["head"].items():
        assert getattr(msg, attr) == want, f"{attr}: {getattr(msg, attr)!r} != {want!r}"
    for name, want in exp["fields"].items():
        assert name in msg.fields, f"field {name} missing; have {sorted(msg.fields)}"
        assert msg.fields[name] == want, f"field {name}: {msg.fields[name]!r} != {want!r}"
    for name, want in exp.get("values", {}).items():
        assert msg.values[name] == want, f"raw {name}: {msg.values[name]!r} != {want!r}"
    if "collection_id" in exp:
        assert msg.collection_id == exp["collection_id"]
    assert msg.stream_id == exp.get("stream_id")
    assert not msg.truncated
    assert msg.size == 24 + msg.body_length


def test_every_vector_has_expectations() -> None:
    assert set(EXPECTED) == set(VECTORS)
    assert set(TAP_EXPECTED) == set(TAP_VECTORS)


@pytest.mark.parametrize("row", list(EXPECTED))
def test_vector_fields(row: str) -> None:
    exp = EXPECTED[row]
    msg = decode(VECTORS[row], exp.get("collections"))
    _check(msg, exp)


@pytest.mark.parametrize("row", list(EXPECTED))
def test_vector_has_no_error_findings(row: str) -> None:
    msg = decode(VECTORS[row], EXPECTED[row].get("collections"))
    assert msg.problems == []
    found = judge(msg)
    assert errors(found) == []
    # Only responses carrying a non-Success status produce a (warning) peer-error.
    expected_rules = {"peer-error"} if row in ("7", "41") else set()
    assert rules(found) == expected_rules


def test_vector_hex_lengths_are_self_consistent() -> None:
    for row, hx in {**VECTORS, **TAP_VECTORS}.items():
        data = bytes.fromhex(hx)
        assert len(data) == 24 + struct.unpack_from(">I", data, 8)[0], row


@pytest.mark.parametrize("row", list(TAP_EXPECTED))
def test_tap_vector(row: str) -> None:
    exp = TAP_EXPECTED[row]
    msg = decode(TAP_VECTORS[row])
    _check(msg, exp)
    found = judge(msg)
    # TAP is retired (removed in 5.0): a warning, never an error.
    assert errors(found) == []
    assert rules(found) == {"retired-opcode"}
    assert frame_record(msg)["protocol"] == "tap"


def test_row7_rollback_is_a_rollback_class_warning() -> None:
    found = judge(decode(VECTORS["7"]))
    (f,) = found
    assert (f.rule, f.cls, f.severity) == ("peer-error", "ROLLBACK", "warning")
    assert "roll back to 0" in f.message


def test_row41_status_bytes_are_0x2200_not_erange() -> None:
    data = vector("41")
    assert data[6:8] == b"\x22\x00"
    msg = decode(data)
    assert msg.status == 0x2200 != 0x22
    assert msg.status_name != "Erange"
    assert "2200" in msg.status_name
    (f,) = judge(msg)
    assert f.rule == "peer-error"
    assert f.cls != "ERANGE"          # 0x2200 is not Erange, whatever the row's title says
    assert ROW41_CONTEXT in f.message
    assert json.loads(msg.value) == {"error": {"context": ROW41_CONTEXT}}


def test_row41_with_real_erange_status() -> None:
    """What the row meant: status 0x0022 → ERANGE class."""
    data = bytearray(vector("41"))
    data[6:8] = b"\x00\x22"
    msg = decode(bytes(data))
    assert msg.status == 0x22 and msg.status_name == "Erange"
    (f,) = judge(msg)
    assert (f.rule, f.cls) == ("peer-error", "ERANGE")


def test_row22_and_22b_differ_only_in_scope_and_collection() -> None:
    a, b = decode(VECTORS["22"]), decode(VECTORS["22b"])
    assert (a.fields["scope_id"], a.fields["collection_id"]) == (0, 8)
    assert (b.fields["scope_id"], b.fields["collection_id"]) == (8, 0)
    assert {k: v for k, v in a.fields.items() if k not in ("scope_id", "collection_id")} == {
        k: v for k, v in b.fields.items() if k not in ("scope_id", "collection_id")
    }


def test_row38_value_is_the_json_document() -> None:
    msg = decode(VECTORS["38"], True)
    assert json.loads(msg.value) == {"name": "xdcrProvCollections_C29854", "age": 57, "index": "9854",
                                     "body": "0000000000"}
    assert len(msg.value) == 87
    assert msg.key == b"xdcrProvCollections_C29854"
    assert msg.frame_infos[0]["id"] == 2 and msg.frame_infos[0]["value"] == 1


# ------------------------------------------------------------ collections modes

@pytest.mark.parametrize("row", ["14", "15", "17", "25", "27", "28"])
def test_plain_keys_with_collections_off_and_auto(row: str) -> None:
    for mode in (False, None):
        msg = decode(VECTORS[row], mode)
        assert msg.fields["key"] == "hello"
        assert msg.key == b"hello"
        assert msg.collection_id is None
        assert "collection_id" not in msg.fields


def test_collections_on_reads_a_plain_key_as_leb128() -> None:
    """'h' (0x68) is then a one-byte LEB128 collection id 104, logical key "ello"."""
    msg = decode(VECTORS["14"], True)
    assert msg.collection_id == 0x68
    assert msg.fields["key"] == "ello"


@pytest.mark.parametrize("row,cid", [("16", 0), ("33", 8), ("38", 8)])
def test_cid_prefixed_keys_with_collections_on_and_auto(row: str, cid: int) -> None:
    for mode in (True, None):
        msg = decode(VECTORS[row], mode)
        assert msg.collection_id == cid
        assert msg.fields["collection_id"] == cid
        assert msg.key == (b"hello" if row != "38" else b"xdcrProvCollections_C29854")
        assert errors(judge(msg)) == []


@pytest.mark.parametrize("row", ["16", "33"])
def test_cid_prefixed_keys_with_collections_off_keep_the_prefix(row: str) -> None:
    msg = decode(VECTORS[row], False)
    assert msg.collection_id is None
    assert msg.key == bytes([0 if row == "16" else 8]) + b"hello"


# ------------------------------------------------------------ jsonl records

JSONL_KEYS = {"protocol", "offset", "magic", "opcode", "opcode_name", "opaque", "cas", "datatype", "key", "fields",
              "findings"}


@pytest.mark.parametrize("row", list(EXPECTED))
def test_jsonl_record(row: str) -> None:
    msg = decode(VECTORS[row], EXPECTED[row].get("collections"), offset=100)
    judge(msg)
    rec = frame_record(msg)
    assert JSONL_KEYS <= set(rec)
    word = "vbucket" if msg.magic in (0x80, 0x08) else "status"
    assert word in rec and ({"vbucket", "status"} - {word}).isdisjoint(rec)
    assert rec[word] == (msg.vbucket if word == "vbucket" else msg.status)
    assert rec["protocol"] == ("dcp" if 0x50 <= msg.opcode <= 0x67 else "mcbp")
    assert rec["offset"] == 100
    assert (rec["magic"], rec["opcode"], rec["opaque"], rec["cas"], rec["datatype"]) == (
        msg.magic, msg.opcode, msg.opaque, msg.cas, msg.datatype)
    assert rec["opcode_name"] == EXPECTED[row]["head"]["name"]
    assert rec["key"] == EXPECTED[row]["fields"].get("key", "")
    for name, want in EXPECTED[row]["fields"].items():
        if name != "key":
            assert rec["fields"][name] == want
    assert [f["rule"] for f in rec["findings"]] == [f.rule for f in msg.findings]
    json.loads(json.dumps(rec))        # JSON-ready


def test_jsonl_protocol_of_helo_is_mcbp() -> None:
    assert frame_record(decode(VECTORS["42req"]))["protocol"] == "mcbp"


# ------------------------------------------------------------ row 43: FrameInfo escapes

def test_row43_frame_info_escape_bytes() -> None:
    data = bytes(range(37))
    assert encode_frame_info(32, data) == bytes.fromhex("ff1116") + data
    (fi,) = parse_frame_infos(bytes.fromhex("ff1116") + data)
    assert (fi.id, fi.length, fi.data, fi.header_size) == (32, 37, data, 3)


def test_row43_in_a_frame_is_an_unknown_frame_info() -> None:
    raw = frame(0x08, 0x5C, framing=bytes.fromhex("ff1116") + bytes(37), opaque=5)
    msg = decode(raw)
    assert msg.framing_length == 40
    assert msg.frame_infos[0]["id"] == 32
    assert "frame-info-invalid" in rules(judge(msg))


def test_row43_cut_short_is_an_encoding_error() -> None:
    raw = frame(0x08, 0x5C, framing=bytes.fromhex("ff1116") + bytes(30))
    assert "frame-info-encoding" in rules(judge(decode(raw)))


# ------------------------------------------------------------ §3 / §5 vectors inside frames

SNAPPY_VALUE = bytes.fromhex(
    "487c7b0a22636c69636b223a2022746f2065646974222c0a2277697468204a534f4e0518886865726520617265206e6f20726573"
    "6572766564206669656c64206e616d6573220a7d")
SNAPPY_TEXT = '{\n"click": "to edit",\n"with JSON": "there are no reserved field names"\n}'


def test_snappy_json_mutation_vector() -> None:
    raw = request(0x57, extras=dcp.MUTATION.pack(by_seqno=1, rev_seqno=1), key=b"\x00d1", value=SNAPPY_VALUE,
                  datatype=0x03)
    msg = decode(raw, True)
    assert len(SNAPPY_TEXT) == 72
    assert msg.fields["value"] == SNAPPY_TEXT
    assert msg.fields["value_inflated_length"] == 72
    assert errors(judge(msg)) == []


def test_snappy_compressed_json_built_with_deflate() -> None:
    doc = b'{"name":"xdcr","n":' + b"1234567890" * 10 + b"}"
    raw = request(0x57, extras=dcp.MUTATION.pack(by_seqno=3, rev_seqno=1), key=b"k", value=deflate(doc), datatype=0x03)
    msg = decode(raw, False)
    assert len(deflate(doc)) < len(doc)
    assert msg.fields["value"] == doc.decode() and msg.fields["value_inflated_length"] == len(doc)
    assert errors(judge(msg)) == []


XATTR_VECTOR_HEAD = bytes.fromhex("00000072000000215f73796e63007b22636173223a")


def test_xattr_vector_from_document_md() -> None:
    pairs = [("_sync", '{"cas":"deadbeefcafefeed"}'),
             ("meta", '{"author":"Trond Norbye","content-type":"application/octet-stream"}')]
    blob = encode_xattrs(pairs)
    assert len(blob) == 118 and blob.startswith(XATTR_VECTOR_HEAD)
    assert blob[4 + 4 + 0x21: 4 + 4 + 0x21 + 4] == bytes.fromhex("00000049")
    body = b'{"a":1}'
    raw = request(0x57, extras=dcp.MUTATION.pack(by_seqno=9, rev_seqno=1), key=b"doc", value=blob + body,
                  datatype=0x05)
    msg = decode(raw, False)
    assert msg.fields["xattrs"] == {"_sync": {"cas": "deadbeefcafefeed"},
                                    "meta": {"author": "Trond Norbye", "content-type": "application/octet-stream"}}
    assert msg.fields["value"] == '{"a":1}'
    assert errors(judge(msg)) == []


@pytest.mark.parametrize("cid,prefix", [(0x00, "00"), (0x7F, "7f"), (0x80, "8001"), (0x555, "d50a"),
                                        (0x22B, "ab04"), (0xCAFEF00D, "8de0fbd70c"), (0xFFFFFFFF, "ffffffff0f")])
def test_leb128_vectors_as_key_prefix(cid: int, prefix: str) -> None:
    assert encode_uleb128(cid) == bytes.fromhex(prefix)
    raw = request(0x57, extras=dcp.MUTATION.pack(by_seqno=1), key=bytes.fromhex(prefix) + b"k")
    msg = decode(raw, True)
    assert msg.collection_id == cid and msg.key == b"k"


@pytest.mark.parametrize("bad", ["ff00", "8000", "feff00", "cad78000"])
def test_non_canonical_leb128_prefix_is_rejected(bad: str) -> None:
    raw = request(0x57, extras=dcp.MUTATION.pack(by_seqno=1), key=bytes.fromhex(bad) + b"k")
    assert "collection-key-leb128" in rules(judge(decode(raw, True)))


# ------------------------------------------------------------ deliberately invalid variants

def _patch(row: str, at: int, new: bytes) -> bytes:
    data = bytearray(vector(row))
    data[at: at + len(new)] = new
    return bytes(data)


MUT = dcp.MUTATION.pack(by_seqno=4, rev_seqno=1)

INVALID: dict[str, tuple[bytes, bool | None, set[str]]] = {
    # §15: snapshot-marker.md V1 dump has bodylen 0
    "doc-snapshot-v1-bodylen-0": (_patch("11", 8, bytes(4)), None, {"lengths-exceed-body"}),
    # §15: seqno-advanced.md dump: opcode 0x65, extlen 4, bodylen 0
    "doc-seqno-advanced": (bytes.fromhex("806500000400000000000000deadbeef0000000000000000"), None,
                           {"lengths-exceed-body"}),
    # §15: buffer-ack.md dump has extlen 0 (4 body bytes then form a forbidden value)
    "doc-buffer-ack-extlen-0": (_patch("20", 4, b"\x00"), None, {"extras-length", "value-forbidden"}),
    # §8.7: version 0x01 (v2.1) was removed; v2.1's value would be 44 bytes
    "marker-v2.1": (_patch("12", 24, b"\x01"), None, {"snapshot-marker-version", "snapshot-marker-value-size"}),
    "marker-version-3": (_patch("12", 24, b"\x03"), None, {"snapshot-marker-version"}),
    "marker-v2.2-short-value": (request(0x56, extras=b"\x02", value=dcp.SNAPSHOT_V20.pack(start_seqno=1, end_seqno=2)),
                                None, {"snapshot-marker-value-size"}),
    "marker-v2-without-value": (request(0x56, extras=b"\x00"), None, {"snapshot-marker-value-size"}),
    "marker-v1-with-value": (request(0x56, extras=dcp.SNAPSHOT_V1.pack(end_seqno=1, snapshot_type=1), value=b"x"),
                             None, {"value-forbidden"}),
    "marker-unknown-flag": (_patch("11", 40, b"\x00\x00\x00\x41"), None, {"reserved-flags"}),
    "open-notifier-flag": (_patch("1", 28, b"\x00\x00\x00\x02"), None, {"reserved-flags"}),
    "stream-req-novalue-flag": (_patch("6", 24, b"\x00\x00\x00\x08"), None, {"reserved-flags"}),
    "oso-flags-3": (_patch("30start", 27, b"\x03"), None, {"reserved-flags"}),
    "mutation-seqno-0": (request(0x57, extras=dcp.MUTATION.pack(rev_seqno=1), key=b"k"), False, {"seqno-zero"}),
    "mutation-nmeta": (request(0x57, extras=dcp.MUTATION.pack(by_seqno=1, nmeta=2), key=b"k"), False,
                       {"nmeta-nonzero"}),
    "mutation-no-key": (request(0x57, extras=MUT), False, {"key-required"}),
    "mutation-extras-30": (request(0x57, extras=MUT[:30], key=b"k"), False, {"extras-length"}),
    "prepare-cas-0": (_patch("25", 16, bytes(8)), False, {"cas-zero"}),
    "prepare-level-0": (_patch("25", 24 + 30, b"\x00"), False, {"durability-level"}),
    "commit-seqno-0": (_patch("27", 32, bytes(8)), False, {"seqno-zero"}),
    "commit-prepared-0": (_patch("27", 24, bytes(8)), False, {"seqno-zero"}),
    "seqno-ack-cas": (_patch("26", 16, bytes(7) + b"\x01"), None, {"cas-nonzero"}),
    "cache-transfer-end-cas": (_patch("32", 16, bytes(7) + b"\x01"), None, {"cas-nonzero"}),
    "set-vb-state-5": (_patch("18", 24, b"\x05"), None, {"vbucket-state"}),
    "stream-end-reason-9": (_patch("10", 27, b"\x09"), None, {"stream-end-reason"}),
    "system-event-id-2": (_patch("23", 35, b"\x02"), None, {"system-event-id"}),
    "system-event-version-3": (_patch("23", 36, b"\x03"), None, {"system-event-id"}),
    "system-event-short-value": (request(0x5F, extras=dcp.SYSTEM_EVENT.pack(by_seqno=1, event=1),
                                         value=bytes(12)), None, {"system-event-value"}),
    "modify-collection-v0": (_patch("23", 35, b"\x05"), None, {"system-event-id"}),
    "deletion-json-datatype": (_patch("16", 5, b"\x01"), True, {"deletion-datatype"}),
    "datatype-8": (_patch("14", 5, b"\x08"), False, {"datatype-invalid"}),
    "close-stream-with-key": (request(0x52, key=b"k", vbucket=5), None, {"key-forbidden"}),
    "control-without-value": (request(0x5E, key=b"enable_noop"), None, {"value-required"}),
    "reserved-cid-1": (request(0x57, extras=MUT, key=b"\x01hello"), True, {"collection-id-reserved"}),
    "cid-without-key": (request(0x57, extras=MUT, key=b"\x08"), True, {"collection-key-empty"}),
    "key-251-no-collections": (request(0x57, extras=MUT, key=b"k" * 251), False, {"key-too-long"}),
    "stream-id-0": (_patch("34", 25, b"\x00\x00"), None, {"frame-info-invalid"}),
    "stream-id-3-bytes": (frame(0x08, 0x55, framing=b"\x23\x00\x07\x00", extras=b"\x00\x00\x00\x07"), None,
                          {"frame-info-invalid"}),
    # A classic magic reads bytes 2-3 as one u16 key length (0x0300 = 768 > body 7).
    "flex-bytes-under-classic-magic": (_patch("34", 0, b"\x80"), None, {"lengths-exceed-body"}),
    "stream-req-bad-json": (request(0x53, extras=dcp.STREAM_REQ.pack(), value=b"{nope"), None,
                            {"stream-request-value"}),
    "stream-req-scope-and-collections": (request(0x53, extras=dcp.STREAM_REQ.pack(),
                                                 value=b'{"scope":"8","collections":["8"]}'), None,
                                         {"stream-request-value"}),
    "stream-req-sid-0": (request(0x53, extras=dcp.STREAM_REQ.pack(), value=b'{"sid":0}'), None,
                         {"stream-request-value"}),
    "cache-transfer-short": (request(0x66, value=bytes(41)), None, {"cache-transfer-value"}),
    "unknown-magic": (_patch("19req", 0, b"\x90"), None, {"unknown-magic"}),
    "unknown-opcode": (_patch("19req", 1, b"\x4f"), None, {"unknown-opcode"}),
    "dcp-flush-retired": (request(0x5A), None, {"retired-opcode"}),
    "snappy-garbage": (request(0x57, extras=MUT, key=b"k", value=b"\xff\xff\xff\xff\xff\x00", datatype=0x02), False,
                       {"snappy-invalid"}),
    "xattr-garbage": (request(0x57, extras=MUT, key=b"k", value=b"\x00\x00\x00\x09abc", datatype=0x04), False,
                      {"xattr-invalid"}),
    "json-garbage": (request(0x57, extras=MUT, key=b"k", value=b"{nope", datatype=0x01), False, {"json-invalid"}),
    "failover-log-odd-size": (response(0x54, value=bytes(20)), None, {"value-size"}),
    # a cut frame whose present value bytes fit v2.0 by chance: the header says 37
    "marker-v2.0-cut-to-fit": (request(0x56, extras=b"\x00", value=bytes(37))[:-1], None,
                               {"truncated", "snapshot-marker-value-size"}),
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_variant(name: str) -> None:
    data, collections, want = INVALID[name]
    msg = decode(data, collections)
    found = rules(judge(msg))
    assert want <= found, f"expected {want}, got {found}"


def test_cut_value_is_measured_by_its_header() -> None:
    msg = decode(INVALID["marker-v2.0-cut-to-fit"][0], None)
    assert "start_seqno" not in msg.values
    assert any("has 37" in p.message for p in msg.problems)


def test_truncated_vector_reports_truncated() -> None:
    data = vector("14")
    for cut in (1, 23, 24, 30, len(data) - 1):
        msg = decode(data[:cut], False)
        assert msg.truncated
        assert "truncated" in rules(judge(msg))


def test_row41_has_no_error_ref_field() -> None:
    msg = decode(VECTORS["41"])
    assert "error_ref" not in msg.fields
