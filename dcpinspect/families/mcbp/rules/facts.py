"""The facts DCP rules are written in (``rules/conditions.py``): each named once, with how
the rules read it. A message fact is read from the decoded message; the others from the
judging context ``c`` of ``rules/stream.py`` (``c.stream``: the message's stream, ``c.snap``: its
current snapshot, before this message; ``c.st``: the connection's stream state; ``c.neg``:
what the connection negotiated; ``c.validator``). A fast path knows a fact by its name:
``_lane.c`` reads the message facts from each frame's bytes and carries the run facts
through a run; connection facts it is given, read with ``get`` as a run starts."""

from __future__ import annotations

from ..messages.catalog import REQUIRED
from ..messages.dcp import DELETION_V1, DELETION_V2, OPEN_FLAGS
from ....rules.conditions import Fact

INCLUDE_DELETE_TIMES = next(bit for bit, name in OPEN_FLAGS.items() if name == "IncludeDeleteTimes")


def deletion_extras_for(open_flags: int | None) -> int:
    """The extras size of a DCP_DELETION on a connection whose DCP_OPEN had ``open_flags``."""
    return DELETION_V2.size if (open_flags or 0) & INCLUDE_DELETE_TIMES else DELETION_V1.size


def _message(name: str, doc: str, src: str, **names) -> Fact:
    return Fact(name, doc, src, "message", **names)


def _value(field: str, default: int | None = 0) -> str:
    return f"m.values.get({field!r}, {default!r})"


# -- of the message ----------------------------------------------------------------------

seqno = _message("seqno", "the message's seqno (its opcode's seqno field)",
                 "m.values.get(m.spec.seqno_field) if m.spec is not None and m.spec.seqno_field else None")
nmeta = _message("nmeta", "a mutation's or deletion's nmeta extras field (0 where absent)", _value("nmeta"))
extras_length = _message("extras_length", "the extras length of the header", "m.extras_length")
datatype = _message("datatype", "the datatype byte of the header", "m.datatype")
key_required = _message("key_required", "the catalog requires this message to have a key",
                        "m.body is not None and m.body.key == REQUIRED", REQUIRED=REQUIRED)
key_length = _message("key_length", "the key length of the header (a collection prefix included)", "m.key_length")
logical_key_length = _message("logical_key_length", "the key's length after its collection prefix",
                              "len(m.key) if m.key is not None else 0")
prefixed = _message("prefixed", "the key carries a collection-id prefix", "m.collection_id is not None")
collection_id = _message("collection_id", "the key's collection id (0 without a prefix)", "m.collection_id or 0")
has_sid = _message("has_sid", "the frame carries a DCP stream-id frame info", "m.stream_id is not None")
marker_start = _message("marker_start", "a snapshot marker's start seqno", _value("start_seqno"))
marker_end = _message("marker_end", "a snapshot marker's end seqno", _value("end_seqno"))
snapshot_type = _message("snapshot_type", "a snapshot marker's flags", _value("snapshot_type"))
marker_version = _message("marker_version", "a v2 snapshot marker's version byte (0 for v1 and v2.0)", _value("version"))
has_mvs = _message("has_mvs", "the marker gives a max visible seqno", "m.values.get('max_visible_seqno') is not None")
mvs = _message("mvs", "the marker's max visible seqno", _value("max_visible_seqno"))
has_hcs = _message("has_hcs", "the marker gives a high completed seqno", "m.values.get('high_completed_seqno') is not None")
hcs = _message("hcs", "the marker's high completed seqno", _value("high_completed_seqno"))
has_hps = _message("has_hps", "the marker gives a high prepared seqno", "m.values.get('high_prepared_seqno') is not None")
hps = _message("hps", "the marker's high prepared seqno", _value("high_prepared_seqno"))

# -- of the stream, carried through a run of its frames -----------------------------------

last_seqno = Fact("last_seqno", "the stream's seqno before this message", "c.stream.last_seqno", "run")
has_snapshot = Fact("has_snapshot", "the stream has had a snapshot marker", "c.snap is not None", "run")
snap_start = Fact("snap_start", "the current snapshot's start seqno", "c.snap.start", "run")
snap_end = Fact("snap_end", "the current snapshot's end seqno", "c.snap.end", "run")
snap_type = Fact("snap_type", "the current snapshot's flags", "c.snap.flags", "run")
snap_complete = Fact("snap_complete", "the current snapshot reached its end seqno", "c.snap.complete", "run")
key_seen = Fact("key_seen", "the message's key (and collection, and whether a prepare) was in the current snapshot "
                "(of the keys remembered: limits.SNAPSHOT_KEYS)", "c.digest in c.snap.keys", "run")
