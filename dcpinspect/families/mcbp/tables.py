"""MCBP's part in bulk engines (``analyze``): the columns of its frames in the ``frames``
table, and the messages the jsonl lane's lines stand for, as the statistics count them."""

from __future__ import annotations

from ...messages.catalog import Body
from ...messages.names import REQUEST_MAGICS, SERVER_MAGICS, status_name
from ...messages.registry import CLIENT_SPECS, SERVER_SPECS
from .. import Table

try:
    from orjson import loads as _loads
except ImportError:  # orjson is a dependency; the standard library's reader does the same
    from json import loads as _loads

PROTOCOLS = ("mcbp", "dcp", "tap")

#: the ``frames`` table's columns of an MCBP frame, from its JSON Lines object
FRAMES = Table("frames", "frame", PROTOCOLS, (
    ("magic", "int", "magic"), ("opcode", "int", "opcode"), ("name", "string", "opcode_name"),
    ("status", "int", "status"), ("vbucket", "int", "vbucket"), ("opaque", "bigint", "opaque"),
    ("cas", "uint64", "cas"), ("stream_id", "int", "stream_id"), ("collection_id", "bigint", "collection_id"),
    ("doc_key", "string", "key"), ("by_seqno", "uint64", "fields.by_seqno"),
    ("rev_seqno", "uint64", "fields.rev_seqno"), ("start_seqno", "uint64", "fields.start_seqno"),
    ("end_seqno", "uint64", "fields.end_seqno"),
))
TABLES = (FRAMES,)


class LineMessage:
    """What the statistics read of a frame the lane wrote a line for, from that line's
    object: header members, fields (as JSON has them) and values (the layouts' raw
    integers: flags and enumerations turned back from their names)."""

    __slots__ = ("magic", "opcode", "spec", "name", "vbucket", "status", "opaque", "cas", "stream_id", "fields",
                 "values", "size", "findings", "truncated")

    def __init__(self, rec: dict) -> None:
        magic = self.magic = rec["magic"]
        opcode = self.opcode = rec["opcode"]
        spec = self.spec = (SERVER_SPECS if magic in SERVER_MAGICS else CLIENT_SPECS).get(opcode)
        self.name = rec["opcode_name"]
        self.vbucket = rec.get("vbucket")
        self.status = rec.get("status")
        self.opaque = rec["opaque"]
        self.cas = rec["cas"]
        self.stream_id = rec.get("stream_id")
        self.fields = fields = rec["fields"]
        self.size = rec["length"]
        self.findings = rec["findings"]
        self.truncated = rec["truncated"]
        self.values = _values(spec, magic in REQUEST_MAGICS, self.status, fields)

    @property
    def is_request(self) -> bool:
        return self.magic in REQUEST_MAGICS

    @property
    def status_name(self) -> str | None:
        return None if self.status is None else status_name(self.status)


def line_message(line: bytes) -> tuple[float, int, LineMessage]:
    """The time, capture frame number and message of a line of the lane, the message as far
    as the statistics read it. The value's text (the last of ``fields``, which the
    statistics do not read) is left unparsed when the line allows; a line the lane wrote
    has no findings."""
    cut = line.find(_VALUE)
    if cut < 0:
        cut = line.find(_VALUE_HEX)
    rec = None
    if cut > 0:
        try:
            rec = _loads(line[:cut] + b'},"findings":[]}')
        except ValueError:
            rec = None
    if rec is None:
        rec = _loads(line)
    return rec["ts"], rec["frame"], LineMessage(rec)


_VALUE, _VALUE_HEX = b',"value":"', b',"value_hex":"'


#: by (opcode, request): the fields of its layouts shown by name (flags, enumerations)
_NAMED: dict[tuple, dict] = {}


def _values(spec, request: bool, status, fields: dict) -> dict:
    """The raw integers of a frame's fixed fields from their JSON forms: the fields
    themselves where none is shown by name (then the non-integers among them are never read)."""
    if spec is None:
        return {}
    named = _NAMED.get((spec.opcode, request))
    if named is None:
        named = _NAMED[(spec.opcode, request)] = _named_fields(spec.request if request else spec.response)
    if not named or named.keys().isdisjoint(fields):
        return fields
    out = dict(fields)
    for name in named.keys() & fields.keys():
        fs, shown = named[name], fields[name]
        if fs.flags is not None and isinstance(shown, list):
            by_name = {v: k for k, v in fs.flags.items()}
            out[name] = sum(by_name[n] if n in by_name else int(n, 16) for n in shown)
        elif fs.enum is not None and isinstance(shown, str):
            out[name] = next((k for k, v in fs.enum.items() if v == shown), shown)
    return out


def _named_fields(body: Body | None) -> dict:
    """The fields of a body's extras layouts (any size) shown by name in JSON, by name."""
    out: dict = {}
    for layout in ((body.extras or {}).values() if body is not None else ()):
        if layout is not None:
            for fs in layout.fields:
                if fs.flags is not None or fs.enum is not None:
                    out.setdefault(fs.name, fs)
    return out
