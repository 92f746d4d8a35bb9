"""Stream rules (spec/dcp.md §11): every rule in STREAM_RULES fires on the one
violation built for it, and stays quiet on the valid traffic next to it.

Conversations come from ``dcpgen`` (a producer that keeps each stream's seqno),
run through the capture engine's per-connection core with directions
(``dcpgen.findings``).  Each ``fire_*`` case breaks exactly one rule; each
``valid_*`` case is legal DCP that must produce no error and no warning.
Each rule has a case that fires it and a near miss that must not.
"""

from __future__ import annotations

import pytest

from dcpgen import (
    ACK, BEGIN_COLLECTION, CHECKPOINT, CREATE_SCOPE, DISK, END_COLLECTION, END_OK, END_ROLLBACK,
    END_STATE_CHANGED, ERANGE, HISTORY, INCLUDE_XATTRS, MAY_DUPLICATE, MEMORY, PRODUCER, TAKEOVER, Dcp, Producer, findings, packet_numbers, write_capture,
)
from dcpinspect.families.mcbp.messages.build import build_frame
from dcpinspect.families.mcbp.rules.book import STREAM_RULES

LOUD = ("warning", "error")


def loud(frames, collections=None):
    """Findings of warning or error severity (what validate --fail-on warning counts)."""
    return [f for f in findings(frames, collections) if f.severity in LOUD]


def hits(frames, rule, collections=None):
    return [f for f in findings(frames, collections) if f.rule == rule]


def describe(fs) -> str:
    return "\n".join(f"  frame {f.frame}: {f.rule} {f.severity} {f.cls}: {f.message}" for f in fs)


def assert_clean(frames, collections=None):
    bad = loud(frames, collections)
    assert not bad, "valid conversation drew findings:\n" + describe(bad)


# =============================================================================================
# One violation per rule.  Each case returns the conversation and what the finding must say.
# =============================================================================================

class Expect:
    def __init__(self, vb=None, sid=None, frame=None, cls=None, severity=None, text=()):
        self.vb, self.sid, self.frame, self.cls, self.severity, self.text = vb, sid, frame, cls, severity, text


def _last(d: Dcp) -> int:
    return len(d.frames)


def fire_seqno_regression():
    d = Dcp().handshake(stream_ids=True)
    p = d.stream(5, sid=1)
    p.marker(1, 10)
    p.mutation(seqno=1).mutation(seqno=3)
    p.mutation(seqno=3)  # the same seqno again
    return d, Expect(vb=5, sid=1, frame=_last(d), text=("seqno 3", "previous 3"))


def fire_seqno_outside_snapshot():
    d = Dcp()
    d.handshake()
    p = d.stream(6)
    p.marker(1, 5).mutation(seqno=2).mutation(seqno=5)
    p.mutation(seqno=6)  # no new marker
    return d, Expect(vb=6, frame=_last(d), text=("seqno 6", "1..5"))


def fire_item_before_marker():
    d = Dcp().handshake()
    p = d.stream(7)
    p.mutation(seqno=1)
    return d, Expect(vb=7, frame=_last(d))


def fire_marker_overlap():
    d = Dcp().handshake()
    p = d.stream(8)
    p.snapshot(5)  # 1..5, complete
    p.marker(5, 9)  # starts at the previous end
    return d, Expect(vb=8, frame=_last(d), text=("5..9", "1..5"))


def fire_marker_end_regression():
    d = Dcp().handshake()
    p = d.stream(9)
    p.snapshot(10)  # 1..10
    p.marker(11, 10)  # start > end, end repeats the previous end
    return d, Expect(vb=9, frame=_last(d))


def fire_first_marker_start():
    d = Dcp().handshake()
    p = d.stream(10, start=100, uuid=0xABCD, snap_start=100, snap_end=100)
    p.marker(50, 120)
    return d, Expect(vb=10, frame=_last(d), text=("50", "100"))


def fire_marker_inside_snapshot():
    d = Dcp().handshake()  # collections on: an unfinished snapshot is not explained by hidden items
    p = d.stream(11)
    p.marker(1, 5).mutation(seqno=2)
    p.marker(6, 8)
    return d, Expect(vb=11, frame=_last(d), text=("1..5",))


def fire_stream_request_range():
    d = Dcp().handshake()
    d.stream_request(12, start=20, end=10, snap_start=20, snap_end=20)
    return d, Expect(vb=12, frame=_last(d), text=("20", "10"))


def fire_no_stream():
    d = Dcp().handshake(stream_ids=True)
    d.stream(1, sid=3).snapshot(2)
    stray = Producer(d, vb=13, opaque=0x7777, sid=4)
    stray.marker(1, 1)
    return d, Expect(vb=13, sid=4, frame=_last(d))


def fire_after_stream_end():
    d = Dcp().handshake()
    p = d.stream(14)
    p.snapshot(2).end(END_OK)
    p.mutation()
    return d, Expect(vb=14, frame=_last(d))


def fire_duplicate_key():
    d = Dcp().handshake()
    p = d.stream(15)
    p.marker(1, 3).mutation("k1", cid=8).mutation("k2", cid=8).mutation("k1", cid=8)
    return d, Expect(vb=15, frame=_last(d), text=("k1",))


