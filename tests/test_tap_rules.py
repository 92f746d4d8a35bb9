"""TAP rules (dcpinspect/families/mcbp/rules/tap.py, TAP_RULES in rules/registry.py): every rule FIRES on a
conversation that breaks it and stays quiet on its near miss, both built from the TAP
layouts (tests/tapgen.py) and judged by the capture engine's per-connection core; the
connect checks the frame rule ``tap-connect-value`` makes; ``retired-opcode`` once a
connection; the vectors of spec/tap.md §11 and the §10 disagreements, decoded the way the
code sends them."""

from __future__ import annotations

import struct

import pytest

from dcpinspect.families.mcbp.messages.frame import DecodeContext, decode_frame
from dcpinspect.families.mcbp.messages.names import VBUCKET_STATES
from dcpinspect.families.mcbp.rules.book import TAP_RULES
from dcpinspect.families import rule_book
from frames import TAP_VECTORS, frame
from tapgen import (
    ACTIVE, BACKFILL, CHECKPOINT, CHECKPOINT_END, CHECKPOINT_START, DEAD, EBUSY, EINVAL, FIX_BYTEORDER, KEYS_ONLY,
    LIST_VBUCKETS, MUTATION, NETWORK_BYTE_ORDER, NO_VALUE, OPAQUE, PENDING, REGISTERED_CLIENT, SUPPORT_ACK, TAKEOVER,
    VBUCKET_SET, Tap, connect_frame, event_frame, findings, session_of,
)

ALL_RULES = rule_book()


def rules_of(frames, seen_from_start=False) -> list[str]:
    return [f.rule for _, f in findings(frames, seen_from_start)]


def fired(frames, rule, seen_from_start=False):
    return [(n, f) for n, f in findings(frames, seen_from_start) if f.rule == rule]


# -- one conversation that breaks each rule, and its near miss ----------------------------------


def _no_connect(from_start):
    def build():
        tap = Tap()
        tap.mutation(0, b"a")
        return tap.frames, from_start
    return build


def _second_connect(twice):
    def build():
        tap = Tap().connect(0)
        if twice:
            tap.connect(0)
        tap.mutation(0, b"a")
        return tap.frames, True
    return build


def _connect_flags(flags, **kw):
    return lambda: (Tap().connect(flags, **kw).frames, True)


def _seqnos(*seqnos, flags=SUPPORT_ACK):
    def build():
        tap = Tap().connect(flags)
        for s in seqnos:
            tap.mutation(0, b"k%d" % s, seqno=s)
        return tap.frames, True
    return build


def _noop(opaque):
    def build():
        tap = Tap().connect(0)
        tap.noop(opaque)
        return tap.frames, True
    return build


def _ack_flag(connect, ack):
    def build():
        tap = Tap().connect(connect)
        seq = tap.vbucket_set(3, PENDING, ack=ack)
        if ack and connect & SUPPORT_ACK:
            tap.ack(seq, VBUCKET_SET)
        return tap.frames, True
    return build


def _ack_unmatched(seqno):
    def build():
        tap = Tap().connect(SUPPORT_ACK)
        tap.mutation(0, b"a", ack=True)
        tap.ack(seqno, MUTATION)
        return tap.frames, True
    return build


def _ack_unanswered(answer):
    def build():
        tap = Tap().connect(SUPPORT_ACK)
        seq = tap.mutation(4, b"a", ack=True)
        if answer:
            tap.ack(seq, MUTATION)
        return tap.frames, True
    return build


def _nack(resend):
    def build():
        tap = Tap().connect(SUPPORT_ACK)
        seq = tap.mutation(2, b"a", ack=True)
        tap.mutation(2, b"b")
        tap.ack(seq, MUTATION, EBUSY)
        if resend:
            seq = tap.mutation(2, b"a", ack=True)
            tap.mutation(2, b"b")
            tap.ack(seq, MUTATION)
        return tap.frames, True
    return build


def _error_then(more):
    def build():
        tap = Tap().connect(SUPPORT_ACK)
        seq = tap.mutation(2, b"a", ack=True)
        tap.ack(seq, MUTATION, EINVAL)
        if more:
            tap.mutation(2, b"b")
        return tap.frames, True
    return build


