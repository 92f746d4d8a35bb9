"""JSON Lines: one object per frame, the stable machine-readable schema."""

from __future__ import annotations

import json
from typing import Any

from ..messages.frame import Message
from ..messages.names import MAGICS

SCHEMA_VERSION = 1


def protocol_of(msg: Message) -> str:
    if msg.spec is None:
        return "mcbp"
    return {"dcp": "dcp", "tap": "tap"}.get(msg.spec.family, "mcbp")


def frame_record(msg: Message, **extra: Any) -> dict[str, Any]:
    rec: dict[str, Any] = dict(extra)
    rec.update(
        protocol=protocol_of(msg),
        offset=msg.offset,
        length=msg.size,
        magic=msg.magic,
        magic_name=MAGICS.get(msg.magic, "Unknown"),
        opcode=msg.opcode,
        opcode_name=msg.name,
    )
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
        rec["frame_infos"] = [{k: v for k, v in fi.items() if k not in ("offset", "size")} for fi in msg.frame_infos]
    rec["truncated"] = msg.truncated
    rec["fields"] = {k: v for k, v in msg.fields.items() if k != "key"}
    rec["findings"] = [f.to_json() for f in msg.findings]
    return rec


# json.dumps(record, ensure_ascii=True, separators=(",", ":"), default=str) with the C encoder
# made once, not per call (records are trees of dicts, lists and scalars: no cycles to check)
_ENCODE = json.encoder.c_make_encoder(
    None, str, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, True
) if json.encoder.c_make_encoder is not None else None


def dumps(record: dict[str, Any]) -> str:
    if _ENCODE is None:
        return json.dumps(record, ensure_ascii=True, separators=(",", ":"), default=str)
    return "".join(_ENCODE(record, 0))
