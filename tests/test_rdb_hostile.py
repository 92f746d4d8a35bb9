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
from dcpinspect.families.redis.rdb import RdbParser
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
