"""Per-frame rules (dcpinspect/rules/registry.py FRAME_RULES): each rule FIRES on a
minimal frame that breaks it, and stays quiet on a NEAR MISS, a frame as similar as
possible that is valid.

``CASES`` maps every FRAME_RULES id to ``(fires, near_miss[, ctx])``: two builders
that return the subject to judge, plus the decode context when the rule depends on
it (collections).  A subject is either frame bytes, judged by
``check_frame(decode_frame(bytes, ctx=ctx))``, or a :class:`Diagram`, a protocol-doc
byte diagram (with field captions) judged through ``decode_hex_text`` the way a
pasted document is (``body-length-mismatch`` and ``caption-mismatch`` only exist
there).

``MORE_FIRES`` / ``MORE_NEAR_MISSES`` hold the other variants the spec names for a
rule (header cut and body cut, each reserved flag, each reserved collection id...).

Builders reproduce the spec's §14 / §13 vectors where one exists
(``test_builders_reproduce_spec_vectors``), so the near misses are the spec's own
valid frames.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
import pytest

from dcpinspect.engines.hexinput import decode_hex_text
from dcpinspect.findings import Finding
from dcpinspect.families.mcbp.messages import dcp, tap
from dcpinspect.families.mcbp.messages.build import build_frame
from dcpinspect.families.mcbp.messages.codecs.leb128 import encode_uleb128
from dcpinspect.families.mcbp.messages.codecs.snappy import deflate
from dcpinspect.families.mcbp.messages.codecs.sysevent import encode_sysevent_value
from dcpinspect.families.mcbp.messages.codecs.xattr import encode_xattrs
from dcpinspect.families.mcbp.messages.frame import DecodeContext, Message, decode_frame
from dcpinspect.families.mcbp.rules.frame import check_frame
from dcpinspect.families.mcbp.rules.book import FRAME_RULES
from frames import TAP_VECTORS, VECTORS

COLLECTIONS = DecodeContext(collections=True)
NO_COLLECTIONS = DecodeContext(collections=False)


# =============================================================================================
# Subjects and how they are judged
# =============================================================================================

@dataclass(frozen=True)
class Diagram:
    """A protocol-document byte diagram (spec §15 / tests/data/seeds format)."""

    text: str


def diagram(data: bytes, captions: tuple[tuple[str, int, int, str], ...] = ()) -> Diagram:
    """``data`` drawn as a kv_engine doc diagram, then a ``Field (offset) (value)`` table."""
    rows = [
        "The following example shows the breakdown of the message:",
        "",
        "      Byte/     0       |       1       |       2       |       3       |",
        "         /              |               |               |               |",
        "        |0 1 2 3 4 5 6 7|0 1 2 3 4 5 6 7|0 1 2 3 4 5 6 7|0 1 2 3 4 5 6 7|",
        "        +---------------+---------------+---------------+---------------+",
    ]
    for off in range(0, len(data), 4):
        chunk = data[off:off + 4]
        rows.append(f"{off:>8}|" + "|".join(f" 0x{b:02x}          " for b in chunk) + "|")
        rows.append("        +" + "+".join("---------------" for _ in chunk) + "+")
    rows += ["", "    Field        (offset) (value)"]
    for name, start, end, text in captions:
        span = str(start) if start == end else f"{start}-{end}"
        rows.append(f"    {name:<20} ({span}): {text}")
    return Diagram("\n".join(rows) + "\n")


def judge(subject: bytes | Diagram, ctx: DecodeContext = DecodeContext()) -> list[Finding]:
    """Per-frame findings for one subject (stream-rule findings of the hex path left out)."""
    if isinstance(subject, Diagram):
        result = decode_hex_text(subject.text, collections=ctx.collections)
        assert result.dump.format == "diagram", result.dump.problems
        assert not result.dump.problems, result.dump.problems
        return [f for item in result.items if isinstance(item, Message)
                for f in item.findings if f.rule in FRAME_RULES]
    return check_frame(decode_frame(subject, ctx=ctx))


def show(findings: list[Finding]) -> str:
    return "\n".join(f"  {f.rule} {f.severity} {f.cls}: {f.message}" for f in findings) or "  (none)"


def assert_fires(rule: str, subject, ctx=DecodeContext(), cls: str | None = None, text: tuple[str, ...] = ()):
    found = judge(subject, ctx)
    hits = [f for f in found if f.rule == rule]
    assert hits, f"{rule} did not fire; findings:\n{show(found)}"
    want = FRAME_RULES[rule]
    cls = cls or want.cls
    assert any(f.cls == cls and f.severity == want.severity for f in hits), (
        f"{rule} fired without class {cls} / severity {want.severity}:\n{show(hits)}")
    for part in text:
        assert any(part in f.message for f in hits), f"no {rule} message mentions {part!r}:\n{show(hits)}"


def assert_quiet(rule: str, subject, ctx=DecodeContext()):
    found = judge(subject, ctx)
    assert rule not in {f.rule for f in found}, f"{rule} fired on the near miss:\n{show(found)}"
    errors = [f for f in found if f.severity == "error"]
    assert not errors, f"near miss for {rule} drew errors:\n{show(errors)}"


# =============================================================================================
# Frame builders (defaults reproduce spec §14 vectors: vb 0x210, opaque 0x1210)
# =============================================================================================

VB, OPAQUE = 0x210, 0x1210
NOOP_OPAQUE = 5


def noop(magic: int = 0x80, opcode: int = 0x5C, **kw) -> bytes:
    return build_frame(magic, opcode, opaque=NOOP_OPAQUE, **kw)


def mutation(by_seqno=4, key=b"hello", value=b"world", datatype=0, nmeta=0, extras=None, **kw) -> bytes:
    if extras is None:
        extras = dcp.MUTATION.pack(by_seqno=by_seqno, rev_seqno=1, nmeta=nmeta)
    return build_frame(0x80, 0x57, extras=extras, key=key, value=value, datatype=datatype,
                       vbucket=VB, opaque=OPAQUE, **kw)


def prepare(by_seqno=4, level=1, cas=1, key=b"hello", value=b"world", **kw) -> bytes:
    extras = dcp.PREPARE.pack(by_seqno=by_seqno, rev_seqno=1, durability_level=level)
    return build_frame(0x80, 0x60, extras=extras, key=key, value=value, cas=cas, vbucket=VB, opaque=OPAQUE, **kw)


def deletion(datatype=0, value=b"", key=b"hello", by_seqno=5, **kw) -> bytes:
    extras = dcp.DELETION_V2.pack(by_seqno=by_seqno, rev_seqno=1, delete_time=1600000000)
    return build_frame(0x80, 0x58, extras=extras, key=key, value=value, datatype=datatype,
                       vbucket=VB, opaque=OPAQUE, **kw)


def deletion_v1(nmeta=0, key=b"hello") -> bytes:
    extras = dcp.DELETION_V1.pack(by_seqno=5, rev_seqno=1, nmeta=nmeta)
    return build_frame(0x80, 0x58, extras=extras, key=key, vbucket=VB, opaque=OPAQUE)


def expiration_legacy(nmeta=0) -> bytes:
    extras = dcp.EXPIRATION_LEGACY.pack(by_seqno=5, rev_seqno=1, nmeta=nmeta)
    return build_frame(0x80, 0x59, extras=extras, key=b"hello", vbucket=VB, opaque=OPAQUE)


def commit(prepared=4, seqno=5, cas=0, key=b"hello", value=b"", opcode=0x62) -> bytes:
    layout = dcp.COMMIT if opcode == 0x62 else dcp.ABORT
    field = "commit_seqno" if opcode == 0x62 else "abort_seqno"
    extras = layout.pack(prepared_seqno=prepared, **{field: seqno})
    return build_frame(0x80, opcode, extras=extras, key=key, value=value, cas=cas, vbucket=VB, opaque=OPAQUE)


def abort(**kw) -> bytes:
    return commit(opcode=0x63, **kw)


def seqno_ack(cas=0) -> bytes:
    return build_frame(0x80, 0x61, extras=dcp.SEQNO_ACKNOWLEDGED.pack(prepared_seqno=4), cas=cas,
                       vbucket=VB, opaque=OPAQUE)


def cache_transfer(value: bytes | None = None, cas=0) -> bytes:
    return build_frame(0x80, 0x66, value=CT_VALUE if value is None else value, cas=cas, vbucket=VB, opaque=OPAQUE)


def cache_transfer_end(cas=0) -> bytes:
    return build_frame(0x80, 0x67, cas=cas, vbucket=VB, opaque=OPAQUE)


def ct_record(key=b"\x00hello", value=b"world", **fields) -> bytes:
    head = dcp.CACHE_TRANSFER_RECORD.pack(**{"cas": 4, "by_seqno": 1, "rev_seqno": 5, "value_length": len(value),
                                             "key_length": len(key), "cache_hint": 0x0A, **fields})
    return head + key + value


CT_VALUE = ct_record()


def stream_end(reason=0, key=b"", body_length=None, opaque=0xDEADBEEF) -> bytes:
    return build_frame(0x80, 0x55, extras=dcp.STREAM_END.pack(reason=reason), key=key, opaque=opaque,
                       body_length=body_length)


def stream_end_sid(framing: bytes) -> bytes:
    """Spec §14 #34: STREAM_END FilterEmpty on vb 5 with a stream-id frame."""
    return build_frame(0x08, 0x55, extras=dcp.STREAM_END.pack(reason=7), framing=framing, vbucket=5, opaque=0x10)


