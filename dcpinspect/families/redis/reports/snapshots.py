"""The Redis family's snapshot files: RDB files read in chunks through the streaming
decoder, printed as a key table, JSON Lines, a summary, or the detail of the keys asked
for; memory stays flat whatever the file's size (the family's ``snapshots``, which the
``rdb`` command reaches through ``engines/snapshots.py``)."""

from __future__ import annotations

import gc
import gzip
import os
import sys
import zlib
from contextlib import contextmanager

from ....findings import LEVELS, Finding
from ... import SentData
from ....messages.text import key_text
from ....outputs.escape import safe
from ....outputs.jsonl import dumps_line
from ....outputs.progress import progress_for
from ....outputs.shown import Shown
from ....sources.inputs import InputError, _problem, gzipped
from . import report
from ..rdb.decoder import RdbParser
from ..rdb.records import AuxRecord, Ending, KeyRecord, OpRecord
from ..rdb.types import header
from ....slots import Slots

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

#: bytes read from the file at a time
CHUNK = 1 << 20
#: table rows printed at a time (one table each, so the rows are not all held)
TABLE_BATCH = 50_000
#: bytes of a key record read for its offset table and byte diagram (all of it with --full)
RECORD_READ = 1 << 20


def make_console():
    """The outputs' console on standard output (rich imported only for what it alone prints)."""
    from ....outputs.plain import stdout_console

    return stdout_console()


def print_rows(*args, **kw) -> None:
    from ....outputs.rows import print_rows

    print_rows(*args, **kw)


def is_snapshot(head: bytes) -> bool:
    """Whether a file's first bytes are an RDB magic (Redis, Dragonfly or Valkey)."""
    return header(head[:9]) is not None


def show(path: Path, fmt: str, key: str | None = None, offset: int | None = None,
         shown: Shown | None = None, select: dict | None = None, values: bool = False,
         digest: bool = False, reports: dict | None = None, jobs: int = 0) -> int:
    """Decode one file and print it as ``fmt`` ("table", "jsonl", "summary", or "resp": its
    data as Redis commands, see :mod:`.export`), or the
    keys named by ``key`` / covering ``offset``; returns the worst severity found (its
    rank in findings.LEVELS, -1 for none). A file that is no RDB at all is an InputError,
    and so is a ``key`` it does not hold. A tuple of paths is a Dragonfly ``.dfs`` set,
    read as one snapshot (see :mod:`.dfs`); a shard file of one given alone is read as
    itself, with a note naming its set. ``select``: the key selection's options by name
    (:meth:`.selection.KeySelection.from_options`; a value it cannot take is an
    InputError); ``values``: jsonl key objects carry their values and digests (and
    functions their code); ``digest``: the keys' and the snapshot's digests are computed
    (``values`` implies it); ``reports``: the memory reports asked for instead (see
    :func:`show_reports`); ``jobs``: the processes that may share the writing of a large
    file's keys, as jsonl with values or as resp (:mod:`.stripes`: 0 as the machine and the
    file say, 1 one)."""
    how = Reading(selection_of(select), values, digest or values, jobs)
    if reports:
        return show_reports(path, fmt, reports, how.select)
    if isinstance(path, tuple):
        from ..dragonfly import dfs

        return dfs.show_set(path, fmt, key, offset, shown, how)
    name = os.fspath(path) if isinstance(path, (str, os.PathLike)) else getattr(path, "path", None)  # None: a stream
    note = None
    if name and ".dfs" in os.path.basename(name):  # (a set's member is named so: nothing else reads dfs)
        from pathlib import Path

        from ..dragonfly import dfs

        note = dfs.set_note(Path(name))
    if note is not None:
        if fmt == "jsonl" and key is None and offset is None:
            sys.stderr.write(note + "\n")
        else:
            make_console().print(safe(note))
    return _one(path, fmt, key, offset, shown or Shown(), how)


