"""TAP end to end: pcaps written with dcpinspect.transport.synth from synthetic TAP
conversations (tests/tapgen.py, samples/make_tap_sample.py), through the real command line
(``python3 -m dcpinspect validate/stats/decode/rules``): findings with frame, time, flow and
vbucket; stats per connection and vbucket; the jsonl lane leaves TAP frames to the ordinary
way and prints the same with and without it."""

from __future__ import annotations

import importlib
import importlib.util
import json
from pathlib import Path

import pytest

from dcpinspect.engines.records import keyed_items
from dcpinspect.engines.sinks import run_sink
from dcpinspect.engines.sinks import JsonlSink
from dcpinspect.families import VALUES
from dcpinspect.families.mcbp.rules.book import TAP_RULES
from dcpinspect.sessions.captured import Lines
from dcpinspect.sources.capture import read_records
from frames import REPO, run_cli
from tapgen import (
    BACKFILL, CHECKPOINT, CHECKPOINT_END, CHECKPOINT_START, CHECKPOINT_SYNC, DUMP, EBUSY, KEYS_ONLY, LIST_VBUCKETS,
    MUTATION, NO_VALUE, REGISTERED_CLIENT, SUPPORT_ACK, TAKEOVER, Tap, write_capture,
)

SAMPLE = REPO / "samples" / "tap-backfill.pcap"
DT = 1e-5  # dcpgen.write_capture stamps packets this far apart


def _lane_available() -> bool:
    for name in ("dcpinspect.families.mcbp.lane", "dcpinspect.engines.lane"):
        try:
            return importlib.import_module(name).available()
        except ImportError:
            continue
    return False


