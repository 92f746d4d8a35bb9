"""The ``analyze`` command: captures and snapshot files through Spark into Parquet tables,
with the CLI's decoder and validator.

1. Plan (:mod:`.plan`): the files (paths, globs, directories, URIs) and the tasks. A capture
   is read by ``parts`` tasks, each decoding the connections dealt to its part (as
   ``--jobs`` workers do: no shuffle); or, when a file is too large to be read once per
   task (``--split ranges``, or ``auto`` past :data:`~.plan.MAX_REREADS` parts), by byte
   ranges whose packets are shuffled to their connections. A snapshot file is one task.
2. The tasks (:mod:`.partition`) decode their share as the CLI does, and write their rows
   of every table (:mod:`.tables`: the lines ``decode -f jsonl`` and the findings
   ``validate -f jsonl --info`` print, with columns taken from them as the families
   declare) as Parquet files of their own; each hands back its statistics.
3. The driver merges the statistics (and the correlators of files read in several tasks,
   whose conclusions are rows of its own) and writes the statistics report's tables (as
   ``sessions/report_tables.py`` declares them) and ``report.json``.
"""

from __future__ import annotations

import os
import pickle
import re
import time
from collections import Counter
from dataclasses import dataclass, field

from ...families import VALUES
from ...outputs.stats import report_json
from ...sessions.report_tables import REPORT_TABLES
from ...families import stats_collector
from ...sessions.stats import StatsCollector
from ...sources.capture import CaptureError
from ...sources.ranges import RANGE_SIZE
from ...sources.uris import UriError, is_uri, shown
from ..connections import concluded, merge_correlators
from ..records import CONCLUDED_KEY
from ..inputs import Unusable
from ..options import CaptureOptions
from .partition import OUT_DDL, Output, decode_batches, part_batches
from .plan import Plan, make_plan
from .progress import Progress
from .tables import clear, join, specs


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


def run_analysis(spark, paths: list[str], out: str, range_size: int = RANGE_SIZE, capture: CaptureOptions | None = None,
                 collections: bool | None = None, split: str = "auto", progress: Progress | None = None,
                 limits: dict | None = None, values: bool = False) -> Analysis:
    """Analyse ``paths`` on ``spark`` into Parquet tables under ``out``. Raises
    :class:`Unusable` for no files, or a file that cannot be read or is neither a capture
    nor a snapshot file. ``limits``: the caps a decoder takes (``max_held``, ``max_flows``);
    ``values``: the keys' lines (the ``json`` column) carry each key's value."""
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
    result = Analysis(files=[shown(f) for f in plan.files], tasks=len(plan.tasks) + len(plan.ranges),
                      ranges=len(plan.ranges))
    if progress is not None:
        progress.total = sum(plan.sizes)
    result.phases["plan"] = time.monotonic() - began
    out = out if is_uri(out) else os.path.abspath(out)
    clear(out, [s.name for s in specs()] + [t.name for t in REPORT_TABLES])
    kw = dict(collections=collections, detail=VALUES, **(capture or CaptureOptions()).decoder(), **(limits or {}))
    if values:  # the keys of snapshots, files and full syncs, with their values (Options.data)
        kw["data"] = True
    try:
        rows = _rows(spark, plan, out, kw, progress).collect()
    except Exception as exc:  # noqa: BLE001 - a task's error reaches here as Spark's, whatever it was
        raise Unusable(f"the Spark job failed: {failure(exc)}") from None
    states = [pickle.loads(r["blob"]) for r in rows]
    driver = Output(plan.files, out, "driver")
    _conclude(states, driver)
    driver.close()
    merged = _merge([*states, driver.summary()], result)
    _write_stats(out, merged["stats"], result)
    result.stats = merged["stats"]
    result.seconds = time.monotonic() - began
    result.phases["job"] = result.seconds - result.phases["plan"]
    return result