def _takeover(*steps, vbs=(7,)):
    def build():
        tap = Tap().connect(TAKEOVER | LIST_VBUCKETS | SUPPORT_ACK, vbuckets=list(vbs))
        for vb, state in steps:
            tap.ack(tap.vbucket_set(vb, state, ack=True), VBUCKET_SET)
        return tap.frames, True
    return build


def _checkpoints(*steps, flags=CHECKPOINT | SUPPORT_ACK):
    def build():
        tap = Tap().connect(flags)
        for op, cid in steps:
            tap.ack(tap.checkpoint(op, 1, cid, ack=bool(flags & SUPPORT_ACK)), op) if flags & SUPPORT_ACK else \
                tap.checkpoint(op, 1, cid)
        return tap.frames, True
    return build


def _keys_only(second_value, second_flags=0):
    def build():
        tap = Tap().connect(KEYS_ONLY)
        tap.mutation(0, b"a", b"", flags=NO_VALUE)
        tap.mutation(0, b"b", second_value, flags=second_flags)
        return tap.frames, True
    return build


def _ttl(ttl):
    def build():
        tap = Tap().connect(0)
        tap.mutation(0, b"a", ttl=ttl)
        return tap.frames, True
    return build


def _engine_length(opcode, size):
    def build():
        tap = Tap().connect(0)
        tap.event(opcode, 5, engine=bytes(size - 1) + b"\x01" if size else b"")
        return tap.frames, True
    return build


def _item_flags(flags, connect=0):
    def build():
        tap = Tap().connect(connect)
        tap.mutation(0, b"a", item_flags=0x00030000, flags=flags)
        return tap.frames, True
    return build


#: rule → (breaks it, near miss): builders of (frames, seen from start)
CASES = {
    "tap-connect-missing": (_no_connect(True), _no_connect(False)),
    "tap-connect-flags": (_connect_flags(0x210), _connect_flags(0x1F7 & ~TAKEOVER | FIX_BYTEORDER, backfill=0)),
    "tap-seqno": (_seqnos(1, 3), _seqnos(1, 2)),
    "tap-ack-flag": (_ack_flag(SUPPORT_ACK, False), _ack_flag(SUPPORT_ACK, True)),
    "tap-ack-unmatched": (_ack_unmatched(9), _ack_unmatched(1)),
    "tap-ack-unanswered": (_ack_unanswered(False), _ack_unanswered(True)),
    "tap-nack-not-resent": (_nack(False), _nack(True)),
    "tap-error-not-disconnected": (_error_then(True), _error_then(False)),
    "tap-takeover-state": (_takeover((7, ACTIVE)), _takeover((7, PENDING), (7, ACTIVE))),
    "tap-takeover-incomplete": (_takeover((7, PENDING), (7, ACTIVE), (9, PENDING), vbs=(7, 9)),
                                _takeover((7, PENDING), (7, ACTIVE), (9, PENDING), (9, ACTIVE), vbs=(7, 9))),
    "tap-checkpoint-order": (_checkpoints((CHECKPOINT_START, 5), (CHECKPOINT_END, 6)),
                             _checkpoints((CHECKPOINT_START, 5), (CHECKPOINT_END, 5))),
    "tap-checkpoint-regression": (_checkpoints((CHECKPOINT_START, 5), (CHECKPOINT_END, 5), (CHECKPOINT_START, 5)),
                                  _checkpoints((CHECKPOINT_START, 5), (CHECKPOINT_END, 5), (CHECKPOINT_START, 6))),
    "tap-checkpoint-unrequested": (_checkpoints((CHECKPOINT_START, 5), flags=0),
                                   _checkpoints((CHECKPOINT_START, 5), flags=CHECKPOINT)),
    "tap-keys-only-value": (_keys_only(b"value"), _keys_only(b"", NO_VALUE)),
    "tap-ttl-zero": (_ttl(0), _ttl(1)),
    "tap-engine-specific": (_engine_length(VBUCKET_SET, 8), _engine_length(VBUCKET_SET, 4)),
    "tap-item-flags-byte-order": (_item_flags(0), _item_flags(NETWORK_BYTE_ORDER)),
}


