"""The rule book: every check the validator can report, with its class and source."""

from __future__ import annotations

from dataclasses import dataclass

from ..findings import Finding
from ..messages.opcodes import ST


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    cls: str
    severity: str
    ref: str
    summary: str
    scope: str = "frame"  # "frame", "stream", "tap" or "rdb"
    server: str = ""  # what the real server does with such input, where one was asked

    def finding(self, message: str, offset: int | None = None, severity: str | None = None, **context) -> Finding:
        return Finding(self.id, self.cls, severity or self.severity, message, offset, self.ref, **context)


#: Where each rule comes from: the public upstream documents and sources, pinned to the
#: revisions the rules were written from (a heading or a line of each), or this repository's
#: own file for a limit of the decoder's.
KV = "https://github.com/couchbase/kv_engine/blob/eba4298981505cdc3371abbfb8be213236f7875a/"
#: TAP's document, in its last revision before kv_engine removed it with TAP itself
KV_TAP = "https://github.com/couchbase/kv_engine/blob/39f5d68640968d6cb2a498632cb94ee157c996f8/docs/TAP.md"
REDIS = "https://github.com/redis/redis/blob/4f8cdc2a1ea53e42955af758aabffee67cb455dd/"
RESP = "https://redis.io/docs/latest/develop/reference/protocol-spec/"
REPLICATION = "https://redis.io/docs/latest/operate/oss_and_stack/management/replication/"
DRAGONFLY = "https://github.com/dragonflydb/dragonfly/blob/f8eca6d0b05c915cee9439036b5b04aebbb973bb/"
LIMITS = "dcpinspect/limits.py"


def _rules(*rows: tuple) -> dict[str, Rule]:
    return {row[0]: Rule(*row) for row in rows}


