"""The ``dcpinspect`` PySpark data source: the packets of pcap / pcapng captures (gzip too)
as rows, a partition per file or, for large uncompressed files, per byte range.

    spark.dataSource.register(DcpinspectSource)
    packets = spark.read.format("dcpinspect").load("/captures/*.pcap")

``load`` takes a file, a glob, a directory (every capture in it, recursively) or a URI
(``s3a://bucket/captures/``, ``hdfs://...``, see ``sources/uris.py``); the ``paths``
option a JSON list of them; ``rangeSize`` the bytes of a range (default 128 MiB).
Ranges are planned by :mod:`dcpinspect.sources.ranges` (walked one after another on the
driver here; :func:`.plan.plan_files` with a SparkContext walks them as a Spark job, and the
``plan`` option takes its result). Every record is read exactly once.

Rows: ``file_index`` (the file's place in the list), ``file``, ``record`` (the 0-based
record number in its file), ``ts``, ``linktype``, ``wirelen``, ``data`` (the captured bytes),
``conn`` (the connection: both endpoints, the lower first; null for a record that carries
no TCP/UDP segment) and ``problem`` (damage found before this record, as the CLI notes it;
its other columns null).
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict
from typing import Iterator

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from ...sources.capture import CaptureProblem
from ...sources.ranges import RANGE_SIZE, Range, range_records
from ...transport.packet import Skip, parse_record
from .plan import CAPTURE, expand as expand_all, kind_of, plan_files

PACKET_DDL = ("file_index int, file string, record bigint, ts double, linktype int, wirelen bigint, "
              "data binary, conn string, problem string")
ROWS_A_BATCH = 4096


def expand(paths: list[str]) -> list[str]:
    """The capture files of paths, globs, directories and URIs (see ``plan.expand``)."""
    return [p for p in expand_all(paths) if kind_of(p) in (CAPTURE, None)]


def plan_json(files: list[str], plan: list[Range]) -> str:
    """A plan as the ``plan`` option takes it."""
    return json.dumps({"files": files, "ranges": [
        {**asdict(r), "prologue": base64.b64encode(r.prologue).decode("ascii")} for r in plan]})


def _plan_from(text: str) -> tuple[list[str], list[Range]]:
    got = json.loads(text)
    return got["files"], [Range(**{**r, "prologue": base64.b64decode(r["prologue"])}) for r in got["ranges"]]


def connection_of(seg) -> str:
    """Both endpoints of a segment's connection, the lower first: the same for both directions."""
    a, b = (seg.src, seg.sport), (seg.dst, seg.dport)
    if b < a:
        a, b = b, a
    return f"{a[0]} {a[1]} {b[0]} {b[1]}"


class RangePartition(InputPartition):
    """One range of one file: its place in the file list and the range."""

    def __init__(self, file_index: int, part: Range) -> None:
        super().__init__(file_index)
        self.file_index = file_index
        self.part = part


def packet_rows(file_index: int, part: Range) -> Iterator[tuple]:
    """The rows of one range (see the module's notes)."""
    path = part.path
    for rec in range_records(part):
        if isinstance(rec, CaptureProblem):
            yield file_index, path, rec.index, None, None, None, None, None, rec.message
            continue
        seg = parse_record(rec)
        conn = None if isinstance(seg, Skip) else connection_of(seg)
        yield file_index, path, rec.index, rec.ts, rec.linktype, rec.wirelen, rec.data, conn, None


class DcpinspectReader(DataSourceReader):
    def __init__(self, options: dict) -> None:
        self.options = options

    def partitions(self) -> list[RangePartition]:
        opts = self.options
        if opts.get("plan"):
            files, plan = _plan_from(opts["plan"])
        else:
            paths = json.loads(opts["paths"]) if opts.get("paths") else [opts["path"]]
            files = expand(paths)
            plan = plan_files(files, int(opts.get("rangeSize", RANGE_SIZE)))
        index = {path: i for i, path in enumerate(files)}
        return [RangePartition(index[r.path], r) for r in plan]

    def read(self, partition: RangePartition):
        import pyarrow as pa

        names = [c.split()[0] for c in PACKET_DDL.split(", ")]
        types = [pa.int32(), pa.string(), pa.int64(), pa.float64(), pa.int32(), pa.int64(), pa.binary(),
                 pa.string(), pa.string()]
        rows: list[tuple] = []
        for row in packet_rows(partition.file_index, partition.part):
            rows.append(row)
            if len(rows) >= ROWS_A_BATCH:
                yield _batch(pa, rows, names, types)
                rows = []
        if rows:
            yield _batch(pa, rows, names, types)


def _batch(pa, rows: list[tuple], names: list[str], types: list):
    cols = list(zip(*rows))
    return pa.RecordBatch.from_arrays([pa.array(c, type=t) for c, t in zip(cols, types)], names=names)


class DcpinspectSource(DataSource):
    """``spark.read.format("dcpinspect")``: packets of pcap / pcapng captures."""

    @classmethod
    def name(cls) -> str:
        return "dcpinspect"

    def schema(self) -> str:
        return PACKET_DDL

    def reader(self, schema) -> DcpinspectReader:
        return DcpinspectReader(dict(self.options))
