"""RDB's numbers: value types and opcodes of Redis, Valkey and Dragonfly (spec/rdb.md §2,
§4, §5, §8), and the rules that tell which vendor's numbering a file uses (§11)."""

from __future__ import annotations

from collections import namedtuple

REDIS, VALKEY, DRAGONFLY = "redis", "valkey", "dragonfly"
#: the newest Redis RDB version this decoder knows (Redis 8.10)
NEWEST_REDIS = 15
#: Valkey 9's version, written after the magic ``VALKEY``
VALKEY_VERSION = 80


class ValueType(namedtuple("ValueType", "name rdb_name type encoding layout since")):
    """What a type byte means: its ``name`` and ``rdb_name``, the Redis ``type`` (as ``TYPE``
    says it), how it is stored (``encoding``, as ``OBJECT ENCODING`` says it, where the RDB
    tells), the ``layout`` that reads it, and the first version that has it (``since``)."""

    __slots__ = ()


def _t(num, rdb_name, type_, encoding, layout, since):
    return num, ValueType(rdb_name, rdb_name, type_, encoding, layout, since)


_REDIS_TYPES = dict((
    _t(0, "STRING", "string", "raw", "string", 1),
    _t(1, "LIST", "list", "linkedlist", "list", 1),
    _t(2, "SET", "set", "hashtable", "set", 1),
    _t(3, "ZSET", "zset", "skiplist", "zset", 1),
    _t(4, "HASH", "hash", "hashtable", "hash", 1),
    _t(5, "ZSET_2", "zset", "skiplist", "zset2", 8),
    _t(6, "MODULE_PRE_GA", "module", "module", "module_pre_ga", 8),
    _t(7, "MODULE_2", "module", "module", "module", 8),
    _t(9, "HASH_ZIPMAP", "hash", "zipmap", "zipmap", 2),
    _t(10, "LIST_ZIPLIST", "list", "ziplist", "ziplist_list", 2),
    _t(11, "SET_INTSET", "set", "intset", "intset", 2),
    _t(12, "ZSET_ZIPLIST", "zset", "ziplist", "ziplist_zset", 2),
    _t(13, "HASH_ZIPLIST", "hash", "ziplist", "ziplist_hash", 4),
    _t(14, "LIST_QUICKLIST", "list", "quicklist", "quicklist", 7),
    _t(15, "STREAM_LISTPACKS", "stream", "stream", "stream1", 9),
    _t(16, "HASH_LISTPACK", "hash", "listpack", "listpack_hash", 10),
    _t(17, "ZSET_LISTPACK", "zset", "listpack", "listpack_zset", 10),
    _t(18, "LIST_QUICKLIST_2", "list", "quicklist", "quicklist2", 10),
    _t(19, "STREAM_LISTPACKS_2", "stream", "stream", "stream2", 10),
    _t(20, "SET_LISTPACK", "set", "listpack", "listpack_set", 11),
    _t(21, "STREAM_LISTPACKS_3", "stream", "stream", "stream3", 11),
    _t(22, "HASH_METADATA_PRE_GA", "hash", "hashtable", "hash_metadata_pre_ga", 12),
    _t(23, "HASH_LISTPACK_EX_PRE_GA", "hash", "listpackex", "listpack_ex_pre_ga", 12),
    _t(24, "HASH_METADATA", "hash", "hashtable", "hash_metadata", 12),
    _t(25, "HASH_LISTPACK_EX", "hash", "listpackex", "listpack_ex", 12),
    _t(26, "STREAM_LISTPACKS_4", "stream", "stream", "stream4", 13),
    # known by name, not decoded: spec/rdb.md §5 and §6.4 give no layout for 27 and 28, and
    # §6.6 none for the self-contained 29 and 31 (DUMP payloads); the references to a
    # template that RDB files hold, 30 and 32, it gives
    _t(27, "STREAM_LISTPACKS_5", "stream", "stream", "", 14),
    _t(28, "ARRAY", "array", "array", "", 14),
    _t(29, "HASH_TMPL_LP", "hash", "listpack", "", 15),
    _t(30, "HASH_TMPL_LP_REF", "hash", "listpack", "hash_tmpl_lp_ref", 15),
    _t(31, "HASH_TMPL_ARRAY", "hash", "hashtable", "", 15),
    _t(32, "HASH_TMPL_ARRAY_REF", "hash", "hashtable", "hash_tmpl_array_ref", 15),
))

_VALKEY_TYPES = {n: v for n, v in _REDIS_TYPES.items() if n <= 21}
_VALKEY_TYPES[22] = ValueType("HASH_2", "HASH_2", "hash", "hashtable", "valkey_hash2", VALKEY_VERSION)

