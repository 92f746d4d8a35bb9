"""Per-frame checks (EINVAL class and friends): each judges one decoded message."""

from __future__ import annotations

from typing import Callable, Iterator

from ....findings import Finding
from ..messages import dcp
from ..messages import problems as P
from ..messages.catalog import FORBIDDEN, REQUIRED
from ..messages.frame import Message
from ..messages.keys import RESERVED_COLLECTION_IDS
from ....messages.layout import unknown_bits
from ..messages.names import DATATYPE_JSON, DATATYPE_KNOWN, DATATYPE_XATTR, MAGICS, RETIRED_OPCODES, SUCCESS_LIKE_STATUS, VBUCKET_STATES
from ..messages.opcodes import OP, ST
from . import facts as F
from ....rules.checks import declare, judges
from .book import FRAME_RULES, STATUS_CLASSES

# -- the declared checks (rules/checks.py), judged where _declared names their point --------

_KEY_MAX, _PREFIXED_KEY_MAX, _LOGICAL_KEY_MAX = 250, 251, 246  # dcp.md §1.1, §12
declare("key-required", "frame.key", F.key_length.eq(0) & F.key_required,
        lambda m: f"{m.name} must have a key", offset=lambda m: m.offset)
# (the cheapest test first: most keys are far below either limit)
_key_over = (F.key_length > _KEY_MAX) & (~F.prefixed | (F.key_length > _PREFIXED_KEY_MAX))
declare("key-too-long", "frame.key_length", _key_over,
        lambda m: f"key is {m.key_length} bytes, limit {_PREFIXED_KEY_MAX if m.collection_id is not None else _KEY_MAX}",
        offset=lambda m: m.offset + 2)
declare("key-too-long", "frame.key_length", (F.logical_key_length > _LOGICAL_KEY_MAX) & F.collection_id.ne(0) & ~_key_over,
        lambda m: f"logical key is {len(m.key)} bytes, limit {_LOGICAL_KEY_MAX} in collection {m.collection_id}",
        offset=lambda m: m.offset + 2)
declare("seqno-zero", "frame.seqno", F.seqno.eq(0), lambda m: f"{m.name} {m.spec.seqno_field} is 0",
        on=(OP.DCP_MUTATION, OP.DCP_PREPARE, OP.DCP_COMMIT, OP.DCP_ABORT))
declare("nmeta-nonzero", "frame.nmeta", F.nmeta.ne(0), lambda m: f"{m.name} nmeta is {m.values['nmeta']}",
        on=(OP.DCP_MUTATION, OP.DCP_DELETION, OP.DCP_EXPIRATION))
declare("deletion-datatype", "frame.deletion", F.datatype.has(DATATYPE_JSON) & ~F.datatype.has(DATATYPE_XATTR),
        lambda m: f"deletion datatype 0x{m.datatype:02x} (JSON without Xattr)", on=(OP.DCP_DELETION,),
        offset=lambda m: m.offset + 5)


#: the rule that reports each kind of problem the decoder notices (messages/problems.py):
#: the rule book names each rule as the kind it reports
PROBLEM_RULES = {kind: kind for kind in P.KINDS}


def _key_at(m: Message) -> int:
    return m.offset + 24 + m.framing_length + m.extras_length


_RESERVED = RESERVED_COLLECTION_IDS
declare("collection-key-empty", "frame.collection", F.prefixed & F.logical_key_length.eq(0),
        lambda m: "logical key is empty after the collection id", offset=_key_at)
declare("collection-id-reserved", "frame.collection",
        F.prefixed & (F.collection_id >= _RESERVED.start) & (F.collection_id < _RESERVED.stop),
        lambda m: f"collection id {m.collection_id} is reserved on the wire", offset=_key_at)


def _declared(m: Message, point: str) -> list[tuple[str, str, int | None]]:
    """What the checks declared at ``point`` find in ``m`` (most often nothing)."""
    hit = judges(m.opcode)[point](m)
    return [(c.rule, c.say(m), c.offset(m) if c.offset else None) for c in hit] if hit else ()

Check = Callable[[Message], Iterator[tuple[str, str, int | None]]]
_CHECKS: list[Check] = []


def check(fn: Check) -> Check:
    _CHECKS.append(fn)
    return fn


