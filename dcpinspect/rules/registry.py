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

    def finding(self, message: str, offset: int | None = None, severity: str | None = None, **context) -> Finding:
        return Finding(self.id, self.cls, severity or self.severity, message, offset, self.ref, **context)


def _rules(*rows: tuple) -> dict[str, Rule]:
    return {row[0]: Rule(*row) for row in rows}


FRAME_RULES = _rules(
    ("truncated", "TRUNCATED", "warning", "dcp.md §1.3", "The frame ends before its header or body does."),
    ("lengths-exceed-body", "EINVAL", "error", "dcp.md §1.1", "Framing + extras + key lengths exceed the total body length."),
    ("unknown-magic", "EINVAL", "error", "dcp.md §1.2", "The magic byte is none of 0x80, 0x81, 0x08, 0x18, 0x82, 0x83."),
    ("unknown-opcode", "EINVAL", "error", "dcp.md §7", "The opcode is not defined for this magic."),
    ("retired-opcode", "NOT_SUPPORTED", "warning", "dcp.md §7, §13", "The opcode was removed from the server (TAP, DCP_FLUSH, ...)."),
    ("datatype-invalid", "EINVAL", "error", "dcp.md §3.1", "Datatype has bits above 0x07."),
    ("extras-length", "EINVAL", "error", "dcp.md §8", "The extras length is not one this opcode allows."),
    ("key-required", "EINVAL", "error", "dcp.md §8", "The opcode requires a key and the frame has none."),
    ("key-forbidden", "EINVAL", "error", "dcp.md §8", "The opcode must not carry a key."),
    ("value-required", "EINVAL", "error", "dcp.md §8", "The opcode requires a value and the frame has none."),
    ("value-forbidden", "EINVAL", "error", "dcp.md §8", "The opcode must not carry a value."),
    ("key-too-long", "EINVAL", "error", "dcp.md §1.1, §12", "Keys are at most 250 bytes (251 with a collection prefix)."),
    ("snapshot-marker-version", "EINVAL", "error", "dcp.md §8.7", "Marker version must be 0x00 (v2.0) or 0x02 (v2.2); 0x01 (v2.1) was removed."),
    ("snapshot-marker-value-size", "EINVAL", "error", "dcp.md §8.7", "A v2.0 marker value is 36 bytes, a v2.2 value 52."),
    ("reserved-flags", "EINVAL", "error", "dcp.md §8.1, §8.4, §8.7, §8.19", "Flag bits that are reserved, removed or unknown are set."),
    ("collection-key-leb128", "EINVAL", "error", "dcp.md §5", "The collection-id prefix is not a canonical unsigned LEB128."),
    ("collection-key-empty", "EINVAL", "error", "dcp.md §5", "The logical key after the collection id is empty."),
    ("collection-id-reserved", "EINVAL", "error", "dcp.md §5", "Collection ids 1–7 are reserved on the wire."),
    ("xattr-invalid", "EINVAL", "error", "dcp.md §3.2", "The xattr blob is malformed (server answers XattrEinval)."),
    ("snappy-invalid", "EINVAL", "error", "dcp.md §3.1", "Snappy-compressed data does not inflate (or exceeds the size cap)."),
    ("json-invalid", "EINVAL", "warning", "dcp.md §3.1", "A value flagged or expected as JSON does not parse."),
    ("json-too-deep", "LIMIT", "warning", "dcp.md §3.1",
     "A value flagged or expected as JSON nests deeper than the parser's cap (DCPINSPECT_MAX_JSON_DEPTH, 512 levels): not parsed."),
    ("system-event-value", "EINVAL", "error", "dcp.md §9", "The system event value has the wrong size or encoding for its version."),
    ("system-event-id", "EINVAL", "error", "dcp.md §9.1", "Unknown system event id or version."),
    ("frame-info-encoding", "EINVAL", "error", "dcp.md §2.1", "The flexible framing extras do not parse."),
    ("frame-info-invalid", "EINVAL", "error", "dcp.md §2.2–2.3", "A frame info has the wrong size or content."),
    ("value-size", "EINVAL", "error", "dcp.md §8", "A fixed-size value has the wrong length."),
    ("stream-request-value", "EINVAL", "error", "dcp.md §8.4", "The stream request JSON value is malformed."),
    ("cache-transfer-value", "EINVAL", "error", "dcp.md §8.20", "Cache transfer records are malformed."),
    ("tap-connect-value", "EINVAL", "error", "dcp.md §13, tap.md §9", "TAP_CONNECT flag values do not match the value bytes (Backfill without its 8 bytes, a vbucket or checkpoint count past the end, bytes left over)."),
    ("seqno-zero", "EINVAL", "error", "dcp.md §11.1 R6", "Seqnos of mutations, prepares, commits and aborts are never 0."),
    ("nmeta-nonzero", "EINVAL", "error", "dcp.md §8.8", "nmeta must be 0 (extended meta was removed in 5.0)."),
    ("cas-zero", "EINVAL", "error", "dcp.md §8.8", "A prepare must carry a non-zero CAS."),
    ("cas-nonzero", "EINVAL", "error", "dcp.md §7", "This message must carry CAS 0."),
    ("durability-level", "EINVAL", "error", "dcp.md §8.8", "Prepare durability level must be 1, 2 or 3."),
    ("vbucket-state", "EINVAL", "error", "dcp.md §8.11", "Vbucket state must be 1 (active) to 4 (dead)."),
    ("stream-end-reason", "EINVAL", "warning", "dcp.md §8.6", "Unknown stream end reason."),
    ("deletion-datatype", "EINVAL", "error", "dcp.md §8.9", "A deletion's datatype must be one of 0x00, 0x02, 0x04, 0x05, 0x06, 0x07."),
    ("body-length-mismatch", "EINVAL", "error", "dcp.md §1.1", "The total body length field disagrees with the bytes the example holds."),
    ("peer-error", "PEER_ERROR", "warning", "dcp.md §6, §11.5", "The peer answered with an error status."),
    ("caption-mismatch", "ANNOTATION", "warning", "dcp.md §15", "A document's field caption disagrees with the bytes it annotates."),
)