def failure(exc: Exception) -> str:
    """The line that says why a Spark job failed: a task's Python error (its last line), or
    Spark's own first line; and where the JVM's log is."""
    from .session import jvm_log

    text = str(exc)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    python = [line for line in lines if re.match(r"^[A-Za-z_.]*(Error|Exception)\b.*:", line)]
    said = python[-1] if python else (lines[0] if lines else type(exc).__name__)
    return f"{said[:300]} (Spark's log: {jvm_log()})"


def _context(spark):
    """The SparkContext, or None over Spark Connect (which has none)."""
    try:
        return spark.sparkContext
    except Exception:  # noqa: BLE001 - Connect sessions raise on it
        return None


def _rows(spark, plan: Plan, out: str, kw: dict, progress: Progress | None):
    """The tasks (each writing its tables under ``out``): a DataFrame of their states."""
    files, tasks = plan.files, plan.tasks
    add = progress.accumulator() if progress is not None else None
    frames = []
    if tasks:
        shares = [plan.share(t) for t in tasks]

        def run(batches):
            for batch in batches:
                for i in batch.column(0).to_pylist():
                    yield from part_batches(tasks[i], i, files, out, kw)
                    if add is not None:
                        add.add(shares[i])

        frames.append(spark.range(0, len(tasks), 1, len(tasks)).mapInArrow(run, OUT_DDL))
    if plan.ranges:
        from .source import plan_json

        packets = (spark.read.format("dcpinspect").option("plan", plan_json(files, plan.ranges)).load()
                   .where("conn IS NOT NULL OR problem IS NOT NULL"))
        n = max(2, 2 * plan.parallelism)
        ordered = packets.repartition(n, "file_index", "conn").sortWithinPartitions("file_index", "conn", "record")
        servers = _servers(spark, plan, kw)

        def decode(batches):
            yield from decode_batches(batches, files, out, kw, servers)

        frames.append(ordered.mapInArrow(decode, OUT_DDL))
    rows = frames[0]
    for more in frames[1:]:
        rows = rows.unionByName(more)
    return rows


def _servers(spark, plan: Plan, kw: dict) -> dict[int, dict]:
    """The servers the ranges of each split file show speaking a family (a first job, a
    task a range: :mod:`.servers`), by file index; none without the heuristic."""
    from .servers import FOLLOW, file_servers, range_servers

    if not kw.get("heuristic", True):
        return {}
    index = {path: i for i, path in enumerate(plan.files)}
    jobs = [(index[r.path], [q for q in plan.ranges[k:k + FOLLOW + 1] if q.path == r.path])
            for k, r in enumerate(plan.ranges)]

    def run(batches):
        import pyarrow as pa

        for batch in batches:
            for i in batch.column(0).to_pylist():
                fi, ranges = jobs[i]
                blob = pickle.dumps((fi, range_servers(ranges, kw)), protocol=pickle.HIGHEST_PROTOCOL)
                yield pa.RecordBatch.from_arrays([pa.array([blob], pa.binary())], names=["blob"])

    rows = spark.range(0, len(jobs), 1, len(jobs)).mapInArrow(run, OUT_DDL).collect()
    return file_servers(pickle.loads(r["blob"]) for r in rows)


def _conclude(states: list[dict], driver: Output) -> None:
    """What the correlators of files decoded in several tasks find, merged: rows of the driver."""
    by_file: dict[int, list[dict]] = {}
    for state in states:
        for fi, correlators in state["correlated"].items():
            by_file.setdefault(fi, []).append(correlators)
    for fi in sorted(by_file):
        for note in concluded(merge_correlators(by_file[fi])):
            driver.take(fi, CONCLUDED_KEY, note)


