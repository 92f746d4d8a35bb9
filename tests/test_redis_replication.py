"""Redis replication from captures (spec/rdb.md §12): the session's replication offsets,
the payload's keys, each replication rule both ways, and whole captures written with
synth through ``decode -f jsonl``, ``validate`` and ``stats``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import rdbgen
from dcpinspect.engines.records import decode_records
from dcpinspect.families.redis.replication.frames import PayloadRecord, RespRecord
from dcpinspect.families.redis.rules import REDIS_RULES
from dcpinspect.families import rule_book
from dcpinspect.sessions.captured import Captured
from dcpinspect.sources.capture import read_records
from dcpinspect.transport import synth

from test_redis_resp import command

ALL_RULES = rule_book()

REPLID = b"5d" * 20
RESYNC_AT = 1000


def rdb(*keys: tuple[str, str], checksum: bool = True) -> bytes:
    return rdbgen.rdb(b"\xfe\x00" + b"".join(rdbgen.key(0, k, rdbgen.string(v)) for k, v in keys),
                      checksum=checksum)


RDB = rdb(("a", "1"), ("b", "2"), ("c", "3"))
STREAM = [command("SELECT", "0"), command("SET", "k", "v"), command("DEL", "a"), command("REPLCONF", "GETACK", "*")]


def ends(stream=STREAM, base: int = RESYNC_AT) -> list[int]:
    out, at = [], base
    for c in stream:
        at += len(c)
        out.append(at)
    return out


def conversation(payload: bytes = RDB, acks=(), stream=STREAM, diskless: bool = False, after=()) -> list:
    mark = b"m" * 40
    body = b"$EOF:" + mark + b"\r\n" + payload + mark if diskless else b"$%d\r\n" % len(payload) + payload
    msgs = [("c2s", command("PING")), ("s2c", b"+PONG\r\n"),
            ("c2s", command("REPLCONF", "listening-port", "6380")), ("s2c", b"+OK\r\n"),
            ("c2s", command("REPLCONF", "capa", "eof", "capa", "psync2")), ("s2c", b"+OK\r\n"),
            ("c2s", command("PSYNC", "?", "-1")), ("s2c", b"+FULLRESYNC %s %d\r\n" % (REPLID, RESYNC_AT)),
            ("s2c", b"\n"), ("s2c", body)]
    msgs += [("s2c", c) for c in stream]
    msgs += [("c2s", command("REPLCONF", "ACK", str(a))) for a in acks]
    msgs += list(after)
    return msgs


def capture(tmp_path, msgs, port: int = 6379, name: str = "repl.pcap", **kw):
    path = tmp_path / name
    synth.write_pcap(path, synth.tcp_conversation(msgs, client=("10.0.0.1", 45000), server=("10.0.0.2", port), **kw))
    return path


def records(path) -> list:
    return [i.msg for i in decode_records(read_records(path)) if isinstance(i, Captured)]


def rules_of(recs) -> list[str]:
    return [f.rule for r in recs for f in r.findings]


def test_commands_get_the_offset_after_fullresync_plus_the_bytes_before_them(tmp_path):
    recs = records(capture(tmp_path, conversation(acks=[ends()[-1]])))
    stream = [r for r in recs if isinstance(r, RespRecord) and r.repl_offset is not None]
    assert [r.verb for r in stream] == [b"SELECT", b"SET", b"DEL", b"REPLCONF"]
    assert [r.repl_offset for r in stream] == [RESYNC_AT] + ends()[:-1]
    ack = recs[-1]
    assert ack.fields["ack_offset"] == ends()[-1] and ack.findings == []
    head = next(r for r in recs if isinstance(r, PayloadRecord) and r.head)
    assert head.head == {"form": "length", "payload_length": len(RDB)} and head.repl_offset == RESYNC_AT


@pytest.mark.parametrize("diskless", [False, True])
def test_the_payload_keys_are_the_rdb_commands_records(tmp_path, diskless):
    recs = records(capture(tmp_path, conversation(diskless=diskless), mss=7))  # the mark cut across segments
    keys = [k for r in recs if isinstance(r, PayloadRecord) for k in r.keys]
    assert [(k.db, k.key, k.type) for k in keys] == [(0, b"a", "string"), (0, b"b", "string"), (0, b"c", "string")]
    last = [r for r in recs if isinstance(r, PayloadRecord) and r.summary][0]
    assert last.summary["checksum"] == "ok" and last.summary["complete"] and last.summary["keys"] == 3
    assert rules_of(recs) == []
    head = next(r.head for r in recs if isinstance(r, PayloadRecord) and r.head is not None)
    # the end mark as it was sent (text), not the hex of its characters
    assert head == ({"form": "eof", "mark": "m" * 40} if diskless else {"form": "length", "payload_length": len(RDB)})


def test_a_mark_that_is_not_text_is_shown_in_hex(tmp_path):
    msgs = [(d, m.replace(b"m" * 40, bytes(range(128, 168)))) for d, m in conversation(diskless=True)]
    recs = records(capture(tmp_path, msgs))
    head = next(r.head for r in recs if isinstance(r, PayloadRecord) and r.head is not None)
    assert head == {"form": "eof", "mark_hex": bytes(range(128, 168)).hex()}


def test_continue_takes_the_offset_psync_asked_for(tmp_path):
    msgs = [("c2s", command("PSYNC", REPLID.decode(), "5001")), ("s2c", b"+CONTINUE " + REPLID + b"\r\n")]
    msgs += [("s2c", c) for c in STREAM] + [("c2s", command("REPLCONF", "ACK", str(ends(base=5000)[1])))]
    recs = records(capture(tmp_path, msgs))
    assert [r.repl_offset for r in recs if r.repl_offset is not None] == [5000] + ends(base=5000)[:-1]
    assert rules_of(recs) == []


# -- each rule, both ways --------------------------------------------------------------------

CASES = {
    # an ACK inside a command, or of bytes never sent; an ACK at a command's end is clean
    "repl-offset-mismatch": (dict(acks=[ends()[1] - 2]), dict(acks=[ends()[1]])),
    "repl-ack-regression": (dict(acks=[ends()[2], ends()[1]]), dict(acks=[ends()[1], ends()[2]])),
    "resp-protocol-error": (dict(stream=STREAM[:2] + [b"*2\r\n$x\r\n"] + STREAM[2:]), dict()),
    "resp-truncated": (dict(stream=STREAM[:2] + [command("SET", "cut", "short")[:-4]]), dict()),
    "rdb-checksum": (dict(payload=RDB[:-1] + bytes([RDB[-1] ^ 1])), dict()),
    "rdb-truncated": (dict(payload=RDB[:-12], stream=[]), dict(stream=[])),
    "rdb-duplicate-key": (dict(payload=rdb(("a", "1"), ("a", "2"))), dict(payload=rdb(("a", "1"), ("b", "2")))),
}


def test_every_replication_rule_is_in_the_book_and_tested():
    assert set(REDIS_RULES) <= set(CASES) and set(REDIS_RULES) <= set(ALL_RULES)
    assert all(r.scope == "replication" for r in REDIS_RULES.values())


@pytest.mark.parametrize("rule", sorted(CASES))
def test_each_rule_fires_and_stays_silent(tmp_path, rule):
    bad, good = CASES[rule]
    got = rules_of(records(capture(tmp_path, conversation(**bad), name="bad.pcap")))
    assert rule in got
    assert rules_of(records(capture(tmp_path, conversation(**good), name="good.pcap"))) == []


def test_an_ack_past_what_was_sent_is_a_mismatch(tmp_path):
    recs = records(capture(tmp_path, conversation(acks=[ends()[-1] + 14])))
    assert [f.rule for f in recs[-1].findings] == ["repl-offset-mismatch"]
    assert "had sent up to offset" in recs[-1].findings[0].message


def test_a_truncated_payload_still_gives_every_key_before_the_cut(tmp_path):
    big = rdb(*[(f"key{i}", "v" * 20) for i in range(50)])
    cut = big[:len(big) // 2]
    msgs = conversation(payload=big, stream=[])[:-1] + [("s2c", b"$%d\r\n" % len(big) + cut)]
    recs = records(capture(tmp_path, msgs))
    keys = [k.key for r in recs if isinstance(r, PayloadRecord) for k in r.keys]
    assert keys == [f"key{i}".encode() for i in range(len(keys))] and 15 < len(keys) < 50
    assert "rdb-truncated" in rules_of(recs)


# -- end to end ----------------------------------------------------------------------------

def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dcpinspect", *map(str, args)], capture_output=True, timeout=120)


def full_sync(tmp_path, port: int = 6379, acks=None, name: str = "sync.pcap"):
    stream = STREAM + [command("SET", "\x1b[31mred", "x"), command("DEL", "k")]
    return capture(tmp_path, conversation(acks=ends(stream)[-1:] if acks is None else acks, stream=stream,
                                          payload=RDB), port=port, name=name), stream


@pytest.mark.parametrize("port", [6379, 7000])
def test_decode_jsonl_of_a_full_sync(tmp_path, port):
    path, stream = full_sync(tmp_path, port)
    res = cli("decode", "-f", "jsonl", path)
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    frames = [r for r in rows if r["kind"] == "frame"]
    assert all(r["protocol"] == "resp" and r["flow"] == f"10.0.0.1:45000-10.0.0.2:{port}" for r in frames)
    commands = [(r["command"], r["repl_offset"]) for r in frames if r["direction"] == "s2c" and r.get("command")]
    assert commands == [([w.decode() for w in _words(c)], o) for c, o in zip(stream, [RESYNC_AT] + ends(stream))]
    keys = [r for r in rows if r["kind"] == "key"]
    assert [(k["protocol"], k["db"], k["key"], k["type"]) for k in keys] == [
        ("rdb", 0, "a", "string"), ("rdb", 0, "b", "string"), ("rdb", 0, "c", "string")]
    assert set(keys[0]) >= {"frame", "ts", "flow", "direction", "encoding", "elements", "size", "expire_ms",
                            "offset", "length", "findings"}
    assert [r["kind"] for r in rows].count("payload") == 1 and [r["kind"] for r in rows].count("summary") == 1
    ack = [r for r in frames if r["direction"] == "c2s"][-1]
    assert ack["command"][:2] == ["REPLCONF", "ACK"] and ack["ack_offset"] == ends(stream)[-1]


def _words(cmd: bytes) -> list[bytes]:
    parts = cmd.split(b"\r\n")
    return parts[2:-1:2]


def test_validate_and_stats_of_a_full_sync(tmp_path):
    path, stream = full_sync(tmp_path)
    res = cli("validate", path)
    assert res.returncode == 0 and b"0 errors" in res.stdout, res.stdout
    bad, _ = full_sync(tmp_path, acks=[ends(stream)[-1] - 1], name="bad.pcap")
    res = cli("validate", bad)
    assert res.returncode == 1 and b"repl-offset-mismatch" in res.stdout
    res = cli("stats", "-f", "json", path)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["capture"]["frames"] > len(stream)
    conn = report["connections"]["10.0.0.1:45000-10.0.0.2:6379"]
    assert conn["opcodes"]["SET"] == 2 and conn["opcodes"]["RDB payload"] == 2
    assert conn["opcodes"]["+FULLRESYNC (response)"] == 1 and conn["findings"] == 0


def test_the_table_view_escapes_the_wire(tmp_path):
    path, _ = full_sync(tmp_path)
    res = cli("decode", path)
    assert res.returncode == 0
    out = res.stdout.decode()
    assert "\x1b[31m" not in out and "\\x1b[31mred" in out
    assert "RDB payload (3 keys)" in out and "checksum ok" in out


# -- detection and the engine's paths ---------------------------------------------------------

@pytest.mark.parametrize("chunks,verdict", [
    ([("c2s", command("REPLCONF", "listening-port", "6380"))], True),
    ([("c2s", command("PSYNC", "?", "-1"))], True), ([("c2s", b"SYNC\r\n")], True),
    ([("s2c", b"+FULLRESYNC " + REPLID + b" 0\r\n")], True),
    ([("c2s", command("PING")), ("s2c", b"+PONG\r\n")], True),  # a command answered
    ([("c2s", command("PING"))], None),  # a command alone: not yet
    ([("c2s", command("GET", "k")), ("s2c", b"?garbage\r\n")], False),  # answered by no reply
    ([("c2s", command("FROBNICATE", "k")), ("s2c", b"+OK\r\n")], False),  # no Redis command
    ([("c2s", b"GET k\r\n"), ("s2c", b"$1\r\nv\r\n")], False),  # inline: POP3 and SMTP send such lines
    ([("s2c", b"+OK POP3 server ready\r\n"), ("c2s", b"AUTH\r\n")], False),  # the server spoke first
    ([("c2s", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")], False), ([("c2s", b"\x80\x01\x00\x00")], False),
])
def test_the_sniffer_takes_a_connection_on_evidence_alone(chunks, verdict):
    from dcpinspect.families.redis.replication.sniff import WAIT, Sniffer

    sn = Sniffer(False)
    got = None
    for direction, data in chunks:
        for b in data:  # a byte at a time: undecided until it can tell
            got = sn.add(direction, bytes([b]))
            if got is not None:
                break
        if got is not None:
            break
    assert got is verdict
    # joined midway: two whole commands in a row, the first after a line's end, taken once
    # the other direction has spoken (it tells which side is the client's) or WAIT bytes came
    midway = Sniffer(True)
    assert midway.add("s2c", b"some value tail\r\n" + command("SET", "k", "v") + command("PING")) is None
    assert midway.add("c2s", b"+OK\r\n") is True
    alone = b"some value tail\r\n" + command("SET", "k", "v" * WAIT) + command("PING")
    assert Sniffer(True).add("s2c", alone) is True
    assert Sniffer(True).add("s2c", b"some value tail\r\n" + command("SET", "k", "v")) is None


def test_the_reader_that_follows_connections_in_c_gives_the_same_items(tmp_path):
    """A big diskless payload and commands, read with and without the C reader that appends
    a followed direction's bytes to the framer's buffer itself."""
    big = rdb(*[(f"key:{i}", "v" * 40) for i in range(6000)])
    path = capture(tmp_path, conversation(payload=big, diskless=True, acks=[ends()[-1]]))
    def seen(items):
        return [(i.ts, i.direction, i.number, i.msg.json_rows()) if isinstance(i, Captured) else i for i in items]

    followed = list(decode_records(read_records(path)))
    plain = list(decode_records(read_records(path), follow=False))
    assert seen(followed) == seen(plain) and len(plain) > 20
    keys = [k for i in plain if isinstance(i, Captured) and isinstance(i.msg, PayloadRecord) for k in i.msg.keys]
    assert len(keys) == 6000 and rules_of(i.msg for i in plain if isinstance(i, Captured)) == []
