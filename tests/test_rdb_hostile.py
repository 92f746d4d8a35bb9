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
from dcpinspect.families.redis.rdb import FLUSH, RdbParser
from dcpinspect.families.redis.records import Ending, KeyRecord
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
    assert [f.rule for f in keys[0].findings] == ["rdb-corrupt", "rdb-corrupt"]  # the node, then the length
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