unacked = Fact("unacked", "bytes the producer sent that the consumer has not acknowledged", "c.st.unacked", "run")

# -- of the connection and the stream, the same over a run --------------------------------

seen_from_start = Fact("seen_from_start", "the connection was captured from its first byte", "c.validator.seen_from_start")
dcp_open_seen = Fact("dcp_open_seen", "a DCP_OPEN was seen", "c.st.dcp_open_seen")
producer_known = Fact("producer_known", "which side produces is known (or already reported unknown)",
                      "c.st.producer_direction is not None")
has_stream = Fact("has_stream", "the message belongs to a stream the connection knows", "c.stream is not None")
stream_waiting = Fact("stream_waiting", "the stream was requested and not (yet) accepted, or was rejected",
                      "c.stream.state in ('requested', 'rejected')")
stream_ended = Fact("stream_ended", "the stream ended (STREAM_END)", "c.stream.state == 'ended'")
adopted = Fact("adopted", "the stream was joined mid-conversation, its request not seen", "c.stream.adopted")
in_oso = Fact("in_oso", "the stream is inside an OSO snapshot", "c.stream.in_oso")
oso_base = Fact("oso_base", "the stream's seqno when its OSO snapshot started", "c.stream.oso_base")
end_reached = Fact("end_reached", "the snapshot holding the requested end seqno is complete", "c.stream.end_reached")
first_floor = Fact("first_floor", "the lowest start the first snapshot may have: the requested start or snapshot start",
                   "min(c.stream.start_seqno, c.stream.request.get('snap_start_seqno', c.stream.start_seqno))")
stream_ids = Fact("stream_ids", "enable_stream_id was negotiated", "c.neg.stream_ids")
buffer_size = Fact("buffer_size", "the consumer's flow-control buffer (0: none)", "c.neg.buffer_size or 0")
overrun = Fact("overrun", "the last flow-controlled message went with the buffer already full, and no "
               "acknowledgement brought the unacknowledged bytes below it since", "c.st.overrun")
open_flags_known = Fact("open_flags_known", "the DCP_OPEN flags are known", "c.neg.dcp_open_flags is not None")
deletion_extras = Fact("deletion_extras", "the extras size a deletion has under the DCP_OPEN flags",
                       "deletion_extras_for(c.neg.dcp_open_flags)", deletion_extras_for=deletion_extras_for)
v22_negotiated = Fact("v22_negotiated", "DCP_CONTROL max_marker_version=2.2 was negotiated",
                      "c.neg.controls.get('max_marker_version') == '2.2'")
sync_writes = Fact("sync_writes", "DCP_CONTROL enable_sync_writes=true was negotiated",
                   "c.neg.controls.get('enable_sync_writes') == 'true'")
expiry_opcode = Fact("expiry_opcode", "DCP_CONTROL enable_expiry_opcode=true was negotiated",
                     "c.neg.controls.get('enable_expiry_opcode') == 'true'")
collections_refused = Fact("collections_refused", "HELO settled collections, and not on",
                           "c.neg.collections_source == 'HELO' and not c.neg.collections")

# -- episodes: a state that lasts is reported on its first message, again only once it ended --

late = Fact("late", "a message came on the stream after its STREAM_END (the first one was judged)", "c.stream.late")
strayed = Fact("strayed", "a message for this vbucket and stream id came while it had no open stream, and none has "
               "opened since", "c.st.strayed(c.stream, c.msg)")
unlabelled = Fact("unlabelled", "a message of the stream came without the stream-id frame enable_stream_id asks for",
                  "c.stream.unlabelled")
outside = Fact("outside", "an item of the stream came with a seqno outside its current snapshot",
               "c.snap is not None and c.snap.strayed")
overran = Fact("overran", "a marker or item of the stream came after the snapshot holding its end seqno (the first "
                "one was judged)", "c.stream.overran")
unmarked = Fact("unmarked", "an item of the stream came before any snapshot marker", "c.stream.unmarked")


def _unmet(name: str, key: str) -> Fact:
    return Fact(name, f"a message that needs {key} came while the connection had not negotiated it, and it has "
                "not been negotiated since", f"{key!r} in c.neg.unmet")


collections_unmet = _unmet("collections_unmet", "collections")
sync_writes_unmet = _unmet("sync_writes_unmet", "enable_sync_writes")
expiry_unmet = _unmet("expiry_unmet", "enable_expiry_opcode")
v22_unmet = _unmet("v22_unmet", "max_marker_version")
