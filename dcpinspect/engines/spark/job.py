"""The ``analyze`` command: captures through Spark into Parquet tables, with the CLI's
decoder and validator a connection at a time.

1. Plan: the files (globs, directories) and their ranges (``sources/ranges.py``; the pieces
   of large uncompressed files are walked by a first, small Spark job).
2. Read with the ``dcpinspect`` data source: a task a range; a row a packet.
3. Repartition by (file, connection) and sort within partitions by (file, connection,
   record): Spark's sort spills to disk, so a connection of any size streams through.
4. ``mapInArrow`` runs :func:`.partition.decode_batches` over each partition's sorted rows:
   frames, findings, notes, and the partition's statistics collector.
5. The rows are kept on disk once, split into tables and written as Parquet; the driver
   merges the collectors and writes the per-connection and per-vbucket tables.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...messages.frame import DecodeContext
from ...sessions.stats import StatsCollector
from ...sources.capture import CaptureError
from ...sources.ranges import RANGE_SIZE
from ..inputs import Unusable
from .partition import OUT_DDL, decode_batches

FRAME_COLUMNS = ("file", "file_index", "key", "seq", "frame", "ts", "flow", "direction", "magic", "opcode", "name",
                 "status", "vbucket", "opaque", "cas", "stream_id", "collection_id", "doc_key", "by_seqno",
                 "rev_seqno", "start_seqno", "end_seqno", "length", "truncated", "findings", "json")
FINDING_COLUMNS = ("file", "file_index", "key", "seq", "frame", "ts", "flow", "direction", "name AS opcode_name",
                   "vbucket", "stream_id", "rule", "class", "severity", "message", "related_frame", "json")
NOTE_COLUMNS = ("file", "file_index", "key", "seq", "ts", "flow", "direction", "kind", "message", "length")


@dataclass
class Analysis:
    """What a run found: frames decoded, findings by (rule, class, severity), the capture
    notes, the files and how many ranges they were read in, the merged statistics."""

    frames: int = 0
    findings: dict[tuple[str, str, str], int] = field(default_factory=dict)
    notes: list[tuple[str, str]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    ranges: int = 0
    stats: StatsCollector | None = None
    seconds: float = 0.0

    @property
    def errors(self) -> int:
        return sum(n for (_, _, severity), n in self.findings.items() if severity == "error")


def run_analysis(spark, paths: list[str], out: str, range_size: int = RANGE_SIZE, ports=(),
                 collections: bool | None = None, partitions: int | None = None) -> Analysis:
    """Analyse ``paths`` on ``spark`` into Parquet tables under ``out``. Raises
    :class:`Unusable` for no files, or a file that cannot be read or is no capture."""
    from pyspark import StorageLevel

    from .source import expand, plan_files, plan_json

    began = time.monotonic()
    files = [os.path.abspath(p) for p in expand([str(p) for p in paths])]
    if not files:
        raise Unusable("no capture file found in " + ", ".join(map(str, paths)))
    try:
        plan = plan_files(files, range_size, spark.sparkContext)
    except CaptureError as exc:
        raise Unusable(str(exc)) from None
    packets = (spark.read.format("dcpinspect").option("plan", plan_json(files, plan)).load()
               .where("conn IS NOT NULL OR problem IS NOT NULL"))
    n = partitions or 2 * spark.sparkContext.defaultParallelism
    ordered = packets.repartition(n, "file_index", "conn").sortWithinPartitions("file_index", "conn", "record")
    kw = dict(ports=set(ports), collections=collections, base=DecodeContext(detail=False))
    names = list(files)

    def decode(batches):
        yield from decode_batches(batches, names, kw)

    rows = ordered.mapInArrow(decode, OUT_DDL).persist(StorageLevel.DISK_ONLY)
    try:
        result = Analysis(files=files, ranges=len(plan))
        for rec in rows.where("table = 'finding'").groupBy("rule", "class", "severity").count().collect():
            result.findings[(rec["rule"], rec["class"], rec["severity"])] = rec["count"]
        result.frames = rows.where("table = 'frame'").count()
        result.notes = [(r["file"], r["message"]) for r in
                        rows.where("table = 'note' AND kind = 'capture'").orderBy("file_index", "key", "seq")
                        .select("file", "message").limit(1000).collect()]
        stats = StatsCollector()
        for rec in rows.where("table = 'stats'").select("blob").collect():
            import pickle

            stats.merge(pickle.loads(rec["blob"]))
        result.stats = stats
        _write(spark, rows, out, stats)
    finally:
        rows.unpersist()
    result.seconds = time.monotonic() - began
    return result


def _write(spark, rows, out: str, stats: StatsCollector) -> None:
    """The tables under ``out``: frames, findings, notes, connections, vbuckets; and the
    statistics report as report.json."""
    for name, table, cols in (("frames", "frame", FRAME_COLUMNS), ("findings", "finding", FINDING_COLUMNS),
                              ("notes", "note", NOTE_COLUMNS)):
        rows.where(f"table = '{table}'").selectExpr(*cols).write.mode("overwrite").parquet(os.path.join(out, name))
    report = stats.report()
    conns = [_connection_row(label, c) for label, c in report["connections"].items()]
    vbs = [_vbucket_row(int(vb), v) for vb, v in report["vbuckets"].items()]
    spark.createDataFrame(conns, CONNECTION_DDL).write.mode("overwrite").parquet(os.path.join(out, "connections"))
    spark.createDataFrame(vbs, VBUCKET_DDL).write.mode("overwrite").parquet(os.path.join(out, "vbuckets"))
    Path(out, "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n")


CONNECTION_DDL = ("connection string, frames bigint, frames_c2s bigint, frames_s2c bigint, bytes bigint, "
                  "bytes_c2s bigint, bytes_s2c bigint, first_ts double, last_ts double, duration double, "
                  "items bigint, streams bigint, capture_gaps bigint, lost_bytes bigint, skipped_bytes bigint, "
                  "findings bigint, json string")
VBUCKET_DDL = ("vbucket int, connections bigint, streams bigint, items bigint, mutations bigint, "
               "deletions bigint, expirations bigint, snapshots bigint, seqno_first bigint, seqno_last bigint, "
               "seqno_min bigint, seqno_max bigint, gaps bigint, gap_missing bigint, backwards bigint, "
               "frames bigint, bytes bigint, json string")


def _connection_row(label: str, c: dict) -> tuple:
    return (label, c["frames"]["total"], c["frames"]["c2s"], c["frames"]["s2c"], c["bytes"]["total"],
            c["bytes"]["c2s"], c["bytes"]["s2c"], c["first_ts"], c["last_ts"], c["duration"], c["items"],
            c["streams"], c["capture_gaps"], c["lost_bytes"], c["skipped_bytes"], c["findings"],
            json.dumps(c, default=str))


def _vbucket_row(vb: int, v: dict) -> tuple:
    seq, gaps = v["seqno"], v["gaps"]
    return (vb, v["connections"], v["streams"], v["items"], v["mutations"], v["deletions"], v["expirations"],
            v["snapshots"]["count"], _big(seq["first"]), _big(seq["last"]), _big(seq["min"]), _big(seq["max"]),
            gaps["count"], _big(gaps["missing"]), gaps["backwards"], v["frames"], v["bytes"], json.dumps(v, default=str))


def _big(value):
    """A seqno as a bigint column takes it (None past 2**63: the JSON column keeps it)."""
    return value if isinstance(value, int) and -(1 << 63) <= value < (1 << 63) else None


class Progress:
    """Stages and tasks done on stderr while a job runs, when stderr is a terminal."""

    def __init__(self, sc) -> None:
        self.sc = sc
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True) if sys.stderr.isatty() else None

    def __enter__(self) -> "Progress":
        if self.thread is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.thread is not None:
            self.stop.set()
            self.thread.join()
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()

    def _run(self) -> None:
        tracker = self.sc.statusTracker()
        while not self.stop.wait(0.5):
            try:
                stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            except Exception:  # noqa: BLE001 - the context is stopping
                return
            text = "  ".join(f"stage {s.stageId}: {s.numCompletedTasks}/{s.numTasks} tasks"
                             for s in stages if s is not None)
            sys.stderr.write("\r\033[K" + (text or "working…")[:200])
            sys.stderr.flush()


def analyze_paths(paths: list[str], out: str, master: str | None = None, conf: list[str] = (),
                  range_size: int = RANGE_SIZE, ports=(), collections: bool | None = None) -> bool:
    """The ``analyze`` command: run, print the summary of findings by rule and class, and
    return whether one is an error (what cannot be used raises :class:`Unusable`)."""
    from ...outputs.console import make_console
    from ...outputs.escape import safe
    from .session import make_session

    settings = {}
    for item in conf:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise Unusable(f"--spark-conf {item!r}: expected KEY=VALUE")
        settings[key] = value
    try:
        spark = make_session(master, settings)
    except RuntimeError as exc:
        raise Unusable(str(exc)) from None
    with Progress(spark.sparkContext):
        result = run_analysis(spark, paths, out, range_size, ports, collections)
    err = make_console(stderr=True)
    for path, note in result.notes:
        err.print(safe(f"note: {path}: {note}"), markup=False)
    console = make_console()
    from ...outputs.rows import print_rows

    if result.findings:
        rows = sorted(result.findings.items(), key=lambda kv: (-kv[1], kv[0]))
        print_rows(console, ("rule", "class", "severity", "count"),
                   ((safe(r), safe(c), s, str(n)) for (r, c, s), n in rows))
    console.print(f"{result.frames} frames from {len(result.files)} files ({result.ranges} ranges) in "
                  f"{result.seconds:.1f}s: {result.errors} errors, "
                  f"{sum(result.findings.values()) - result.errors} other findings; tables in {safe(out)}")
    if result.frames == 0:
        raise Unusable("no MCBP frame found in the input")
    return result.errors > 0
