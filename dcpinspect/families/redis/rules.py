"""The Redis family's rules: RDB files, Redis replication, Dragonfly's syncs and its
``.dfs`` snapshot sets."""

from __future__ import annotations

from ...rules.registry import LIMITS, rules_table as _rules

#: Where each rule comes from: the public upstream documents and sources, pinned to the
#: revisions the rules were written from (a heading or a line of each), or this repository's
#: own file for a limit of the decoder's.
REDIS = "https://github.com/redis/redis/blob/4f8cdc2a1ea53e42955af758aabffee67cb455dd/"
RESP = "https://redis.io/docs/latest/develop/reference/protocol-spec/"
REPLICATION = "https://redis.io/docs/latest/operate/oss_and_stack/management/replication/"
DRAGONFLY = "https://github.com/dragonflydb/dragonfly/blob/f8eca6d0b05c915cee9439036b5b04aebbb973bb/"


#: Each RDB rule's severity is what redis-server (7.0.15, with sanitize-dump-payload no, its
#: default, and yes, the deep checks redis-check-rdb makes) does with a file that triggers it:
#: an error where it refuses the file, a warning where it loads it (tests/test_rdb_server.py);
#: rdb-duplicate-member-kept follows the default alone, and says what yes does.
RDB_RULES = _rules(
    ("rdb-magic", "EINVAL", "error", REDIS + "src/rdb.c#L3350", "The input does not start with REDIS and 4 digits, or VALKEY and 3: it is no RDB.", "rdb",
     "Refuses the file: \"Wrong signature trying to load DB from file\"."),
    ("rdb-version", "NOT_SUPPORTED", "error", REDIS + "src/rdb.c#L3355", "The RDB version is newer than any known (Redis 15, Valkey 80): no server of those loads it; it is decoded with the newest numbering.", "rdb",
     "Refuses a version newer than its own: \"Can't handle RDB format version N\" (7.0 reads up to 10)."),
    ("rdb-checksum", "CHECKSUM", "error", REDIS + "src/rdb.c#L3681", "The CRC-64 after the EOF opcode is not the CRC of the bytes before it (a stored 0 means not computed, and is no finding).", "rdb",
     "Refuses the file: \"Wrong RDB checksum expected: (…) but got (…). Aborting now.\" (unless rdbchecksum is no); redis-check-rdb: \"RDB CRC error\"."),
    ("rdb-truncated", "TRUNCATED", "error", REDIS + "src/rdb.c#L3708", "The input ends before the EOF opcode and its checksum; every key before the cut is reported.", "rdb",
     "Refuses the file: \"Short read or OOM loading DB. Unrecoverable error, aborting now.\""),
    ("rdb-unknown-type", "EINVAL", "error", REDIS + "src/rdb.c#L2777", "A byte where a value type or opcode is expected is none the file's vendor and version define, or one whose layout is not known: decoding stops there.", "rdb",
     "Refuses the file: \"Unknown RDB encoding type N\"."),
    ("rdb-corrupt", "EINVAL", "error", REDIS + "src/rdb.c#L1924", "An encoding inside a record does not hold (a length, a string encoding, LZF data, a ziplist, listpack, intset, zipmap, stream, module or Dragonfly layout): decoding goes on after a damaged string whose extent is known, else stops.", "rdb",
     "Refuses the file (\"… integrity check failed\", \"Invalid LZF compressed string\", \"Stream length inconsistent with rax entries\"; an empty intset or zipmap fails the check too). A packed value whose header holds but whose entries do not is loaded under sanitize-dump-payload no and refused under yes and by redis-check-rdb."),
    ("rdb-empty-key", "SNAPSHOT", "warning", REDIS + "src/rdb.c#L3594", "A list, set, sorted set or hash holds no element (an empty intset or zipmap is rdb-corrupt).", "rdb",
     "Loads the file without the key: \"rdbLoadObject skipping empty key: K\", \"empty keys skipped: N\"; redis-check-rdb stops there with an error."),
    ("rdb-duplicate-member", "SNAPSHOT", "error", REDIS + "src/rdb.c#L2010", "A set's or sorted set's member, or a hash's field, comes twice in one value where the server refuses it: a plain set or sorted set, a ziplist or zipmap, a plain hash (or one whose fields expire) of more than 512 fields or with a field or value over 64 bytes, an intset of more than 512, a listpack set or sorted set of more than 128 or a listpack hash (with field expiry or not) of more than 512 entries; Valkey's HASH_2 always; in a Dragonfly file, its loader's verdict: any set, sorted set, hash with expiry, plain hash past 64 fields or intset past 256.", "rdb",
     "Refuses the file: \"Duplicate set members detected\", \"Duplicate zset fields detected\", \"Duplicate hash fields detected\", \"Zset ziplist integrity check failed\", \"Hash ziplist integrity check failed\", \"Hash zipmap with dup elements\"; a packed value past its encoding's entries (set-max-intset-entries, set-max-listpack-entries, zset-max-listpack-entries, hash-max-listpack-entries) stops it on an assertion (\"Listpack corruption detected\" for a hash) as it makes a table of it; redis-check-rdb: an error. Valkey 9 refuses a HASH_2's repeat (\"Duplicate hash fields detected\"); Dragonfly fails the load (\"Duplicate set members detected\", \"Duplicate hash fields detected\") or stops on a check (an intset past 256)."),
    ("rdb-duplicate-member-kept", "SNAPSHOT", "warning", REDIS + "src/rdb.c#L1892", "A set's or sorted set's member, or a hash's field, comes twice in a value the server keeps packed as written: an intset of at most 512, a listpack set or sorted set of at most 128 or a listpack hash (with field expiry or not) of at most 512 entries, or a plain hash (or one whose fields expire) of at most 512 fields and values of at most 64 bytes (past these it is rdb-duplicate-member); in a Dragonfly file an intset of at most 256, a plain hash of at most 64 fields, any listpack hash or sorted set.", "rdb",
     "Loads the file (sanitize-dump-payload no, the default) and keeps both: SCARD, ZCARD and HLEN count the member twice, and the server stops on an assertion when the value later grows into a table. Under sanitize-dump-payload yes it refuses the file (\"… integrity check failed\", \"Hash with dup elements\"), and redis-check-rdb reports an error. Dragonfly keeps its listpacks as written too (one of more than 1,024 bytes becomes a table holding the field once)."),
    ("rdb-stream-length", "SNAPSHOT", "warning", REDIS + "src/rdb.c#L2891", "A stream's length field is not the number of live entries its nodes hold.", "rdb",
     "Loads the stream as written: XLEN answers the length field, XRANGE the entries the nodes hold; no log line, and redis-check-rdb finds nothing. A length above 0 with no node at all is rdb-corrupt (refused)."),
    ("rdb-module", "NOT_SUPPORTED", "info", REDIS + "src/rdb.c#L3107", "A key or MODULE_AUX holds a module's data (said once for each module of a file): only a server with that module loads it.", "rdb",
     "Without the module, refuses the file: \"The RDB file contains module data I can't load: no matching module type 'NAME'\" (AUX: \"… AUX module data …\"); redis-check-rdb passes over it."),
    ("rdb-string-too-long", "LIMIT", "warning", LIMITS, "A string claims more bytes than the decoder holds (DCPINSPECT_MAX_RDB_STRING, 512 MiB): its bytes are passed over unread.", "rdb",
     "Loads the string whole, however long (memory allowing)."),
    ("rdb-duplicate-key", "SNAPSHOT", "error", REDIS + "src/rdb.c#L3635", "A key is serialised twice in one database of one snapshot (every entry exactly once).", "rdb",
     "Stops: \"RDB has duplicated key 'K' in DB N\", then panics (\"Duplicated key found in RDB file\", SIGABRT); redis-check-rdb does not notice."),
    ("rdb-expired-key", "SNAPSHOT", "warning", REDIS + "src/rdb.c#L3602", "A key's expiry lies before the snapshot's time (aux ctime): a loading master drops it.", "rdb",
     "A master loads the file without the key (\"keys expired: N\"); a replica keeps it for its master to expire."),
    ("rdb-trailing-data", "EINVAL", "warning", REDIS + "src/rdb.c#L3397", "Bytes follow the EOF opcode and its checksum.", "rdb",
     "Loads the file; the bytes after the checksum are never read."),
    ("rdb-inflate-cap", "LIMIT", "warning", DRAGONFLY + "src/server/rdb_load.cc#L2910", "Dragonfly's compressed blobs and LZF strings inflate past the input's budget (DCPINSPECT_MAX_RDB_INFLATE_RATIO times the bytes read, 1,000 by default, or DCPINSPECT_MAX_RDB_INFLATED in all, 8 GiB), or blobs nest more than 4 deep: the rest of the blob, or the LZF string (and any later one past the budget: said once), is passed over unread, and decoding goes on after it.", "rdb",
     "Loads LZF strings whatever they inflate to, and reads no Dragonfly blob (its opcodes are past the ones it knows); the budget is this decoder's, not the file's."),
    ("rdb-keys-cap", "LIMIT", "info", LIMITS, "The snapshot has more keys than are remembered for the duplicate-key rule (DCPINSPECT_MAX_RDB_KEYS, 2,000,000): the rest are not checked.", "rdb",
     "Loads the file (the cap is this decoder's)."),
)

