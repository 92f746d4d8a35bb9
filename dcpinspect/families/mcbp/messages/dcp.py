"""DCP message layouts (spec/dcp.md §8–9, kv_engine `protocol_binary.h` payload structs)."""

from __future__ import annotations

from .catalog import EMPTY, FORBIDDEN, OPTIONAL, REQUIRED, Body, OpSpec, extras
from ....messages.layout import Layout, raw, seqno, u8, u16, u32, u64
from .names import VBUCKET_STATES

OPEN_FLAGS = {
    0x001: "Producer",
    0x002: "Notifier (invalid since 7.0)",
    0x004: "IncludeXattrs",
    0x008: "NoValue",
    0x010: "Unused (5.5-dev collections)",
    0x020: "IncludeDeleteTimes",
    0x040: "NoValueWithUnderlyingDatatype",
    0x080: "PiTR (removed)",
    0x100: "IncludeDeletedUserXattrs",
    0x200: "SkipDeletesInInitialBackfill",
}
OPEN_FLAGS_INVALID = 0x002 | 0x010 | 0x080

STREAM_FLAGS = {
    0x01: "TakeOver",
    0x02: "DiskOnly",
    0x04: "ToLatest",
    0x08: "NoValue (removed)",
    0x10: "ActiveVbOnly",
    0x20: "StrictVbUuid",
    0x40: "FromLatest",
    0x80: "IgnorePurgedTombstones",
    0x100: "CacheTransfer",
}
STREAM_FLAGS_INVALID = 0x08

SNAPSHOT_FLAGS = {
    0x01: "Memory",
    0x02: "Disk",
    0x04: "Checkpoint",
    0x08: "Acknowledge",
    0x10: "History",
    0x20: "MayContainDuplicates",
}
SNAPSHOT_MEMORY, SNAPSHOT_DISK, SNAPSHOT_CHECKPOINT = 0x01, 0x02, 0x04
SNAPSHOT_ACK, SNAPSHOT_HISTORY, SNAPSHOT_MAY_DUPLICATE = 0x08, 0x10, 0x20

SNAPSHOT_VERSIONS = {0x00: "v2.0", 0x01: "v2.1 (removed)", 0x02: "v2.2"}
#: the v2 marker version DCP_CONTROL max_marker_version=2.2 must allow
SNAPSHOT_VERSION_22 = 0x02

STREAM_END_REASONS = {
    0: "Ok",
    1: "Closed",
    2: "StateChanged",
    3: "Disconnected",
    4: "Slow",
    5: "BackfillFail",
    6: "Rollback",
    7: "FilterEmpty",
    8: "LostPrivileges",
}

SYSTEM_EVENTS = {
    0: "BeginCollection",
    1: "EndCollection",
    2: "FlushCollection (reserved)",
    3: "CreateScope",
    4: "DropScope",
    5: "ModifyCollection",
}

DURABILITY_LEVELS = {1: "Majority", 2: "MajorityAndPersistOnMaster", 3: "PersistToMajority"}
OSO_FLAGS = {0x01: "Start", 0x02: "End"}
OSO_START, OSO_END = 0x01, 0x02