FRAME_RULES = _rules(
    ("truncated", "TRUNCATED", "warning", KV + "docs/BinaryProtocol.md#packet-structure", "The frame ends before its header or body does."),
    ("lengths-exceed-body", "EINVAL", "error", KV + "docs/BinaryProtocol.md#header-fields-description", "Framing + extras + key lengths exceed the total body length."),
    ("unknown-magic", "EINVAL", "error", KV + "docs/BinaryProtocol.md#magic-byte", "The magic byte is none of 0x80, 0x81, 0x08, 0x18, 0x82, 0x83."),
    ("unknown-opcode", "EINVAL", "error", KV + "docs/BinaryProtocol.md#command-opcodes", "The opcode is not defined for this magic."),
    ("retired-opcode", "NOT_SUPPORTED", "warning", KV + "docs/BinaryProtocol.md#command-opcodes", "The opcode was removed from the server (TAP, DCP_FLUSH, ...)."),
    ("datatype-invalid", "EINVAL", "error", KV + "docs/BinaryProtocol.md#data-types", "Datatype has bits above 0x07."),
    ("extras-length", "EINVAL", "error", KV + "daemon/mcbp_validators.cc#L334", "The extras length is not one this opcode allows."),
    ("key-required", "EINVAL", "error", KV + "daemon/mcbp_validators.cc#L334", "The opcode requires a key and the frame has none."),
    ("key-forbidden", "EINVAL", "error", KV + "daemon/mcbp_validators.cc#L334", "The opcode must not carry a key."),
    ("value-required", "EINVAL", "error", KV + "daemon/mcbp_validators.cc#L334", "The opcode requires a value and the frame has none."),
    ("value-forbidden", "EINVAL", "error", KV + "daemon/mcbp_validators.cc#L334", "The opcode must not carry a value."),
    ("key-too-long", "EINVAL", "error", KV + "docs/DocumentSizeLimits.md", "Keys are at most 250 bytes (251 with a collection prefix)."),
    ("snapshot-marker-version", "EINVAL", "error", KV + "docs/dcp/documentation/commands/snapshot-marker.md#version-byte-values", "Marker version must be 0x00 (v2.0) or 0x02 (v2.2); 0x01 (v2.1) was removed."),
    ("snapshot-marker-value-size", "EINVAL", "error", KV + "docs/dcp/documentation/commands/snapshot-marker.md#version-byte-values", "A v2.0 marker value is 36 bytes, a v2.2 value 52."),
    ("reserved-flags", "EINVAL", "error", KV + "docs/dcp/documentation/commands/open-connection.md#open-connection-opcode-0x50", "Flag bits that are reserved, removed or unknown are set."),
    ("collection-key-leb128", "EINVAL", "error", KV + "docs/Collections.md#non-canonical-encodings", "The collection-id prefix is not a canonical unsigned LEB128."),
    ("collection-key-empty", "EINVAL", "error", KV + "docs/Collections.md#all-memcached-protocol-commands-that-reference-a-document---encoding-collection-id-with-leb128", "The logical key after the collection id is empty."),
    ("collection-id-reserved", "EINVAL", "error", KV + "docs/Collections.md#L255", "Collection ids 1–7 are reserved on the wire."),
    ("xattr-invalid", "EINVAL", "error", KV + "docs/Document.md#xattr---extended-attributes", "The xattr blob is malformed (server answers XattrEinval)."),
    ("snappy-invalid", "EINVAL", "error", KV + "docs/Document.md#snappy-compressed", "Snappy-compressed data does not inflate (or exceeds the size cap)."),
    ("json-invalid", "EINVAL", "warning", KV + "docs/Document.md#json", "A value flagged or expected as JSON does not parse."),
    ("json-too-deep", "LIMIT", "warning", LIMITS,
     "A value flagged or expected as JSON nests deeper than the parser's cap (DCPINSPECT_MAX_JSON_DEPTH, 512 levels): not parsed."),
    ("system-event-value", "EINVAL", "error", KV + "docs/dcp/documentation/commands/system_event.md#key-and-value-data-definition", "The system event value has the wrong size or encoding for its version."),
    ("system-event-id", "EINVAL", "error", KV + "docs/dcp/documentation/commands/system_event.md#extra-data-for-system-event", "Unknown system event id or version."),
    ("frame-info-encoding", "EINVAL", "error", KV + "docs/BinaryProtocol.md#request-header-with-flexible-framing-extras", "The flexible framing extras do not parse."),
    ("frame-info-invalid", "EINVAL", "error", KV + "docs/BinaryProtocol.md#request-header-with-flexible-framing-extras", "A frame info has the wrong size or content."),
    ("value-size", "EINVAL", "error", KV + "daemon/mcbp_validators.cc#L334", "A fixed-size value has the wrong length."),
    ("stream-request-value", "EINVAL", "error", KV + "docs/dcp/documentation/commands/stream-request-value.md#validation", "The stream request JSON value is malformed."),
    ("cache-transfer-value", "EINVAL", "error", KV + "docs/dcp/documentation/commands/cache-transfer.md#validation-consumer-side", "Cache transfer records are malformed."),
    ("tap-connect-value", "EINVAL", "error", KV_TAP + "#0x40-tap-connect", "TAP_CONNECT flag values do not match the value bytes (Backfill without its 8 bytes, a vbucket or checkpoint count past the end, bytes left over)."),
    ("seqno-zero", "EINVAL", "error", KV + "daemon/mcbp_validators.cc#L1143", "Seqnos of mutations, prepares, commits and aborts are never 0."),
    ("nmeta-nonzero", "EINVAL", "error", KV + "docs/dcp/documentation/commands/mutation.md#extended-meta-data-section", "nmeta must be 0 (extended meta was removed in 5.0)."),
    ("cas-zero", "EINVAL", "error", KV + "docs/dcp/documentation/commands/prepare.md#prepare-0x60", "A prepare must carry a non-zero CAS."),
    ("cas-nonzero", "EINVAL", "error", KV + "docs/BinaryProtocol.md#header-fields-description", "This message must carry CAS 0."),
    ("durability-level", "EINVAL", "error", KV + "docs/dcp/documentation/commands/prepare.md#prepare-0x60", "Prepare durability level must be 1, 2 or 3."),
    ("vbucket-state", "EINVAL", "error", KV + "docs/dcp/documentation/commands/set-vbucket-state.md#set-vbucket-state-0x5b", "Vbucket state must be 1 (active) to 4 (dead)."),
    ("stream-end-reason", "EINVAL", "warning", KV + "docs/dcp/documentation/commands/stream-end.md#stream-end-opcode-0x55", "Unknown stream end reason."),
    ("deletion-datatype", "EINVAL", "error", KV + "docs/dcp/documentation/commands/deletion.md#the-meaning-of-datatype", "A deletion's datatype must be one of 0x00, 0x02, 0x04, 0x05, 0x06, 0x07."),
    ("body-length-mismatch", "EINVAL", "error", KV + "docs/BinaryProtocol.md#header-fields-description", "The total body length field disagrees with the bytes the example holds."),
    ("peer-error", "PEER_ERROR", "warning", KV + "docs/BinaryProtocol.md#response-status", "The peer answered with an error status."),
    ("caption-mismatch", "ANNOTATION", "warning", KV + "docs/dcp/documentation/commands/snapshot-marker.md#encoding-examples", "A document's field caption disagrees with the bytes it annotates."),
)

