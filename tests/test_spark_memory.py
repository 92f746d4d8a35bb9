"""``analyze`` on RDB files writes each key's memory (the model's estimate) into its
``keys`` table; the prefix and top-N queries of docs/rdb.md, in Spark SQL and in DuckDB, on the
job's tables of two snapshots redis-server saved, give what ``rdb --report`` gives."""

from __future__ import annotations

import shutil
from collections import defaultdict

import pytest

from test_memory_usage import estimates, measured  # noqa: F401 (the fixture)
from dcpinspect.families.redis.reports import usage

pytestmark = pytest.mark.spark
pytest.importorskip("pyspark")
pytest.importorskip("pyarrow.parquet")

#: the queries of docs/rdb.md (Spark SQL over a view named keys; DuckDB over the Parquet files)
TOP_SPARK = """SELECT file, db, key_name, type, encoding, memory FROM keys
               ORDER BY memory DESC, key_name LIMIT 5"""
PREFIX_SPARK = """SELECT db, substring_index(key_name, ':', 1) AS prefix, count(*) AS keys,
                         sum(memory) AS memory FROM keys WHERE instr(key_name, ':') > 0
                  GROUP BY db, prefix ORDER BY memory DESC"""
TOP_DUCKDB = """SELECT file, db, key_name, type, encoding, memory FROM '{out}/keys/part-*.parquet'
                ORDER BY memory DESC, key_name LIMIT 5"""
PREFIX_DUCKDB = """SELECT db, split_part(key_name, ':', 1) AS prefix, count(*) AS keys, sum(memory) AS memory
                   FROM '{out}/keys/part-*.parquet' WHERE contains(key_name, ':')
                   GROUP BY ALL ORDER BY memory DESC"""


@pytest.fixture(scope="module")
def analysed(spark, measured, tmp_path_factory):  # noqa: F811
    from dcpinspect.engines.spark.job import run_analysis

    root = tmp_path_factory.mktemp("spark-memory")
    files = [root / "night-1.rdb", root / "night-2.rdb"]
    for f in files:
        shutil.copy(measured[0], f)
    out = root / "tables"
    run_analysis(spark, [str(f) for f in files], str(out))
    return files, out, estimates(files[0])


def _want_prefixes(est, copies: int) -> dict:
    want: dict = defaultdict(lambda: [0, 0])
    for k, m in est.items():
        for p in usage.prefixes(k, (b":",), 1):
            want[(0, p[:-1].decode())][0] += copies
            want[(0, p[:-1].decode())][1] += m.total * copies
    return {k: tuple(v) for k, v in want.items()}


def test_keys_table_has_each_keys_memory_and_spark_sql_rolls_it_up(spark, analysed):
    files, out, est = analysed
    spark.read.parquet(str(out / "keys")).createOrReplaceTempView("keys")
    top = spark.sql(TOP_SPARK).collect()
    heaviest = sorted(est.items(), key=lambda kv: (-kv[1].total, kv[0]))
    assert [(r["key_name"], r["memory"]) for r in top][:2] == [(heaviest[0][0].decode(), heaviest[0][1].total)] * 2
    assert top[0]["encoding"] == est[heaviest[0][0]].encoding or top[0]["type"] == "zset"
    got = {(r["db"], r["prefix"]): (r["keys"], r["memory"]) for r in spark.sql(PREFIX_SPARK).collect()}
    assert got == _want_prefixes(est, 2)


def test_duckdb_gives_the_same(analysed):
    duckdb = pytest.importorskip("duckdb")
    files, out, est = analysed
    con = duckdb.connect()
    top = con.sql(TOP_DUCKDB.format(out=out)).fetchall()
    heaviest = sorted(est.items(), key=lambda kv: (-kv[1].total, kv[0]))
    assert [(r[2], r[5]) for r in top][:2] == [(heaviest[0][0].decode(), heaviest[0][1].total)] * 2
    got = {(db, p): (n, mem) for db, p, n, mem in con.sql(PREFIX_DUCKDB.format(out=out)).fetchall()}
    assert got == _want_prefixes(est, 2)


def test_values_in_the_keys_tables_json(spark, measured, tmp_path):  # noqa: F811
    """``analyze --values``: each key's line in the keys table (its ``json`` column) has the
    key's value as ``rdb --values`` gives it, and its digest as ever."""
    import json
    import subprocess

    import pyarrow.parquet as pq

    import servers
    from dcpinspect.engines.spark.job import run_analysis

    out = tmp_path / "tables"
    run_analysis(spark, [str(measured[0])], str(out), values=True)
    rows = pq.read_table(out / "keys").to_pylist()
    got = {(r["db"], r["key_name"]): json.loads(r["json"]) for r in rows}
    res = subprocess.run([*servers.dcpinspect_argv(), "rdb", "-f", "jsonl", "--values", str(measured[0])],
                         capture_output=True, text=True, timeout=300)
    want = {(o["db"], o["key"]): o for o in map(json.loads, res.stdout.splitlines()) if o["kind"] == "key"}
    assert set(got) == set(want) and len(want) > 50
    for k, o in want.items():
        assert got[k]["value"] == o["value"] and got[k]["digest"] == o["digest"], k
    assert all(r["digest"] == got[(r["db"], r["key_name"])]["digest"] for r in rows)
