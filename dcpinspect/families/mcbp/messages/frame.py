"""Decode one MCBP frame into a :class:`Message` (sans-I/O)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from ....findings import Finding, Problem
from . import problems as P
from .catalog import Body, OpSpec
from .codecs.errors import CodecError
from .codecs.frameinfo import describe_frame_info, parse_frame_infos
from .header import HEADER_SIZE
from .keys import decode_key
from ....messages.layout import Field, Layout
from .names import FLEX_MAGICS, MAGICS, REQUEST_MAGICS, SERVER_MAGICS, SUCCESS_LIKE_STATUS, status_name
from .record import frame_record
from .registry import CLIENT_SPECS, SERVER_SPECS, opcode_name
from .tap import ENGINE_LAYOUTS
from .values import decode_value, decode_value_fields
from ....limits import INFLATE, VALUE_TEXT


@dataclass(frozen=True, slots=True)
class DecodeContext:
    """What the connection negotiated, as far as the caller knows."""

    collections: bool | None = None  # None: unknown, decide per key
    max_inflate: int = INFLATE.default
    max_value_text: int = VALUE_TEXT.default
    documents: bool = True  # False: skip document bodies (no inflate, no JSON check)
    headers_only: bool = False  # True: the 24-byte header alone, for counting passes
    #: build Sections and located Field rows (tables, diagrams); False: only what fields,
    #: values and problems need (jsonl, summary): same fields, values and findings
    detail: bool = True


DEFAULT_CONTEXT = DecodeContext()


@dataclass(slots=True)
class Section:
    name: str  # framing_extras, extras, engine_specific, key, value
    offset: int  # absolute
    size: int
    layout: Layout | None = None
    fields: list[Field] = field(default_factory=list)


@dataclass(slots=True)
class Message:
    offset: int
    data: bytes
    magic: int
    opcode: int
    framing_length: int
    key_length: int
    extras_length: int
    datatype: int
    vbucket: int | None
    status: int | None
    body_length: int
    opaque: int
    cas: int
    spec: OpSpec | None
    truncated: bool = False
    frame_infos: list[dict] = field(default_factory=list)
    stream_id: int | None = None
    fields: dict[str, Any] = field(default_factory=dict)  # JSON-ready, by spec name
    values: dict[str, Any] = field(default_factory=dict)  # raw integers of fixed layouts
    key: bytes = b""
    collection_id: int | None = None
    key_source: str = ""
    value: bytes = b""
    sections: list[Section] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    note: str = ""  # how this view of the bytes was obtained, when not plainly

    @property
    def is_request(self) -> bool:
        return self.magic in REQUEST_MAGICS

    @property
    def known_magic(self) -> bool:
        return self.magic in MAGICS

    @property
    def name(self) -> str:
        return self.spec.name if self.spec else f"UNKNOWN_0x{self.opcode:02x}"

    @property
    def size(self) -> int:
        return len(self.data)

    #: what a connection's ``protocols`` in ``stats`` count it as
    stats_protocol = "mcbp"

    #: the part of the ``stats`` report that counts MCBP frames: the family's standing part
    #: (``families/mcbp/stats.py``), by its name
    stats_part = "mcbp"

    #: judged whatever the decoding context (no: a summary of headers only counts none
    #: of an MCBP message's findings)
    judged = False

    @property
    def counted(self) -> tuple:
        """What summaries count it under: (its kind, its key there), named by
        :meth:`count_name` when shown."""
        return (Message, (self.magic, self.opcode))

    def placed_rows(self, where: dict[str, Any]) -> list[dict[str, Any]]:
        """Its JSON Lines object, placed (``where``: frame, ts, flow, direction)."""
        return [frame_record(self, kind="frame", **where)]

    @staticmethod
    def count_name(key: tuple[int, int]) -> tuple[str, str, str]:
        """(column, table title, name) of a :attr:`counted` key."""
        magic, opcode = key
        name = opcode_name(magic, opcode)
        return "opcode", "Opcodes", name if magic in REQUEST_MAGICS else name + " (response)"

    @property
    def body(self) -> Body | None:
        """The body description that applies to this frame (None if unchecked)."""
        if self.spec is None:
            return None
        if self.is_request:
            return self.spec.request
        if self.status in SUCCESS_LIKE_STATUS:
            return self.spec.response
        return None

    @property
    def status_name(self) -> str | None:
        return None if self.status is None else status_name(self.status)

    def section(self, name: str) -> Section | None:
        for s in self.sections:
            if s.name == name:
                return s
        return None

    def located(self) -> list:
        """Header fields, then one group per body section, all with absolute offsets (:mod:`.describe`)."""
        from .describe import describe

        return describe(self)

    def record(self, **extra: Any) -> dict[str, Any]:
        """Its JSON Lines object, ``extra`` first (:mod:`.record`)."""
        return frame_record(self, **extra)

    def inflated(self) -> bytes | None:
        """The value inflated from its snappy block (within the decoder's cap: it was
        inflated once already); None where it cannot be."""
        from .codecs.errors import CodecError
        from .codecs.snappy import inflate, uncompressed_length

        try:
            size, _ = uncompressed_length(self.value)
            return inflate(self.value, size)
        except CodecError:
            return None


def decode_frame(
    data: bytes,
    offset: int = 0,
    ctx: DecodeContext = DEFAULT_CONTEXT,
) -> Message:
    """Decode ``data`` (one frame, possibly cut short) found at stream ``offset``."""
    if len(data) < HEADER_SIZE:
        padded = data + bytes(HEADER_SIZE - len(data))
        msg = header_message(padded, offset)
        msg.data = data
        msg.truncated = True
        msg.problems.append(Problem(P.TRUNCATED, f"frame has {len(data)} of 24 header bytes", offset))
        return msg
    msg = header_message(data, offset)
    if ctx.headers_only:
        msg.truncated = len(data) - HEADER_SIZE < msg.body_length
        return msg
    body_have = len(data) - HEADER_SIZE
    if body_have < msg.body_length:
        msg.truncated = True
        msg.problems.append(
            Problem(P.TRUNCATED, f"body has {body_have} of {msg.body_length} bytes", offset + len(data))
        )
    need = msg.framing_length + msg.extras_length + msg.key_length
    if need > msg.body_length:
        msg.problems.append(
            Problem(
                P.LENGTHS_EXCEED_BODY,
                f"framing {msg.framing_length} + extras {msg.extras_length} + key {msg.key_length} = {need} "
                f"> total body {msg.body_length}",
                offset + 8,
            )
        )
    _decode_body(msg, ctx)
    return msg


_HEADER = struct.Struct(">BBBBBBHIIQ").unpack_from
_FLEX = frozenset((0x08, 0x18))  # what parse_header treats as flexible framing


def header_message(data: bytes, offset: int = 0) -> Message:
    """A Message of ``data``'s 24-byte header alone (at least 24 bytes): the body is not read."""
    # parse_header without its NamedTuple, Message built positionally (hot path)
    magic, opcode, b2, b3, extlen, datatype, vbs, bodylen, opaque, cas = _HEADER(data)
    framing, keylen = (b2, b3) if magic in _FLEX else (0, (b2 << 8) | b3)
    request = magic in REQUEST_MAGICS
    return Message(offset, data, magic, opcode, framing, keylen, extlen, datatype,
                   vbs if request else None, None if request else vbs, bodylen, opaque, cas,
                   (SERVER_SPECS if magic in SERVER_MAGICS else CLIENT_SPECS).get(opcode))


