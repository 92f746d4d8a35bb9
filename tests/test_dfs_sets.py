"""Dragonfly's .dfs snapshot sets (spec/rdb.md §8.1): ``<name>-summary.dfs`` and one
``<name>-NNNN.dfs`` a shard, built from the layouts (REDIS0009, the aux fields, records in
LZ4 and ZSTD blobs made with the real ``lz4`` and ``zstandard``, the zero checksum), read by
``dcpinspect rdb`` as one snapshot; the DFS_RULES each firing on a crafted set and silent on
the clean one; gzip'd and cut members; exit codes."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dflygen
import rdbgen
from dcpinspect.families.redis.dragonfly.dfs import Member, SetChecks, gather, part_of, read_set
from dcpinspect.families.redis.rdb.records import KeyRecord
from dcpinspect.findings import Finding
from dcpinspect.families.redis.rules import DFS_RULES
from dcpinspect.families import rule_book
from frames import invoke_cli

ALL_RULES = rule_book()

SNAPSHOT_ID = "3f1c9a3e-5b0d-4c52-9e61-0a7d2c4b8e11"
#: the clean set: three shards (LZ4, ZSTD and plain blobs), two dbs in shard 1
SHARDS = {
    0: [(0, [("user:1", "alice" * 80), ("user:4", "dave")])],
    1: [(0, [("user:2", "bob" * 100)]), (3, [("queue", "x" * 400), ("n", "17")])],
    2: [(0, [("user:3", "carol"), ("cfg", "y" * 300)])],
}
COMPRESS = {0: "lz4", 1: "zstd", 2: None}
KEYS = sum(len(keys) for dbs in SHARDS.values() for _, keys in dbs)


def summary_file(snapshot_id: str = SNAPSHOT_ID, shard_count: int | None = 3) -> bytes:
    """The summary (§8.1): global data only (a script, table-mem, shard-count), no keys."""
    head = (b"REDIS0009" + rdbgen.aux("redis-ver", "7.4.0") + rdbgen.aux("df-ver", "v1.30.0")
            + dflygen.aux_int("redis-bits", 64) + dflygen.aux_int("ctime", 1_700_000_000)
            + rdbgen.aux("snapshot-id", snapshot_id) + rdbgen.aux("lua", "return redis.call('GET', KEYS[1])"))
    if shard_count is not None:
        head += dflygen.aux_int("shard-count", shard_count)
    return head + dflygen.aux_int("table-mem", 123456) + dflygen.DF_EOF


def shard_file(shard: int, dbs: list[tuple[int, list[tuple[str, str]]]], *, snapshot_id: str | None = SNAPSHOT_ID,
               shard_id: int | str | None = "same", compress: str | None = "lz4") -> bytes:
    """One shard's file: its aux fields (shard-id, snapshot-id), a blob a db, DF's EOF."""
    head = (b"REDIS0009" + rdbgen.aux("redis-ver", "7.4.0") + dflygen.aux_int("redis-bits", 64)
            + dflygen.aux_int("ctime", 1_700_000_000))
    if snapshot_id is not None:
        head += rdbgen.aux("snapshot-id", snapshot_id)
    if shard_id == "same":
        head += dflygen.aux_int("shard-id", shard)
    elif shard_id is not None:
        head += dflygen.aux_int("shard-id", shard_id)
    return head + b"".join(dflygen.blob(keys, compress, db) for db, keys in dbs) + dflygen.DF_EOF


def write_set(folder: Path, name: str = "dump", shards: dict | None = None, *, summary: bytes | None = b"",
              **per_shard) -> dict[str, Path]:
    """The files of a set in ``folder``: ``summary`` (b"": the clean one; None: none) and a
    file per shard; ``per_shard[f"s{i}"]`` overrides shard i's keyword arguments."""
    shards = SHARDS if shards is None else shards
    out = {}
    if summary is not None:
        out["summary"] = folder / f"{name}-summary.dfs"
        out["summary"].write_bytes(summary or summary_file(shard_count=len(shards)))
    for i, dbs in shards.items():
        kw = {"compress": COMPRESS.get(i, "lz4"), **per_shard.get(f"s{i}", {})}
        out[i] = folder / f"{name}-{i:04d}.dfs"
        out[i].write_bytes(shard_file(i, dbs, **kw))
    return out


