"""What a Spark task does: the streaming engine's own work on its share of the input, and
its share of every table, written by the task itself.

A task's share is either

* a **part of a file** (:func:`part_batches`): the file read whole by this task, which
  decodes the connections :class:`~..records.Owners` deals to its part, exactly as a
  ``--jobs`` worker does (``keyed_items(records, part, parts)``): the C reader passes the
  other parts' records over unmade, follows connections under way, and the family's fast
  path writes runs of frames as lines; or a snapshot file (an RDB file) read whole;
* or **connections' packets after a shuffle** (:func:`decode_batches`): rows of the
  ``dcpinspect`` data source, sorted by (file, connection, record), each connection's run
  decoded by ``keyed_items`` as a run of records of its own, finished at its last packet.

Either way every item becomes what the CLI prints of it, a JSON object: the line ``decode
-f jsonl`` writes, the findings ``validate -f jsonl --info`` writes. Each object goes to
the tables that take it (``tables.py``), which the task writes as Parquet files under the
output directory; it is counted by the task's statistics collector (the lines of a fast
path by what they carry for the statistics). What goes back to the
driver is one row (:data:`OUT_DDL`): the collector, the families' correlators of files
decoded in several parts, and the counts the summary prints, pickled.

Rows are ordered as the CLI prints them by ``key`` (the capture record that caused the row;
what the end of input flushes after every record, in the order connections began; what
the correlators conclude after that), then ``seq``: the task's part, then the row's place
in its task. Needs pyarrow, not pyspark.
"""

from __future__ import annotations

import gzip
import os
import pickle
import uuid
from collections import Counter
from itertools import groupby
from typing import Iterator

from ...outputs.jsonl import dumps_line
from ...sessions.captured import Captured, Lines, Note
from ...families import stats_collector
from ...sources.capture import Record, read_records
from ...sources.uris import open_binary, shown
from ..records import ReadStats, keyed_items
from ..sinks import FindingRow, FindingsSink, JsonlSink
from .tables import TableFiles, TableRows, specs

#: what a task hands back: its state, pickled
OUT_DDL = "blob binary"
#: rows of a table held before they are written, and bytes of their lines
BATCH_ROWS = 4096
BATCH_BYTES = 16 << 20
#: where a task's row numbers begin: its part shifted past any task's count of rows
PART_SHIFT = 40
_MAX_KEY = (1 << 63) - 1
#: notes about capture files kept for the summary, a task
NOTES = 1000
_GZIP = b"\x1f\x8b"


def _kind(line: bytes) -> str:
    """The ``kind`` of a JSON Lines object as the sinks write it (its first member)."""
    if line.startswith(b'{"kind":"'):
        end = line.find(b'"', 9)
        if end > 0:
            return line[9:end].decode("ascii")
    return ""


def _protocol(line: bytes) -> str | None:
    """The ``protocol`` of a JSON Lines object as the sinks write it (None: it has none).
    Keys and values come before it only as numbers and plain names (kind, frame, ts, flow,
    direction), so the first ``"protocol":`` in the line is the object's own member."""
    at = line.find(b',"protocol":"')
    if at < 0:
        return None
    end = line.find(b'"', at + 13)
    return line[at + 13:end].decode("ascii") if end > 0 else None