def test_every_tap_rule_has_a_case():
    assert set(CASES) == set(TAP_RULES)
    assert all(r.scope == "tap" for r in TAP_RULES.values())
    assert set(TAP_RULES) <= set(ALL_RULES)


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_fires(rule):
    frames, from_start = CASES[rule][0]()
    got = fired(frames, rule, from_start)
    assert len(got) == 1, rules_of(frames, from_start)
    f = got[0][1]
    want = TAP_RULES[rule]
    assert (f.cls, f.ref) == (want.cls, want.ref)


@pytest.mark.parametrize("rule", sorted(CASES))
def test_near_miss_is_quiet(rule):
    frames, from_start = CASES[rule][1]()
    found = findings(frames, from_start)
    assert rule not in [f.rule for _, f in found]
    # the near misses are clean TAP conversations: one retired-opcode note, no TAP rule, and
    # where the consumer answered with an error the answer itself (answered-error)
    rest = [f.rule for _, f in found if f.rule != "answered-error"]
    assert rest == ["retired-opcode"], found


# -- what each finding says, and where -----------------------------------------------------


def test_unanswered_ack_names_its_frame_and_vbucket():
    frames, _ = _ack_unanswered(False)()
    ((n, f),) = fired(frames, "tap-ack-unanswered")
    assert (f.frame, f.vbucket, f.severity) == (2, 4, "error") and "seqno 1" in f.message


def test_unanswered_requests_are_one_finding_with_the_count():
    tap = Tap().connect(SUPPORT_ACK)
    for k in (b"a", b"b", b"c"):
        tap.mutation(0, k, ack=True)
    ((_, f),) = fired(tap.frames, "tap-ack-unanswered")
    assert f.frame == 2 and "and 2 later ACK requests" in f.message


def test_a_later_ack_answers_earlier_requests_cumulatively():
    tap = Tap().connect(SUPPORT_ACK)
    tap.mutation(0, b"a", ack=True)
    tap.ack(tap.mutation(0, b"b", ack=True), MUTATION)
    assert rules_of(tap.frames) == ["retired-opcode"]


def test_an_ack_for_an_already_covered_event_matches_nothing():
    tap = Tap().connect(SUPPORT_ACK)
    a = tap.mutation(0, b"a", ack=True)
    tap.ack(tap.mutation(0, b"b", ack=True), MUTATION)
    tap.ack(a, MUTATION)  # covered by the ACK of b
    assert "tap-ack-unmatched" in rules_of(tap.frames)


def test_an_ack_on_the_producer_side_matches_nothing():
    tap = Tap().connect(SUPPORT_ACK)
    seq = tap.mutation(0, b"a", ack=True)
    tap.add("s2c", frame(0x81, MUTATION, opaque=seq))
    ((_, f),) = fired(tap.frames, "tap-ack-unmatched")
    assert "producer" in f.message


def test_an_ack_for_an_event_before_the_capture_is_not_judged():
    """Joined mid-conversation: an answer to an event sent before the capture began."""
    tap = Tap(first_seqno=50)
    tap.mutation(0, b"a", ack=True)
    tap.ack(49, MUTATION)
    tap.ack(50, MUTATION)
    assert rules_of(tap.frames, seen_from_start=False) == ["retired-opcode"]


def test_a_nack_with_etmpfail_also_wants_the_resend():
    tap = Tap().connect(SUPPORT_ACK)
    seq = tap.mutation(1, b"a", ack=True)
    tap.ack(seq, MUTATION, 0x86)
    ((n, f),) = fired(tap.frames, "tap-nack-not-resent")
    assert f.frame == 3 and "1 events" in f.message


def test_an_error_answer_wants_a_disconnect_once():
    tap = Tap().connect(SUPPORT_ACK)
    seq = tap.mutation(2, b"a", ack=True)
    tap.ack(seq, MUTATION, EINVAL)
    tap.mutation(2, b"b")
    tap.mutation(2, b"c")
    got = fired(tap.frames, "tap-error-not-disconnected")
    assert [n for n, _ in got] == [4] and "Einval" in got[0][1].message


def test_seqno_wraps_to_one():
    assert "tap-seqno" not in rules_of(_seqnos(0xFFFFFFFE, 0xFFFFFFFF, 1)()[0])
    assert "tap-seqno" in rules_of(_seqnos(0xFFFFFFFF, 0)()[0])


