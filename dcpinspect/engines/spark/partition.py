"""What a Spark task does: the streaming engine's own work on its share of the input, its
items turned into rows of one small schema (:data:`OUT_DDL`) in Arrow batches.

A task's share is either

* a **part of a file** (:func:`part_batches`): the file read whole by this task, which
  decodes the connections :class:`~..files.Owners` deals to its part, exactly as a
  ``--jobs`` worker does (``keyed_items(records, part, parts)``): the C reader passes the
  other parts' records over unmade, follows connections under way, and the family's fast
  path writes runs of frames as lines; or a snapshot file (an RDB file) read whole;
* or **one connection's packets after a shuffle** (:func:`decode_batches`): rows of the
  ``dcpinspect`` data source, sorted by (file, connection, record), each connection's run
  fed to a fresh :class:`~..capture.CaptureDecoder` and finished at its last packet.

Either way every item becomes what the CLI prints of it: the line ``decode -f jsonl``
writes (table ``line``, with its ``kind``), and the findings ``validate -f jsonl --info``
writes (table ``finding``); the columns of the tables are taken from those JSON objects by
Spark (``tables.py``), not here. A task's statistics collector (and the families'
correlators of files decoded in several parts) come last, pickled (table ``state``).

Keys order rows as the CLI does: ``key`` the capture record that caused the row (what the
end of input flushes after every record, in the order connections began; what the
correlators conclude after that), then ``seq``: the part, then the row's place in its task.
Needs pyarrow and orjson, not pyspark.
"""

from __future__ import annotations

import gzip
import pickle
from collections import Counter
from typing import Iterator

from ...outputs.jsonl import dumps_line
from ...sessions.captured import Captured, Lines, Note
from ...sessions.stats import StatsCollector
from ...sources.capture import Record, read_records
from ...sources.uris import open_binary
from ...transport.packet import Skip, parse_record
from ..capture import CaptureDecoder
from ..files import END_KEY, ReadStats, keyed_items
from ..sinks import FindingRow, FindingsSink, JsonlSink

#: (name, Arrow type) of every output column, in order
OUT_COLUMNS = (("table", "string"), ("kind", "string"), ("file_index", "int32"), ("key", "int64"),
               ("seq", "int64"), ("json", "binary"), ("blob", "binary"))
OUT_DDL = "table string, kind string, file_index int, key bigint, seq bigint, json binary, blob binary"
#: rows a batch (a batch of lines of large values stays a few MB)
BATCH_ROWS = 4096
#: where a task's row numbers begin: its part shifted past any task's count of rows
PART_SHIFT = 40
_MAX_KEY = (1 << 63) - 1
#: notes about capture files kept for the summary, a task
NOTES = 1000
_GZIP = b"\x1f\x8b"


class Rows:
    """The rows a task has made and not yet handed out, a list per column."""

    __slots__ = ("table", "kind", "file_index", "key", "seq", "json", "blob", "next_seq")

    def __init__(self, part: int = 0) -> None:
        self.table: list = []
        self.kind: list = []
        self.file_index: list = []
        self.key: list = []
        self.seq: list = []
        self.json: list = []
        self.blob: list = []
        self.next_seq = part << PART_SHIFT

    def __len__(self) -> int:
        return len(self.table)

    def add(self, table: str, kind: str | None, fi: int, key: int, json: bytes | None, blob: bytes | None = None):
        self.table.append(table)
        self.kind.append(kind)
        self.file_index.append(fi)
        self.key.append(key if key <= _MAX_KEY else _MAX_KEY)
        self.seq.append(self.next_seq)
        self.next_seq += 1
        self.json.append(json)
        self.blob.append(blob)

    def lines(self, fi: int, key: int, kind: str, text: bytes) -> None:
        """A line per row from ``text`` (lines, each ending in a newline), all of ``kind``."""
        lines = text.split(b"\n")
        lines.pop()  # after the last newline
        n = len(lines)
        seq = self.next_seq
        self.table.extend(["line"] * n)
        self.kind.extend([kind] * n)
        self.file_index.extend([fi] * n)
        self.key.extend([key if key <= _MAX_KEY else _MAX_KEY] * n)
        self.seq.extend(range(seq, seq + n))
        self.next_seq = seq + n
        self.json.extend(lines)
        self.blob.extend([None] * n)

    def batch(self):
        import pyarrow as pa

        cols = [pa.array(self.table, pa.string()), pa.array(self.kind, pa.string()),
                pa.array(self.file_index, pa.int32()), pa.array(self.key, pa.int64()),
                pa.array(self.seq, pa.int64()), pa.array(self.json, pa.binary()), pa.array(self.blob, pa.binary())]
        for name in self.__slots__[:-1]:
            setattr(self, name, [])
        return pa.RecordBatch.from_arrays(cols, names=[n for n, _ in OUT_COLUMNS])


