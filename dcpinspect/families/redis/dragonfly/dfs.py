"""Dragonfly's ``.dfs`` snapshot sets (spec/rdb.md §8.1): one snapshot written as
``<name>-summary.dfs`` (the global data: scripts, search indices, aux ``shard-count`` and
``table-mem``) and ``<name>-0000.dfs`` … ``<name>-NNNN.dfs``, one file a shard (aux
``shard-id``), all with the same random ``snapshot-id`` aux field.

The files of a set are found by their names (:func:`gather`: the summary given, or two
files of one set, bring in every member beside them), read one after the other through the
streaming decoder, and judged together by :class:`SetChecks`:

- ``dfs-snapshot-id``: a member whose ``snapshot-id`` is not the set's (the summary's);
- ``dfs-shard-missing``: shard files missing against the summary's ``shard-count``, a gap
  in their numbers, or one past the count;
- ``dfs-summary-missing``: shard files without their summary;
- ``dfs-shard-id``: a shard file whose ``shard-id`` is not the number in its name;
- ``dfs-duplicate-key``: a key in two shard files (every entry in exactly one shard); keys
  are remembered as the BLAKE2b digests of their db and name that the replication
  correlator uses (8 bytes a key, one table for the set: a key twice in one file is that
  file's ``rdb-duplicate-key``), ``DCPINSPECT_MAX_RDB_KEYS`` of them (``dfs-keys-cap``
  says when the rest went unchecked).

:func:`show_set` prints a set as one snapshot (the key table with each key's shard, JSON
Lines with each key's ``shard`` and ``file``, a summary with the keys of each shard)."""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ....findings import LEVELS, Finding
from ....limits import RDB_KEYS
from ....outputs.console import make_console
from ....outputs.escape import safe
from ....outputs.jsonl import dumps_line
from ....outputs.progress import progress_sized
from ....outputs.rows import print_rows
from ....outputs.shown import Shown
from ..rules import DFS_RULES
from ..reports import report
from ..rdb.decoder import Seen
from ..rdb.records import AuxRecord, Ending, KeyRecord
from ....sources.inputs import InputError
from ..reports.snapshots import (
    ALL, TABLE_BATCH, Reading, _cut, _json, _print_summary, _unusable, export, key_test, records, show_key,
)
from .syncs import key_digest

#: a member of a set: ``<name>-summary.dfs`` or ``<name>-<shard, 4 digits or more>.dfs``, gzip'd or not
MEMBER_NAME = re.compile(r"(?P<name>.+)-(?P<part>summary|[0-9]{4,9})\.dfs(?:\.gz)?\Z", re.S)
#: shard numbers listed in one finding's message at most
MAX_LISTED = 20
#: how bad a checksum state is, the worst first (the set's is its worst member's)
CHECKSUM_RANK = ("mismatch", "unchecked", "absent", "not computed", "ok")


@dataclass(frozen=True, slots=True)
class Member:
    """One file of a set: its path, and its shard number (None: the summary file)."""

    path: Path
    shard: int | None

    @property
    def label(self) -> str:
        return "summary" if self.shard is None else f"{self.shard:04d}"


def part_of(path: Path) -> tuple[str, int | None] | None:
    """The set name and shard number (None: the summary) a file's name says, if it names a member."""
    m = MEMBER_NAME.match(path.name)
    if m is None:
        return None
    part = m.group("part")
    return m.group("name"), None if part == "summary" else int(part)


def _set_key(path: Path, name: str) -> tuple[str, str]:
    try:
        parent = str(path.parent.resolve())
    except OSError:
        parent = str(path.parent)
    return parent, name


def members_beside(given: list[Path]) -> list[Member]:
    """Every member of the set of ``given`` (files of one set) found in their directory: the
    summary first, then the shards in their order; a file given stands for its part even if
    another spelling of it (gzip'd or not) is beside it."""
    name = part_of(given[0])[0]
    parts: dict[int | None, Path] = {}
    for path in given:
        parts.setdefault(part_of(path)[1], path)
    folder = given[0].parent
    try:
        entries = sorted(e.name for e in os.scandir(folder) if e.name.startswith(name + "-"))
    except OSError:
        entries = []
    for entry in entries:
        found = part_of(Path(entry))
        if found is not None and found[0] == name and found[1] not in parts:
            path = folder / entry
            if path.is_file():
                parts[found[1]] = path
    order = sorted(parts, key=lambda s: -1 if s is None else s)
    return [Member(parts[s], s) for s in order]