def fire_ack_unanswered():
    d = Dcp().handshake()
    p = d.stream(16, flags=TAKEOVER)
    p.snapshot(3, flags=MEMORY | ACK)
    marker_frame = _last(d) - 3
    p.snapshot(2)  # the consumer never sent 81 56
    return d, Expect(vb=16, frame=marker_frame)


def fire_hcs_without_disk():
    d = Dcp(collections=False).handshake(("enable_sync_writes", "true"), ("consumer_name", "r1"))
    p = d.stream(17)
    p.marker(1, 2, flags=MEMORY | CHECKPOINT, version="2.0", hcs=1)
    return d, Expect(vb=17, frame=_last(d))


def fire_mvs_above_end():
    d = Dcp(collections=False).handshake(("enable_sync_writes", "true"), ("consumer_name", "r1"))
    p = d.stream(18)
    p.marker(1, 10, flags=MEMORY, version="2.0", mvs=12)
    return d, Expect(vb=18, frame=_last(d), text=("12", "10"))


def fire_beyond_end_seqno():
    d = Dcp().handshake()
    p = d.stream(19, end=10)
    p.snapshot(10)  # 1..10 holds end seqno 10 and is complete
    p.marker(11, 12)
    return d, Expect(vb=19, frame=_last(d))


def fire_oso_unbalanced():
    d = Dcp().handshake(("enable_out_of_order_snapshots", "true"))
    p = d.stream(20, value={"collections": ["8"]})
    p.oso_end()
    return d, Expect(vb=20, frame=_last(d))


def fire_oso_below_start():
    d = Dcp().handshake(("enable_out_of_order_snapshots", "true"))
    p = d.stream(21, start=100, uuid=0xAB, snap_start=100, snap_end=100, value={"collections": ["8"]})
    p.oso_start().mutation("a", seqno=150, cid=8)
    p.mutation("b", seqno=50, cid=8)  # not above the pre-OSO seqno 100
    return d, Expect(vb=21, frame=_last(d), text=("50", "100"))


def fire_rollback_ignored():
    d = Dcp().handshake()
    op = d.stream_request(22, start=50, uuid=0xAB, snap_start=50, snap_end=50)
    d.stream_rollback(op, 10)
    d.stream_request(22, start=50, uuid=0xAB, snap_start=50, snap_end=50)  # same start again
    return d, Expect(vb=22, frame=_last(d), text=("10", "50"))


def fire_noop_unanswered():
    d = Dcp().handshake()
    d.stream(23).snapshot(2)
    d.noop(reply=False)
    return d, Expect(frame=_last(d))


def fire_buffer_overrun():
    d = Dcp().handshake(buffer=400)
    d.auto_ack = False  # the consumer never acknowledges
    p = d.stream(24)
    for _ in range(5):
        p.snapshot(2)
    return d, Expect()


def test_buffer_overrun_once_an_episode():
    """A state, not an event: reported when the unacknowledged bytes first reach the buffer,
    not on every message sent while full; again only after an acknowledgement brought them
    below it, not after one that left them at or above it."""
    d = Dcp().handshake(buffer=400)
    d.auto_ack = False
    p = d.stream(24)
    for _ in range(5):
        p.snapshot(2)  # far past 400 bytes: one episode
    first = hits(d.frames, "buffer-overrun")
    assert len(first) == 1
    d.buffer_ack(100)  # still at or above the buffer: the same episode
    p.snapshot(2)
    assert len(hits(d.frames, "buffer-overrun")) == 1
    d.buffer_ack()  # all acknowledged: below the buffer, the episode ends
    for _ in range(5):
        p.snapshot(2)  # reaches it again: a second episode
    again = hits(d.frames, "buffer-overrun")
    assert len(again) == 2 and again[1].frame > first[0].frame


def fire_buffer_ack_excess():
    d = Dcp().handshake(buffer=100_000)
    d.stream(25).snapshot(2)
    d.buffer_ack(d.unacked + 1000)
    return d, Expect(frame=_last(d))


def fire_answered_error():
    d = Dcp().handshake()
    op = d.stream_request(26, start=40, uuid=0xAB, snap_start=40, snap_end=45)
    request_frame = _last(d)
    d.stream_error(op, ERANGE)
    return d, Expect(vb=26, frame=_last(d), cls="ERANGE", text=("start 40", "snap 40..45", f"frame {request_frame}"))


def fire_manifest_regression():
    d = Dcp().handshake()
    p = d.stream(27)
    p.marker(1, 2)
    p.system_event(BEGIN_COLLECTION, b"c1", manifest_uid=5, collection_id=8)
    p.system_event(BEGIN_COLLECTION, b"c2", manifest_uid=3, collection_id=9)
    return d, Expect(vb=27, frame=_last(d), text=("3", "5"))


def fire_reserved_collection():
    d = Dcp().handshake()
    p = d.stream(28)
    p.marker(1, 1).system_event(BEGIN_COLLECTION, b"sys", manifest_uid=2, collection_id=3)
    return d, Expect(vb=28, frame=_last(d))


def fire_dcp_open_missing():
    d = Dcp().handshake()
    d.open(name=b"dcpgen:again")  # a second DCP_OPEN on the same connection
    return d, Expect(frame=_last(d) - 1)


