"""MCBP's rules, by scope: per frame, per DCP stream, per TAP conversation; and the error
class of each status a server answers with."""

from __future__ import annotations

from ....rules.registry import LIMITS, rules_table as _rules
from ..messages.opcodes import ST

#: Where each rule comes from: the public upstream documents and sources, pinned to the
#: revisions the rules were written from (a heading or a line of each), or this repository's
#: own file for a limit of the decoder's.
KV = "https://github.com/couchbase/kv_engine/blob/eba4298981505cdc3371abbfb8be213236f7875a/"
#: TAP's document, in its last revision before kv_engine removed it with TAP itself
KV_TAP = "https://github.com/couchbase/kv_engine/blob/39f5d68640968d6cb2a498632cb94ee157c996f8/docs/TAP.md"


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
    ("beyond-end-seqno", "ERANGE", "error", KV + "docs/dcp/documentation/commands/stream-request.md#stream-request-opcode-0x53", "A new snapshot or item after the snapshot that reached the requested end seqno (said once a stream, on the first).", "stream"),
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
    ("tap-ack-flag", "EINVAL", "warning", KV_TAP + "#ack", "VBUCKET_SET, OPAQUE and CHECKPOINT frames ask for an ACK on a SupportAck connection, and no event does without it (said once, again only after a TAP_CONNECT or an event that asks as it must).", "tap"),
    ("tap-ack-unmatched", "KEY_ENOENT", "error", KV_TAP + "#ack", "An ACK answers no outstanding event of its opcode and opaque (or travels the producer's way).", "tap"),
    ("tap-ack-unanswered", "LIVENESS", "error", KV_TAP + "#ack", "An event asked for an ACK (TAP_FLAG_ACK) that no later, cumulative ACK covered.", "tap"),
    ("tap-nack-not-resent", "LIVENESS", "warning", KV_TAP + "#ack", "After a NACK (EBUSY, ETMPFAIL) the producer did not send the event and those after it again.", "tap"),
    ("tap-error-not-disconnected", "PEER_ERROR", "warning", KV_TAP + "#ack", "The producer kept sending after an error answer other than a NACK; it must disconnect.", "tap"),
    ("tap-takeover-state", "EINVAL", "error", KV_TAP + "#transfer-vbucket-ownership", "A takeover stream sets each vbucket pending, then active: no state skipped, reversed or foreign.", "tap"),
    ("tap-takeover-incomplete", "LIVENESS", "warning", KV_TAP + "#transfer-vbucket-ownership", "A vbucket of a takeover stream in its takeover phase never reached active.", "tap"),
    ("tap-checkpoint-order", "SNAPSHOT", "error", KV_TAP + "#0x46-tap-checkpoint-start", "CHECKPOINT_START comes before the END of the same id, one checkpoint open at a time.", "tap"),
    ("tap-checkpoint-regression", "ERANGE", "error", KV_TAP + "#0x46-tap-checkpoint-start", "Checkpoint ids increase per vbucket.", "tap"),
    ("tap-checkpoint-unrequested", "EINVAL", "warning", KV_TAP + "#0x46-tap-checkpoint-start", "CHECKPOINT frames on a connection whose TAP_CONNECT did not set Checkpoint.", "tap"),
    ("tap-keys-only-value", "EINVAL", "error", KV_TAP + "#keys-only", "A mutation carries a value under TAP_FLAG_NO_VALUE, or without it once keys-only was granted (said once, again only after a mutation without a value).", "tap"),
    ("tap-ttl-zero", "EINVAL", "error", KV_TAP + "#0x41-tap-mutation", "An event with TTL 0: the receiving daemon rejects it.", "tap"),
    ("tap-engine-specific", "EINVAL", "error", KV_TAP + "#0x45-tap-vbucket-set", "TAP_VBUCKET_SET and TAP_OPAQUE carry 4 engine-specific bytes.", "tap"),
    ("tap-item-flags-byte-order", "ANNOTATION", "info", KV_TAP + "#0x41-tap-mutation", "Mutation item flags without TAP_FLAG_NETWORK_BYTE_ORDER, shown in both byte orders.", "tap"),
)

#: every MCBP rule, in the rule book's order
RULES = {**FRAME_RULES, **STREAM_RULES, **TAP_RULES}

#: Error classes for peer answers (status → class).
STATUS_CLASSES = {ST.KeyEnoent: "KEY_ENOENT", ST.DcpStreamNotFound: "KEY_ENOENT", ST.Einval: "EINVAL",
                  ST.Erange: "ERANGE", ST.Rollback: "ROLLBACK", ST.KeyEexists: "KEY_EEXISTS",
                  ST.OpaqueNoMatch: "KEY_EEXISTS", ST.NotMyVbucket: "NOT_MY_VBUCKET", ST.DcpStreamIdInvalid: "EINVAL",
                  ST.NotSupported: "NOT_SUPPORTED", ST.XattrEinval: "EINVAL"}