REDIS_RULES = _rules(
    ("resp-protocol-error", "EINVAL", "error", RESP, "Bytes of a Redis connection that are no RESP (an unknown type byte, a length or count that is no number, a line with no CRLF, nesting too deep): decoding looks for the next command.", "replication"),
    ("resp-truncated", "TRUNCATED", "warning", RESP, "The connection ends inside a RESP frame (or a Dragonfly journal record).", "replication"),
    ("repl-offset-mismatch", "ERANGE", "error", REPLICATION, "A REPLCONF ACK offset is not the +FULLRESYNC (or PSYNC) offset plus the bytes of whole commands the master had sent before it: past them, or inside one.", "replication"),
    ("repl-ack-regression", "ERANGE", "warning", REPLICATION, "A REPLCONF ACK offset is below one the replica acknowledged before on the connection.", "replication"),
)

DFLY_RULES = _rules(
    ("dfly-lsn-gap", "ERANGE", "error", DRAGONFLY + "src/server/journal/types.h#L18", "A journal LSN op of a Dragonfly flow names a later LSN than its records reach (counted from the flow's JOURNAL_OFFSET, the LSN partial sync asked for, or the LSN op before): records were skipped.", "dragonfly"),
    ("dfly-lsn-repeat", "ERANGE", "error", DRAGONFLY + "src/server/journal/types.h#L18", "A journal LSN op of a Dragonfly flow names an earlier LSN than its records reach, or one not above the LSN op before it: records came twice, or the numbering went back.", "dragonfly"),
    ("dfly-fullsync-end-missing", "SNAPSHOT", "error", DRAGONFLY + "src/server/rdb_extensions.h#L33", "A FULL flow's snapshot reaches JOURNAL_OFFSET (stable sync) or its end without FULLSYNC_END: the replica never learns that the static data is done.", "dragonfly"),
    ("dfly-duplicate-key", "SNAPSHOT", "error", DRAGONFLY + "docs/shard-serialization.md#point-in-time-snapshot-via-bucket-versioning", "A key is serialised by two flows (shards) of one Dragonfly sync: every entry is in exactly one shard, once (twice in one flow is rdb-duplicate-key).", "dragonfly"),
    ("dfly-sync-unannounced", "KEY_ENOENT", "error", DRAGONFLY + "src/server/dflycmd.cc#L285", "A DFLY FLOW names a sync (master replid and SYNC id) that no control connection announced, though one from the same replica host to the same master was seen announcing before it.", "dragonfly"),
    ("dfly-flow-count", "EINVAL", "error", DRAGONFLY + "src/server/dflycmd.cc#L384", "A sync seen from its announcement to DFLY SYNC or STARTSTABLE had fewer FLOW connections than the flows its master announced, or a FLOW index past them.", "dragonfly"),
    ("dfly-keys-cap", "LIMIT", "info", LIMITS, "More keys than are remembered for dfly-duplicate-key (DCPINSPECT_MAX_RDB_KEYS, 2,000,000, as 64-bit digests): the rest are not checked.", "dragonfly"),
)

