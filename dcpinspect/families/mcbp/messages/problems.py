"""What the decoder notices in a frame's bytes, by kind: each kind named once here, with
what it means. A decoder records a :class:`~dcpinspect.findings.Problem` of a kind and goes
on; which rule reports it (its class, severity and reference) is the rules' to say
(``rules/frame.py``), not the decoder's."""

from __future__ import annotations

TRUNCATED = "truncated"  # the frame ends before its header or body does
LENGTHS_EXCEED_BODY = "lengths-exceed-body"  # framing + extras + key lengths over the body length
FRAME_INFO_ENCODING = "frame-info-encoding"  # framing extras that do not parse as frame infos
FRAME_INFO_INVALID = "frame-info-invalid"  # a frame info whose value its id does not allow
COLLECTION_KEY_LEB128 = "collection-key-leb128"  # a key's collection-id prefix is no LEB128 number
VALUE_SIZE = "value-size"  # a value of fixed-size records whose size does not fit them
JSON_INVALID = "json-invalid"  # a value said (or required) to be JSON that is not
JSON_TOO_DEEP = "json-too-deep"  # JSON nested past the cap (limits.JSON_DEPTH)
SNAPPY_INVALID = "snappy-invalid"  # a Snappy-compressed value that does not inflate
XATTR_INVALID = "xattr-invalid"  # an extended-attributes section that does not parse
STREAM_REQUEST_VALUE = "stream-request-value"  # a DCP_STREAM_REQ value (JSON) of the wrong shape
SNAPSHOT_MARKER_VERSION = "snapshot-marker-version"  # a v2 snapshot marker of a version removed or unknown
SNAPSHOT_MARKER_VALUE_SIZE = "snapshot-marker-value-size"  # a v2 snapshot marker value of the wrong size
SYSTEM_EVENT_VALUE = "system-event-value"  # a system event's value that does not parse as its version's
CACHE_TRANSFER_VALUE = "cache-transfer-value"  # a cache-transfer value whose records overrun it
TAP_CONNECT_VALUE = "tap-connect-value"  # a TAP_CONNECT value shorter than its flags need

KINDS = frozenset(v for k, v in dict(globals()).items() if k.isupper() and isinstance(v, str))