def gather(items: list) -> list:
    """The files given with each ``.dfs`` set read as one snapshot made one tuple of paths
    (every member found beside them, the summary first): a set is read whole when its
    summary is given, or two or more of its files; a shard file given alone stays itself.
    Each set comes once, where its first file was given; anything else passes as it is."""
    paths = [Path(item) if isinstance(item, (str, os.PathLike)) else None for item in items]
    given: dict[tuple[str, str], list[Path]] = {}
    for path in paths:
        if path is not None and (part := part_of(path)) is not None:
            given.setdefault(_set_key(path, part[0]), []).append(path)
    out: list = []
    done: set[tuple[str, str]] = set()
    for item, path in zip(items, paths):
        part = part_of(path) if path is not None else None
        if part is None:
            out.append(item)
            continue
        key = _set_key(path, part[0])
        if key in done:
            continue
        same = given[key]
        whole = any(part_of(p)[1] is None for p in same) or len({part_of(p)[1] for p in same}) > 1
        if not whole:
            out.append(item)
            continue
        done.add(key)
        out.append(tuple(m.path for m in members_beside(same)))
    return out


def set_label(members: list[Member]) -> str:
    """How a set is named in the outputs: its files' common pattern (``dir/name-*.dfs``)."""
    path = members[0].path
    return str(path.parent / f"{part_of(path)[0]}-*.dfs")


def set_note(path: Path) -> str | None:
    """What a shard file given alone should say of the set it belongs to (None when its
    name is no member's or nothing of its set is beside it)."""
    part = part_of(path)
    if part is None or part[1] is None:
        return None
    members = members_beside([path])
    others = [m for m in members if m.path != path]
    if not others:
        return None
    summary = next((m.path for m in members if m.shard is None), None)
    give = f"give {summary}" if summary is not None else "give its files together"
    return (f"note: {path} is shard {part[1]} of the Dragonfly snapshot set {set_label(members)} "
            f"({len(others)} other file{'s' * (len(others) != 1)} beside it); {give} to read the whole set "
            "as one snapshot")


def _numbers(shards: list[int], count: int | None = None) -> str:
    """The first :data:`MAX_LISTED` of ``shards``, and how many more of ``count`` in all."""
    count = len(shards) if count is None else count
    text = ", ".join(f"{s:04d}" for s in shards[:MAX_LISTED])
    return text + (f" and {count - MAX_LISTED:,} more" if count > MAX_LISTED else "")


def _missing(have: list[int], below: int) -> tuple[int, list[int]]:
    """(how many numbers from 0 to ``below`` are not in ``have`` (sorted), the first
    :data:`MAX_LISTED` of them): counted from the numbers present, whatever ``below`` is."""
    present = [s for s in sorted(set(have)) if 0 <= s < below]
    first: list[int] = []
    nxt = 0
    for s in present + [below]:
        while nxt < s and len(first) < MAX_LISTED:
            first.append(nxt)
            nxt += 1
        if len(first) >= MAX_LISTED:
            break
        nxt = s + 1
    return below - len(present), first


def _text(raw: bytes) -> str:
    return raw[:200].decode("utf-8", "backslashreplace")


