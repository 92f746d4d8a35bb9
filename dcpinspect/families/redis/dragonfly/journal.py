"""Dragonfly's journal records (spec/rdb.md §9): what a JOURNAL_BLOB carries in a full
sync, and what a flow streams raw in stable sync. Every integer is a packed uint, the RDB
length encoding."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..rdb.primitives import Corrupt, NeedMore, read_len

SELECT, EXPIRED, COMMAND, MULTI_COMMAND, EXEC, PING, LSN = 6, 9, 10, 11, 12, 13, 15
NOOP, FIN = 0, 14
OP_NAMES = {SELECT: "SELECT", EXPIRED: "EXPIRED", COMMAND: "COMMAND", MULTI_COMMAND: "MULTI_COMMAND",
            EXEC: "EXEC", PING: "PING", LSN: "LSN", NOOP: "NOOP", FIN: "FIN"}


@dataclass(slots=True)
class JournalEntry:
    """One journal record: its op and what it carries."""

    op: int
    offset: int
    length: int
    dbid: int | None = None
    txid: int | None = None
    lsn: int | None = None
    args: list[bytes] = field(default_factory=list)

    @property
    def name(self) -> str:
        return OP_NAMES.get(self.op, f"op {self.op}")


def read_entry(buf, p: int, cap: int) -> tuple[JournalEntry, int]:
    """One record at ``p`` (raises NeedMore or Corrupt as the primitives do)."""
    op, q = read_len(buf, p)
    entry = JournalEntry(op, p, 0)
    if op == SELECT:
        entry.dbid, q = read_len(buf, q)
    elif op in (COMMAND, EXPIRED, MULTI_COMMAND):
        entry.txid, q = read_len(buf, q)
        _shards, q = read_len(buf, q)
        count, q = read_len(buf, q)
        total, q = read_len(buf, q)
        if total > cap:
            raise Corrupt(f"a command of {total:,} bytes is more than the {cap:,} taken", p)
        seen = 0
        for _ in range(count):
            size, q = read_len(buf, q)
            seen += size
            if seen > total:
                raise Corrupt(f"the command's strings pass its total size {total}", q)
            end = q + size
            if end > len(buf):
                raise NeedMore(end)
            entry.args.append(bytes(buf[q:end]))
            q = end
        if seen != total:
            raise Corrupt(f"the command's strings make {seen} bytes, its total size says {total}", q)
    elif op == EXEC:
        entry.txid, q = read_len(buf, q)
        _shards, q = read_len(buf, q)
    elif op == LSN:
        entry.lsn, q = read_len(buf, q)
    elif op not in (PING, NOOP, FIN):
        raise Corrupt(f"journal op {op} is unknown", p)
    entry.length = q - p
    return entry, q


def read_entries(blob: bytes, cap: int) -> list[JournalEntry]:
    """Every record of a whole blob (a JOURNAL_BLOB's string)."""
    out, p = [], 0
    while p < len(blob):
        try:
            entry, p = read_entry(blob, p, cap)
        except NeedMore:
            raise Corrupt(f"the journal record at {p} is cut short by the end of the blob", p) from None
        out.append(entry)
    return out


class Oversized(Exception):
    """A command record holds more than the caller takes (bytes past the cap, or more
    strings than the element cap): ``entry`` says what it is, its strings (``strings`` of
    them, ``total`` bytes) begin at index ``start``, to be passed over as they come."""

    def __init__(self, entry: JournalEntry, start: int, strings: int, total: int, why: str) -> None:
        super().__init__(why)
        self.entry, self.start, self.strings, self.total = entry, start, strings, total


def selects(buf, q: int, dbid: int | None, most: int | None = None) -> tuple[int, int | None, bool]:
    """The SELECTs from ``q``: (the index after the last whole one, the db it names, whether
    the buffer ends in them rather than at another op). Corrupt where one is damaged, or
    past ``most`` of them."""
    seen = 0
    while True:
        try:
            op, r = read_len(buf, q)
            if op != SELECT:
                return q, dbid, False
            db, r = read_len(buf, r)
        except NeedMore:
            return q, dbid, True
        seen += 1
        if most is not None and seen > most:
            raise Corrupt(f"more than {most} SELECTs in a row", q)
        q, dbid = r, db


def read_record(buf, p: int, cap: int, max_strings: int, after: tuple[int, int | None] | None = None,
                most_selects: int | None = None) -> tuple[JournalEntry, int]:
    """One record as a flow streams it in stable sync (§9, §13.2): the SELECTs before an op
    belong to it (the replica reads them so: the last sets its ``dbid``), then the op.
    Raises NeedMore (with an index the whole record needs at least), Corrupt, or
    :class:`Oversized` for a command past ``cap`` bytes or ``max_strings`` strings.
    ``after``: (index, db) after the record's SELECTs when the caller has read them
    already (see :func:`selects`), so that a long run of them is read once."""
    if after is None:
        q, dbid, short = selects(buf, p, None, most_selects)
        if short:
            raise NeedMore(len(buf) + 1)
    else:
        q, dbid = after
    op, r = read_len(buf, q)
    if op in (COMMAND, EXPIRED, MULTI_COMMAND):
        txid, r = read_len(buf, r)
        _shards, r = read_len(buf, r)
        count, r = read_len(buf, r)
        total, r = read_len(buf, r)
        if total > cap or count > max_strings:
            entry = JournalEntry(op, p, 0, dbid, txid)
            raise Oversized(entry, r, count, total, f"a command of {count:,} strings and {total:,} bytes")
        if r + total + count > len(buf):  # each string has a length byte at least
            raise NeedMore(r + total + count)
        args, seen = [], 0
        for _ in range(count):
            size, r = read_len(buf, r)
            seen += size
            if seen > total:
                raise Corrupt(f"the command's strings pass its total size {total}", r)
            end = r + size
            if end > len(buf):
                raise NeedMore(end)
            args.append(bytes(buf[r:end]))
            r = end
        if seen != total:
            raise Corrupt(f"the command's strings make {seen} bytes, its total size says {total}", r)
        return JournalEntry(op, p, r - p, dbid, txid, None, args), r
    entry, end = read_entry(buf, q, cap)
    entry.offset, entry.length, entry.dbid = p, end - p, dbid
    return entry, end
