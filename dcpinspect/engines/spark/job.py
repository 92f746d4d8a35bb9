"""The ``analyze`` command: captures and snapshot files through Spark into Parquet tables,
with the CLI's decoder and validator.

1. Plan (:mod:`.plan`): the files (paths, globs, directories, URIs) and the tasks. A capture
   is read by ``parts`` tasks, each decoding the connections dealt to its part (as
   ``--jobs`` workers do: no shuffle); or, when a file is too large to be read once per
   task (``--split ranges``, or ``auto`` past :data:`~.plan.MAX_REREADS` parts), by byte
   ranges whose packets are shuffled to their connections. A snapshot file is one task.
2. The tasks' rows (:mod:`.partition`): every line ``decode -f jsonl`` and every finding
   ``validate -f jsonl --info`` would print, and each task's statistics. Kept on disk once.
3. The driver merges the statistics (and the correlators of files read in several parts,
   whose conclusions are rows of their own), and Spark writes each table (:mod:`.tables`)
   with its columns taken from the rows' JSON.
"""

from __future__ import annotations

import json
import os
import pickle
import time
from collections import Counter
from dataclasses import dataclass, field

from ...messages.frame import DecodeContext
from ...sessions.stats import StatsCollector
from ...sources.capture import CaptureError
from ...sources.ranges import RANGE_SIZE
from ...sources.uris import UriError, is_uri
from ..capture import concluded, merge_correlators
from ..files import CONCLUDED_KEY
from ..inputs import Unusable
from .partition import OUT_DDL, Output, decode_batches, part_batches
from .plan import Plan, make_plan
from .progress import Progress
from .tables import specs