class SetChecks:
    """The rules of a set (see the module's docstring), told each member's aux fields and
    keys as they are read (member ``i`` of ``members``, one after the other)."""

    def __init__(self, members: list[Member]) -> None:
        self.members = members
        self.cap = RDB_KEYS.value()
        self.capped = False
        #: digests of the keys of the whole set (63 bits of each: :class:`~.rdb.Seen` takes
        #: signed 64-bit numbers)
        self.every = Seen()
        #: the members whose keys were remembered, in order
        self.keyed: list[int] = []
        #: member index → {aux name: (value, offset)} of the aux fields the rules read
        self.aux_of: dict[int, dict[bytes, tuple[bytes, int]]] = {}

    def aux(self, i: int, rec: AuxRecord) -> None:
        if rec.key in (b"snapshot-id", b"shard-id", b"shard-count"):
            self.aux_of.setdefault(i, {}).setdefault(rec.key, (rec.value, rec.offset))

    def key(self, i: int, rec: KeyRecord) -> Finding | None:
        """A key record of member ``i``: the finding it makes, if any."""
        if rec.findings and any(f.rule == "rdb-duplicate-key" for f in rec.findings):
            return None  # twice in this file: the file's own rule says so
        every = self.every
        if len(every) >= self.cap:
            if self.capped:
                return None
            self.capped = True
            return DFS_RULES["dfs-keys-cap"].finding(
                f"{len(every):,} keys remembered (DCPINSPECT_MAX_RDB_KEYS): from this key of "
                f"{self.members[i].path} on, keys are not checked for being in two shards", rec.offset)
        if not self.keyed or self.keyed[-1] != i:
            self.keyed.append(i)
        if every.add(key_digest(rec.db, rec.key) >> 1):
            return None
        earlier = len(self.keyed) - 1
        where = (f"{self.members[self.keyed[0]].path}" if earlier == 1
                 else f"one of the {earlier} files with keys before it")
        return DFS_RULES["dfs-duplicate-key"].finding(
            f"key {_text(rec.key)} of db {rec.db} is also in {where}: a key is in exactly one shard of a snapshot",
            rec.offset)

    def end(self, i: int) -> list[Finding]:
        """Member ``i`` was read: its ``shard-id`` against its name."""
        member = self.members[i]
        if member.shard is None:
            return []
        have = self.aux_of.get(i, {}).get(b"shard-id")
        if have is None:
            return [DFS_RULES["dfs-shard-id"].finding(
                f"{member.path} has no shard-id aux field (its name says shard {member.shard})")]
        value, offset = have
        if _number(value) != member.shard:
            return [DFS_RULES["dfs-shard-id"].finding(
                f"{member.path} says shard-id {_text(value)}, its name shard {member.shard}", offset)]
        return []

    def finish(self) -> list[tuple[int, Finding]]:
        """Every member was read: what only the whole set shows, each finding with the
        member it concerns (its index)."""
        out: list[tuple[int, Finding]] = []
        members = self.members
        summary = next((i for i, m in enumerate(members) if m.shard is None), None)
        shards = sorted(m.shard for m in members if m.shard is not None)
        if summary is None:
            out.append((0, DFS_RULES["dfs-summary-missing"].finding(
                f"no {part_of(members[0].path)[0]}-summary.dfs beside the set's {len(shards)} shard "
                f"file{'s' * (len(shards) != 1)}: its global data and shard-count are missing")))
        out += self._shards(summary, shards)
        out += self._snapshot_ids(summary)
        return out

    def _shards(self, summary: int | None, shards: list[int]) -> list[tuple[int, Finding]]:
        rule = DFS_RULES["dfs-shard-missing"]
        counted = [(i, self.aux_of[i][b"shard-count"]) for i in sorted(self.aux_of, key=lambda i: i != summary)
                   if b"shard-count" in self.aux_of[i]]
        count = _number(counted[0][1][0]) if counted else None
        have = set(shards)
        if count is not None:
            i, (_, offset) = counted[0]
            out = []
            missing, first = _missing(shards, count)
            if missing:
                out.append((i, rule.finding(
                    f"shard-count is {count}, and no shard file is found for shard {_numbers(first, missing)} "
                    f"({len(have)} found)", offset)))
            past = [s for s in shards if s >= count]
            if past:
                out.append((i, rule.finding(f"shard-count is {count}, and shard file {_numbers(past)} "
                                                 "is past it", offset)))
            return out
        gaps, first = _missing(shards, shards[-1]) if shards else (0, [])
        if gaps:
            return [(0, rule.finding(
                f"no shard file for shard {_numbers(first, gaps)}, below shard {shards[-1]:04d} (no shard-count "
                "read)"))]
        return []

    def _snapshot_ids(self, summary: int | None) -> list[tuple[int, Finding]]:
        ids = {i: self.aux_of.get(i, {}).get(b"snapshot-id") for i in range(len(self.members))}
        named = [have[0] for have in ids.values() if have is not None]
        if not named:
            return []
        if summary is not None and ids[summary] is not None:
            reference, source = ids[summary][0], self.members[summary].path
        else:
            reference = Counter(named).most_common(1)[0][0]
            source = next(self.members[i].path for i, have in ids.items() if have is not None and have[0] == reference)
        out = []
        rule = DFS_RULES["dfs-snapshot-id"]
        for i, have in ids.items():
            member = self.members[i]
            if have is None:
                out.append((i, rule.finding(f"{member.path} has no snapshot-id aux field; the set's is "
                                                 f"{_text(reference)} ({source})")))
            elif have[0] != reference:
                out.append((i, rule.finding(f"{member.path} has snapshot-id {_text(have[0])}, the set's is "
                                                 f"{_text(reference)} ({source})", have[1])))
        return out