OPEN = Layout("dcp_open", u32("seqno", "Seqno (unused)"), u32("flags", "Flags", flags=OPEN_FLAGS))
ADD_STREAM = Layout("dcp_add_stream", u32("flags", "Flags", flags=STREAM_FLAGS))
ADD_STREAM_RESPONSE = Layout("dcp_add_stream_response", u32("stream_opaque", "Stream opaque"))
STREAM_REQ = Layout(
    "dcp_stream_req",
    u32("flags", "Flags", flags=STREAM_FLAGS),
    u32("reserved", "Reserved"),
    seqno("start_seqno", "Start Seqno"),
    seqno("end_seqno", "End Seqno"),
    u64("vbucket_uuid", "Vbucket UUID"),
    seqno("snap_start_seqno", "Snapshot Start Seqno"),
    seqno("snap_end_seqno", "Snapshot End Seqno"),
)
STREAM_END = Layout("dcp_stream_end", u32("reason", "Reason", enum=STREAM_END_REASONS))
SNAPSHOT_V1 = Layout(
    "dcp_snapshot_marker_v1",
    seqno("start_seqno", "Start Seqno"),
    seqno("end_seqno", "End Seqno"),
    u32("snapshot_type", "Snapshot Type", flags=SNAPSHOT_FLAGS),
)
SNAPSHOT_V2_EXTRAS = Layout("dcp_snapshot_marker_v2_extras", u8("version", "Version", enum=SNAPSHOT_VERSIONS))
_SNAP_V20_FIELDS = (
    seqno("start_seqno", "Start Seqno"),
    seqno("end_seqno", "End Seqno"),
    u32("snapshot_type", "Snapshot Type", flags=SNAPSHOT_FLAGS),
    seqno("max_visible_seqno", "Max Visible Seqno"),
    seqno("high_completed_seqno", "High Completed Seqno"),
)
SNAPSHOT_V20 = Layout("dcp_snapshot_marker_v2_0", *_SNAP_V20_FIELDS)
SNAPSHOT_V21 = Layout("dcp_snapshot_marker_v2_1", *_SNAP_V20_FIELDS, u64("timestamp", "Timestamp"))
SNAPSHOT_V22 = Layout(
    "dcp_snapshot_marker_v2_2",
    *_SNAP_V20_FIELDS,
    seqno("purge_seqno", "Purge Seqno"),
    seqno("high_prepared_seqno", "High Prepared Seqno"),
)
SNAPSHOT_VALUE_BY_VERSION = {0x00: SNAPSHOT_V20, 0x01: SNAPSHOT_V21, 0x02: SNAPSHOT_V22}
#: Versions a producer no longer sends (spec/dcp.md §8.7).
SNAPSHOT_REMOVED_VERSIONS = {0x01: ("v2.1", "8.0")}  # version: (name, release that removed it)