@check
def _identity(m: Message):
    if m.magic not in MAGICS:
        yield "unknown-magic", f"magic 0x{m.magic:02x} is not an MCBP magic", m.offset
    elif m.spec is None:
        yield "unknown-opcode", f"opcode 0x{m.opcode:02x} is not defined for magic 0x{m.magic:02x}", m.offset + 1
    elif m.opcode in RETIRED_OPCODES and m.spec.family != "server":
        yield "retired-opcode", f"{m.name} is no longer supported by the server", m.offset + 1
    if m.datatype > DATATYPE_KNOWN:
        yield "datatype-invalid", f"datatype 0x{m.datatype:02x} has bits above 0x07", m.offset + 5


@check
def _shape(m: Message):
    body = m.body
    if body is None or m.truncated:
        return
    if body.extras is not None and m.extras_length not in body.extras:
        allowed = ", ".join(str(n) for n in sorted(body.extras))
        yield "extras-length", f"{m.name} extras length {m.extras_length}, allowed: {allowed}", m.offset + 4
    value_len = m.body_length - m.framing_length - m.extras_length - m.key_length
    if body.engine_specific:
        value_len -= m.values.get("engine_specific_length", 0)
    key_len = m.key_length  # key, then value: required or forbidden (unrolled: hot path)
    if body.key == REQUIRED:
        yield from _declared(m, "frame.key")
    elif body.key == FORBIDDEN and key_len > 0:
        yield "key-forbidden", f"{m.name} must not have a key ({key_len} bytes)", m.offset
    if body.value == REQUIRED:
        if value_len <= 0:
            yield "value-required", f"{m.name} must have a value", m.offset
    elif body.value == FORBIDDEN and value_len > 0:
        yield "value-forbidden", f"{m.name} must not have a value ({value_len} bytes)", m.offset
    if m.opcode == OP.DCP_SNAPSHOT_MARKER and m.is_request:
        if m.extras_length == 20 and value_len > 0 and m.spec.family == "dcp":
            yield "value-forbidden", "a v1 snapshot marker (extras 20) must not have a value", m.offset
        if m.extras_length == 1 and value_len <= 0:
            yield "snapshot-marker-value-size", "a v2 snapshot marker (extras 1) needs a value", m.offset
    yield from _declared(m, "frame.key_length")


@check
def _flags(m: Message):
    if not m.is_request or m.spec is None or m.spec.family != "dcp":
        return
    v = m.values
    if m.opcode == OP.DCP_OPEN and "flags" in v:
        bad = v["flags"] & dcp.OPEN_FLAGS_INVALID | unknown_bits(v["flags"], dcp.OPEN_FLAGS)
        if bad:
            yield "reserved-flags", f"DCP_OPEN flags 0x{v['flags']:x}: invalid bits 0x{bad:x}", None
    if m.opcode in (OP.DCP_ADD_STREAM, OP.DCP_STREAM_REQ) and "flags" in v:
        bad = v["flags"] & dcp.STREAM_FLAGS_INVALID | unknown_bits(v["flags"], dcp.STREAM_FLAGS)
        if bad:
            yield "reserved-flags", f"stream flags 0x{v['flags']:x}: invalid bits 0x{bad:x}", None
    if m.opcode == OP.DCP_SNAPSHOT_MARKER and "snapshot_type" in v:
        bad = unknown_bits(v["snapshot_type"], dcp.SNAPSHOT_FLAGS)
        if bad:
            yield "reserved-flags", f"snapshot type 0x{v['snapshot_type']:x}: unknown bits 0x{bad:x}", None
    if m.opcode == OP.DCP_OSO_SNAPSHOT and "flags" in v:
        if v["flags"] not in dcp.OSO_FLAGS:
            yield "reserved-flags", f"OSO flags 0x{v['flags']:x}: must be 0x01 (start) or 0x02 (end)", None


