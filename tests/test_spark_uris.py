"""``analyze`` on files named by URI: an S3 server (moto's, from PyPI, on a free loopback
port) holding captures and an RDB file, read through ``s3a://`` and ``s3://`` URIs (a
prefix, a glob, and byte ranges of a file split by ranges), and ``file://`` URIs of a
local directory. The frames are those ``decode -f jsonl`` prints of local copies of the
same files; the tables name the files without the credentials their URIs carry."""

from __future__ import annotations

import json
import logging
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

import dcpgen
import servers
from corpus import corpus

pytestmark = pytest.mark.spark
pytest.importorskip("pyspark")
pq = pytest.importorskip("pyarrow.parquet")
moto_server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
RDB = corpus("rdb-librdb") / "hash_zl_v6.rdb"
KEY, SECRET, BUCKET = "testing", "testing-secret", "captures"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def local(tmp_path_factory) -> Path:
    """The files, locally: two captures of several connections, a sample, an RDB file."""
    root = tmp_path_factory.mktemp("uri-files")
    flows = [dcpgen.busy_collections_connection(300, seed=s).frames for s in (4, 5)]
    flows.append(dcpgen.violating_connection(1).frames)
    dcpgen.write_flows(flows, root / "a-busy.pcap", chunk=3)
    long = dcpgen.busy_collections_connection(800, seed=6).frames
    dcpgen.write_capture(long, root / "b-long.pcap", client=("10.0.0.9", 40100))
    shutil.copy(SAMPLES / "dcp-session.pcap", root / "c-session.pcap")
    shutil.copy(RDB, root / "d-hash.rdb")
    (root / "notes.txt").write_text("not a capture")
    return root


@pytest.fixture(scope="module")
def s3(local):
    """A moto S3 server on loopback with the files under ``run/``; its endpoint as a URI query."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        client = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", aws_access_key_id=KEY,
                              aws_secret_access_key=SECRET, region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        for path in sorted(local.iterdir()):
            client.put_object(Bucket=BUCKET, Key=f"run/{path.name}", Body=path.read_bytes())
        yield f"endpoint_override=127.0.0.1:{port}&scheme=http"
    finally:
        server.stop()


def decode_frames(path: Path) -> list[str]:
    res = subprocess.run(servers.dcpinspect_argv() + ["decode", str(path), "-f", "jsonl"], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return [line for line in res.stdout.splitlines() if json.loads(line)["kind"] == "frame"]


def frames_by_file(out: Path | str, filesystem=None) -> dict[int, list[str]]:
    """The frames table's lines by file index, in the CLI's order (``out`` a directory, or a
    path of ``filesystem``)."""
    rows = sorted(pq.read_table(f"{out}/frames", filesystem=filesystem).to_pylist(),
                  key=lambda r: (r["file_index"], r["key"], r["seq"]))
    got: dict[int, list[str]] = {}
    for r in rows:
        got.setdefault(r["file_index"], []).append(r["json"])
    return got


def test_s3a_prefix_reads_every_capture_and_snapshot(spark, local, s3, tmp_path):
    from dcpinspect.engines.spark.job import run_analysis

    uri = f"s3a://{KEY}:{SECRET}@{BUCKET}/run/?{s3}"
    result = run_analysis(spark, [uri], str(tmp_path / "t"))
    names = [p.name for p in sorted(local.iterdir()) if p.suffix in (".pcap", ".rdb")]
    assert [f.rsplit("/", 1)[1].split("?")[0] for f in result.files] == names  # not notes.txt
    assert all(SECRET not in f and f.startswith(f"s3a://{BUCKET}/run/") for f in result.files)
    got = frames_by_file(tmp_path / "t")
    for i, f in enumerate(result.files):
        name = f.rsplit("/", 1)[1].split("?")[0]
        if name.endswith(".pcap"):
            assert got[i] == decode_frames(local / name), name
    keys = pq.read_table(tmp_path / "t" / "keys").to_pylist()
    assert keys and {k["file"] for k in keys} == {f for f in result.files if ".rdb" in f}
    findings = pq.read_table(tmp_path / "t" / "findings").to_pylist()
    assert findings and all(SECRET not in r["file"] and SECRET not in r["json"] for r in findings)


def test_s3_glob_and_byte_ranges(spark, local, s3, tmp_path):
    """A glob of ``s3://`` names, the long file cut into byte ranges read with ranged reads."""
    from dcpinspect.engines.spark.job import run_analysis
    from dcpinspect.engines.spark.plan import make_plan

    uri = f"s3://{KEY}:{SECRET}@{BUCKET}/run/*.pcap?{s3}"
    plan = make_plan([uri], 16 * 1024, 2, "ranges")
    assert len(plan.files) == 3 and len({r.path for r in plan.ranges}) >= 1
    assert sum(1 for r in plan.ranges if "b-long" in r.path) >= 4
    result = run_analysis(spark, [uri], str(tmp_path / "t"), range_size=16 * 1024, split="ranges")
    got = frames_by_file(tmp_path / "t")
    for i, f in enumerate(result.files):
        name = f.rsplit("/", 1)[1].split("?")[0]
        assert got[i] == decode_frames(local / name), name


