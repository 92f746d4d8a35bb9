"""Dragonfly replication from captures (spec/rdb.md §8, §9, §13, §14): whole syncs built
from the layouts by ``dflygen`` (a control connection and several FLOW connections, LZ4 and
ZSTD blobs made with the real packages, journal blobs, FULLSYNC_END, JOURNAL_OFFSET, the
stable-sync journal with its LSN ops) decoded through the command line (``decode -f
jsonl``, ``validate``, ``stats``, and ``-j2``, whose workers each hold some of the flows);
each Dragonfly rule both ways; the §14 vectors; the framer's journal mode at every cut,
past lost bytes and past a record too big to hold."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

import pytest

import dflygen
from dcpinspect.engines.records import decode_records
from dcpinspect.families.redis.replication.frames import JournalRecord, PayloadRecord
from dcpinspect.families.redis.dragonfly.journal import COMMAND, LSN, PING, read_record
from dcpinspect.families.redis.replication.resp import RespFramer, RespFrame
from dcpinspect.families.redis.dragonfly.syncs import Syncs, key_digest
from dcpinspect.families.redis.rules import DFLY_RULES
from dcpinspect.families import rule_book
from dcpinspect.sessions.captured import Captured, Note
from dcpinspect.sources.capture import read_records

from dflygen import command, lsn

REPLID = dflygen.REPLID
#: three shards: two blobs in shard 0 (a journal record between them), big values in shard 2
SHARDS = [[[("user:1", "alice"), ("user:2", "bob")], [("user:3", "carol")]],
          [[("order:1", "x" * 40), ("order:2", "y" * 40)]],
          [[("blob:1", "z" * 600), ("blob:2", "w" * 600)]]]
DURING = {0: [command("SET", "user:9", "late", txid=3)]}
STABLE = {0: [command("SET", "k", "v", txid=7), command("DEL", "user:1", txid=8), lsn(1001)],
          1: [command("INCR", "n", txid=9, db=2), dflygen.PING, lsn(1101), command("SET", "a", "b", db=None)],
          2: [lsn(1199)]}  # an LSN op before any record: the one before JOURNAL_OFFSET


def sync(tmp_path, name: str = "sync.pcap", **kw):
    path = tmp_path / name
    args = dict(stable=STABLE, during=DURING)
    args.update(kw)
    dflygen.full_sync(args.pop("shards", SHARDS), path=path, **args)
    return path


def cli(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dcpinspect", *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=None if env is None else {**os.environ, **env})


def jsonl(path, *extra, env=None) -> list[dict]:
    res = cli("decode", "-f", "jsonl", *extra, path, env=env)
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()]


def findings(path, *extra, env=None) -> list[dict]:
    res = cli("validate", "-f", "jsonl", "--info", *extra, path, env=env)
    assert res.returncode in (0, 1), res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()]


def rules(path, *extra, env=None) -> list[str]:
    return sorted(f["rule"] for f in findings(path, *extra, env=env))


# -- §14 vectors ---------------------------------------------------------------------------------

def test_the_journal_vectors_of_section_14():
    """Vector 8 (§9's constructed SET foo bar, its JOURNAL_BLOB, LSN 1000) and vector 9's
    opcodes, as the generator writes them and the reader reads them."""
    record = bytes.fromhex("06000a050103090353455403666f6f03626172")
    assert command("SET", "foo", "bar", txid=5) == record
    assert dflygen.journal_blob(record) == bytes.fromhex("d20113") + record
    assert lsn(1000) == bytes.fromhex("0f43e8")
    assert dflygen.FULLSYNC_END == bytes.fromhex("c80000000000000000")
    assert dflygen.DF_EOF == bytes.fromhex("ff0000000000000000")
    assert dflygen.journal_offset(1000) == bytes.fromhex("d3e803000000000000")
    entry, end = read_record(record + lsn(1000), 0, 1 << 20, 64)
    assert (entry.op, entry.dbid, entry.txid, entry.args, end) == (COMMAND, 0, 5, [b"SET", b"foo", b"bar"], 19)
    entry, end = read_record(record + lsn(1000), 19, 1 << 20, 64)
    assert (entry.op, entry.lsn, end) == (LSN, 1000, 22)


def test_the_handshake_transcript_of_vector_11(tmp_path):
    """``REPLCONF capa dragonfly`` → ``*5 +<40hex> +SYNC1 :4 :5 +<40hex>``; ``DFLY FLOW <40hex>
    SYNC1 0`` → ``*2 +FULL +<40hex>``: each answer's meaning as fields."""
    cap = dflygen.Capture()
    ctl, flow = cap.connection(40000), cap.connection(40001)
    cap.send(ctl, "c2s", b"REPLCONF capa dragonfly\r\n")
    cap.send(ctl, "s2c", b"*5\r\n+" + b"a" * 40 + b"\r\n+SYNC1\r\n:4\r\n:5\r\n+" + b"b" * 40 + b"\r\n")
    cap.send(flow, "c2s", b"DFLY FLOW " + b"a" * 40 + b" SYNC1 0\r\n")
    cap.send(flow, "s2c", b"*2\r\n+FULL\r\n+" + b"c" * 40 + b"\r\n")
    rows = [r for r in jsonl(cap.write(tmp_path / "v11.pcap")) if r["kind"] == "frame"]
    answer = rows[1]
    assert (answer["master_replid"], answer["sync_id"], answer["flows"], answer["dfly_version"],
            answer["lineage_id"]) == ("a" * 40, "SYNC1", 4, 5, "b" * 40)
    assert rows[2]["command"] == ["DFLY", "FLOW", "a" * 40, "SYNC1", "0"]
    assert (rows[2]["master_replid"], rows[2]["sync_id"], rows[2]["flow_id"]) == ("a" * 40, "SYNC1", 0)
    assert (rows[3]["sync_type"], rows[3]["eof_token"], rows[3]["flow_id"]) == ("FULL", "c" * 40, 0)


# -- a whole sync through the command line -----------------------------------------------------------

@pytest.mark.parametrize("compress", ["lz4", "zstd", None])
def test_decode_jsonl_of_a_full_sync(tmp_path, compress):
    rows = jsonl(sync(tmp_path, compress=compress))
    by_flow: dict[str, list] = {}
    for r in rows:
        by_flow.setdefault(r["flow"], []).append(r)
    control = by_flow["10.0.0.1:40000-10.0.0.2:6379"]
    answer = next(r for r in control if r.get("sync_id") and r.get("flows"))
    assert (answer["master_replid"], answer["sync_id"], answer["flows"]) == (REPLID, "SYNC1", 3)
    asked = [(r["command"][1], r["sync_id"]) for r in control if r.get("command", [""])[0] == "DFLY"]
    assert asked == [("SYNC", "SYNC1"), ("STARTSTABLE", "SYNC1")]
    assert [r["answers"] for r in control if "answers" in r] == ["DFLY SYNC", "DFLY STARTSTABLE"]
    for i, shard in enumerate(SHARDS):
        mine = by_flow[f"10.0.0.1:{40001 + i}-10.0.0.2:6379"]
        keys = [(k["db"], k["key"], k["type"]) for k in mine if k["kind"] == "key"]
        assert keys == [(0, key, "string") for blob in shard for key, _ in blob]
        aux = {a["key"]: a["value"] for a in mine if a["kind"] == "aux"}
        assert aux["shard-id"] == str(i) and ("shard-count" in aux) is (i == 0)
        ops = [(o["name"], o.get("lsn")) for o in mine if o["kind"] == "opcode"]
        assert ops[-2:] == [("FULLSYNC_END", None), ("JOURNAL_OFFSET", 1000 + 100 * i)]
        (summary,) = [s for s in mine if s["kind"] == "summary"]
        assert (summary["vendor"], summary["checksum"], summary["complete"], summary["keys"]) == (
            "dragonfly", "not computed", True, sum(map(len, shard)))
        assert (summary["sync_id"], summary["flow_id"]) == ("SYNC1", i)
        if compress is not None:  # every key came out of a blob: its offset is the blob's
            assert all(k["blob_offset"] is not None for k in mine if k["kind"] == "key")
    flow0 = by_flow["10.0.0.1:40001-10.0.0.2:6379"]
    (blob,) = [o for o in flow0 if o.get("name") == "JOURNAL_BLOB"]
    assert blob["journal"][-1] == {"op": "COMMAND", "txid": 3, "command": ["SET", "user:9", "late"]}
    journal = [(r["flow"][-19:-15], r["op"], r["lsn"], r["db"], r.get("command")) for r in rows
               if r.get("protocol") == "journal"]
    assert journal == [
        ("4000", "COMMAND", 1000, 0, ["SET", "k", "v"]), ("4000", "COMMAND", 1001, 0, ["DEL", "user:1"]),
        ("4000", "LSN", 1001, None, None),
        ("4000", "COMMAND", 1100, 2, ["INCR", "n"]), ("4000", "PING", 1101, None, None),
        ("4000", "LSN", 1101, None, None), ("4000", "COMMAND", 1102, 2, ["SET", "a", "b"]),
        ("4000", "LSN", 1199, None, None)]
    acks = [r["ack_offset"] for r in rows if r.get("command", [""])[:2] == ["REPLCONF", "ACK"]]
    assert acks == [1002, 1103, 1200]  # the records executed: the LSN each flow goes on from
    assert all(not r.get("findings") for r in rows), [r for r in rows if r.get("findings")]


def test_validate_stats_and_the_table_of_a_clean_sync(tmp_path):
    path = sync(tmp_path)
    assert findings(path) == []
    res = cli("validate", path)
    assert res.returncode == 0 and "0 errors" in res.stdout
    res = cli("stats", "-f", "json", path)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    flow0 = report["connections"]["10.0.0.1:40001-10.0.0.2:6379"]
    assert flow0["opcodes"]["journal SET"] == 1 and flow0["opcodes"]["journal LSN"] == 1
    assert flow0["opcodes"]["RDB payload"] >= 1 and flow0["opcodes"]["*FULL (response)"] == 1
    assert report["connections"]["10.0.0.1:40002-10.0.0.2:6379"]["opcodes"]["journal PING"] == 1
    # each flow's phases and LSNs, under its sync; the flows are no Redis replication links
    flows = report["redis"]["dragonfly"][f"{dflygen.REPLID} SYNC1"]
    assert [f["flow_id"] for f in flows.values()] == [0, 1, 2]
    assert [f["phases"]["full_sync"]["keys"] for f in flows.values()] == [3, 2, 2]
    assert [(f["lsns"]["first"], f["lsns"]["last"]) for f in flows.values()] == [(1000, 1001), (1100, 1102),
                                                                                 (1199, 1199)]
    assert all(f["phases"]["full_sync"]["end"] <= f["phases"]["stable"]["start"] for f in flows.values())
    assert [f["phases"]["stable"]["records"] for f in flows.values()] == [3, 4, 1]
    assert report["redis"]["replication"] == {}
    res = cli("decode", path)
    assert res.returncode == 0, res.stderr
    assert "Dragonfly journal SET LSN 1000" in res.stdout and "JOURNAL_OFFSET at" in res.stdout


def test_two_workers_give_what_one_gives(tmp_path):
    """``-j2``: the control connection and flow 1 go to one worker, flows 0 and 2 to the
    other; the correlators merge, and a key of flows 0 and 1 is still found."""
    dup = [[[("same", "1"), ("a", "1")]], [[("same", "3")]], [[("b", "2")]]]
    path = sync(tmp_path, shards=dup)
    one, two = jsonl(path, "-j1"), jsonl(path, "-j2")
    assert one == two
    (last,) = [r for r in one if r["kind"] == "finding"]
    assert last == one[-1] and last["findings"][0]["rule"] == "dfly-duplicate-key"
    assert last["flow"] == "10.0.0.1:40002-10.0.0.2:6379" and "flow 0 at offset" in last["message"]
    assert findings(path, "-j1") == findings(path, "-j2")
    assert rules(path, "-j2") == ["dfly-duplicate-key"]


def test_the_correlator_merges_and_pickles_as_parts_decoded_apart():
    """Syncs told of flows in two parts, pickled across, merged: the same findings as one
    told of all, in either order."""
    def told(parts):
        out = []
        for part in parts:
            s = Syncs()
            s.announce(("10.0.0.1", 1, "10.0.0.2", 6379), 5, "r", "SYNC1", 3)
            s.start(40, "r", "SYNC1")
            for index, keys in part:
                s.flow(("10.0.0.1", 10 + index, "10.0.0.2", 6379), 10 + index, "r", "SYNC1", index)
                for offset, key in enumerate(keys):
                    s.key("r", "SYNC1", index, 0, key, 100 + offset)
            out.append(pickle.loads(pickle.dumps(s)))
        return out

    flows = [(0, [b"x", b"y", b"x"]), (1, [b"y", b"z"]), (2, [b"x"])]
    whole = told([flows])[0].finish()
    for split in ([flows[:1], flows[1:]], [flows[2:], flows[:2]], [[f] for f in reversed(flows)]):
        parts = told(split)
        merged = parts[0]
        for p in parts[1:]:
            merged.merge(p)
        assert merged.finish() == whole
    assert [f.rule for _, f in whole] == ["dfly-duplicate-key", "dfly-duplicate-key"]
    assert "flow 0 at offset 100, flow 2 at offset 100" in whole[0][1].message  # x: the first record of each flow
    assert key_digest(0, b"x") == key_digest(0, b"x") != key_digest(1, b"x")


# -- each rule both ways ---------------------------------------------------------------------------

TWICE = [[[("k", "1")], [("k", "2")]], [[("b", "2")]]]
CASES = {
    "dfly-lsn-gap": (dict(stable={0: [command("SET", "a", "1"), lsn(1004)]}),
                     dict(stable={0: [command("SET", "a", "1"), lsn(1000)]})),
    "dfly-lsn-repeat": (dict(stable={0: [command("SET", "a", "1"), command("SET", "b", "1"), lsn(1000)]}),
                        dict(stable={0: [command("SET", "a", "1"), command("SET", "b", "1"), lsn(1001)]})),
    "dfly-fullsync-end-missing": (dict(fullsync_end={0, 2}), dict()),
    "dfly-duplicate-key": (dict(shards=[[[("k", "1")]], [[("k", "2")]], [[("c", "3")]]]), dict()),
    "rdb-duplicate-key": (dict(shards=TWICE), dict(shards=[[[("k", "1")], [("j", "2")]], [[("b", "2")]]])),
    "dfly-sync-unannounced": (dict(announced=2, flow_sync={2: 7}), dict()),
    "dfly-flow-count": (dict(opened=[0, 2]), dict()),
}


def test_every_dragonfly_rule_is_in_the_book_and_tested():
    assert set(DFLY_RULES) - {"dfly-keys-cap"} <= set(CASES) and set(DFLY_RULES) <= set(ALL_RULES)
    assert all(r.scope == "dragonfly" for r in DFLY_RULES.values())
    res = cli("rules", "-f", "jsonl")
    book = {r["rule"]: r for r in map(json.loads, res.stdout.splitlines())}
    assert all(book[rule]["scope"] == "dragonfly" for rule in DFLY_RULES)


@pytest.mark.parametrize("rule", sorted(CASES))
def test_each_rule_fires_and_stays_silent(tmp_path, rule):
    bad, good = CASES[rule]
    got = findings(sync(tmp_path, "bad.pcap", **bad))
    assert rule in [f["rule"] for f in got], got
    assert all(f["rule"] == rule for f in got), got
    assert rules(sync(tmp_path, "good.pcap", **good)) == []


def test_the_capture_level_findings_name_their_connection_and_frame(tmp_path):
    got = findings(sync(tmp_path, flow_sync={1: 7}, opened=[0, 1]))
    by_rule = {f["rule"]: f for f in got}
    assert set(by_rule) == {"dfly-sync-unannounced", "dfly-flow-count"}
    unannounced, count = by_rule["dfly-sync-unannounced"], by_rule["dfly-flow-count"]
    assert unannounced["flow"] == "10.0.0.1:40002-10.0.0.2:6379" and unannounced["frame"] is not None
    assert "announced SYNC1" in unannounced["message"] and "SYNC7" in unannounced["message"]
    assert count["flow"] == "10.0.0.1:40000-10.0.0.2:6379"
    assert "announced 3 flows" in count["message"] and "flows 1, 2" in count["message"]


def test_what_the_capture_did_not_show_is_not_judged(tmp_path):
    """No control connection: a FLOW for any sync is unjudged, and so is the flow count;
    no DFLY SYNC: the count is not judged either."""
    assert rules(sync(tmp_path, "a.pcap", control=False, flow_sync={1: 7}, opened=[0, 1])) == []
    assert rules(sync(tmp_path, "b.pcap", sync_command=False, opened=[0])) == []


def test_fullsync_end_after_journal_offset_is_missing_where_stable_sync_began(tmp_path):
    cap = dflygen.Capture()
    flow = cap.connection(40001)
    cap.send(flow, "c2s", dflygen.inline("DFLY", "FLOW", REPLID, "SYNC1", "0"))
    cap.send(flow, "s2c", dflygen.flow_answer("FULL", dflygen.token_of(0)))
    body = dflygen.snapshot(0, 1, [dflygen.blob([("a", "1")], "lz4")], 50, offset_before_end=True)
    cap.send(flow, "s2c", body + dflygen.token_of(0) + command("SET", "x", "y") + lsn(50))
    rows = jsonl(cap.write(tmp_path / "late.pcap"))
    (offset,) = [r for r in rows if r.get("name") == "JOURNAL_OFFSET"]
    assert [f["rule"] for f in offset["findings"]] == ["dfly-fullsync-end-missing"]
    assert [r["lsn"] for r in rows if r.get("protocol") == "journal"] == [50, 50]


def test_the_keys_cap_says_when_keys_went_unchecked(tmp_path):
    many = [[[(f"k{i}", "v") for i in range(20)]], [[("other", "v")]]]
    path = sync(tmp_path, shards=many)
    got = findings(path, env={"DCPINSPECT_MAX_RDB_KEYS": "10"})
    caps = [f for f in got if f["rule"] == "dfly-keys-cap"]
    assert len(caps) == 1 and caps[0]["severity"] == "info" and "10 keys remembered" in caps[0]["message"]
    assert "dfly-keys-cap" not in [f["rule"] for f in findings(path)]


# -- partial syncs, lost bytes, records too big --------------------------------------------------------

def test_a_partial_flow_counts_from_the_lsn_it_asked_for(tmp_path):
    path = sync(tmp_path, partial={1: 5000}, stable={1: [command("SET", "a", "1"), command("SET", "b", "2"),
                                                         lsn(5001)]})
    rows = jsonl(path)
    flow1 = [r for r in rows if r["flow"] == "10.0.0.1:40002-10.0.0.2:6379"]
    assert flow1[0]["lsn"] == 5000 and flow1[1]["sync_type"] == "PARTIAL"
    assert not any(r["kind"] in ("key", "summary") for r in flow1)
    assert [r["lsn"] for r in flow1 if r.get("protocol") == "journal"] == [5000, 5001, 5001]
    assert rules(path) == []
    bad = sync(tmp_path, "bad.pcap", partial={1: 5000}, stable={1: [command("SET", "a", "1"), lsn(5003)]})
    assert rules(bad) == ["dfly-lsn-gap"]


def test_lost_bytes_in_a_snapshot_and_in_the_journal(tmp_path):
    """A lost segment of flow 2's snapshot: its summary says so and nothing is judged
    missing; a lost segment of flow 0's journal: the records after it are found again and
    their LSNs are counted afresh from the next LSN op."""
    journal = [command("SET", f"key{i}", "v" * 30, txid=i) for i in range(40)] + [lsn(1039)]
    stable = {0: journal, 2: [lsn(1199)]}
    path = sync(tmp_path, stable=stable, mss=200, drop={1: [12], 3: [2]})
    rows = jsonl(path)
    flow2 = [r for r in rows if r["flow"] == "10.0.0.1:40003-10.0.0.2:6379"]
    (summary,) = [r for r in flow2 if r["kind"] == "summary"]
    assert summary["complete"] is False and summary["lost_bytes"] is True
    flow0 = [r for r in rows if r["flow"] == "10.0.0.1:40001-10.0.0.2:6379" and r.get("protocol") == "journal"]
    keys = [r["command"][1] for r in flow0 if r["op"] == "COMMAND"]
    assert keys[0] == "key0" and keys[-1] == "key39" and 30 < len(keys) < 40
    after = [r for r in flow0 if r["op"] == "COMMAND" and r["lsn"] is None]
    assert after and all(r["command"][1] > "key1" for r in after)
    notes = [r for r in rows if r["kind"] in ("gap", "skipped")]
    assert {n["kind"] for n in notes} >= {"gap"}
    assert rules(path) == []


def test_a_journal_record_past_the_frame_cap_is_passed_over_and_counted(tmp_path):
    big = command("SET", "big", "x" * 5000, txid=2)
    path = sync(tmp_path, stable={0: [command("SET", "a", "1"), big, command("SET", "c", "3"), lsn(1002)]},
                mss=700)
    rows = jsonl(path, env={"DCPINSPECT_MAX_RESP_FRAME": "1024"})
    flow0 = [r for r in rows if r.get("protocol") == "journal" and r["flow"].endswith("40001-10.0.0.2:6379")]
    assert [(r["op"], r["lsn"]) for r in flow0] == [("COMMAND", 1000), ("COMMAND", 1001), ("COMMAND", 1002),
                                                      ("LSN", 1002)]
    passed = flow0[1]
    assert "passed over" in passed["passed_over"] and passed["length"] == len(big) and "command" not in passed
    assert all(not r["findings"] for r in flow0)


def test_a_journal_cut_by_the_end_of_the_capture_is_truncated(tmp_path):
    cap = dflygen.Capture()
    flow = cap.connection(40001)
    cap.send(flow, "c2s", dflygen.inline("DFLY", "FLOW", REPLID, "SYNC1", "0", "77"))
    cap.send(flow, "s2c", dflygen.flow_answer("PARTIAL", dflygen.token_of(0)))
    cap.send(flow, "s2c", command("SET", "a", "1") + command("SET", "b", "2")[:-3])
    rows = jsonl(cap.write(tmp_path / "cut.pcap"))
    journal = [r for r in rows if r.get("protocol") == "journal"]
    assert [(r["lsn"], r["truncated"]) for r in journal] == [(77, False), (None, True)]
    assert [f["rule"] for f in journal[-1]["findings"]] == ["resp-truncated"]


# -- the framer -------------------------------------------------------------------------------------

FLOW_STREAM = (dflygen.flow_answer("FULL", dflygen.token_of(0))
               + dflygen.snapshot(0, 1, [dflygen.blob([("a", "1"), ("b", "2")], "zstd")], 9,
                                  during=[command("SET", "c", "3")])
               + dflygen.token_of(0) + command("SET", "x", "1") + dflygen.PING + lsn(10)
               + command("HSET", "h", "f", "v", db=3) + b"\x63garbage" + command("SET", "y", "2") + lsn(12))


def _frames(data: bytes, cuts) -> list:
    f = RespFramer(True)
    out, prev = [], 0
    for cut in list(cuts) + [len(data)]:
        out += f.feed(data[prev:cut])
        prev = cut
    out += f.close()
    return [(type(o).__name__, o.offset, getattr(o, "kind", None), getattr(o, "data", None),
             getattr(o, "value", None)) for o in out]


def test_the_flow_stream_gives_the_same_frames_at_every_cut():
    whole = _frames(FLOW_STREAM, [])
    kinds = [k for _, _, k, _, _ in whole]
    assert kinds[0] == "value" and "payload-end" in kinds
    journal = [v for _, _, k, _, v in whole if k == "journal"]
    assert [(e.op, e.dbid, e.args[:1], e.lsn) for e in journal] == [
        (COMMAND, 0, [b"SET"], None), (PING, None, [], None), (LSN, None, [], 10), (COMMAND, 3, [b"HSET"], None),
        (COMMAND, 0, [b"SET"], None), (LSN, None, [], 12)]
    assert "error" in kinds  # the garbage, then the journal found again at the next SELECT and command
    for cut in range(1, len(FLOW_STREAM)):
        assert _frames(FLOW_STREAM, [cut]) == whole, cut
    assert _frames(FLOW_STREAM, range(1, len(FLOW_STREAM))) == whole


def test_a_stream_that_is_no_flow_answer_stays_resp():
    for answer in (b"*2\r\n+FULL\r\n+\r\n", b"*2\r\n+HALF\r\n+tok\r\n", b"*2\r\n$4\r\nFULL\r\n$3\r\ntok\r\n",
                   b"*3\r\n+FULL\r\n+tok\r\n+x\r\n"):
        frames = _frames(answer + b"+OK\r\n", [])
        assert [k for _, _, k, _, _ in frames] == ["value", "value"], answer


def test_the_c_reader_and_the_plain_one_agree_on_a_big_sync(tmp_path):
    shards = [[[(f"s{i}:k{j}", "v" * 50) for j in range(1500)]] for i in range(2)]
    journal = {i: [command("SET", f"j{n}", "v" * 20, txid=n) for n in range(300)] + [lsn(1000 + 100 * i + 299)]
               for i in range(2)}
    path = sync(tmp_path, shards=shards, stable=journal, during={})

    def seen(items):
        return [(i.direction, i.number, i.msg.json_rows()) if isinstance(i, Captured) else i for i in items]

    followed = list(decode_records(read_records(path)))
    plain = list(decode_records(read_records(path), follow=False))
    assert seen(followed) == seen(plain)
    msgs = [i.msg for i in plain if isinstance(i, Captured)]
    assert sum(len(m.keys) for m in msgs if isinstance(m, PayloadRecord)) == 3000
    assert sum(isinstance(m, JournalRecord) for m in msgs) == 602
    assert not any(m.findings for m in msgs) and not any(isinstance(i, Note) and i.finding for i in plain)


def test_journal_frames_are_raw_frames_of_their_own_kind():
    f = RespFramer(True)
    out = f.feed(dflygen.flow_answer("PARTIAL", b"t" * 40) + command("SET", "a", "1"))
    assert isinstance(out[-1], RespFrame) and out[-1].kind == "journal" and out[-1].data == command("SET", "a", "1")


# -- the control connection's other commands ------------------------------------------------------

def test_takeover_and_replicaoffset_are_read_with_their_answers(tmp_path):
    cap = dflygen.Capture()
    ctl = cap.connection(40000)
    cap.send(ctl, "c2s", dflygen.inline("REPLCONF", "capa", "dragonfly"))
    cap.send(ctl, "s2c", dflygen.capa_answer(REPLID, 4, 3))
    cap.send(ctl, "c2s", dflygen.inline("DFLY", "REPLICAOFFSET"))
    cap.send(ctl, "s2c", b"*3\r\n:1000\r\n:1100\r\n:1200\r\n")
    cap.send(ctl, "c2s", dflygen.inline("DFLY", "TAKEOVER", "10", "SAVE", "SYNC4"))
    cap.send(ctl, "s2c", b"-ERR Takeover failed!\r\n")
    cap.send(ctl, "c2s", dflygen.inline("DFLY", "TAKEOVER", "2.5", "SYNC4"))
    cap.send(ctl, "s2c", b"+OK\r\n")
    rows = [r for r in jsonl(cap.write(tmp_path / "takeover.pcap")) if r["kind"] == "frame"]
    assert rows[1]["sync_id"] == "SYNC4" and rows[1]["flows"] == 3
    assert (rows[3]["answers"], rows[3]["lsns"]) == ("DFLY REPLICAOFFSET", [1000, 1100, 1200])
    assert (rows[4]["timeout_s"], rows[4]["save"], rows[4]["sync_id"]) == (10.0, True, "SYNC4")
    assert (rows[5]["answers"], rows[5]["value"]) == ("DFLY TAKEOVER", "ERR Takeover failed!")
    assert (rows[6]["timeout_s"], rows[6]["save"], rows[7]["answers"]) == (2.5, False, "DFLY TAKEOVER")


def test_a_master_that_answers_capa_dragonfly_with_ok_gets_redis_psync(tmp_path):
    """An older or Redis master answers +OK: the replica falls back to PSYNC (§13.1), and
    the connection is read as Redis replication, offsets and all."""
    from test_redis_replication import RDB, STREAM, command as resp_command, ends

    cap = dflygen.Capture()
    ctl = cap.connection(40000)
    cap.send(ctl, "c2s", dflygen.inline("REPLCONF", "capa", "dragonfly"))
    cap.send(ctl, "s2c", b"+OK\r\n")
    cap.send(ctl, "c2s", resp_command("PSYNC", "?", "-1"))
    cap.send(ctl, "s2c", b"+FULLRESYNC " + b"5d" * 20 + b" 1000\r\n$%d\r\n" % len(RDB) + RDB)
    for c in STREAM:
        cap.send(ctl, "s2c", c)
    cap.send(ctl, "c2s", resp_command("REPLCONF", "ACK", str(ends()[-1])))
    rows = jsonl(cap.write(tmp_path / "fallback.pcap"))
    assert [r["repl_offset"] for r in rows if r.get("direction") == "s2c" and r.get("command")] == \
        [1000] + ends()[:-1]
    assert [k["key"] for k in rows if k["kind"] == "key"] == ["a", "b", "c"]
    assert rules(tmp_path / "fallback.pcap") == []


def test_decode_summary_counts_the_dragonfly_records(tmp_path):
    res = cli("decode", "-f", "summary", sync(tmp_path))
    assert res.returncode == 0, res.stderr
    assert "journal SET" in res.stdout and "*FULL" in res.stdout and "4 connections" in res.stdout


def test_the_table_view_of_a_payload_piece_whose_aux_could_not_be_read():
    from dcpinspect.families.redis.rdb.records import AuxRecord

    rec = PayloadRecord(0, 10)
    rec.add([AuxRecord(b"k", None, 9, 4)])
    assert rec.table_rows() == [("aux at 9", "k = ")]


def test_a_sync_on_another_port_is_found_by_its_first_bytes(tmp_path):
    """The control connection's PING and each flow's DFLY FLOW tell the sniffer."""
    from dcpinspect.families.redis.replication.sniff import Sniffer

    assert Sniffer(False).add("c2s", dflygen.inline("DFLY", "FLOW", REPLID, "SYNC1", "0")) is True
    rows = jsonl(sync(tmp_path, port=7001))
    assert {r["flow"][-4:] for r in rows} == {"7001"}
    assert sum(r.get("protocol") == "journal" for r in rows) == 8 and sum(r["kind"] == "key" for r in rows) == 7


# -- properties ---------------------------------------------------------------------------------------

from hypothesis import given, strategies as st  # noqa: E402

from dcpinspect.families.redis.replication.session import Replication  # noqa: E402
from dcpinspect.framing.framer import Skipped  # noqa: E402

ALL_RULES = rule_book()

WORDS = st.lists(st.binary(min_size=0, max_size=40), min_size=1, max_size=5)


@given(st.lists(st.tuples(st.sampled_from([b"SET", b"DEL", b"HSET", b"JSON.SET"]), WORDS,
                          st.integers(0, 2 ** 40), st.one_of(st.none(), st.integers(0, 20000))), max_size=8),
       st.lists(st.integers(1, 400), max_size=6))
def test_journal_commands_come_back_as_written_at_any_cut(records, cuts):
    data = dflygen.flow_answer("PARTIAL", b"t" * 40)
    for name, args, txid, db in records:
        data += command(name, *args, txid=txid, db=db)
    points, at = [], 0
    for c in cuts:
        at += c
        points.append(min(at, len(data)))
    got = [v for kind_, _, kind, _, v in _frames(data, points) if kind == "journal"]
    assert [(e.args, e.txid, e.dbid) for e in got] == [([n, *a], t, d) for n, a, t, d in records]


PIECES = st.one_of(st.binary(max_size=40), st.builds(lambda w: command("SET", *w), WORDS), st.just(lsn(5)),
                   st.just(dflygen.PING), st.just(dflygen.token_of(0)), st.just(dflygen.DF_EOF))


@given(st.lists(PIECES, max_size=12).map(b"".join), st.sampled_from(["FULL", "PARTIAL"]),
       st.lists(st.integers(1, 200), max_size=5), st.integers(0, 2))
def test_any_bytes_after_a_flow_answer_are_accounted_for_once_and_never_raise(tail, kind, cuts, gaps):
    head = dflygen.flow_answer(kind, dflygen.token_of(0))
    data = head + (dflygen.snapshot(0, 1, [], 3)[:40] if kind == "FULL" else b"") + tail
    f = RespFramer(True)
    session = Replication(None, True, Syncs(), ("10.0.0.1", 1, "10.0.0.2", 6379))
    out, prev = [], 0
    for i, c in enumerate(cuts + [len(data)]):
        end = min(prev + c, len(data)) if i < len(cuts) else len(data)
        out += f.feed(data[prev:end])
        if i < gaps:
            out += f.gap(7)
            session.gap()
        prev = end
    out += f.close()
    covered = 0
    for item in out:
        if isinstance(item, Skipped):
            covered += item.size
            continue
        rec = session.decode(item, "s2c", 0.0, 1)
        rec.json_rows(), rec.table_rows(), rec.title()
        passed = item.kind == "journal" and not item.data and item.value is not None
        covered += item.value.length if passed else len(item.data)
    assert covered == len(data)  # the lost bytes are in no frame and no skipped range
    session.finish()
    session.correlator.finish()


def test_a_record_too_big_to_hold_whose_strings_lie_loses_the_place_not_the_journal():
    """A command past the frame cap is passed over a string at a time; a string longer
    than the command's total is no record: the journal is found again after it."""
    head = dflygen.flow_answer("PARTIAL", b"t" * 40)
    lying = b"\x06\x00\x0a\x01\x01\x02" + dflygen.length(5000) + b"\x03SET" + dflygen.length(1 << 40)
    data = head + lying + b"x" * 30 + command("SET", "after", "1") + lsn(9)
    f = RespFramer(True)
    f.frame_cap = 1024
    out = f.feed(data) + f.close()
    skipped = [o for o in out if isinstance(o, Skipped)]
    journal = [o.value for o in out if isinstance(o, RespFrame) and o.kind == "journal"]
    assert [e.args for e in journal] == [[b"SET", b"after", b"1"], []] and journal[1].lsn == 9
    assert skipped and skipped[0].offset == len(head) and "passed over" in skipped[0].reason
    assert sum(s.size for s in skipped) == len(lying) + 30


def test_stats_counts_a_capture_level_finding_on_its_connection(tmp_path):
    path = sync(tmp_path, shards=[[[("k", "1")]], [[("k", "2")]], [[("c", "3")]]])
    res = cli("stats", "-f", "json", path)
    assert res.returncode == 0, res.stderr
    conns = json.loads(res.stdout)["connections"]
    assert conns["10.0.0.1:40002-10.0.0.2:6379"]["findings"] == 1
    assert sum(c["findings"] for c in conns.values()) == 1


def test_the_command_filter_keeps_journal_records_by_their_name(tmp_path):
    rows = jsonl(sync(tmp_path), "--command", "journal SET", "--command", "journal lsn")
    assert [(r["op"], r.get("command", [""])[0]) for r in rows if r["kind"] == "frame"] == [
        ("COMMAND", "SET"), ("LSN", ""), ("LSN", ""), ("COMMAND", "SET"), ("LSN", "")]
