"""Rules of a state that lasts report it once an episode: on the first message in the
state, again only after the state ended and began again (README: validate).

Each case is a real TCP capture written by ``dcpgen`` (DCP) or ``tapgen`` (TAP) in which
the state lasts many frames, ends, and begins again. It is judged three ways that must agree: ``validate -f
jsonl`` as users run it, with the C modules and without them (``DCPINSPECT_PURE=1``), and
``decode -f jsonl`` in process with the fast lane and without (``test_lane.run``).
"""

from __future__ import annotations

import os
import subprocess

import pytest

import servers
import tapgen
from dcpgen import ERANGE, Dcp, Producer
from dcpinspect.families.mcbp.messages import dcp as L
from test_lane import lane_module, run

N = 40  # frames a state lasts


def _unlabelled(p: Producer, n: int) -> None:
    """``n`` mutations without the stream-id frame their stream has."""
    for _ in range(n):
        s = p._next(None)
        p.send(0x57, extras=L.MUTATION.pack(by_seqno=s, rev_seqno=1), key=p.key(), value=b'{"v":1}', sid=False)


def after_stream_end():
    """Mutations after STREAM_END: one finding a stream, the first after each end."""
    d = Dcp().handshake()
    for vb in (14, 15):
        p = d.stream(vb)
        p.snapshot(3).end()
        for _ in range(N):
            p.mutation()
    return d, {"after-stream-end": 2}


def no_stream():
    """Messages for vb 13 with no stream (none requested); a stream of vb 13 opens and ends;
    messages under a request the producer refused: a second episode."""
    d = Dcp().handshake()
    stray = Producer(d, vb=13, opaque=0x7777)
    stray.marker(1, N)
    for _ in range(N):
        stray.mutation()
    p = d.stream(13)
    p.snapshot(3).end()
    refused = d.stream_request(13, start=3)
    d.stream_error(refused, ERANGE)
    again = Producer(d, vb=13, opaque=refused, seqno=3)
    for _ in range(N):
        again.mutation()
    return d, {"no-stream": 2, "answered-error": 1}


def stream_id_missing():
    """Stream-id frames missing on two streams (mixed with frames that have them): once a stream."""
    d = Dcp().handshake(stream_ids=True)
    for vb, sid in ((31, 2), (32, 3)):
        p = d.stream(vb, sid=sid)
        p.marker(1, 3 * N)
        _unlabelled(p, N)
        for _ in range(N):
            p.mutation()
        _unlabelled(p, N)
    return d, {"stream-id-missing": 2}


def negotiation_missing():
    """Prepares without enable_sync_writes; negotiated (quiet); unset again: a second episode.
    v2.2 markers likewise with max_marker_version."""
    d = Dcp(collections=False).handshake()
    p = d.stream(30)
    p.marker(1, 3 * N)  # the prepares fill it
    for setting in (None, "true", "false"):
        if setting is not None:
            d.control("enable_sync_writes", setting)
        for _ in range(N):
            p.prepare()
    for setting in (None, "2.2", "2.0"):
        if setting is not None:
            d.control("max_marker_version", setting)
        for _ in range(5):
            p.snapshot(4, version="2.2")
    return d, {"negotiation-missing": 4}


def item_before_marker():
    """Items before any marker on two streams: once a stream."""
    d = Dcp().handshake()
    for vb in (7, 8):
        p = d.stream(vb)
        for _ in range(N):
            p.mutation()
        p.snapshot(5)
    return d, {"item-before-marker": 2}


def seqno_outside_snapshot():
    """Items going on past a snapshot whose next marker is missing, twice: once a snapshot."""
    d = Dcp().handshake()
    p = d.stream(6)
    for _ in range(2):
        p.snapshot(5)
        for _ in range(N):
            p.mutation()
    return d, {"seqno-outside-snapshot": 2}


