"""The fast paths say exactly what the general code says.

jsonl and summary decode with ``DecodeContext(detail=False)``: no sections or Field rows,
the common value kinds written straight into ``msg.fields`` (``values.LEAN_DECODERS``),
extras through ``Layout.decode``'s unrolled function. Whatever the bytes, a frame decoded
that way has the same fields, values, problems, key and stream id as one decoded with
detail, the path tables and diagrams take. ``frame_record`` builds the same record as
the key-by-key construction it replaced, and ``remember_request`` reusing a pending
entry leaves what a fresh one would.
"""

from __future__ import annotations

import json
import struct

from dcpinspect.families.mcbp.messages.header import HEADER_SIZE, absent_fields
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dcpinspect.families.mcbp.messages import dcp
from dcpinspect.families.mcbp.messages.codecs.leb128 import encode_uleb128
from dcpinspect.families.mcbp.messages.codecs.snappy import deflate
from dcpinspect.families.mcbp.messages.codecs.xattr import encode_xattrs
from dcpinspect.families.mcbp.messages.frame import DecodeContext, Message, decode_frame
from dcpinspect.messages.layout import Layout
from dcpinspect.families.mcbp.messages.names import MAGICS
from dcpinspect.families.mcbp.messages.registry import CLIENT_SPECS, SERVER_SPECS
from dcpinspect.families.mcbp.messages.record import frame_record, protocol_of
from dcpinspect.outputs.jsonl import dumps
from dcpinspect.families.mcbp.rules.frame import check_frame
from dcpinspect.families.mcbp.sessions.streams import DcpState, RequestRef
from frames import TAP_VECTORS, VECTORS, frame

ALL_VECTORS = {**VECTORS, **{f"tap-{k}": v for k, v in TAP_VECTORS.items()}}
PROFILE = settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
COLLECTIONS = (None, True, False)


def facts(msg: Message) -> dict:
    """Everything a decoded frame says apart from its sections and rows."""
    return {
        "fields": list(msg.fields.items()),  # order too: jsonl writes them in this order
        "values": list(msg.values.items()),
        "problems": list(msg.problems),
        "key": msg.key,
        "collection_id": msg.collection_id,
        "key_source": msg.key_source,
        "stream_id": msg.stream_id,
        "frame_infos": msg.frame_infos,
        "value": msg.value,
        "truncated": msg.truncated,
        "findings": [f.to_json() for f in check_frame(msg)],
    }


def assert_lean_matches(data: bytes, **ctx) -> None:
    full = decode_frame(data, 7, DecodeContext(**ctx))
    lean = decode_frame(data, 7, DecodeContext(detail=False, **ctx))
    assert lean.sections == []
    assert facts(lean) == facts(full)
    assert dumps(frame_record(lean)) == dumps(frame_record(full))


@pytest.mark.parametrize("name", sorted(ALL_VECTORS))
def test_vectors_and_every_cut_of_them(name: str) -> None:
    data = bytes.fromhex(ALL_VECTORS[name])
    for collections in COLLECTIONS:
        for cut in range(len(data) + 1):
            assert_lean_matches(data[:cut], collections=collections)


@PROFILE
@given(data=st.binary(min_size=24, max_size=200), magic=st.sampled_from(sorted(MAGICS)),
       opcode=st.sampled_from(sorted(set(CLIENT_SPECS) | set(SERVER_SPECS))), collections=st.sampled_from(COLLECTIONS))
def test_random_bodies_under_real_headers(data: bytes, magic: int, opcode: int, collections) -> None:
    assert_lean_matches(bytes([magic, opcode]) + data[2:], collections=collections)


@PROFILE
@given(name=st.sampled_from(sorted(ALL_VECTORS)),
       flips=st.lists(st.tuples(st.integers(0, 500), st.integers(0, 255)), min_size=1, max_size=6),
       collections=st.sampled_from(COLLECTIONS))
def test_flipped_vectors(name: str, flips, collections) -> None:
    data = bytearray(bytes.fromhex(ALL_VECTORS[name]))
    for at, val in flips:
        data[at % len(data)] = val
    assert_lean_matches(bytes(data), collections=collections)


_VALUES = st.one_of(
    st.dictionaries(st.text("abc", min_size=1, max_size=3), st.integers(0, 99), max_size=3).map(
        lambda d: json.dumps(d, separators=(",", ":")).encode()),
    st.sampled_from([b"", b" ", b"{", b"[1,2]  ", b"NaN", b"\"\\ud800\"", b"\xff\xfe", b"a\tb\nc", b"\x00\x01",
                     b"x" * 5000, "é€".encode(), b'{"a":1} x', b"\x7f"]),
    st.binary(max_size=40),
)


