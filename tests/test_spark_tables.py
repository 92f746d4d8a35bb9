"""``analyze``'s family tables: the RESP commands and the RDB keys of a Redis replication
capture (a full sync written with synth: handshake, payload, then the command stream), and
RDB files given as inputs (from the librdb corpus, one of them with a bad checksum), next
to an MCBP capture. Each row is the object ``decode -f jsonl`` or ``rdb -f jsonl`` prints,
and the columns are that object's members, as the families declare them.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import servers
from test_redis_replication import RDB, STREAM, capture, conversation, rdb
from corpus import corpus

pytestmark = pytest.mark.spark
pytest.importorskip("pyspark")
pq = pytest.importorskip("pyarrow.parquet")

CORPUS = corpus("rdb-librdb")
SAMPLES = Path(__file__).resolve().parent.parent / "samples"
RDB_FILES = ["hash_zl_v6.rdb", "invalid_chksum_v8.rdb"]


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run(servers.dcpinspect_argv() + [*map(str, args)], capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def rows(out: Path, name: str) -> list[dict]:
    return sorted(pq.read_table(out / name).to_pylist(), key=lambda r: (r["file_index"], r["key"], r["seq"]))


@pytest.fixture(scope="module")
def analysed(spark, tmp_path_factory):
    from dcpinspect.engines.spark.job import run_analysis

    root = tmp_path_factory.mktemp("spark-redis")
    payload = rdb(("user:1", "ada"), ("user:2", "bob"), ("user:3", "cy"))
    repl = capture(root, conversation(payload, acks=[1000 + sum(map(len, STREAM))]))
    inputs = [str(repl), *(str(CORPUS / n) for n in RDB_FILES), str(SAMPLES / "dcp-session.pcap")]
    out = root / "tables"
    result = run_analysis(spark, inputs, str(out))
    return inputs, out, result


def test_commands_are_the_resp_frames_decode_prints(analysed):
    inputs, out, result = analysed
    assert "commands" in result.tables and "keys" in result.tables
    got = rows(out, "commands")
    res = cli("decode", inputs[0], "-f", "jsonl")
    want = [(line, json.loads(line)) for line in res.stdout.splitlines()]
    want = [(line, rec) for line, rec in want if rec["kind"] == "frame" and rec["protocol"] in ("resp", "journal")]
    assert [r["json"] for r in got] == [line for line, _ in want]
    verbs = [r["command_name"] for r in got if r["command_name"]]
    assert verbs[:4] == ["PING", "REPLCONF", "REPLCONF", "PSYNC"] and "SET" in verbs and "DEL" in verbs
    for row, (_, rec) in zip(got, want):
        assert (row["type"], row["command"], row["repl_offset"], row["frame"], row["flow"], row["length"]) == (
            rec["type"], rec.get("command"), rec.get("repl_offset"), rec["frame"], rec["flow"], rec["length"])
    # every frame of the capture is in the frames table too, MCBP's columns empty
    frames = [r for r in rows(out, "frames") if r["file_index"] == 0]
    assert [r["json"] for r in frames] == [line for line, rec in
                                           ((line, json.loads(line)) for line in res.stdout.splitlines())
                                           if rec["kind"] == "frame"]
    assert all(r["opcode"] is None and r["protocol"] == "resp" for r in frames)


def _without_memory(line: str) -> dict:
    """A key row's object as ``rdb -f jsonl`` prints it: without the memory it adds."""
    obj = json.loads(line)
    obj.pop("memory")
    return obj