def beyond_end_seqno():
    """Two streams going on past their end seqno, with markers and items: once a stream."""
    d = Dcp().handshake()
    for vb in (19, 20):
        p = d.stream(vb, end=10)
        p.snapshot(10)  # 1..10 holds end seqno 10 and is complete
        for _ in range(N // 4):
            p.snapshot(3)
    return d, {"beyond-end-seqno": 2}


class _Tap:
    """A TAP conversation, written as one TCP connection seen from its SYN."""

    def __init__(self) -> None:
        self.tap = tapgen.Tap()

    def pcap(self, path):
        return tapgen.write_capture(self.tap.frames, path)


def tap_ack_flag():
    """On a SupportAck connection VBUCKET_SETs without TAP_FLAG_ACK; one asks (and is ACKed),
    then again without: a second episode."""
    c = _Tap()
    t = c.tap.connect(tapgen.SUPPORT_ACK)
    for episode in range(2):
        for _ in range(N):
            t.vbucket_set(2, tapgen.REPLICA)
        if not episode:
            t.ack(t.vbucket_set(2, tapgen.REPLICA, ack=True), tapgen.VBUCKET_SET)
    return c, {"tap-ack-flag": 2, "retired-opcode": 1}


def tap_ack_flag_unagreed():
    """Without SupportAck, events asking for ACKs (the consumer answers the last, which
    covers them all): once, as nothing negotiates SupportAck."""
    c = _Tap()
    t = c.tap.connect(0)
    for n in range(N):
        last = t.mutation(3, b"k%d" % n, ack=True)
    t.ack(last, tapgen.MUTATION)
    return c, {"tap-ack-flag": 1, "retired-opcode": 1}


def tap_keys_only_value():
    """Keys only granted, then mutations with values; one without a value ends it; values
    again; one without; values under TAP_FLAG_NO_VALUE: three episodes."""
    c = _Tap()
    t = c.tap.connect(tapgen.KEYS_ONLY)
    t.mutation(0, b"granted", b"", flags=tapgen.NO_VALUE)
    for episode, flags in enumerate((0, 0, tapgen.NO_VALUE)):
        for n in range(N):
            t.mutation(0, b"k%d-%d" % (episode, n), b"value", flags=flags)
        t.mutation(0, b"keys-only-again", b"", flags=tapgen.NO_VALUE)
    return c, {"tap-keys-only-value": 3, "retired-opcode": 1}


CASES = [after_stream_end, no_stream, stream_id_missing, negotiation_missing, item_before_marker,
         seqno_outside_snapshot, beyond_end_seqno, tap_ack_flag, tap_ack_flag_unagreed, tap_keys_only_value]


def _counts(findings: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in findings:
        out[f["rule"]] = out.get(f["rule"], 0) + 1
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_validate_reports_once_an_episode(tmp_path, case):
    d, want = case()
    path = d.pcap(tmp_path / "c.pcap")
    argv = servers.dcpinspect_argv() + ["validate", str(path), "-f", "jsonl"]
    runs = [subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                           env={**os.environ, **extra}) for extra in ({}, {"DCPINSPECT_PURE": "1"})]
    fast, pure = runs
    assert fast.returncode in (0, 1) and "Traceback" not in fast.stderr, fast.stderr
    assert (fast.returncode, fast.stdout) == (pure.returncode, pure.stdout)
    found = [r for r in servers.jsonl(fast.stdout) if "rule" in r]
    assert _counts(found) == want, fast.stdout


@pytest.mark.skipif(not lane_module.available(), reason="built without the C lane")
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_lane_and_rules_say_the_same(tmp_path, case):
    d, want = case()
    path = d.pcap(tmp_path / "c.pcap")
    fast, fast_totals, _ = run(path, True)
    slow, slow_totals, _ = run(path, False)
    assert fast == slow and fast_totals == slow_totals
    assert _counts([f for r in servers.jsonl(fast) if r["kind"] == "frame" for f in r["findings"]]) == want
