"""``rdb --format resp`` writes the keys the C record lane reads as commands made in C
(``_rdb_resp.h``, ``RdbParser(resp=...)``): they must be byte for byte the commands the
Exporter makes of the same keys read by the Python readers, counted alike, on every RDB file
of the repository and on files built with every layout, big collections (split into
batches), scores of every form, names and values that are not UTF-8, expiries and dbs."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import rdbgen as g
from dcpinspect.families.redis.rdb.decoder import RdbParser
from dcpinspect.families.redis.rdb.native import C
from dcpinspect.families.redis.rdb.records import KeyRecord, OpRecord
from dcpinspect.families.redis.reports import export
from test_rdb_lines import _zoo_file
from test_rdb_stripes import _many_keys

needs_c = pytest.mark.skipif(C is None, reason="the _rdb extension is not built")
ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(p for d in ("tests", "samples") for p in (ROOT / d).rglob("*.rdb") if "dragonfly" not in p.name)


def exported(raw: bytes, chunk: int, lane: bool) -> tuple[bytes, int, int, int]:
    """The file's commands, how many, the keys exported, and how many of them the lane wrote."""
    out: list[bytes] = []
    exporter = export.Exporter(out.append)
    parser = RdbParser(keep=True, resp=exporter if lane else None)
    made = 0
    for i in range(0, len(raw) + chunk, chunk):
        for rec in parser.feed(raw[i:i + chunk]) if i < len(raw) else parser.close():
            if type(rec) is KeyRecord:
                made += rec.line is not None
                exporter.key(rec)
            elif type(rec) is OpRecord:
                exporter.op(rec)
    return b"".join(out), exporter.commands, exporter.keys, made


def same(raw: bytes, chunk: int = 1 << 20) -> int:
    want, want_n, want_keys, none = exported(raw, chunk, False)
    assert none == 0
    got, got_n, got_keys, made = exported(raw, chunk, True)
    assert got == want
    assert (got_n, got_keys) == (want_n, want_keys)
    return made


@needs_c
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_resp_of_every_file_is_the_exporters(path):
    raw = path.read_bytes()
    same(raw)
    same(raw, 4093)


@needs_c
def test_resp_of_every_layout_and_text():
    raw = _zoo_file(random.Random(5))
    made = same(raw)
    assert made > 30  # (all but its stream, and what the lane leaves to the readers)
    assert same(raw, 97) == made


@needs_c
def test_resp_of_big_collections_in_batches():
    members = [b"m%07d" % i for i in range(3 * export.BATCH_ARGS + 7)]
    big = b"v" * (export.BATCH_BYTES // 3)
    body = (g.key(1, "list", g.length(len(members)) + b"".join(g.string(m) for m in members))
            + g.key(2, "set", g.length(len(members)) + b"".join(g.string(m) for m in members), 1800000000000)
            + g.key(4, "hash", g.length(5) + b"".join(g.string(b"f%d" % i) + g.string(big) for i in range(5)))
            + g.key(0, "str", g.string(big)))
    raw = g.rdb(body, version=10)
    assert same(raw) == 4
    got = exported(raw, 1 << 20, True)[0]
    assert got.count(b"$5\r\nRPUSH\r\n") == 4 and got.count(b"$4\r\nHSET\r\n") == 2


@needs_c
def test_resp_of_many_keys_across_dbs():
    assert same(_many_keys(600, 7), 65536) > 500
