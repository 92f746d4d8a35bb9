"""Values of DCP_SYSTEM_EVENT (0x5f): binary v0/v1 (§9.2) and FlatBuffers v2 (§9.3)."""

import struct

import flatbuffers
from flatbuffers import encode
from flatbuffers import number_types as N
from flatbuffers.table import Table

from .errors import CodecError

SYSTEM_EVENT_IDS = {
    0: "begin_collection",
    1: "end_collection",
    2: "flush_collection",  # reserved: pre-7.0 dev builds only
    3: "create_scope",
    4: "drop_scope",
    5: "modify_collection",  # FlatBuffers (version 2) only
}
RESERVED_EVENT_IDS = {2}
VERSIONS = (0, 1, 2)

# Version 0/1: big-endian structs.  (event, version) -> (struct format, field names)
# Only BeginCollection changes layout with version 1; the others keep their v0 layout.
_COLLECTION_IDS = (">QII", ("manifest_uid", "scope_id", "collection_id"))
_SCOPE_IDS = (">QI", ("manifest_uid", "scope_id"))
_BINARY_LAYOUTS = {
    (0, 0): _COLLECTION_IDS,
    (0, 1): (">QIII", ("manifest_uid", "scope_id", "collection_id", "max_ttl")),
    (1, 0): _COLLECTION_IDS,
    (1, 1): _COLLECTION_IDS,
    (3, 0): _SCOPE_IDS,
    (3, 1): _SCOPE_IDS,
    (4, 0): _SCOPE_IDS,
    (4, 1): _SCOPE_IDS,
}

# Version 2: FlatBuffers tables of engines/ep/src/collections/events.fbs.
# Each field: (name, kind, default) in vtable slot order; kind None = string.
_UID = ("manifest_uid", N.Uint64Flags, 0)
_SCOPE = ("scope_id", N.Uint32Flags, 0)
_CID = ("collection_id", N.Uint32Flags, 0)
_NAME = ("name", None, None)
COLLECTION = (
    _UID, _SCOPE, _CID,
    ("ttl_valid", N.BoolFlags, False),
    ("max_ttl", N.Uint32Flags, 0),
    _NAME,
    ("history", N.BoolFlags, False),
    ("default_collection_mvs", N.Uint64Flags, 0),
    ("metered", N.BoolFlags, False),
    ("flush_uid", N.Uint64Flags, 0),
)
DROPPED_COLLECTION = (_UID, _SCOPE, _CID, ("system_collection", N.BoolFlags, False))
SCOPE = (_UID, _SCOPE, _NAME)
DROPPED_SCOPE = (_UID, _SCOPE, ("system_scope", N.BoolFlags, False))
FLATBUFFER_TABLES = {0: COLLECTION, 1: DROPPED_COLLECTION, 3: SCOPE, 4: DROPPED_SCOPE, 5: COLLECTION}


def _check_event(event_id: int, version: int) -> None:
    if event_id not in SYSTEM_EVENT_IDS:
        raise CodecError(f"unknown system event id {event_id}")
    if event_id in RESERVED_EVENT_IDS:
        raise CodecError(f"system event {event_id} ({SYSTEM_EVENT_IDS[event_id]}) is reserved")
    if version not in VERSIONS:
        raise CodecError(f"unknown system event version {version}")
    if event_id == 5 and version < 2:
        raise CodecError(f"modify_collection requires version 2 (got {version})")


def _need(pos: int, size: int, total: int, what: str) -> None:
    if pos < 0 or pos + size > total:
        raise CodecError(f"flatbuffer {what} at {pos} (+{size}) lies outside the {total}-byte buffer")


def _read_string(tab: Table, pos: int) -> str:
    buf = tab.Bytes
    start = pos + tab.Get(N.UOffsetTFlags, pos)
    _need(start, 4, len(buf), "string length")
    length = tab.Get(N.Uint32Flags, start)
    _need(start + 4, length + 1, len(buf), "string")
    if buf[start + 4 + length] != 0:
        raise CodecError("flatbuffer string is not NUL-terminated")
    try:
        return bytes(buf[start + 4:start + 4 + length]).decode("utf-8")
    except UnicodeDecodeError:
        raise CodecError("flatbuffer string is not valid UTF-8") from None


