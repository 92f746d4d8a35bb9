"""The rule book: every check the validator can report, with its class and source."""

from __future__ import annotations

from dataclasses import dataclass

from ..findings import Finding


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    cls: str
    severity: str
    ref: str
    summary: str
    scope: str = "frame"  # "frame" or "stream"

    def finding(self, message: str, offset: int | None = None, severity: str | None = None) -> Finding:
        return Finding(self.id, self.cls, severity or self.severity, message, offset, self.ref)


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
    ("system-event-value", "EINVAL", "error", "dcp.md §9", "The system event value has the wrong size or encoding for its version."),
    ("system-event-id", "EINVAL", "error", "dcp.md §9.1", "Unknown system event id or version."),
    ("frame-info-encoding", "EINVAL", "error", "dcp.md §2.1", "The flexible framing extras do not parse."),
    ("frame-info-invalid", "EINVAL", "error", "dcp.md §2.2–2.3", "A frame info has the wrong size or content."),
    ("value-size", "EINVAL", "error", "dcp.md §8", "A fixed-size value has the wrong length."),
    ("stream-request-value", "EINVAL", "error", "dcp.md §8.4", "The stream request JSON value is malformed."),
    ("cache-transfer-value", "EINVAL", "error", "dcp.md §8.20", "Cache transfer records are malformed."),
    ("tap-connect-value", "EINVAL", "error", "dcp.md §13", "TAP_CONNECT flag values do not match the value bytes."),
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

#: Error classes for peer answers (status → class).
STATUS_CLASSES = {0x01: "KEY_ENOENT", 0x0A: "KEY_ENOENT", 0x04: "EINVAL", 0x22: "ERANGE", 0x23: "ROLLBACK",
                  0x02: "KEY_EEXISTS", 0x0B: "KEY_EEXISTS", 0x07: "NOT_MY_VBUCKET", 0x8D: "EINVAL",
                  0x83: "NOT_SUPPORTED", 0x87: "EINVAL"}
