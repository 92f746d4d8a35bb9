"""The Redis family's snapshot files: RDB files read in chunks through the streaming
decoder, printed as a key table, JSON Lines, a summary, or the detail of the keys asked
for; memory stays flat whatever the file's size (the family's ``snapshots``, which the
``rdb`` command reaches through ``engines/snapshots.py``)."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

from ...findings import LEVELS, Finding
from ...outputs.console import make_console
from ...outputs.escape import safe
from ...outputs.jsonl import dumps_line
from ...outputs.progress import progress_for
from ...outputs.rows import print_rows
from ...outputs.diagram import bytes_diagram_lines
from ...outputs.shown import Lines, Shown
from ...outputs.table import FieldTable
from ...sources.inputs import InputError, _problem, gzipped
from . import report
from .anatomy import anatomy
from .rdb import RdbParser
from .records import AuxRecord, Ending, KeyRecord
from .types import header

#: bytes read from the file at a time
CHUNK = 1 << 20
#: table rows printed at a time (one table each, so the rows are not all held)
TABLE_BATCH = 50_000
#: bytes of a key record read for its offset table and byte diagram (all of it with --full)
RECORD_READ = 1 << 20


def is_snapshot(head: bytes) -> bool:
    """Whether a file's first bytes are an RDB magic (Redis, Dragonfly or Valkey)."""
    return header(head[:9]) is not None


def show(path: Path, fmt: str, key: str | None = None, offset: int | None = None,
         shown: Shown | None = None) -> int:
    """Decode one file and print it as ``fmt`` ("table", "jsonl" or "summary"), or the
    keys named by ``key`` / covering ``offset``; returns the worst severity found (its
    rank in findings.LEVELS, -1 for none). A file that is no RDB at all is an InputError.
    A tuple of paths is a Dragonfly ``.dfs`` set, read as one snapshot (see :mod:`.dfs`); a
    shard file of one given alone is read as itself, with a note naming its set."""
    from . import dfs

    if isinstance(path, tuple):
        return dfs.show_set(path, fmt, key, offset, shown)
    note = dfs.set_note(path)
    if note is not None:
        if fmt == "jsonl" and key is None and offset is None:
            sys.stderr.write(note + "\n")
        else:
            make_console().print(safe(note))
    return _one(path, fmt, key, offset, shown or Shown())


def records(path: Path, keep=False, progress=None):
    """The records of one file, as they complete (the :class:`Ending` last); ``progress``
    (if any) told of the bytes of the file read after each chunk."""
    try:
        raw = open(path, "rb")
        fh = gzip.GzipFile(fileobj=raw, mode="rb") if gzipped(path) else raw
    except OSError as exc:
        raise _problem(path, exc) from None
    parser = RdbParser(keep=keep)
    with raw, fh:
        while True:
            try:
                chunk = fh.read(CHUNK)
            except (OSError, EOFError) as exc:
                raise InputError(f"{path}: cannot read ({exc})") from None
            if not chunk:
                break
            yield from parser.feed(chunk)
            if progress is not None:
                progress(0, raw.tell())
    yield from parser.close()


def _unusable(path: Path, rec) -> None:
    """A file that is no RDB (or too short to tell) cannot be used at all."""
    if isinstance(rec, Finding) and rec.rule == "rdb-magic":
        raise InputError(f"{path}: not an RDB file ({rec.message})")
    if isinstance(rec, Ending) and rec.vendor is None:
        raise InputError(f"{path}: {rec.bytes_read} bytes, too short to be an RDB file")


def _one(path: Path, fmt: str, key: str | None, offset: int | None, shown: Shown) -> int:
    summary = report.Summary(str(path))
    if key is not None or offset is not None:
        return _detail(path, key, offset, shown, summary)
    progress = progress_for(path, fmt)
    try:
        return _all(path, fmt, shown, summary, progress)
    finally:
        if progress is not None:
            progress.close()


def _all(path: Path, fmt: str, shown: Shown, summary: report.Summary, progress) -> int:
    keep = False
    if fmt == "jsonl":
        write = sys.stdout.buffer.write if hasattr(sys.stdout, "buffer") else None
        for rec in records(path, keep, progress):
            if type(rec) is not KeyRecord:
                _unusable(path, rec)
            summary.add(rec)
            obj = _json(rec, str(path))
            if obj is not None:
                line = dumps_line(obj)
                write(line) if write else sys.stdout.write(line.decode("ascii"))
        line = dumps_line(summary.to_json())
        write(line) if write else sys.stdout.write(line.decode("ascii"))
        sys.stdout.flush()
    elif fmt == "summary":
        for rec in records(path, keep, progress):
            if type(rec) is not KeyRecord:
                _unusable(path, rec)
            summary.add(rec)
        if progress is not None:
            progress.close()
        _print_summary(summary)
    else:
        console = make_console()
        rows: list[tuple[str, ...]] = []
        loose: list[Finding] = []
        for rec in records(path, keep, progress):
            _unusable(path, rec)
            summary.add(rec)
            if isinstance(rec, KeyRecord):
                rows.append(tuple(safe(_cut(c, shown.value)) for c in report.key_row(rec)))
                if len(rows) >= TABLE_BATCH:
                    print_rows(console, report.KEY_HEADERS, rows)
                    rows = []
            elif isinstance(rec, Finding):
                loose.append(rec)
            elif not isinstance(rec, Ending):
                loose.extend(report.findings_of(rec))
        if rows or not summary.keys:
            print_rows(console, report.KEY_HEADERS, rows)
        _print_findings(console, loose)
        console.print(safe(_closing_line(summary)))
    return max((LEVELS[s] for s, n in summary.severities.items() if n), default=-1)


