"""The TAP session (dcpinspect/families/mcbp/sessions/tap.py): what a TAP conversation leaves in the state
of its connection, on synthetic conversations built from the TAP layouts (tests/tapgen.py).

The session only applies messages; these tests read its state and its ``stats()``."""

from __future__ import annotations

import struct

import pytest

from dcpinspect.families.mcbp.messages.frame import DecodeContext, decode_frame
from dcpinspect.families.mcbp.sessions.tap import MAX_LOG, TapSession, next_seqno
from tapgen import (
    ACTIVE, BACKFILL, C2S, CHECKPOINT, CHECKPOINT_END, CHECKPOINT_START, DUMP, EBUSY, EINVAL, ETMPFAIL, KEYS_ONLY,
    LIST_VBUCKETS, MUTATION, NO_VALUE, OPAQUE, PENDING, REGISTERED_CLIENT, S2C, SUPPORT_ACK, TAKEOVER, VBUCKET_SET,
    CHECKPOINT_SYNC, OPEN_CHECKPOINT, Tap, event_frame, session_of,
)


def test_backfill_with_acks_at_every_interval():
    tap = Tap().connect(BACKFILL | SUPPORT_ACK | LIST_VBUCKETS, backfill=0, vbuckets=[5])
    asked = tap.backfill(vb=5, items=12, interval=4)
    s = session_of(tap.frames)
    # INITIAL_VBUCKET_STREAM, mutations 4, 8, 12, CLOSE_BACKFILL asked; all answered
    assert len(asked) == 5
    assert s.connect.flags == BACKFILL | SUPPORT_ACK | LIST_VBUCKETS
    assert (s.connect.backfill_time, s.connect.vbuckets) == (0, (5,))
    assert s.producer == S2C
    assert (s.acks_requested, s.acks, s.covered) == (5, 5, 5)
    assert s.unanswered() == [] and not s.log
    vb = s.vbuckets[5]
    assert (vb.phase, vb.backfills, vb.events["mutation"], vb.events["opaque"]) == ("stream", 1, 12, 2)
    # frames are 1 ms apart: INITIAL_VBUCKET_STREAM is frame 2, CLOSE_BACKFILL the last but one
    close_frame = len(tap.frames) - 1
    assert vb.backfill_seconds == pytest.approx((close_frame - 2) * 1e-3)
    assert (s.first_seqno, s.last_seqno) == (1, 14)
    # each answer comes one frame after its request
    assert s.waits.count == 5 and s.waits.longest == pytest.approx(1e-3)
    assert s.bytes == sum(len(f) for _, f in tap.frames) and s.frames == len(tap.frames)


def test_a_later_ack_covers_earlier_requests():
    tap = Tap().connect(SUPPORT_ACK)
    first = tap.mutation(0, b"a", ack=True)
    tap.mutation(0, b"b", ack=True)
    third = tap.mutation(0, b"c", ack=True)
    tap.ack(third, MUTATION)
    s = session_of(tap.frames)
    assert first == 1 and s.covered == 3 and s.acks == 1 and s.unanswered() == []
    # the oldest request waited longest: from frame 2 to frame 5
    assert s.waits.longest == pytest.approx(3e-3) and s.waits.longest_index == 2


def test_unanswered_requests_stay_in_the_log():
    tap = Tap().connect(SUPPORT_ACK)
    a = tap.mutation(3, b"a", ack=True)
    tap.ack(a, MUTATION)
    b = tap.mutation(3, b"b", ack=True)
    s = session_of(tap.frames)
    assert [x.seqno for x in s.unanswered()] == [b]
    assert s.stats()["acks"]["unanswered"] == 1


def test_dump_counts_events_by_kind():
    tap = Tap().connect(DUMP)
    for n in range(3):
        tap.mutation(1, b"m%d" % n)
    tap.delete(1, b"m0")
    tap.event(0x43, 0)  # TAP_FLUSH
    tap.noop()
    s = session_of(tap.frames)
    assert s.connect.has(DUMP) and not s.connect.has(SUPPORT_ACK)
    assert dict(s.events) == {"mutation": 3, "delete": 1, "flush": 1, "noop": 1}
    assert dict(s.vbuckets[1].events) == {"mutation": 3, "delete": 1}
    assert s.stats()["events"] == {"delete": 1, "flush": 1, "mutation": 3, "noop": 1}


def test_takeover_of_two_vbuckets():
    tap = Tap().connect(TAKEOVER | LIST_VBUCKETS | SUPPORT_ACK, vbuckets=[7, 9])
    tap.mutation(7, b"x")
    tap.mutation(9, b"y")
    tap.takeover([7, 9])
    s = session_of(tap.frames)
    assert s.closing and s.takeover_vbuckets() == (7, 9)
    for vb in (7, 9):
        assert s.vbuckets[vb].states == [PENDING, ACTIVE] and s.vbuckets[vb].phase == "active"
    assert s.stats()["vbuckets"]["9"]["states"] == ["pending", "active"]
    assert s.unanswered() == []


def test_registered_client_with_checkpoints():
    tap = Tap().connect(CHECKPOINT | REGISTERED_CLIENT | SUPPORT_ACK, name=b"backup",
                        checkpoints={4: 10, 6: 2}, closed_only=1)
    tap.opaque(4, CHECKPOINT_SYNC, ack=True)
    tap.opaque(4, OPEN_CHECKPOINT, ack=True)
    for cid in (11, 12):
        tap.checkpoint(CHECKPOINT_START, 4, cid, ack=True)
        tap.mutation(4, b"k%d" % cid)
        last = tap.checkpoint(CHECKPOINT_END, 4, cid, ack=True)
    tap.ack(last, CHECKPOINT_END)
    s = session_of(tap.frames)
    c = s.connect
    assert (c.name, c.checkpoints, c.closed_checkpoint_only) == ("backup", {4: 10, 6: 2}, 1)
    assert s.checkpoint_sync
    vb = s.vbuckets[4]
    assert (vb.checkpoints, vb.checkpoint_last, vb.checkpoint_open, vb.checkpoint_frames) == (2, 12, None, 4)
    assert s.stats()["checkpoints"] == 2
    assert s.covered == 6 and s.unanswered() == []