def jsonl(*args) -> tuple[list[dict], int, str]:
    got = invoke_cli("rdb", "--format", "jsonl", *map(str, args))
    return [json.loads(line) for line in got.stdout.decode().splitlines()], got.returncode, got.stderr.decode()


def keys_by_shard(objs: list[dict]) -> dict[tuple[int, int, str], str]:
    return {(o["shard"], o["db"], o["key"]): o["file"] for o in objs if o["kind"] == "key"}


def expected_keys(files: dict, shards: dict | None = None) -> dict[tuple[int, int, str], str]:
    shards = SHARDS if shards is None else shards
    return {(i, db, k): str(files[i]) for i, dbs in shards.items() for db, keys in dbs for k, _ in keys}


def rules_in(objs: list[dict]) -> dict[str, list[dict]]:
    """Every finding of the output, by rule: loose ones and those on keys (with the key's file)."""
    out: dict[str, list[dict]] = {}
    for o in objs:
        if o["kind"] == "finding":
            out.setdefault(o["rule"], []).append(o)
        elif o["kind"] in ("key", "aux"):
            for f in o["findings"]:
                out.setdefault(f["rule"], []).append({**f, "file": o["file"], "key": o["key"]})
    return out


# ------------------------------------------------------------------------- the clean set

def test_clean_set_jsonl_every_key_with_its_shard(tmp_path):
    files = write_set(tmp_path)
    objs, code, _ = jsonl(files["summary"])
    assert code == 0 and rules_in(objs) == {}
    assert keys_by_shard(objs) == expected_keys(files)
    last = objs[-1]
    assert last["kind"] == "summary" and last["set"] == "dfs" and last["keys"] == KEYS
    assert [(s["shard"], s["file"], s["keys"]) for s in last["shards"]] == [
        (None, str(files["summary"]), 0), (0, str(files[0]), 2), (1, str(files[1]), 3), (2, str(files[2]), 2)]
    assert all(s["snapshot_id"] == SNAPSHOT_ID and s["checksum"] == "not computed" and s["complete"]
               for s in last["shards"])
    assert [s["shard_id"] for s in last["shards"]] == [None, "0", "1", "2"]
    assert last["dbs"] == {"0": {"string": KEYS - 2}, "3": {"string": 2}}
    # the global data is the summary's (its aux fields, not a shard's shard-id)
    assert last["aux"]["shard-count"] == "3" and "shard-id" not in last["aux"] and last["aux"]["table-mem"] == "123456"
    assert last["bytes"] == sum(p.stat().st_size for p in files.values())
    # the aux records of each file are there, with their file
    aux = {(o["file"], o["key"]): o["value"] for o in objs if o["kind"] == "aux"}
    assert aux[(str(files[2]), "shard-id")] == "2" and aux[(str(files["summary"]), "lua")].startswith("return")


def test_clean_set_table_and_summary(tmp_path):
    files = write_set(tmp_path)
    got = invoke_cli("rdb", str(files["summary"]))
    out = got.stdout.decode()
    assert got.returncode == 0
    rows = [line.split() for line in out.splitlines()]
    shard_of = {r[3]: r[0] for r in rows if len(r) > 4 and r[0] in ("0000", "0001", "0002")}
    assert shard_of == {k: f"{i:04d}" for i, dbs in SHARDS.items() for _, keys in dbs for k, _ in keys}
    words = " ".join(out.split())  # the console may wrap long lines
    assert "Dragonfly snapshot set of 3 shard files and its summary" in words and f"{KEYS} keys in 2 dbs" in words
    assert f"{files[1]}: 0001, 3 keys, checksum not computed: 0 errors" in words
    got = invoke_cli("rdb", "-f", "summary", str(files["summary"]))
    out = got.stdout.decode()
    assert got.returncode == 0 and "Keys per shard" in out
    per_shard = {r[0]: r[2] for r in (line.split() for line in out.splitlines()) if r and r[0] in
                 ("summary", "0000", "0001", "0002")}
    assert per_shard == {"summary": "0", "0000": "2", "0001": "3", "0002": "2"}


