"""The Spark SQL join (docs/spark.md) of two snapshots' key tables (``analyze`` of two dumps a real
redis-server wrote, before and after known changes) finds what ``dcpinspect diff`` finds."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

import servers

pytestmark = pytest.mark.spark

TOP = Path(__file__).resolve().parent.parent
SAMPLES = TOP / "samples"


def documented_join() -> str:
    text = (TOP / "docs" / "spark.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "FULL OUTER JOIN" in b]
    return block


def test_the_documented_join_is_what_diff_says(spark, tmp_path):
    from dcpinspect.engines.spark.job import run_analysis

    a, b = SAMPLES / "redis-dump.rdb", SAMPLES / "redis-dump-later.rdb"
    run_analysis(spark, [str(a)], str(tmp_path / "a"))
    run_analysis(spark, [str(b)], str(tmp_path / "b"))
    code = documented_join().replace("/tmp/snap-a", str(tmp_path / "a")).replace("/tmp/snap-b", str(tmp_path / "b"))
    code = code.replace("changes.show()", "")
    scope: dict = {}
    exec(code, scope)
    got = {(r["db"], r["key"], r["change"]) for r in scope["changes"].collect()}
    res = subprocess.run([*servers.dcpinspect_argv(), "diff", "-f", "jsonl", str(a), str(b)], capture_output=True,
                         text=True, timeout=120, stdin=subprocess.DEVNULL)
    want = {(r["db"], r["key"], r["changes"][0]) for r in map(json.loads, res.stdout.splitlines())
            if r["kind"] == "diff"}
    assert got == want and len(want) == 4
