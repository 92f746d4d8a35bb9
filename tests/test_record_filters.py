"""The record filters of ``decode`` through the CLI, on a capture holding a DCP stream and
a Redis full sync side by side: each family applies the criteria it knows (``--opcode``
and ``--vbucket`` MCBP's, ``--command`` Redis's), a family that knows none of those given
has its records dropped, ``--flow`` applies to every record, and worker processes filter
alike. What each record is, is read from the bytes the capture was built from."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import rdbgen
import servers
from dcpinspect.transport import synth

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "samples"))
from make_samples import dcp_session  # noqa: E402

DCP_FLOW = "10.0.0.1:50000-10.0.0.2:11210"
REDIS_FLOW = "10.0.0.5:45000-10.0.0.6:6379"
CLIENT_OPCODES = (0x1F, 0x50, 0x53, 0x5D, 0x5E)
REQUEST_MAGICS = (0x80, 0x08)


def resp(*words: str) -> bytes:
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w.encode()), w.encode()) for w in words)


PAYLOAD = rdbgen.rdb(b"\xfe\x00" + rdbgen.key(0, "a", rdbgen.string("1")) + rdbgen.key(0, "b", rdbgen.string("2")))
STREAM = [resp("SELECT", "0"), resp("SET", "k", "v"), resp("set", "k2", "v2"), resp("DEL", "a")]


def redis_messages() -> list[tuple[str, bytes]]:
    return [("c2s", resp("PING")), ("s2c", b"+PONG\r\n"), ("c2s", resp("REPLCONF", "capa", "eof")),
            ("s2c", b"+OK\r\n"), ("c2s", resp("PSYNC", "?", "-1")),
            ("s2c", b"+FULLRESYNC " + b"ab" * 20 + b" 100\r\n"), ("s2c", b"$%d\r\n" % len(PAYLOAD) + PAYLOAD),
            *[("s2c", c) for c in STREAM]]


def dcp_messages() -> list[tuple[str, bytes]]:
    out = []
    for f in dcp_session(vb=5, opaque=0x1000):
        from_client = (f[1] in CLIENT_OPCODES) == (f[0] in REQUEST_MAGICS)
        out.append(("c2s" if from_client else "s2c", f))
    return out


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Path:
    dcp = synth.tcp_conversation(dcp_messages(), client=("10.0.0.1", 50000), server=("10.0.0.2", 11210))
    redis = synth.tcp_conversation(redis_messages(), client=("10.0.0.5", 45000), server=("10.0.0.6", 6379))
    path = tmp_path_factory.mktemp("filters") / "mixed.pcap"
    n = max(len(dcp), len(redis))
    synth.write_pcap(path, [f for i in range(n) for f in (dcp[i:i + 1] + redis[i:i + 1])])
    return path


def rows(path: Path, *args: str) -> list[dict]:
    res = servers.dcpinspect("decode", "-f", "jsonl", path, *args)
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()]


def mutations() -> list[tuple[int, int]]:
    """(vbucket, opcode) of each DCP_MUTATION of the session, from its bytes."""
    return [(int.from_bytes(f[6:8], "big"), f[1]) for _, f in dcp_messages() if f[0] in REQUEST_MAGICS and f[1] == 0x57]


def test_without_filters_both_families_are_there(mixed):
    everything = rows(mixed)
    assert {r["flow"] for r in everything} == {DCP_FLOW, REDIS_FLOW}


def test_opcode_keeps_mcbp_frames_and_drops_redis_records(mixed):
    kept = rows(mixed, "--opcode", "mutation")
    assert [(r["vbucket"], r["opcode"]) for r in kept] == mutations() and len(kept) > 0
    assert all(r["flow"] == DCP_FLOW and r["protocol"] == "dcp" for r in kept)
    assert {r["flow"] for r in rows(mixed, "--vbucket", "5")} == {DCP_FLOW}


@pytest.mark.parametrize("name", ["SET", "set", "Set"])
def test_command_keeps_resp_commands_of_that_name_and_drops_mcbp_frames(mixed, name):
    kept = rows(mixed, "--command", name)
    assert [r["command"] for r in kept] == [["SET", "k", "v"], ["set", "k2", "v2"]]
    assert all(r["flow"] == REDIS_FLOW and r["protocol"] == "resp" for r in kept)
    sent = [c for c in STREAM if c.split(b"\r\n")[2].upper() == b"SET"]
    assert [r["length"] for r in kept] == [len(c) for c in sent]


def test_command_names_replies_and_the_payload(mixed):
    assert [r["type"] for r in rows(mixed, "--command", "+fullresync")] == ["simple"]
    payload = rows(mixed, "--command", "RDB payload")
    assert [r["key"] for r in payload if r["kind"] == "key"] == ["a", "b"]
    assert {r["kind"] for r in payload} >= {"payload", "key", "summary"}
    several = rows(mixed, "--command", "DEL", "--command", "SELECT")
    assert [r["command"][0] for r in several] == ["SELECT", "DEL"]


def test_command_keeps_the_replies_that_answer_it(mixed):
    # the replica's handshake: each command and the reply the master sent it
    kept = [(r.get("command") or [r["type"], r["value"]])[:2] for r in rows(mixed, "--command", "psync",
                                                                           "--command", "Ping")]
    assert kept == [["PING"], ["simple", "PONG"], ["PSYNC", "?"], ["simple", "FULLRESYNC " + "ab" * 20 + " 100"]]
    replconf = rows(mixed, "--command", "REPLCONF")
    assert [r["role"] for r in replconf] == ["command", "reply"] and replconf[1]["reply_to"] == replconf[0]["frame"]


def test_each_family_applies_the_criteria_it_knows(mixed):
    both = rows(mixed, "--opcode", "mutation", "--command", "SET")
    assert [r["opcode"] for r in both if r["protocol"] == "dcp"] == [op for _, op in mutations()]
    assert [r["command"][1] for r in both if r["protocol"] == "resp"] == ["k", "k2"]
    # --flow is every family's: with it, the other connection's records go
    assert {r["flow"] for r in rows(mixed, "--opcode", "mutation", "--command", "SET", "--flow", "6379")} == {REDIS_FLOW}


def test_the_table_view_filters_alike(mixed):
    res = servers.dcpinspect("decode", mixed, "--command", "SET")
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("RESP SET command") == 2 and "DCP_" not in res.stdout and "set k2 v2" in res.stdout


def test_worker_processes_filter_alike(mixed):
    one = servers.dcpinspect("decode", "-f", "jsonl", "-j", "1", mixed, "--command", "SET", "--opcode", "mutation")
    two = servers.dcpinspect("decode", "-f", "jsonl", "-j", "2", mixed, "--command", "SET", "--opcode", "mutation")
    assert one.returncode == two.returncode == 0 and one.stdout == two.stdout and one.stdout


@pytest.mark.parametrize("args, message", [(("--command", " "), "--command needs a name"),
                                           (("--opcode", "no-such-opcode"), "unknown opcode")])
def test_a_value_no_family_takes_is_unusable(mixed, args, message):
    res = servers.dcpinspect("decode", mixed, *args)
    assert res.returncode == 2 and message in res.stderr