def _decode_body(msg: Message, ctx: DecodeContext) -> None:
    """Fields, values and problems of the body; with ``ctx.detail`` also the located sections
    and rows that tables and diagrams print (jsonl, most frames of a capture, skips them)."""
    detail = ctx.detail
    data, base = msg.data, msg.offset
    end = min(len(data), HEADER_SIZE + msg.body_length)
    body = msg.body
    pos = HEADER_SIZE
    if msg.framing_length:
        stop = min(pos + msg.framing_length, end)
        if detail:
            _section(msg, "framing_extras", pos, stop)
        _decode_framing(msg, data[pos:stop], base + pos)
        pos = stop
    stop = min(pos + msg.extras_length, end)
    if stop > pos or detail:
        _decode_extras(msg, body, data, pos, stop, _section(msg, "extras", pos, stop) if detail else None)
    pos = stop
    if body is None:
        key_kind, value_kind = "text", ("error" if msg.status not in (None, 0) else "auto")
    else:
        key_kind, value_kind = body.key_kind, body.value_kind
        if body.engine_specific and "engine_specific_length" in msg.values:
            stop = min(pos + msg.values["engine_specific_length"], end)
            _decode_engine_specific(msg, data, pos, stop,
                                    _section(msg, "engine_specific", pos, stop) if detail else None)
            pos = stop
    stop = max(pos, min(pos + msg.key_length, end))
    if detail:
        _section(msg, "key", pos, stop).fields = decode_key(msg, data[pos:stop], base + pos, key_kind, ctx)
    elif stop > pos:
        decode_key(msg, data[pos:stop], base + pos, key_kind, ctx)
    pos = stop
    msg.value = value = data[pos:end]
    out = _section(msg, "value", pos, end) if detail else None
    if value or value_kind == "snapshot_marker":
        if out is None:
            decode_value_fields(value_kind, msg, value, base + pos, ctx)
            return
        out.fields = rows = decode_value(value_kind, msg, value, base + pos, ctx)
        fields = msg.fields
        for f in rows:
            if f.name not in fields:
                fields[f.name] = f.value


