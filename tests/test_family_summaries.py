"""What ``decode --format summary`` and ``stats`` say of Redis connections, alone and beside
a DCP stream: a Redis connection's records are judged whatever the decoding context, so
its findings are counted (no "not judged" for it), its frames are counted by the names
its records give (not as opcodes), and DCP's streams, items and vbuckets are not shown
for it. Captures built from bytes with synth."""

from __future__ import annotations

import json
import re

import servers
from dcpinspect.transport import synth
from test_record_filters import DCP_FLOW, REDIS_FLOW, STREAM, dcp_messages, redis_messages, resp


def capture(path, *conversations):
    parts = [synth.tcp_conversation(msgs, client=client, server=server) for msgs, client, server in conversations]
    n = max(map(len, parts))
    synth.write_pcap(path, [f for i in range(n) for part in parts for f in part[i:i + 1]])
    return path


DCP = (dcp_messages(), ("10.0.0.1", 50000), ("10.0.0.2", 11210))
REDIS = (redis_messages(), ("10.0.0.5", 45000), ("10.0.0.6", 6379))
#: the replica acknowledges one byte short of the stream the master sent: repl-offset-mismatch
BAD_ACK = (redis_messages() + [("c2s", resp("REPLCONF", "ACK", str(100 + sum(map(len, STREAM)) - 1)))],
           ("10.0.0.5", 45000), ("10.0.0.6", 6379))


def run(*args) -> str:
    res = servers.dcpinspect(*args)
    assert res.returncode == 0, res.stderr
    return res.stdout


def connection_rows(text: str) -> dict[str, list[str]]:
    return {cells[0]: cells[1:] for line in text.splitlines()
            if (cells := line.split()) and re.match(r"^\S+:\d+-\S+:\d+$", cells[0])}


def counted(text: str, title: str) -> dict[str, int]:
    """The rows of the summary's table called ``title``: name → frames."""
    block = text.split(title, 1)[1].split("\n\n", 1)[0]
    return {m.group(1).strip(): int(m.group(2)) for m in re.finditer(r"^ (\S.*?)\s+(\d+)\s*$", block, re.M)}


def resp_names() -> dict[str, int]:
    """How many RESP frames of each name the Redis conversation holds, from its bytes."""
    names: dict[str, int] = {}
    for _, data in redis_messages():
        if data.startswith(b"*"):
            name = data.split(b"\r\n")[2].decode().upper()
        elif data.startswith(b"+"):
            name = data.split(b"\r\n")[0].split(b" ")[0].decode()
        else:
            continue  # the payload
        names[name] = names.get(name, 0) + 1
    return names


def test_a_redis_summary_counts_findings_and_frames_by_name(tmp_path):
    text = run("decode", "-f", "summary", capture(tmp_path / "bad.pcap", BAD_ACK))
    (cells,) = connection_rows(text).values()
    assert len(cells) == 8 and (cells[6], cells[7]) == ("1", "0")  # the error, without --strict
    assert "not judged" not in text and "Opcodes" not in text
    names = counted(text, "Frames by name")
    assert {k: v for k, v in names.items() if k != "RDB payload"} == {**resp_names(), "REPLCONF": 2}
    assert names["RDB payload"] >= 1
    assert re.search(r"repl-offset-mismatch\s+1", text)


def test_beside_mcbp_only_the_mcbp_connection_is_not_judged(tmp_path):
    text = run("decode", "-f", "summary", capture(tmp_path / "mixed.pcap", DCP, REDIS))
    rows = connection_rows(text)
    assert rows[DCP_FLOW][6:] == ["-", "-"] and rows[REDIS_FLOW][6:] == ["0", "0"]
    assert "the frames of 1 of the 2 connections ('-') counted by their headers, not judged" in text
    assert counted(text, "Opcodes")["DCP_MUTATION"] == 2 and counted(text, "Frames by name")["SET"] == 2
    strict = run("decode", "-f", "summary", "--strict", capture(tmp_path / "mixed.pcap", DCP, REDIS))
    assert "not judged" not in strict and all(len(c) == 8 and "-" not in c[6:] for c in connection_rows(strict).values())


def test_stats_show_no_dcp_columns_or_tables_for_redis(tmp_path):
    path = capture(tmp_path / "redis.pcap", REDIS)
    text = run("stats", path, "--no-chart")
    (cells,) = connection_rows(text).values()
    assert cells[-5:-2] == ["-", "-", "-"]  # streams, items, items/s
    assert "Vbuckets" not in text and "Streams" not in text
    frames = sum(1 for _ in redis_messages()) - 1  # every message a frame, the payload's aside
    assert re.search(r"^(\d+) frames in 1 connection over", text, re.M)
    report = json.loads(run("stats", "-f", "json", path))
    conn = report["connections"][REDIS_FLOW]
    assert conn["protocols"]["resp"] == frames and conn["protocols"]["rdb"] >= 1
    assert sum(conn["protocols"].values()) == conn["frames"]["total"]
    mixed = run("stats", capture(tmp_path / "mixed.pcap", DCP, REDIS), "--no-chart")
    rows = connection_rows(mixed)
    assert rows[REDIS_FLOW][-5:-2] == ["-", "-", "-"] and rows[DCP_FLOW][-5:-2] != ["-", "-", "-"]
    assert "Vbuckets" in mixed and "Streams" in mixed and re.search(r"items in 1 stream, 1 vbucket", mixed)
    report = json.loads(run("stats", "-f", "json", capture(tmp_path / "mixed.pcap", DCP, REDIS)))
    assert report["connections"][DCP_FLOW]["protocols"] == {"mcbp": len(dcp_messages())}


def test_the_mcbp_only_summary_is_as_it_was(tmp_path):
    text = run("decode", "-f", "summary", capture(tmp_path / "dcp.pcap", DCP))
    (cells,) = connection_rows(text).values()
    assert len(cells) == 6 and "Frames by name" not in text and "Opcodes" in text
    assert text.rstrip().endswith("checks them against the rules") and "the frames of" not in text