@pytest.mark.parametrize("given", ["summary", "all", "two shards", "shards and summary reversed"])
def test_any_way_of_naming_the_set_reads_it_once(tmp_path, given):
    files = write_set(tmp_path)
    args = {"summary": [files["summary"]], "all": sorted(files.values()), "two shards": [files[2], files[0]],
            "shards and summary reversed": [files[2], files[1], files[0], files["summary"]]}[given]
    objs, code, _ = jsonl(*args)
    assert code == 0 and keys_by_shard(objs) == expected_keys(files)
    assert [o["kind"] for o in objs].count("summary") == 1


def test_other_files_keep_their_place(tmp_path):
    plain = tmp_path / "plain.rdb"
    plain.write_bytes(rdbgen.rdb(rdbgen.key(0, "solo", rdbgen.string("1"))))
    files = write_set(tmp_path)
    objs, code, _ = jsonl(plain, files[1], files["summary"], plain)
    assert code == 0
    summaries = [o for o in objs if o["kind"] == "summary"]
    assert [s.get("set") for s in summaries] == [None, "dfs", None]
    assert gather([plain, files[0], plain]) == [plain, files[0], plain]


def test_a_shard_file_alone_is_itself_with_a_note(tmp_path):
    files = write_set(tmp_path)
    objs, code, err = jsonl(files[1])
    assert code == 0
    assert {o["key"] for o in objs if o["kind"] == "key"} == {"user:2", "queue", "n"}
    assert "shard" not in objs[0] and objs[-1]["file"] == str(files[1])
    assert f"shard 1 of the Dragonfly snapshot set {tmp_path}/dump-*.dfs" in err and str(files["summary"]) in err
    got = invoke_cli("rdb", str(files[1]))
    assert "note:" in got.stdout.decode() and got.returncode == 0
    # with nothing of its set beside it: no note
    (tmp_path / "alone").mkdir()
    lone = tmp_path / "alone" / "x-0003.dfs"
    lone.write_bytes(files[1].read_bytes())
    _, code, err = jsonl(lone)
    assert code == 0 and "note" not in err


def test_names_of_members():
    assert part_of(Path("a/dump-2024-01-01-summary.dfs")) == ("dump-2024-01-01", None)
    assert part_of(Path("dump-0012.dfs.gz")) == ("dump", 12)
    assert part_of(Path("dump-12.dfs")) is None and part_of(Path("dump-0001.rdb")) is None


# ------------------------------------------------------------------------- the rules, both ways

def _crafted(folder: Path, rule: str) -> tuple[list[Path], str]:
    """A set in ``folder`` with the fault of ``rule``, and the file the finding names."""
    if rule == "dfs-snapshot-id":
        files = write_set(folder, s2={"snapshot_id": "99999999-other"})
        return [files["summary"]], str(files[2])
    if rule == "dfs-shard-missing":
        files = write_set(folder)
        files.pop(1).unlink()
        return [files["summary"]], str(files["summary"])
    if rule == "dfs-summary-missing":
        files = write_set(folder, summary=None)
        return [files[0], files[1]], str(files[0])
    if rule == "dfs-shard-id":
        files = write_set(folder, s1={"shard_id": 2})
        return [files["summary"]], str(files[1])
    if rule == "dfs-duplicate-key":
        shards = {**SHARDS, 2: [(0, [("user:3", "carol"), ("user:2", "copy")])]}
        files = write_set(folder, shards=shards)
        return [files["summary"]], str(files[2])
    raise AssertionError(rule)


CRAFTED = sorted(set(DFS_RULES) - {"dfs-keys-cap"})


@pytest.mark.parametrize("rule", CRAFTED)
def test_each_rule_fires_on_its_fault_and_not_on_the_clean_set(tmp_path, rule):
    (tmp_path / "clean").mkdir()
    (tmp_path / "bad").mkdir()
    clean = write_set(tmp_path / "clean")
    objs, code, _ = jsonl(clean["summary"])
    assert code == 0 and rules_in(objs) == {}
    given, named = _crafted(tmp_path / "bad", rule)
    objs, code, _ = jsonl(*given)
    found = rules_in(objs)
    assert set(found) == {rule} and code == 1
    assert {f["file"] for f in found[rule]} == {named}
    assert objs[-1]["findings"] == {rule: len(found[rule])}