def _cut(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[:limit] + f"… ({len(text) - limit:,} more)"


def _json(rec, file: str) -> dict | None:
    if isinstance(rec, KeyRecord):
        return report.key_json(rec)
    if isinstance(rec, AuxRecord):
        return report.aux_json(rec)
    if isinstance(rec, Finding):
        return report.finding_json(rec, file)
    return None


def _closing_line(s: report.Summary) -> str:
    end = s.ending
    dbs = len(s.per_db)
    where = f"{s.file}: {end.vendor} RDB version {end.version}, " if end and end.vendor else f"{s.file}: "
    errors = s.severities.get("error", 0)
    return (f"{where}{s.keys} keys in {dbs} db{'s' * (dbs != 1)}, checksum {end.checksum if end else 'unchecked'}: "
            f"{errors} errors, {sum(s.severities.values()) - errors} other findings")


def _print_findings(console, findings: list[Finding]) -> None:
    if findings:
        print_rows(console, ("offset", "severity", "rule", "message"),
                   [(str(f.offset if f.offset is not None else ""), f.severity, f.rule, safe(f.message))
                    for f in findings])


def _print_summary(s: report.Summary) -> None:
    console = make_console()
    data = s.to_json()
    console.print(safe(_closing_line(s)))
    types = sorted({t for c in s.per_db.values() for t in c})
    if types:
        print_rows(console, ("db", *types, "keys"),
                   [(str(db), *(str(c.get(t, 0)) for t in types), str(sum(c.values())))
                    for db, c in sorted(s.per_db.items())], title="Keys")
        print_rows(console, ("type/encoding", "keys"), [(k, str(v)) for k, v in data["encodings"].items()],
                   title="Encodings")
        print_rows(console, ("db", "key", "type", "size"),
                   [(str(b["db"]), safe(_cut(b["key"], 80)), b["type"], str(b["size"])) for b in data["biggest"]],
                   title="Biggest keys")
    console.print(f"Expiries: {s.expiring} keys with an expiry, {s.expired} already expired at the snapshot's time")
    if s.aux:
        print_rows(console, ("aux field", "value"), [(safe(k), safe(_cut(v, 200))) for k, v in s.aux.items()],
                   title="Aux fields")
    if s.opcodes:
        print_rows(console, ("opcode", "records"), [(k, str(v)) for k, v in data["opcodes"].items()],
                   title="Other opcodes")
    if s.findings:
        print_rows(console, ("rule", "findings"), [(k, str(v)) for k, v in data["findings"].items()],
                   title="Findings")


def _detail(path: Path, key: str | None, offset: int | None, shown: Shown, summary: report.Summary) -> int:
    """The keys named ``key`` or whose bytes cover ``offset``: what the decoder made of
    each, then its bytes as the spec-style offset table and the byte diagram (each capped
    as MCBP frames' are)."""
    console = make_console()
    want = key.encode("utf-8", "surrogateescape") if key is not None else None
    keep = (lambda k: k == want) if want is not None else True
    found = 0
    for rec in records(path, keep):
        _unusable(path, rec)
        summary.add(rec)
        found += show_key(console, path, rec, want, offset, shown)
    if not found:
        what = f"key {key!r}" if key is not None else f"offset {offset}"
        console.print(safe(f"{path}: no key at {what}"))
    return max((LEVELS[s] for s, n in summary.severities.items() if n), default=-1)


def show_key(console, path: Path, rec, want: bytes | None, offset: int | None, shown: Shown) -> bool:
    """If ``rec`` is a key named ``want`` (any, if None) whose bytes cover ``offset`` (any,
    if None): print what the decoder made of it, then its anatomy; whether it was."""
    if type(rec) is not KeyRecord or (want is not None and rec.key != want):
        return False
    if offset is not None and not rec.offset <= offset < rec.offset + max(rec.length, 1):
        return False
    print_rows(console, ("field", "value"),
               [(safe(a), safe(b)) for a, b in report.detail_rows(rec, shown.value)],
               title=safe(f"{path}: key at offset {rec.offset}"))
    if rec.blob_offset is None:
        _print_anatomy(console, path, rec, shown)
    else:
        console.print(f"(at offset {rec.blob_offset} of the blob inflated from offset {rec.offset}: "
                      "its bytes are not the file's)")
    return True


def _print_anatomy(console, path: Path, rec: KeyRecord, shown: Shown) -> None:
    """The record's fields with their file offsets, and its bytes four a row, from the file
    (at most :data:`RECORD_READ` bytes of it unless everything is shown)."""
    n = rec.length if shown.rows is None else min(rec.length, max(RECORD_READ, shown.diagram or 0))
    try:
        with gzip.open(path, "rb") if gzipped(path) else open(path, "rb") as fh:
            fh.seek(rec.offset)
            data = fh.read(n)
    except (OSError, EOFError):
        return
    record = anatomy(data, rec.offset, rec.length, rec.vtype, shown.rows, shown.value)
    console.print()
    console.print("Offsets (in the file)")
    console.print(FieldTable(list(record.table_rows())))
    console.print()
    console.print(f"Record bytes (byte 0 at offset {rec.offset} of the file)")
    console.print(Lines(bytes_diagram_lines(data, rec.offset, record.fields, shown.diagram, rec.length)), crop=False)

