"""Redis client connections decoded whole, from captures built byte by byte: every reply
paired with the command it answers (pipelined, in transactions, SUBSCRIBE's several
answers, RESP3 pushes, published messages and MONITOR lines that answer nothing, the
master's stream that is no reply), a connection joined mid-way resynchronised on reply
starts (a nested reply entered at its start stays one reply), inline commands split as
Redis splits them, and what a server must never send reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import servers
from corpus import corpus
from dcpinspect.engines.records import decode_records
from dcpinspect.families.redis.replication.frames import RespRecord
from dcpinspect.sessions.captured import Captured
from dcpinspect.sources.capture import read_records
from dcpinspect.transport import synth

from test_redis_resp import bulk, command


def capture(tmp_path, msgs, name: str = "client.pcap", **kw):
    path = tmp_path / name
    synth.write_pcap(path, synth.tcp_conversation(msgs, client=("10.0.0.1", 45000), server=("10.0.0.2", 6379), **kw))
    return path


def decoded(path) -> list[Captured]:
    return [i for i in decode_records(read_records(path)) if isinstance(i, Captured) and isinstance(i.msg, RespRecord)]


def xrange_reply() -> bytes:
    entry = lambda i, v: b"*2\r\n" + bulk(f"1526985054069-{i}") + command("temperature", v)  # noqa: E731
    return b"*2\r\n" + entry(0, "36") + entry(1, "37")


def test_pipelined_commands_and_a_transaction_are_answered_in_order(tmp_path):
    msgs = [("c2s", command("SET", "a", "1") + command("GET", "a") + command("LRANGE", "l", "0", "-1")),
            ("s2c", b"+OK\r\n$1\r\n1\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n"),
            ("c2s", command("MULTI")), ("s2c", b"+OK\r\n"),
            ("c2s", command("INCR", "n")), ("s2c", b"+QUEUED\r\n"),
            ("c2s", command("EXEC")), ("s2c", b"*1\r\n:1\r\n")]
    items = decoded(capture(tmp_path, msgs))
    commands = [i for i in items if i.direction == "c2s"]
    replies = [i for i in items if i.direction == "s2c"]
    assert [c.msg.role for c in commands] == ["command"] * 6
    assert [r.msg.role for r in replies] == ["reply"] * 6
    assert [r.msg.answers for r in replies] == ["SET", "GET", "LRANGE", "MULTI", "INCR", "EXEC"]
    assert [r.msg.reply_to for r in replies] == [commands[i].number for i in (0, 1, 2, 3, 4, 5)]
    assert all(r.msg.latency_ms > 0 for r in replies)
    lrange = replies[2].msg
    assert lrange.command is None and not lrange.is_request and lrange.name == "array"
    assert lrange.title().startswith("RESP reply array of 2 ")
    assert replies[0].msg.title().startswith("RESP reply +OK ")
    assert replies[1].msg.title().startswith("RESP reply $1 ")
    row = lrange.json_rows()[0]
    assert row["value"] == ["x", "y"] and "command" not in row
    assert row["reply_to"] == commands[2].number and row["latency_ms"] == lrange.latency_ms


def test_a_connection_joined_midway_keeps_a_nested_reply_whole(tmp_path):
    # the capture starts in the tail of a reply to a command before it, in the segment that
    # carries the XRANGE reply: the resynchronisation lands on the outer *2, not the first entry
    msgs = [("c2s", command("XRANGE", "s", "-", "+")), ("s2c", b"ello\r\n" + xrange_reply()),
            ("c2s", command("SET", "k", "v")), ("s2c", b"+OK\r\n")]
    items = decoded(capture(tmp_path, msgs, handshake=False))
    replies = [i.msg for i in items if i.direction == "s2c"]
    assert [r.title().split("  ")[0] for r in replies] == ["RESP reply array of 2", "RESP reply +OK"]
    assert replies[0].value[1][1][1][0] == ("$", b"1526985054069-1")
    assert [r.answers for r in replies] == ["XRANGE", "SET"]
    assert all(r.latency_ms > 0 for r in replies)


def test_replies_to_commands_before_the_capture_answer_none(tmp_path):
    msgs = [("s2c", b"+OK\r\n:5\r\n"), ("c2s", command("GET", "k")), ("s2c", b"$-1\r\n")]
    replies = [i.msg for i in decoded(capture(tmp_path, msgs, handshake=False)) if i.direction == "s2c"]
    assert [(r.reply_to is None, r.answers) for r in replies] == [(True, None), (True, None), (False, "GET")]


@pytest.mark.parametrize("line,words", [
    (b'SET key "my value"', [b"SET", b"key", b"my value"]),
    (b"SET k 'it\\'s'", [b"SET", b"k", b"it's"]),
    (b'SET k "\\x41\\x4a\\n\\t\\q"', [b"SET", b"k", b"AJ\n\tq"]),
    (b"  GET   k  ", [b"GET", b"k"]),
    (b'SET k ""', [b"SET", b"k", b""]),
])
def test_inline_commands_are_split_as_redis_splits_them(tmp_path, line, words):
    items = decoded(capture(tmp_path, [("c2s", line + b"\r\n"), ("s2c", b"+OK\r\n")]))
    assert items[0].msg.command == words and not items[0].msg.findings
    assert items[1].msg.answers == words[0].decode()


@pytest.mark.parametrize("line", [b'SET k "unterminated', b'SET k "a"b', b"SET k 'x"])
def test_unbalanced_quotes_are_a_protocol_error(tmp_path, line):
    msgs = [("c2s", line + b"\r\n"), ("s2c", b"-ERR Protocol error: unbalanced quotes in request\r\n")]
    items = decoded(capture(tmp_path, msgs))
    found = [f for i in items for f in i.msg.findings]
    assert [f.rule for f in found] == ["resp-protocol-error"] and "unbalanced quotes" in found[0].message


def test_a_server_line_that_is_no_resp_is_a_finding_never_a_command(tmp_path):
    msgs = [("c2s", command("PING")), ("s2c", b"hello from something else\r\n")]
    items = decoded(capture(tmp_path, msgs))
    bad = items[1].msg
    assert bad.command is None and not bad.is_request and bad.type == "invalid"
    assert [f.rule for f in bad.findings] == ["resp-protocol-error"]


def test_a_reply_cut_by_the_capture_s_end_is_truncated_with_its_bytes(tmp_path):
    reply = b"$100\r\n" + b"x" * 100 + b"\r\n"
    msgs = [("c2s", command("GET", "big")), ("s2c", reply[:60])]
    items = decoded(capture(tmp_path, msgs, close=None))
    cut = items[-1].msg
    assert cut.truncated and cut.size == 60
    assert [f.rule for f in cut.findings] == ["resp-truncated"]
    assert "60 bytes into a reply" in cut.findings[0].message


def test_subscribe_is_answered_once_a_channel_and_messages_answer_nothing(tmp_path):
    confirm = lambda kind, ch, n: b"*3\r\n" + bulk(kind) + bulk(ch) + b":%d\r\n" % n  # noqa: E731
    msgs = [("c2s", command("SUBSCRIBE", "a", "b")), ("s2c", confirm("subscribe", "a", 1)),
            ("s2c", confirm("subscribe", "b", 2)),
            ("s2c", b"*3\r\n" + bulk("message") + bulk("a") + bulk("hello")),
            ("s2c", b"*4\r\n" + bulk("pmessage") + bulk("a*") + bulk("ab") + bulk("hi")),
            ("c2s", command("PING")), ("s2c", b"*2\r\n" + bulk("pong") + bulk("")),
            ("c2s", command("UNSUBSCRIBE")), ("s2c", confirm("unsubscribe", "a", 1)),
            ("s2c", confirm("unsubscribe", "b", 0)), ("c2s", command("GET", "k")), ("s2c", b"$-1\r\n")]
    replies = [i.msg for i in decoded(capture(tmp_path, msgs)) if i.direction == "s2c"]
    assert [(r.role, r.answers) for r in replies] == [
        ("reply", "SUBSCRIBE"), ("reply", "SUBSCRIBE"), ("message", None), ("message", None), ("reply", "PING"),
        ("reply", "UNSUBSCRIBE"), ("reply", "UNSUBSCRIBE"), ("reply", "GET")]


def test_a_subscriber_joined_midway_gets_messages_not_replies(tmp_path):
    msgs = [("s2c", b"*3\r\n" + bulk("message") + bulk("news") + bulk("x")),
            ("s2c", b"*3\r\n" + bulk("message") + bulk("news") + bulk("y"))]
    replies = [i.msg for i in decoded(capture(tmp_path, msgs, handshake=False))]
    assert [r.role for r in replies] == ["message", "message"]


def test_resp3_pushes_and_monitor_lines_answer_nothing(tmp_path):
    msgs = [("c2s", command("HELLO", "3")), ("s2c", b"%1\r\n+server\r\n+redis\r\n"),
            ("c2s", command("GET", "k")),
            ("s2c", b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n"), ("s2c", b"_\r\n"),
            ("c2s", command("MONITOR")), ("s2c", b"+OK\r\n"),
            ("s2c", b'+1700000000.123456 [0 127.0.0.1:50000] "set" "k" "v"\r\n'),
            ("s2c", b'+1700000000.223456 [0 lua] "get" "k"\r\n')]
    replies = [i.msg for i in decoded(capture(tmp_path, msgs)) if i.direction == "s2c"]
    assert [(r.role, r.answers) for r in replies] == [
        ("reply", "HELLO"), ("push", None), ("reply", "GET"), ("reply", "MONITOR"), ("monitor", None),
        ("monitor", None)]
    assert replies[0].title().startswith("RESP reply map of 1 ")
    assert replies[2].title().startswith("RESP reply null ")


def test_a_replication_link_joined_midway_streams_commands_not_replies(tmp_path):
    msgs = [("c2s", command("REPLCONF", "ACK", "100")), ("s2c", command("SET", "k", "v")),
            ("s2c", command("PING")), ("c2s", command("REPLCONF", "ACK", "140"))]
    items = decoded(capture(tmp_path, msgs, handshake=False))
    assert [(i.direction, i.msg.role, i.msg.name) for i in items] == [
        ("c2s", "command", "REPLCONF"), ("s2c", "command", "SET"), ("s2c", "command", "PING"),
        ("c2s", "command", "REPLCONF")]


def test_jsonl_names_the_command_each_reply_answers(tmp_path):
    msgs = [("c2s", command("GET", "a")), ("s2c", b"$3\r\nabc\r\n")]
    res = servers.dcpinspect("decode", "-f", "jsonl", str(capture(tmp_path, msgs)))
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    frames = [r for r in rows if r["kind"] == "frame"]
    assert frames[1]["role"] == "reply" and frames[1]["reply_to"] == frames[0]["frame"]
    assert frames[1]["latency_ms"] > 0 and frames[1]["value"] == "abc"


def test_on_a_port_found_by_sniffing_the_replies_held_meanwhile_are_decoded_in_order(tmp_path):
    # port 7000 is no Redis port: a connection joined mid-way is taken once a command array
    # follows a line's end; the reply the server sent before that is held, then decoded in
    # the order it came, after the command it answers, at its own time
    msgs = [("c2s", command("SET", "a", "1")), ("s2c", b"+OK\r\n"), ("c2s", command("GET", "a")),
            ("c2s", command("GET", "b")), ("s2c", b"$1\r\n1\r\n$-1\r\n")]
    path = tmp_path / "sniffed.pcap"
    synth.write_pcap(path, synth.tcp_conversation(msgs, client=("10.0.0.1", 45000), server=("10.0.0.2", 7000),
                                                  handshake=False))
    items = decoded(path)
    assert [(i.direction, i.msg.role, i.msg.answers) for i in items] == [
        ("c2s", "command", None), ("s2c", "reply", "SET"), ("c2s", "command", None), ("c2s", "command", None),
        ("s2c", "reply", "GET"), ("s2c", "reply", "GET")]
    assert [i.number for i in items] == sorted(i.number for i in items)
    assert all(i.msg.latency_ms > 0 for i in items if i.direction == "s2c")


NDPI = corpus("resp-ndpi") / "resp.pcap"


def _from_record(tmp_path, first: int) -> Path:
    """The nDPI capture as if tcpdump had started at its record ``first`` (0-based)."""
    records = list(read_records(NDPI))
    path = tmp_path / f"from-{first}.pcap"
    synth.write_pcap(path, [(r.ts, r.data) for r in records[first:]])
    return path


@pytest.mark.parametrize("first", [0, 3], ids=["whole", "after-the-handshake"])
def test_a_public_redis_cli_capture_is_decoded_whole(tmp_path, first):
    items = decoded(NDPI if first == 0 else _from_record(tmp_path, first))
    shown = [(i.number + first, i.direction, i.msg.role, i.msg.answers) for i in items]
    assert shown == [(4, "c2s", "command", None), (24, "s2c", "reply", "COMMAND"), (26, "c2s", "command", None),
                     (27, "s2c", "reply", "PING"), (31, "c2s", "command", None), (32, "s2c", "reply", "SET"),
                     (34, "c2s", "command", None), (35, "s2c", "reply", "GET")]
    command_reply = items[1].msg
    assert command_reply.size == 90181 and command_reply.title().startswith("RESP reply array of ")
    assert [i.msg.reply_to + first for i in items[1::2]] == [4, 26, 31, 34]
    assert items[4].msg.command == [b"set", b"test", b"Hello world!"]
    assert not [f for i in items for f in i.msg.findings]


def test_a_public_capture_entered_inside_a_big_nested_reply_pairs_what_follows(tmp_path):
    # the capture starts at record 11, inside COMMAND's 90 KB reply: what is left of it
    # answers a command the capture did not show; the commands after it are answered
    items = decoded(_from_record(tmp_path, 11))
    before = [i for i in items if i.number < 26 - 11]
    after = [(i.direction, i.msg.role, i.msg.answers) for i in items if i.number >= 26 - 11]
    assert before and all(i.direction == "s2c" and i.msg.reply_to is None for i in before)
    assert after == [("c2s", "command", None), ("s2c", "reply", "PING"), ("c2s", "command", None),
                     ("s2c", "reply", "SET"), ("c2s", "command", None), ("s2c", "reply", "GET")]
    assert not [f for i in items for f in i.msg.findings]


def test_redis_stats_of_parts_decoded_apart_merge_to_the_whole(tmp_path):
    """The collector's Redis part pickles and merges: connections counted by two collectors
    (worker processes, Spark tasks) give the report one collector gives."""
    import pickle

    from dcpinspect.engines.records import keyed_items
    from dcpinspect.families import VALUES
    from dcpinspect.families import stats_collector
    from dcpinspect.sessions.stats import StatsCollector

    import test_redis_replication as repl

    client = [("c2s", command("GET", "a")), ("s2c", b"$1\r\n1\r\n"), ("c2s", command("INCR", "n")), ("s2c", b":1\r\n")]
    path = tmp_path / "two.pcap"
    frames = synth.tcp_conversation(client, client=("10.0.0.3", 40000), server=("10.0.0.2", 6379))
    frames += synth.tcp_conversation(repl.conversation(acks=[repl.ends()[-1]]), client=("10.0.0.1", 45000),
                                     server=("10.0.0.2", 6379))
    synth.write_pcap(path, frames)
    whole, parts = stats_collector(), [stats_collector(), stats_collector()]
    for key, item in keyed_items(read_records(path), detail=VALUES):
        whole.add(item, key)
        parts[getattr(item, "flow", ("", 0))[1] == 40000].add(item, key)
    merged = pickle.loads(pickle.dumps(parts[0])).merge(pickle.loads(pickle.dumps(parts[1])))
    report = whole.report()["redis"]
    assert merged.report()["redis"] == report
    assert set(report["commands"]) == {"GET", "INCR", "PING", "REPLCONF", "PSYNC"}
    (link,) = report["replication"].values()
    assert link["resync"] == "FULLRESYNC" and link["phases"]["transfer"]["keys"] == 3 and link["lag"] == 0


def test_a_master_stream_joined_before_the_replica_s_first_ack_is_commands(tmp_path):
    # the master's stream shows itself by what only it sends unasked (SELECT, PING, ...)
    msgs = [("s2c", command("SELECT", "0")), ("s2c", command("SET", "k", "v")), ("s2c", command("PING")),
            ("c2s", command("REPLCONF", "ACK", "100"))]
    items = decoded(capture(tmp_path, msgs, handshake=False))
    assert [(i.direction, i.msg.role, i.msg.name) for i in items] == [
        ("s2c", "command", "SELECT"), ("s2c", "command", "SET"), ("s2c", "command", "PING"),
        ("c2s", "command", "REPLCONF")]


class _Peer:
    """What a framer that knows its direction reaches of its connection: the pairing."""

    def __init__(self, waiting: int) -> None:
        from dcpinspect.families.redis.replication.pairing import Pairing

        self.pairing = Pairing()
        for _ in range(waiting):
            self.pairing.command([b"GET", b"k"], "GET", 1, 0.0)


def _resync_work(monkeypatch, direction: str, data: bytes, waiting: int = 0) -> tuple[int, list]:
    """The RESP values and inline lines a direction joined mid-way reads to resynchronise
    over ``data`` fed in 7-byte segments (each carried by capture record 5), and its frames."""
    from dcpinspect.families.redis.replication import resync
    from dcpinspect.families.redis.replication.resp import RespFramer

    calls = [0]
    probe, inline = resync.probe, resync.inline

    def counted(real):
        def call(*args):
            calls[0] += 1
            return real(*args)
        return call

    monkeypatch.setattr(resync, "probe", counted(probe))
    monkeypatch.setattr(resync, "inline", counted(inline))
    framer = RespFramer(synced=False)
    peer = _Peer(waiting)
    framer.follows(direction, lambda: peer)
    out = []
    for i in range(0, len(data), 7):
        framer.carried(len(data[i:i + 7]), 5)
        out += framer.feed(data[i:i + 7])
    return calls[0], out + framer.close()


@pytest.mark.parametrize("direction,unit,waiting,tail", [
    ("c2s", b'GET "open\r\n', 0, b"GET k\r\nGET k\r\n"),  # inline lines with unbalanced quotes
    ("c2s", b"NOTACOMMAND k\r\n", 0, b"GET k\r\nGET k\r\n"),
    ("s2c", b":1\r\n", 4, b"$1\r\nv\r\n"),  # integers whole, that pair with no GET waiting
])
def test_resynchronising_with_the_other_direction_is_linear(monkeypatch, direction, unit, waiting, tail):
    n = 400
    small, out = _resync_work(monkeypatch, direction, b"x\r\n" + unit * n + tail, waiting)
    large, out8 = _resync_work(monkeypatch, direction, b"x\r\n" + unit * (8 * n) + tail, waiting)
    assert large <= 10 * small
    from dcpinspect.framing.framer import RawFrame

    frames = [f for f in out8 if isinstance(f, RawFrame)]
    assert frames and bytes(frames[0].data) == tail[:len(frames[0].data)]