@pytest.mark.parametrize("compress", ["lz4", None])
def test_duplicate_key_in_two_shards_and_not_a_repeat_within_a_file(tmp_path, compress):
    shards = {0: [(0, [("k", "a"), ("only0", "1")])], 1: [(0, [("k", "b"), ("twice", "1"), ("twice", "2")])],
              2: [(0, [("k", "c")]), (1, [("k", "other db")])]}
    files = write_set(tmp_path, shards=shards, s1={"compress": compress})
    objs, code, _ = jsonl(files["summary"])
    found = rules_in(objs)
    assert code == 1 and set(found) == {"dfs-duplicate-key", "rdb-duplicate-key"}
    dups = sorted((f["file"], f["key"]) for f in found["dfs-duplicate-key"])
    assert dups == [(str(files[1]), "k"), (str(files[2]), "k")]  # db 1's "k" is another key
    first, second = sorted(found["dfs-duplicate-key"], key=lambda f: f["file"])
    assert f"also in {files[0]}:" in first["message"]  # the summary has no keys
    assert "also in one of the 2 files with keys before it" in second["message"]
    assert [(f["file"], f["key"]) for f in found["rdb-duplicate-key"]] == [(str(files[1]), "twice")]


def test_shard_missing_against_the_count_past_it_and_gaps(tmp_path):
    (tmp_path / "a").mkdir()
    files = write_set(tmp_path / "a", summary=summary_file(shard_count=5))
    objs, _, _ = jsonl(files["summary"])
    (only,) = rules_in(objs)["dfs-shard-missing"]
    assert "shard-count is 5" in only["message"] and "0003, 0004" in only["message"]
    (tmp_path / "b").mkdir()
    files = write_set(tmp_path / "b", summary=summary_file(shard_count=2))
    (only,) = rules_in(jsonl(files["summary"])[0])["dfs-shard-missing"]
    assert "0002 is past it" in only["message"]
    (tmp_path / "c").mkdir()
    files = write_set(tmp_path / "c", summary=None)
    files[1].unlink()
    found = rules_in(jsonl(files[0], files[2])[0])
    assert set(found) == {"dfs-shard-missing", "dfs-summary-missing"}
    assert "no shard file for shard 0001" in found["dfs-shard-missing"][0]["message"]


def test_shard_id_absent_and_snapshot_id_absent(tmp_path):
    files = write_set(tmp_path, s0={"shard_id": None}, s1={"snapshot_id": None})
    found = rules_in(jsonl(files["summary"])[0])
    assert set(found) == {"dfs-shard-id", "dfs-snapshot-id"}
    assert "has no shard-id" in found["dfs-shard-id"][0]["message"]
    assert found["dfs-snapshot-id"][0]["file"] == str(files[1]) and "has no snapshot-id" in \
        found["dfs-snapshot-id"][0]["message"]


def test_keys_cap_note_and_keys_past_it_not_checked(tmp_path, monkeypatch):
    shards = {0: [(0, [("a", "1"), ("b", "1"), ("c", "1")])], 1: [(0, [("d", "1"), ("a", "again")])]}
    files = write_set(tmp_path, shards=shards)
    objs, code, _ = jsonl(files["summary"])
    assert set(rules_in(objs)) == {"dfs-duplicate-key"}
    monkeypatch.setenv("DCPINSPECT_MAX_RDB_KEYS", "4")
    objs, code, _ = jsonl(files["summary"])
    found = rules_in(objs)
    assert set(found) == {"dfs-keys-cap"} and code == 0  # an info note: the duplicate "a" went unchecked
    assert found["dfs-keys-cap"][0]["key"] == "a" and found["dfs-keys-cap"][0]["file"] == str(files[1])
    assert invoke_cli("rdb", "--fail-on", "warning", str(files["summary"])).returncode == 0


def test_the_rules_are_in_the_rule_book():
    assert set(DFS_RULES) <= set(ALL_RULES) and all(r.scope == "rdb" for r in DFS_RULES.values())
    listed = invoke_cli("rules", "-f", "jsonl").stdout.decode()
    assert all(f'"rule":"{r}"' in listed.replace(" ", "") for r in DFS_RULES)


# ------------------------------------------------------------------------- damaged and gzip'd members