class Reading(Slots):
    """How a snapshot is read: which keys (a :class:`~.selection.KeySelection`, or None
    for all), whether jsonl carries values, whether digests are computed, and the
    processes that may share the writing of a file's keys (``jobs``: jsonl --values, resp;
    0: as the machine and the file say, see :mod:`.stripes`)."""

    __slots__ = ("select", "values", "digest", "jobs")

    def __init__(self, select: Any = None, values: bool = False, digest: bool = False, jobs: int = 0) -> None:
        self.select = select
        self.values = values
        self.digest = digest
        self.jobs = jobs

    __hash__ = Slots.hashed

    def digester(self):
        """A :class:`~.digest.Digester` when digests are asked for, else None."""
        if not self.digest:
            return None
        from ..rdb.digest import Digester

        return Digester()


ALL = Reading()


def selection_of(select: dict | None):
    """The :class:`~.selection.KeySelection` of the options ``select`` gives, or None."""
    if not select:
        return None
    from .selection import KeySelection

    try:
        return KeySelection.from_options(select)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def records(path, keep=False, select=None, recent: "_Recent | None" = None, measure=None, progress=None,
            on_header=None, lines=None, stripe=None, resp=None):
    """The records of one file, as they complete (the :class:`Ending` last); only the keys
    ``select`` (a :class:`~.selection.KeySelection`) admits, when one is given. ``path``: a
    path, or an input opened already (``sources.inputs.Contents``: read on from its start,
    never opened again); ``recent`` keeps the last bytes read, for a stream's record anatomy;
    with ``measure`` (a :class:`~.memory.LaneMeasure`), the keys the C lane measures for
    the memory model come without their values; ``progress`` (if any) hears of the bytes
    read after each chunk; ``on_header`` (if any) hears of the file's vendor and version;
    ``lines`` (a :class:`~.digest.SnapshotDigest`): the keys the C lane reads come as their
    whole JSON line (``RdbParser``'s ``lines``), of the keys of ``stripe`` only when given
    (``RdbParser``'s ``stripe``); ``resp``: an Exporter, for which the keys the C lane reads
    come as their commands (``RdbParser``'s ``resp``)."""
    opened = hasattr(path, "read")
    try:
        fh = path if opened else gzip.open(path, "rb") if gzipped(path) else open(path, "rb")
    except OSError as exc:
        raise _problem(path, exc) from None
    parser = RdbParser(keep=keep, select=select, measure=measure, on_header=on_header, lines=lines, stripe=stripe,
                       resp=resp)
    at = 0
    # how far into the file itself: a gzip file's compressed bytes, not those they inflate to
    where = fh.fileobj.tell if isinstance(fh, gzip.GzipFile) else None
    try:
        while True:
            try:
                chunk = fh.read(CHUNK)
            except (OSError, EOFError, zlib.error) as exc:  # zlib's: gzip corrupt inside
                raise InputError(f"{path}: cannot read ({exc})") from None
            if not chunk:
                break
            if recent is not None:
                recent.add(at, chunk)
            at += len(chunk)
            yield from parser.records(chunk)
            if progress is not None:
                progress(0, at if where is None else where())
    finally:
        if not opened:
            fh.close()
    yield from parser.close()


#: the collector's first generation while a file's records are read (Python's default: 700)
REPORTS_GC_THRESHOLD = 50_000


@contextmanager
def few_collections():
    """While a file's records are read: the records, and the tables and rows they fill,
    are small objects that hold no cycles, so the collector's passes over them, every 700
    of them, are work for nothing; it runs every :data:`REPORTS_GC_THRESHOLD` instead
    (cycles are still collected)."""
    threshold = gc.get_threshold()
    gc.set_threshold(REPORTS_GC_THRESHOLD, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)