DFS_RULES = _rules(
    ("dfs-snapshot-id", "SNAPSHOT", "error", DRAGONFLY + "src/server/rdb_save.cc#L1756", "The files of one Dragonfly .dfs set do not all carry the same snapshot-id aux field (the summary's, or one of them has none): they come from different snapshots.", "rdb"),
    ("dfs-shard-missing", "SNAPSHOT", "error", DRAGONFLY + "src/server/rdb_save.cc#L1795", "A .dfs set's shard files are not <name>-0000.dfs up to the summary's shard-count: fewer are found, the numbers have a gap, or one is past the count.", "rdb"),
    ("dfs-summary-missing", "SNAPSHOT", "error", DRAGONFLY + "src/server/detail/save_stages_controller.cc#L269", "A .dfs set's shard files have no <name>-summary.dfs beside them: the snapshot's global data (scripts, search indices, shard-count) is missing.", "rdb"),
    ("dfs-shard-id", "EINVAL", "error", DRAGONFLY + "src/server/rdb_save.cc#L1799", "A .dfs shard file's shard-id aux field is not the number in its name, or it has none.", "rdb"),
    ("dfs-duplicate-key", "SNAPSHOT", "error", DRAGONFLY + "src/server/detail/save_stages_controller.cc#L269", "A key is serialised in two shard files of one .dfs set: every entry is in exactly one shard, once (twice in one file is rdb-duplicate-key).", "rdb"),
    ("dfs-keys-cap", "LIMIT", "info", LIMITS, "A .dfs set has more keys than are remembered for dfs-duplicate-key (DCPINSPECT_MAX_RDB_KEYS, 2,000,000, as 64-bit digests): the rest are not checked.", "rdb"),
)

#: every rule of the family, in the rule book's order
RULES = {**RDB_RULES, **REDIS_RULES, **DFLY_RULES, **DFS_RULES}