def _kind(line: bytes) -> str:
    """The ``kind`` of a JSON Lines object as the sinks write it (its first member)."""
    if line.startswith(b'{"kind":"'):
        end = line.find(b'"', 9)
        if end > 0:
            return line[9:end].decode("ascii")
    return ""


class Output:
    """One task's items as rows: the sinks of ``decode -f jsonl`` and ``validate -f jsonl
    --info`` per file, and one statistics collector for all of them."""

    def __init__(self, files: list[str], part: int = 0) -> None:
        import orjson

        from ...families import families

        self.files = files
        self.rows = Rows(part)
        self.stats = StatsCollector()
        self.sinks: dict[int, tuple[JsonlSink, FindingsSink]] = {}
        self.correlated: dict[int, dict] = {}
        #: frames (lines of kind frame) and snapshot records (lines of a snapshot file) made
        self.frames = self.records = 0
        #: (kind, protocol) of the lines of other records than frames of the fast path
        self.present: set[tuple[str, str | None]] = set()
        #: findings by (rule, class, severity)
        self.found: Counter = Counter()
        #: the notes about capture files themselves: (file, key, text), the first NOTES
        self.notes: list[tuple[int, int, str]] = []
        self.loads = orjson.loads
        #: the family whose fast path wrote the lines (one family has one today)
        self.line_message = next((f.line_message for f in families() if f.line_message is not None), None)

    def _sinks(self, fi: int) -> tuple[JsonlSink, FindingsSink]:
        got = self.sinks.get(fi)
        if got is None:
            got = self.sinks[fi] = (JsonlSink(), FindingsSink(self.files[fi], show_info=True))
        return got

    def take(self, fi: int, key: int, item) -> None:
        """One item of file ``fi``'s capture, with its key."""
        rows = self.rows
        jsonl, found = self._sinks(fi)
        if type(item) is Lines:
            rows.lines(fi, key, "frame", item.text)
            self.frames += item.count
            self._count_lines(fi, key, item)
            return
        is_frame, text = jsonl.take(key, item)
        if isinstance(item, Captured):
            protocol = getattr(item.msg, "protocol", None)
            for line in text.split(b"\n")[:-1]:
                kind = _kind(line)
                rows.add("line", kind, fi, key, line)
                if kind == "frame":
                    self.frames += 1
                if protocol is not None:
                    self.present.add((kind, protocol))
        elif item.finding is None:  # a note (a finding of a connection's end is a finding row below)
            rows.add("line", item.kind, fi, key, text[:-1])
            if item.kind == "capture" and len(self.notes) < NOTES:
                self.notes.append((fi, key, item.message))
        for row in found.take(key, item) or ():
            if isinstance(row, FindingRow):
                f = row.finding
                self.found[(f.rule, f.cls, f.severity)] += 1
                rows.add("finding", f.severity, fi, key, dumps_line(row.record)[:-1])
        self.stats.add(item, (fi, key))

    def _count_lines(self, fi: int, key: int, item: Lines) -> None:
        """The statistics of frames that came as lines: each line's message, from its object."""
        make, loads, add = self.line_message, self.loads, self.stats.add
        flow, direction = item.flow, item.direction
        for line in item.text.split(b"\n")[:-1]:
            rec = loads(line)
            add(Captured(rec["ts"], flow, direction, make(rec), rec["frame"]), (fi, key))

    def snapshot(self, fi: int, rows_of) -> None:
        """A snapshot file's JSON Lines objects (the family's ``snapshot_rows``): each a line,
        and each of their findings a finding row."""
        name = self.files[fi]
        rows = self.rows
        for n, obj in enumerate(rows_of):
            line = dumps_line(obj)[:-1]
            kind = obj.get("kind", "")
            rows.add("line", kind, fi, n, line)
            self.records += 1
            self.present.add((kind, obj.get("protocol")))
            found = [obj] if kind == "finding" else obj.get("findings") or ()
            for f in found:
                rec = {"file": name, **{k: v for k, v in f.items() if k not in ("kind", "protocol", "file")}}
                self.found[(rec.get("rule"), rec.get("class"), rec.get("severity"))] += 1
                rows.add("finding", rec.get("severity"), fi, n, dumps_line(rec)[:-1])

    def summary(self) -> dict:
        """What the task counted, for the driver to merge."""
        return {"stats": self.stats, "correlated": self.correlated, "present": self.present, "found": self.found,
                "notes": self.notes, "frames": self.frames, "records": self.records}

    def state(self):
        """The last batch: :meth:`summary`, pickled."""
        blob = pickle.dumps(self.summary(), protocol=pickle.HIGHEST_PROTOCOL)
        self.rows.add("state", None, -1, _MAX_KEY, None, blob)
        return self.rows.batch()