def _section(msg: Message, name: str, start: int, stop: int) -> Section:
    sec = Section(name, msg.offset + start, max(0, stop - start))
    msg.sections.append(sec)
    return sec


def _decode_framing(msg: Message, raw: bytes, base: int) -> None:
    if len(raw) == 3 and raw[0] == 0x22 and msg.magic == 0x08 and (raw[1] or raw[2]):  # 0x08: a request
        # The common case on DCP: one stream-id frame info (``22 hh ll``).
        sid = (raw[1] << 8) | raw[2]
        msg.frame_infos.append({"id": 2, "name": "dcp_stream_id", "value": sid, "problem": None,
                                "offset": base, "size": 3})
        msg.stream_id = sid
        msg.fields["stream_id"] = sid
        return
    try:
        infos = parse_frame_infos(raw)
    except CodecError as exc:
        msg.problems.append(Problem(P.FRAME_INFO_ENCODING, str(exc), base))
        return
    for fi in infos:
        info = describe_frame_info(fi, msg.is_request)
        info["offset"] = base + fi.offset
        info["size"] = fi.header_size + fi.length
        msg.frame_infos.append(info)
        if info.get("problem"):
            msg.problems.append(Problem(P.FRAME_INFO_INVALID, f"{info['name']}: {info['problem']}", base + fi.offset))
        if msg.is_request and info["id"] == 2 and isinstance(info.get("value"), int):
            msg.stream_id = info["value"]
    if msg.stream_id is not None:
        msg.fields["stream_id"] = msg.stream_id
    if msg.magic not in FLEX_MAGICS:
        msg.problems.append(Problem(P.FRAME_INFO_ENCODING, "framing extras on a non-flexible magic", base))


def _decode_extras(msg: Message, body: Body | None, data: bytes, start: int, stop: int,
                   section: Section | None) -> None:
    layout = None
    if body is not None and body.extras is not None and stop > start and stop - start == msg.extras_length:
        layout = body.extras.get(stop - start)
    if layout is None:
        if section is not None and stop > start:
            section.fields = [_blob("extras", "Extras", data[start:stop], msg.offset + start)]
        return
    if section is not None:
        section.layout = layout  # rows are built from it only when printed (describe.py)
    values, fields = layout.decode(data, start)
    # the extras come first: take the fresh dicts rather than copy them over empty ones
    if msg.values:
        msg.values.update(values)
    else:
        msg.values = values
    if msg.fields:
        msg.fields.update(fields)
    else:
        msg.fields = fields


def _decode_engine_specific(msg: Message, data: bytes, start: int, stop: int, section: Section | None) -> None:
    for layout in ENGINE_LAYOUTS.get(msg.opcode, ()):
        if layout.size == stop - start:
            if section is not None:
                section.layout = layout
            values, fields = layout.decode(data, start)
            msg.values.update(values)
            msg.fields.update(fields)
            return
    if section is not None and stop > start:
        section.fields = [_blob("engine_specific", "Engine specific", data[start:stop], msg.offset + start)]


def _blob(name: str, label: str, raw: bytes, offset: int) -> Field:
    return Field(name, label, offset, len(raw), raw.hex(), raw.hex(" ") if raw else "(empty)")