@PROFILE
@given(value=_VALUES, xattrs=st.one_of(st.none(), st.dictionaries(st.sampled_from(["_sync", "meta"]),
       st.sampled_from(['{"a":1}', "1", '"s"']), max_size=2)), snappy=st.sampled_from([None, True, "broken"]),
       datatype=st.integers(0, 7), op=st.sampled_from([0x57, 0x58, 0x60, 0x01, 0x5E, 0x50]),
       cid=st.sampled_from([None, 0, 3, 8, 200, 70000]), sid=st.sampled_from([None, 0, 5]),
       documents=st.booleans(), max_text=st.sampled_from([4096, 3]))
@example(value=b'{"a":1}', xattrs=None, snappy=True, datatype=3, op=0x57, cid=8, sid=5, documents=True, max_text=4096)
def test_document_values(value, xattrs, snappy, datatype, op, cid, sid, documents, max_text) -> None:
    """Values as DCP and memcached carry them: JSON or not, xattrs, snappy (or broken snappy)."""
    body = (encode_xattrs(list(xattrs.items())) if xattrs is not None else b"") + value
    if snappy is True:
        body = deflate(body)
    elif snappy == "broken":
        body = b"\x40" + body
    layouts = [v for v in CLIENT_SPECS[op].request.extras.values() if v is not None]
    extras = layouts[0].pack() if layouts else b""
    key = (encode_uleb128(cid) if cid is not None else b"") + b"doc::1"
    framing = bytes([0x22]) + struct.pack(">H", sid) if sid is not None else b""
    raw = frame(0x08 if framing else 0x80, op, extras=extras, key=key, value=body, datatype=datatype,
                framing=framing, cas=1)
    for collections in COLLECTIONS:
        assert_lean_matches(raw, collections=collections, documents=documents, max_value_text=max_text)


#: opcodes with a value decoder of their own (features, failover log, system event, ...)
_SPECIAL_VALUES = sorted(op for op, spec in CLIENT_SPECS.items()
                         if {spec.request.value_kind, spec.response.value_kind} - {"auto", "text", "json", "document"})


@settings(PROFILE, max_examples=400)
@given(data=st.data())
def test_every_body_kind(data) -> None:
    """Requests and responses of every opcode, extras by their layouts, random values."""
    opcode = data.draw(st.sampled_from(_SPECIAL_VALUES) | st.sampled_from(sorted(CLIENT_SPECS)))
    spec = CLIENT_SPECS[opcode]
    response = data.draw(st.booleans())
    body = spec.response if response else spec.request
    layouts = [v for v in (body.extras or {}).values() if v is not None]
    extras = b""
    if layouts:
        layout = data.draw(st.sampled_from(layouts))
        extras = data.draw(st.binary(min_size=layout.size, max_size=layout.size))
        if opcode == 0x5F and data.draw(st.booleans()):  # a system event a version 0/1 layout fits
            event, version = data.draw(st.sampled_from(sorted(dcp.SYSTEM_EVENT_VALUES)))
            extras = extras[:8] + struct.pack(">IB", event, version)
    value = data.draw(st.one_of(st.binary(max_size=80), st.sampled_from(
        [bytes(16), bytes(32), bytes(36), bytes(52), bytes(20), bytes(24), b"\x00\x07\x00\x1f\x12"])))
    key = data.draw(st.sampled_from([b"", b"k", b"\x08k"]))
    status = data.draw(st.sampled_from([0, 0x23, 1, 0x86])) if response else None
    raw = frame(0x81 if response else 0x80, opcode, extras=extras, key=key, value=value, status=status)
    for collections in COLLECTIONS:
        assert_lean_matches(raw, collections=collections)


@PROFILE
@given(data=st.data())
def test_layout_decode_is_the_field_by_field_decode(data) -> None:
    layouts = [layout for spec in (*CLIENT_SPECS.values(), *SERVER_SPECS.values())
               for body in (spec.request, spec.response) if body.extras for layout in body.extras.values()
               if isinstance(layout, Layout)]
    layouts += list(dcp.SNAPSHOT_VALUE_BY_VERSION.values()) + list(dcp.SYSTEM_EVENT_VALUES.values())
    layout = data.draw(st.sampled_from(layouts))
    buf = data.draw(st.binary(min_size=layout.size, max_size=layout.size + 4))
    offset = data.draw(st.integers(0, len(buf) - layout.size))
    values, shown = layout.decode(buf, offset)
    raw = layout.unpack(buf, offset)
    assert list(values.items()) == list(zip(layout.names, raw))
    assert list(shown.items()) == [(spec.name, spec.json(v)) for spec, v in zip(layout.fields, raw)]


