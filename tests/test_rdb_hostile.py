"""The hostile snapshots of the Redis family's campaign, each shrunk to the bytes that show
its mechanism, built with tests/rdbgen.py and tests/dflygen.py: a negative count in a
stream node, decompression bombs, blobs nested past the depth cap, a packed value inside
LZF, a listpack whose count is off by one, a db per key, a .dfs set whose shard numbers
are far apart, a diskless payload whose end never comes. Each asserts the outcome (the
finding, its offset, the exit code) and bounds work by counting it (objects made, bytes
inflated, peak memory measured in a subprocess), never by timing it."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import rdbgen
from dcpinspect.families.redis.rdb.decoder import FLUSH, RdbParser
from dcpinspect.families.redis.rdb.records import Ending, KeyRecord
from dcpinspect.findings import Finding

ROOT = Path(__file__).resolve().parents[1]
MS = 1_700_000_000_000


def decode(data: bytes, keep=False, chunk: int | None = None, **kw) -> list:
    parser = RdbParser(keep=keep, **kw)
    out = []
    step = chunk or len(data) or 1
    for i in range(0, len(data), step):
        out += parser.feed(data[i:i + step])
    return out + parser.close()


def findings(out: list) -> list[tuple[str, int | None]]:
    got = [(f.rule, f.offset) for f in out if isinstance(f, Finding)]
    got += [(f.rule, f.offset) for r in out if isinstance(r, KeyRecord) for f in r.findings]
    return got


def run(*args, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    import os

    full = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "dcpinspect", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=full)


def peak_rss_mb(script: str, timeout: int = 120) -> tuple[float, str]:
    """Run ``script`` in a fresh interpreter: (its peak resident memory in MiB, its stdout)."""
    code = script + "\nimport resource, sys\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    return int(res.stderr.strip().splitlines()[-1]) / 1024, res.stdout


# -- 1. a stream node whose master entry counts -4 fields --------------------------------

def stream_key(items: list) -> bytes:
    """A STREAM_LISTPACKS_2 key of one node holding ``items``, its length 1, no groups."""
    node = rdbgen.string(struct.pack(">QQ", MS, 0)) + rdbgen.string(rdbgen.listpack(items))
    two = rdbgen.length(MS) + rdbgen.length(0)
    value = rdbgen.length(1) + node + rdbgen.length(1) + two + two + two + rdbgen.length(1) + rdbgen.length(0)
    return rdbgen.key(19, "s", value)


NEGATIVE_FIELDS = [2, 0, -4, b"f", 0]  # the old reading went back 4 entries a turn, for ever
NEGATIVE_PAIRS = [1, 0, 1, b"f", 0, 0, 0, 0, -3, b"a", b"b", 5]


@pytest.mark.parametrize("items", [NEGATIVE_FIELDS, NEGATIVE_PAIRS], ids=["fields", "pairs"])
@pytest.mark.parametrize("keep", [False, True])
def test_a_negative_count_in_a_stream_node_is_corrupt_not_endless(items, keep):
    data = rdbgen.rdb(b"\xfe\x00" + stream_key(items) + rdbgen.key(0, "after", rdbgen.string("x")))
    out = decode(data, keep)
    keys = [r for r in out if isinstance(r, KeyRecord)]
    assert [k.key for k in keys] == [b"s", b"after"]
    assert [f.rule for f in keys[0].findings] == ["rdb-corrupt", "rdb-stream-length"]  # the node, then the length
    assert "counts -" in keys[0].findings[0].message
    assert isinstance(out[-1], Ending) and not out[-1].stopped


@pytest.mark.parametrize("pure", ["0", "1"])
def test_rdb_key_of_a_negative_stream_count_exits(tmp_path, pure):
    path = tmp_path / "neg.rdb"
    path.write_bytes(rdbgen.rdb(b"\xfe\x00" + stream_key(NEGATIVE_FIELDS)))
    env = {"DCPINSPECT_PURE": "1"} if pure == "1" else {}
    for args in (("--format", "summary"), ("--key", "s")):
        res = run("rdb", path, *args, env=env, timeout=60)
        assert res.returncode == 1, res.stderr
        assert "rdb-corrupt" in res.stdout


# -- 2. decompression bombs, 3. blobs nested past the depth cap ----------------------------

def dragonfly(body: bytes) -> bytes:
    import dflygen

    return b"REDIS0009" + rdbgen.aux("df-ver", "v1.30.0") + body + dflygen.DF_EOF


def zstd_bomb(size: int = 4 << 20) -> bytes:
    """A ZSTD blob of ``size`` zero bytes: that many thirds of an empty string key."""
    import dflygen

    return dflygen.zstd_blob(bytes(size))


def test_a_zstd_bomb_stops_at_the_budget_and_decoding_goes_on_after_it():
    bomb = zstd_bomb()
    data = dragonfly(bomb + rdbgen.key(0, "after", rdbgen.string("x")))
    assert len(bomb) < 300
    parser = RdbParser()
    out, first_key_at = [], None
    for rec in parser.records(data):  # records come while the blob inflates, not at its end
        if first_key_at is None and isinstance(rec, KeyRecord):
            first_key_at = parser.keys  # the keys made so far
        out.append(rec)
    out += parser.close()
    assert parser.inflated <= 1000 * len(data)
    assert first_key_at is not None and first_key_at <= FLUSH < parser.keys // 10
    cap = [f for f in out if isinstance(f, Finding) and f.rule == "rdb-inflate-cap"]
    assert len(cap) == 1 and cap[0].offset == data.index(bomb)
    keys = [r for r in out if isinstance(r, KeyRecord)]
    assert keys[-1].key == b"after" and len(keys) - 1 <= 1000 * len(data) // 3
    assert isinstance(out[-1], Ending) and not out[-1].stopped


def test_the_ratio_and_the_absolute_cap_are_the_environments(tmp_path):
    path = tmp_path / "bomb.rdb"
    data = dragonfly(zstd_bomb(3 * 40_000))
    path.write_bytes(data)
    assert 1000 * len(data) < 3 * 40_000
    summary = run("rdb", path, "--format", "jsonl")
    loose = run("rdb", path, "--format", "jsonl", env={"DCPINSPECT_MAX_RDB_INFLATE_RATIO": "100000"})
    tight = run("rdb", path, "--format", "jsonl", env={"DCPINSPECT_MAX_RDB_INFLATE_RATIO": "100000",
                                                       "DCPINSPECT_MAX_RDB_INFLATED": "32K"})

    def keys_and_caps(res):
        rows = [json.loads(line) for line in res.stdout.splitlines()]
        caps = [f for r in rows if r["kind"] != "summary"
                for f in ([r] if r["kind"] == "finding" else r.get("findings", [])) if f["rule"] == "rdb-inflate-cap"]
        return sum(r["kind"] == "key" for r in rows), len(caps)

    assert keys_and_caps(loose) == (40_000, 0)
    n, caps = keys_and_caps(summary)
    assert caps == 1 and n == 1000 * len(data) // 3
    n, caps = keys_and_caps(tight)
    assert caps == 1 and n == (32 << 10) // 3
    bad = run("rdb", path, env={"DCPINSPECT_MAX_RDB_INFLATE_RATIO": "lots"})
    assert bad.returncode == 2 and "DCPINSPECT_MAX_RDB_INFLATE_RATIO" in bad.stderr


def test_a_bomb_costs_bounded_memory(tmp_path):
    from servers import peak_rss

    path, small = tmp_path / "bomb.rdb", tmp_path / "small.rdb"
    path.write_bytes(dragonfly(zstd_bomb(16 << 20)))  # the was 48 MiB in 1.6 KB
    small.write_bytes(dragonfly(rdbgen.key(0, "k", rdbgen.string("v"))))
    res, peak = peak_rss("rdb", path, "--format", "summary", timeout=300)
    _, base = peak_rss("rdb", small, "--format", "summary")
    assert res.returncode == 1 and b"rdb-inflate-cap" in res.stdout
    assert peak - base < 32 * 1024, (peak, base)  # KiB: the records are handed on, not held


def nested(depth: int, inner: bytes) -> bytes:
    import dflygen

    for i in range(depth):
        inner = (dflygen.zstd_blob if i % 2 else dflygen.lz4_blob)(inner)
    return inner


def test_blobs_nested_past_the_cap_are_passed_over_not_recursed():
    inner = rdbgen.key(0, "deep", rdbgen.string("x"))
    ok = dragonfly(nested(4, inner))
    assert [r.key for r in decode(ok) if isinstance(r, KeyRecord)] == [b"deep"]
    data = dragonfly(nested(200, inner) + rdbgen.key(0, "after", rdbgen.string("x")))
    out = decode(data)
    assert [r.key for r in out if isinstance(r, KeyRecord)] == [b"after"]
    assert [rule for rule, _ in findings(out) + [(f.rule, f.offset) for r in out if not isinstance(r, (KeyRecord,
            Finding, Ending)) for f in r.findings]] == ["rdb-inflate-cap"]


def test_rdb_of_blobs_nested_200_deep_exits_with_a_finding(tmp_path):
    path = tmp_path / "deep.rdb"
    path.write_bytes(dragonfly(nested(200, rdbgen.key(0, "deep", rdbgen.string("x")))))
    res = run("rdb", path, "--format", "jsonl")
    assert res.returncode == 0 and "Traceback" not in res.stderr
    assert "rdb-inflate-cap" in res.stdout


# -- 4. the journal read linearly -------------------------------------------------------------

def journal_reads(stream: bytes, segment: int) -> tuple[list, int]:
    """The framer's frames of a PARTIAL flow's ``stream`` fed ``segment`` bytes at a time,
    and how many journal lengths it read to make them."""
    from dcpinspect.families.redis.dragonfly import journal
    from dcpinspect.families.redis.replication.resp import RespFramer

    real, count = journal.read_len, [0]

    def counted(buf, p):
        count[0] += 1
        return real(buf, p)

    framer = RespFramer()
    frames = framer.feed(b"*2\r\n+PARTIAL\r\n+" + b"t" * 40 + b"\r\n")
    journal.read_len = counted
    try:
        for i in range(0, len(stream), segment):
            frames += framer.feed(stream[i:i + segment])
        frames += framer.close()
    finally:
        journal.read_len = real
    return frames, count[0]


@pytest.mark.parametrize("size", [20_000, 40_000])
def test_a_long_run_of_selects_is_read_once(size):
    import dflygen

    stream = dflygen.select(3) * (size // 2) + dflygen.command("SET", "k", "v", db=None)
    frames, reads = journal_reads(stream, 1460)
    records = [f for f in frames if getattr(f, "kind", None) == "journal"]
    assert len(records) == 1 and records[0].value.dbid == 3 and records[0].value.args == [b"SET", b"k", b"v"]
    assert reads <= 2 * (size // 2) + 100  # two lengths a SELECT, once each (it was once a segment each)


@pytest.mark.parametrize("size", [4_000, 8_000])
def test_resynchronisation_tries_each_position_at_a_bounded_cost(size):
    import dflygen

    lost = b"\x0a\xff"  # an op that is no record: the place is lost
    # a run of SELECTs ending in no record: each of its positions was read to its end
    # (2,000 lengths a byte at 4 KB, 21 s), and again for every segment
    garbage = dflygen.select(6) * (size // 2) + lost
    good = dflygen.select(1) + dflygen.command("SET", "k", "v", db=None)
    frames, reads = journal_reads(lost + garbage + good, 1460)
    records = [f for f in frames if getattr(f, "kind", None) == "journal"]
    assert records and records[-1].value.args == [b"SET", b"k", b"v"] and records[-1].value.dbid == 1
    assert reads <= 40 * len(garbage)


# -- 5. a diskless payload whose end mark never comes -------------------------------------

def test_a_payload_whose_end_mark_never_comes_is_truncated(tmp_path):
    from test_redis_replication import capture, conversation

    msgs = conversation(diskless=True)
    k = next(i for i, (_, data) in enumerate(msgs) if data.startswith(b"$EOF:"))
    msgs[k] = ("s2c", msgs[k][1][:-40])  # the end mark is not sent; the commands follow
    path = capture(tmp_path, msgs)
    res = run("validate", path)
    assert res.returncode == 1 and "rdb-truncated" in res.stdout
    rows = [json.loads(line) for line in run("decode", "-f", "jsonl", path).stdout.splitlines()]
    summary = next(r for r in rows if r["kind"] == "summary")
    assert summary["complete"] is False and summary["findings"]["rdb-truncated"] == 1
    cut = next(r for r in rows if r["kind"] == "finding" and r["rule"] == "rdb-truncated")
    assert "end mark" in cut["message"] and cut["offset"] == summary["bytes"]


def test_a_payload_with_its_end_mark_is_complete(tmp_path):
    from test_redis_replication import capture, conversation

    path = capture(tmp_path, conversation(diskless=True))
    assert run("validate", path).returncode == 0


# -- 6. a .dfs set whose shard numbers are far apart ------------------------------------------

def test_a_set_with_shard_999999999_counts_what_is_missing(tmp_path):
    from servers import peak_rss
    from test_dfs_sets import shard_file

    for n in (0, 999_999_999):
        (tmp_path / f"x-{n:04d}.dfs").write_bytes(shard_file(n, [(0, [(f"k{n}", "v")])]))
    res, peak = peak_rss("rdb", "--format", "jsonl", tmp_path / "x-0000.dfs", tmp_path / "x-999999999.dfs",
                         timeout=120)
    assert res.returncode == 1, res.stderr
    missing = [json.loads(line) for line in res.stdout.decode().splitlines() if b"dfs-shard-missing" in
               line.encode()]
    text = json.dumps(missing)
    assert "0001, 0002" in text and "and 999,999,978 more" in text
    assert peak < 200 * 1024  # KiB; the list of missing numbers took 2.9 GB


# -- 7. one key per db ------------------------------------------------------------------------

@pytest.mark.parametrize("pure", ["", "1"])
def test_duplicate_key_memory_grows_with_keys_not_dbs(tmp_path, pure):
    from servers import peak_rss

    n = 20_000
    spread = tmp_path / "dbs.rdb"
    spread.write_bytes(rdbgen.rdb(b"".join(b"\xfe" + rdbgen.length(db) + rdbgen.key(0, "k", rdbgen.string("v"))
                                          for db in range(n))))
    one = tmp_path / "one.rdb"
    one.write_bytes(rdbgen.rdb(b"\xfe\x00" + b"".join(rdbgen.key(0, f"k{i}", rdbgen.string("v"))
                                                      for i in range(n))))
    env = {"DCPINSPECT_PURE": pure} if pure else {}
    res, dbs_peak = peak_rss("rdb", "--format", "summary", spread, env=env)
    assert res.returncode == 0 and b"rdb-duplicate-key" not in res.stdout
    _, one_peak = peak_rss("rdb", "--format", "summary", one, env=env)
    # KiB: under 2 KB a db (the summary's own counts per db that holds keys are some 600 bytes,
    # allocator slack aside), where a duplicate-key table a db took 8 KB each (160 MB here)
    assert dbs_peak - one_peak < 40 * 1024, (dbs_peak, one_peak)


def test_one_key_in_two_dbs_is_no_duplicate_and_twice_in_one_is():
    body = b"\xfe\x00" + rdbgen.key(0, "k", rdbgen.string("1")) + b"\xfe\x01" + rdbgen.key(0, "k", rdbgen.string("2"))
    assert findings(decode(rdbgen.rdb(body))) == []
    again = body + rdbgen.key(0, "k", rdbgen.string("3"))
    assert [rule for rule, _ in findings(decode(rdbgen.rdb(again)))] == ["rdb-duplicate-key"]


# -- 8. packed values inside LZF, a listpack whose count is off by one ------------------------

def zipmap_in_lzf(pairs: int) -> bytes:
    """A HASH_ZIPMAP of ``pairs`` empty fields and values (3 bytes each), LZF-compressed
    by back-references of 264 bytes (88 pairs in 3 bytes)."""
    assert pairs % 88 == 0
    ulen = 1 + 3 * pairs + 1
    data = bytes([4 - 1, 254, 0, 0, 0])  # a literal: zmlen 254 (count unknown), the first pair
    # back-references 3 bytes back (the distance byte says 2): 264 bytes each, the long form
    data += bytes([7 << 5, 264 - 2 - 7, 2]) * ((pairs - 1) * 3 // 264)
    rest = 3 * (pairs - 1) - ((pairs - 1) * 3 // 264) * 264
    if rest:
        data += bytes([(rest - 2) << 5 | 0, 2]) if rest - 2 < 7 else bytes([7 << 5, rest - 2 - 7, 2])
    data += bytes([0, 0xFF])
    return rdbgen.lzf_string(data, ulen)


def test_a_zipmap_inside_lzf_is_counted_without_building_its_pairs(tmp_path):
    from servers import peak_rss

    pairs = 88 * 4_000
    data = rdbgen.rdb(b"\xfe\x00" + rdbgen.key(9, "zm", zipmap_in_lzf(pairs)), version=3)
    out = decode(data)
    keys = [r for r in out if isinstance(r, KeyRecord)]
    # its fields are all empty: the server refuses the file ("Hash zipmap with dup elements")
    assert [(k.key, k.elements) for k in keys] == [(b"zm", pairs)]
    assert [rule for rule, _ in findings(out)] == ["rdb-duplicate-member"]
    path = tmp_path / "zipmap.rdb"
    path.write_bytes(data)
    small = tmp_path / "small.rdb"
    small.write_bytes(rdbgen.rdb(b"\xfe\x00" + rdbgen.key(0, "k", rdbgen.string("v")), version=3))
    for pure in ("", "1"):
        env = {"DCPINSPECT_PURE": pure} if pure else {}
        res, peak = peak_rss("rdb", "--format", "summary", path, env=env)
        _, base = peak_rss("rdb", "--format", "summary", small, env=env)
        assert res.returncode == 1 and peak - base < 16 * 1024, (pure, peak, base)  # KiB; 700k pairs built: 60 MB


def decoded_traced(data: bytes) -> tuple[list, int]:
    """The records of ``data`` and the most memory Python allocated while decoding it."""
    import tracemalloc

    tracemalloc.start()
    try:
        out = decode(data)
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_listpack_whose_count_is_off_by_one_is_counted_not_built():
    n = 60_000
    lp = bytearray(rdbgen.listpack([b"a"] * n))
    struct.pack_into("<H", lp, 4, n + 1)  # one more than it holds
    data = rdbgen.rdb(b"\xfe\x00" + rdbgen.key(20, "set", rdbgen.string(bytes(lp))))
    out, peak = decoded_traced(data)
    assert [(rule, f"{n + 1} entries" in f.message) for r in out if isinstance(r, KeyRecord) for f in r.findings
            for rule in [f.rule]] == [("rdb-corrupt", True)]
    assert peak < 4 * len(data), (peak, len(data))  # the blob and its copies; 60,000 entries built took 10 times it


def _odd_sorted_set_listpack(size: int) -> bytes:
    """A listpack of ``size`` bytes or more: member/score pairs (8-digit members, scores 0 to
    63), then one member more; its count field 0xffff (not known), as a big one has it."""
    n = (size - 7) // 12 + 1
    body = b"".join(b"\x88%08d\x09" % i + bytes([i & 0x3F, 1]) for i in range(n)) + b"\x83odd\x04"
    return struct.pack("<IH", 6 + len(body) + 1, 0xFFFF) + body + b"\xff"


@pytest.mark.parametrize("pure", [False, True])
def test_a_16_mib_sorted_set_listpack_of_an_odd_count_is_counted_not_built(pure, monkeypatch):
    """A ZSET_LISTPACK of 16 MiB (1 MiB read by Python alone, which is slower) whose entries
    do not pair up (one member more than its scores) makes the record lane decline; the
    readers count it, read its scores and look for a repeated member without building its
    entries, and say what is wrong."""
    from dcpinspect.families.redis.rdb import decoder as rdb, layouts, lzf, primitives

    if pure:
        for module in (layouts, lzf, primitives, rdb):
            monkeypatch.setattr(module, "C", None)
    lp = _odd_sorted_set_listpack((1 if pure else 16) << 20)
    entries = (len(lp) - 7 - 5) // 6 + 1
    data = rdbgen.rdb(b"\xfe\x00" + rdbgen.key(17, "z", rdbgen.string(lp)) + rdbgen.key(0, "after", rdbgen.string("1")),
                      version=10, checksum=False)
    del lp
    out, peak = decoded_traced(data)
    keys = [r for r in out if isinstance(r, KeyRecord)]
    assert [(k.key, k.elements) for k in keys] == [(b"z", None), (b"after", 1)]
    assert [(f.rule, f"{entries} entries" in f.message) for f in keys[0].findings] == [("rdb-corrupt", True)]
    assert peak < 4 * len(data), (peak, len(data))  # the blob and its copies; its entries built: 8 times it


# -- LZF strings count against the input's inflation budget ----------------------------------

#: an LZF string of 265 bytes in 5: the literal "a", then 264 bytes copied from 1 back
LZF_265 = rdbgen.lzf_string(b"\x00a" + bytes([7 << 5, 264 - 2 - 7, 0]), 265)


def lzf_file(n: int) -> bytes:
    """``n`` keys whose values are LZF strings of 265 bytes (5 stored), then a plain one."""
    body = b"".join(rdbgen.key(0, f"k{i:03d}", LZF_265) for i in range(n))
    return rdbgen.rdb(b"\xfe\x00" + body + rdbgen.key(0, "after", rdbgen.string("1")), version=9)


@pytest.mark.parametrize("pure", [False, True])
@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("env", [{"DCPINSPECT_MAX_RDB_INFLATED": "10000"}, {"DCPINSPECT_MAX_RDB_INFLATE_RATIO": "2"}])
def test_lzf_strings_count_against_the_inflation_budget(env, keep, pure, monkeypatch):
    """Many LZF strings crossing a small budget: those within it are read, the first past it
    is an rdb-inflate-cap warning at its offset and it and the later ones past the budget
    are passed over unread; every key is still reported, and the file ends whole."""
    from dcpinspect.families.redis.rdb import decoder as rdb, layouts, lzf, primitives

    if pure:
        for module in (layouts, lzf, primitives, rdb):
            monkeypatch.setattr(module, "C", None)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    data = lzf_file(100)
    parser = RdbParser(keep=keep)
    out = parser.feed(data) + parser.close()
    keys = [r for r in out if isinstance(r, KeyRecord)]
    assert [k.key for k in keys] == [b"k%03d" % i for i in range(100)] + [b"after"]
    read = [k for k in keys[:-1] if k.extra.get("value_length") == 265]
    allowed = 10_000 if "DCPINSPECT_MAX_RDB_INFLATED" in env else 2 * len(data)
    assert read == keys[:len(read)] and len(read) == allowed // 265  # those within the budget, in order
    assert all(k.value == b"a" * 265 for k in read) if keep else all(k.value is None for k in keys)
    assert parser.inflated == 265 * len(read) <= allowed
    caps = [(f.rule, f.severity, f.offset) for k in keys for f in k.findings]
    first_over = keys[len(read)]
    assert caps == [("rdb-inflate-cap", "warning", data.index(LZF_265, first_over.offset))]
    assert "LZF string" in first_over.findings[0].message and "passed over" in first_over.findings[0].message
    assert isinstance(out[-1], Ending) and out[-1].checksum == "ok" and not out[-1].stopped


def test_lzf_strings_within_the_default_budget_are_no_finding():
    parser = RdbParser()
    out = parser.feed(lzf_file(100)) + parser.close()
    keys = [r for r in out if isinstance(r, KeyRecord)]
    assert len(keys) == 101 and all(k.extra.get("value_length") == 265 for k in keys[:-1])
    assert not [f for k in keys for f in k.findings] and parser.inflated == 265 * 100
