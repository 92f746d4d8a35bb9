"""``analyze`` on Spark gives the frames ``decode -f jsonl`` prints and the findings
``validate -f jsonl`` prints, on the same files: real TCP conversations written by
``dcpgen``/``synth`` (several connections interleaved a few packets at a time, violations
found while streaming and at the end of input, one connection joined mid-conversation), the
same capture cut inside a record, one long connection split into many byte ranges (pcap and
pcapng), and the shipped samples. The CLI runs as a separate process, the Spark job on the
session-wide ``local[2]`` session.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import socket
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

import dcpgen
import servers
from dcpinspect.sources.capture import read_records

pytestmark = pytest.mark.spark
pytest.importorskip("pyspark")
pq = pytest.importorskip("pyarrow.parquet")

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
RANGE = 24 * 1024  # small ranges, for the files to be split into several


#: the server port of samples/memcached-binary.pcap, which no family owns
SAMPLE_PORT = (22122, "mcbp")

@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> list[str]:
    root = tmp_path_factory.mktemp("spark-inputs")
    flows = [dcpgen.busy_collections_connection(300, seed=s).frames for s in (1, 2)]
    flows += [dcpgen.violating_connection(n).frames for n in range(3)]
    flows.append(dcpgen.mid_conversation_connection(200))
    busy = dcpgen.write_flows(flows, root / "busy.pcap", midstream=[len(flows) - 1], chunk=3)
    data = busy.read_bytes()
    (root / "cut.pcap").write_bytes(data[: len(data) * 2 // 3 + 7])
    (root / "busy.pcap.gz").write_bytes(gzip.compress(data))
    long = dcpgen.busy_collections_connection(1500, seed=7).frames + dcpgen.violating_connection(9).frames[6:]
    dcpgen.write_capture(long, root / "long.pcap", client=("10.0.0.9", 40000))
    dcpgen.write_capture(long, root / "long.pcapng", client=("10.0.0.9", 40001), fmt="pcapng")
    names = ["busy.pcap", "cut.pcap", "busy.pcap.gz", "long.pcap", "long.pcapng"]
    return [str(root / n) for n in names] + [str(SAMPLES / n) for n in
                                             ("dcp-lossy.pcapng", "memcached-binary.pcap", "dcp-session.pcap")]


@pytest.fixture(scope="module", params=["connections", "ranges"])
def analysed(request, spark, inputs, tmp_path_factory):
    """The job on every input: files read whole by parts (each task its share of the
    connections), or cut into byte ranges whose packets are shuffled to their connections."""
    from dcpinspect.engines.spark.job import run_analysis

    out = tmp_path_factory.mktemp(f"spark-out-{request.param}") / "tables"
    # the sample's server port, which no family owns, is found speaking MCBP by its connections
    # (after a shuffle, by the first pass over the ranges: docs/spark.md, How the work is split)
    result = run_analysis(spark, inputs, str(out), range_size=RANGE, split=request.param)
    return result, out, request.param


_CLI: dict = {}


def cli_once(*args) -> subprocess.CompletedProcess:
    """:func:`cli`, run once a session for the same arguments."""
    if args not in _CLI:
        _CLI[args] = cli(*args)
    return _CLI[args]


def table(out: Path, name: str) -> list[dict]:
    rows = pq.read_table(out / name).to_pylist()
    return sorted(rows, key=lambda r: (r["file_index"], r["key"], r["seq"]))


def cli(*args) -> subprocess.CompletedProcess:
    """The command, told the sample's server port (the capture shows it too: the same frames
    either way; told, each connection's rows come at their own records, as the tasks of
    ranges, told the servers by their first pass, have them)."""
    if args and args[0] in ("decode", "validate", "stats"):
        args = (*args, "--decode-as", f"{SAMPLE_PORT[0]}={SAMPLE_PORT[1]}")
    return subprocess.run(servers.dcpinspect_argv() + [*map(str, args)], capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)


def test_the_comparison_means_something(analysed, inputs):
    """Files split into parts or ranges (one connection over many ranges), errors found
    while streaming and at the end of input, a file read whole for its damage."""
    result, out, split = analysed
    from dcpinspect.engines.spark.plan import make_plan

    plan = make_plan(inputs, RANGE, 2, split)
    if split == "ranges":
        by_file = Counter(r.path for r in plan.ranges)
        assert by_file[inputs[3]] >= 4 and by_file[inputs[4]] >= 4  # the long connection's files
        assert by_file[inputs[0]] >= 2  # busy: interleaved connections over ranges
        assert not by_file[inputs[1]] and not by_file[inputs[2]]  # cut (damage) and gzip: whole
        assert result.ranges == len(plan.ranges)
    else:
        parts = {fi: parts for fi, _, _, parts in plan.tasks}
        assert parts[0] == parts[3] == parts[4] == 2 and not plan.ranges  # each read by two tasks
        assert result.tasks == len(plan.tasks)
    frames = table(out, "frames")
    assert len({r["flow"] for r in frames if r["file_index"] == 3}) == 1
    rules = Counter((r["rule"], r["severity"]) for r in table(out, "findings"))
    assert rules[("seqno-regression", "error")] >= 5 and rules[("noop-unanswered", "warning")] >= 3
    assert result.errors > 0
    assert any("left in the file" in n for _, n in result.notes)


def test_frames_are_what_decode_prints(analysed, inputs):
    _, out, _ = analysed
    frames = table(out, "frames")
    for i, path in enumerate(inputs):
        res = cli_once("decode", path, "-f", "jsonl")
        assert res.returncode == 0, res.stderr
        want = [line for line in res.stdout.splitlines() if line.startswith('{"kind":"frame"')]
        got = [r["json"] for r in frames if r["file_index"] == i]
        assert want and got == want, path


def test_frame_columns_are_the_frames_fields(analysed):
    _, out, _ = analysed
    for row in table(out, "frames")[:3000]:
        rec = json.loads(row["json"])
        assert (row["frame"], row["flow"], row["direction"], row["opcode"], row["name"], row["opaque"]) == (
            rec["frame"], rec["flow"], rec["direction"], rec["opcode"], rec["opcode_name"], rec["opaque"])
        assert row["by_seqno"] == rec["fields"].get("by_seqno") and row["findings"] == len(rec["findings"])


def test_findings_are_what_validate_prints(analysed, inputs):
    _, out, _ = analysed
    findings = table(out, "findings")
    res = cli_once("validate", *inputs, "-f", "jsonl", "--info")
    assert res.returncode == 1, res.stderr
    assert [r["json"] for r in findings] == res.stdout.splitlines()
    plain = cli_once("validate", *inputs, "-f", "jsonl")
    assert [r["json"] for r in findings if r["severity"] != "info"] == plain.stdout.splitlines()
    for row in findings:
        rec = json.loads(row["json"])
        assert (row["rule"], row["class"], row["severity"], row["frame"], row["vbucket"], row["stream_id"]) == (
            rec["rule"], rec["class"], rec["severity"], rec["frame"], rec["vbucket"], rec["stream_id"])


def test_notes_are_what_decode_notes(analysed, inputs):
    _, out, _ = analysed
    notes = table(out, "notes")
    for i, path in enumerate(inputs):
        res = cli_once("decode", path, "-f", "jsonl")
        want = [(r["kind"], r["message"], r["flow"], r["direction"])
                for r in map(json.loads, res.stdout.splitlines()) if r["kind"] not in ("frame", "finding")]
        got = [(r["kind"], r["message"], r["flow"], r["direction"]) for r in notes if r["file_index"] == i]
        assert got == want, path


def test_stats_tables_count_what_stats_counts(analysed, inputs):
    """Connections with the same addresses in several files count together, as in ``stats``.
    (Gaps are not compared: ``stats`` carries a stream's last seqno from one file into the
    next file's connection of the same addresses; analyze keeps files apart.)"""
    _, out, _ = analysed
    res = cli_once("stats", *inputs, "-f", "json")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    conns = {r["connection"]: r for r in pq.read_table(out / "connections").to_pylist()}
    assert set(conns) == set(report["connections"])
    for label, c in report["connections"].items():
        row = conns[label]
        assert (row["frames"], row["bytes"], row["findings"], row["items"]) == (
            c["frames"]["total"], c["bytes"]["total"], c["findings"], c["items"]), label
    vbs = {r["vbucket"]: r for r in pq.read_table(out / "vbuckets").to_pylist()}
    assert set(vbs) == {int(vb) for vb in report["vbuckets"]}
    for vb, v in report["vbuckets"].items():
        assert (vbs[int(vb)]["items"], vbs[int(vb)]["frames"], vbs[int(vb)]["bytes"], vbs[int(vb)]["mutations"]) == (
            v["items"], v["frames"], v["bytes"], v["mutations"]), vb


def test_duckdb_reads_the_tables(analysed):
    """The DuckDB queries of docs/spark.md, on the tables: the findings by rule, class and severity
    are the job's summary, each one's first frame is the findings table's, the largest seqno of
    each vbucket's mutations is the frames', and the unsigned columns are UBIGINT."""
    duckdb = pytest.importorskip("duckdb")
    result, out, _ = analysed
    con = duckdb.connect()
    by_rule = con.sql(f"""SELECT rule, class, severity, count(*) AS n, min(frame) AS first
                          FROM '{out}/findings/part-*.parquet' GROUP BY ALL""").fetchall()
    assert {(r, c, s): n for r, c, s, n, _ in by_rule} == result.findings
    findings = table(out, "findings")
    assert len(findings) > 10
    for rule, cls, severity, _, first in by_rule:
        frames = [f["frame"] for f in findings if (f["rule"], f["class"], f["severity"]) == (rule, cls, severity)
                  and f["frame"] is not None]
        assert first == (min(frames) if frames else None), rule
    frames = table(out, "frames")
    want: dict = {}
    for f in frames:
        if f["name"] == "DCP_MUTATION":
            want[f["vbucket"]] = max(want.get(f["vbucket"], 0), f["by_seqno"])
    got = con.sql(f"""SELECT vbucket, max(by_seqno) FROM '{out}/frames/part-*.parquet'
                      WHERE name = 'DCP_MUTATION' GROUP BY vbucket""").fetchall()
    assert dict(got) == want and len(want) > 3
    types = con.sql(f"SELECT typeof(by_seqno), typeof(cas) FROM '{out}/frames/part-*.parquet' LIMIT 1").fetchall()
    assert types == [("UBIGINT", "UBIGINT")]


def test_data_source_reads_every_record_once(spark, inputs):
    path = inputs[3]
    rows = (spark.read.format("dcpinspect").option("rangeSize", str(RANGE)).load(path)
            .select("record", "ts", "linktype", "wirelen", "data").collect())
    whole = list(read_records(path))
    assert sorted((r["record"], r["ts"], r["linktype"], r["wirelen"], bytes(r["data"])) for r in rows) == [
        (r.index, r.ts, r.linktype, r.wirelen, r.data) for r in whole]
    assert spark.read.format("dcpinspect").load(os.path.dirname(path)).select("file").distinct().count() == 5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(path: Path, text: str, proc: subprocess.Popen, seconds: float = 120) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if text in path.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    raise AssertionError(f"{path.name}: no {text!r}:\n{path.read_text(errors='replace')[-3000:]}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A standalone master and one worker (2 cores) started from the pyspark installation,
    on loopback ports that were free; ``spark://127.0.0.1:PORT``. Stopped at the end."""
    import pyspark

    home = Path(pyspark.__file__).parent
    root = tmp_path_factory.mktemp("spark-cluster")
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_WORKER_DIR": str(root / "work"), "SPARK_LOG_DIR": str(root)}
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    procs = []
    try:
        for name, args, ready in (
                ("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                            "--webui-port", str(free_port())], "I have been elected leader"),
                ("worker", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "2",
                            "--memory", "1g", "--webui-port", str(free_port()), url],
                 "Successfully registered with master")):
            log = root / f"{name}.log"
            with open(log, "wb") as f:
                procs.append(subprocess.Popen([str(home / "bin" / "spark-class"), *args], stdout=f,
                                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env))
            _wait_for(log, ready, procs[-1])
        yield url
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="module")
def held_capture(tmp_path_factory) -> str:
    """One connection whose 300 KB mutation is held, partial, past a 64 KiB cap."""
    dcp = dcpgen.Dcp().handshake()
    p = dcp.stream(vb=1)
    p.marker(1, 2)
    p.mutation(seqno=1, value=b'{"big":"' + b"x" * 300_000 + b'"}')
    p.mutation(seqno=2)
    return str(dcpgen.write_capture(dcp.frames, tmp_path_factory.mktemp("held") / "held.pcap"))


HELD_ENV = {"DCPINSPECT_MAX_HELD": "64K"}
#: what Spark's JVM writes at start-up and in its log
JAVA_NOISE = re.compile(r"WARN|log4j|SLF4J|Setting default log level|NativeCodeLoader|incubator|setLogLevel|Exception")


@pytest.mark.parametrize("split", ["connections", "ranges"])
def test_the_held_bytes_cap_in_the_tasks(spark, held_capture, tmp_path, split):
    """A connection whose partial frame outgrows the held-bytes cap: the task gives it up as
    the CLI does under the same cap (its note, the frame cut short, the frames after it).
    After a shuffle the task reads record by record, as the CLI does with
    ``DCPINSPECT_PURE=1`` (the reader that follows connections in C hands their bytes over
    a step at a time, so the cap is met a record later)."""
    from dcpinspect.engines.spark.job import run_analysis
    from dcpinspect.limits import HELD

    out = tmp_path / "t"
    cap = 64 * 1024
    run_analysis(spark, [held_capture], str(out), range_size=RANGE, split=split,
                 limits=dict(max_held=cap, max_flows=100_000))
    dec = subprocess.run(servers.dcpinspect_argv() + ["decode", held_capture, "-f", "jsonl"], capture_output=True,
                         text=True, env={**os.environ, HELD.env: str(cap),
                                         **({"DCPINSPECT_PURE": "1"} if split == "ranges" else {})})
    lines = [(line, json.loads(line)) for line in dec.stdout.splitlines()]
    assert [r["json"] for r in table(out, "frames")] == [line for line, rec in lines if rec["kind"] == "frame"]
    notes = [r["message"] for r in table(out, "notes")]
    assert notes == [rec["message"] for _, rec in lines if rec["kind"] not in ("frame", "finding")]
    assert any("held bytes over the cap" in n and HELD.env in n for n in notes)
    assert any(json.loads(r["json"])["truncated"] for r in table(out, "frames"))
    uncapped = run_analysis(spark, [held_capture], str(tmp_path / "u"), range_size=RANGE, split=split)
    assert not uncapped.notes and not [r for r in table(tmp_path / "u", "notes")]


def test_same_tables_on_a_standalone_cluster(cluster, inputs, held_capture, tmp_path):
    """The command against a real master and worker (whose processes were started without
    the caps' variables: the job hands them to its executors): the frames and notes
    ``decode`` prints and the findings ``validate`` prints with the same caps, one of them
    cutting a connection's held frame; its exit code, summary, and no line of Java's on
    stderr."""
    out = tmp_path / "t"
    files = [*inputs, held_capture]
    env = {**os.environ, **HELD_ENV}
    res = subprocess.run(servers.dcpinspect_argv() + [
        "analyze", *files, "--out", str(out), "--master", cluster, "--range-size", str(RANGE),
        "--spark-conf", "spark.sql.shuffle.partitions=4"], capture_output=True, text=True, timeout=600,
        stdin=subprocess.DEVNULL, env=env)
    assert res.returncode == 1, res.stderr
    assert "seqno-regression" in res.stdout and f"{len(files)} files" in res.stdout
    assert not JAVA_NOISE.search(res.stderr), res.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "connections", "findings", "frames", "notes", "report.json", "vbuckets"]
    frames, notes = table(out, "frames"), table(out, "notes")
    for i, path in enumerate(files):
        dec = subprocess.run(servers.dcpinspect_argv() + ["decode", path, "-f", "jsonl"], capture_output=True,
                             text=True, env=env)
        lines = [json.loads(line) for line in dec.stdout.splitlines()]
        assert [r["json"] for r in frames if r["file_index"] == i] == [
            line for line, rec in zip(dec.stdout.splitlines(), lines) if rec["kind"] == "frame"], path
        assert [(r["kind"], r["message"]) for r in notes if r["file_index"] == i] == [
            (rec["kind"], rec["message"]) for rec in lines if rec["kind"] not in ("frame", "finding")], path
    held = [r["message"] for r in notes if r["file_index"] == len(inputs)]
    assert any("held bytes over the cap" in m for m in held)
    val = subprocess.run(servers.dcpinspect_argv() + ["validate", *files, "-f", "jsonl", "--info"],
                         capture_output=True, text=True, env=env)
    assert [r["json"] for r in table(out, "findings")] == val.stdout.splitlines()


def test_a_failed_task_is_one_line(spark, inputs, tmp_path):
    """What a task raises (here: --out is a file, where its tables cannot go) ends the run
    with one line naming the error, not a JVM stack."""
    from dcpinspect.engines.inputs import Unusable
    from dcpinspect.engines.spark.job import run_analysis

    out = tmp_path / "a-file"
    out.write_text("")
    with pytest.raises(Unusable) as err:
        run_analysis(spark, [inputs[5]], str(out))
    text = str(err.value)
    assert text.startswith("the Spark job failed: ") and "Error" in text and "\n" not in text
    assert "dcpinspect-spark" in text and len(text) < 600


def test_command_exit_codes(inputs, tmp_path):
    bad = cli("analyze", inputs[0], "--out", tmp_path / "u", "--spark-conf", "nonsense")
    assert bad.returncode == 2
    nojava = subprocess.run(servers.dcpinspect_argv() + ["analyze", inputs[0], "--out", str(tmp_path / "v")],
                            capture_output=True, text=True, env={**os.environ, "JAVA_HOME": str(tmp_path)})
    assert nojava.returncode == 2 and "openjdk-17-jre-headless" in nojava.stderr
    assert len(nojava.stderr.strip().splitlines()) == 1
