"""Captures cut into byte ranges decode a server's every connection as one process does,
without ``--decode-as``: a first pass over the ranges finds the servers their connections
show speaking a family (engines/spark/servers.py), which every connection's decoder is
then told. Real captures: redis-server on a port no family owns, tcpdump started after an
inline client connected (its lines alone show nothing), the server shown by a replica's
handshake, by a client's commands, or by a replication link under way."""

from __future__ import annotations

import json
import subprocess

import pytest

import servers
from test_redis_midway_servers import INLINE, midway_capture

pytestmark = pytest.mark.spark
pytest.importorskip("pyspark")
pq = pytest.importorskip("pyarrow.parquet")

RANGE = 512  # ranges far smaller than the captures


def _table(out, name: str) -> list[dict]:
    rows = pq.read_table(out / name).to_pylist()
    return sorted(rows, key=lambda r: (r["file_index"], r["key"], r["seq"]))


def test_range_tasks_decode_a_servers_connections_as_one_process(spark, tmp_path):
    from dcpinspect.engines.spark.job import run_analysis
    from dcpinspect.engines.spark.plan import make_plan
    from dcpinspect.engines.spark.servers import range_servers

    inputs = [str(midway_capture(tmp_path / evidence, evidence)[0]) for evidence in ("replica", "client", "synced")
              if (tmp_path / evidence).mkdir() is None]
    plan = make_plan(inputs, RANGE, 2, "ranges")
    assert all(sum(r.path == path for r in plan.ranges) >= 3 for path in inputs)
    # a range alone does not show the server: the ranges after the one that does need telling
    assert any(not range_servers([r], {}) for r in plan.ranges)
    out = tmp_path / "tables"
    result = run_analysis(spark, inputs, str(out), range_size=RANGE, split="ranges")
    assert result.ranges == len(plan.ranges)
    frames, notes = _table(out, "frames"), _table(out, "notes")
    for i, path in enumerate(inputs):
        res = subprocess.run(servers.dcpinspect_argv() + ["decode", "-f", "jsonl", path], capture_output=True,
                             text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        rows = [json.loads(line) for line in res.stdout.splitlines()]
        assert not [r for r in rows if r["kind"] == "undecoded"]
        sent = [r["command"] for r in rows if r["kind"] == "frame" and r.get("type") == "inline"]
        assert sent == [want for _, want in INLINE], path  # the inline client, decoded whole
        # each connection's frames, in order; one process prints those of a connection held
        # until its server was shown when it is shown, a table row has its own record's key
        want = [(r["flow"], line) for line, r in zip(res.stdout.splitlines(), rows) if r["kind"] == "frame"]
        got = [(r["flow"], r["json"]) for r in frames if r["file_index"] == i]
        assert len(got) == len(want) and len({f for f, _ in want}) == 2, path  # the inline client and the evidence
        for flow in {f for f, _ in want}:
            assert [line for f, line in got if f == flow] == [line for f, line in want if f == flow], (path, flow)
        assert [(r["kind"], r["message"]) for r in notes if r["file_index"] == i] == [
            (r["kind"], r["message"]) for r in rows if "message" in r and r["kind"] not in ("frame", "finding")], path
