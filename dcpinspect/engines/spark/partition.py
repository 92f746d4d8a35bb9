"""What a Spark task does with its share of the packets: the same sans-I/O core as the CLI,
a connection at a time.

The task's packets come sorted by (file, connection, record), so each connection is one run
of rows: a fresh :class:`~..capture.CaptureDecoder` takes the run packet by packet and is
finished at its end, as the CLI's decoder (or a ``--jobs`` worker, see ``parallel.py``)
would finish it at the end of the file. Its frames are numbered by capture record and its
items keyed as ``keyed_items`` keys them, so that the rows sort back into the CLI's order.
Nothing here holds more than one connection's state, and none of it a connection's
packets: they stream through in Arrow batches.

Every connection's packets go to one task (one Python process), so state that only lives
within a connection (the duplicate-key digests of ``rules/stream.py``, which use the
process's ``hash()``) never crosses processes.

Output: one row schema for every kind of row (``table`` says which: frame, finding, note,
stats), split into tables by the driver. Needs pyarrow, not pyspark.
"""

from __future__ import annotations

import pickle
from typing import Iterator

from ...messages.frame import DecodeContext
from ...outputs.jsonl import dumps, dumps_line, frame_record
from ...sessions.captured import Captured, Note, flow_label
from ...sessions.stats import StatsCollector
from ...sources.capture import Record
from ...transport.packet import Skip, parse_record
from ..capture import CaptureDecoder
from ..files import END_KEY
from ..sinks import FindingRow, FindingsSink

#: (name, Arrow type name) of every output column, in order
OUT_COLUMNS = (
    ("table", "string"), ("file_index", "int32"), ("file", "string"), ("key", "int64"), ("seq", "int64"),
    ("frame", "int64"), ("ts", "float64"), ("flow", "string"), ("direction", "string"),
    ("magic", "int32"), ("opcode", "int32"), ("name", "string"), ("status", "int32"), ("vbucket", "int32"),
    ("opaque", "int64"), ("cas", "int64"), ("stream_id", "int32"), ("collection_id", "int64"),
    ("doc_key", "string"), ("by_seqno", "int64"), ("rev_seqno", "int64"), ("start_seqno", "int64"),
    ("end_seqno", "int64"), ("length", "int64"), ("truncated", "bool"), ("findings", "int32"),
    ("rule", "string"), ("class", "string"), ("severity", "string"), ("message", "string"),
    ("related_frame", "int64"), ("kind", "string"), ("json", "string"), ("blob", "binary"),
)
#: Spark DDL of the same
OUT_DDL = ", ".join(f"`{n}` {dict(string='string', int32='int', int64='bigint', float64='double', bool='boolean', binary='binary')[t]}"
                    for n, t in OUT_COLUMNS)
BATCH_ROWS = 2048


def _int(value, bits: int = 63):
    """A field's value as a column's integer, None when it is none or does not fit."""
    if type(value) is int and -(1 << bits) <= value < (1 << bits):
        return value
    return None


class _Rows:
    """Output rows (dicts of the columns they set), handed out as Arrow batches."""

    def __init__(self) -> None:
        self.rows: list[dict] = []

    @property
    def n(self) -> int:
        return len(self.rows)

    def add(self, **values) -> None:
        self.rows.append(values)

    def batch(self):
        import pyarrow as pa

        rows, self.rows = self.rows, []
        return pa.RecordBatch.from_arrays(
            [pa.array([r.get(name) for r in rows], type=_ARROW[kind]()) for name, kind in OUT_COLUMNS],
            names=[name for name, _ in OUT_COLUMNS])


_ARROW = {}


def _arrow_types() -> None:
    import pyarrow as pa

    _ARROW.update(string=pa.string, int32=pa.int32, int64=pa.int64, float64=pa.float64, bool=pa.bool_,
                  binary=pa.binary)