STREAM_RULES = _rules(
    ("seqno-regression", "ERANGE", "error", "dcp.md §11.1 R1", "A stream's seqnos must strictly increase (OSO snapshots excepted).", "stream"),
    ("seqno-outside-snapshot", "ERANGE", "error", "dcp.md §11.1 R3, §11.2", "A data item's seqno must lie in its snapshot's [start, end].", "stream"),
    ("item-before-marker", "ERANGE", "error", "dcp.md §11.1 R3", "A data item arrived before any snapshot marker on its stream.", "stream"),
    ("marker-overlap", "ERANGE", "error", "dcp.md §11.1 R2/R4", "A snapshot starts before the previous one ended.", "stream"),
    ("marker-end-regression", "ERANGE", "error", "dcp.md §11.1 R4", "Snapshot end seqnos must strictly increase (History after non-History disk excepted).", "stream"),
    ("first-marker-start", "ERANGE", "error", "dcp.md §11.2", "The first snapshot starts below the requested start seqno.", "stream"),
    ("marker-inside-snapshot", "ERANGE", "warning", "dcp.md §11.3 R7", "A new marker arrived before the previous snapshot reached its end seqno.", "stream"),
    ("stream-request-range", "ERANGE", "error", "dcp.md §8.4, §11.6", "A stream request must satisfy snap_start <= start <= snap_end and start <= end.", "stream"),
    ("no-stream", "KEY_ENOENT", "error", "dcp.md §8.7, §11.5", "A stream message for a vbucket / opaque / stream-id with no open stream.", "stream"),
    ("after-stream-end", "KEY_ENOENT", "error", "dcp.md §11.4", "A stream message after that stream's STREAM_END.", "stream"),
    ("duplicate-key", "SNAPSHOT", "warning", "dcp.md §11.3 R11", "A key repeats in a snapshot without MayContainDuplicates (0x20) or History (0x10).", "stream"),
    ("ack-unanswered", "SNAPSHOT", "error", "dcp.md §8.7, §11.3 R8", "An Acknowledge-flagged snapshot was completed but never acknowledged.", "stream"),
    ("hcs-without-disk", "SNAPSHOT", "warning", "dcp.md §8.7, §11.3 R9", "High completed / prepared seqno given in a snapshot without the Disk flag.", "stream"),
    ("mvs-above-end", "ERANGE", "error", "dcp.md §11.3 R9", "Max visible / high prepared seqno lies above the snapshot end.", "stream"),
    ("beyond-end-seqno", "ERANGE", "error", "dcp.md §11.4", "A new snapshot or item after the snapshot that reached the requested end seqno.", "stream"),
    ("oso-unbalanced", "SNAPSHOT", "error", "dcp.md §8.19", "OSO start/end markers do not pair up.", "stream"),
    ("oso-below-start", "ERANGE", "error", "dcp.md §11.1 R5", "An OSO item is not above the seqno the stream had before OSO started.", "stream"),
    ("rollback-ignored", "ROLLBACK", "error", "dcp.md §11.6", "After a ROLLBACK answer the client re-requested above the rollback seqno.", "stream"),
    ("noop-unanswered", "LIVENESS", "warning", "dcp.md §8.12, §11.9", "A DCP_NOOP was never answered with the same opaque.", "stream"),
    ("buffer-overrun", "FLOW_CONTROL", "warning", "dcp.md §11.8", "The producer kept sending with the consumer's buffer full (once an episode: again only after an acknowledgement brought the bytes below the buffer).", "stream"),
    ("buffer-ack-excess", "FLOW_CONTROL", "error", "dcp.md §11.8", "The consumer acknowledged more bytes than it received.", "stream"),
    ("answered-error", "PEER_ERROR", "warning", "dcp.md §11.5", "A request was answered with an error status (shown with the request).", "stream"),
    ("manifest-regression", "COLLECTIONS", "warning", "dcp.md §9.2", "System event manifest uids went backwards on a stream.", "stream"),
    ("reserved-collection", "EINVAL", "error", "dcp.md §5", "A system event names a reserved collection id (1–7).", "stream"),
    ("dcp-open-missing", "EINVAL", "warning", "dcp.md §7, §11.10", "DCP messages on a connection whose DCP_OPEN was not seen (or a second DCP_OPEN).", "stream"),
    ("deletion-version", "EINVAL", "error", "dcp.md §8.9, §11.10", "Deletion extras length disagrees with the DCP_OPEN IncludeDeleteTimes flag.", "stream"),
    ("negotiation-missing", "EINVAL", "warning", "dcp.md §11.10", "A message that needs a control or HELO feature the connection did not negotiate.", "stream"),
    ("stream-id-missing", "EINVAL", "error", "dcp.md §11.7", "enable_stream_id is on but a stream message or request has no stream id.", "stream"),
)