def show_reports(path, fmt: str, asked: dict, select=None) -> int:
    """The memory reports of one file or ``.dfs`` set (:mod:`.usage`), printed as a table,
    JSON Lines or CSV (``fmt``), of the keys ``select`` (a
    :class:`~.selection.KeySelection`) admits; ``asked``: the report names and their
    options (:func:`usage_options`), and ``plot``, a path for the flame graph."""
    from ..dragonfly import dfs
    from . import usage

    from .memory import ALLOCATORS, LaneMeasure

    options = usage_options(asked)
    reports = usage.Reports(options)
    measure = LaneMeasure(options.config)
    plot = None
    if asked.get("plot"):
        from .flame import Flame

        plot = reports.plot = Flame(options.prefix_cap)
    csv_all = fmt == "csv" and "memory" in options.names
    out = _csv_writer() if fmt == "csv" else None
    if csv_all:
        out.writerow(usage.CSV_COLUMNS)
    worst = -1
    if isinstance(path, tuple):
        members = dfs.members_of(path)
        checks = dfs.SetChecks(members)
        stream = ((members[i].shard, rec)
                  for i, rec in dfs.read_set(members, checks, keep=True, select=select, measure=measure,
                                             on_header=reports.header))
    elif isinstance(path, SentData):
        stream = ((None, rec) for rec in _selected(path.records, select))
    else:
        stream = records(path, keep=True, select=select, measure=measure, on_header=reports.header)  # (shard: None)
    shard = None
    with few_collections():
        for rec in stream:
            if type(rec) is tuple:
                shard, rec = rec
            kind = type(rec)
            if kind is KeyRecord:
                m = reports.add(rec, shard, keep=csv_all)
                if csv_all:
                    out.writerow(_csv_cells(m.csv_row()))
                if not rec.findings:
                    continue
            else:
                _unusable(path[0] if isinstance(path, tuple) else path, rec)
                if kind is AuxRecord:
                    reports.aux(rec)
            for f in report.findings_of(rec):
                worst = max(worst, LEVELS[f.severity])
    if fmt == "jsonl":
        for obj in reports.json_objects():
            sys.stdout.buffer.write(dumps_line(obj))
    elif fmt == "csv":
        for name, (title, headers, rows) in zip(options.names, reports.tables()):
            if name == "memory":
                continue
            if csv_all or name != options.names[0]:
                out.writerow(())
            out.writerow(headers)
            out.writerows(_csv_cells(r) for r in rows)
    else:
        console = make_console()
        for title, headers, rows in reports.tables():
            console.print(safe(title))
            print_rows(console, headers, [tuple("" if c is None else safe(str(c)) for c in r) for r in rows])
            console.print()
        cfg = reports.options.config
        server = "7.2" if cfg.set_listpacks else "7.0"
        jemalloc = "Redis's bundled" if cfg.sizes.quantum == ALLOCATORS["bundled"] else "a system"
        console.print(f"{reports.keys:,} keys, {reports.memory:,} bytes estimated (Redis {server}'s structures, "
                      f"the server's thresholds{' of the config given' if asked.get('config') else ''}, "
                      f"{jemalloc} jemalloc)")
        if reports.valkey is not None:
            console.print(safe(usage.VALKEY_NOTE))
    sys.stdout.flush()
    if plot is not None:
        try:
            with open(asked["plot"], "w", encoding="utf-8") as out:
                out.write(plot.svg())
        except OSError as exc:
            raise InputError(f"--plot {asked['plot']}: {exc.strerror or exc}") from None
    return worst


def _selected(recs, select):
    """Records decoded already (values kept), of the keys ``select`` admits (all when None)
    at the snapshot's ``ctime`` as its aux field gives it."""
    ctime = None
    for rec in recs:
        kind = type(rec)
        if kind is AuxRecord and rec.key == b"ctime":
            ctime = _ctime_ms(rec.value)
        elif kind is KeyRecord and select is not None and not select.admits(rec, ctime):
            continue
        yield rec


def _ctime_ms(value) -> int | None:
    try:
        return int(value) * 1000
    except (TypeError, ValueError):
        return None