def test_without_support_ack_the_counter_may_stand_still():
    """ep-engine advances the sequence number in requestAck, which returns at once on a
    connection without SupportAck: every event may carry the same opaque."""
    assert "tap-seqno" not in rules_of(_seqnos(1, 1, 1, flags=0)()[0])
    assert "tap-seqno" in rules_of(_seqnos(1, 1, flags=SUPPORT_ACK)()[0])


def test_noop_carries_zero():
    assert "tap-seqno" in rules_of(_noop(5)()[0])
    assert "tap-seqno" not in rules_of(_noop(0)()[0])


def test_second_connect_is_reported():
    assert rules_of(_second_connect(True)()[0]).count("tap-connect-missing") == 1
    assert "tap-connect-missing" not in rules_of(_second_connect(False)()[0])


def test_connect_missing_is_said_once():
    tap = Tap()
    for k in (b"a", b"b", b"c"):
        tap.mutation(0, k)
    assert rules_of(tap.frames, seen_from_start=True).count("tap-connect-missing") == 1


def test_takeover_without_list_vbuckets():
    frames, _ = _connect_flags(TAKEOVER)()
    ((_, f),) = fired(frames, "tap-connect-flags")
    assert "ListVbuckets" in f.message


@pytest.mark.parametrize("steps, text", [
    (((7, PENDING), (7, ACTIVE), (7, PENDING)), "pending after active"),
    (((7, DEAD),), "set dead"),
])
def test_takeover_states_that_reverse_or_are_foreign(steps, text):
    ((_, f),) = fired(_takeover(*steps)()[0], "tap-takeover-state")
    assert text in f.message and f.vbucket == 7


def test_takeover_incomplete_names_the_vbucket():
    frames, _ = CASES["tap-takeover-incomplete"][0]()
    ((_, f),) = fired(frames, "tap-takeover-incomplete")
    assert f.vbucket == 9 and "pending" in f.message


def test_takeover_incomplete_waits_for_the_takeover_phase():
    """A takeover stream still in its backfill when the capture ends says nothing yet."""
    tap = Tap().connect(TAKEOVER | LIST_VBUCKETS, vbuckets=[7])
    tap.mutation(7, b"a")
    assert "tap-takeover-incomplete" not in rules_of(tap.frames)


def test_a_takeover_of_two_vbuckets_is_clean():
    tap = Tap().connect(TAKEOVER | LIST_VBUCKETS | SUPPORT_ACK, vbuckets=[7, 9])
    tap.ack(tap.mutation(7, b"a", ack=True), MUTATION)
    tap.takeover([7, 9])
    assert rules_of(tap.frames) == ["retired-opcode"]


@pytest.mark.parametrize("steps, text", [
    (((CHECKPOINT_START, 5), (CHECKPOINT_START, 6)), "while 5 is open"),
    (((CHECKPOINT_START, 5), (CHECKPOINT_END, 5), (CHECKPOINT_END, 5)), "without its START"),
])
def test_checkpoint_order_variants(steps, text):
    ((_, f),) = fired(_checkpoints(*steps)()[0], "tap-checkpoint-order")
    assert text in f.message


def test_a_first_checkpoint_end_may_close_a_checkpoint_begun_before_the_connection():
    assert "tap-checkpoint-order" not in rules_of(_checkpoints((CHECKPOINT_END, 4), (CHECKPOINT_START, 5))()[0])


def test_checkpoint_unrequested_is_said_once():
    frames, _ = _checkpoints((CHECKPOINT_START, 5), (CHECKPOINT_END, 5), flags=0)()
    assert rules_of(frames).count("tap-checkpoint-unrequested") == 1


def test_no_value_flag_with_a_value():
    tap = Tap().connect(0)
    tap.mutation(0, b"a", b"v", flags=NO_VALUE)
    ((_, f),) = fired(tap.frames, "tap-keys-only-value")
    assert "1 value bytes" in f.message


def test_keys_only_requested_but_not_granted_allows_values():
    """The server may ignore the request: values without TAP_FLAG_NO_VALUE from the start."""
    tap = Tap().connect(KEYS_ONLY)
    tap.mutation(0, b"a", b"v")
    tap.mutation(0, b"b", b"v")
    assert "tap-keys-only-value" not in rules_of(tap.frames)