STREAM_RULES = _rules(
    ("seqno-regression", "ERANGE", "error", KV + "engines/ep/src/dcp/passive_stream.cc#L313", "A stream's seqnos must strictly increase (OSO snapshots excepted).", "stream"),
    ("seqno-outside-snapshot", "ERANGE", "error", KV + "engines/ep/src/dcp/passive_stream.cc#L426", "A data item's seqno must lie in its snapshot's [start, end] (said once a snapshot, on the first item outside it).", "stream"),
    ("item-before-marker", "ERANGE", "error", KV + "engines/ep/src/dcp/passive_stream.cc#L426", "A data item arrived before any snapshot marker on its stream (said once a stream).", "stream"),
    ("marker-overlap", "ERANGE", "error", KV + "engines/ep/src/dcp/passive_stream.cc#L916", "A snapshot starts before the previous one ended.", "stream"),
    ("marker-end-regression", "ERANGE", "error", KV + "engines/ep/src/dcp/passive_stream.cc#L916", "Snapshot end seqnos must strictly increase (History after non-History disk excepted).", "stream"),
    ("first-marker-start", "ERANGE", "error", KV + "docs/dcp/documentation/commands/snapshot-marker.md#implementation-notes", "The first snapshot starts below the requested start seqno.", "stream"),
    ("marker-inside-snapshot", "ERANGE", "warning", KV + "docs/dcp/documentation/commands/snapshot-marker.md#implementation-notes", "A new marker arrived before the previous snapshot reached its end seqno.", "stream"),
    ("stream-request-range", "ERANGE", "error", KV + "docs/dcp/documentation/commands/stream-request.md#stream-request-opcode-0x53", "A stream request must satisfy snap_start <= start <= snap_end and start <= end.", "stream"),
    ("no-stream", "KEY_ENOENT", "error", KV + "docs/dcp/documentation/commands/snapshot-marker.md#errors", "A stream message for a vbucket / opaque / stream-id with no open stream (said once, again only after a stream of that vbucket and stream id opened).", "stream"),
    ("after-stream-end", "KEY_ENOENT", "error", KV + "docs/dcp/documentation/commands/stream-end.md#stream-end-opcode-0x55", "A stream message after that stream's STREAM_END (said once a stream, on the first).", "stream"),
    ("duplicate-key", "SNAPSHOT", "warning", KV + "docs/dcp/documentation/commands/snapshot-marker.md#snapshot-marker-opcode-0x56", "A key repeats in a snapshot without MayContainDuplicates (0x20) or History (0x10).", "stream"),
    ("ack-unanswered", "SNAPSHOT", "error", KV + "engines/ep/src/dcp/passive_stream.cc#L1146", "An Acknowledge-flagged snapshot was completed but never acknowledged.", "stream"),
    ("hcs-without-disk", "SNAPSHOT", "warning", KV + "docs/dcp/documentation/commands/snapshot-marker.md#version-byte-values", "High completed / prepared seqno given in a snapshot without the Disk flag.", "stream"),
    ("mvs-above-end", "ERANGE", "error", KV + "docs/dcp/documentation/commands/snapshot-marker.md#version-byte-values", "Max visible / high prepared seqno lies above the snapshot end.", "stream"),
    ("beyond-end-seqno", "ERANGE", "error", KV + "docs/dcp/documentation/commands/stream-request.md#stream-request-opcode-0x53", "A new snapshot or item after the snapshot that reached the requested end seqno.", "stream"),
    ("oso-unbalanced", "SNAPSHOT", "error", KV + "docs/dcp/documentation/commands/oso_snapshot.md#oso-snapshot-opcode-0x65", "OSO start/end markers do not pair up.", "stream"),
    ("oso-below-start", "ERANGE", "error", KV + "docs/dcp/documentation/commands/oso_snapshot.md#oso-snapshot-opcode-0x65", "An OSO item is not above the seqno the stream had before OSO started.", "stream"),
    ("rollback-ignored", "ROLLBACK", "error", KV + "docs/dcp/documentation/rollback.md#rollback-logic-on-dcp-consumer", "After a ROLLBACK answer the client re-requested above the rollback seqno.", "stream"),
    ("noop-unanswered", "LIVENESS", "warning", KV + "docs/dcp/documentation/dead-connections.md#handling-a-noop-message", "A DCP_NOOP was never answered with the same opaque.", "stream"),
    ("buffer-overrun", "FLOW_CONTROL", "warning", KV + "docs/dcp/documentation/flow-control.md#high-level-flow-control-behavior", "The producer kept sending with the consumer's buffer full (once an episode: again only after an acknowledgement brought the bytes below the buffer).", "stream"),
    ("buffer-ack-excess", "FLOW_CONTROL", "error", KV + "docs/dcp/documentation/flow-control.md#what-messages-must-be-acknowledged-by-dcp-clients", "The consumer acknowledged more bytes than it received.", "stream"),
    ("answered-error", "PEER_ERROR", "warning", KV + "docs/BinaryProtocol.md#response-status", "A request was answered with an error status (shown with the request).", "stream"),
    ("manifest-regression", "COLLECTIONS", "warning", KV + "docs/dcp/documentation/commands/system_event.md#manifest-id", "System event manifest uids went backwards on a stream.", "stream"),
    ("reserved-collection", "EINVAL", "error", KV + "docs/Collections.md#L255", "A system event names a reserved collection id (1–7).", "stream"),
    ("dcp-open-missing", "EINVAL", "warning", KV + "docs/dcp/documentation/commands/open-connection.md#open-connection-opcode-0x50", "DCP messages on a connection whose DCP_OPEN was not seen (or a second DCP_OPEN).", "stream"),
    ("deletion-version", "EINVAL", "error", KV + "docs/dcp/documentation/commands/deletion.md#delete-time", "Deletion extras length disagrees with the DCP_OPEN IncludeDeleteTimes flag.", "stream"),
    ("negotiation-missing", "EINVAL", "warning", KV + "docs/dcp/documentation/commands/control.md#control-opcode-0x5e", "A message that needs a control or HELO feature the connection did not negotiate (said once a feature, again only after the connection negotiated it).", "stream"),
    ("stream-id-missing", "EINVAL", "error", KV + "docs/BinaryProtocol.md#id2---dcp-stream-id", "enable_stream_id is on but a stream message or request has no stream id (each request; a stream's messages once a stream).", "stream"),
)