TAP_RULES = _rules(
    ("tap-connect-missing", "EINVAL", "warning", "tap.md §1, §9", "TAP events on a connection seen from its start before any TAP_CONNECT (or a second TAP_CONNECT).", "tap"),
    ("tap-connect-flags", "EINVAL", "warning", "tap.md §9.2", "TAP_CONNECT flags no server defines, or TakeoverVbuckets without ListVbuckets.", "tap"),
    ("tap-seqno", "ERANGE", "error", "tap.md §3.5", "Event sequence numbers (opaques) go up by one, 1 after 0xFFFFFFFF; a NOOP carries 0.", "tap"),
    ("tap-ack-flag", "EINVAL", "warning", "tap.md §8", "VBUCKET_SET, OPAQUE and CHECKPOINT frames ask for an ACK on a SupportAck connection, and no event does without it.", "tap"),
    ("tap-ack-unmatched", "KEY_ENOENT", "error", "tap.md §8", "An ACK answers no outstanding event of its opcode and opaque (or travels the producer's way).", "tap"),
    ("tap-ack-unanswered", "LIVENESS", "error", "tap.md §8", "An event asked for an ACK (TAP_FLAG_ACK) that no later, cumulative ACK covered.", "tap"),
    ("tap-nack-not-resent", "LIVENESS", "warning", "tap.md §8", "After a NACK (EBUSY, ETMPFAIL) the producer did not send the event and those after it again.", "tap"),
    ("tap-error-not-disconnected", "PEER_ERROR", "warning", "tap.md §8", "The producer kept sending after an error answer other than a NACK; it must disconnect.", "tap"),
    ("tap-takeover-state", "EINVAL", "error", "tap.md §7", "A takeover stream sets each vbucket pending, then active: no state skipped, reversed or foreign.", "tap"),
    ("tap-takeover-incomplete", "LIVENESS", "warning", "tap.md §7", "A vbucket of a takeover stream in its takeover phase never reached active.", "tap"),
    ("tap-checkpoint-order", "SNAPSHOT", "error", "tap.md §5.5", "CHECKPOINT_START comes before the END of the same id, one checkpoint open at a time.", "tap"),
    ("tap-checkpoint-regression", "ERANGE", "error", "tap.md §5.5", "Checkpoint ids increase per vbucket.", "tap"),
    ("tap-checkpoint-unrequested", "EINVAL", "warning", "tap.md §5.5, §9.2", "CHECKPOINT frames on a connection whose TAP_CONNECT did not set Checkpoint.", "tap"),
    ("tap-keys-only-value", "EINVAL", "error", "tap.md §4, §9.2", "A mutation carries a value under TAP_FLAG_NO_VALUE, or without it once keys-only was granted.", "tap"),
    ("tap-ttl-zero", "EINVAL", "error", "tap.md §3.4", "An event with TTL 0: the receiving daemon rejects it.", "tap"),
    ("tap-engine-specific", "EINVAL", "error", "tap.md §5.4", "TAP_VBUCKET_SET and TAP_OPAQUE carry 4 engine-specific bytes.", "tap"),
    ("tap-item-flags-byte-order", "ANNOTATION", "info", "tap.md §4", "Mutation item flags without TAP_FLAG_NETWORK_BYTE_ORDER, shown in both byte orders.", "tap"),
)

