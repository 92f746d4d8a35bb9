"""Legacy TAP messages (opcodes 0x40–0x47; spec/tap.md, spec/dcp.md §13).

Server→client TAP messages carry an 8-byte TAP header as extras whose first
field counts engine-specific bytes that sit between the extras and the key.
"""

from __future__ import annotations

from .catalog import OPTIONAL, REQUIRED, Body, OpSpec, extras
from ....messages.layout import Layout, raw, seqno, u8, u16, u32
from .names import VBUCKET_STATES

TAP_CONNECT_FLAGS = {
    0x01: "Backfill",
    0x02: "Dump",
    0x04: "ListVbuckets",
    0x08: "TakeoverVbuckets",
    0x10: "SupportAck",
    0x20: "KeysOnly",
    0x40: "Checkpoint",
    0x80: "RegisteredClient",
    0x100: "FixFlagByteorder",
}
TAP_FLAGS = {0x01: "Ack", 0x02: "NoValue", 0x04: "NetworkByteOrder"}
TAP_OPAQUE_CODES = {
    0: "EnableAutoNack",
    1: "InitialVbucketStream",
    2: "EnableCheckpointSync",
    3: "OpenCheckpoint",
    4: "CompleteVbFilterChange",
    7: "CloseTapStream",
    8: "CloseBackfill",
}

CONNECT = Layout("tap_connect", u32("flags", "Flags", flags=TAP_CONNECT_FLAGS))
_HEADER = (
    u16("engine_specific_length", "Engine specific length", show="dec"),
    u16("tap_flags", "TAP flags", flags=TAP_FLAGS),
    u8("ttl", "TTL", show="dec"),
    raw("reserved", 3, "Reserved"),
)
HEADER = Layout("tap_header", *_HEADER)
ITEM = Layout(
    "tap_item", *_HEADER, u32("item_flags", "Item flags"), u32("expiration", "Expiration", show="both")
)

#: Engine-specific section layouts by opcode and length (ep-engine's `TapEngineSpecific`).
ENGINE_REV = Layout("tap_engine_rev", seqno("rev_seqno", "Rev Seqno"))
ENGINE_REV_NRU = Layout("tap_engine_rev_nru", seqno("rev_seqno", "Rev Seqno"), u8("nru", "Nru", show="dec"))
ENGINE_OPAQUE = Layout("tap_engine_opaque", u32("opaque_code", "Opaque code", enum=TAP_OPAQUE_CODES))
ENGINE_VBUCKET_STATE = Layout("tap_engine_vbucket_state", u32("vbucket_state", "Vbucket state", enum=VBUCKET_STATES))
ENGINE_LAYOUTS = {
    0x41: (ENGINE_REV, ENGINE_REV_NRU),
    0x42: (ENGINE_REV,),
    0x44: (ENGINE_OPAQUE,),
    0x45: (ENGINE_VBUCKET_STATE,),
    0x46: (ENGINE_REV,),
    0x47: (ENGINE_REV,),
}

_ACK = Body(extras=None, key=OPTIONAL, value=OPTIONAL)


def _item(opcode: int, name: str, layout: Layout, value_kind: str = "document") -> OpSpec:
    body = Body(extras(layout), key=OPTIONAL, key_kind="binary", value=OPTIONAL, value_kind=value_kind, engine_specific=True)
    return OpSpec(opcode, name, body, _ACK, "tap")


SPECS = (
    OpSpec(0x40, "TAP_CONNECT", Body(extras(CONNECT, sizes=(0,)), key=OPTIONAL, value=OPTIONAL, value_kind="tap_connect"), _ACK, "tap",
           opens_connection=True),
    _item(0x41, "TAP_MUTATION", ITEM),
    _item(0x42, "TAP_DELETE", HEADER),
    _item(0x43, "TAP_FLUSH", HEADER),
    _item(0x44, "TAP_OPAQUE", HEADER),
    _item(0x45, "TAP_VBUCKET_SET", HEADER),
    _item(0x46, "TAP_CHECKPOINT_START", ITEM, "checkpoint_id"),
    _item(0x47, "TAP_CHECKPOINT_END", ITEM, "checkpoint_id"),
)
