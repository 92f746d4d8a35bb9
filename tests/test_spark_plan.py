"""How ``analyze`` cuts its input into tasks (no Spark needed): parts of files by
connections, finer when there are fewer files than cores to fill, byte ranges past the
rereading limit, RDB files whole, the largest shares first, and files found by content."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

import dcpgen

pytest.importorskip("pyspark")

from dcpinspect.engines.spark.plan import CAPTURE, MAX_REREADS, MIN_SHARE, SNAPSHOT, expand, kind_of, make_plan  # noqa: E402
from dcpinspect.sources.capture import CaptureError  # noqa: E402
from corpus import corpus

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
RDB = corpus("rdb-librdb") / "hash_zl_v6.rdb"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("plan")
    long = dcpgen.busy_collections_connection(800, seed=2).frames
    out = {"long": dcpgen.write_capture(long, root / "long.pcap")}
    out["gz"] = root / "long.pcap.gz"
    out["gz"].write_bytes(gzip.compress(out["long"].read_bytes()))
    out["small"] = root / "small.pcap"
    shutil.copy(SAMPLES / "dcp-session.pcap", out["small"])
    out["rdb"] = root / "sub" / "dump.rdb"
    out["rdb"].parent.mkdir()
    shutil.copy(RDB, out["rdb"])
    (root / "sub" / "readme.txt").parent.mkdir(exist_ok=True)
    (root / "sub" / "readme.txt").write_text("neither")
    return out


def test_parts_by_connections(files):
    size = files["long"].stat().st_size
    plan = make_plan([str(files["long"]), str(files["small"])], range_size=size // 3, parallelism=4)
    parts = sorted((t[0], t[2], t[3]) for t in plan.tasks)
    assert parts == [(0, 0, 3), (0, 1, 3), (0, 2, 3), (1, 0, 1)] and not plan.ranges
    assert plan.tasks[0][0] == 0 and plan.tasks[-1][0] == 1  # the largest shares first
    assert sum(plan.share(t) for t in plan.tasks) == sum(plan.sizes)
    assert make_plan([str(files["long"])], range_size=size // 3, parallelism=2).tasks == [
        (0, CAPTURE, 0, 2), (0, CAPTURE, 1, 2)]  # no more parts than cores


def test_few_files_are_cut_finer(files, tmp_path):
    """Fewer files than twice the cores: a part per MIN_SHARE bytes; else a part per range."""
    big = tmp_path / "big.pcap"
    with open(big, "wb") as f:  # a capture of 3 × MIN_SHARE bytes (its content does not matter here)
        f.write(files["long"].read_bytes()[:24])
        f.truncate(3 * MIN_SHARE)
    assert len(make_plan([str(big)], parallelism=8).tasks) == 3
    many = [str(big)] * 16
    assert len(make_plan(many, parallelism=8).tasks) == 16  # 16 files ≥ 2 × 8 cores: one task a file


def test_ranges_past_the_rereading_limit(files):
    size = files["long"].stat().st_size
    cores = MAX_REREADS + 4
    plan = make_plan([str(files["long"]), str(files["gz"])], range_size=size // 10, parallelism=cores)
    assert {r.path for r in plan.ranges} == {str(files["long"])} and len(plan.ranges) >= 9
    # gzip cannot be entered in the middle: read by parts of connections
    assert {t[0] for t in plan.tasks} == {1}
    ranged = make_plan([str(files["long"])], range_size=size // 3, parallelism=2, split="ranges")
    assert len(ranged.ranges) == 3 and not ranged.tasks
    connections = make_plan([str(files["long"])], range_size=size // 10, parallelism=cores, split="connections")
    assert not connections.ranges and len(connections.tasks) == -(-size // (size // 10))


def test_inputs_by_content(files):
    root = files["long"].parent
    found = expand([str(root)])
    names = sorted(Path(f).name for f in found)
    assert names == sorted(["long.pcap", "long.pcap.gz", "small.pcap", *(["dump.rdb"] if "rdb" in files else [])])
    if "rdb" in files:
        assert kind_of(str(files["rdb"])) == SNAPSHOT
        plan = make_plan([str(files["rdb"])], parallelism=4)
        assert plan.tasks == [(0, SNAPSHOT, 0, 1)]
    assert kind_of(str(files["gz"])) == CAPTURE and kind_of(str(root / "sub" / "readme.txt")) is None
    with pytest.raises(CaptureError, match="neither a capture"):
        make_plan([str(root / "sub" / "readme.txt")])
    with pytest.raises(CaptureError, match="cannot read"):
        make_plan([str(root / "missing.pcap")])