def test_keys_of_a_payload_and_of_rdb_files(analysed):
    inputs, out, result = analysed
    keys = rows(out, "keys")
    synced = [r for r in keys if r["file_index"] == 0]
    assert [r["key_name"] for r in synced] == ["user:1", "user:2", "user:3"]
    assert all(r["flow"] == "10.0.0.1:45000-10.0.0.2:6379" and r["type"] == "string" for r in synced)
    for fi in (1, 2):
        res = cli("rdb", inputs[fi], "-f", "jsonl", "--digest")  # the keys table's digests
        want = [line for line in res.stdout.splitlines() if json.loads(line)["kind"] == "key"]
        got = [r for r in keys if r["file_index"] == fi]
        assert want and [_without_memory(r["json"]) for r in got] == [json.loads(w) for w in want], inputs[fi]
        for row in got:
            rec = json.loads(row["json"])
            assert row["memory"] == rec["memory"] > 0
            assert (row["db"], row["key_name"], row["type"], row["encoding"], row["elements"], row["size"],
                    row["offset"], row["frame"]) == (rec["db"], rec["key"], rec["type"], rec["encoding"],
                                                     rec["elements"], rec["size"], rec["offset"], None)
    assert result.records >= len([r for r in keys if r["file_index"] in (1, 2)])


def test_findings_of_rdb_files_and_captures(analysed):
    """The bad checksum is a finding of its file, next to the capture's findings."""
    inputs, out, result = analysed
    findings = rows(out, "findings")
    bad = [r for r in findings if r["file_index"] == 2]
    res = cli("rdb", inputs[2], "-f", "jsonl")
    want = [json.loads(line) for line in res.stdout.splitlines()]
    want = [f for rec in want if rec["kind"] != "summary"  # (whose findings are counts by rule)
            for f in ([rec] if rec["kind"] == "finding" else rec.get("findings") or ())]
    assert [(r["rule"], r["severity"], r["message"]) for r in bad] == [
        (f["rule"], f["severity"], f["message"]) for f in want]
    assert any("checksum" in r["rule"] for r in bad)
    assert {r["file"] for r in findings} <= set(inputs)
    counted = sum(n for (rule, _, _), n in result.findings.items() if "checksum" in rule)
    assert counted == len([r for r in findings if "checksum" in r["rule"]])


def test_a_capture_without_redis_writes_no_family_tables(spark, tmp_path):
    from dcpinspect.engines.spark.job import run_analysis

    out = tmp_path / "t"
    (out / "keys").mkdir(parents=True)  # an earlier run's: gone with this one
    result = run_analysis(spark, [str(SAMPLES / "dcp-session.pcap")], str(out))
    assert sorted(p.name for p in out.iterdir()) == ["connections", "findings", "frames", "notes", "report.json",
                                                     "vbuckets"]
    assert result.tables == ["frames", "findings", "notes", "connections", "vbuckets"]
    assert pq.read_table(out / "findings").num_rows == sum(result.findings.values())


def test_table_columns_come_from_the_families():
    """The engine names no protocol: the frames table's columns past the common ones are
    those the families declare, and a family's own tables are its declarations."""
    from dcpinspect.engines.spark.tables import FRAME, WHERE, specs
    from dcpinspect.families import families

    by_name = {s.name: s for s in specs()}
    declared = [c for f in families() for t in f.tables if t.name == "frames" for c in t.columns]
    assert list(by_name["frames"].columns) == [*WHERE, *FRAME, *declared]
    own = {t.name for f in families() for t in f.tables if t.name != "frames"}
    assert own == {"commands", "keys"} and own <= set(by_name)
    assert all(by_name[n].optional for n in own) and not by_name["frames"].optional


def test_a_uri_out_keeps_its_query_after_the_table_names():
    """``--out s3://bucket/out?endpoint_override=...``: the tables go under its path, the
    endpoint stays the URI's query (appended after it, it named a scheme ``http/frames``)."""
    from dcpinspect.engines.spark.tables import join

    out = "s3://key:secret@bucket/out/?endpoint_override=127.0.0.1:9000&scheme=http"
    assert join(out, "frames", "part-1.parquet") == ("s3://key:secret@bucket/out/frames/part-1.parquet"
                                                     "?endpoint_override=127.0.0.1:9000&scheme=http")
    assert join("s3://bucket", "keys") == "s3://bucket/keys"