def _read_table(buf: bytes, fields: tuple) -> dict:
    total = len(buf)
    _need(0, 4, total, "root offset")
    root = encode.Get(N.UOffsetTFlags.packer_type, buf, 0)
    _need(root, 4, total, "root table")
    tab = Table(buf, root)
    vtable = root - tab.Get(N.SOffsetTFlags, root)
    _need(vtable, 4, total, "vtable header")
    vtable_len = tab.Get(N.VOffsetTFlags, vtable)
    table_len = tab.Get(N.VOffsetTFlags, vtable + 2)
    if vtable_len < 4 or vtable_len % 2:
        raise CodecError(f"flatbuffer vtable length {vtable_len} is invalid")
    _need(vtable, vtable_len, total, "vtable")
    if table_len < 4:
        raise CodecError(f"flatbuffer table length {table_len} is invalid")
    _need(root, table_len, total, "table")
    out = {}
    for slot, (name, kind, default) in enumerate(fields):
        offset = tab.Offset(4 + 2 * slot)
        if offset == 0:
            out[name] = default
            continue
        size = 4 if kind is None else kind.bytewidth
        if offset < 4 or offset + size > table_len:
            raise CodecError(f"flatbuffer field {name} at table offset {offset} lies outside the table")
        out[name] = _read_string(tab, root + offset) if kind is None else tab.Get(kind, root + offset)
    return out


def decode_sysevent_value(event_id: int, version: int, value: bytes | memoryview) -> dict:
    """Decode a system-event value to a dict of its fields (names as in §9)."""
    _check_event(event_id, version)
    data = bytes(value)
    if version == 2:
        return _read_table(data, FLATBUFFER_TABLES[event_id])
    fmt, names = _BINARY_LAYOUTS[(event_id, version)]
    expected = struct.calcsize(fmt)
    if len(data) != expected:
        raise CodecError(
            f"{SYSTEM_EVENT_IDS[event_id]} v{version} value must be {expected} bytes (got {len(data)})")
    return dict(zip(names, struct.unpack(fmt, data)))


def _check_fields(names: list[str], fields: dict) -> None:
    unknown = sorted(set(fields) - set(names))
    if unknown:
        raise CodecError(f"unknown system event field(s): {', '.join(unknown)}")


def _encode_table(table: tuple, fields: dict) -> bytes:
    builder = flatbuffers.Builder(0)
    name = fields.get("name")
    if name is not None and not isinstance(name, str):
        raise CodecError(f"name={name!r} is not a string")
    name_offset = builder.CreateString(name) if name is not None else None
    builder.StartObject(len(table))
    for slot, (field, kind, default) in enumerate(table):
        if kind is None:
            if name_offset is not None:
                builder.PrependUOffsetTRelativeSlot(slot, name_offset, 0)
            continue
        value = fields.get(field, default)
        if kind is N.BoolFlags:
            builder.PrependBoolSlot(slot, bool(value), default)
        elif not isinstance(value, int) or not 0 <= value < 1 << (8 * kind.bytewidth):
            raise CodecError(f"{field}={value!r} does not fit {kind.bytewidth * 8} bits")
        else:
            builder.PrependSlot(kind, slot, value, default)
    builder.Finish(builder.EndObject())
    return bytes(builder.Output())


def encode_sysevent_value(event_id: int, version: int, **fields) -> bytes:
    """Encode a system-event value; absent fields take their defaults (0/False/no name)."""
    _check_event(event_id, version)
    if version == 2:
        table = FLATBUFFER_TABLES[event_id]
        _check_fields([f[0] for f in table], fields)
        return _encode_table(table, fields)
    fmt, names = _BINARY_LAYOUTS[(event_id, version)]
    _check_fields(list(names), fields)
    try:
        return struct.pack(fmt, *(fields.get(name, 0) for name in names))
    except struct.error as exc:
        raise CodecError(f"cannot encode {SYSTEM_EVENT_IDS[event_id]} v{version}: {exc}") from None