def fire_deletion_version():
    d = Dcp(delete_times=True).handshake()  # DCP_OPEN had IncludeDeleteTimes
    p = d.stream(29)
    p.marker(1, 1).deletion("gone", v2=False)
    return d, Expect(vb=29, frame=_last(d), text=("18", "21"))


def fire_negotiation_missing():
    d = Dcp(collections=False).handshake()  # no enable_sync_writes
    p = d.stream(30)
    p.marker(1, 1).prepare("k", seqno=1)
    return d, Expect(vb=30, frame=_last(d))


def fire_stream_id_missing():
    d = Dcp().handshake(stream_ids=True)
    p = d.stream(31, sid=2)
    p.marker(1, 1)
    p.send(0x57, extras=build_mutation_extras(1), key=p.key("nosid"), sid=False)
    return d, Expect(vb=31, sid=2, frame=_last(d))


def build_mutation_extras(seqno: int) -> bytes:
    from dcpinspect.families.mcbp.messages import dcp as L

    return L.MUTATION.pack(by_seqno=seqno, rev_seqno=1)


FIRES = {
    "seqno-regression": fire_seqno_regression,
    "seqno-outside-snapshot": fire_seqno_outside_snapshot,
    "item-before-marker": fire_item_before_marker,
    "marker-overlap": fire_marker_overlap,
    "marker-end-regression": fire_marker_end_regression,
    "first-marker-start": fire_first_marker_start,
    "marker-inside-snapshot": fire_marker_inside_snapshot,
    "stream-request-range": fire_stream_request_range,
    "no-stream": fire_no_stream,
    "after-stream-end": fire_after_stream_end,
    "duplicate-key": fire_duplicate_key,
    "ack-unanswered": fire_ack_unanswered,
    "hcs-without-disk": fire_hcs_without_disk,
    "mvs-above-end": fire_mvs_above_end,
    "beyond-end-seqno": fire_beyond_end_seqno,
    "oso-unbalanced": fire_oso_unbalanced,
    "oso-below-start": fire_oso_below_start,
    "rollback-ignored": fire_rollback_ignored,
    "noop-unanswered": fire_noop_unanswered,
    "buffer-overrun": fire_buffer_overrun,
    "buffer-ack-excess": fire_buffer_ack_excess,
    "answered-error": fire_answered_error,
    "manifest-regression": fire_manifest_regression,
    "reserved-collection": fire_reserved_collection,
    "dcp-open-missing": fire_dcp_open_missing,
    "deletion-version": fire_deletion_version,
    "negotiation-missing": fire_negotiation_missing,
    "stream-id-missing": fire_stream_id_missing,
}

FIRE_XFAIL: dict[str, str] = {}


def test_every_stream_rule_has_a_case():
    assert set(FIRES) == set(STREAM_RULES), "add a fire_* case for each new stream rule"


@pytest.mark.parametrize("rule", [
    pytest.param(r, marks=pytest.mark.xfail(strict=True, reason=FIRE_XFAIL[r])) if r in FIRE_XFAIL else r
    for r in sorted(STREAM_RULES)
])
def test_rule_fires(rule):
    d, exp = FIRES[rule]()
    got = hits(d.frames, rule)
    assert got, f"{rule} did not fire; findings:\n" + describe(findings(d.frames))
    f = got[0]
    spec = STREAM_RULES[rule]
    assert f.cls == (exp.cls or spec.cls)
    assert f.severity == (exp.severity or spec.severity)
    if exp.vb is not None:
        assert f.row_vbucket == exp.vb  # what validate shows: the finding's vbucket, else its frame's
    if exp.sid is not None:
        assert f.stream_id == exp.sid or f.msg_stream_id == exp.sid
    if exp.frame is not None:
        assert f.frame == exp.frame
    for text in exp.text:
        assert text in f.message


# ---- more ways to break the same rules --------------------------------------------------------

def test_seqno_regression_on_seqno_advanced_and_commit():
    d = Dcp(collections=False).handshake(("enable_sync_writes", "true"))
    p = d.stream(2)
    p.marker(1, 10).prepare("a", seqno=4).commit("a", prepared=4, seqno=4)  # commit must be above the prepare
    assert [f.frame for f in hits(d.frames, "seqno-regression")] == [len(d.frames)]
    d = Dcp().handshake()
    p = d.stream(2)
    p.marker(1, 10).mutation(seqno=6).seqno_advanced(5)
    assert hits(d.frames, "seqno-regression")


def test_marker_overlap_when_start_goes_back():
    d = Dcp().handshake()
    p = d.stream(3)
    p.marker(10, 12).mutation(seqno=10).mutation(seqno=12)
    p.marker(9, 20)
    assert hits(d.frames, "marker-overlap")


def test_memory_history_marker_does_not_get_the_disk_exception():
    """KV passive_stream.cc mustAssignEndSeqno: only a non-Memory History marker may repeat the end."""
    d = Dcp().handshake(("change_streams", "true"))
    p = d.stream(3)
    p.marker(1, 10, flags=MEMORY | CHECKPOINT).mutation(seqno=5)
    p.marker(6, 10, flags=MEMORY | HISTORY | MAY_DUPLICATE)
    assert hits(d.frames, "marker-end-regression")