class ConnectionRun:
    """One connection of one file, fed its packets in capture order."""

    def __init__(self, file_index: int, file: str, kw: dict, stats: StatsCollector) -> None:
        self.file_index, self.file = file_index, file
        self.decoder = CaptureDecoder(**kw)
        self.sink = FindingsSink(file, show_info=True)
        self.stats = stats
        self.seq = 0
        self.labels: dict = {}

    def packet(self, rec: Record, rows: _Rows) -> None:
        seg = parse_record(rec)
        if isinstance(seg, Skip):
            return
        for item in self.decoder.feed(seg):
            self.item(rec.index, item, rows)

    def finish(self, rows: _Rows) -> None:
        began = {flow: fd.first_index for flow, fd in self.decoder.flows.items()}
        for item in self.decoder.finishing():
            self.item(END_KEY + began.get(item.flow, END_KEY), item, rows)

    def label(self, flow) -> str | None:
        if flow is None:
            return None
        got = self.labels.get(flow)
        if got is None:
            got = self.labels[flow] = flow_label(flow)
        return got

    def item(self, key: int, item: Captured | Note, rows: _Rows) -> None:
        self.stats.add(item, (self.file_index, key))
        common = dict(file_index=self.file_index, file=self.file, key=key)
        if isinstance(item, Captured):
            msg = item.msg
            fields = msg.fields
            flow = self.label(item.flow)
            rows.add(table="frame", seq=self._seq(), frame=item.number, ts=item.ts, flow=flow,
                     direction=item.direction, magic=msg.magic, opcode=msg.opcode, name=msg.name,
                     status=_int(getattr(msg, "status", None), 31), vbucket=_int(msg.vbucket, 31),
                     opaque=_int(msg.opaque), cas=_int(msg.cas), stream_id=_int(msg.stream_id, 31),
                     collection_id=_int(msg.collection_id), doc_key=_text(fields.get("key")),
                     by_seqno=_int(fields.get("by_seqno")), rev_seqno=_int(fields.get("rev_seqno")),
                     start_seqno=_int(fields.get("start_seqno")), end_seqno=_int(fields.get("end_seqno")),
                     length=len(msg.data), truncated=bool(msg.truncated), findings=len(msg.findings),
                     json=dumps_line(frame_record(msg, kind="frame", frame=item.number, ts=item.ts, flow=flow,
                                                  direction=item.direction))[:-1].decode("ascii"),
                     **common)
        elif item.finding is None:
            rows.add(table="note", seq=self._seq(), ts=item.ts, flow=self.label(item.flow),
                     direction=item.direction, kind=item.kind, message=item.message, length=item.size,
                     **common)
        for row in self.sink.take(key, item) or ():
            if isinstance(row, FindingRow):
                self.finding(row, common, rows)

    def finding(self, row: FindingRow, common: dict, rows: _Rows) -> None:
        f = row.finding
        rows.add(table="finding", seq=self._seq(), frame=row.frame, ts=row.ts, flow=row.flow,
                 direction=row.direction, name=row.opcode_name, vbucket=_int(row.vbucket, 31),
                 stream_id=_int(row.stream_id, 31), rule=f.rule, severity=f.severity, message=f.message,
                 related_frame=_int(f.frame), json=dumps(row.record), **{"class": f.cls}, **common)

    def _seq(self) -> int:
        self.seq += 1
        return self.seq


def _text(value) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def decode_batches(batches: Iterator, files: list[str], kw: dict | None = None) -> Iterator:
    """The task's output batches from its input batches of packet rows (columns as
    ``source.PACKET_COLUMNS``), sorted by file, connection and record. The last row is the
    task's statistics (a pickled :class:`StatsCollector`)."""
    kw = dict(base=DecodeContext(detail=False)) if kw is None else kw
    _arrow_types()
    stats = StatsCollector()
    rows = _Rows()
    run: ConnectionRun | None = None
    current = None
    for batch in batches:
        cols = batch.to_pydict()
        for fi, conn, index, ts, linktype, wirelen, data, problem in zip(
                cols["file_index"], cols["conn"], cols["record"], cols["ts"], cols["linktype"], cols["wirelen"],
                cols["data"], cols["problem"]):
            if problem is not None:  # damage to the file itself: the CLI notes it apart from any connection
                text = problem if problem.startswith("record ") else f"record {index}: {problem}"
                note = Note("capture", text)
                stats.add(note, (fi, index))
                rows.add(table="note", file_index=fi, file=files[fi], key=index, seq=0, kind="capture",
                         message=text)
                continue
            if (fi, conn) != current:
                if run is not None:
                    run.finish(rows)
                current = (fi, conn)
                run = ConnectionRun(fi, files[fi], kw, stats)
            run.packet(Record(ts, linktype, data, wirelen, index), rows)
            if rows.n >= BATCH_ROWS:
                yield rows.batch()
    if run is not None:
        run.finish(rows)
    rows.add(table="stats", blob=pickle.dumps(stats, protocol=pickle.HIGHEST_PROTOCOL))
    yield rows.batch()