class Output:
    """One task's items as table rows: the sinks of ``decode -f jsonl`` and ``validate -f
    jsonl --info`` per file, one statistics collector for all of them, and the task's
    Parquet files under ``out`` (``task``: the name its files take)."""

    def __init__(self, files: list[str], out: str, task: str, part: int = 0) -> None:
        self.files = files
        #: the files as the tables and findings name them (URIs without credentials)
        self.names = [shown(f) for f in files]
        self.stats = stats_collector()
        self.sinks: dict[int, tuple[JsonlSink, FindingsSink]] = {}
        self.correlated: dict[int, dict] = {}
        self.specs = specs()
        self.rows = {s.name: TableRows(s) for s in self.specs}
        self.by_spec = {s.name: s for s in self.specs}
        self._routes: dict[tuple, list[TableRows]] = {}
        self.files_out = TableFiles(out, task, f"{os.getpid()}-{uuid.uuid4().hex[:8]}")
        self.seq = part << PART_SHIFT
        #: frames (objects of kind frame) and snapshot records (objects of snapshot files)
        self.frames = self.records = 0
        #: findings by (rule, class, severity)
        self.found: Counter = Counter()
        #: the notes about capture files themselves: (file, key, text), the first NOTES
        self.notes: list[tuple[int, int, str]] = []
        self.tables: list[str] = []

    def _sinks(self, fi: int) -> tuple[JsonlSink, FindingsSink]:
        got = self.sinks.get(fi)
        if got is None:
            got = self.sinks[fi] = (JsonlSink(), FindingsSink(self.names[fi], show_info=True))
        return got

    def _route(self, kind: str, protocol) -> list[TableRows]:
        got = self._routes.get((kind, protocol))
        if got is None:
            got = self._routes[(kind, protocol)] = [self.rows[s.name] for s in self.specs if s.takes(kind, protocol)]
        return got

    def _add(self, fi: int, key: int, line: bytes) -> None:
        """One JSON Lines object (as written) to the tables that take it."""
        seq = self.seq
        self.seq = seq + 1
        for rows in self._route(_kind(line), _protocol(line)):
            rows.add(fi, min(key, _MAX_KEY), seq, line)
            self._flush_full(rows)

    def _finding(self, fi: int, key: int, rec: dict) -> None:
        rows = self.rows["findings"]
        rows.add(fi, min(key, _MAX_KEY), self.seq, dumps_line(rec)[:-1])
        self.seq += 1
        self.found[(rec.get("rule"), rec.get("class"), rec.get("severity"))] += 1
        self._flush_full(rows)

    def _flush(self, rows: TableRows) -> None:
        if len(rows):
            self.files_out.write(rows.spec, rows.batch(self.names))

    def _flush_full(self, rows: TableRows) -> None:
        """Write a table's batch once it holds BATCH_ROWS rows or BATCH_BYTES of lines."""
        if len(rows) >= BATCH_ROWS or rows.size >= BATCH_BYTES:
            self._flush(rows)

    def take(self, fi: int, key: int, item) -> None:
        """One item of file ``fi``'s capture, with its key."""
        jsonl, found = self._sinks(fi)
        if type(item) is Lines:
            self._lines(fi, key, item)
            return
        _, text = jsonl.take(key, item)
        if isinstance(item, Captured):
            for line in text.split(b"\n")[:-1]:
                self._add(fi, key, line)
                if line.startswith(b'{"kind":"frame"'):
                    self.frames += 1
        elif item.finding is None:  # a note (a finding of a connection's end is a finding row below)
            self._add(fi, key, text[:-1])
            if item.kind == "capture" and len(self.notes) < NOTES:
                self.notes.append((fi, key, item.message))
        for row in found.take(key, item) or ():
            if isinstance(row, FindingRow):
                self._finding(fi, key, row.record)
        self.stats.add(item, (fi, key))

    def _lines(self, fi: int, key: int, item: Lines) -> None:
        """Frames a family's fast path wrote as lines: to the tables a run at a time, and to
        the statistics by what the lines carry for them."""
        lines = item.text.split(b"\n")
        lines.pop()
        protocol = _protocol(lines[0])
        # every line has the first one's protocol (no JSON string holds an unescaped quote)
        if len(lines) == 1 or (protocol is not None and
                               item.text.count(b',"protocol":"%s"' % protocol.encode()) == len(lines)):
            seq = self.seq
            self.seq = seq + len(lines)
            for rows in self._route("frame", protocol):
                rows.extend(fi, min(key, _MAX_KEY), seq, lines)
                self._flush_full(rows)
        else:
            for line in lines:
                self._add(fi, key, line)
        self.frames += item.count
        self.stats.add(item, (fi, key))

    def snapshot(self, fi: int, objects) -> None:
        """A snapshot file's JSON Lines objects (its family's ``snapshots.rows``): each to the
        tables that take it, and each of their findings a finding row."""
        name = self.names[fi]
        for n, obj in enumerate(objects):
            self._add(fi, n, dumps_line(obj)[:-1])
            self.records += 1
            listed = [obj] if obj.get("kind") == "finding" else obj.get("findings")
            for f in listed if isinstance(listed, list) else ():  # (a summary counts them by rule)
                if isinstance(f, dict):
                    self._finding(fi, n, {"file": name, **{k: v for k, v in f.items()
                                                             if k not in ("kind", "protocol", "file")}})

    def close(self) -> None:
        """Every table's rows written, and the files in place."""
        for rows in self.rows.values():
            self._flush(rows)
        self.tables = self.files_out.close()

    def summary(self) -> dict:
        """What the task counted, for the driver to merge."""
        return {"stats": self.stats, "correlated": self.correlated, "tables": self.tables, "found": self.found,
                "notes": self.notes, "frames": self.frames, "records": self.records}

    def state(self):
        """The task's one row: :meth:`summary`, pickled (the tables written first)."""
        import pyarrow as pa

        self.close()
        blob = pickle.dumps(self.summary(), protocol=pickle.HIGHEST_PROTOCOL)
        return pa.RecordBatch.from_arrays([pa.array([blob], pa.binary())], names=["blob"])