@pytest.mark.parametrize("status", [EBUSY, ETMPFAIL])
def test_nack_then_resend(status):
    tap = Tap().connect(SUPPORT_ACK)
    a = tap.mutation(2, b"a", ack=True)
    b = tap.mutation(2, b"b", ack=True)
    tap.mutation(2, b"c")
    tap.ack(a, MUTATION)
    tap.ack(b, MUTATION, status)  # NACK: b and c go again
    nacked = session_of(tap.frames)
    assert nacked.nacks == 1 and sum(nacked.resend_due.values()) == 2
    assert nacked.covered == 1  # a, by its own ACK; b is not covered by its NACK
    tap.mutation(2, b"b", ack=True)
    tap.mutation(2, b"c")
    s = session_of(tap.frames)
    assert not s.resend_due and s.vbuckets[2].nacks == 1 and s.error is None
    assert s.stats()["nacks"] == 1


def test_other_error_status_wants_a_disconnect():
    tap = Tap().connect(SUPPORT_ACK)
    a = tap.mutation(0, b"a", ack=True)
    tap.ack(a, MUTATION, EINVAL)
    tap.mutation(0, b"b")
    s = session_of(tap.frames)
    assert s.errors == 1 and s.error.status == EINVAL and s.error.events_after == 1 and s.error.first_after == 4


def test_keys_only_granted_by_the_first_no_value_event():
    tap = Tap().connect(KEYS_ONLY)
    before = session_of(tap.frames)
    tap.mutation(0, b"a", b"", flags=NO_VALUE)
    after = session_of(tap.frames)
    assert not before.keys_only_granted and after.keys_only_granted


def test_sequence_numbers_wrap_to_one():
    assert next_seqno(0xFFFFFFFE) == 0xFFFFFFFF
    assert next_seqno(0xFFFFFFFF) == 1
    tap = Tap(first_seqno=0xFFFFFFFF).connect(SUPPORT_ACK)
    assert tap.mutation(0, b"a") == 0xFFFFFFFF and tap.mutation(0, b"b") == 1
    s = session_of(tap.frames)
    assert s.last_seqno == 1 and s.expected_seqno() == 2


def test_backfill_still_open_at_the_end_counts_to_the_last_frame():
    tap = Tap().connect(BACKFILL | SUPPORT_ACK)
    seq = tap.opaque(3, 1, ack=True)  # INITIAL_VBUCKET_STREAM
    tap.ack(seq, OPAQUE)
    tap.mutation(3, b"a")
    tap.mutation(3, b"b")
    st = session_of(tap.frames).stats()["vbuckets"]["3"]
    assert st["phase"] == "backfill" and st["backfill"] == {"count": 1, "seconds": pytest.approx(3e-3), "open": True}


def test_the_log_of_unacknowledged_events_is_bounded():
    s = TapSession()
    for seq in range(1, MAX_LOG + 11):
        s.apply(decode_frame(event_frame(MUTATION, seq, 0, key=b"k"), 0, DecodeContext(detail=False)), S2C, None, seq)
    assert len(s.log) == MAX_LOG and s.log_dropped == 10 and next(iter(s.log)) == 11


def test_answers_on_the_consumer_side_pair_by_opcode_and_opaque():
    tap = Tap().connect(SUPPORT_ACK)
    seq = tap.vbucket_set(5, PENDING, ack=True)
    tap.ack(seq, OPAQUE)  # right opaque, wrong opcode: answers nothing
    s = session_of(tap.frames)
    assert s.acks == 0 and [x.seqno for x in s.unanswered()] == [seq]
    tap.ack(seq, VBUCKET_SET)
    assert session_of(tap.frames).acks == 1


def test_connect_without_extras_has_flags_zero():
    """spec §9.1: extlen 0 means flags 0."""
    tap = Tap().connect(0, extras=False)
    s = session_of(tap.frames)
    assert s.connect.flags == 0 and s.connect.name == "node1" and s.producer == S2C


def test_stats_json_shape_of_a_backfill():
    tap = Tap().connect(BACKFILL | SUPPORT_ACK, backfill=0)
    tap.backfill(vb=0, items=4, interval=2)
    st = session_of(tap.frames).stats()
    assert st["name"] == "node1" and st["connect_flags"] == ["Backfill", "SupportAck"]
    assert st["acks"]["requested"] == 4 and st["acks"]["round_trip"]["count"] == 4
    assert st["acks"]["longest_wait"]["seconds"] == pytest.approx(1e-3)
    assert st["vbuckets"]["0"]["backfill"]["count"] == 1 and st["vbuckets"]["0"]["phase"] == "stream"
    assert st["frames"] == len(tap.frames) and st["bytes"] == sum(len(f) for _, f in tap.frames)


def test_noop_sets_the_producer_direction_when_it_comes_first():
    s = TapSession()
    s.apply(decode_frame(struct.pack(">BBHBBHIIQ", 0x80, 0x0A, 0, 0, 0, 0, 0, 0, 0)), S2C, 1.0, 1)
    assert s.producer == S2C and s.events["noop"] == 1
    assert C2S != s.producer