def test_stream_request_snapshot_window():
    d = Dcp().handshake()
    d.stream_request(4, start=20, snap_start=21, snap_end=30)
    got = hits(d.frames, "stream-request-range")
    assert got and "snap_start 21" in got[0].message


def test_oso_marker_inside_oso_and_nested_start():
    d = Dcp().handshake(("enable_out_of_order_snapshots", "true"))
    p = d.stream(5, value={"collections": ["8"]})
    p.oso_start().mutation("a", seqno=3, cid=8)
    p.marker(1, 5)
    p.oso_start()
    assert len(hits(d.frames, "oso-unbalanced")) == 2


def test_deletion_v2_without_include_delete_times():
    d = Dcp(delete_times=False).handshake()
    p = d.stream(6)
    p.marker(1, 1).deletion("gone", v2=True)
    assert hits(d.frames, "deletion-version")


def test_hps_above_end_in_disk_v22_marker():
    d = Dcp().handshake(("max_marker_version", "2.2"))
    p = d.stream(7)
    p.marker(1, 10, flags=DISK | CHECKPOINT, version="2.2", hcs=2, hps=11, purge=1)
    got = hits(d.frames, "mvs-above-end")
    assert got and "high prepared" in got[0].message


def test_stream_request_without_sid_when_stream_ids_enabled():
    d = Dcp().handshake(stream_ids=True)
    d.stream_request(8)
    assert hits(d.frames, "stream-id-missing")


def test_answered_error_for_a_consumer_erange_reply_names_the_message():
    d = Dcp().handshake()
    p = d.stream(9)
    p.marker(1, 5).mutation("doc-a", seqno=1)
    mutation_frame = len(d.frames)
    p.reply(0x57, ERANGE)
    got = hits(d.frames, "answered-error")
    assert got and got[0].cls == "ERANGE" and got[0].finding.frame == mutation_frame
    assert "DCP_MUTATION vb 9" in got[0].message and "doc-a" in got[0].message


def test_answered_error_erange_to_stream_request_is_the_requests_story():
    """The ERANGE answer is one finding that names the request's start/snap values and its frame."""
    d = Dcp().handshake()
    op = d.stream_request(26, start=40, end=99, uuid=0xAB, snap_start=40, snap_end=45)
    req_frame = len(d.frames)
    d.stream_error(op, ERANGE, context="snap start seqno <= start seqno <= snap end seqno is required")
    got = [f for f in findings(d.frames) if f.frame == len(d.frames)]
    assert [f.rule for f in got] == ["answered-error"]  # the bare peer-error is folded into it
    f = got[0]
    assert (f.cls, f.severity, f.finding.frame, f.row_vbucket) == ("ERANGE", "warning", req_frame, 26)
    for text in ("DCP_STREAM_REQ vb 26", "start 40", "end 99", "snap 40..45", f"(frame {req_frame})", "Erange",
                 "snap end seqno is required"):
        assert text in f.message


def test_stream_level_findings_name_their_vbucket_and_stream_id():
    d, _ = fire_no_stream()
    f = hits(d.frames, "no-stream")[0]
    assert (f.finding.vbucket, f.finding.stream_id) == (13, 4)
    d = Dcp().handshake(stream_ids=True)
    d.stream_request(12, start=20, end=10, snap_start=20, snap_end=20, sid=5)
    f = hits(d.frames, "stream-request-range")[0]
    assert (f.finding.vbucket, f.finding.stream_id) == (12, 5)


# =============================================================================================
# Near misses: the valid traffic next to each rule.  No error, no warning.
# =============================================================================================

def valid_dedup_memory_snapshots():
    """De-duplicated memory snapshots: first item above the marker start, checkpoint
    markers whose start seqno is never delivered, gaps between items (spec §11.2)."""
    d = Dcp().handshake()
    p = d.stream(1)
    p.marker(0, 9, flags=MEMORY | CHECKPOINT).mutation(seqno=3).mutation(seqno=7).mutation(seqno=9)
    p.marker(10, 20, flags=MEMORY | CHECKPOINT).mutation(seqno=14).deletion(seqno=20)
    p.marker(21, 21, flags=MEMORY).mutation(seqno=21)  # start == end == the only item
    return d


def valid_seqno_advanced_closes_snapshot():
    d = Dcp().handshake()
    p = d.stream(2, value={"collections": ["8"]})
    p.marker(1, 10, flags=MEMORY | CHECKPOINT).mutation(seqno=3, cid=8).mutation(seqno=6, cid=8)
    p.seqno_advanced(10)  # the last item (another collection / a prepare) is not visible
    p.marker(11, 15, flags=MEMORY).seqno_advanced(15)  # a snapshot of nothing visible at all
    p.marker(16, 17, flags=MEMORY).mutation(seqno=17, cid=8)
    return d


def valid_oso_snapshot():
    """OSO: items in key order, seqnos out of order, SeqnoAdvanced(max), OSO end, then
    normal snapshots resume above the max (spec §8.19, R5)."""
    d = Dcp().handshake(("enable_out_of_order_snapshots", "true_with_seqno_advanced"))
    p = d.stream(3, value={"collections": ["8"]})
    p.oso([17, 4, 22, 9, 1, 13], advance_to=25)
    p.marker(26, 30, flags=MEMORY | CHECKPOINT).mutation(seqno=27, cid=8).mutation(seqno=30, cid=8)
    q = d.stream(4, value={"collections": ["8"]})
    q.oso([5, 2, 8])  # the last item was the max: no SeqnoAdvanced
    q.marker(9, 10, flags=MEMORY | CHECKPOINT).mutation(seqno=10, cid=8)
    return d