@check
def _dcp_values(m: Message):
    if not m.is_request or m.spec is None or m.spec.family != "dcp" or m.truncated:
        return
    v, op = m.values, m.opcode
    yield from _declared(m, "frame.seqno")
    if op in (OP.DCP_COMMIT, OP.DCP_ABORT) and v.get("prepared_seqno") == 0:
        yield "seqno-zero", f"{m.name} prepared_seqno is 0", None
    yield from _declared(m, "frame.nmeta")
    if op == OP.DCP_PREPARE:
        if m.cas == 0:
            yield "cas-zero", "DCP_PREPARE CAS is 0", m.offset + 16
        if "durability_level" in v and v["durability_level"] not in dcp.DURABILITY_LEVELS:
            yield "durability-level", f"durability level {v['durability_level']}", None
    if op in (OP.DCP_SEQNO_ACKNOWLEDGED, OP.DCP_COMMIT, OP.DCP_ABORT, OP.DCP_CACHE_TRANSFER, OP.DCP_CACHE_TRANSFER_END) and m.cas != 0:
        yield "cas-nonzero", f"{m.name} must carry CAS 0, has 0x{m.cas:x}", m.offset + 16
    if op == OP.DCP_SET_VBUCKET_STATE and "state" in v and v["state"] not in VBUCKET_STATES:
        yield "vbucket-state", f"vbucket state {v['state']}", None
    if op == OP.DCP_STREAM_END and "reason" in v and v["reason"] not in dcp.STREAM_END_REASONS:
        yield "stream-end-reason", f"stream end reason {v['reason']}", None
    yield from _declared(m, "frame.deletion")
    if op == OP.DCP_SYSTEM_EVENT and "event" in v:
        if v["event"] not in dcp.SYSTEM_EVENTS or v["event"] == 2:
            yield "system-event-id", f"system event id {v['event']}", None
        if v.get("version", 0) > 2:
            yield "system-event-id", f"system event version {v['version']}", None
        elif v["event"] == 5 and v.get("version", 0) < 2:
            yield "system-event-id", "ModifyCollection exists only as a version 2 (FlatBuffers) event", None


@check
def _peer_error(m: Message):
    if m.status is None or m.status in SUCCESS_LIKE_STATUS and m.status != ST.Rollback:
        return
    context = m.fields.get("error_context")
    text = f"{m.name} answered {m.status_name} (0x{m.status:04x})" + (f": {context}" if context else "")
    if m.status == ST.Rollback and "rollback_seqno" in m.fields:
        text += f", roll back to {m.fields['rollback_seqno']}"
    yield "peer-error", text, m.offset + 6


#: opcodes _flags and _dcp_values look at (DCP requests only)
_FLAG_OPCODES = frozenset({OP.DCP_OPEN, OP.DCP_ADD_STREAM, OP.DCP_STREAM_REQ, OP.DCP_SNAPSHOT_MARKER, OP.DCP_OSO_SNAPSHOT})
_DCP_VALUE_OPCODES = frozenset({OP.DCP_STREAM_END, OP.DCP_MUTATION, OP.DCP_DELETION, OP.DCP_EXPIRATION, OP.DCP_SET_VBUCKET_STATE, OP.DCP_SYSTEM_EVENT, OP.DCP_PREPARE, OP.DCP_SEQNO_ACKNOWLEDGED, OP.DCP_COMMIT, OP.DCP_ABORT, OP.DCP_CACHE_TRANSFER, OP.DCP_CACHE_TRANSFER_END})
_PLANS: dict[tuple[int, int], tuple[Check, ...]] = {}


def _plan(msg: Message) -> tuple[Check, ...]:
    """The checks that can yield for this magic and opcode, in registration order: a check
    left out returns at once for every such frame. New checks are always run."""
    key = (msg.magic, msg.opcode)
    plan = _PLANS.get(key)
    if plan is None:
        spec, request = msg.spec, msg.is_request
        dcp_request = request and spec is not None and spec.family == "dcp"
        odd = msg.magic not in MAGICS or spec is None or (msg.opcode in RETIRED_OPCODES and spec.family != "server")
        keep = {
            _identity: odd,
            _shape: spec is not None,
            _flags: dcp_request and msg.opcode in _FLAG_OPCODES,
            _dcp_values: dcp_request and msg.opcode in _DCP_VALUE_OPCODES,
            _peer_error: not request,
        }
        plan = _PLANS[key] = tuple(fn for fn in _CHECKS if keep.get(fn, True))
    if msg.datatype > DATATYPE_KNOWN and _identity not in plan:
        return tuple(_CHECKS)
    return plan


def check_frame(msg: Message) -> list[Finding]:
    """All per-frame findings for ``msg`` (also stored on ``msg.findings``)."""
    out: list[Finding] = []
    for p in msg.problems:
        out.append(FRAME_RULES[PROBLEM_RULES[p.kind]].finding(p.message, p.offset))
    for rule_id, text, offset in _declared(msg, "frame.collection"):
        out.append(FRAME_RULES[rule_id].finding(text, offset))
    for fn in _plan(msg):
        for rule_id, text, offset in fn(msg):
            f = FRAME_RULES[rule_id].finding(text, offset)
            if rule_id == "peer-error":
                f = type(f)(f.rule, STATUS_CLASSES.get(msg.status, f.cls), f.severity, f.message, f.offset, f.ref)
            out.append(f)
    msg.findings.extend(out)
    return out
