"""The prefix report's table in C (dcpinspect/families/redis/reports/_prefixes.c) against the
Python one it stands in for (usage.PrefixTable): the same rows, in the same order, the same
prunings, byte for byte in the reports, on the repository's RDB files and on a file a real
redis-server saved with more prefixes than a small table holds (so that it prunes again and
again); and the reports with the C modules and without them (``DCPINSPECT_PURE=1``)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

import servers
from test_real_redis_rdb import Client, ReplyError
from dcpinspect.families.redis.rdb.records import KeyRecord
from dcpinspect.families.redis.reports import usage
from dcpinspect.families.redis.reports.memory import LaneMeasure
from dcpinspect.families.redis.reports.snapshots import records

ROOT = Path(__file__).resolve().parent.parent
RDB_FILES = sorted(p for d in ("samples", "tests/corpora") for p in (ROOT / d).rglob("*.rdb"))
needs_c = pytest.mark.skipif(usage.CPrefixTable is None,
                             reason="_prefixes is not built (or DCPINSPECT_PURE is set)")
ALL = ("memory", "bigkeys", "prefix", "types", "expiry")
#: what a run of the reports prints, in JSON Lines, for a small prefix table (read by a child
#: process, with the C modules or without them)
CHILD = """
import json, sys
from dcpinspect.families.redis.rdb.records import AuxRecord, KeyRecord
from dcpinspect.families.redis.reports import usage
from dcpinspect.families.redis.reports.memory import LaneMeasure
from dcpinspect.families.redis.reports.snapshots import records
path, cap = sys.argv[1], int(sys.argv[2])
r = usage.Reports(usage.Options(names=usage.NAMES, seps=(b":", b"-"), depth=3, prefix_cap=cap, top=50))
for rec in records(path, keep=True, measure=LaneMeasure(r.options.config), on_header=r.header):
    if type(rec) is KeyRecord:
        r.add(rec)
    elif type(rec) is AuxRecord:
        r.aux(rec)
print(usage.CPrefixTable is not None, type(r.prefixes).__module__)
for o in r.json_objects():
    print(json.dumps(o, default=repr))
"""


def reports(path, cap: int, c: bool, monkeypatch) -> list[dict]:
    """The five reports' objects of ``path`` with a prefix table of ``cap`` rows, in C or not."""
    with monkeypatch.context() as m:
        if not c:
            m.setattr(usage, "CPrefixTable", None)
        r = usage.Reports(usage.Options(names=ALL, seps=(b":", b"-", b"/"), depth=3, prefix_cap=cap, top=30))
        assert isinstance(r.prefixes, usage.PrefixTable) != c
        for rec in records(path, keep=True, measure=LaneMeasure(r.options.config), on_header=r.header):
            if type(rec) is KeyRecord:
                r.add(rec)
        return [*r.json_objects(), *({"title": t, "rows": rows} for t, _, rows in r.tables())]


@needs_c
def test_the_c_table_keeps_the_python_tables_rows_through_every_pruning():
    rng = random.Random(26)
    for trial in range(400):
        seps = tuple(rng.sample([b":", b"::", b"/", b"_", b"a", b"ab", b"-:"], rng.randint(1, 3)))
        depth, cap = rng.randint(0, 4), rng.randint(0, 12)
        c, p = usage.CPrefixTable(cap, seps, depth), usage.PrefixTable(cap, seps, depth)
        alphabet = rng.choice([b"ab:", b"a:/_", b"a::b", b"xy-:"])
        for _ in range(rng.randint(0, 150)):
            key = bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
            db, mem, el = rng.randint(0, 2), rng.choice([1, 2, 3, rng.randint(0, 10**6)]), rng.randint(0, 5)
            how = "add" if rng.random() < 0.1 else "add_key"  # (ties of memory: the order decides)
            getattr(c, how)(db, key, mem, el)
            getattr(p, how)(db, key, mem, el)
        n = rng.choice([None, 0, 1, 3, 100])
        assert c.heaviest(n) == p.heaviest(n), (trial, seps, depth, cap)
        assert (c.rows(), c.pruned, len(c)) == (p.rows(), p.pruned, len(p)), (trial, seps, depth, cap)
    assert p.pruned and c.pruned == p.pruned


@needs_c
def test_sums_past_int64_carry_on_in_python(monkeypatch):
    t = usage.CPrefixTable(10, (b":",), 2)
    t.add_key(0, b"a:b:c", 2**61, 1)
    with pytest.raises(OverflowError):  # (two prefixes of 2**62 more: past int64; the table is as it was)
        t.add_key(0, b"a:x:c", 2**62, 1)
    assert t.rows() == [((0, b"a:"), [2**61, 1, 1]), ((0, b"a:b:"), [2**61, 1, 1])]
    r = usage.Reports(usage.Options(names=("prefix",)))
    rec = KeyRecord(db=0, key=b"big:one", type_id=0, vtype=None, offset=0, length=1, size=1, elements=2**70,
                    extra={"memory": (100, "raw", 1)})
    r.add(rec)
    r.add(rec)
    assert isinstance(r.prefixes, usage.PrefixTable)
    assert r.prefixes.heaviest() == [((0, b"big:"), [200, 2, 2**71])]