_DOCUMENT_META = (
    seqno("by_seqno", "By Seqno"),
    seqno("rev_seqno", "Rev Seqno"),
    u32("flags", "Flags"),
    u32("expiration", "Expiration", show="both"),
    u32("lock_time", "Lock time", show="both"),
)
MUTATION = Layout(
    "dcp_mutation",
    *_DOCUMENT_META,
    u16("nmeta", "Nmeta", show="dec"),
    u8("nru", "Nru", show="dec"),
)
DELETION_V1 = Layout(
    "dcp_deletion_v1",
    seqno("by_seqno", "By Seqno"),
    seqno("rev_seqno", "Rev Seqno"),
    u16("nmeta", "Nmeta", show="dec"),
)
DELETION_V2 = Layout(
    "dcp_deletion_v2",
    seqno("by_seqno", "By Seqno"),
    seqno("rev_seqno", "Rev Seqno"),
    u32("delete_time", "Delete time", show="both"),
    u8("unused", "Unused"),
)
EXPIRATION = Layout(
    "dcp_expiration",
    seqno("by_seqno", "By Seqno"),
    seqno("rev_seqno", "Rev Seqno"),
    u32("delete_time", "Delete time", show="both"),
)
EXPIRATION_LEGACY = Layout(
    "dcp_expiration_legacy",
    seqno("by_seqno", "By Seqno"),
    seqno("rev_seqno", "Rev Seqno"),
    u16("nmeta", "Nmeta", show="dec"),
)
SET_VBUCKET_STATE = Layout("dcp_set_vbucket_state", u8("state", "State", enum=VBUCKET_STATES))
BUFFER_ACK = Layout("dcp_buffer_ack", u32("buffer_bytes", "Buffer bytes", show="both"))
SYSTEM_EVENT = Layout(
    "dcp_system_event",
    seqno("by_seqno", "By Seqno"),
    u32("event", "Event", enum=SYSTEM_EVENTS),
    u8("version", "Version", show="dec"),
)
PREPARE = Layout(
    "dcp_prepare",
    *_DOCUMENT_META,
    u8("nru", "Nru", show="dec"),
    u8("deleted", "Deleted", show="dec"),
    u8("durability_level", "Durability level", enum=DURABILITY_LEVELS),
)
SEQNO_ACKNOWLEDGED = Layout("dcp_seqno_acknowledged", seqno("prepared_seqno", "Prepared Seqno"))
COMMIT = Layout("dcp_commit", seqno("prepared_seqno", "Prepared Seqno"), seqno("commit_seqno", "Commit Seqno"))
ABORT = Layout("dcp_abort", seqno("prepared_seqno", "Prepared Seqno"), seqno("abort_seqno", "Abort Seqno"))
SEQNO_ADVANCED = Layout("dcp_seqno_advanced", seqno("by_seqno", "By Seqno"))
OSO_SNAPSHOT = Layout("dcp_oso_snapshot", u32("flags", "Flags", flags=OSO_FLAGS))
CACHE_TRANSFER_RECORD = Layout(
    "dcp_cache_transfer_record",
    u64("cas", "CAS"),
    seqno("by_seqno", "By Seqno"),
    seqno("rev_seqno", "Rev Seqno"),
    u32("value_length", "Value length", show="dec"),
    u32("flags", "Flags"),
    u32("expiration", "Expiration", show="both"),
    u16("key_length", "Key length", show="dec"),
    u8("datatype", "Datatype"),
    u8("cache_hint", "Cache hint", show="dec"),
)
FAILOVER_ENTRY = Layout("failover_entry", u64("vbucket_uuid", "Vbucket UUID"), seqno("seqno", "Seqno"))
ROLLBACK = Layout("rollback", seqno("rollback_seqno", "Rollback Seqno"))

_DOC = dict(key=REQUIRED, key_kind="document", value=OPTIONAL, value_kind="document")
_ERROR_ONLY = EMPTY