def _merge(states: list[dict], result: Analysis) -> dict:
    stats = stats_collector()
    found: Counter = Counter()
    notes: list = []
    tables: set = set()
    for state in states:
        stats.merge(state["stats"])
        tables.update(state["tables"])
        found.update(state["found"])
        notes.extend(state["notes"])
        result.frames += state["frames"]
        result.records += state["records"]
    result.findings = dict(found)
    result.notes = [(result.files[fi], text) for fi, _, text in sorted(notes)[:1000]]
    result.tables = [s.name for s in specs() if s.name in tables or not s.optional]
    return {"stats": stats}


def _write_stats(out: str, stats: StatsCollector, result: Analysis) -> None:
    """The statistics report's tables (sessions/report_tables.py) and the report itself as
    report.json;
    a table no task wrote a row of (but a family's) is written empty."""
    import pyarrow as pa

    from .tables import TableFiles, schema

    files = TableFiles(out, "00000", f"{os.getpid()}")
    for spec in specs():
        if spec.name in result.tables and not _exists(join(out, spec.name)):
            files.write(spec, pa.RecordBatch.from_pylist([], schema=schema(spec)))
    files.close()
    report = stats.report()
    for table in REPORT_TABLES:
        _write_rows(join(out, table.name), table.schema, table.rows(report))
        result.tables.append(table.name)
    _write_text(join(out, "report.json"), report_json(report) + "\n")


def _exists(target: str) -> bool:
    if is_uri(target):
        from pyarrow import fs as pafs

        from ...sources.uris import locate

        fs, path = locate(target)
        return fs.get_file_info(path).type != pafs.FileType.NotFound
    return os.path.isdir(target)


def _write_rows(target: str, columns: tuple, rows: list[tuple]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .tables import _open_output, arrow_type, column

    arrays = [column([r[i] for r in rows], kind) for i, (_, kind) in enumerate(columns)]
    table = pa.Table.from_arrays(arrays, schema=pa.schema([pa.field(n, arrow_type(k)) for n, k in columns]))
    with _open_output(join(target, "part-00000.parquet")) as f:
        pq.write_table(table, f, compression="snappy")


def _write_text(target: str, text: str) -> None:
    from .tables import _open_output

    with _open_output(target) as f:
        f.write(text.encode())


def refuse_streams(paths: list[str]) -> None:
    """``analyze`` reads files its tasks open by name, each at the offsets it takes: standard
    input (``-``), a pipe, a FIFO or a terminal (``/dev/stdin``, ``<(...)``) cannot be read
    so, and is refused before Spark starts (:class:`Unusable`, exit 2)."""
    import stat

    for path in paths:
        if path == "-":
            raise Unusable("-: analyze reads files that its Spark tasks open by name, and standard input is a "
                           "stream: write it to a file first (tcpdump -w FILE, redis-cli --rdb FILE), or read the "
                           "stream with decode, validate or stats -")
        if is_uri(path):
            continue
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue  # told as the plan lists the inputs
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode):
            raise Unusable(f"{shown(path)}: a pipe or device, not a file: analyze reads files that its Spark tasks "
                           "open by name; write the stream to a file first, or read it with decode, validate or "
                           "stats")


def analyze_paths(paths: list[str], out: str, master: str | None = None, conf: list[str] = (),
                  range_size: int = RANGE_SIZE, capture: CaptureOptions | None = None,
                  collections: bool | None = None, split: str = "auto", remote: str | None = None,
                  values: bool = False) -> bool:
    """The ``analyze`` command: run, print the summary of findings by rule and class, and
    return whether one is an error (what cannot be used raises :class:`Unusable`)."""
    from ...limits import FLOWS, HELD
    from ...outputs.console import make_console
    from ...outputs.escape import safe
    from ...outputs.rows import print_rows
    from .session import make_session, warm_up

    refuse_streams(paths)
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
    warm_up(spark)
    startup = time.monotonic() - began
    limits = dict(max_held=HELD.value(), max_flows=FLOWS.value())
    with Progress(_context(spark)) as progress:
        result = run_analysis(spark, paths, out, range_size, capture, collections, split, progress, limits, values)
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