def control(key=b"enable_noop", value=b"true") -> bytes:
    return build_frame(0x80, 0x5E, key=key, value=value, opaque=1)


def dcp_open(flags=0x01, key=b"bucketstream vb[100-105]", value=b"", datatype=0) -> bytes:
    return build_frame(0x80, 0x50, extras=dcp.OPEN.pack(flags=flags), key=key, value=value, datatype=datatype,
                       opaque=1)


def stream_req(flags=0, value=b"", key=b"") -> bytes:
    extras = dcp.STREAM_REQ.pack(flags=flags, end_seqno=0xFFFFFFFFFFFFFFFF)
    return build_frame(0x80, 0x53, extras=extras, key=key, value=value, opaque=0x1000)


def add_stream(flags=0x01) -> bytes:
    return build_frame(0x80, 0x51, extras=dcp.ADD_STREAM.pack(flags=flags), vbucket=5, opaque=1)


def marker_v1(snapshot_type=0x01, value=b"", key=b"") -> bytes:
    extras = dcp.SNAPSHOT_V1.pack(start_seqno=0, end_seqno=8, snapshot_type=snapshot_type)
    return build_frame(0x80, 0x56, extras=extras, key=key, value=value, opaque=0xDEADBEEF)


SNAP_FIELDS = dict(start_seqno=1, end_seqno=8, max_visible_seqno=8, high_completed_seqno=7)


def v20_value(snapshot_type=0x02) -> bytes:
    return dcp.SNAPSHOT_V20.pack(snapshot_type=snapshot_type, **SNAP_FIELDS)


def v21_value() -> bytes:
    return dcp.SNAPSHOT_V21.pack(snapshot_type=0x02, timestamp=1, **SNAP_FIELDS)


def v22_value(snapshot_type=0x06) -> bytes:
    return dcp.SNAPSHOT_V22.pack(snapshot_type=snapshot_type, purge_seqno=3, high_prepared_seqno=6, **SNAP_FIELDS)


def marker_v2(version: int, value: bytes) -> bytes:
    return build_frame(0x80, 0x56, extras=dcp.SNAPSHOT_V2_EXTRAS.pack(version=version), value=value,
                       opaque=0xDEADBEEF)


def oso(flags) -> bytes:
    return build_frame(0x80, 0x65, extras=dcp.OSO_SNAPSHOT.pack(flags=flags), opaque=0xDEADBEEF)


def set_vbucket_state(state=4, value=b"") -> bytes:
    return build_frame(0x80, 0x5B, extras=dcp.SET_VBUCKET_STATE.pack(state=state), value=value, opaque=0xDEADBEEF)