SPECS = (
    OpSpec(0x50, "DCP_OPEN", Body(extras(OPEN), key=REQUIRED, value=OPTIONAL, value_kind="json"), EMPTY, "dcp",
           opens_connection=True),
    OpSpec(0x51, "DCP_ADD_STREAM", Body(extras(ADD_STREAM)), Body(extras(ADD_STREAM_RESPONSE)), "dcp"),
    OpSpec(0x52, "DCP_CLOSE_STREAM", EMPTY, EMPTY, "dcp"),
    OpSpec(
        0x53,
        "DCP_STREAM_REQ",
        Body(extras(STREAM_REQ), value=OPTIONAL, value_kind="stream_request"),
        Body(value=OPTIONAL, value_kind="failover_log"),
        "dcp",
    ),
    OpSpec(0x54, "DCP_GET_FAILOVER_LOG", EMPTY, Body(value=OPTIONAL, value_kind="failover_log"), "dcp"),
    OpSpec(0x55, "DCP_STREAM_END", Body(extras(STREAM_END)), _ERROR_ONLY, "dcp", stream=True),
    OpSpec(
        0x56,
        "DCP_SNAPSHOT_MARKER",
        Body(extras(SNAPSHOT_V1, SNAPSHOT_V2_EXTRAS), value=OPTIONAL, value_kind="snapshot_marker"),
        _ERROR_ONLY,
        "dcp",
        stream=True,
    ),
    OpSpec(0x57, "DCP_MUTATION", Body(extras(MUTATION), **_DOC), _ERROR_ONLY, "dcp", "by_seqno",
           stream=True, item=True),
    OpSpec(0x58, "DCP_DELETION", Body(extras(DELETION_V1, DELETION_V2), **_DOC), _ERROR_ONLY, "dcp", "by_seqno",
           stream=True, item=True),
    OpSpec(0x59, "DCP_EXPIRATION", Body(extras(EXPIRATION, EXPIRATION_LEGACY), **_DOC), _ERROR_ONLY, "dcp", "by_seqno",
           stream=True, item=True),
    OpSpec(0x5A, "DCP_FLUSH", family="dcp"),
    OpSpec(0x5B, "DCP_SET_VBUCKET_STATE", Body(extras(SET_VBUCKET_STATE)), EMPTY, "dcp", stream=True),
    OpSpec(0x5C, "DCP_NOOP", EMPTY, EMPTY, "dcp"),
    OpSpec(0x5D, "DCP_BUFFER_ACKNOWLEDGEMENT", Body(extras(BUFFER_ACK)), _ERROR_ONLY, "dcp"),
    OpSpec(0x5E, "DCP_CONTROL", Body(key=REQUIRED, value=REQUIRED, value_kind="text"), EMPTY, "dcp"),
    OpSpec(
        0x5F,
        "DCP_SYSTEM_EVENT",
        Body(extras(SYSTEM_EVENT), key=OPTIONAL, value=OPTIONAL, value_kind="system_event"),
        _ERROR_ONLY,
        "dcp",
        "by_seqno",
        stream=True, item=True,
    ),
    OpSpec(0x60, "DCP_PREPARE", Body(extras(PREPARE), **_DOC), _ERROR_ONLY, "dcp", "by_seqno",
           stream=True, item=True),
    OpSpec(0x61, "DCP_SEQNO_ACKNOWLEDGED", Body(extras(SEQNO_ACKNOWLEDGED)), _ERROR_ONLY, "dcp"),
    OpSpec(0x62, "DCP_COMMIT", Body(extras(COMMIT), key=REQUIRED, key_kind="document"), _ERROR_ONLY, "dcp",
           "commit_seqno", stream=True),
    OpSpec(0x63, "DCP_ABORT", Body(extras(ABORT), key=REQUIRED, key_kind="document"), _ERROR_ONLY, "dcp",
           "abort_seqno", stream=True),
    OpSpec(0x64, "DCP_SEQNO_ADVANCED", Body(extras(SEQNO_ADVANCED)), _ERROR_ONLY, "dcp", "by_seqno", stream=True),
    OpSpec(0x65, "DCP_OSO_SNAPSHOT", Body(extras(OSO_SNAPSHOT)), _ERROR_ONLY, "dcp", stream=True),
    OpSpec(0x66, "DCP_CACHE_TRANSFER", Body(value=REQUIRED, value_kind="cache_transfer"), _ERROR_ONLY, "dcp",
           stream=True),
    OpSpec(0x67, "DCP_CACHE_TRANSFER_END", EMPTY, _ERROR_ONLY, "dcp", stream=True),
)

#: Opcodes whose key names a document (LEB128 collection prefix when negotiated).
DOCUMENT_KEY_OPCODES = frozenset(s.opcode for s in SPECS if s.request.key_kind == "document")

#: System event values, versions 0 and 1 (spec/dcp.md §9.2); version 2 is FlatBuffers.
_MANIFEST = u64("manifest_uid", "Manifest UID")
_SCOPE = u32("scope_id", "Scope ID")
_COLLECTION = u32("collection_id", "Collection ID")
SYSTEM_EVENT_VALUES = {
    (0, 0): Layout("begin_collection_v0", _MANIFEST, _SCOPE, _COLLECTION),
    (0, 1): Layout("begin_collection_v1", _MANIFEST, _SCOPE, _COLLECTION, u32("max_ttl", "Max TTL", show="both")),
    (1, 0): Layout("end_collection_v0", _MANIFEST, _SCOPE, _COLLECTION),
    (3, 0): Layout("create_scope_v0", _MANIFEST, _SCOPE),
    (4, 0): Layout("drop_scope_v0", _MANIFEST, _SCOPE),
}