def test_engine_specific_length_of_an_opaque_is_a_warning():
    ((_, f),) = fired(_engine_length(OPAQUE, 0)()[0], "tap-engine-specific")
    assert f.severity == "warning" and "ignores" in f.message
    ((_, g),) = fired(_engine_length(VBUCKET_SET, 8)()[0], "tap-engine-specific")
    assert g.severity == "error" and "disconnects" in g.message


def test_item_flags_are_shown_both_ways():
    """spec §4: without TAP_FLAG_NETWORK_BYTE_ORDER show both readings; info, or a warning
    when the consumer asked for network order (FixFlagByteorder)."""
    ((_, f),) = fired(_item_flags(0)()[0], "tap-item-flags-byte-order")
    assert f.severity == "info" and "0x00030000 in network order" in f.message
    assert "0x00000300 in host" in f.message
    ((_, g),) = fired(_item_flags(0, FIX_BYTEORDER)()[0], "tap-item-flags-byte-order")
    assert g.severity == "warning"


# -- the connect checks of the frame rule tap-connect-value (spec §9.2) ----------------------


@pytest.mark.parametrize("flags, value", [
    (BACKFILL, b"\x00" * 7),  # BACKFILL without its 8 bytes
    (LIST_VBUCKETS, b"\x00\x03\x00\x01\x00\x02"),  # 3 vbuckets, 2 there
    (CHECKPOINT, b"\x00\x02" + struct.pack(">HQ", 1, 5)),  # 2 checkpoints, 1 there
])
def test_connect_values_the_server_rejects(flags, value):
    frames = [("c2s", connect_frame(flags, value=value))]
    assert "tap-connect-value" in rules_of(frames, True)


@pytest.mark.parametrize("kw", [
    dict(flags=BACKFILL, backfill=0xFFFFFFFFFFFFFFFF),
    dict(flags=LIST_VBUCKETS, vbuckets=[]),
    dict(flags=CHECKPOINT | REGISTERED_CLIENT, checkpoints={1: 5}, closed_only=1),
    dict(flags=REGISTERED_CLIENT),
])
def test_connect_values_that_fit(kw):
    assert rules_of([("c2s", connect_frame(**kw))], True) == ["retired-opcode"]


# -- retired-opcode once a connection ------------------------------------------------------


def test_retired_opcode_once_per_connection():
    tap = Tap().connect(BACKFILL | SUPPORT_ACK, backfill=0)
    tap.backfill(0, items=200, interval=50)
    found = findings(tap.frames)
    retired = [(n, f) for n, f in found if f.rule == "retired-opcode"]
    assert len(tap.frames) > 200 and [n for n, _ in retired] == [1]
    assert "once per connection" in retired[0][1].message


def test_retired_opcode_once_per_connection_each_connection():
    a, b = Tap().connect(0), Tap().connect(0)
    a.mutation(0, b"x")
    b.mutation(0, b"y")
    assert rules_of(a.frames).count("retired-opcode") == rules_of(b.frames).count("retired-opcode") == 1


def test_dcp_flush_keeps_its_note_on_every_frame():
    """The once-a-connection note is TAP's: DCP's other retired opcodes are unchanged."""
    flush = frame(0x80, 0x5A, vbucket=1)
    assert rules_of([("c2s", flush), ("c2s", flush)]).count("retired-opcode") == 2


# -- spec/tap.md §11 vectors ---------------------------------------------------------------

#: §11.4, as printed
V_MUTATION = ("80 41 00 01 10 00 00 05 00 00 00 1b 00 00 00 10 11 22 33 44 55 66 77 88 00 09 00 05 ff 00 00 00 "
              "de ad be ef 00 00 00 00 00 00 00 00 00 00 00 01 02 6b 76")
V_MUTATION_ACK = "81 41 00 00 00 00 00 00 00 00 00 00 00 00 00 10 00 00 00 00 00 00 00 00"
V_INITIAL = ("80 44 00 00 08 00 00 05 00 00 00 0c 00 00 00 01 00 00 00 00 00 00 00 00 00 04 00 01 ff 00 00 00 "
             "00 00 00 01")