def system_event(event: int, version: int, value: bytes, key: bytes = b"", by_seqno=4) -> bytes:
    extras = dcp.SYSTEM_EVENT.pack(by_seqno=by_seqno, event=event, version=version)
    return build_frame(0x80, 0x5F, extras=extras, key=key, value=value, vbucket=VB, opaque=OPAQUE)


def begin_v0(size=16) -> bytes:
    return struct.pack(">QII", 2, 0, 8)[:size] + b"\0" * max(0, size - 16)


def end_v0() -> bytes:
    return struct.pack(">QII", 3, 0, 8)


def modify_v2() -> bytes:
    return encode_sysevent_value(5, 2, manifest_uid=5, scope_id=0, collection_id=8, name="c1", history=True)


def lying_flatbuffer() -> bytes:
    """A v2 BeginCollection whose name string claims 200 bytes in a 48-byte buffer."""
    good = bytearray(encode_sysevent_value(0, 2, manifest_uid=5, collection_id=8, name="c1"))
    at = good.index(b"\x02\x00\x00\x00c1\x00")
    good[at:at + 4] = struct.pack("<I", 200)
    return bytes(good)


def response(opcode: int, status=0, value=b"", datatype=0, opaque=0x1000) -> bytes:
    return build_frame(0x81, opcode, status=status, value=value, datatype=datatype, opaque=opaque)


FAILOVER_ENTRY = struct.pack(">QQ", 0xFEEDDECA, 0x5432)


def tap_connect(flags: int, value: bytes) -> bytes:
    return build_frame(0x80, 0x40, extras=tap.CONNECT.pack(flags=flags), key=b"node1", value=value)


XATTRS = encode_xattrs([("_sync", '{"cas":"deadbeefcafefeed"}')])
ERANGE_BODY = b'{"error":{"context":"snap start seqno <= start seqno <= snap end seqno is required"}}'


def vb(cid: int, logical: bytes = b"k") -> bytes:
    """A collection-aware key: LEB128 collection id + logical key."""
    return encode_uleb128(cid) + logical


STREAM_END_CAPTIONS = (
    ("Magic", 0, 0, "0x80"), ("Opcode", 1, 1, "0x55"), ("Key length", 2, 3, "0x0000"),
    ("Extra length", 4, 4, "0x04"), ("Data type", 5, 5, "0x00"), ("Vbucket", 6, 7, "0x0000"),
    ("Total body", 8, 11, "0x00000004"), ("Opaque", 12, 15, "0xdeadbeef"),
    ("CAS", 16, 23, "0x0000000000000000"), ("Reason", 24, 27, "0x00000000 (Ok)"),
)


def with_caption(captions, name: str, text: str):
    return tuple((n, a, b, text if n == name else t) for n, a, b, t in captions)


def marker_captions(type_text: str, end_name: str = "End Seqno"):
    return (("Start Seqno", 24, 31, "0x0000000000000000"), (end_name, 32, 39, "0x0000000000000008"),
            ("Snapshot Type", 40, 43, type_text))


# =============================================================================================
# One fire + one near miss per rule
# =============================================================================================