def valid_streams_per_vbucket_with_stream_ids():
    d = Dcp().handshake(stream_ids=True)
    a = d.stream(5, sid=1, value={"collections": ["8"]})
    b = d.stream(5, sid=2, value={"collections": ["9"]})
    c = d.stream(6, sid=1)
    a.snapshot(2, cid=8)
    b.snapshot(3, cid=9)
    c.snapshot(1)
    a.snapshot(2, cid=8)
    b.marker(4, 9, flags=MEMORY | CHECKPOINT).mutation(seqno=6, cid=9).mutation(seqno=9, cid=9)
    b.end(END_OK)
    a.snapshot(1, cid=8)
    c.end(END_STATE_CHANGED)
    return d


def valid_disk_then_memory():
    d = Dcp().handshake(("max_marker_version", "2.2"))
    p = d.stream(7)
    p.marker(0, 50, flags=DISK | CHECKPOINT, version="2.2", hcs=40, hps=45, purge=12, mvs=50)
    for s in (3, 9, 12, 40, 50):
        p.mutation(seqno=s)
    p.marker(51, 60, flags=MEMORY | CHECKPOINT, version="2.2").mutation(seqno=55).mutation(seqno=60)
    p.marker(61, 62, flags=MEMORY, version="2.2").mutation(seqno=61).mutation(seqno=62)
    return d


def valid_history_after_disk():
    """A History disk marker repeats the end of the non-History disk snapshot before it (R4
    exception, KV mustAssignEndSeqno); History/MayContainDuplicates snapshots repeat keys."""
    d = Dcp().handshake(("change_streams", "true"))
    p = d.stream(8)
    p.marker(0, 20, flags=DISK | CHECKPOINT).mutation("a", seqno=2).mutation("b", seqno=5)
    p.marker(6, 20, flags=DISK | CHECKPOINT | HISTORY | MAY_DUPLICATE)
    p.mutation("c", seqno=6).mutation("c", seqno=9).deletion("c", seqno=12).mutation("d", seqno=20)
    p.marker(21, 24, flags=MEMORY | CHECKPOINT | HISTORY | MAY_DUPLICATE)
    p.mutation("d", seqno=21).mutation("d", seqno=22).mutation("d", seqno=24)
    p.marker(25, 27, flags=MEMORY | MAY_DUPLICATE).mutation("e", seqno=25).mutation("e", seqno=27)
    return d


def valid_keys_repeat_only_across_snapshots_and_collections():
    d = Dcp().handshake()
    p = d.stream(9)
    p.marker(1, 2).mutation("k", seqno=1, cid=8).mutation("k", seqno=2, cid=9)  # same name, other collection
    p.marker(3, 3).mutation("k", seqno=3, cid=8)  # same key, next snapshot
    return d


def valid_takeover_acknowledged():
    d = Dcp().handshake()
    p = d.stream(10, flags=TAKEOVER)
    p.snapshot(3, flags=MEMORY | CHECKPOINT | ACK)
    p.ack_snapshot()  # 81 56, stream opaque, after the end seqno
    p.set_vbucket_state(3)  # pending
    p.reply(0x5B, 0)
    p.snapshot(1, flags=MEMORY | ACK)
    p.ack_snapshot()
    p.set_vbucket_state(1)
    p.reply(0x5B, 0)
    p.end(END_STATE_CHANGED)
    return d


def valid_rollback_then_rerequest():
    d = Dcp().handshake()
    op = d.stream_request(11, start=500, uuid=0xDEAD, snap_start=480, snap_end=500)
    d.stream_rollback(op, 450)
    p = d.stream(11, start=450, uuid=0xBEEF, snap_start=450, snap_end=450,
                 failover=((0xBEEF, 450), (0xDEAD, 0)))
    p.marker(450, 460, flags=DISK | CHECKPOINT).mutation(seqno=455).mutation(seqno=460)
    return d


def valid_flow_control_acked():
    d = Dcp().handshake(buffer=2048, ack_ratio=0.5)
    p = d.stream(12)
    for _ in range(40):
        p.snapshot(3)
    d.noop()
    d.buffer_ack()  # the rest
    return d


def valid_noop_answered():
    d = Dcp().handshake()
    p = d.stream(13)
    d.noop()
    p.snapshot(2)
    d.noop()
    return d


def valid_stream_end_after_end_seqno():
    """STREAM_END(Ok) after the snapshot holding end_seqno; items above end inside it are legal."""
    d = Dcp().handshake()
    p = d.stream(14, end=8)
    p.marker(1, 10, flags=MEMORY | CHECKPOINT)
    for s in (2, 5, 8, 9, 10):
        p.mutation(seqno=s)
    p.end(END_OK)
    d.client(build_frame(0x81, 0x55, opaque=p.opaque))  # the consumer may answer STREAM_END
    q = d.stream(15, end=6)
    q.marker(1, 6).mutation(seqno=3).seqno_advanced(6)
    q.end(END_OK)
    return d


