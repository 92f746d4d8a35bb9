"""The jsonl fast lane: runs of plain DCP mutations and deletions of one open stream go from
bytes to jsonl lines in C (``dcpinspect/families/mcbp/_lane.c``), with the stream's state brought up to
date here once a run, as the frame-by-frame path would have left it.

A run is taken only where the frame-by-frame path would report nothing: the stream is
open, inside a snapshot, not in OSO; each frame's facts (``rules/facts.py``) are read in
C and every check the rules declare for its opcode (``rules/checks.py``) is run over them
as a program compiled from the check's own condition; the run stops at the first frame a
check says true of, or that the decoder would read with a problem, and that frame goes
the ordinary way. No rule is written here or in C: change a check and the lane follows.

Frames of fixed fields only (snapshot markers, stream ends, noops, buffer acks, vbucket
states, empty Success answers) and DCP_CONTROL requests take a second way: C checks their
shape against the layouts and writes their line; here they are decoded from the same
layouts into the Message decode_frame would make and judged by the rules themselves; the
line from C is used when the rules find nothing.

Without the compiled module (no compiler at install time) every frame goes the ordinary
way; the output is the same byte for byte (tests/test_lane.py).
"""

from __future__ import annotations

import json
import struct
from itertools import combinations
from typing import NamedTuple

from ...sessions.captured import Captured, Lines
from .stats import StreamRun

from .messages import dcp
from .messages.frame import DecodeContext, header_message
from .messages.header import HEADER_SIZE
from .messages.keys import decode_key
from .messages.values import LEAN_DECODERS
from ...messages.layout import FieldSpec
from .messages.names import FEATURES, MAGICS, status_name
from .messages.registry import CLIENT_SPECS
from .messages.opcodes import OP
from .messages.record import protocol_of_family
from ...outputs.jsonl import _stdlib
from .messages.catalog import REQUIRED
from .lane_rules import Plan
from ...rules.conditions import reader
from .sessions import streams
from .sessions.streams import FLOW_CONTROLLED, Snapshot

try:
    from . import _lane
except ImportError:  # built without a C compiler
    _lane = None

#: the opcodes the lane takes, and the extras field read as the fact ``nmeta``
LANE_OPCODES = frozenset({OP.DCP_MUTATION, OP.DCP_DELETION})
#: what may begin a run: the items, and a snapshot marker that opens the stream's next
#: snapshot (a first marker, or an odd one, is judged by the rules: see Lane._fixed)
RUN_OPCODES = LANE_OPCODES | {OP.DCP_SNAPSHOT_MARKER}
_ZERO_FIELD = "nmeta"
_HEAD = struct.Struct(">BBHBBHIIQ")
_U32 = struct.Struct(">I").unpack_from
_MAGICS = (0x80, 0x08)  # ClientRequest, AltClientRequest (one stream-id frame info)


def _key(name: str) -> str:
    """``"name":``: a field's name as the line writes it."""
    return json.dumps(name) + ":"


def _protocol(spec) -> str:
    return f'"protocol":{json.dumps(protocol_of_family(spec.family))}'


def _op_head(op: int, status: int | None = None) -> str:
    """The opcode's members of a line (and a response's status ones), as frame_record has them."""
    head = f',"opcode":{op},"opcode_name":{json.dumps(CLIENT_SPECS[op].name)}'
    if status is not None:
        head += f',"status":{status},"status_name":{json.dumps(status_name(status))}'
    return head


def _plans() -> tuple:
    """Per opcode and extras layout: field names as JSON keys and sizes, from the layouts."""
    plans = []
    for op in sorted(LANE_OPCODES):
        spec = CLIENT_SPECS[op]
        assert spec.request.extras is not None and spec.family == "dcp"
        for size, layout in sorted(spec.request.extras.items()):
            if layout._convert:  # a flag, enum or bytes field: not a plain number in JSON
                continue
            zero = layout.names.index(_ZERO_FIELD) if _ZERO_FIELD in layout.names else -1
            plans.append((op, size, layout.names.index(spec.seqno_field), zero, spec.request.key == REQUIRED,
                          tuple(map(_key, layout.names)),
                          tuple(f.size for f in layout.fields), _protocol(spec), _op_head(op)))
    return tuple(plans)


_PLANS = None if _lane is None else _lane.compile_plans(_plans())