RDB_RULES = _rules(
    ("rdb-magic", "EINVAL", "error", "rdb.md §1", "The input does not start with REDIS and 4 digits, or VALKEY and 3: it is no RDB.", "rdb"),
    ("rdb-version", "NOT_SUPPORTED", "error", "rdb.md §2", "The RDB version is newer than any known (Redis 15, Valkey 80): no server of those loads it; it is decoded with the newest numbering.", "rdb"),
    ("rdb-checksum", "CHECKSUM", "error", "rdb.md §7", "The CRC-64 after the EOF opcode is not the CRC of the bytes before it (a stored 0 means not computed, and is no finding).", "rdb"),
    ("rdb-truncated", "TRUNCATED", "error", "rdb.md §1", "The input ends before the EOF opcode and its checksum; every key before the cut is reported.", "rdb"),
    ("rdb-unknown-type", "EINVAL", "error", "rdb.md §4, §5, §11", "A byte where a value type or opcode is expected is none the file's vendor and version define, or one whose layout is not known: decoding stops there.", "rdb"),
    ("rdb-corrupt", "EINVAL", "error", "rdb.md §3, §6", "An encoding inside a record does not hold (a length, a string encoding, LZF data, a ziplist, listpack, intset, zipmap, stream, module or Dragonfly layout): decoding goes on after a damaged string whose extent is known, else stops.", "rdb"),
    ("rdb-string-too-long", "LIMIT", "warning", "rdb.md §3.2", "A string claims more bytes than the decoder holds (DCPINSPECT_MAX_RDB_STRING, 512 MiB): its bytes are passed over unread.", "rdb"),
    ("rdb-duplicate-key", "SNAPSHOT", "error", "rdb.md §1, §8.4", "A key is serialised twice in one database of one snapshot (every entry exactly once).", "rdb"),
    ("rdb-expired-key", "SNAPSHOT", "warning", "rdb.md §3.3, §4.1", "A key's expiry lies before the snapshot's time (aux ctime): a loading master drops it.", "rdb"),
    ("rdb-trailing-data", "EINVAL", "warning", "rdb.md §1, §7", "Bytes follow the EOF opcode and its checksum.", "rdb"),
    ("rdb-keys-cap", "LIMIT", "info", "rdb.md §1", "The snapshot has more keys than are remembered for the duplicate-key rule (DCPINSPECT_MAX_RDB_KEYS, 2,000,000): the rest are not checked.", "rdb"),
)

REDIS_RULES = _rules(
    ("resp-protocol-error", "EINVAL", "error", "rdb.md §12", "Bytes of a Redis connection that are no RESP (an unknown type byte, a length or count that is no number, a line with no CRLF, nesting too deep): decoding looks for the next command.", "replication"),
    ("resp-truncated", "TRUNCATED", "warning", "rdb.md §12", "The connection ends inside a RESP frame (or a Dragonfly journal record).", "replication"),
    ("repl-offset-mismatch", "ERANGE", "error", "rdb.md §12.3", "A REPLCONF ACK offset is not the +FULLRESYNC (or PSYNC) offset plus the bytes of whole commands the master had sent before it: past them, or inside one.", "replication"),
    ("repl-ack-regression", "ERANGE", "warning", "rdb.md §12.3", "A REPLCONF ACK offset is below one the replica acknowledged before on the connection.", "replication"),
)