def valid_mid_conversation():
    """The capture starts mid-conversation: no HELO, no DCP_OPEN, no STREAM_REQ seen."""
    d = Dcp().handshake(stream_ids=True, buffer=100_000)
    a = d.stream(16, sid=1)
    b = d.stream(17, sid=1)
    a.marker(1, 10).mutation(seqno=1)
    b.snapshot(3)
    cut = len(d.frames)
    a.mutation(seqno=4).mutation(seqno=10)  # mid-snapshot: no marker seen for a
    b.snapshot(2)
    d.noop()
    a.marker(11, 12).mutation(seqno=11).mutation(seqno=12)
    b.end(END_OK)
    d.frames = d.frames[cut:]
    return d


def valid_no_collections_snapshot_end_not_reached():
    """Without collections a snapshot may end on an item the client never sees (R7): info only."""
    d = Dcp(collections=False).handshake()
    p = d.stream(18)
    p.marker(1, 5).mutation(seqno=2)  # seqno 5 was a prepare this client does not get
    p.marker(6, 7).mutation(seqno=7)
    return d


def valid_sync_writes_v20():
    d = Dcp(collections=False).handshake(("enable_sync_writes", "true"), ("consumer_name", "replica:1"),
                                         ("enable_expiry_opcode", "true"))
    p = d.stream(19)
    p.marker(0, 6, flags=DISK | CHECKPOINT, version="2.0", hcs=3, mvs=5)
    p.mutation("a", seqno=1).prepare("b", seqno=2).commit("b", prepared=2, seqno=3)
    p.prepare("c", seqno=4).mutation("d", seqno=5).abort("c", prepared=4, seqno=6)
    p.marker(7, 9, flags=MEMORY | CHECKPOINT, version="2.0", mvs=8)
    p.expiration("e", seqno=7).deletion("f", seqno=8).prepare("g", seqno=9)
    return d


def valid_collections_lifecycle():
    d = Dcp().handshake()
    p = d.stream(20)
    p.marker(1, 6, flags=MEMORY | CHECKPOINT)
    p.event(CREATE_SCOPE, b"shop", manifest_uid=2, scope_id=9)
    p.system_event(BEGIN_COLLECTION, b"orders", manifest_uid=3, scope_id=9, collection_id=10)
    p.mutation("o1", cid=10).mutation("o2", cid=10)
    p.system_event(END_COLLECTION, manifest_uid=3, scope_id=9, collection_id=10)  # same uid: not a regression
    p.system_event(BEGIN_COLLECTION, b"orders2", manifest_uid=4, scope_id=9, collection_id=11)
    return d


def valid_close_and_rerequest():
    d = Dcp().handshake()
    p = d.stream(21)
    p.snapshot(3)
    d.exchange(0x52, vbucket=21)  # CLOSE_STREAM, answered
    p.snapshot(2)  # in flight: still legal
    q = d.stream(21, start=p.seqno, uuid=0xFEEDFACE, snap_start=p.seqno, snap_end=p.seqno)
    q.seqno = p.seqno
    q.snapshot(2)
    return d


def valid_stream_end_rollback_then_rerequest():
    d = Dcp().handshake()
    p = d.stream(22)
    p.snapshot(4)
    p.end(END_ROLLBACK)
    q = d.stream(22, start=2, uuid=0xFEEDFACE, snap_start=2, snap_end=2)
    q.seqno = 2
    q.marker(2, 6, flags=DISK | CHECKPOINT).mutation(seqno=3).mutation(seqno=6)
    return d


VALID = {
    "dedup_memory_snapshots": valid_dedup_memory_snapshots,
    "seqno_advanced_closes_snapshot": valid_seqno_advanced_closes_snapshot,
    "oso_snapshot": valid_oso_snapshot,
    "streams_per_vbucket_with_stream_ids": valid_streams_per_vbucket_with_stream_ids,
    "disk_then_memory": valid_disk_then_memory,
    "history_after_disk": valid_history_after_disk,
    "keys_repeat_only_across_snapshots_and_collections": valid_keys_repeat_only_across_snapshots_and_collections,
    "takeover_acknowledged": valid_takeover_acknowledged,
    "flow_control_acked": valid_flow_control_acked,
    "noop_answered": valid_noop_answered,
    "stream_end_after_end_seqno": valid_stream_end_after_end_seqno,
    "mid_conversation": valid_mid_conversation,
    "no_collections_snapshot_end_not_reached": valid_no_collections_snapshot_end_not_reached,
    "sync_writes_v20": valid_sync_writes_v20,
    "collections_lifecycle": valid_collections_lifecycle,
    "close_and_rerequest": valid_close_and_rerequest,
    "stream_end_rollback_then_rerequest": valid_stream_end_rollback_then_rerequest,
}
# Valid, but drawing a (wrong) warning today: see test_rollback_then_rerequest_is_clean.
NEAR_MISS_CASES = {**VALID, "rollback_then_rerequest": valid_rollback_then_rerequest}


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_traffic_is_clean(name):
    assert_clean(VALID[name]().frames)


def test_no_collections_unfinished_snapshot_is_info_only():
    got = hits(valid_no_collections_snapshot_end_not_reached().frames, "marker-inside-snapshot")
    assert [f.severity for f in got] == ["info"]


