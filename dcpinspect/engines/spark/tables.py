"""The Parquet tables of ``analyze``: which JSON Lines objects each table takes, its columns
taken from them, and the writer of a task's share of each table.

Every row of a table is an object the CLI prints (a line of ``decode -f jsonl``, a finding
of ``validate -f jsonl --info``, an object of ``rdb -f jsonl``) with its place (``file``,
``file_index``, ``key``, ``seq``) and, but for notes, the line itself as ``json``. What is
common to every table is here; the columns of a family's records are the family's
(:class:`~dcpinspect.families.Table`): the ``frames`` table has every family's frames,
with the columns each family declares for its own, and a family's other tables (RESP
commands, RDB keys) are written when some row of theirs is found.

A task writes its rows of each table as one Parquet file (:class:`TableFiles`): under a
hidden name first, renamed to ``part-<task>.parquet`` once whole, so that a task run twice
(a retry, a speculative copy) leaves one file, and Spark's readers skip what a failed
attempt left.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit, urlunsplit

from ...families import Table, families
from ...sources.uris import is_uri

#: Arrow types by the families' SQL names
_ARROW = {"int": "int32", "bigint": "int64", "string": "string", "double": "float64", "boolean": "bool",
          "uint64": "uint64", "array<string>": "list<string>"}
_RANGES = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1), "uint64": (0, (1 << 64) - 1)}

#: where and when, for the rows of captures
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
    """One output table: the objects it takes (``takes(kind, protocol)``; findings rows are
    the ``findings`` table's alone), its columns ``(name, type, path)``, whether it counts
    the object's findings and keeps the line as ``json``."""

    name: str
    takes: Callable[[str, Any], bool]
    columns: tuple[tuple[str, str, str], ...]
    counted: bool = True
    json: bool = True
    #: a family's table: written only when some row of it is found
    optional: bool = False


def specs() -> list[Spec]:
    """Every table, frames first."""
    tables = [t for f in families() for t in f.tables]
    frame_columns = _merge(c for t in tables if t.name == "frames" for c in t.columns)
    out = [Spec("frames", lambda kind, protocol: kind == "frame", (*WHERE, *FRAME, *frame_columns))]
    named: dict[str, list[Table]] = {}
    for t in tables:
        if t.name != "frames":
            named.setdefault(t.name, []).append(t)
    for name, group in named.items():
        pairs = frozenset((t.kind, p) for t in group for p in t.protocols)
        out.append(Spec(name, lambda kind, protocol, pairs=pairs: (kind, protocol) in pairs,
                        (*WHERE, *FRAME, *_merge(c for t in group for c in t.columns)), optional=True))
    out.append(Spec("findings", lambda kind, protocol: False, FINDING, counted=False))
    out.append(Spec("notes", lambda kind, protocol: protocol is None and kind not in ("frame", "finding"), NOTE,
                    counted=False, json=False))
    return out


def _merge(columns) -> tuple:
    """Columns in order, a name once (the first declaration of it)."""
    seen: dict[str, tuple] = {}
    for c in columns:
        seen.setdefault(c[0], c)
    return tuple(seen.values())


def getter(path: str) -> Callable[[dict], Any]:
    """A function of an object giving the value at a column's path (None when absent):
    ``a.b`` a member of a member, ``a[0]`` an element of a list."""
    steps = _steps(path)
    if len(steps) == 1:
        name = steps[0]
        return lambda obj: obj.get(name)

    def get(obj):
        for step in steps:
            if isinstance(step, int):
                obj = obj[step] if isinstance(obj, list) and -len(obj) <= step < len(obj) else None
            else:
                obj = obj.get(step) if isinstance(obj, dict) else None
            if obj is None:
                return None
        return obj

    return get


def arrow_type(kind: str):
    import pyarrow as pa

    name = _ARROW.get(kind, kind)
    if name == "list<string>":
        return pa.list_(pa.string())
    return {"int32": pa.int32(), "int64": pa.int64(), "uint64": pa.uint64(), "string": pa.string(),
            "float64": pa.float64(), "bool": pa.bool_()}[name]


def column(values: list, kind: str):
    """An Arrow array of a column's values; a value not of the column's type (or out of its
    range) is null there."""
    import pyarrow as pa

    typ = arrow_type(kind)
    try:
        return pa.array(values, typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
        return pa.array([_fit(v, kind) for v in values], typ)


def _fit(value, kind: str):
    name = _ARROW.get(kind, kind)
    if value is None:
        return None
    if name in _RANGES:
        lo, hi = _RANGES[name]
        return value if type(value) is int and lo <= value <= hi else None
    if name == "string":
        return value if isinstance(value, str) else None
    if name == "float64":
        return float(value) if type(value) in (int, float) else None
    if name == "bool":
        return value if isinstance(value, bool) else None
    if name == "list<string>":
        return [v if isinstance(v, str) else None for v in value] if isinstance(value, list) else None
    return None


def _steps(path: str) -> list:
    """``fields.by_seqno`` → ["fields", "by_seqno"]; ``command[0]`` → ["command", 0]."""
    steps: list = []
    for part in path.split("."):
        name, _, rest = part.partition("[")
        steps.append(name)
        while rest:
            index, _, rest = rest.partition("]")
            steps.append(int(index))
            rest = rest.lstrip("[")
    return steps


def source_schema(columns) -> "object":
    """The Arrow schema of what the columns read of an object: the members their paths
    reach, nested as the paths are (an index reads a list of the column's type)."""
    import pyarrow as pa

    tree: dict = {}
    for _, kind, path in columns:
        steps = _steps(path)
        node = tree
        names = [s for s in steps if isinstance(s, str)]
        for name in names[:-1]:
            node = node.setdefault(name, {})
        typ = arrow_type(kind)
        if isinstance(steps[-1], int) and not pa.types.is_list(typ):
            typ = pa.list_(typ)
        node.setdefault(names[-1], typ)
    tree.setdefault("findings", pa.list_(pa.struct([("rule", pa.string())])))

    def build(node: dict):
        return [pa.field(k, pa.struct(build(v)) if isinstance(v, dict) else v) for k, v in node.items()]

    return pa.schema(build(tree))


class TableRows:
    """One table's rows of one task, not yet written: their places and their lines."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.getters = [getter(path) for _, _, path in spec.columns]
        self.source = source_schema(spec.columns)
        self.size = 0  # bytes of the lines
        self.clear()

    def clear(self) -> None:
        self.file_index: list[int] = []
        self.key: list[int] = []
        self.seq: list[int] = []
        self.lines: list[bytes] = []
        self.size = 0

    def __len__(self) -> int:
        return len(self.key)

    def add(self, fi: int, key: int, seq: int, line: bytes) -> None:
        self.file_index.append(fi)
        self.key.append(key)
        self.seq.append(seq)
        self.lines.append(line)
        self.size += len(line)

    def extend(self, fi: int, key: int, seq: int, lines: list[bytes]) -> None:
        """Rows of ``lines``, all of file ``fi`` and ``key``, numbered from ``seq`` on."""
        n = len(lines)
        self.file_index.extend([fi] * n)
        self.key.extend([key] * n)
        self.seq.extend(range(seq, seq + n))
        self.lines.extend(lines)
        self.size += sum(map(len, lines))

    def _parsed(self):
        """The lines' objects as Arrow reads them (C++, the members the columns read, of
        their types); None when one of them does not fit its column's type."""
        import pyarrow as pa
        import pyarrow.json as pj

        data = b"\n".join(self.lines)
        try:
            return pj.read_json(pa.BufferReader(data), read_options=pj.ReadOptions(
                use_threads=False, block_size=max(1 << 20, len(data) + 1)), parse_options=pj.ParseOptions(
                explicit_schema=self.source, unexpected_field_behavior="ignore"))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError):
            return None

    def _columns(self) -> tuple[list, object]:
        """The columns, and the counts of findings: converted by Arrow in one go, or (a
        value not of its column's type) value by value."""
        import pyarrow as pa
        import pyarrow.compute as pc

        got = self._parsed()
        if got is None:
            import orjson

            objects = [orjson.loads(line) for line in self.lines]
            counts = pa.array([len(o.get("findings") or ()) if isinstance(o.get("findings"), list) else 0
                               for o in objects], pa.int32())
            return [column([get(o) for o in objects], kind)
                    for (_, kind, _), get in zip(self.spec.columns, self.getters)], counts
        out = []
        for name, kind, path in self.spec.columns:
            steps = _steps(path)
            arr = got.column(steps[0]).combine_chunks()
            for step in steps[1:]:
                arr = pc.list_element(arr, step) if isinstance(step, int) else pc.struct_field(arr, step)
            out.append(arr)
        counts = pc.fill_null(pc.list_value_length(got.column("findings").combine_chunks()), 0).cast(pa.int32())
        return out, counts

    def batch(self, files: list[str]):
        """The rows as a record batch of the table's schema (and empty again)."""
        import itertools

        import pyarrow as pa

        spec = self.spec
        names = pa.array(files, pa.string())
        indexes = pa.array(self.file_index, pa.int32())
        arrays = [names.take(indexes), indexes, pa.array(self.key, pa.int64()), pa.array(self.seq, pa.int64())]
        columns, counts = self._columns()
        arrays += columns
        if spec.counted:
            arrays.append(counts)
        if spec.json:  # lines are ASCII (dumps escapes the rest): their bytes are the strings
            lines = self.lines
            offsets = pa.array([0, *itertools.accumulate(map(len, lines))], pa.int32())
            arrays.append(pa.StringArray.from_buffers(len(lines), offsets.buffers()[1], pa.py_buffer(b"".join(lines))))
        self.clear()
        return pa.RecordBatch.from_arrays(arrays, schema=schema(spec))