def usage_options(asked: dict):
    """:class:`.usage.Options` from the command line's words: ``names``, ``top``, ``seps``
    (text), ``depth``, ``at`` (Unix seconds or ISO 8601, as the key selection takes it),
    ``config`` (a redis.conf path)."""
    from . import usage
    from dataclasses import replace

    from .memory import ALLOCATORS, DEFAULTS, Config
    from .selection import parse_time

    names = tuple(dict.fromkeys(asked.get("names") or ("memory",)))
    unknown = [n for n in names if n not in usage.NAMES]
    if unknown:
        raise InputError(f"--report {unknown[0]!r}: one of {', '.join(usage.NAMES)}")
    seps = tuple(s.encode("utf-8", "surrogateescape") for s in asked.get("seps") or (":",) if s)
    if not seps:
        raise InputError("--sep needs a separator")
    try:
        config = Config.read(asked["config"]) if asked.get("config") else DEFAULTS
    except OSError as exc:
        raise InputError(f"--config {asked['config']}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if asked.get("allocator"):
        if asked["allocator"] not in ALLOCATORS:
            raise InputError(f"--allocator {asked['allocator']!r}: one of {', '.join(ALLOCATORS)}")
        config = replace(config, allocator=asked["allocator"])
    try:
        at_ms = parse_time(asked["at"]) if asked.get("at") else None
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return usage.Options(names=names, top=asked.get("top") or 20, seps=seps, depth=asked.get("depth") or 2,
                         at_ms=at_ms, config=config)


def _csv_cells(row) -> tuple:
    """A CSV row with its text made safe for a terminal (keys come from the file)."""
    return tuple(safe(c) if isinstance(c, str) else c for c in row)


def _csv_writer():
    import csv

    return csv.writer(sys.stdout, lineterminator="\n")


class _Recent:
    """The last bytes read from a stream, which cannot be read again: enough for a record
    of up to :data:`RECORD_READ` bytes that ends in the chunk just read."""

    def __init__(self, keep: int = RECORD_READ + 2 * CHUNK) -> None:
        self.keep = keep
        self.parts: list[tuple[int, bytes]] = []

    def add(self, start: int, chunk: bytes) -> None:
        self.parts.append((start, chunk))
        while sum(len(c) for _, c in self.parts[1:]) >= self.keep:
            self.parts.pop(0)

    def get(self, offset: int, n: int) -> bytes | None:
        """``n`` bytes from ``offset`` (fewer at the end), or None when they are no longer held."""
        if not self.parts or offset < self.parts[0][0]:
            return None
        first = self.parts[0][0]
        data = b"".join(c for _, c in self.parts)
        return data[offset - first:offset - first + n]


def _unusable(path: Path, rec) -> None:
    """A file that is no RDB (or too short to tell) cannot be used at all."""
    if isinstance(rec, Finding) and rec.rule == "rdb-magic":
        raise InputError(f"{path}: not an RDB file ({rec.message})")
    if isinstance(rec, Ending) and rec.vendor is None:
        raise InputError(f"{path}: {rec.bytes_read} bytes, too short to be an RDB file")


def _progress(path, fmt: str):
    """The progress line of an opened input read whole, or None: by the bytes read from the
    input itself (gzip's compressed bytes, not those they inflate to)."""
    inp = getattr(path, "_input", None)
    if inp is None:
        return None
    progress = progress_for(inp, fmt)
    if progress is not None and getattr(path, "gzipped", False):
        progress.where = inp.tell
    return progress


def _one(path: Path, fmt: str, key: str | None, offset: int | None, shown: Shown, how: Reading = ALL) -> int:
    summary = report.Summary(str(path))
    if key is not None or offset is not None:
        return _detail(path, key, offset, shown, summary, how, fmt)
    progress = _progress(path, fmt)
    try:
        with few_collections():
            return _all(path, fmt, shown, summary, how, progress)
    finally:
        if progress is not None:
            progress.close()


def _all(path, fmt: str, shown: Shown, summary: report.Summary, how: Reading, progress) -> int:
    select, digester = how.select, how.digester()
    keep = digester is not None
    if digester is not None:
        summary.digest = digester.snapshot
    if fmt == "resp":
        helper = _helper(path, how, fmt) if select is None else None
        try:
            export(lambda exporter: records(path, True, select, resp=exporter,
                                            stripe=None if helper is None else helper.stripe),
                   summary, lambda rec: _unusable(path, rec), helper)
        finally:
            if helper is not None:
                helper.close()
    elif fmt == "jsonl":
        lines = digester.snapshot if how.values and digester is not None else None
        helper = _helper(path, how, fmt) if lines is not None and select is None else None
        try:
            recs = records(path, keep, select, progress=progress, lines=lines,
                           stripe=None if helper is None else helper.stripe)
            turns = None if helper is None else helper.turns(sys.stdout.fileno())
            write_jsonl(recs, str(path), summary, digester, turns, lambda rec: _unusable(path, rec), how.values)
            if helper is not None:
                from .stripes import add_digest

                counted = helper.finish()
                add_digest(digester.snapshot, counted)
                summary.merge(counted["summary"])
        finally:
            if helper is not None:
                helper.close()
        line = dumps_line(summary.to_json())
        sys.stdout.buffer.write(line) if hasattr(sys.stdout, "buffer") else sys.stdout.write(line.decode("ascii"))
        sys.stdout.flush()
    elif fmt == "summary":
        # with --digest, the keys the lane writes whole lines of have added their part already
        lines = digester.snapshot if digester is not None else None
        for rec in records(path, keep, select, progress=progress, lines=lines):
            if type(rec) is not KeyRecord:
                _unusable(path, rec)
            if digester is not None:
                if type(rec) is not KeyRecord:
                    digester.see(rec)
                elif rec.line is None:
                    digester.key(rec)
            summary.add(rec)
        if progress is not None:
            progress.close()
        _print_summary(summary)
    else:
        console = make_console()
        rows: list[tuple[str, ...]] = []
        loose: list[Finding] = []
        for rec in records(path, keep, select, progress=progress):
            _unusable(path, rec)
            summary.add(rec)
            if isinstance(rec, KeyRecord):
                if digester is not None:
                    digester.key(rec)
                rows.append(tuple(safe(_cut(c, shown.value)) for c in report.key_row(rec)))
                if len(rows) >= TABLE_BATCH:
                    print_rows(console, report.KEY_HEADERS, rows)
                    rows = []
            elif isinstance(rec, Finding):
                loose.append(rec)
            elif not isinstance(rec, Ending):
                if digester is not None:
                    digester.see(rec)
                loose.extend(report.findings_of(rec))
        if rows or not summary.keys:
            print_rows(console, report.KEY_HEADERS, rows)
        _print_findings(console, loose)
        console.print(safe(_closing_line(summary)))
    return max((LEVELS[s] for s, n in summary.severities.items() if n), default=-1)


def _helper(path, how: Reading, fmt: str):
    """A :class:`~.stripes.Helper` writing part of the keys of ``path`` as ``fmt``, when the
    file is to be shared between two processes (:func:`~.stripes.shared_path`), else None."""
    from . import stripes

    name = stripes.shared_path(path, how.jobs)
    if name is None:
        return None
    try:
        fd = sys.stdout.fileno()  # (both processes write to it)
    except (AttributeError, OSError, ValueError):
        return None
    sys.stdout.flush()  # (nothing written before the fork is written twice)
    sys.stderr.flush()
    return stripes.Helper(name, fmt, fd, str(path))


def write_jsonl(recs, file: str, summary: report.Summary, digester, turns=None, check=None,
                values: bool = True) -> None:
    """The records' JSON lines (with ``values``, the keys' values; with a ``digester``,
    their digests), on stdout or in ``turns`` (a :class:`~.stripes.Turns`: the lines of this
    process's turns); the keys written are added to ``summary``. ``check``: given each
    record that is no key, which is counted too (the first process); None: the helper,
    which counts only the keys it writes."""
    if turns is not None:
        emit = turns.write
    elif hasattr(sys.stdout, "buffer"):
        emit = sys.stdout.buffer.write
    else:
        def emit(line: bytes) -> None:
            sys.stdout.write(line.decode("ascii"))
    add_key = summary.add_key
    key = None if turns is None else turns.key
    start = end = 0  # (the stripe of the key before: its keys are the same process's)
    mine = True
    for rec in recs:
        if type(rec) is KeyRecord:
            if key is not None:
                at = rec.offset
                if not start <= at < end:
                    mine = key(at)
                    start, end = turns.stripe_of(at)
                if not mine:
                    continue  # (the other process's: its line and its figures)
            add_key(rec)
            line = rec.line  # (written whole by the C lane, else None)
            emit(line if line is not None else dumps_line(report.key_json(rec, digester, values), False))
            continue  # (a key's object holds no float)
        if check is not None:
            check(rec)
            summary.add(rec)
        if digester is not None:
            digester.see(rec)
        if turns is not None and not turns.ours:
            continue
        obj = _json(rec, file, digester, values)
        if obj is not None:
            emit(dumps_line(obj, True))


def said_not_exported(rec: KeyRecord, why: str) -> None:
    """On stderr: a key that is not exported, and why."""
    sys.stderr.write(safe(f"not exported: db {rec.db} key {key_text(rec.key)!r} at offset {rec.offset}: {why}") + "\n")
    sys.stderr.flush()


def export(recs, summary: report.Summary, check, helper=None, turns=None, exporter=None) -> None:
    """The records (values kept) as RESP commands on stdout (:mod:`.export`); ``check`` is
    given each record that is no key first; the findings and what was exported, on stderr.
    ``recs``: the records, or what makes them of the Exporter (``records``'s ``resp``);
    ``helper``: a :class:`~.stripes.Helper` that writes the keys of its stripes in turns
    with this process. The helper itself gives its ``turns`` and ``exporter``, and no
    ``check``: it writes the commands of its turns, and counts its keys only."""
    from .export import Exporter

    if exporter is None:
        if sys.stdout.isatty():
            raise InputError("--format resp writes the data as it is: send it to a file or a pipe "
                             "(| redis-cli --pipe), not to a terminal")
        out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else None
        exporter = Exporter(out.write if out is not None else (lambda b: sys.stdout.write(b.decode("latin-1"))),
                            said_not_exported)
    if helper is not None:
        turns = helper.turns(sys.stdout.fileno(), exporter)
    loose: list[Finding] = []
    for rec in recs(exporter) if callable(recs) else recs:
        kind = type(rec)
        if kind is KeyRecord:
            if turns is not None and not turns.key(rec.offset):  # the other process's
                if check is not None and rec.findings:  # (said here, in the file's order; counted by the helper)
                    loose.extend(rec.findings)
                continue
            exporter.key(rec)
        else:
            if check is not None:
                check(rec)
            if kind is OpRecord and (turns is None or turns.ours):
                exporter.op(rec)
            if check is None:  # (the helper: the first process checks and counts what is no key)
                continue
            if kind is not Ending:
                loose.extend(report.findings_of(rec))
        summary.add(rec)
        if kind is KeyRecord and rec.findings and check is not None:
            loose.extend(rec.findings)
    if helper is None:
        if check is None:
            return
        sys.stdout.flush()
    else:
        counted = helper.finish()
        exporter.keys += counted["keys"]
        exporter.commands += counted["commands"] + turns.selects
        exporter.skipped += counted["skipped"]
        summary.merge(counted["summary"])
    for f in loose:
        sys.stderr.write(safe(f"{f.severity}: {f.rule} at offset {f.offset}: {f.message}") + "\n")
    skipped = f", {exporter.skipped} keys not exported (each named above)" if exporter.skipped else ""
    sys.stderr.write(safe(f"{summary.file}: {exporter.keys} keys exported in {exporter.commands} commands{skipped}")
                     + "\n")


def _cut(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[:limit] + f"… ({len(text) - limit:,} more)"


def _json(rec, file: str, digester=None, values: bool = False) -> dict | None:
    if isinstance(rec, KeyRecord):
        return report.key_json(rec, digester, values)
    if isinstance(rec, AuxRecord):
        return report.aux_json(rec)
    if isinstance(rec, Finding):
        return report.finding_json(rec, file)
    if values and isinstance(rec, OpRecord):
        from ..rdb.data import function_json

        return function_json(rec)
    return None


def _closing_line(s: report.Summary) -> str:
    end = s.ending
    dbs = len(s.per_db)
    where = f"{s.file}: {end.vendor} RDB version {end.version}, " if end and end.vendor else f"{s.file}: "
    errors = s.severities.get("error", 0)
    digest = s.digest_json()
    said = (f", digest {digest['digest']}" + (f" ({digest['digest_unknown']} module values unknown)"
                                               if digest["digest_unknown"] else "")) if digest else ""
    return (f"{where}{s.keys} keys in {dbs} db{'s' * (dbs != 1)}, checksum {end.checksum if end else 'unchecked'}"
            f"{said}: {errors} errors, {sum(s.severities.values()) - errors} other findings")


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


def _detail(path: Path, key: str | None, offset: int | None, shown: Shown, summary: report.Summary,
            how: Reading = ALL, fmt: str = "table") -> int:
    """The keys named ``key`` or whose bytes cover ``offset``: what the decoder made of
    each, then its bytes as the spec-style offset table and the byte diagram (each capped
    as MCBP frames' are); as jsonl, each key's object with its value and digest. A key
    is found by its bytes or by the text the table shows of it; none found is an InputError."""
    console = make_console()
    keep = key_test(key) if key is not None else True
    digester = how.digester() or Reading(digest=True).digester()
    found = 0
    recent = _Recent() if getattr(path, "path", "") is None else None  # a stream: its bytes come once
    for rec in records(path, keep, how.select, recent):
        _unusable(path, rec)
        summary.add(rec)
        if type(rec) is not KeyRecord:
            digester.see(rec)
            continue
        if key is not None and not keep(rec.key):
            continue
        if offset is not None and not rec.offset <= offset < rec.offset + max(rec.length, 1):
            continue
        found += 1
        if fmt == "jsonl":
            sys.stdout.write(dumps_line(report.key_json(rec, digester, True)).decode("ascii"))
        else:
            show_key(console, path, rec, None, offset, shown, recent)
    if not found:
        what = f"key {key!r}" if key is not None else f"offset {offset}"
        raise InputError(f"{path}: no key at {what}")
    sys.stdout.flush()
    return max((LEVELS[s] for s, n in summary.severities.items() if n), default=-1)


def key_test(key: str):
    """The test of a key's bytes against a name given on the command line: its bytes
    (surrogate escapes undone), or the text the table and jsonl show of them."""
    want = key.encode("utf-8", "surrogateescape")
    if "\\" not in key:  # every escaped form has a backslash
        return want.__eq__

    def test(raw: bytes) -> bool:
        return raw == want or key_text(raw) == key or safe(key_text(raw)) == key

    return test


def show_key(console, path: Path, rec, want: bytes | None, offset: int | None, shown: Shown,
             recent: _Recent | None = None) -> bool:
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
        _print_anatomy(console, path, rec, shown, recent)
    else:
        console.print(f"(at offset {rec.blob_offset} of the blob inflated from offset {rec.offset}: "
                      "its bytes are not the file's)")
    return True


def _print_anatomy(console, path: Path, rec: KeyRecord, shown: Shown, recent: _Recent | None = None) -> None:
    """The record's fields with their file offsets, and its bytes four a row, from the file
    (at most :data:`RECORD_READ` bytes of it unless everything is shown); of a stream, from
    the bytes last read (``recent``), when they still hold the record."""
    from ....outputs.diagram import bytes_diagram_lines
    from ....outputs.shown import Lines
    from ....outputs.table import FieldTable
    from .anatomy import anatomy

    n = rec.length if shown.rows is None else min(rec.length, max(RECORD_READ, shown.diagram or 0))
    if recent is not None:
        data = recent.get(rec.offset, min(n, RECORD_READ))
        if data is None:
            console.print("(the record's bytes were read from a stream and are no longer held: give a file "
                          "to see them)")
            return
    else:
        name = getattr(path, "path", path)
        try:
            with gzip.open(name, "rb") if gzipped(name) else open(name, "rb") as fh:
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