TAP_RULES = _rules(
    ("tap-connect-missing", "EINVAL", "warning", KV_TAP + "#0x40-tap-connect", "TAP events on a connection seen from its start before any TAP_CONNECT (or a second TAP_CONNECT).", "tap"),
    ("tap-connect-flags", "EINVAL", "warning", KV_TAP + "#0x40-tap-connect", "TAP_CONNECT flags no server defines, or TakeoverVbuckets without ListVbuckets.", "tap"),
    ("tap-seqno", "ERANGE", "error", KV_TAP + "#response-commands", "Event sequence numbers (opaques) go up by one, 1 after 0xFFFFFFFF; a NOOP carries 0.", "tap"),
    ("tap-ack-flag", "EINVAL", "warning", KV_TAP + "#ack", "VBUCKET_SET, OPAQUE and CHECKPOINT frames ask for an ACK on a SupportAck connection, and no event does without it.", "tap"),
    ("tap-ack-unmatched", "KEY_ENOENT", "error", KV_TAP + "#ack", "An ACK answers no outstanding event of its opcode and opaque (or travels the producer's way).", "tap"),
    ("tap-ack-unanswered", "LIVENESS", "error", KV_TAP + "#ack", "An event asked for an ACK (TAP_FLAG_ACK) that no later, cumulative ACK covered.", "tap"),
    ("tap-nack-not-resent", "LIVENESS", "warning", KV_TAP + "#ack", "After a NACK (EBUSY, ETMPFAIL) the producer did not send the event and those after it again.", "tap"),
    ("tap-error-not-disconnected", "PEER_ERROR", "warning", KV_TAP + "#ack", "The producer kept sending after an error answer other than a NACK; it must disconnect.", "tap"),
    ("tap-takeover-state", "EINVAL", "error", KV_TAP + "#transfer-vbucket-ownership", "A takeover stream sets each vbucket pending, then active: no state skipped, reversed or foreign.", "tap"),
    ("tap-takeover-incomplete", "LIVENESS", "warning", KV_TAP + "#transfer-vbucket-ownership", "A vbucket of a takeover stream in its takeover phase never reached active.", "tap"),
    ("tap-checkpoint-order", "SNAPSHOT", "error", KV_TAP + "#0x46-tap-checkpoint-start", "CHECKPOINT_START comes before the END of the same id, one checkpoint open at a time.", "tap"),
    ("tap-checkpoint-regression", "ERANGE", "error", KV_TAP + "#0x46-tap-checkpoint-start", "Checkpoint ids increase per vbucket.", "tap"),
    ("tap-checkpoint-unrequested", "EINVAL", "warning", KV_TAP + "#0x46-tap-checkpoint-start", "CHECKPOINT frames on a connection whose TAP_CONNECT did not set Checkpoint.", "tap"),
    ("tap-keys-only-value", "EINVAL", "error", KV_TAP + "#keys-only", "A mutation carries a value under TAP_FLAG_NO_VALUE, or without it once keys-only was granted.", "tap"),
    ("tap-ttl-zero", "EINVAL", "error", KV_TAP + "#0x41-tap-mutation", "An event with TTL 0: the receiving daemon rejects it.", "tap"),
    ("tap-engine-specific", "EINVAL", "error", KV_TAP + "#0x45-tap-vbucket-set", "TAP_VBUCKET_SET and TAP_OPAQUE carry 4 engine-specific bytes.", "tap"),
    ("tap-item-flags-byte-order", "ANNOTATION", "info", KV_TAP + "#0x41-tap-mutation", "Mutation item flags without TAP_FLAG_NETWORK_BYTE_ORDER, shown in both byte orders.", "tap"),
)

