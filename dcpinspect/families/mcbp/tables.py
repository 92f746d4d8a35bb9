"""MCBP's part in bulk engines (``analyze``): the columns of its frames in the ``frames``
table."""

from __future__ import annotations

from .. import Table

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