# Each rule's near miss: the valid conversation that comes closest to breaking it.
NEAR_MISS = {
    "seqno-regression": "dedup_memory_snapshots",
    "seqno-outside-snapshot": "dedup_memory_snapshots",
    "item-before-marker": "mid_conversation",
    "marker-overlap": "history_after_disk",
    "marker-end-regression": "history_after_disk",
    "first-marker-start": "stream_end_rollback_then_rerequest",
    "marker-inside-snapshot": "seqno_advanced_closes_snapshot",
    "stream-request-range": "close_and_rerequest",
    "no-stream": "mid_conversation",
    "after-stream-end": "stream_end_after_end_seqno",
    "duplicate-key": "keys_repeat_only_across_snapshots_and_collections",
    "ack-unanswered": "takeover_acknowledged",
    "hcs-without-disk": "sync_writes_v20",
    "mvs-above-end": "disk_then_memory",
    "beyond-end-seqno": "stream_end_after_end_seqno",
    "oso-unbalanced": "oso_snapshot",
    "oso-below-start": "oso_snapshot",
    "rollback-ignored": "rollback_then_rerequest",
    "noop-unanswered": "noop_answered",
    "buffer-overrun": "flow_control_acked",
    "buffer-ack-excess": "flow_control_acked",
    "answered-error": "streams_per_vbucket_with_stream_ids",
    "manifest-regression": "collections_lifecycle",
    "reserved-collection": "collections_lifecycle",
    "dcp-open-missing": "mid_conversation",
    "deletion-version": "sync_writes_v20",
    "negotiation-missing": "sync_writes_v20",
    "stream-id-missing": "streams_per_vbucket_with_stream_ids",
}


def test_every_stream_rule_has_a_near_miss():
    assert set(NEAR_MISS) == set(STREAM_RULES)
    assert set(NEAR_MISS.values()) <= set(NEAR_MISS_CASES)


@pytest.mark.parametrize("rule", sorted(STREAM_RULES))
def test_rule_quiet_on_its_near_miss(rule):
    frames = NEAR_MISS_CASES[NEAR_MISS[rule]]().frames
    assert not hits(frames, rule), describe(hits(frames, rule))


def test_near_miss_pairs_differ_by_one_step():
    """A few rules shown side by side: the valid form and the broken one differ in one message."""
    # R3 inclusive range: item at the marker end is fine, one above is not.
    d = Dcp().handshake()
    p = d.stream(1)
    p.marker(1, 5).mutation(seqno=5)
    assert not loud(d.frames)
    p.mutation(seqno=6)
    assert [f.rule for f in loud(d.frames)] == ["seqno-outside-snapshot"]
    # R8: the ack clears the due acknowledgement.
    d = Dcp().handshake()
    p = d.stream(2, flags=TAKEOVER)
    p.snapshot(2, flags=MEMORY | ACK)
    assert [f.rule for f in loud(d.frames)] == ["ack-unanswered"]
    p.ack_snapshot()
    assert not loud(d.frames)
    # Rollback: re-requesting at the rollback seqno is obeying it, one above is not.
    d = Dcp().handshake()
    op = d.stream_request(3, start=50, uuid=1, snap_start=50, snap_end=50)
    d.stream_rollback(op, 10)
    d.stream_request(3, start=10, uuid=1, snap_start=10, snap_end=10)
    assert not hits(d.frames, "rollback-ignored")
    d2 = Dcp().handshake()
    op = d2.stream_request(3, start=50, uuid=1, snap_start=50, snap_end=50)
    d2.stream_rollback(op, 10)
    d2.stream_request(3, start=11, uuid=1, snap_start=11, snap_end=11)
    assert hits(d2.frames, "rollback-ignored")


def test_rollback_then_rerequest_has_no_error():
    fs = findings(valid_rollback_then_rerequest().frames)
    assert not [f for f in fs if f.severity == "error"], describe(fs)
    rb = [f for f in fs if f.rule == "answered-error"]
    assert rb and rb[0].cls == "ROLLBACK" and "roll back to 450" in rb[0].message


# =============================================================================================
# Valid traffic that once drew false findings
# =============================================================================================

def test_rollback_then_rerequest_is_clean():
    assert_clean(valid_rollback_then_rerequest().frames)


def test_first_marker_may_resume_the_requested_snapshot():
    d = Dcp().handshake()
    p = d.stream(3, start=5, uuid=0xABC, snap_start=3, snap_end=10)
    p.marker(3, 10, flags=DISK | CHECKPOINT)
    for s in (6, 8, 10):
        p.mutation(seqno=s)
    assert_clean(d.frames)


def test_mid_conversation_capture_with_a_new_stream_request():
    d = Dcp().handshake()
    a = d.stream(1)
    b = d.stream(2)
    a.snapshot(2)
    b.snapshot(2)
    cut = len(d.frames)
    c = d.stream(3)  # the client opens (or re-opens) another vbucket after the capture started
    c.snapshot(2)
    b.snapshot(2)  # vb 2 was streaming before the capture began
    a.snapshot(1)
    d.frames = d.frames[cut:]
    assert_clean(d.frames)