#: Each RDB rule's severity is what redis-server (7.0.15, with sanitize-dump-payload no, its
#: default, and yes, the deep checks redis-check-rdb makes) does with a file that triggers it:
#: an error where it refuses the file, a warning where it loads it (tests/test_rdb_server.py).
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
    ("rdb-inflate-cap", "LIMIT", "warning", DRAGONFLY + "src/server/rdb_load.cc#L2910", "Dragonfly's compressed blobs inflate past the input's budget (DCPINSPECT_MAX_RDB_INFLATE_RATIO times the bytes read, 1,000 by default, or DCPINSPECT_MAX_RDB_INFLATED in all, 8 GiB), or nest more than 4 deep: the rest of the blob is passed over unread, and decoding goes on after it.", "rdb",
     "redis-server reads no Dragonfly blob (its opcodes are past the ones it knows); the budget is this decoder's, not the file's."),
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

ALL_RULES = {**FRAME_RULES, **STREAM_RULES, **TAP_RULES, **RDB_RULES, **REDIS_RULES, **DFLY_RULES, **DFS_RULES}

#: Error classes for peer answers (status → class).
STATUS_CLASSES = {ST.KeyEnoent: "KEY_ENOENT", ST.DcpStreamNotFound: "KEY_ENOENT", ST.Einval: "EINVAL",
                  ST.Erange: "ERANGE", ST.Rollback: "ROLLBACK", ST.KeyEexists: "KEY_EEXISTS",
                  ST.OpaqueNoMatch: "KEY_EEXISTS", ST.NotMyVbucket: "NOT_MY_VBUCKET", ST.DcpStreamIdInvalid: "EINVAL",
                  ST.NotSupported: "NOT_SUPPORTED", ST.XattrEinval: "EINVAL"}