def part_batches(task: tuple, index: int, files: list[str], out: str, kw: dict) -> Iterator:
    """The state of the plan's task number ``index``: ``(file_index, kind, part, parts)``,
    kind ``capture`` (the part's connections of a capture file) or ``snapshot`` (a
    family's snapshot file, read whole), its tables written under ``out``."""
    from ..parallel import steady_gc

    steady_gc()
    fi, kind, part, parts = task
    output = Output(files, out, f"{index:05d}", part)
    if kind == "snapshot":
        family = _snapshot_family(files[fi])
        with _open_unzipped(files[fi]) as fh:
            output.snapshot(fi, family.snapshots.rows(fh, shown(files[fi]), values=kw.get("data", False)))
        yield output.state()
        return
    stats = ReadStats()
    take = output.take
    for key, item in keyed_items(read_records(files[fi]), part, parts, stats, lane=True, **kw):
        take(fi, key, item)
    if parts > 1:
        output.correlated[fi] = stats.correlated
    yield output.state()


def _open_unzipped(name: str):
    raw = open_binary(name)
    head = raw.read(2)
    raw.seek(0)
    return gzip.GzipFile(fileobj=raw, mode="rb") if head == _GZIP else raw


def _snapshot_family(name: str):
    from ...families import families

    with _open_unzipped(name) as fh:
        head = fh.read(64)
    for family in families():
        if family.snapshots is not None and family.snapshots.rows is not None and family.snapshots.is_snapshot(head):
            return family
    raise ValueError(f"{name}: no family reads this snapshot file")


def decode_batches(batches: Iterator, files: list[str], out: str, kw: dict | None = None,
                   servers: dict[int, dict] | None = None) -> Iterator:
    """The state of a task of shuffled packets: input batches of packet rows (columns as
    ``source.PACKET_DDL``) sorted by file, connection and record; its tables written
    under ``out``. ``servers``: by file, the servers its connections show speaking a family
    (``servers.range_servers``), whose every connection is decoded as that family's."""
    from pyspark import TaskContext

    from ..parallel import steady_gc

    steady_gc()
    kw = {} if kw is None else kw
    ctx = TaskContext.get()
    output = Output(files, out, f"r{ctx.partitionId() if ctx is not None else os.getpid():05d}")
    for (fi, _), run in groupby(_packets(batches, output), key=_connection):
        correlators = output.correlated.setdefault(fi, {})
        records = (rec for _, _, rec in run)
        for key, item in keyed_items(records, follow=False, concluding=False, lane=True, correlators=correlators,
                                     servers=(servers or {}).get(fi), **kw):
            output.take(fi, key, item)
    yield output.state()


def _connection(row: tuple) -> tuple:
    return row[0], row[1]


def _packets(batches: Iterator, output: Output) -> Iterator[tuple[int, object, Record]]:
    """``(file, connection, record)`` of each packet row, in the rows' order; damage to the
    file itself is noted apart from any connection, as the CLI notes it."""
    for batch in batches:
        cols = batch.to_pydict()
        for fi, conn, index, ts, linktype, wirelen, data, problem in zip(
                cols["file_index"], cols["conn"], cols["record"], cols["ts"], cols["linktype"], cols["wirelen"],
                cols["data"], cols["problem"]):
            if problem is not None:
                text = problem if problem.startswith("record ") else f"record {index}: {problem}"
                output.take(fi, index, Note("capture", text))
                continue
            yield fi, conn, Record(ts, linktype, data, wirelen, index)