@needs_c
@pytest.mark.parametrize("path", RDB_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_repositorys_rdb_files_report_the_same_with_the_c_table(path, monkeypatch):
    for cap in (4, usage.PREFIX_CAP):
        assert reports(path, cap, True, monkeypatch) == reports(path, cap, False, monkeypatch)


@pytest.fixture(scope="module")
def many_prefixes(tmp_path_factory):
    """A file redis-server saved: 3,000 keys of every type over two dbs, named
    ``family:id:part`` (and ``family-id/part``), far more prefixes than a table of 50."""
    workdir = tmp_path_factory.mktemp("prefixes")
    rng = random.Random(7)
    families = [f"fam{i}" for i in range(9)]
    with servers.Redis(workdir) as srv:
        c = Client(srv.port)
        cmds = []
        for i in range(3000):
            fam, sep = rng.choice(families), rng.choice(":-")
            key = f"{fam}{sep}{rng.randint(0, 400)}{'/' if sep == '-' else ':'}{i}"
            kind = i % 6
            if i == 1500:
                cmds.append(("SELECT", "1"))
            if kind == 0:
                cmds.append(("SET", key, "v" * rng.randint(1, 300)))
            elif kind == 1:
                cmds.append(("HSET", key, *[f"f{j}" for j in range(rng.randint(1, 200)) for _ in (0, 1)]))
            elif kind == 2:
                cmds.append(("RPUSH", key, *[str(j) * rng.randint(1, 9) for j in range(rng.randint(1, 300))]))
            elif kind == 3:
                cmds.append(("SADD", key, *[str(rng.randint(0, 10**6)) for _ in range(rng.randint(1, 600))]))
            elif kind == 4:
                cmds.append(("ZADD", key, *[x for j in range(rng.randint(1, 200)) for x in (str(j), f"m{j}")]))
            else:
                cmds.append(("SET", key, str(rng.randint(0, 10**9)), "EX", str(rng.randint(10, 10**6))))
        for reply, cmd in zip(c.pipeline(cmds), cmds):
            assert not isinstance(reply, ReplyError), (cmd[:2], reply)
        assert c.call("SAVE") == "OK"
        c.close()
        return srv.dir / "dump.rdb"


@needs_c
def test_a_table_pruned_again_and_again_reports_the_same_in_c(many_prefixes, monkeypatch):
    for cap in (50, 7):
        c = reports(many_prefixes, cap, True, monkeypatch)
        assert c == reports(many_prefixes, cap, False, monkeypatch)
        pruned = next(o for o in c if o["kind"] == "prefix-pruned")
        assert pruned["cap"] == cap and pruned["pruned"] > 3000 // cap
        assert "pruned" in next(o["title"] for o in c if "title" in o and "prefixes" in o["title"])


def test_with_and_without_the_c_modules_the_reports_are_the_same(many_prefixes):
    outs = []
    for extra in ({}, {"DCPINSPECT_PURE": "1"}):
        got = subprocess.run([sys.executable, "-c", CHILD, str(many_prefixes), "40"], capture_output=True,
                             timeout=300, env={**os.environ, **extra}, cwd=ROOT)
        assert got.returncode == 0, got.stderr.decode()
        head, _, body = got.stdout.partition(b"\n")
        outs.append((head, body))
    (fast_head, fast), (pure_head, pure) = outs
    assert pure_head == b"False dcpinspect.families.redis.reports.usage"
    assert fast == pure
    assert any(json.loads(line)["kind"] == "prefix-pruned" for line in pure.splitlines())
    cli = [servers.dcpinspect_argv() + ["rdb", str(many_prefixes), "-r", "prefix", "-r", "bigkeys", "-r", "memory",
                                        "--sep", ":", "--sep", "-", "--depth", "3", "-n", "40", *fmt]
           for fmt in ((), ("-f", "jsonl"), ("-f", "csv"))]
    for argv in cli:
        fast_run, pure_run = (subprocess.run(argv, capture_output=True, timeout=300, env={**os.environ, **extra})
                              for extra in ({}, {"DCPINSPECT_PURE": "1"}))
        assert fast_run.returncode == 0, fast_run.stderr.decode()
        assert (fast_run.returncode, fast_run.stdout) == (pure_run.returncode, pure_run.stdout)
