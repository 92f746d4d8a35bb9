"""The Parquet tables of ``analyze``: which rows of the tasks' output each table takes and
its columns, taken by Spark from the rows' JSON objects (the lines ``decode -f jsonl`` and
``validate -f jsonl --info`` print), on the executors, in the JVM.

What is common to every table is here (where and when a row was found); the columns of a
family's records are the family's (:class:`~dcpinspect.families.Table`): the ``frames``
table has every family's frames, with the columns each family declares for them, and a
family's other tables (RESP commands, RDB keys) are written when some row of theirs is
found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...families import Table, families

#: the JSON types of the columns (``uint64``: an unsigned 64-bit number, kept whole)
TYPES = {"uint64": "decimal(20,0)"}

#: where and when, for every table of the rows of captures
WHERE = (("frame", "bigint", "frame"), ("ts", "double", "ts"), ("flow", "string", "flow"),
         ("direction", "string", "direction"))
#: what every frame has, whatever its family
FRAME = (("protocol", "string", "protocol"), ("length", "bigint", "length"), ("truncated", "boolean", "truncated"))
NOTE = (("ts", "double", "ts"), ("flow", "string", "flow"), ("direction", "string", "direction"),
        ("kind", "string", "kind"), ("message", "string", "message"), ("offset", "bigint", "offset"),
        ("length", "bigint", "length"))
FINDING = (("frame", "bigint", "frame"), ("ts", "double", "ts"), ("flow", "string", "flow"),
           ("direction", "string", "direction"), ("opcode_name", "string", "opcode_name"),
           ("vbucket", "int", "vbucket"), ("stream_id", "int", "stream_id"), ("rule", "string", "rule"),
           ("class", "string", "class"), ("severity", "string", "severity"), ("message", "string", "message"),
           ("related_frame", "bigint", "related_frame"), ("offset", "bigint", "offset"))


@dataclass(frozen=True)
class Spec:
    """One output table: the rows it takes (an SQL condition on the output's ``table`` and
    ``kind``, then on the parsed object ``r``) and its columns from the object."""

    name: str
    where: str
    columns: tuple[tuple[str, str, str], ...]
    #: a further condition on the parsed object (``r``), if any
    having: str = ""
    #: a ``findings`` count column from the object's list of findings
    counted: bool = False
    #: the JSON line itself as column ``json``
    json: bool = True


def specs() -> list[Spec]:
    """Every table, frames first; a family table's columns come after the common ones."""
    tables = [t for f in families() for t in f.tables]
    frame_columns = _merge(c for t in tables if t.name == "frames" for c in t.columns)
    out = [Spec("frames", "table = 'line' AND kind = 'frame'", (*WHERE, *FRAME, *frame_columns), counted=True)]
    named: dict[str, list[Table]] = {}
    for t in tables:
        if t.name != "frames":
            named.setdefault(t.name, []).append(t)
    for name, group in named.items():
        kinds = sorted({t.kind for t in group})
        protocols = sorted({p for t in group for p in t.protocols})
        out.append(Spec(name, f"table = 'line' AND kind IN ({_list(kinds)})",
                        (*WHERE, *FRAME, *_merge(c for t in group for c in t.columns)),
                        having=f"r.protocol IN ({_list(protocols)})", counted=True))
    out.append(Spec("findings", "table = 'finding'", FINDING))
    out.append(Spec("notes", "table = 'line' AND kind NOT IN ('frame', 'finding')", NOTE,
                    having="r.protocol IS NULL", json=False))
    return out


def _list(names) -> str:
    return ", ".join("'" + n.replace("'", "''") + "'" for n in names)


def _merge(columns) -> tuple:
    """Columns in order, a name once (the first declaration of it)."""
    seen: dict[str, tuple] = {}
    for c in columns:
        seen.setdefault(c[0], c)
    return tuple(seen.values())


_STEP = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)")


def _steps(path: str) -> list[tuple[str, int]]:
    """``fields.by_seqno`` → [("fields", 0), ("by_seqno", 0)]; ``command[0]``: ("command", 1)."""
    out = []
    for part in path.split("."):
        m = _STEP.fullmatch(part)
        if not m:
            raise ValueError(f"not a column path: {path!r}")
        out.append((m.group(1), m.group(2).count("[")))
    return out


def schema(columns, counted: bool) -> str:
    """The DDL of the struct that ``from_json`` parses a row's object into: the members the
    columns' paths reach, nested as the paths are."""
    tree: dict = {}
    for _, kind, path in columns:
        steps = _steps(path)
        node = tree
        for name, _ in steps[:-1]:
            node = node.setdefault(name, {})
            if not isinstance(node, dict):
                raise ValueError(f"column path {path!r} goes into a value")
        name, depth = steps[-1]
        sql = TYPES.get(kind, kind)
        if depth and not sql.startswith("array<"):
            sql = f"array<{sql}>"
        node.setdefault(name, sql)
    if counted:
        tree.setdefault("findings", "array<struct<rule:string>>")
    tree.setdefault("protocol", "string")
    return _ddl(tree)


def _ddl(tree: dict) -> str:
    return ", ".join(f"`{k}` {_ddl_type(v)}" for k, v in tree.items())


def _ddl_type(v) -> str:
    return f"struct<{_ddl(v)}>" if isinstance(v, dict) else v


def expression(path: str) -> str:
    """The SQL expression of a column's path into the parsed object ``r``."""
    text = "r"
    for name, depth in _steps(path):
        text += f".`{name}`"
    index = re.findall(r"\[(\d+)\]", path)
    return text + "".join(f"[{i}]" for i in index)


def project(rows, spec: Spec, files_df):
    """The table ``spec`` of the output rows ``rows`` (a DataFrame), with its ``file`` name
    from ``files_df`` (file_index, file)."""
    from pyspark.sql import functions as F

    picked = rows.where(spec.where).select("file_index", "key", "seq", F.col("json").cast("string").alias("json"))
    parsed = picked.withColumn("r", F.from_json("json", schema(spec.columns, spec.counted)))
    if spec.having:
        parsed = parsed.where(spec.having)
    cols = [F.expr(expression(path)).cast(TYPES.get(kind, kind)).alias(name) for name, kind, path in spec.columns]
    if spec.counted:
        cols.append(F.coalesce(F.size("r.findings"), F.lit(0)).cast("int").alias("findings"))
    if spec.json:
        cols.append(F.col("json"))
    out = parsed.select("file_index", "key", "seq", *cols)
    return out.join(F.broadcast(files_df), "file_index").select("file", "file_index", "key", "seq",
                                                               *[c[0] for c in spec.columns],
                                                               *(["findings"] if spec.counted else []),
                                                               *(["json"] if spec.json else []))