def schema(spec: Spec):
    import pyarrow as pa

    fields = [pa.field("file", pa.string()), pa.field("file_index", pa.int32()), pa.field("key", pa.int64()),
              pa.field("seq", pa.int64())]
    fields += [pa.field(name, arrow_type(kind)) for name, kind, _ in spec.columns]
    if spec.counted:
        fields.append(pa.field("findings", pa.int32()))
    if spec.json:
        fields.append(pa.field("json", pa.string()))
    return pa.schema(fields)


def join(out: str, *names: str) -> str:
    """``names`` under ``out``: a directory, or a URI's path (its query, such as an S3
    endpoint, kept after it)."""
    if not is_uri(out):
        return os.path.join(out, *names)
    parts = urlsplit(out)
    return urlunsplit(parts._replace(path="/".join([parts.path.rstrip("/"), *names])))


class TableFiles:
    """The Parquet files one task writes, one per table it has rows for, under ``out``:
    ``<table>/part-<task>.parquet``, written under a hidden name and renamed when whole."""

    def __init__(self, out: str, task: str, attempt: str) -> None:
        self.out, self.task, self.attempt = out, task, attempt
        self.writers: dict[str, tuple] = {}  # table → (writer, stream, hidden name, final name)

    def write(self, spec: Spec, batch) -> None:
        import pyarrow.parquet as pq

        got = self.writers.get(spec.name)
        if got is None:
            final = join(self.out, spec.name, f"part-{self.task}.parquet")
            hidden = join(self.out, spec.name, f".part-{self.task}.parquet.{self.attempt}")
            stream = _open_output(hidden)
            writer = pq.ParquetWriter(stream, batch.schema, compression="snappy")
            got = self.writers[spec.name] = (writer, stream, hidden, final)
        got[0].write_batch(batch)

    def close(self) -> list[str]:
        """Every file made whole and in place; their tables' names."""
        for writer, stream, hidden, final in self.writers.values():
            writer.close()
            stream.close()
            _rename(hidden, final)
        return list(self.writers)


def _open_output(name: str):
    if is_uri(name):
        from ...sources.uris import locate

        fs, path = locate(name)
        return fs.open_output_stream(path)
    os.makedirs(os.path.dirname(name), exist_ok=True)
    return open(name, "wb")


def _rename(src: str, dst: str) -> None:
    if is_uri(src):
        from ...sources.uris import locate

        fs, a = locate(src)
        _, b = locate(dst)
        fs.move(a, b)
        return
    os.replace(src, dst)


def clear(out: str, names: list[str]) -> None:
    """Remove the tables ``names`` under ``out`` (a run replaces them whole)."""
    for name in names:
        target = join(out, name)
        if is_uri(target):
            from ...sources.uris import locate

            fs, path = locate(target)
            try:
                fs.delete_dir(path)
            except (FileNotFoundError, OSError):
                pass
        elif os.path.isdir(target):
            import shutil

            shutil.rmtree(target, ignore_errors=True)