def part_batches(task: tuple, files: list[str], kw: dict) -> Iterator:
    """The batches of one task of the plan: ``(file_index, kind, part, parts)``, kind
    ``capture`` (the part's connections of a capture file) or ``snapshot`` (a family's
    snapshot file, read whole)."""
    from ..parallel import steady_gc

    steady_gc()
    fi, kind, part, parts = task
    out = Output(files, part)
    rows = out.rows
    if kind == "snapshot":
        family = _snapshot_family(files[fi])
        with _open_unzipped(files[fi]) as fh:
            out.snapshot(fi, family.snapshot_rows(fh, files[fi]))
        yield out.state()
        return
    stats = ReadStats()
    take = out.take
    for key, item in keyed_items(read_records(files[fi]), part, parts, stats, lane=True, **kw):
        take(fi, key, item)
        if len(rows) >= BATCH_ROWS:
            yield rows.batch()
    if parts > 1:
        out.correlated[fi] = stats.correlated
    yield out.state()


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
        if family.is_snapshot is not None and family.snapshot_rows is not None and family.is_snapshot(head):
            return family
    raise ValueError(f"{name}: no family reads this snapshot file")


class ConnectionRun:
    """One connection of one file, fed its packets in capture order (after a shuffle)."""

    def __init__(self, fi: int, kw: dict, correlators: dict) -> None:
        self.fi = fi
        self.decoder = CaptureDecoder(lane=True, correlators=correlators, conclude=False, **kw)

    def packet(self, rec: Record, out: Output) -> None:
        seg = parse_record(rec)
        if isinstance(seg, Skip):
            return
        for item in self.decoder.feed(seg):
            out.take(self.fi, rec.index, item)

    def finish(self, out: Output) -> None:
        began = {flow: fd.first_index for flow, fd in self.decoder.flows.items()}
        for item in self.decoder.finishing():
            out.take(self.fi, END_KEY + began.get(item.flow, END_KEY), item)


def decode_batches(batches: Iterator, files: list[str], kw: dict | None = None) -> Iterator:
    """The output batches of a task from its input batches of packet rows (columns as
    ``source.PACKET_DDL``), sorted by file, connection and record."""
    from ..parallel import steady_gc

    steady_gc()
    kw = {} if kw is None else kw
    out = Output(files)
    rows = out.rows
    run: ConnectionRun | None = None
    current = None
    for batch in batches:
        cols = batch.to_pydict()
        for fi, conn, index, ts, linktype, wirelen, data, problem in zip(
                cols["file_index"], cols["conn"], cols["record"], cols["ts"], cols["linktype"], cols["wirelen"],
                cols["data"], cols["problem"]):
            if problem is not None:  # damage to the file itself: the CLI notes it apart from any connection
                text = problem if problem.startswith("record ") else f"record {index}: {problem}"
                out.take(fi, index, Note("capture", text))
                continue
            if (fi, conn) != current:
                if run is not None:
                    run.finish(out)
                current = (fi, conn)
                run = ConnectionRun(fi, kw, out.correlated.setdefault(fi, {}))
            run.packet(Record(ts, linktype, data, wirelen, index), out)
            if len(rows) >= BATCH_ROWS:
                yield rows.batch()
    if run is not None:
        run.finish(out)
    yield out.state()