def _record_field_by_field(msg: Message, **extra) -> dict:
    """frame_record as it was first written: one key at a time."""
    rec = dict(extra)
    rec.update(protocol=protocol_of(msg), offset=msg.offset, length=msg.size, magic=msg.magic,
               magic_name=MAGICS.get(msg.magic, "Unknown"), opcode=msg.opcode, opcode_name=msg.name)
    if msg.is_request:
        rec["vbucket"] = msg.vbucket
    else:
        rec["status"] = msg.status
        rec["status_name"] = msg.status_name
    rec.update(opaque=msg.opaque, cas=msg.cas, datatype=msg.datatype)
    rec["key"] = msg.fields.get("key", "")
    if msg.collection_id is not None:
        rec["collection_id"] = msg.collection_id
    if msg.stream_id is not None:
        rec["stream_id"] = msg.stream_id
    if msg.frame_infos:
        rec["frame_infos"] = [{k: v for k, v in fi.items()
                               if k not in ("offset", "size") and (k != "problem" or v is not None)}
                              for fi in msg.frame_infos]
    rec["truncated"] = msg.truncated
    rec["fields"] = {k: v for k, v in msg.fields.items() if k != "key"}
    rec["findings"] = [f.to_json() for f in msg.findings]
    if len(msg.data) < HEADER_SIZE:  # cut inside its header: the header fields not there are null
        for name in absent_fields(msg.magic, len(msg.data)):
            if name in rec:
                rec[name] = None
                if name + "_name" in rec:
                    rec[name + "_name"] = None
    return rec


@pytest.mark.parametrize("name", sorted(ALL_VECTORS))
@pytest.mark.parametrize("extra", [{}, {"kind": "frame", "frame": 3, "ts": 1.5, "flow": "a-b", "direction": "c2s"},
                                   {"key": "x", "fields": 1, "status": 9, "zz": None}])
def test_frame_record_key_order(name: str, extra: dict) -> None:
    data = bytes.fromhex(ALL_VECTORS[name])
    for cut in (len(data), len(data) - 1, 10):
        msg = decode_frame(data[:cut], 0, DecodeContext(detail=False))
        check_frame(msg)
        rec = frame_record(msg, **extra)
        want = _record_field_by_field(msg, **extra)
        assert list(rec.items()) == list(want.items())
        assert list(rec["fields"].items()) == list(want["fields"].items())
        assert dumps(rec) == dumps(want)


def test_pending_request_reused_in_place_is_a_fresh_one() -> None:
    def msg(opcode: int, key: bytes, sid: int | None) -> Message:
        layout = next(v for v in CLIENT_SPECS[opcode].request.extras.values() if v is not None)
        framing = bytes([0x22]) + struct.pack(">H", sid) if sid is not None else b""
        return decode_frame(frame(0x08 if framing else 0x80, opcode, extras=layout.pack(), key=key,
                                  framing=framing, opaque=7, vbucket=3))

    reused, fresh = DcpState(), DcpState()
    for i, m in enumerate([msg(0x57, b"a", 4), msg(0x58, b"b", None), msg(0x53, b"", None), msg(0x56, b"", 2)]):
        reused.remember_request(m, i, float(i), "s2c")
        fresh.pending.clear()
        fresh.remember_request(m, i, float(i), "s2c")
        (got,), (want,) = reused.pending.values(), fresh.pending.values()
        assert (got.index, got.ts, got.direction) == (want.index, want.ts, want.direction)
        assert {k: getattr(got.msg, k) for k in RequestRef.__slots__} == \
               {k: getattr(want.msg, k) for k in RequestRef.__slots__}


@given(text=st.text(max_size=50) | st.text(st.characters(max_codepoint=0x7F), max_size=50))
@example(text="".join(map(chr, range(0x80))))
def test_printable_on_the_bytes_is_printable_on_the_text(text: str) -> None:
    from dcpinspect.families.mcbp.messages.values import _printable, _printable_utf8

    assert _printable_utf8(text, text.encode()) == _printable(text)
    for c in map(chr, range(0x80)):
        assert _printable_utf8(c, c.encode()) == _printable(c)
