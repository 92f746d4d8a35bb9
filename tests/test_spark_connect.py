"""``analyze --remote sc://HOST:PORT``: a Spark Connect server started from the pyspark
installation (``spark-submit --class ...SparkConnectServer`` with the connect jar pyspark
ships) on a free loopback port; the command, a client without a JVM of its own, registers
the data source there and runs the same job: the frames ``decode -f jsonl`` prints, the
findings ``validate -f jsonl --info`` prints, its exit code."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

import servers

pytestmark = pytest.mark.spark
pyspark = pytest.importorskip("pyspark")
pytest.importorskip("grpc")  # Spark Connect's client (the spark extra)
pq = pytest.importorskip("pyarrow.parquet")

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
FILES = [SAMPLES / "dcp-session.pcap", SAMPLES / "dcp-lossy.pcapng", SAMPLES / "tap-backfill.pcap"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    """A Spark Connect server (local[2]) on loopback; ``sc://127.0.0.1:PORT``. Stopped at the end."""
    from dcpinspect.engines.spark.session import LOG4J, java_problem

    problem = java_problem()
    if problem:
        pytest.skip(problem)
    home = Path(pyspark.__file__).parent
    jars = sorted((home / "jars").glob("spark-connect_*.jar"))
    if not jars:
        pytest.skip("no spark-connect jar in the pyspark installation")
    port = free_port()
    log = tmp_path_factory.mktemp("connect") / "server.log"
    cmd = [str(home / "bin" / "spark-submit"), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
           "--master", "local[2]", "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
           "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", f"spark.pyspark.python={os.sys.executable}",
           "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=4",
           "--driver-java-options", f"-Dlog4j.configurationFile=file:{LOG4J}", str(jars[0])]
    with open(log, "wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, "SPARK_HOME": str(home)})
    try:
        end = time.monotonic() + 120
        while time.monotonic() < end:
            if proc.poll() is not None:
                raise AssertionError(f"the Connect server ended:\n{log.read_text(errors='replace')[-3000:]}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.5)
        else:
            raise AssertionError(f"no Connect server on {port}:\n{log.read_text(errors='replace')[-3000:]}")
        yield f"sc://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run(servers.dcpinspect_argv() + [*map(str, args)], capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)


def test_analyze_over_spark_connect(connect_server, tmp_path):
    out = tmp_path / "t"
    res = cli("analyze", *FILES, "--out", out, "--remote", connect_server)
    assert res.returncode == 1, res.stderr  # the TAP sample has an error finding
    assert f"{len(FILES)} files" in res.stdout and "tap-ack-unanswered" in res.stdout
    frames = sorted(pq.read_table(out / "frames").to_pylist(), key=lambda r: (r["file_index"], r["key"], r["seq"]))
    for i, path in enumerate(FILES):
        dec = cli("decode", path, "-f", "jsonl")
        want = [line for line in dec.stdout.splitlines() if json.loads(line)["kind"] == "frame"]
        assert [r["json"] for r in frames if r["file_index"] == i] == want, path
    findings = sorted(pq.read_table(out / "findings").to_pylist(), key=lambda r: (r["file_index"], r["key"], r["seq"]))
    val = cli("validate", *FILES, "-f", "jsonl", "--info")
    assert [r["json"] for r in findings] == val.stdout.splitlines()
    assert json.loads((out / "report.json").read_text())["connections"]


def test_the_data_source_over_spark_connect(connect_server):
    """Registered from a client (a process of its own: a Connect session changes pyspark's
    mode for the whole process), read on the server."""
    from dcpinspect.sources.capture import read_records

    code = ("import json, sys\n"
            "from dcpinspect.engines.spark.session import make_session\n"
            "spark = make_session(remote=sys.argv[1])\n"
            "rows = spark.read.format('dcpinspect').load(sys.argv[2]).select('record', 'wirelen').collect()\n"
            "print(json.dumps(sorted((r['record'], r['wirelen']) for r in rows)))\n")
    res = subprocess.run([os.sys.executable, "-c", code, connect_server, str(FILES[0])], capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [[r.index, r.wirelen] for r in read_records(FILES[0])]


def test_an_unreachable_connect_server(tmp_path):
    res = cli("analyze", FILES[0], "--out", tmp_path / "t", "--remote", f"sc://127.0.0.1:{free_port()}")
    assert res.returncode == 2 and "Spark Connect server" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
