"""An MCBP message as a JSON Lines record: the schema of ``kind: "frame"`` objects for
MCBP, DCP and TAP frames (docs/jsonl-schema.md), its field names the layouts'."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .header import HEADER_SIZE, absent_fields
from .names import MAGICS, REQUEST_MAGICS

if TYPE_CHECKING:
    from .frame import Message

_PROTOCOLS = {"dcp": "dcp", "tap": "tap"}  # spec family → protocol; the rest is "mcbp"


def protocol_of(msg: "Message") -> str:
    return "mcbp" if msg.spec is None else protocol_of_family(msg.spec.family)


def protocol_of_family(family: str) -> str:
    return _PROTOCOLS.get(family, "mcbp")


def frame_record(msg: "Message", **extra: Any) -> dict[str, Any]:
    # One frame of jsonl output per frame of the capture: built as few dict literals in
    # the schema's key order (a key of ``extra`` the record also sets keeps its place).
    spec = msg.spec
    magic = msg.magic
    if magic in REQUEST_MAGICS:
        rec = {**extra, "protocol": "mcbp" if spec is None else _PROTOCOLS.get(spec.family, "mcbp"),
               "offset": msg.offset, "length": len(msg.data), "magic": magic,
               "magic_name": MAGICS.get(magic, "Unknown"), "opcode": msg.opcode, "opcode_name": msg.name,
               "vbucket": msg.vbucket, "opaque": msg.opaque, "cas": msg.cas, "datatype": msg.datatype}
    else:
        rec = {**extra, "protocol": "mcbp" if spec is None else _PROTOCOLS.get(spec.family, "mcbp"),
               "offset": msg.offset, "length": len(msg.data), "magic": magic,
               "magic_name": MAGICS.get(magic, "Unknown"), "opcode": msg.opcode, "opcode_name": msg.name,
               "status": msg.status, "status_name": msg.status_name, "opaque": msg.opaque, "cas": msg.cas,
               "datatype": msg.datatype}
    fields = msg.fields
    rec["key"] = fields.get("key", "")
    if msg.collection_id is not None:
        rec["collection_id"] = msg.collection_id
    if msg.stream_id is not None:
        rec["stream_id"] = msg.stream_id
    if msg.frame_infos:
        rec["frame_infos"] = [_frame_info(fi) for fi in msg.frame_infos]
    rec["truncated"] = msg.truncated
    rec["fields"] = fields = fields.copy()  # all but the key, in their order
    fields.pop("key", None)
    rec["findings"] = [f.to_json() for f in msg.findings] if msg.findings else []
    if len(msg.data) < HEADER_SIZE:  # cut inside its header: what is not there is null, not 0
        for name in absent_fields(magic, len(msg.data)):
            if name in rec:
                rec[name] = None
                if name + "_name" in rec:
                    rec[name + "_name"] = None
    return rec


def _frame_info(fi: dict) -> dict:
    """A frame info without its location (offset and size belong to tables and diagrams),
    and with ``problem`` only when there is one."""
    out = fi.copy()
    out.pop("offset", None)
    out.pop("size", None)
    if out.get("problem", 0) is None:
        del out["problem"]
    return out