CASES: dict[str, tuple] = {
    # §1.3: a frame that ends before its body does (header cut: see MORE_FIRES).
    "truncated": (lambda: mutation()[:-1], lambda: mutation()),
    # §1.1: extras 4 but total body 3.
    "lengths-exceed-body": (lambda: stream_end(body_length=3)[:27], lambda: stream_end()),
    # §1.2: 0x90 is no MCBP magic (decoded on its own).
    "unknown-magic": (lambda: noop(magic=0x90), lambda: noop(magic=0x80)),
    # §7: opcode 0x70 is undefined for magic 0x80.
    "unknown-opcode": (lambda: noop(opcode=0x70), lambda: noop(opcode=0x5C)),
    # §7: 0x5a DCP_FLUSH is obsolete.
    "retired-opcode": (lambda: noop(opcode=0x5A), lambda: noop(opcode=0x5C)),
    # §3.1: datatype bits above 0x07.
    "datatype-invalid": (lambda: mutation(datatype=0x08), lambda: mutation(datatype=0x00)),
    # §8.8: mutation extras are 31 bytes.
    "extras-length": (lambda: mutation(extras=dcp.MUTATION.pack(by_seqno=4, rev_seqno=1)[:30]),
                      lambda: mutation()),
    # §7: DCP_MUTATION requires a key.
    "key-required": (lambda: mutation(key=b""), lambda: mutation()),
    # §7: DCP_STREAM_END carries no key.
    "key-forbidden": (lambda: stream_end(key=b"x"), lambda: stream_end()),
    # §7 / §8.14: DCP_CONTROL requires a value.
    "value-required": (lambda: control(value=b""), lambda: control()),
    # §7 / §8.17: DCP_COMMIT carries no value.
    "value-forbidden": (lambda: commit(value=b"world"), lambda: commit()),
    # §1.1 / §12: 250 bytes without collections.
    "key-too-long": (lambda: mutation(key=b"k" * 251), lambda: mutation(key=b"k" * 250), NO_COLLECTIONS),
    # §8.7: version 0x01 (v2.1) was removed.
    "snapshot-marker-version": (lambda: marker_v2(0x01, v21_value()), lambda: marker_v2(0x00, v20_value())),
    # §8.7: a v2.2 value is 52 bytes (here the 36 of v2.0).
    "snapshot-marker-value-size": (lambda: marker_v2(0x02, v20_value()), lambda: marker_v2(0x02, v22_value())),
    # §8.1: DCP_OPEN 0x02 (Notifier) is invalid since 7.0.
    "reserved-flags": (lambda: dcp_open(flags=0x02), lambda: dcp_open(flags=0x01)),
    # §5: `80 00` is a non-canonical LEB128 for 0.
    "collection-key-leb128": (lambda: mutation(key=b"\x80\x00k"), lambda: mutation(key=b"\x80\x01k"), COLLECTIONS),
    # §5: the logical key must not be empty.
    "collection-key-empty": (lambda: mutation(key=b"\x08"), lambda: mutation(key=b"\x08k"), COLLECTIONS),
    # §5: collection ids 1..7 are reserved on the wire.
    "collection-id-reserved": (lambda: mutation(key=vb(1)), lambda: mutation(key=vb(8)), COLLECTIONS),
    # §3.2: xattr values must be JSON.
    "xattr-invalid": (lambda: mutation(datatype=0x04, value=encode_xattrs([("_sync", "{bad")]) + b"world"),
                      lambda: mutation(datatype=0x04, value=encode_xattrs([("_sync", '{"a":1}')]) + b"world")),
    # §3.1: datatype Snappy on bytes that do not inflate.
    "snappy-invalid": (lambda: mutation(datatype=0x02, value=b"garbage!"),
                       lambda: mutation(datatype=0x02, value=deflate(b"hello world"))),
    # §3.1: datatype JSON on a body that is not JSON.
    "json-invalid": (lambda: mutation(datatype=0x01, value=b"{bad"),
                     lambda: mutation(datatype=0x01, value=b'{"a":1}')),
    # dcpinspect's own cap on nesting (messages/codecs/jsontext.MAX_JSON_DEPTH): one level past it.
    "json-too-deep": (lambda: mutation(datatype=0x01, value=b"[" * 513 + b"]" * 513),
                      lambda: mutation(datatype=0x01, value=b"[" * 512 + b"]" * 512)),
    # §9.2: BeginCollection v0 is 16 bytes.
    "system-event-value": (lambda: system_event(0, 0, begin_v0(15), key=b"mycollection"),
                           lambda: system_event(0, 0, begin_v0(16), key=b"mycollection")),
    # §9.1: event 2 is reserved.
    "system-event-id": (lambda: system_event(2, 0, end_v0()), lambda: system_event(1, 0, end_v0())),
    # §2.1: a stream-id frame info of length 2 with one data byte runs past the framing extras.
    "frame-info-encoding": (lambda: stream_end_sid(b"\x22\x00"), lambda: stream_end_sid(b"\x22\x00\x07")),
    # §2.2: the stream-id frame info is 2 bytes, not 1.
    "frame-info-invalid": (lambda: stream_end_sid(b"\x21\x07"), lambda: stream_end_sid(b"\x22\x00\x07")),
    # §8.5: a failover log is 16·N bytes.
    "value-size": (lambda: response(0x54, value=FAILOVER_ENTRY + b"\0"), lambda: response(0x54, value=FAILOVER_ENTRY)),
    # §8.4: the stream request value is JSON.
    "stream-request-value": (lambda: stream_req(value=b'{"collections":["8"]'),
                             lambda: stream_req(value=b'{"collections":["8"]}'), COLLECTIONS),
    # §8.20: a cache transfer value is at least 42 bytes.
    "cache-transfer-value": (lambda: cache_transfer(CT_VALUE[:41]), lambda: cache_transfer()),
    # §13: flags 0x05 (Backfill|ListVbuckets), list of 3 vbuckets holding 2.
    "tap-connect-value": (lambda: tap_connect(0x05, b"\xff" * 8 + b"\x00\x03\x00\x00\x00\x01"),
                          lambda: bytes.fromhex(TAP_VECTORS["connect_mixed"])),
    # §11.1 R6: mutation by_seqno 0.
    "seqno-zero": (lambda: mutation(by_seqno=0), lambda: mutation(by_seqno=4)),
    # §8.8: nmeta must be 0.
    "nmeta-nonzero": (lambda: mutation(nmeta=1), lambda: mutation(nmeta=0)),
    # §8.8: a prepare has a non-zero CAS.
    "cas-zero": (lambda: prepare(cas=0), lambda: prepare(cas=1)),
    # §7 / §8.17: a commit carries CAS 0.
    "cas-nonzero": (lambda: commit(cas=5), lambda: commit(cas=0)),
    # §8.8: durability level 0 is invalid.
    "durability-level": (lambda: prepare(level=0), lambda: prepare(level=1)),
    # §8.11: state 0 is no vbucket state.
    "vbucket-state": (lambda: set_vbucket_state(0), lambda: set_vbucket_state(4)),
    # §8.6: reasons are 0..8.
    "stream-end-reason": (lambda: stream_end(reason=9), lambda: stream_end(reason=8)),
    # §8.9: JSON without Xattr (0x01) is invalid on a deletion; Xattr|JSON (0x05) is valid.
    "deletion-datatype": (lambda: deletion(datatype=0x01, value=b'{"a":1}'),
                          lambda: deletion(datatype=0x05, value=XATTRS + b'{"a":1}')),
    # §1.1: a doc example whose total body (0) disagrees with the 4 body bytes it holds.
    "body-length-mismatch": (lambda: diagram(stream_end(body_length=0)), lambda: diagram(stream_end())),
    # §6 / §11.5: ERANGE answer to a stream request (spec §14 #41).
    # (built, not spec §14 #41 itself: that vector's status bytes are `22 00`, i.e. 0x2200, not 0x0022)
    "peer-error": (lambda: response(0x53, status=0x22, value=ERANGE_BODY, datatype=0x01, opaque=0x1001),
                   lambda: response(0x53, value=FAILOVER_ENTRY)),
    # §15: the opaque caption says 0xdeadbeee, the bytes are 0xdeadbeef.
    "caption-mismatch": (lambda: diagram(stream_end(), with_caption(STREAM_END_CAPTIONS, "Opaque", "0xdeadbeee")),
                         lambda: diagram(stream_end(), STREAM_END_CAPTIONS)),
}

#: Class expected of the primary fire when it is not the registry's (peer-error: by status).
PRIMARY_CLASS = {"peer-error": "ERANGE"}


def _ctx(row: tuple) -> DecodeContext:
    return row[2] if len(row) > 2 else DecodeContext()


def test_every_frame_rule_has_a_case():
    assert set(CASES) == set(FRAME_RULES)
    for rule, row in CASES.items():
        assert len(row) in (2, 3) and all(callable(b) for b in row[:2]), rule


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_fires(rule):
    row = CASES[rule]
    assert_fires(rule, row[0](), _ctx(row), cls=PRIMARY_CLASS.get(rule))


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_near_miss(rule):
    row = CASES[rule]
    assert_quiet(rule, row[1](), _ctx(row))


# =============================================================================================
# More variants the spec names for a rule
# =============================================================================================