def _sample_module():
    spec = importlib.util.spec_from_file_location("make_tap_sample", REPO / "samples" / "make_tap_sample.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def validate(path: Path, *args: str) -> tuple[int, list[dict]]:
    r = run_cli("validate", "-f", "jsonl", *args, str(path))
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, [json.loads(line) for line in r.stdout.decode().splitlines()]


def stats(path: Path) -> dict:
    r = run_cli("stats", "-f", "json", str(path))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def only_tap(report: dict) -> dict:
    (conn,) = report["tap"].values()
    return conn


# -- the sample ------------------------------------------------------------------------------


def test_sample_is_what_its_script_writes(tmp_path):
    assert _sample_module().main(tmp_path).read_bytes() == SAMPLE.read_bytes()


def test_sample_validates_with_its_unanswered_ack():
    code, rows = validate(SAMPLE)
    assert code == 1  # an error: the ACK nobody answered
    assert [r["rule"] for r in rows] == ["retired-opcode", "tap-ack-unanswered"]
    retired, unanswered = rows
    assert retired["opcode_name"] == "TAP_CONNECT" and "once per connection" in retired["message"]
    assert unanswered["vbucket"] == 1 and unanswered["flow"] == "10.0.0.1:50000-10.0.0.2:11210"
    assert unanswered["ref"] == TAP_RULES["tap-ack-unanswered"].ref


def test_sample_finding_names_the_capture_frame_of_the_event():
    """The unanswered event is the last frame the producer sent; its capture frame number
    (counted by Scapy from the TCP payloads) is the finding's frame."""
    from scapy.all import TCP, rdpcap

    packets = rdpcap(str(SAMPLE))
    last_event = max(i for i, p in enumerate(packets, 1)
                     if TCP in p and p[TCP].sport == 11210 and bytes(p[TCP].payload)[:1] == b"\x80")
    _, rows = validate(SAMPLE)
    assert rows[-1]["frame"] == rows[-1]["related_frame"] == last_event
    assert f"(frame {last_event})" in rows[-1]["message"]


def test_sample_stats_per_connection_and_vbucket():
    conversation = _sample_module().conversation()
    report = stats(SAMPLE)
    t = only_tap(report)
    assert t["name"] == "replication:ns_1@10.0.0.1" and t["connect_flags"] == ["Backfill", "ListVbuckets", "SupportAck"]
    assert t["events"] == {"delete": 1, "mutation": 32, "noop": 1, "opaque": 4}
    # 4 opaques, 6 backfill mutations (every 5th) and the last live one asked; all but that one answered
    assert t["acks"]["requested"] == 11 and t["acks"]["answered"] == 10 and t["acks"]["unanswered"] == 1
    assert t["nacks"] == 0 and t["checkpoints"] == 0
    assert t["bytes"] == sum(len(f) for _, f in conversation) and t["frames"] == len(conversation)
    vb0, vb1 = t["vbuckets"]["0"], t["vbuckets"]["1"]
    assert vb0["events"] == {"mutation": 21, "opaque": 2} and vb1["events"] == {"delete": 1, "mutation": 11, "opaque": 2}
    assert vb0["phase"] == vb1["phase"] == "stream"
    # the backfills last from the packet of INITIAL_VBUCKET_STREAM to that of CLOSE_BACKFILL
    opened, closed = _opaque_times(SAMPLE)
    assert vb0["backfill"]["count"] == vb1["backfill"]["count"] == 1
    assert vb0["backfill"]["seconds"] == pytest.approx(closed[0] - opened[0], abs=1e-6)
    assert vb1["backfill"]["seconds"] == pytest.approx(closed[1] - opened[1], abs=1e-6)
    assert t["acks"]["round_trip"]["count"] == 10 and t["acks"]["longest_wait"]["frame"] is not None
    assert report["connections"]["10.0.0.1:50000-10.0.0.2:11210"]["findings"] == 2


def _opaque_times(path: Path) -> tuple[dict, dict]:
    """Capture times of the packets carrying TAP_OPAQUE INITIAL_VBUCKET_STREAM and
    CLOSE_BACKFILL, by vbucket, read with Scapy (one message a packet in the sample)."""
    from scapy.all import TCP, rdpcap

    opened, closed = {}, {}
    for p in rdpcap(str(path)):
        data = bytes(p[TCP].payload) if TCP in p else b""
        if len(data) == 36 and data[:2] == b"\x80\x44":
            code, vb = int.from_bytes(data[32:36], "big"), int.from_bytes(data[6:8], "big")
            {1: opened, 8: closed}.get(code, {})[vb] = float(p.time)
    return opened, closed


def test_sample_stats_table_shows_the_tap_tables():
    r = run_cli("stats", "--no-chart", str(SAMPLE))
    out = r.stdout.decode()
    assert r.returncode == 0 and "TAP connections" in out and "TAP vbuckets" in out
    assert "replication:ns_1@10.0.0.1" in out


def test_dcp_stats_have_no_tap_part():
    assert "tap" not in stats(REPO / "samples" / "dcp-session.pcap")


# -- conversations of each kind, as captures ---------------------------------------------------


def _takeover() -> Tap:
    tap = Tap().connect(TAKEOVER | LIST_VBUCKETS | SUPPORT_ACK | BACKFILL, vbuckets=[7, 9], backfill=0)
    tap.backfill(7, items=6, interval=3)
    tap.backfill(9, items=6, interval=3)
    tap.takeover([7, 9])
    return tap


def _registered() -> Tap:
    tap = Tap().connect(CHECKPOINT | REGISTERED_CLIENT | SUPPORT_ACK, name=b"backup", checkpoints={4: 10}, closed_only=1)
    tap.ack(tap.opaque(4, CHECKPOINT_SYNC, ack=True), 0x44)
    for cid in (11, 12, 13):
        tap.ack(tap.checkpoint(CHECKPOINT_START, 4, cid, ack=True), CHECKPOINT_START)
        tap.mutation(4, b"k%d" % cid)
        tap.ack(tap.checkpoint(CHECKPOINT_END, 4, cid, ack=True), CHECKPOINT_END)
    return tap


def _nack(resend: bool) -> Tap:
    tap = Tap().connect(SUPPORT_ACK)
    seq = tap.mutation(2, b"a", ack=True)
    tap.mutation(2, b"b")
    tap.ack(seq, MUTATION, EBUSY)
    if resend:
        tap.ack(tap.mutation(2, b"a", ack=True), MUTATION)
        tap.mutation(2, b"b")
    return tap


def _keys_only(broken: bool) -> Tap:
    tap = Tap().connect(KEYS_ONLY | DUMP)
    tap.mutation(0, b"a", b"", flags=NO_VALUE)
    tap.mutation(0, b"b", b"oops" if broken else b"", flags=0 if broken else NO_VALUE)
    return tap


@pytest.mark.parametrize("build, rules", [
    (_takeover, ["retired-opcode"]),
    (_registered, ["retired-opcode"]),
    (lambda: _nack(True), ["retired-opcode", "answered-error"]),
    (lambda: _nack(False), ["retired-opcode", "answered-error", "tap-nack-not-resent"]),
    (lambda: _keys_only(False), ["retired-opcode"]),
    (lambda: _keys_only(True), ["retired-opcode", "tap-keys-only-value"]),
])
def test_validate_conversations(tmp_path, build, rules):
    path = write_capture(build().frames, tmp_path / "tap.pcap", coalesced=False)
    code, rows = validate(path)
    assert [r["rule"] for r in rows] == rules
    assert code == (1 if any(TAP_RULES.get(r) and TAP_RULES[r].severity == "error" for r in rules) else 0)


def test_takeover_stats(tmp_path):
    path = write_capture(_takeover().frames, tmp_path / "t.pcap", coalesced=False)
    t = only_tap(stats(path))
    for vb in ("7", "9"):
        v = t["vbuckets"][vb]
        assert v["states"] == ["pending", "active"] and v["phase"] == "active" and v["backfill"]["count"] == 1
    assert t["acks"]["unanswered"] == 0 and t["acks"]["requested"] == t["acks"]["answered"]


def test_registered_client_and_nack_stats(tmp_path):
    t = only_tap(stats(write_capture(_registered().frames, tmp_path / "r.pcap", coalesced=False)))
    assert t["checkpoints"] == 3 and t["vbuckets"]["4"]["checkpoints"] == {"count": 3, "last": 13, "open": None}
    n = only_tap(stats(write_capture(_nack(True).frames, tmp_path / "n.pcap", coalesced=False)))
    assert n["nacks"] == 1 and n["vbuckets"]["2"]["nacks"] == 1


def test_a_capture_joined_mid_conversation_is_not_told_of_a_missing_connect(tmp_path):
    tap = Tap()
    tap.mutation(0, b"a")
    joined = write_capture(tap.frames, tmp_path / "mid.pcap", handshake=False)
    assert [r["rule"] for r in validate(joined)[1]] == ["retired-opcode"]
    from_syn = write_capture(tap.frames, tmp_path / "syn.pcap")
    assert [r["rule"] for r in validate(from_syn)[1]] == ["retired-opcode", "tap-connect-missing"]


# -- jsonl, with and without the C lane ------------------------------------------------------


def _jsonl(path: Path, lane: bool) -> tuple[str, int]:
    sink = JsonlSink()
    taken = 0

    def counted(items):
        nonlocal taken
        for key, item in items:
            if type(item) is Lines:
                taken += item.count
            yield key, item

    keyed = counted(keyed_items(read_records(path), detail=VALUES, lane=lane))
    return b"".join(line for _, line in run_sink(sink, keyed)).decode("ascii"), taken


@pytest.mark.parametrize("build", [_takeover, _registered, lambda: _nack(False)])
def test_jsonl_is_the_same_with_and_without_the_lane(tmp_path, build):
    if not _lane_available():
        pytest.skip("built without the C lane")
    for path in (SAMPLE, write_capture(build().frames, tmp_path / "c.pcap")):
        fast, _ = _jsonl(path, True)
        slow, none = _jsonl(path, False)
        assert none == 0 and fast == slow


def test_lane_takes_no_tap_event(tmp_path):
    """TAP events are requests the lane declines: only empty answers may go through C."""
    if not _lane_available():
        pytest.skip("built without the C lane")
    text, taken = _jsonl(SAMPLE, True)
    names = [json.loads(line).get("opcode_name") for line in text.splitlines()]
    assert names.count("TAP_MUTATION") == 32 + 6  # 32 events and the 6 answers to mutations
    assert taken <= 10  # at most the ACKs (empty answers)


def test_decode_jsonl_and_validate_agree_on_tap_findings():
    r = run_cli("decode", "-f", "jsonl", str(SAMPLE))
    per_frame = {(rec["frame"], f["rule"]) for rec in map(json.loads, r.stdout.decode().splitlines())
                 if rec.get("kind") == "frame" for f in rec.get("findings", [])}
    _, rows = validate(SAMPLE)
    assert per_frame == {(row["frame"], row["rule"]) for row in rows if row["direction"] is not None}


def test_rules_command_lists_the_tap_rules():
    r = run_cli("rules", "-f", "jsonl")
    listed = {rec["rule"]: rec for rec in map(json.loads, r.stdout.decode().splitlines())}
    for rule, spec in TAP_RULES.items():
        assert listed[rule]["scope"] == "tap" and listed[rule]["ref"] == spec.ref