def _number(raw: bytes) -> int | None:
    try:
        value = int(raw[:20])
    except ValueError:
        return None
    return value if value >= 0 else None


def read_set(members: list[Member], checks: SetChecks, keep=False, select=None, measure=None, progress=None,
             on_header=None):
    """The records of each member in turn, as ``(index, record)``, the set's findings on the
    key records and after each member, and the whole set's last (a file that is no RDB at all
    is an InputError); ``progress`` (if any) hears of the bytes read of the whole set, ``on_header``
    of each member's vendor and version."""
    judge = checks.key
    before = 0  # the bytes of the members read before this one
    for i, member in enumerate(members):
        heard = None if progress is None else (lambda done, at, before=before: progress(done, before + at))
        for rec in records(member.path, keep, select, measure=measure, progress=heard, on_header=on_header):
            kind = type(rec)
            if kind is KeyRecord:
                finding = judge(i, rec)
                if finding is not None:
                    rec.findings.append(finding)
            else:
                _unusable(member.path, rec)
                if kind is AuxRecord:
                    checks.aux(i, rec)
            yield i, rec
        for finding in checks.end(i):
            yield i, finding
        if progress is not None:
            before += _size(member.path)
    yield from checks.finish()


def _size(path: Path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _set_progress(members: list[Member], fmt: str):
    """The progress line of a set read whole: by the bytes of its files read (a gzip file's
    compressed bytes), or None."""
    return progress_sized(sum(_size(m.path) for m in members), fmt=fmt)


class MemberFigures:
    """What the outputs say of one member: its keys, bytes, checksum, and findings."""

    def __init__(self) -> None:
        self.keys = 0
        self.ending: Ending | None = None
        self.findings: Counter = Counter()
        self.severities: Counter = Counter()

    def count(self, findings) -> None:
        for f in findings:
            self.findings[f.rule] += 1
            self.severities[f.severity] += 1


class SetFigures:
    """A set's figures: the whole snapshot's (a :class:`report.Summary`, with the aux fields of
    its first file, the summary) and each member's."""

    def __init__(self, members: list[Member], checks: SetChecks) -> None:
        self.members = members
        self.checks = checks
        self.total = report.Summary(set_label(members))
        self.each = [MemberFigures() for _ in members]
        self._keys_before = 0

    def add(self, i: int, rec) -> None:
        if type(rec) is KeyRecord:  # the common case, first: the member's keys are counted at its end
            self.total.add(rec)
            if rec.findings:
                self.each[i].count(rec.findings)
            return
        each = self.each[i]
        found = report.findings_of(rec)
        each.count(found)
        if isinstance(rec, AuxRecord) and i:
            for f in found:
                self.total.add(f)
            return
        if isinstance(rec, Ending):
            each.ending = rec
            each.keys = self.total.keys - self._keys_before
            self._keys_before = self.total.keys
        self.total.add(rec)

    def close(self) -> None:
        """All was read: the set's ending is its worst member's, with the bytes of all."""
        endings = [e.ending for e in self.each if e.ending is not None]
        if not endings:
            return
        worst = min(endings, key=lambda e: (CHECKSUM_RANK.index(e.checksum), e.eof_offset is not None))
        self.total.ending = worst.replace(bytes_read=sum(e.bytes_read for e in endings),
                                          trailing=sum(e.trailing for e in endings),
                                          stopped=any(e.stopped for e in endings), findings=[])

    def worst(self) -> int:
        return max((LEVELS[s] for s, n in self.total.severities.items() if n), default=-1)

    def shard_rows(self) -> list[dict]:
        rows = []
        for i, (member, each) in enumerate(zip(self.members, self.each)):
            end = each.ending
            aux = self.checks.aux_of.get(i, {})
            rows.append({
                "shard": member.shard, "file": str(member.path), "keys": each.keys,
                "bytes": end.bytes_read if end else 0, "checksum": end.checksum if end else "unchecked",
                "complete": bool(end and end.eof_offset is not None and not end.stopped),
                "shard_id": _text(aux[b"shard-id"][0]) if b"shard-id" in aux else None,
                "snapshot_id": _text(aux[b"snapshot-id"][0]) if b"snapshot-id" in aux else None,
                "findings": dict(sorted(each.findings.items()))})
        return rows

    def to_json(self) -> dict:
        out = self.total.to_json()
        out["set"] = "dfs"
        out["shards"] = self.shard_rows()
        return out

    def line(self) -> str:
        """The set's closing line."""
        t = self.total
        end = t.ending
        shards = sum(m.shard is not None for m in self.members)
        summary = " and its summary" if any(m.shard is None for m in self.members) else ", no summary"
        head = f"{end.vendor} RDB version {end.version}, " if end and end.vendor else ""
        errors = t.severities.get("error", 0)
        dbs = len(t.per_db)
        return (f"{t.file}: Dragonfly snapshot set of {shards} shard file{'s' * (shards != 1)}{summary}, {head}"
                f"{t.keys} keys in {dbs} db{'s' * (dbs != 1)}, checksum {end.checksum if end else 'unchecked'}: "
                f"{errors} errors, {sum(t.severities.values()) - errors} other findings")

    def member_line(self, i: int) -> str:
        each, member = self.each[i], self.members[i]
        errors = each.severities.get("error", 0)
        checksum = each.ending.checksum if each.ending else "unchecked"
        return (f"{member.path}: {member.label}, {each.keys} keys, checksum {checksum}: {errors} errors, "
                f"{sum(each.severities.values()) - errors} other findings")


def members_of(paths) -> list[Member]:
    """The members of a set, from the paths :func:`gather` gave (in its order)."""
    return [Member(Path(p), part_of(Path(p))[1]) for p in paths]


def show_set(paths, fmt: str, key: str | None = None, offset: int | None = None,
             shown: Shown | None = None, how: Reading = ALL) -> int:
    """Read the files of a set (a tuple from :func:`gather`) as one snapshot and print it as
    ``fmt`` ("table", "jsonl" or "summary"), or the keys named by ``key`` / covering
    ``offset`` in any member, read as ``how`` says (:class:`.snapshots.Reading`); returns
    the worst severity found (its rank in findings.LEVELS, -1 for none)."""
    members = members_of(paths)
    select = how.select
    checks = SetChecks(members)
    figures = SetFigures(members, checks)
    shown = shown or Shown()
    if key is not None or offset is not None:
        _detail(members, checks, figures, key, offset, shown, how, fmt)
        return figures.worst()
    progress = _set_progress(members, fmt)
    try:
        if fmt == "resp":
            export((rec for i, rec in _figured(read_set(members, checks, True, select, progress=progress), figures)),
                   figures.total, lambda rec: None)  # read_set checks each member
            figures.close()
        elif fmt == "jsonl":
            _jsonl(members, checks, figures, how, progress)
        elif fmt == "summary":
            digester = how.digester()
            if digester is not None:
                figures.total.digest = digester.snapshot
            for i, rec in read_set(members, checks, digester is not None, select, progress=progress):
                figures.add(i, rec)
                if digester is not None:
                    digester.key(rec) if type(rec) is KeyRecord else digester.see(rec)
            figures.close()
            if progress is not None:
                progress.close()
            _print_set_summary(figures)
        else:
            _table(members, checks, figures, shown, select, progress)
    finally:
        if progress is not None:
            progress.close()
    return figures.worst()


def _figured(pairs, figures: SetFigures):
    """The ``(index, record)`` pairs of :func:`read_set`, each added to the set's figures."""
    for i, rec in pairs:
        figures.add(i, rec)
        yield i, rec


def _jsonl(members: list[Member], checks: SetChecks, figures: SetFigures, how: Reading = ALL, progress=None) -> None:
    write = sys.stdout.buffer.write if hasattr(sys.stdout, "buffer") else (lambda b: sys.stdout.write(b.decode()))
    files = [str(m.path) for m in members]
    digester = how.digester()
    if digester is not None:
        figures.total.digest = digester.snapshot
    for i, rec in read_set(members, checks, digester is not None, how.select, progress=progress):
        figures.add(i, rec)
        member = members[i]
        if type(rec) is not KeyRecord and digester is not None:
            digester.see(rec)
        obj = _json(rec, files[i], digester, how.values)
        if obj is None:
            continue
        obj["shard"] = member.shard
        obj["file"] = files[i]
        write(dumps_line(obj))
    figures.close()
    write(dumps_line(figures.to_json()))
    sys.stdout.flush()


def _table(members: list[Member], checks: SetChecks, figures: SetFigures, shown: Shown, select=None,
           progress=None) -> None:
    console = make_console()
    headers = ("shard", *report.KEY_HEADERS)
    rows: list[tuple[str, ...]] = []
    loose: list[tuple[int, Finding]] = []
    printed = False
    for i, rec in read_set(members, checks, False, select, progress=progress):
        figures.add(i, rec)
        if type(rec) is KeyRecord:
            rows.append((members[i].label, *(safe(_cut(c, shown.value)) for c in report.key_row(rec))))
            if len(rows) >= TABLE_BATCH:
                print_rows(console, headers, rows)
                rows, printed = [], True
        elif isinstance(rec, Finding):
            loose.append((i, rec))
        elif not isinstance(rec, Ending):
            loose.extend((i, f) for f in report.findings_of(rec))
    figures.close()
    if rows or not printed:
        print_rows(console, headers, rows)
    if loose:
        print_rows(console, ("file", "offset", "severity", "rule", "message"),
                   [(safe(str(members[i].path)), "" if f.offset is None else str(f.offset), f.severity, f.rule,
                     safe(f.message)) for i, f in loose])
    for i in range(len(members)):
        console.print(safe(figures.member_line(i)))
    console.print(safe(figures.line()))


def _print_set_summary(figures: SetFigures) -> None:
    console = make_console()
    console.print(safe(figures.line()))
    print_rows(console, ("shard", "file", "keys", "bytes", "checksum", "shard-id", "snapshot-id", "findings"),
               [(r["shard"] is None and "summary" or f"{r['shard']:04d}", safe(r["file"]), str(r["keys"]),
                 str(r["bytes"]), r["checksum"], safe(r["shard_id"] or ""), safe(r["snapshot_id"] or ""),
                 " ".join(f"{k}:{v}" for k, v in r["findings"].items())) for r in figures.shard_rows()],
               title="Keys per shard")
    _print_summary(figures.total)


def _detail(members: list[Member], checks: SetChecks, figures: SetFigures, key: str | None, offset: int | None,
            shown: Shown, how: Reading = ALL, fmt: str = "table") -> None:
    """The keys named ``key`` (by their bytes or the text the table shows) or whose bytes
    cover ``offset``, in any member, as ``rdb FILE --key`` shows them, each under its
    file's name (as jsonl: each key's object with its value and digest); none found is an
    InputError."""
    console = make_console()
    keep = key_test(key) if key is not None else True
    digester = Reading(digest=True).digester()
    found = 0
    for i, rec in read_set(members, checks, keep, how.select):
        figures.add(i, rec)
        if type(rec) is not KeyRecord:
            digester.see(rec)
            continue
        if (key is not None and not keep(rec.key)) or (
                offset is not None and not rec.offset <= offset < rec.offset + max(rec.length, 1)):
            continue
        found += 1
        if fmt == "jsonl":
            obj = report.key_json(rec, digester, True)
            obj["shard"], obj["file"] = members[i].shard, str(members[i].path)
            sys.stdout.write(dumps_line(obj).decode("ascii"))
        else:
            show_key(console, members[i].path, rec, None, offset, shown)
    figures.close()
    if not found:
        what = f"key {key!r}" if key is not None else f"offset {offset}"
        raise InputError(f"{figures.total.file}: no key at {what} in any file of the set")
    sys.stdout.flush()