def fire(rule, label, builder, ctx=DecodeContext(), cls=None, text=(), marks=()):
    return pytest.param(rule, builder, ctx, cls, text, id=f"{rule}-{label}", marks=marks)


def near(rule, label, builder, ctx=DecodeContext(), marks=()):
    return pytest.param(rule, builder, ctx, id=f"{rule}-{label}", marks=marks)


BAD_JSON_REASON = (
    "dcpinspect/families/mcbp/messages/values.py:_document (and _json) — DCP_MUTATION datatype JSON (0x01) with value {v} — "
    "expected json-invalid (spec §3.1: the value must be valid JSON, as KV's validator checks), actual: no "
    "finding, because json.loads({why}) — suggested fix: decode the bytes as UTF-8 explicitly and pass "
    "parse_constant=<reject> (as codecs/xattr.py already does)"
)

MORE_FIRES = [
    fire("truncated", "header-cut", lambda: mutation()[:10], text=("10 of 24 header bytes",)),
    fire("truncated", "header-cut-empty-noop", lambda: noop()[:23]),
    fire("lengths-exceed-body", "key-past-body", lambda: mutation(body_length=31 + 4)[:24 + 35]),
    fire("unknown-magic", "0x19", lambda: noop(magic=0x19)),
    fire("unknown-opcode", "response-0x70", lambda: noop(magic=0x81, opcode=0x70)),
    fire("unknown-opcode", "server-0x05", lambda: noop(magic=0x82, opcode=0x05)),
    fire("retired-opcode", "tap-connect", lambda: bytes.fromhex(TAP_VECTORS["connect"])),
    fire("retired-opcode", "tap-mutation", lambda: bytes.fromhex(TAP_VECTORS["mutation"])),
    fire("datatype-invalid", "0x09", lambda: mutation(datatype=0x09, value=b'{"a":1}')),
    fire("extras-length", "stream-req-40", lambda: build_frame(0x80, 0x53, extras=bytes(40))),
    fire("extras-length", "marker-21", lambda: build_frame(0x80, 0x56, extras=bytes(21))),
    fire("extras-length", "deletion-20", lambda: build_frame(0x80, 0x58, extras=bytes(19) + b"\x05", key=b"hello")),
    fire("key-required", "commit", lambda: commit(key=b"")),
    fire("key-required", "control", lambda: control(key=b"")),
    fire("key-forbidden", "stream-req", lambda: stream_req(key=b"x")),
    fire("key-forbidden", "snapshot-marker", lambda: marker_v1(key=b"x")),
    fire("value-required", "cache-transfer", lambda: cache_transfer(b"")),
    fire("value-forbidden", "v1-marker-with-value", lambda: marker_v1(value=v20_value())),
    fire("value-forbidden", "set-vbucket-state", lambda: set_vbucket_state(4, value=b"x")),
    fire("value-forbidden", "noop", lambda: noop(value=b"x")),
    fire("key-too-long", "252-with-collections", lambda: mutation(key=vb(0, b"k" * 251)), COLLECTIONS),
    fire("key-too-long", "logical-247-non-default-collection",
         lambda: mutation(key=vb(8, b"k" * 247)), COLLECTIONS),
    fire("snapshot-marker-version", "0x07", lambda: marker_v2(0x07, v20_value()), text=("0x07",)),
    fire("snapshot-marker-value-size", "v2.0-with-52", lambda: marker_v2(0x00, v22_value())),
    fire("snapshot-marker-value-size", "v2-no-value", lambda: marker_v2(0x00, b"")),
    *(fire("reserved-flags", f"open-0x{bit:x}", lambda bit=bit: dcp_open(flags=0x01 | bit))
      for bit in (0x10, 0x80, 0x400, 0x80000000)),
    fire("reserved-flags", "stream-req-0x08", lambda: stream_req(flags=0x08)),
    fire("reserved-flags", "stream-req-0x200", lambda: stream_req(flags=0x200)),
    fire("reserved-flags", "add-stream-0x08", lambda: add_stream(flags=0x08)),
    fire("reserved-flags", "marker-v1-type-0x40", lambda: marker_v1(snapshot_type=0x40 | 0x01)),
    fire("reserved-flags", "marker-v2.0-type-0x40", lambda: marker_v2(0x00, v20_value(0x40 | 0x02))),
    fire("reserved-flags", "oso-0x03", lambda: oso(0x03)),
    fire("reserved-flags", "oso-0x00", lambda: oso(0x00)),
    fire("collection-key-leb128", "no-stop-byte", lambda: mutation(key=b"\xff" * 5 + b"k"), COLLECTIONS),
    fire("collection-key-leb128", "commit-81-00", lambda: commit(key=b"\x81\x00k"), COLLECTIONS),
    fire("collection-key-leb128", "cache-transfer-record", lambda: cache_transfer(ct_record(key=b"\x80\x00k"))),
    fire("collection-key-empty", "cid-128-alone", lambda: mutation(key=b"\x80\x01"), COLLECTIONS),
    *(fire("collection-id-reserved", f"cid-{cid}", lambda cid=cid: mutation(key=vb(cid)), COLLECTIONS)
      for cid in range(2, 8)),
    fire("xattr-invalid", "total-exceeds-blob", lambda: mutation(datatype=0x04, value=b"\x00\x00\x00\x10abc")),
    fire("xattr-invalid", "duplicate-key",
         lambda: mutation(datatype=0x04, value=encode_xattrs([("meta", "1"), ("meta", "2")]))),
    fire("xattr-invalid", "key-16-bytes", lambda: mutation(datatype=0x04, value=encode_xattrs([("k" * 16, "1")]))),
    fire("xattr-invalid", "snappy-xattr-bad",
         lambda: mutation(datatype=0x06, value=deflate(encode_xattrs([("_sync", "{bad")])))),
    fire("snappy-invalid", "varint-1GiB-capped",
         lambda: mutation(datatype=0x02, value=encode_uleb128(1 << 30) + bytes(16)), text=("cap",)),
    fire("snappy-invalid", "length-lies", lambda: mutation(datatype=0x02, value=b"\x20" + deflate(b"hi")[1:])),
    fire("json-invalid", "snappy-json", lambda: mutation(datatype=0x03, value=deflate(b"{bad"))),
    fire("json-invalid", "xattr-json-body", lambda: mutation(datatype=0x05, value=XATTRS + b"{bad")),
    fire("json-invalid", "dcp-open-value", lambda: dcp_open(value=b'{"consumer_name":', datatype=0x01)),
    fire("json-invalid", "NaN", lambda: mutation(datatype=0x01, value=b"NaN")),
    fire("json-invalid", "utf16", lambda: mutation(datatype=0x01, value='{"a":1}'.encode("utf-16"))),
    fire("system-event-value", "lying-flatbuffer-v2", lambda: system_event(0, 2, lying_flatbuffer(), key=b"c1"),
         text=("string",)),
    fire("system-event-value", "root-offset-outside",
         lambda: system_event(5, 2, b"\xf0" + modify_v2()[1:], key=b"c1")),
    fire("system-event-value", "begin-v1-of-16", lambda: system_event(0, 1, begin_v0(16), key=b"mycollection")),
    fire("system-event-id", "event-9", lambda: system_event(9, 2, modify_v2())),
    fire("system-event-id", "version-3", lambda: system_event(0, 3, begin_v0(16), key=b"c1")),
    fire("system-event-id", "modify-collection-v1", lambda: system_event(5, 1, begin_v0(20), key=b"c1")),
    fire("frame-info-encoding", "escaped-id-missing", lambda: stream_end_sid(b"\xf0")),
    fire("frame-info-encoding", "escaped-len-missing", lambda: stream_end_sid(b"\x0f")),
    fire("frame-info-invalid", "barrier-with-data", lambda: stream_end_sid(b"\x01\x00")),
    fire("frame-info-invalid", "sid-0", lambda: stream_end_sid(b"\x22\x00\x00")),
    fire("frame-info-invalid", "durability-level-0", lambda: stream_end_sid(b"\x11\x00")),
    fire("frame-info-invalid", "unknown-id-8", lambda: stream_end_sid(b"\x80")),
    fire("value-size", "stream-req-failover-17", lambda: response(0x53, value=FAILOVER_ENTRY + b"\0")),
    fire("value-size", "rollback-7", lambda: response(0x53, status=0x23, value=bytes(7))),
    fire("value-size", "helo-odd", lambda: response(0x1F, value=b"\x00\x03\x00")),
    *(fire("stream-request-value", label, lambda v=v: stream_req(value=v), COLLECTIONS) for label, v in (
        ("scope-and-collections", b'{"scope":"8","collections":["8"]}'),
        ("sid-0", b'{"sid":0}'),
        ("sid-70000", b'{"sid":70000}'),
        ("sid-true", b'{"sid":true}'),
        ("purge-seqno-int", b'{"purge_seqno":123}'),
        ("purge-seqno-hex", b'{"purge_seqno":"7b"}'),
        ("collections-not-array", b'{"collections":"8"}'),
        ("collection-id-int", b'{"collections":[8]}'),
        ("not-an-object", b'["8"]'),
    )),
    fire("stream-request-value", "collection-id-negative", lambda: stream_req(value=b'{"collections":["-8"]}'),
         COLLECTIONS),
    fire("stream-request-value", "purge-seqno-superscript-digit",
         lambda: stream_req(value='{"purge_seqno":"\u00b2"}'.encode()), COLLECTIONS),
    fire("cache-transfer-value", "record-cut-short", lambda: cache_transfer(CT_VALUE + CT_VALUE[:20])),
    fire("cache-transfer-value", "value-length-overrun", lambda: cache_transfer(CT_VALUE[:-1])),
    fire("cache-transfer-value", "key-length-1", lambda: cache_transfer(ct_record(key=b"\x00") + bytes(2))),
    fire("tap-connect-value", "checkpoint-list-cut", lambda: tap_connect(0x40, b"\x00\x02" + bytes(10))),
    fire("tap-connect-value", "backfill-cut", lambda: tap_connect(0x01, b"\xff" * 7)),
    fire("tap-connect-value", "bytes-left-over", lambda: tap_connect(0x00, b"\x00")),
    fire("seqno-zero", "commit-seqno-0", lambda: commit(seqno=0)),
    fire("seqno-zero", "commit-prepared-0", lambda: commit(prepared=0)),
    fire("seqno-zero", "abort-seqno-0", lambda: abort(seqno=0)),
    fire("seqno-zero", "prepare-by-seqno-0", lambda: prepare(by_seqno=0)),
    fire("nmeta-nonzero", "deletion-v1", lambda: deletion_v1(nmeta=2)),
    fire("nmeta-nonzero", "expiration-legacy", lambda: expiration_legacy(nmeta=1)),
    fire("cas-nonzero", "abort", lambda: abort(cas=5)),
    fire("cas-nonzero", "seqno-acknowledged", lambda: seqno_ack(cas=5)),
    fire("cas-nonzero", "cache-transfer", lambda: cache_transfer(cas=5)),
    fire("cas-nonzero", "cache-transfer-end", lambda: cache_transfer_end(cas=5)),
    fire("durability-level", "4", lambda: prepare(level=4)),
    fire("vbucket-state", "5", lambda: set_vbucket_state(5)),
    fire("deletion-datatype", "0x03", lambda: deletion(datatype=0x03, value=deflate(b'{"a":1}'))),
    fire("deletion-datatype", "0x01-no-value", lambda: deletion(datatype=0x01)),
    fire("body-length-mismatch", "declares-more", lambda: diagram(stream_end(body_length=8)), text=("8", "4")),
    fire("peer-error", "key-enoent", lambda: response(0x53, status=0x01), cls="KEY_ENOENT"),
    fire("peer-error", "rollback-names-seqno", lambda: response(0x53, status=0x23, value=struct.pack(">Q", 4660)),
         cls="ROLLBACK", text=("4660",)),
    fire("peer-error", "einval-noop", lambda: response(0x5C, status=0x04, opaque=NOOP_OPAQUE), cls="EINVAL"),
    fire("peer-error", "unmapped-etmpfail", lambda: response(0x53, status=0x86)),
    fire("caption-mismatch", "flag-names", lambda: diagram(marker_v1(0x01), marker_captions("0x00000001 (disk)")),
         text=("disk", "Memory")),
    fire("caption-mismatch", "field-name", lambda: diagram(marker_v1(0x01), (("End Seqno", 24, 31,
                                                                                 "0x0000000000000000"),)),
         text=("start_seqno",)),
    fire("caption-mismatch", "key-text", lambda: diagram(control(), (("Key", 24, 34, "enable_nooq"),)),
         text=("enable_nooq",)),
]