def test_gzipped_member(tmp_path):
    files = write_set(tmp_path)
    zipped = tmp_path / "dump-0001.dfs.gz"
    zipped.write_bytes(gzip.compress(files[1].read_bytes()))
    files[1].unlink()
    files[1] = zipped
    objs, code, _ = jsonl(files["summary"])
    assert code == 0 and keys_by_shard(objs) == expected_keys(files)


def test_truncated_member_keeps_every_key_before_the_cut(tmp_path):
    shards = {0: [(0, [("a0", "1")])], 1: [(0, [(f"b{j}", "v" * 20) for j in range(6)])], 2: [(0, [("c0", "1")])]}
    files = write_set(tmp_path, shards=shards, s1={"compress": None})
    data = files[1].read_bytes()
    cut = data.index(b"b4")  # inside the record of b3's successor: b0..b3 are whole
    files[1].write_bytes(data[:cut])
    objs, code, _ = jsonl(files["summary"])
    assert code == 1
    keys = keys_by_shard(objs)
    assert {k for (s, _, k) in keys if s == 1} == {"b0", "b1", "b2", "b3"}
    assert (0, 0, "a0") in keys and (2, 0, "c0") in keys  # the shards after it are still read
    found = rules_in(objs)
    assert set(found) == {"rdb-truncated"} and found["rdb-truncated"][0]["file"] == str(files[1])
    row = next(s for s in objs[-1]["shards"] if s["shard"] == 1)
    assert not row["complete"] and objs[-1]["complete"] is False and objs[-1]["checksum"] == "unchecked"


def test_a_member_that_is_no_rdb_is_unusable(tmp_path):
    files = write_set(tmp_path)
    files[2].write_bytes(b"this is not a snapshot file at all")
    got = invoke_cli("rdb", str(files["summary"]))
    assert got.returncode == 2


def test_key_detail_in_a_set(tmp_path):
    files = write_set(tmp_path, s2={"compress": None})
    got = invoke_cli("rdb", "--key", "cfg", str(files["summary"]))
    out = got.stdout.decode()
    assert got.returncode == 0 and f"{files[2]}: key at offset" in out and "Offsets (in the file)" in out
    got = invoke_cli("rdb", "--key", "nowhere", str(files["summary"]))
    assert got.returncode == 2 and "no key at key 'nowhere' in any file of the set" in got.stderr.decode()


# ------------------------------------------------------------------------- streaming

def test_members_are_read_one_after_the_other(tmp_path):
    """Each member's records all come before the next member's (one file open at a time),
    the set's own findings after every member's records."""
    files = write_set(tmp_path, summary=summary_file(shard_count=4))
    members = [Member(files["summary"], None)] + [Member(files[i], i) for i in range(3)]
    order = [(i, type(rec)) for i, rec in read_set(members, SetChecks(members))]
    *records, last = order
    assert [i for i, _ in records] == sorted(i for i, _ in records) and {i for i, _ in records} == {0, 1, 2, 3}
    assert last == (0, Finding)  # dfs-shard-missing (shard 3 of 4), on the summary, once all was read
    assert sum(t is KeyRecord for _, t in order) == KEYS


# ------------------------------------------------------------------------- hostile sets

@settings(max_examples=40, deadline=None)
@given(st.data())
def test_damaged_members_never_crash(data):
    """Bytes of any member flipped, cut or replaced (aux values included): the set is read
    to its end or is unusable, never an exception."""
    with tempfile.TemporaryDirectory() as folder:
        files = write_set(Path(folder))
        for part in data.draw(st.lists(st.sampled_from(list(files)), max_size=3, unique=True)):
            raw = bytearray(files[part].read_bytes())
            at = data.draw(st.integers(0, len(raw) - 1))
            how = data.draw(st.sampled_from(["flip", "cut", "junk"]))
            if how == "flip":
                raw[at] ^= data.draw(st.integers(1, 255))
            elif how == "cut":
                del raw[at:]
            else:
                raw[at:at + 4] = data.draw(st.binary(min_size=1, max_size=8))
            files[part].write_bytes(bytes(raw))
        for fmt in ("jsonl", "table", "summary"):
            got = invoke_cli("rdb", "-f", fmt, str(files["summary"]))
            assert got.returncode in (0, 1, 2)
        if got.returncode != 2:
            objs, _, _ = jsonl(files["summary"])
            assert objs[-1]["kind"] == "summary" and len(objs[-1]["shards"]) == 4