def test_file_uris(spark, local, tmp_path):
    from dcpinspect.engines.spark.job import run_analysis

    result = run_analysis(spark, [f"file://{local}", f"file://{local}/b-*.pcap"], str(tmp_path / "t"))
    assert [f.rsplit("/", 1)[1] for f in result.files] == [
        *[p.name for p in sorted(local.iterdir()) if p.suffix in (".pcap", ".rdb")], "b-long.pcap"]
    got = frames_by_file(tmp_path / "t")
    long = decode_frames(local / "b-long.pcap")
    assert got[1] == got[len(result.files) - 1] == long  # named by the directory, and by the glob


def test_a_uri_that_names_nothing(spark, s3, tmp_path):
    from dcpinspect.engines.inputs import Unusable
    from dcpinspect.engines.spark.job import run_analysis

    with pytest.raises(Unusable) as err:
        run_analysis(spark, [f"s3://{KEY}:{SECRET}@{BUCKET}/run/missing.pcap?{s3}"], str(tmp_path / "t"))
    assert "missing.pcap" in str(err.value) and SECRET not in str(err.value)


def test_uri_names():
    from dcpinspect.sources.uris import ALIASES, is_uri, locate, shown

    assert is_uri("s3a://b/k") and is_uri("file:///x") and not is_uri("/x/y") and not is_uri("c:\\x")
    assert ALIASES["s3a"] == "s3"
    assert shown("s3a://k:s@b/x.pcap?scheme=http") == "s3a://b/x.pcap?scheme=http"
    fs, path = locate("file:///tmp/some/file.pcap")
    assert path == "/tmp/some/file.pcap" and fs.type_name == "local"


def test_s3_out_keeps_the_endpoint_and_reaches_the_server(spark, local, s3, tmp_path):
    """``--out`` an ``s3://`` URI whose query names the endpoint: each table's files go under
    its path, the query kept (it once became part of the last table's name). moto's S3
    server does not complete the multipart uploads pyarrow writes every file with (even a
    small one; boto3's own complete there): the run ends on that error, which this test
    tells apart, after the server has the tables' parts begun under their names."""
    from dcpinspect.engines.spark.job import run_analysis

    prefix = f"out-{tmp_path.name}"
    out = f"s3://{KEY}:{SECRET}@{BUCKET}/{prefix}?{s3}"
    try:
        run_analysis(spark, [str(local / "c-session.pcap")], out)
    except Exception as exc:  # noqa: BLE001 - the job's error, as Spark hands it back
        if "CompleteMultipartUpload" not in str(exc):
            raise
        port = s3.split("127.0.0.1:")[1].split("&")[0]
        client = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", aws_access_key_id=KEY,
                              aws_secret_access_key=SECRET, region_name="us-east-1")
        keys = [o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix=prefix + "/").get("Contents", [])]
        assert keys and {k.split("/")[1] for k in keys} <= {"frames", "findings", "keys"}, keys
        pytest.xfail("moto's S3 server does not complete pyarrow's multipart uploads")
    from dcpinspect.sources.uris import locate

    assert frames_by_file(*reversed(locate(out)))[0] == decode_frames(local / "c-session.pcap")