V_CHECKPOINT_START = ("80 46 00 10 10 00 00 05 00 00 00 30 00 00 00 03 00 00 00 00 00 00 00 00 "
                      "00 08 00 01 ff 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                      "63 68 65 63 6b 70 6f 69 6e 74 5f 73 74 61 72 74 00 00 00 00 00 00 00 07")


def _hex(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


def _decode(data: bytes):
    return decode_frame(data, 0, DecodeContext())


def test_vectors_11_4_are_what_the_layouts_build():
    """The generator's frames are the spec's bytes: the layouts and the vectors agree."""
    assert event_frame(MUTATION, 0x10, 5, flags=0x05, key=b"k", value=b"v", engine=struct.pack(">QB", 1, 2),
                       item_flags=0xDEADBEEF, cas=0x1122334455667788) == _hex(V_MUTATION)
    assert frame(0x81, MUTATION, opaque=0x10) == _hex(V_MUTATION_ACK)
    assert event_frame(OPAQUE, 1, 5, flags=0x01, engine=struct.pack(">I", 1)) == _hex(V_INITIAL)
    assert event_frame(CHECKPOINT_START, 3, 5, flags=0x01, key=b"checkpoint_start", value=struct.pack(">Q", 7),
                       engine=bytes(8)) == _hex(V_CHECKPOINT_START)


def test_vector_11_4_mutation_and_its_ack_pair():
    frames = [("c2s", connect_frame(SUPPORT_ACK | FIX_BYTEORDER)), ("s2c", _hex(V_MUTATION)), ("c2s", _hex(V_MUTATION_ACK))]
    m = _decode(_hex(V_MUTATION))
    assert (m.values["rev_seqno"], m.values["nru"], m.values["item_flags"], m.key, m.value) == (1, 2, 0xDEADBEEF, b"k", b"v")
    s = session_of(frames)
    assert s.acks == 1 and s.unanswered() == [] and s.waits.count == 1
    assert rules_of(frames, True) == ["retired-opcode"]


def test_vector_11_4_backfill_start_and_checkpoint_start():
    frames = [("c2s", connect_frame(SUPPORT_ACK | CHECKPOINT | BACKFILL, backfill=0)),
              ("s2c", _hex(V_INITIAL)), ("c2s", frame(0x81, OPAQUE, opaque=1)),
              ("s2c", event_frame(MUTATION, 2, 5, key=b"a", value=b"b")),
              ("s2c", _hex(V_CHECKPOINT_START)), ("c2s", frame(0x81, CHECKPOINT_START, opaque=3))]
    s = session_of(frames)
    assert s.vbuckets[5].phase == "backfill" and s.vbuckets[5].checkpoint_open == 7
    assert rules_of(frames, True) == ["retired-opcode"]


def test_vectors_11_1_decode_and_judge_alone():
    """Each docs vector alone: decoded as the layouts say; on a connection of its own only
    the retired note and what the docs' example values break (TTL 255, opaque 0: nothing
    but a first sequence number; the VBUCKET_SET asks for an ACK nobody answers)."""
    for name, hx in TAP_VECTORS.items():
        data = bytes.fromhex(hx)
        got = set(rules_of([("s2c" if data[1] != 0x40 else "c2s", data)]))
        want = {"retired-opcode"} | ({"tap-ack-unanswered"} if name == "vbucket_set" else set())
        assert got == want, name


def test_vector_11_1_complex_connect():
    m = _decode(bytes.fromhex(TAP_VECTORS["connect_mixed"]))
    assert m.values["flags"] == 0x35 and m.fields["backfill_time"] == 5 and m.fields["vbuckets"] == [0, 1, 2, 3, 4]
    s = session_of([("c2s", bytes.fromhex(TAP_VECTORS["connect_mixed"]))])
    assert s.connect.has(KEYS_ONLY) and s.connect.has(SUPPORT_ACK) and s.connect.vbuckets == (0, 1, 2, 3, 4)


def test_vectors_11_2_item_flags_byte_orders():
    """spymemcached: with NETWORK_BYTE_ORDER bytes 00 00 03 00 read 0x0300 big-endian; without
    it, bytes 00 03 00 00 read 0x0300 in host (little-endian) order."""
    fixed = event_frame(MUTATION, 1, key=b"a", value=b"\x2a", flags=NETWORK_BYTE_ORDER, item_flags=0x00000300)
    wrong = event_frame(MUTATION, 1, key=b"a", value=b"\x2a", item_flags=0x00030000)
    assert fixed[32:36] == b"\x00\x00\x03\x00" and wrong[32:36] == b"\x00\x03\x00\x00"
    assert "tap-item-flags-byte-order" not in rules_of([("s2c", fixed)])
    ((_, f),) = fired([("s2c", wrong)], "tap-item-flags-byte-order")
    assert "0x00000300 in host" in f.message
    # TapDeleteTest: nengine 4 "abcd" then key 'a'
    d = _decode(event_frame(0x42, 1, key=b"a", engine=b"abcd", flags=NETWORK_BYTE_ORDER))
    assert d.key == b"a" and d.values["engine_specific_length"] == 4 and d.value == b""


def test_vectors_11_3_gomemcached_connect():
    ok = connect_frame(0x07, b"hello", value=bytes.fromhex("000000c00d767614" "0003000100020004") + b"\x0d")
    m = _decode(ok)
    assert m.fields["backfill_time"] == 824859588116 and m.fields["vbuckets"] == [1, 2, 4]
    assert "tap-connect-value" in rules_of([("c2s", ok)], True)  # the stray byte 0x0d
    short = connect_frame(0x04, b"hello", value=bytes.fromhex("000300010002"))
    assert "tap-connect-value" in rules_of([("c2s", short)], True)
    table = _decode(connect_frame(0x04, b"x", value=bytes.fromhex("000201000010")))
    assert table.fields["vbuckets"] == [256, 16]


# -- spec/tap.md §10: where the documents and the code disagree ------------------------------


def test_10_1_checkpoint_frames_have_16_bytes_of_extras_a_key_and_an_8_byte_value():
    m = _decode(_hex(V_CHECKPOINT_START))
    assert (m.extras_length, m.key, m.fields["checkpoint_id"], m.values["engine_specific_length"]) == (
        16, b"checkpoint_start", 7, 8)
    assert not m.problems
    docs = frame(0x80, CHECKPOINT_START, extras=_hex("00 00 00 00 ff 00 00 00"), value=struct.pack(">Q", 7))
    assert "extras-length" in rules_of([("s2c", docs)])  # the docs' extlen 8 is not what is sent


def test_10_2_vbucket_set_engine_length_is_4():
    m = _decode(bytes.fromhex(TAP_VECTORS["vbucket_set"]))
    assert m.values["engine_specific_length"] == 4 and m.fields["vbucket_state"] == "pending"


def test_10_3_checkpoint_end_is_0x47():
    m = _decode(event_frame(CHECKPOINT_END, 4, key=b"checkpoint_end", value=struct.pack(">Q", 7)))
    assert (m.opcode, m.name, m.fields["checkpoint_id"]) == (0x47, "TAP_CHECKPOINT_END", 7)


def test_10_4_checkpoint_registered_client_and_byte_order_flags_are_known():
    frames = [("c2s", connect_frame(CHECKPOINT | REGISTERED_CLIENT | FIX_BYTEORDER, checkpoints={}))]
    assert rules_of(frames, True) == ["retired-opcode"]
    assert _decode(frames[0][1]).fields["flags"] == ["Checkpoint", "RegisteredClient", "FixFlagByteorder"]


def test_10_5_opaque_code_sits_in_the_engine_bytes():
    m = _decode(bytes.fromhex(TAP_VECTORS["opaque"]))
    assert m.values["engine_specific_length"] == 4 and m.values["opaque_code"] == 0xFFFFFFFF


def test_10_6_opaque_code_4_is_complete_vb_filter_change():
    m = _decode(event_frame(OPAQUE, 1, engine=struct.pack(">I", 4)))
    assert m.fields["opaque_code"] == "CompleteVbFilterChange"


def test_10_7_0x43_is_flush_and_the_checkpoint_id_follows_the_key():
    assert _decode(bytes.fromhex(TAP_VECTORS["flush"])).name == "TAP_FLUSH"
    m = _decode(_hex(V_CHECKPOINT_START))  # key of 16 bytes: the id is at 64, not 40
    assert m.fields["checkpoint_id"] == 7 == int.from_bytes(_hex(V_CHECKPOINT_START)[64:72], "big")


def test_10_8_vbucket_states_follow_vbucket_h():
    assert (VBUCKET_STATES[2], VBUCKET_STATES[3]) == ("replica", "pending")
    s = session_of([("s2c", event_frame(VBUCKET_SET, 1, 9, engine=struct.pack(">I", 3)))])
    assert s.vbuckets[9].phase == "pending"