@dataclass
class Analysis:
    """What a run found: frames decoded, findings by (rule, class, severity), the capture
    notes, the files and tasks, the merged statistics, what each table holds, and the
    seconds of each phase (``plan``, ``job``: decoding and writing)."""

    frames: int = 0
    findings: dict[tuple[str, str, str], int] = field(default_factory=dict)
    notes: list[tuple[str, str]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    tasks: int = 0
    ranges: int = 0
    stats: StatsCollector | None = None
    tables: list[str] = field(default_factory=list)
    records: int = 0
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def errors(self) -> int:
        return sum(n for (_, _, severity), n in self.findings.items() if severity == "error")


def run_analysis(spark, paths: list[str], out: str, range_size: int = RANGE_SIZE, ports=(),
                 collections: bool | None = None, split: str = "auto", progress: Progress | None = None,
                 limits: dict | None = None) -> Analysis:
    """Analyse ``paths`` on ``spark`` into Parquet tables under ``out``. Raises
    :class:`Unusable` for no files, or a file that cannot be read or is neither a capture
    nor a snapshot file. ``limits``: the caps a decoder takes (``max_held``, ``max_flows``)."""
    from pyspark import StorageLevel

    began = time.monotonic()
    sc = _context(spark)
    parallelism = sc.defaultParallelism if sc is not None else int(
        spark.conf.get("spark.default.parallelism", "2"))
    try:
        plan = make_plan([str(p) for p in paths], range_size, parallelism, split, sc)
    except (CaptureError, UriError, OSError) as exc:
        raise Unusable(str(exc)) from None
    if not plan.files:
        raise Unusable("no capture or snapshot file found in " + ", ".join(map(str, paths)))
    result = Analysis(files=plan.files, tasks=len(plan.tasks) + len(plan.ranges), ranges=len(plan.ranges))
    if progress is not None:
        progress.total = sum(plan.sizes)
    result.phases["plan"] = time.monotonic() - began
    kw = dict(ports=set(ports), collections=collections, base=DecodeContext(detail=False), **(limits or {}))
    rows = _rows(spark, plan, kw, progress)
    rows = rows.persist(StorageLevel.DISK_ONLY)
    try:
        states = [pickle.loads(r["blob"]) for r in rows.where("table = 'state'").select("blob").collect()]
        driver = Output(plan.files)
        _conclude(states, driver)
        merged = _merge(states, driver, result)
        extra = None
        if len(driver.rows):
            extra = _dataframe(spark, driver.rows.batch())
        table_rows = rows.where("table <> 'state'")
        if extra is not None:
            table_rows = table_rows.unionByName(extra)
        _write(spark, table_rows, plan.files, out, merged, result)
    finally:
        rows.unpersist()
    result.stats = merged["stats"]
    result.seconds = time.monotonic() - began
    result.phases["job"] = result.seconds - result.phases["plan"]
    return result


def _context(spark):
    """The SparkContext, or None over Spark Connect (which has none)."""
    try:
        return spark.sparkContext
    except Exception:  # noqa: BLE001 - Connect sessions raise on it
        return None


def _rows(spark, plan: Plan, kw: dict, progress: Progress | None):
    """The tasks' output rows: a DataFrame of :data:`~.partition.OUT_DDL`."""
    files, tasks = plan.files, plan.tasks
    add = progress.accumulator() if progress is not None else None
    frames = []
    if tasks:
        shares = [plan.share(t) for t in tasks]

        def run(batches):
            for batch in batches:
                for i in batch.column(0).to_pylist():
                    yield from part_batches(tasks[i], files, kw)
                    if add is not None:
                        add.add(shares[i])

        frames.append(spark.range(0, len(tasks), 1, len(tasks)).mapInArrow(run, OUT_DDL))
    if plan.ranges:
        from .source import plan_json

        packets = (spark.read.format("dcpinspect").option("plan", plan_json(files, plan.ranges)).load()
                   .where("conn IS NOT NULL OR problem IS NOT NULL"))
        n = max(2, 2 * plan.parallelism)
        ordered = packets.repartition(n, "file_index", "conn").sortWithinPartitions("file_index", "conn", "record")

        def decode(batches):
            yield from decode_batches(batches, files, kw)

        frames.append(ordered.mapInArrow(decode, OUT_DDL))
    rows = frames[0]
    for more in frames[1:]:
        rows = rows.unionByName(more)
    return rows


def _dataframe(spark, batch):
    import pyarrow as pa

    return spark.createDataFrame(pa.Table.from_batches([batch]), OUT_DDL)


def _conclude(states: list[dict], driver: Output) -> None:
    """What the correlators of files decoded in several tasks find, merged: rows of the driver."""
    by_file: dict[int, list[dict]] = {}
    for state in states:
        for fi, correlators in state["correlated"].items():
            by_file.setdefault(fi, []).append(correlators)
    for fi in sorted(by_file):
        for note in concluded(merge_correlators(by_file[fi])):
            driver.take(fi, CONCLUDED_KEY, note)


def _merge(states: list[dict], driver: Output, result: Analysis) -> dict:
    stats = StatsCollector()
    present: set = set()
    found: Counter = Counter()
    notes: list = []
    for state in [*states, driver.summary()]:
        stats.merge(state["stats"])
        present |= state["present"]
        found.update(state["found"])
        notes.extend(state["notes"])
        result.frames += state["frames"]
        result.records += state["records"]
    result.findings = dict(found)
    result.notes = [(result.files[fi], text) for fi, _, text in sorted(notes)[:1000]]
    return {"stats": stats, "present": present}


def _write(spark, rows, files: list[str], out: str, merged: dict, result: Analysis) -> None:
    """The tables under ``out`` (each a directory of Parquet files, replaced), and the
    statistics report as report.json."""
    import pyarrow as pa

    files_df = spark.createDataFrame(pa.table({"file_index": pa.array(range(len(files)), pa.int32()),
                                               "file": pa.array(files, pa.string())}))
    from .tables import project

    present = merged["present"]
    family_tables = {t.name: t for t in _family_tables()}
    for spec in specs():
        target = _join(out, spec.name)
        t = family_tables.get(spec.name)
        if t is not None and not any((t.kind, p) in present for p in t.protocols):
            _remove(target)  # not in this input: none from an earlier run stays either
            continue
        project(rows, spec, files_df).write.mode("overwrite").parquet(target)
        result.tables.append(spec.name)
    stats = merged["stats"]
    report = stats.report()
    conns = [_connection_row(label, c) for label, c in report["connections"].items()]
    vbs = [_vbucket_row(int(vb), v) for vb, v in report["vbuckets"].items()]
    spark.createDataFrame(conns, CONNECTION_DDL).write.mode("overwrite").parquet(_join(out, "connections"))
    spark.createDataFrame(vbs, VBUCKET_DDL).write.mode("overwrite").parquet(_join(out, "vbuckets"))
    result.tables += ["connections", "vbuckets"]
    _write_text(_join(out, "report.json"), json.dumps(report, indent=2, default=str) + "\n")


def _family_tables():
    from ...families import families

    return [t for f in families() for t in f.tables if t.name != "frames"]


def _join(out: str, name: str) -> str:
    return out.rstrip("/") + "/" + name if is_uri(out) else os.path.join(out, name)


def _remove(target: str) -> None:
    import shutil

    if not is_uri(target) and os.path.isdir(target):
        shutil.rmtree(target, ignore_errors=True)


def _write_text(target: str, text: str) -> None:
    if is_uri(target):
        from ...sources.uris import locate

        fs, path = locate(target)
        with fs.open_output_stream(path) as f:
            f.write(text.encode())
        return
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with open(target, "w") as f:
        f.write(text)


CONNECTION_DDL = ("connection string, frames bigint, frames_c2s bigint, frames_s2c bigint, bytes bigint, "
                  "bytes_c2s bigint, bytes_s2c bigint, first_ts double, last_ts double, duration double, "
                  "items bigint, streams bigint, capture_gaps bigint, lost_bytes bigint, skipped_bytes bigint, "
                  "findings bigint, json string")
VBUCKET_DDL = ("vbucket int, connections bigint, streams bigint, items bigint, mutations bigint, "
               "deletions bigint, expirations bigint, snapshots bigint, seqno_first decimal(20,0), "
               "seqno_last decimal(20,0), seqno_min decimal(20,0), seqno_max decimal(20,0), gaps bigint, "
               "gap_missing decimal(20,0), backwards bigint, frames bigint, bytes bigint, json string")


def _connection_row(label: str, c: dict) -> tuple:
    return (label, c["frames"]["total"], c["frames"]["c2s"], c["frames"]["s2c"], c["bytes"]["total"],
            c["bytes"]["c2s"], c["bytes"]["s2c"], c["first_ts"], c["last_ts"], c["duration"], c["items"],
            c["streams"], c["capture_gaps"], c["lost_bytes"], c["skipped_bytes"], c["findings"],
            json.dumps(c, default=str))


def _vbucket_row(vb: int, v: dict) -> tuple:
    from decimal import Decimal

    seq, gaps = v["seqno"], v["gaps"]
    big = (lambda x: None if x is None else Decimal(x))
    return (vb, v["connections"], v["streams"], v["items"], v["mutations"], v["deletions"], v["expirations"],
            v["snapshots"]["count"], big(seq["first"]), big(seq["last"]), big(seq["min"]), big(seq["max"]),
            gaps["count"], big(gaps["missing"]), gaps["backwards"], v["frames"], v["bytes"], json.dumps(v, default=str))


def analyze_paths(paths: list[str], out: str, master: str | None = None, conf: list[str] = (),
                  range_size: int = RANGE_SIZE, ports=(), collections: bool | None = None, split: str = "auto",
                  remote: str | None = None) -> bool:
    """The ``analyze`` command: run, print the summary of findings by rule and class, and
    return whether one is an error (what cannot be used raises :class:`Unusable`)."""
    from ...limits import FLOWS, HELD
    from ...outputs.console import make_console
    from ...outputs.escape import safe
    from ...outputs.rows import print_rows
    from .session import make_session

    settings = {}
    for item in conf:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise Unusable(f"--spark-conf {item!r}: expected KEY=VALUE")
        settings[key] = value
    began = time.monotonic()
    try:
        spark = make_session(master, settings, remote=remote)
    except RuntimeError as exc:
        raise Unusable(str(exc)) from None
    startup = time.monotonic() - began
    limits = dict(max_held=HELD.value(), max_flows=FLOWS.value())
    with Progress(_context(spark)) as progress:
        result = run_analysis(spark, paths, out, range_size, ports, collections, split, progress, limits)
    result.phases["startup"] = startup
    err = make_console(stderr=True)
    for path, note in result.notes:
        err.print(safe(f"note: {path}: {note}"), markup=False)
    console = make_console()
    if result.findings:
        rows = sorted(result.findings.items(), key=lambda kv: (-kv[1], kv[0]))
        print_rows(console, ("rule", "class", "severity", "count"),
                   ((safe(r), safe(c), s, str(n)) for (r, c, s), n in rows))
    what = f"{result.frames} frames" + (f" and {result.records} snapshot records" if result.records else "")
    console.print(f"{what} from {len(result.files)} files ({result.tasks} tasks) in {result.seconds:.1f}s "
                  f"(Spark start-up {startup:.1f}s more): {result.errors} errors, "
                  f"{sum(result.findings.values()) - result.errors} other findings; tables in {safe(out)}")
    if result.frames == 0 and result.records == 0:
        raise Unusable("no frame found in the input")
    return result.errors > 0
