"""The statistics report (``StatsCollector.report``) as tables: a row per entry of one of
its sections (a connection, a vbucket), its columns read from the entry by path. A bulk
engine writes them as they are declared here (``analyze``'s ``connections`` and
``vbuckets`` Parquet tables), knowing no more of the report than this."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ReportTable:
    #: the table's name
    name: str
    #: the report's section it has a row for each entry of
    section: str
    #: the entry's key as a column: (name, type)
    key: tuple[str, str]
    #: ``(name, type, path)``: the type in Spark SQL's words (``uint64``: unsigned, kept
    #: whole), the path the entry's keys down to the value, dotted; a last column ``json``
    #: holds the whole entry
    columns: tuple[tuple[str, str, str], ...]

    @property
    def schema(self) -> tuple[tuple[str, str], ...]:
        return (self.key, *((n, t) for n, t, _ in self.columns), ("json", "string"))

    def rows(self, report: dict) -> list[tuple]:
        whole = self.key[1] in ("int", "bigint")
        return [(int(key) if whole else key, *(_at(entry, path) for _, _, path in self.columns),
                 json.dumps(entry, default=str)) for key, entry in report[self.section].items()]


def _at(entry: dict, path: str) -> Any:
    for part in path.split("."):
        entry = entry[part]
    return entry


def _same(*names_types: str) -> tuple[tuple[str, str, str], ...]:
    """Columns named as their path: ``"name:type"`` each."""
    return tuple((n, t, n) for n, t in (s.split(":") for s in names_types))


CONNECTIONS = ReportTable("connections", "connections", ("connection", "string"), (
    ("frames", "bigint", "frames.total"), ("frames_c2s", "bigint", "frames.c2s"), ("frames_s2c", "bigint", "frames.s2c"),
    ("bytes", "bigint", "bytes.total"), ("bytes_c2s", "bigint", "bytes.c2s"), ("bytes_s2c", "bigint", "bytes.s2c"),
    *_same("first_ts:double", "last_ts:double", "duration:double", "items:bigint", "streams:bigint",
           "capture_gaps:bigint", "lost_bytes:bigint", "skipped_bytes:bigint", "findings:bigint")))
VBUCKETS = ReportTable("vbuckets", "vbuckets", ("vbucket", "int"), (
    *_same("connections:bigint", "streams:bigint", "items:bigint", "mutations:bigint", "deletions:bigint",
           "expirations:bigint"),
    ("snapshots", "bigint", "snapshots.count"), ("seqno_first", "uint64", "seqno.first"),
    ("seqno_last", "uint64", "seqno.last"), ("seqno_min", "uint64", "seqno.min"), ("seqno_max", "uint64", "seqno.max"),
    ("gaps", "bigint", "gaps.count"), ("gap_missing", "uint64", "gaps.missing"), ("backwards", "bigint", "gaps.backwards"),
    *_same("frames:bigint", "bytes:bigint")))
#: every table of the report, in the order they are written
REPORT_TABLES = (CONNECTIONS, VBUCKETS)