_DRAGONFLY_TYPES = {n: v for n, v in _REDIS_TYPES.items() if n <= 21}
_DRAGONFLY_TYPES.update(dict((
    _t(30, "JSON", "ReJSON-RL", "json", "string", 1),
    _t(31, "HASH_WITH_EXPIRY", "hash", "hashtable", "df_hash_expiry", 1),
    _t(32, "SET_WITH_EXPIRY", "set", "hashtable", "df_set_expiry", 1),
    _t(33, "SBF", "MBbloom--", "sbf", "df_sbf", 1),
    _t(34, "SBF2", "MBbloom--", "sbf", "df_sbf2", 1),
    _t(35, "CMS", "CMSk-TYPE", "cms", "df_cms", 1),
    _t(36, "TOPK", "TopK-TYPE", "topk", "df_topk", 1),
    _t(37, "CUCKOO", "CF-TYPE", "cuckoo", "df_cuckoo", 1),
)))
#: Dragonfly's JSON before July 2023, in files of version < 10 (§8.3)
DF_JSON_OLD = ValueType("JSON_OLD", "JSON_OLD", "ReJSON-RL", "json", "string", 1)

TYPES = {REDIS: _REDIS_TYPES, VALKEY: _VALKEY_TYPES, DRAGONFLY: _DRAGONFLY_TYPES}

# ----------------------------------------------------------------------------- opcodes

EOF, SELECTDB, EXPIRETIME, EXPIRETIME_MS, RESIZEDB, AUX, FREQ, IDLE = 255, 254, 253, 252, 251, 250, 249, 248
MODULE_AUX, FUNCTION_PRE_GA, FUNCTION2, SLOT_INFO, KEY_META, HASH_TEMPLATE = 247, 246, 245, 244, 243, 242
#: Redis Enterprise's private opcodes that carry one length (librdb passes over them)
ENT_RAM_LRU, ENT_SLOT_NUM = 107, 121
#: Dragonfly (§8.2)
DF_FULLSYNC_END, DF_ZSTD_BLOB, DF_LZ4_BLOB, DF_BLOB_END = 200, 201, 202, 203
DF_JOURNAL_BLOB, DF_JOURNAL_OFFSET, DF_MASK, DF_VECTOR_INDEX, DF_SHARD_DOC_INDEX, DF_TAGGED_CHUNK = (
    210, 211, 220, 222, 223, 224)

OPCODE_NAMES = {
    EOF: "EOF", SELECTDB: "SELECTDB", EXPIRETIME: "EXPIRETIME", EXPIRETIME_MS: "EXPIRETIME_MS",
    RESIZEDB: "RESIZEDB", AUX: "AUX", FREQ: "FREQ", IDLE: "IDLE", MODULE_AUX: "MODULE_AUX",
    FUNCTION_PRE_GA: "FUNCTION_PRE_GA", FUNCTION2: "FUNCTION2", SLOT_INFO: "SLOT_INFO", KEY_META: "KEY_META",
    HASH_TEMPLATE: "HASH_TEMPLATE", ENT_RAM_LRU: "RAM_LRU", ENT_SLOT_NUM: "SLOT_NUM",
    DF_FULLSYNC_END: "FULLSYNC_END", DF_ZSTD_BLOB: "COMPRESSED_ZSTD_BLOB_START",
    DF_LZ4_BLOB: "COMPRESSED_LZ4_BLOB_START", DF_BLOB_END: "COMPRESSED_BLOB_END", DF_JOURNAL_BLOB: "JOURNAL_BLOB",
    DF_JOURNAL_OFFSET: "JOURNAL_OFFSET", DF_MASK: "DF_MASK", DF_VECTOR_INDEX: "VECTOR_INDEX",
    DF_SHARD_DOC_INDEX: "SHARD_DOC_INDEX", DF_TAGGED_CHUNK: "TAGGED_CHUNK",
}
#: opcodes 200–224 are Dragonfly's range (§8.2)
DF_RANGE = range(200, 225)


def header(magic: bytes) -> tuple[str, int] | None:
    """(vendor, version) from the 9 bytes a file starts with, None when they are no RDB
    magic: ``REDIS`` and 4 digits, or ``VALKEY`` and 3."""
    if magic[:5] == b"REDIS" and magic[5:9].isdigit():
        return REDIS, int(magic[5:9])
    if magic[:6] == b"VALKEY" and magic[6:9].isdigit():
        return VALKEY, int(magic[6:9])
    return None


def value_type(vendor: str, version: int, number: int) -> ValueType | None:
    """What type byte ``number`` means in a file of ``vendor`` numbering and ``version``."""
    if vendor == DRAGONFLY and number == 20 and version < 10:
        return DF_JSON_OLD
    return TYPES[vendor].get(number)


def looks_dragonfly(vendor: str, version: int, byte: int) -> bool:
    """§11 rule 2: a ``REDIS0009`` file holding a Dragonfly opcode, or a type byte no Redis
    of version 9 writes (20, or 22 and above), is Dragonfly's."""
    return vendor == REDIS and version == 9 and (byte in DF_RANGE or byte == 20 or 22 <= byte <= 37)