def compile_rules() -> tuple[tuple, object, bool]:
    """The checks of the lane's opcodes as ``_lane.scan`` runs them (``lane_rules.Plan``):
    the connection facts it is given as a run starts (beyond the facts it reads itself,
    ``_lane.FACTS``), the compiled rules, and whether they run as the C generated from the
    same checks (that C is theirs) or are interpreted."""
    plan = Plan(_lane.FACTS)
    native = plan.fingerprint() == _lane.GENERATED
    return tuple(plan.connection), _lane.compile_rules(plan.programs(), len(plan.slots), native), native


class Run(NamedTuple):
    """What ``_lane.scan`` is told of the stream a run belongs to (its order is C's)."""
    opaque: int
    vbucket: int
    stream_id: int  # -1: none
    collections: int  # -1: not known, else 0 or 1
    max_text: int
    max_inflate: int
    last_seqno: int
    snap_start: int
    snap_end: int
    snap_flags: int
    snap_complete: bool
    keys: object  # the snapshot's key digests, None when not judged
    max_keys: int
    unacked: int
    buffer_size: int  # for the bytes it counts, 0: none
    end_seqno: int
    prefix: str
    connection: tuple  # the connection facts' values, in compile_rules' order
    marker_shapes: tuple
    marker_fields: tuple
    #: by lane opcode, which checks' connection parts hold for these connection facts (as
    #: a scan of the same facts found them; None: the scan judges them)
    masks: tuple | None = None


class Scanned(NamedTuple):
    """What ``_lane.scan`` says of a run."""
    after: int
    mutations: int
    deletions: int
    last_seqno: int
    size: int
    unacked: int
    text: bytes
    last_op: int
    last_sid: int
    last_key: str | None
    markers: int
    first_complete: bool
    before: tuple | None
    newest: tuple | None
    masks: tuple  # what Run.masks may say for the same connection facts
    frames: bytes  # each frame taken as the statistics count it (StreamRun.frames)


def _renderer(spec: FieldSpec) -> dict | None:
    """A field's JSON text by value, where it is not the number itself: every enum value,
    every combination of named flags (other values are left to the Python path)."""
    if spec.enum is not None:
        return {v: json.dumps(spec.json(v)) for v in spec.enum}
    if spec.flags is not None:
        bits = list(spec.flags)
        return {sum(c): json.dumps(spec.json(sum(c)), separators=(",", ":"))
                for n in range(len(bits) + 1) for c in combinations(bits, n)}
    return None


#: requests of fixed fields only, no key (their shapes from the layout tables), and
#: requests of a text key and a value of a kind ("": no value)
FIXED_REQUESTS = (OP.DCP_STREAM_REQ, OP.DCP_STREAM_END, OP.DCP_SNAPSHOT_MARKER, OP.DCP_SET_VBUCKET_STATE,
                  OP.DCP_NOOP, OP.DCP_BUFFER_ACKNOWLEDGEMENT)
TEXT_REQUESTS = {OP.DCP_CONTROL: "text", OP.DCP_OPEN: "", OP.HELO: "features"}
#: value kinds that are lists: HELO's feature codes, failover logs (see _listed)
LIST_KINDS = ("features", "failover_log")
#: the value size ``_lane.fixed`` is given for a text key and a value of a kind
_KEYED_SIZE = {"text": -1, "": -2, **{kind: -3 for kind in LIST_KINDS}}
_RESPONSE = 0x81
_EMPTY = bytes(4)  # a body length of 0


def _fields(layouts) -> tuple:
    fields = tuple(f for layout in layouts if layout is not None for f in layout.fields)
    assert all(f.kind == "uint" for f in fields)
    return tuple(_key(f.name) for f in fields), tuple(f.size for f in fields), tuple(map(_renderer, fields))


def _listed(kind: str) -> tuple:
    """How C writes a list value: its member, then each feature code's JSON text (codes
    without a name are left to the Python path), or the fields of a failover log entry."""
    if kind == "features":
        return _key("features"), {code: json.dumps(name) for code, name in FEATURES.items()}
    names, sizes, renderers = _fields((dcp.FAILOVER_ENTRY,))
    assert not any(renderers)
    return _key("failover_log"), names, sizes