MORE_NEAR_MISSES = [
    near("truncated", "complete-noop", lambda: noop()),
    near("lengths-exceed-body", "mutation", lambda: mutation()),
    near("unknown-magic", "0x08", lambda: stream_end_sid(b"\x22\x00\x07")),
    near("unknown-magic", "0x18", lambda: build_frame(0x18, 0x5C, framing=b"\x02\x00\x10", opaque=NOOP_OPAQUE)),
    near("unknown-opcode", "server-0x02", lambda: noop(magic=0x82, opcode=0x02)),
    near("unknown-opcode", "cache-transfer-end-0x67", lambda: cache_transfer_end()),
    near("retired-opcode", "set-vbucket-0x3d", lambda: build_frame(0x80, 0x3D, extras=b"\x01")),
    near("datatype-invalid", "0x07",
         lambda: mutation(datatype=0x07, value=deflate(XATTRS + b'{"a":1}'))),
    near("extras-length", "deletion-v1-18", lambda: deletion_v1()),
    near("extras-length", "deletion-v2-21", lambda: deletion()),
    near("extras-length", "expiration-legacy-18", lambda: expiration_legacy()),
    near("key-required", "commit", lambda: commit()),
    near("key-forbidden", "stream-req", lambda: stream_req()),
    near("value-required", "cache-transfer", lambda: cache_transfer()),
    near("value-forbidden", "v1-marker", lambda: marker_v1()),
    near("value-forbidden", "set-vbucket-state", lambda: set_vbucket_state(4)),
    near("key-too-long", "251-default-collection", lambda: mutation(key=vb(0, b"k" * 250)), COLLECTIONS),
    near("key-too-long", "non-default-collection-246", lambda: mutation(key=vb(8, b"k" * 246)), COLLECTIONS),
    near("snapshot-marker-version", "0x02", lambda: marker_v2(0x02, v22_value())),
    near("snapshot-marker-value-size", "v2.0-36", lambda: marker_v2(0x00, v20_value())),
    near("reserved-flags", "open-all-valid", lambda: dcp_open(flags=0x001 | 0x004 | 0x020 | 0x100 | 0x200)),
    near("reserved-flags", "open-consumer", lambda: dcp_open(flags=0x000)),
    near("reserved-flags", "stream-req-valid", lambda: stream_req(flags=0x01 | 0x04 | 0x10 | 0x20 | 0x80)),
    near("reserved-flags", "stream-req-from-latest", lambda: stream_req(flags=0x40)),
    near("reserved-flags", "add-stream-takeover", lambda: add_stream(flags=0x01)),
    near("reserved-flags", "marker-history-backfill-0x36", lambda: marker_v1(snapshot_type=0x36)),
    near("reserved-flags", "marker-v2.2-0x3f", lambda: marker_v2(0x02, v22_value(0x3F))),
    near("reserved-flags", "oso-start", lambda: oso(0x01)),
    near("reserved-flags", "oso-end", lambda: oso(0x02)),
    near("collection-key-leb128", "cid-0xCAFEF00D", lambda: mutation(key=vb(0xCAFEF00D)), COLLECTIONS),
    near("collection-key-leb128", "cache-transfer", lambda: cache_transfer()),
    near("collection-key-empty", "cid-0", lambda: mutation(key=vb(0)), COLLECTIONS),
    near("collection-id-reserved", "cid-0", lambda: mutation(key=vb(0)), COLLECTIONS),
    near("collection-id-reserved", "cid-555", lambda: mutation(key=vb(555)), COLLECTIONS),
    near("xattr-invalid", "spec-vector-blob", lambda: mutation(datatype=0x05, value=encode_xattrs([
        ("_sync", '{"cas":"deadbeefcafefeed"}'),
        ("meta", '{"author":"Trond Norbye","content-type":"application/octet-stream"}')]) + b'{"a":1}')),
    near("xattr-invalid", "snappy-xattr", lambda: mutation(datatype=0x06, value=deflate(XATTRS + b"world"))),
    near("snappy-invalid", "spec-vector-snappy-json", lambda: mutation(datatype=0x03, value=bytes.fromhex(
        "487c7b0a22636c69636b223a2022746f2065646974222c0a2277697468204a534f4e0518886865726520617265206e6f20"
        "7265736572766564206669656c64206e616d6573220a7d"))),
    near("json-invalid", "spec-vector-38", lambda: bytes.fromhex(VECTORS["38"]), COLLECTIONS),
    near("json-invalid", "dcp-open-consumer-name",
         lambda: dcp_open(flags=0, value=b'{"consumer_name":"replica"}', datatype=0x01)),
    near("system-event-value", "modify-collection-v2", lambda: system_event(5, 2, modify_v2(), key=b"c1")),
    near("system-event-value", "spec-vector-22", lambda: bytes.fromhex(VECTORS["22"])),
    near("system-event-value", "spec-vector-23", lambda: bytes.fromhex(VECTORS["23"])),
    near("system-event-value", "spec-vector-24-create", lambda: bytes.fromhex(VECTORS["24create"])),
    near("system-event-id", "modify-collection-v2", lambda: system_event(5, 2, modify_v2(), key=b"c1")),
    near("system-event-id", "drop-scope-v0", lambda: bytes.fromhex(VECTORS["24drop"])),
    near("frame-info-encoding", "escaped-length",  # impersonate (id 4) of 15 bytes: length nibble escaped
         lambda: stream_end_sid(b"\x22\x00\x07" + b"\x4f\x00" + b"u" * 15)),
    near("frame-info-invalid", "barrier-empty", lambda: stream_end_sid(b"\x00\x22\x00\x07")),
    near("frame-info-invalid", "durability-majority-timeout",
         lambda: build_frame(0x08, 0x01, framing=b"\x13\x01\x00\x64", extras=bytes(8), key=b"k", value=b"v")),
    near("frame-info-invalid", "response-read-units",
         lambda: build_frame(0x18, 0x00, framing=b"\x12\x00\x01", status=0, extras=bytes(4), value=b"v")),
    near("value-size", "spec-vector-8", lambda: bytes.fromhex(VECTORS["8"])),
    near("value-size", "spec-vector-7-rollback", lambda: bytes.fromhex(VECTORS["7"])),
    near("value-size", "helo-response", lambda: bytes.fromhex(VECTORS["42resp"])),
    near("stream-request-value", "every-key", lambda: stream_req(
        value=b'{"uid":"2","sid":65535,"scope":"8","purge_seqno":"123"}'), COLLECTIONS),
    near("stream-request-value", "empty-object", lambda: stream_req(value=b"{}"), COLLECTIONS),
    near("stream-request-value", "spec-vector-36", lambda: bytes.fromhex(VECTORS["36"]), COLLECTIONS),
    near("cache-transfer-value", "two-records", lambda: cache_transfer(CT_VALUE + ct_record(key=vb(8), value=b""))),
    *(near("tap-connect-value", f"spec-vector-{name}", lambda name=name: bytes.fromhex(TAP_VECTORS[name]))
      for name in ("connect", "connect_backfill", "connect_list_vb")),
    near("tap-connect-value", "checkpoint-list", lambda: tap_connect(0x40, b"\x00\x01" + bytes(10))),
    near("seqno-zero", "commit", lambda: commit()),
    near("seqno-zero", "abort", lambda: abort()),
    near("seqno-zero", "prepare", lambda: prepare()),
    near("nmeta-nonzero", "deletion-v1", lambda: deletion_v1()),
    near("cas-zero", "mutation-cas-0", lambda: mutation(cas=0)),
    near("cas-nonzero", "abort", lambda: abort()),
    near("cas-nonzero", "seqno-acknowledged", lambda: seqno_ack()),
    near("cas-nonzero", "cache-transfer", lambda: cache_transfer()),
    near("cas-nonzero", "cache-transfer-end", lambda: cache_transfer_end()),
    near("cas-nonzero", "mutation-with-cas", lambda: mutation(cas=0x15C7C2B955AB0000)),
    *(near("durability-level", str(level), lambda level=level: prepare(level=level)) for level in (2, 3)),
    *(near("vbucket-state", str(state), lambda state=state: set_vbucket_state(state)) for state in (1, 2, 3)),
    near("stream-end-reason", "0", lambda: stream_end(reason=0)),
    near("deletion-datatype", "0x07", lambda: deletion(datatype=0x07, value=deflate(XATTRS + b'{"a":1}'))),
    near("deletion-datatype", "0x00", lambda: deletion(datatype=0x00)),
    near("deletion-datatype", "0x02", lambda: deletion(datatype=0x02, value=deflate(b"body"))),
    near("deletion-datatype", "0x04", lambda: deletion(datatype=0x04, value=XATTRS)),
    near("deletion-datatype", "0x06", lambda: deletion(datatype=0x06, value=deflate(XATTRS))),
    near("body-length-mismatch", "snapshot-marker", lambda: diagram(marker_v1())),
    near("peer-error", "noop-reply", lambda: bytes.fromhex(VECTORS["19resp"])),
    near("peer-error", "marker-ack-reply", lambda: bytes.fromhex(VECTORS["35"])),
    near("peer-error", "sasl-auth-continue", lambda: response(0x21, status=0x21, value=b"challenge")),
    near("caption-mismatch", "flag-names-agree",
         lambda: diagram(marker_v1(0x01), marker_captions("0x00000001 (Memory)"))),
    near("caption-mismatch", "key-text", lambda: diagram(control(), (("Key", 24, 34, "enable_noop"),
                                                                      ("Value", 35, 38, "true")))),
]


