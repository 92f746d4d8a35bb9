"""Classic memcached / Couchbase KV operations (kv_engine `docs/BinaryProtocol.md`)."""

from __future__ import annotations

from .catalog import ANY, EMPTY, FORBIDDEN, OPTIONAL, REQUIRED, Body, OpSpec, extras
from ....messages.layout import Layout, seqno, u32, u64, u8
from .names import OPCODES, VBUCKET_STATES

ITEM_FLAGS = Layout("item_flags", u32("flags", "Flags"))
STORE = Layout("store", u32("flags", "Flags"), u32("expiration", "Expiration", show="both"))
MUTATION_SEQNO = Layout("mutation_seqno", u64("vbucket_uuid", "Vbucket UUID"), seqno("seqno", "Seqno"))
ARITHMETIC = Layout(
    "arithmetic",
    u64("delta", "Delta", show="both"),
    u64("initial", "Initial value", show="both"),
    u32("expiration", "Expiration", show="both"),
)
EXPIRATION = Layout("expiration", u32("expiration", "Expiration", show="both"))
VERBOSITY = Layout("verbosity", u32("level", "Level", show="dec"))
LOCK_TIME = Layout("lock_time", u32("lock_time", "Lock time", show="both"))
VBUCKET_STATE = Layout("vbucket_state", u32("vbucket_state", "Vbucket state", enum=VBUCKET_STATES))
VBUCKET_STATE_COLLECTION = Layout(
    "vbucket_state_collection",
    u32("vbucket_state", "Vbucket state", enum=VBUCKET_STATES),
    u32("collection_id", "Collection ID"),
)
SET_VBUCKET = Layout("set_vbucket", u8("vbucket_state", "Vbucket state", enum=VBUCKET_STATES))

_DOC_KEY = dict(key=REQUIRED, key_kind="document")
_MUTATION_RESPONSE = Body(extras(MUTATION_SEQNO, sizes=(0,)))
_GET = OpSpec(0, "", Body(**_DOC_KEY), Body(extras(ITEM_FLAGS), key=OPTIONAL, value=OPTIONAL, value_kind="document"))
_STORE = OpSpec(0, "", Body(extras(STORE), value=OPTIONAL, value_kind="document", **_DOC_KEY), _MUTATION_RESPONSE)
_DELETE = OpSpec(0, "", Body(**_DOC_KEY), _MUTATION_RESPONSE)
_ARITH = OpSpec(0, "", Body(extras(ARITHMETIC), **_DOC_KEY), Body(extras(MUTATION_SEQNO, sizes=(0,)), value=OPTIONAL, value_kind="counter"))
_CONCAT = OpSpec(0, "", Body(value=REQUIRED, value_kind="document", **_DOC_KEY), _MUTATION_RESPONSE)
_GAT = OpSpec(0, "", Body(extras(EXPIRATION), **_DOC_KEY), Body(extras(ITEM_FLAGS), key=OPTIONAL, value=OPTIONAL, value_kind="document"))

_SHAPES: dict[int, OpSpec] = {
    **{op: _GET for op in (0x00, 0x09, 0x0C, 0x0D, 0x83)},
    **{op: _STORE for op in (0x01, 0x02, 0x03, 0x11, 0x12, 0x13)},
    **{op: _DELETE for op in (0x04, 0x14)},
    **{op: _ARITH for op in (0x05, 0x06, 0x15, 0x16)},
    **{op: _CONCAT for op in (0x0E, 0x0F, 0x19, 0x1A)},
    **{op: _GAT for op in (0x1D, 0x1E)},
    0x07: OpSpec(0, "", EMPTY, EMPTY),
    0x17: OpSpec(0, "", EMPTY, EMPTY),
    0x0A: OpSpec(0, "", EMPTY, EMPTY),
    0x08: OpSpec(0, "", Body(extras(EXPIRATION, sizes=(0,))), EMPTY),
    0x18: OpSpec(0, "", Body(extras(EXPIRATION, sizes=(0,))), EMPTY),
    0x0B: OpSpec(0, "", EMPTY, Body(value=OPTIONAL, value_kind="text")),
    0x10: OpSpec(0, "", Body(key=OPTIONAL, value=OPTIONAL, value_kind="text"), Body(key=OPTIONAL, value=OPTIONAL, value_kind="text")),
    0x1B: OpSpec(0, "", Body(extras(VERBOSITY)), EMPTY),
    0x1C: OpSpec(0, "", Body(extras(EXPIRATION), **_DOC_KEY), Body(extras(MUTATION_SEQNO, sizes=(0,)))),
    0x1F: OpSpec(0, "", Body(key=OPTIONAL, value=OPTIONAL, value_kind="features"), Body(value=OPTIONAL, value_kind="features")),
    0x20: OpSpec(0, "", EMPTY, Body(value=OPTIONAL, value_kind="text")),
    0x21: OpSpec(0, "", Body(key=REQUIRED, value=OPTIONAL, value_kind="sasl"), Body(value=OPTIONAL, value_kind="text")),
    0x22: OpSpec(0, "", Body(key=REQUIRED, value=OPTIONAL, value_kind="sasl"), Body(value=OPTIONAL, value_kind="text")),
    0x3D: OpSpec(0, "", Body(extras(SET_VBUCKET, sizes=(0,)), value=OPTIONAL, value_kind="json"), EMPTY),
    0x48: OpSpec(0, "", Body(extras(VBUCKET_STATE, VBUCKET_STATE_COLLECTION, sizes=(0,))), Body(value=OPTIONAL, value_kind="vbucket_seqnos")),
    0x89: OpSpec(0, "", Body(key=REQUIRED), EMPTY),
    0x93: OpSpec(0, "", Body(**_DOC_KEY), EMPTY),
    0x94: OpSpec(0, "", Body(extras(LOCK_TIME, sizes=(0,)), **_DOC_KEY), Body(extras(ITEM_FLAGS), value=OPTIONAL, value_kind="document")),
    0x95: OpSpec(0, "", Body(**_DOC_KEY), _MUTATION_RESPONSE),
    0x96: OpSpec(0, "", EMPTY, Body(value=OPTIONAL, value_kind="failover_log")),
    0xB5: OpSpec(0, "", ANY, Body(extras=None, value=OPTIONAL, value_kind="json")),
    0xFE: OpSpec(0, "", Body(value=REQUIRED, value_kind="u16"), Body(value=OPTIONAL, value_kind="json")),
}

#: Opcodes whose key is a document key although they are not given a shape above.
_DOCUMENT_ANY = (0x49, 0x4A, 0x91, 0x92, 0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA8, 0xA9, 0xB2, *range(0xC5, 0xD4))

#: What a client sends first on a connection: HELO, the SASL steps, SELECT_BUCKET.
_OPENERS = frozenset({0x1F, 0x20, 0x21, 0x89})

SPECS = tuple(
    OpSpec(op, OPCODES[op], shape.request, shape.response, "mcbp", opens_connection=op in _OPENERS)
    for op, shape in sorted(_SHAPES.items())
) + tuple(
    OpSpec(op, OPCODES[op], Body(extras=None, key=OPTIONAL, key_kind="document", value=OPTIONAL), ANY, "mcbp")
    for op in _DOCUMENT_ANY
)