def _fixed_shapes() -> tuple[dict, list]:
    """What ``_lane.fixed`` takes: by ``magic << 8 | opcode``, the shapes a frame of fixed
    fields may have, and by shape index the (extras layout, value layout, value kind) they
    are read with (kind None: fixed fields only; else a text key and a value of that kind).

    Requests of FIXED_REQUESTS with each of their extras layouts (a v2 snapshot marker's
    version then selects the value layout; v2.1, removed, is left to the Python path), and
    the empty Success response of every opcode; TEXT_REQUESTS with their text key and a
    value of their kind, or none; Success responses whose value is a list (LIST_KINDS)."""
    shapes: dict[int, list] = {}
    layouts: list = []

    def add(magics, op, extras, version, value, proto, head, with_vbucket, kind=None):
        names, sizes, renderers = _fields((extras, value))
        layouts.append((extras, value, kind))
        size = (0 if value is None else value.size) if kind is None else _KEYED_SIZE[kind]
        shape = (0 if extras is None else extras.size, version, size, names, sizes, renderers, proto, head,
                 with_vbucket, len(layouts) - 1)
        if kind in LIST_KINDS:
            shape += (_listed(kind),)
        for magic in magics:
            shapes.setdefault(magic << 8 | op, []).append(shape)

    for op, spec in sorted(CLIENT_SPECS.items()):
        proto, head = _protocol(spec), _op_head(op)
        add((_RESPONSE,), op, None, -1, None, proto, _op_head(op, 0), False)
        answer = spec.response
        if answer is not None and answer.value_kind in LIST_KINDS and answer.extras == {0: None}:
            assert answer.key_kind == "text"
            add((_RESPONSE,), op, None, -1, None, proto, _op_head(op, 0), False, kind=answer.value_kind)
        if op in TEXT_REQUESTS:
            body, kind = spec.request, TEXT_REQUESTS[op]
            assert body.key_kind == "text" and body.value_kind == (kind or body.value_kind)
            for _, extras in sorted((body.extras or {0: None}).items()):
                add(_MAGICS, op, extras, -1, None, proto, head, True, kind=kind)
        if op not in FIXED_REQUESTS:
            continue
        for _, extras in sorted((spec.request.extras or {0: None}).items()):
            if op == OP.DCP_SNAPSHOT_MARKER and extras is dcp.SNAPSHOT_V2_EXTRAS:
                for version, value in sorted(dcp.SNAPSHOT_VALUE_BY_VERSION.items()):
                    if version not in dcp.SNAPSHOT_REMOVED_VERSIONS:
                        add(_MAGICS, op, extras, version, value, proto, head, True)
            else:
                add(_MAGICS, op, extras, -1, None, proto, head, True)
    return {code: tuple(v) for code, v in shapes.items()}, layouts


_FIXED, _FIXED_LAYOUTS = _fixed_shapes()
#: answers with a value the fixed way takes: those with a list shape
_LISTED_ANSWERS = frozenset(code & 0xFF for code, shapes in _FIXED.items()
                            if code >> 8 == _RESPONSE and any(shape[2] == _KEYED_SIZE["features"] for shape in shapes))
#: a run's snapshot markers: their shapes (for magics 0x80 and 0x08), and by shape index
#: where the fields start_snapshot reads sit among the shape's (-1: not in it), and
#: whether the shape is v2.2 (a marker the validator wants negotiated)
_MARKER_SHAPES = tuple(_FIXED[m << 8 | OP.DCP_SNAPSHOT_MARKER] for m in _MAGICS)
_SNAPSHOT_FIELDS = ("start_seqno", "end_seqno", "snapshot_type", "max_visible_seqno", "high_completed_seqno",
                    "high_prepared_seqno")


def _marker_fields() -> tuple:
    """By shape index: where a marker shape's fields sit (see _MARKER_SHAPES), else None."""
    out = []
    for extras, value, _ in _FIXED_LAYOUTS:
        names = [f.name for layout in (extras, value) if layout is not None for f in layout.fields]
        if "snapshot_type" not in names:
            out.append(None)
            continue
        out.append((*(names.index(n) if n in names else -1 for n in _SNAPSHOT_FIELDS),
                    int(value is dcp.SNAPSHOT_V22)))
    return tuple(out)


_MARKER_FIELDS = _marker_fields()


def _snapshot(info: tuple, index: int) -> Snapshot:
    """A snapshot a run's marker began (what the scan says of it), as start_snapshot makes it."""
    start, end, flags, mvs, hcs, hps, keys, complete = info
    return Snapshot(start, end, flags, index, mvs, hcs, hps, keys, complete)


_MAGIC_JSON = {m: json.dumps(name) for m, name in MAGICS.items()}
_MAGIC_NAMES = tuple(_MAGIC_JSON[m] for m in _MAGICS)
_NAMES = {op: CLIENT_SPECS[op].name for op in (*LANE_OPCODES, OP.DCP_SNAPSHOT_MARKER)}
_MUTATIONS, _DELETIONS = (CLIENT_SPECS[op].name.removeprefix("DCP_").lower() for op in (OP.DCP_MUTATION, OP.DCP_DELETION))
assert all(op in FLOW_CONTROLLED for op in LANE_OPCODES)


def available() -> bool:
    return _lane is not None