@pytest.mark.parametrize("rule, builder, ctx, cls, text", MORE_FIRES)
def test_rule_fires_variant(rule, builder, ctx, cls, text):
    assert_fires(rule, builder(), ctx, cls=cls, text=text)


@pytest.mark.parametrize("rule, builder, ctx", MORE_NEAR_MISSES)
def test_rule_near_miss_variant(rule, builder, ctx):
    assert_quiet(rule, builder(), ctx)


def test_every_variant_names_a_frame_rule():
    for p in (*MORE_FIRES, *MORE_NEAR_MISSES):
        assert p.values[0] in FRAME_RULES, p.id


# =============================================================================================
# The builders are the spec's own frames where the spec has one
# =============================================================================================

SPEC_BUILT = {
    "10": lambda: stream_end(),
    "14": lambda: mutation(),
    "12": lambda: marker_v2(0x00, v20_value()),
    "18": lambda: set_vbucket_state(4),
    "19req": lambda: noop(),
    "21req": lambda: control(),
    "23": lambda: system_event(1, 0, end_v0(), by_seqno=5),
    "25": lambda: prepare(),
    "26": lambda: seqno_ack(),
    "27": lambda: commit(),
    "28": lambda: abort(),
    "30start": lambda: oso(0x01),
    "30end": lambda: oso(0x02),
    "31": lambda: cache_transfer(),
    "32": lambda: cache_transfer_end(),
    "34": lambda: stream_end_sid(b"\x22\x00\x07"),
    "36": lambda: stream_req(value=b'{"collections":["8"]}'),
}


@pytest.mark.parametrize("name", sorted(SPEC_BUILT))
def test_builders_reproduce_spec_vectors(name):
    built = SPEC_BUILT[name]()
    assert built.hex() == VECTORS[name]


def test_builders_reproduce_spec_vectors_v2_2_marker_shape():
    """§14 #13 is v2.2 with flags Disk|Checkpoint (0x06): same bytes as ``marker_v2(2, v22_value())``."""
    assert marker_v2(0x02, v22_value()).hex() == VECTORS["13"]


def test_tap_connect_builder_matches_spec():
    assert tap_connect(0x01, b"\xff" * 8).hex() == TAP_VECTORS["connect_backfill"]