DFLY_RULES = _rules(
    ("dfly-lsn-gap", "ERANGE", "error", "rdb.md §9, §13.2", "A journal LSN op of a Dragonfly flow names a later LSN than its records reach (counted from the flow's JOURNAL_OFFSET, the LSN partial sync asked for, or the LSN op before): records were skipped.", "dragonfly"),
    ("dfly-lsn-repeat", "ERANGE", "error", "rdb.md §9, §13.2", "A journal LSN op of a Dragonfly flow names an earlier LSN than its records reach, or one not above the LSN op before it: records came twice, or the numbering went back.", "dragonfly"),
    ("dfly-fullsync-end-missing", "SNAPSHOT", "error", "rdb.md §8.2, §13.2", "A FULL flow's snapshot reaches JOURNAL_OFFSET (stable sync) or its end without FULLSYNC_END: the replica never learns that the static data is done.", "dragonfly"),
    ("dfly-duplicate-key", "SNAPSHOT", "error", "rdb.md §8.4, §13.2", "A key is serialised by two flows (shards) of one Dragonfly sync: every entry is in exactly one shard, once (twice in one flow is rdb-duplicate-key).", "dragonfly"),
    ("dfly-sync-unannounced", "KEY_ENOENT", "error", "rdb.md §13.1, §13.2", "A DFLY FLOW names a sync (master replid and SYNC id) that no control connection announced, though one from the same replica host to the same master was seen announcing before it.", "dragonfly"),
    ("dfly-flow-count", "EINVAL", "error", "rdb.md §13.1, §13.2", "A sync seen from its announcement to DFLY SYNC or STARTSTABLE had fewer FLOW connections than the flows its master announced, or a FLOW index past them.", "dragonfly"),
    ("dfly-keys-cap", "LIMIT", "info", "rdb.md §13.2", "More keys than are remembered for dfly-duplicate-key (DCPINSPECT_MAX_RDB_KEYS, 2,000,000, as 64-bit digests): the rest are not checked.", "dragonfly"),
)

DFS_RULES = _rules(
    ("dfs-snapshot-id", "SNAPSHOT", "error", "rdb.md §8.1", "The files of one Dragonfly .dfs set do not all carry the same snapshot-id aux field (the summary's, or one of them has none): they come from different snapshots.", "rdb"),
    ("dfs-shard-missing", "SNAPSHOT", "error", "rdb.md §8.1", "A .dfs set's shard files are not <name>-0000.dfs up to the summary's shard-count: fewer are found, the numbers have a gap, or one is past the count.", "rdb"),
    ("dfs-summary-missing", "SNAPSHOT", "error", "rdb.md §8.1", "A .dfs set's shard files have no <name>-summary.dfs beside them: the snapshot's global data (scripts, search indices, shard-count) is missing.", "rdb"),
    ("dfs-shard-id", "EINVAL", "error", "rdb.md §8.1", "A .dfs shard file's shard-id aux field is not the number in its name, or it has none.", "rdb"),
    ("dfs-duplicate-key", "SNAPSHOT", "error", "rdb.md §8.1, §8.4", "A key is serialised in two shard files of one .dfs set: every entry is in exactly one shard, once (twice in one file is rdb-duplicate-key).", "rdb"),
    ("dfs-keys-cap", "LIMIT", "info", "rdb.md §8.1", "A .dfs set has more keys than are remembered for dfs-duplicate-key (DCPINSPECT_MAX_RDB_KEYS, 2,000,000, as 64-bit digests): the rest are not checked.", "rdb"),
)

ALL_RULES = {**FRAME_RULES, **STREAM_RULES, **TAP_RULES, **RDB_RULES, **REDIS_RULES, **DFLY_RULES, **DFS_RULES}

#: Error classes for peer answers (status → class).
STATUS_CLASSES = {ST.KeyEnoent: "KEY_ENOENT", ST.DcpStreamNotFound: "KEY_ENOENT", ST.Einval: "EINVAL",
                  ST.Erange: "ERANGE", ST.Rollback: "ROLLBACK", ST.KeyEexists: "KEY_EEXISTS",
                  ST.OpaqueNoMatch: "KEY_EEXISTS", ST.NotMyVbucket: "NOT_MY_VBUCKET", ST.DcpStreamIdInvalid: "EINVAL",
                  ST.NotSupported: "NOT_SUPPORTED", ST.XattrEinval: "EINVAL"}