def test_prepare_and_mutation_of_one_key_in_a_snapshot():
    d = Dcp(collections=False).handshake(("enable_sync_writes", "true"), ("consumer_name", "replica:1"))
    p = d.stream(4)
    p.marker(1, 3, flags=MEMORY | CHECKPOINT, version="2.0", mvs=2)
    p.mutation("k", seqno=1).mutation("j", seqno=2).prepare("k", seqno=3)
    assert_clean(d.frames)


# ---- negotiation-missing: the checks spec §11.10 asks for ------------------------------------

@pytest.mark.parametrize("case", ["v22-marker", "expiration", "seqno-advanced-no-collections"])
def test_negotiation_missing(case):
    if case == "v22-marker":
        d = Dcp().handshake()  # no max_marker_version=2.2
        d.stream(1).marker(1, 1, flags=DISK, version="2.2")
    elif case == "expiration":
        d = Dcp().handshake()  # no enable_expiry_opcode
        d.stream(1).marker(1, 1).expiration("e", seqno=1)
    else:
        d = Dcp(collections=False).handshake()
        d.stream(1).marker(1, 2).mutation(seqno=1).seqno_advanced(2)
    assert hits(d.frames, "negotiation-missing")


# =============================================================================================
# The capture path (pcap → reassembly → validator): what only a capture can show
# =============================================================================================

def capture_findings(tmp_path, d: Dcp, **kw):
    """Findings from the capture path, each with the position (1-based) in ``d.frames`` of the
    frame it names; the capture names frames by packet number, mapped back here through
    :func:`dcpgen.packet_numbers` (several frames may share a packet: the set of them)."""
    from dcpinspect.engines.connections import Captured
    from dcpinspect.engines.records import decode_capture_file

    path = write_capture(d.frames, tmp_path / "c.pcap", **kw)
    numbers = packet_numbers(path, d.frames)
    held, at, sent = {}, {}, {"c2s": 0, "s2c": 0}
    for pos, ((direction, data), n) in enumerate(zip(d.frames, numbers), 1):
        held.setdefault(n, set()).add(pos)
        at[(direction, sent[direction])] = pos  # a midstream side may deliver its frames late
        sent[direction] += len(data)
    out, frames = [], 0
    for item in decode_capture_file(path):
        if isinstance(item, Captured):
            frames += 1
            pos = at[(item.direction, item.msg.offset)]
            assert item.number == numbers[pos - 1]
            out.extend(({pos}, f) for f in item.msg.findings)
        elif item.kind == "finding":
            out.append((held[item.finding.frame], item.finding))
    return frames, out


def test_capture_path_matches_the_core(tmp_path):
    d, exp = fire_seqno_regression()
    frames, got = capture_findings(tmp_path, d)
    assert frames == len(d.frames)
    assert [(n, f.rule) for n, f in got] == [({exp.frame}, "seqno-regression")]


def test_capture_path_reports_finish_findings_as_notes(tmp_path):
    d, exp = fire_ack_unanswered()
    d.noop(reply=False)
    _, got = capture_findings(tmp_path, d)
    rules = {f.rule: n for n, f in got}
    assert set(rules) == {"ack-unanswered", "noop-unanswered"}
    assert exp.frame in rules["ack-unanswered"] and len(d.frames) in rules["noop-unanswered"]


def test_capture_path_mid_conversation_is_clean(tmp_path):
    d = valid_mid_conversation()
    frames, got = capture_findings(tmp_path, d, handshake=False)
    assert frames == len(d.frames)
    assert [f for _, f in got if f.severity in LOUD] == []


def test_capture_from_syn_without_dcp_open(tmp_path):
    d = Dcp()
    d.helo()
    d.control("enable_noop", "true")
    d.stream(1).snapshot(2)
    _, got = capture_findings(tmp_path, d, handshake=True)
    assert "dcp-open-missing" in {f.rule for _, f in got}


def test_dcp_open_flags_seen_by_the_deletion_rule(tmp_path):
    d = Dcp(delete_times=False)
    d.helo().open(flags=PRODUCER | INCLUDE_XATTRS)
    p = d.stream(1)
    p.marker(1, 2).deletion("a", v2=False).deletion("b", v2=True)
    _, got = capture_findings(tmp_path, d)
    assert [(n, f.rule) for n, f in got] == [({len(d.frames)}, "deletion-version")]


def test_buffer_ack_after_a_resize_on_a_mid_conversation_capture():
    d = Dcp().handshake(buffer=10_000, ack_ratio=0.9)
    p = d.stream(5)
    for _ in range(10):
        p.snapshot(3)  # ~1.5 kB unacknowledged when the capture begins
    cut = len(d.frames)
    d.control("connection_buffer_size", "20000")  # the consumer resizes its buffer
    p.snapshot(1)
    d.buffer_ack()  # acknowledges everything received so far, before and after the cut
    d.frames = d.frames[cut:]
    assert_clean(d.frames)


def test_set_vbucket_state_carries_no_stream_id():
    d = Dcp().handshake(stream_ids=True)
    p = d.stream(40, sid=1, flags=TAKEOVER)
    p.snapshot(2, flags=MEMORY | CHECKPOINT | ACK)
    p.ack_snapshot()
    p.set_vbucket_state(3)  # KV sends it without the sid frame
    p.reply(0x5B, 0)
    p.end(END_STATE_CHANGED)
    assert_clean(d.frames)