class Lane:
    """What one capture's lines share: the decode context and a line prefix per record."""

    __slots__ = ("base", "_prefix_key", "_prefix", "_connection", "_rules", "_facts_key", "_facts", "_masks")

    def __init__(self, base: DecodeContext) -> None:
        self.base = base
        self._prefix_key: tuple | None = None
        self._prefix = ""
        connection, self._rules, _ = compile_rules()
        self._connection = reader(connection)
        #: the connection facts as last read, and of what: (stream, the validator's message
        #: count); every message the rules judge counts, so a count unchanged is state unchanged
        self._facts_key: tuple | None = None
        self._facts: tuple = ()
        self._masks: tuple | None = None  # what the scans found of the checks under _facts

    def _connection_facts(self, validator, stream) -> tuple:
        key = (stream, validator.frames)
        if key != self._facts_key:
            c = validator.judging.of_stream(stream)
            self._facts, self._facts_key = self._connection(c), key
            self._masks = None
        return self._facts

    @staticmethod
    def usable(base: DecodeContext) -> bool:
        return _lane is not None and not base.detail and base.documents and not base.headers_only

    def prefix(self, number: int, ts: float, label: str, direction: str) -> str:
        """``{"kind":"frame","frame":N,"ts":T,"flow":F,"direction":D,`` as dumps writes it
        (``label``: the flow label as a JSON string)."""
        key = (number, ts, label, direction)
        if key != self._prefix_key:
            if type(ts) is float and ts - ts == 0.0:  # finite: json writes float.__repr__
                head = f'{{"kind":"frame","frame":{number},"ts":{ts!r},"flow":{label},"direction":"{direction}",'
            else:
                head = _stdlib({"kind": "frame", "frame": number, "ts": ts, "flow": json.loads(label),
                                "direction": direction})[:-1] + ","
            self._prefix_key, self._prefix = key, head
        return self._prefix

    def take(self, fd, side, direction: str, data: bytes, pos: int, offset: int,
             ts: float) -> tuple[int, object]:
        """What the lane makes of the whole frames of ``data`` (from stream ``offset`` on, of
        ``fd``'s ``direction``) at ``pos``: the position after what it took, and Lines, or
        ``(msg, number)`` for a frame it decoded and the rules found something in; ``(end,
        None)``: the frame from ``pos`` to ``end`` goes the ordinary way."""
        end, got = self._take(fd, side, direction, data, pos, offset, ts)
        if got is None:
            end = pos + HEADER_SIZE + _U32(data, pos + 8)[0]
        return end, got

    def _take(self, fd, side, direction: str, data: bytes, pos: int, offset: int,
              ts: float) -> tuple[int, object]:
        op = data[pos + 1]
        if op in RUN_OPCODES:
            end, lines = self._run(fd, side, direction, data, pos, offset, ts)
            if lines is not None or op != OP.DCP_SNAPSHOT_MARKER:
                return end, lines
        magic = data[pos]
        if magic == _RESPONSE:  # empty answers, and the ones with a list
            if data[pos + 8:pos + 12] == _EMPTY or op in _LISTED_ANSWERS:
                return self._fixed(fd, side, direction, data, pos, offset, ts)
        elif op in FIXED_REQUESTS or op in TEXT_REQUESTS:
            return self._fixed(fd, side, direction, data, pos, offset, ts)
        return pos, None

    def _run(self, fd, side, direction: str, data: bytes, pos: int, offset: int,
             ts: float) -> tuple[int, Lines | None]:
        """Frames of ``data`` (whole frames from stream ``offset`` on, of ``fd``'s ``direction``)
        from ``pos`` that the lane can vouch for: the position after them, and their lines
        (None if none)."""
        magic, _, _, _, _, vbucket, _, opaque, _ = _HEAD.unpack_from(data, pos)
        if magic != 0x80 and magic != 0x08:
            return pos, None
        conversation = fd.session
        validator, negotiation = conversation.validator, conversation.negotiation
        st = validator.state
        stream = st.streams_by_opaque.get(opaque)
        # what the lane can carry for the session: an open stream's snapshot, outside OSO
        if stream is None or stream.vbucket != vbucket or stream.state != "open" or stream.in_oso:
            return pos, None
        snap = stream.snapshot
        if snap is None or snap.strayed:  # (items outside it: the rules follow the episode to the next marker)
            return pos, None
        collections = negotiation.context(self.base).collections
        limit = negotiation.buffer_size or 0
        # every frame of a run is numbered by the same record: stop where the next one begins
        number, stop = _numbered(side, data, pos, offset)
        run = Run(opaque, vbucket, -1 if stream.stream_id is None else stream.stream_id,
                  -1 if collections is None else int(collections), self.base.max_value_text, self.base.max_inflate,
                  stream.last_seqno, snap.start, snap.end, snap.flags, snap.complete,
                  None if snap.may_duplicate else snap.keys, streams.MAX_SNAPSHOT_KEYS, st.unacked, limit,
                  stream.end_seqno, self.prefix(number, ts, fd.label, direction),
                  self._connection_facts(validator, stream), _MARKER_SHAPES, _MARKER_FIELDS, self._masks)
        (after, mutations, deletions, last, size, unacked, text, last_op, last_sid, last_key, markers, first_complete,
         before, newest, self._masks, frames) = _lane.scan(data, pos, stop, offset, run, _PLANS, self._rules,
                                                           _MAGIC_NAMES)  # a Scanned
        count = mutations + deletions + markers
        if not count:
            return pos, None
        reached = stream.end_reached
        validator.frames += count
        st.took_run(stream, markers, first_complete, None if before is None else _snapshot(before, number),
                    None if newest is None else _snapshot(newest, number),
                    ((_MUTATIONS, mutations), (_DELETIONS, deletions)), last, ts, unacked if limit else None, size)
        st.remember(direction, opaque, number, ts).item(
            last_op, opaque, _NAMES[last_op], vbucket, None if last_sid < 0 else last_sid, last_key)
        if stream.end_reached == reached and self._facts_key is not None:
            # of the connection facts a run changes only end_reached: the ones read still hold
            self._facts_key = (stream, validator.frames)
        return after, Lines(text, count, fd.key, direction,
                            StreamRun(ts, number, opaque, vbucket, frames))

    def _fixed(self, fd, side, direction: str, data: bytes, pos: int, offset: int,
               ts: float) -> tuple[int, object]:
        """The frame at ``pos`` when it is made of fixed fields, or of them and a text key and
        value (see _fixed_shapes): read in C, decoded here from its layouts and the same key
        and value decoders (the Message decode_frame makes), judged by
        the rules; its line (Lines) when they find nothing, else ``(msg, number)`` for the
        ordinary record. ``(pos, None)``: left to the ordinary way."""
        number, stop = _numbered(side, data, pos, offset)
        magic = data[pos]
        got = _lane.fixed(data, pos, stop, offset, self.prefix(number, ts, fd.label, direction),
                          _MAGIC_JSON.get(magic, '""'), _FIXED, self.base.max_value_text)
        if got is None:
            return pos, None
        end, shape, sid, text = got
        extras, value, kind = _FIXED_LAYOUTS[shape]
        frame, at = data[pos:end], offset + pos
        msg = header_message(frame, at)
        start = 24
        if sid >= 0:  # what frame._decode_framing sets for one stream-id frame info
            msg.stream_id = sid
            msg.fields = {"stream_id": sid}
            msg.frame_infos = [{"id": 2, "name": "dcp_stream_id", "value": sid, "problem": None,
                                "offset": at + 24, "size": 3}]
            start = 27
        if extras is not None:  # as frame._decode_extras and values._put_layout leave them
            msg.values, fields = extras.decode(frame, start)
            if msg.fields:
                msg.fields.update(fields)
            else:
                msg.fields = fields
            start += extras.size
        if kind is not None:  # a text key and a value of that kind, as decode_frame reads them
            ctx = fd.session.negotiation.context(self.base)
            stop = start + msg.key_length
            decode_key(msg, frame[start:stop], at + start, "text", ctx)
            msg.value = raw = frame[stop:]
            if raw:
                LEAN_DECODERS[kind](msg, raw, at + stop, ctx)
        else:
            msg.value = frame[start:]
        if value is not None:
            values, fields = value.decode(frame, start)
            msg.values.update(values)
            for name, shown in fields.items():
                msg.fields.setdefault(name, shown)
        fd.session.judge(msg, direction, ts, number)
        if not msg.findings:
            return end, Lines(text, 1, fd.key, direction, Captured(ts, fd.key, direction, msg, number))
        return end, (msg, number)


def _numbered(side, data: bytes, pos: int, offset: int) -> tuple[int, int]:
    """The capture frame number of the frame at ``pos`` and where frames with that same
    number end in ``data`` (the start of the next record's bytes)."""
    if side.held_marks() > 1:
        number = side.record_of(offset + pos + 24 + int.from_bytes(data[pos + 8:pos + 12], "big")) + 1
        return number, side.first_mark()[0] - offset
    first = side.first_mark()
    return (first[1] if first else -1) + 1, len(data)  # one record holds them all
