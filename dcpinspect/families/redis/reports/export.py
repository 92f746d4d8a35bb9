"""A snapshot's data as Redis commands in RESP (``rdb --format resp``), ready for
``redis-cli --pipe``: a server that runs them holds what the snapshot holds (the same
``DEBUG DIGEST``).

Per key, after ``SELECT`` when its db is not the last one's: ``SET``; ``RPUSH``; ``SADD``;
``ZADD`` (scores as Redis writes doubles, ``inf`` and ``-inf`` included); ``HSET``, and
``HPEXPIREAT ... FIELDS`` for fields with an expiry (Redis 7.4 and later take it); a stream
as ``XADD`` of each entry with its id, ``XSETID`` with its last id, entries added and
largest deleted id (an empty stream made by ``XADD ... MAXLEN 0`` first), each consumer
group by ``XGROUP CREATE ... ENTRIESREAD``, its consumers by ``XGROUP CREATECONSUMER`` and
its pending entries by ``XCLAIM ... TIME RETRYCOUNT FORCE JUSTID``; then ``PEXPIREAT`` for
a key with an expiry. Function libraries by ``FUNCTION LOAD``. A collection goes in
commands of at most :data:`BATCH_ARGS` elements and about :data:`BATCH_BYTES` bytes each.

A pending entry whose message was deleted (``XDEL`` after delivery: the PEL keeps it) is
claimed as the server lets it be: a placeholder entry (:data:`PLACEHOLDER`) is added at its
id among the others, claimed, then deleted (``XDEL``), and ``XSETID`` once more puts back
the stream's largest deleted id; the stream's entries and digest are untouched. A consumer's seen time (and Redis 7.2's active time) cannot be given: every
command that makes or names a consumer sets it to the time of loading.

The C record lane writes the commands of the keys it reads itself, but streams'
(``_rdb_resp.h``: the same commands, batches and texts), which :meth:`Exporter.key` takes
as they are.

A key that cannot be written back is not exported, and said so by ``skip(rec, reason)``
(counted in ``skipped``): a module's value (only its module can write it), a value the
decoder did not keep whole, a type no command makes (Dragonfly's filters).
"""

from __future__ import annotations

from ..rdb.data import redis_double
from ..rdb.records import KeyRecord, OpRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

#: a group's entries_read when the server does not know it (SCG_INVALID_ENTRIES_READ)
UNKNOWN_READ = (1 << 64) - 1
#: most elements (members, fields, pairs) one command carries
BATCH_ARGS = 512
#: about the most bytes of elements one command carries (one larger element goes alone)
BATCH_BYTES = 1 << 20
#: the field and value of the placeholder that a deleted pending entry is claimed through
PLACEHOLDER = (b"deleted", b"")


def command(*parts: bytes) -> bytes:
    """One command as a RESP array of bulk strings."""
    out = [b"*%d\r\n" % len(parts)]
    for p in parts:
        out.append(b"$%d\r\n%s\r\n" % (len(p), p))
    return b"".join(out)


def _b(v) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode()


def _read_whole(v) -> bool:
    """Whether a value holds every element whole: the readers give an element they could
    not hold (past the string cap, or damaged) as None, a pair's part too."""
    if isinstance(v, (bytes, bytearray)):
        return True
    return all(e is not None and (type(e) is not tuple or (e[0] is not None and (len(e) < 2 or e[1] is not None)))
               for e in v)


def _id(sid) -> bytes:
    return b"%d-%d" % sid


class Exporter:
    """Writes each key record (values kept) as commands through ``write``; ``keys``,
    ``commands`` and ``skipped`` count what it did."""

    def __init__(self, write: Callable[[bytes], object] | None,
                 skip: Callable[[KeyRecord, str], object] | None = None) -> None:
        self.write = write
        self.skip = skip
        #: the db the output is in (None: none yet; anything else that is no int, such as
        #: :data:`.stripes.TURN`: not known until the output is written, see ``turn_start``)
        self.db: object = None
        #: what is told of the first key's db where the db is not known (it settles the SELECT)
        self.turn_start: Callable[[int], object] | None = None
        self.keys = self.commands = self.skipped = 0

    def _skipped(self, rec: KeyRecord, reason: str) -> None:
        self.skipped += 1
        if self.skip is not None:
            self.skip(rec, reason)

    def _send(self, *parts: bytes) -> None:
        self.write(command(*parts))
        self.commands += 1

    def _batched(self, head: tuple, items, width: int = 1) -> None:
        """``head`` then the items' parts, as many commands as the batch bounds need."""
        parts: list[bytes] = []
        size = n = 0
        for item in items:
            parts.extend(item)
            size += sum(len(p) for p in item)
            n += 1
            if n >= BATCH_ARGS or size >= BATCH_BYTES:
                self._send(*head, *parts)
                parts, size, n = [], 0, 0
        if parts:
            self._send(*head, *parts)

    def op(self, rec: OpRecord) -> None:
        """A record that is no key: a function library is loaded."""
        code = rec.fields.get("code")
        if rec.name == "FUNCTION2" and isinstance(code, bytes):
            self._send(b"FUNCTION", b"LOAD", code)

    def _select(self, db: int) -> None:
        if self.db is None or type(self.db) is int or self.turn_start is None:
            self._send(b"SELECT", b"%d" % db)
        else:
            self.turn_start(db)
        self.db = db

    def put(self, db: int, data: bytes) -> None:
        """A key of ``db`` whose commands ``data`` are made already (and counted)."""
        if db != self.db:
            self._select(db)
        self.keys += 1
        self.write(data)

    def key(self, rec: KeyRecord) -> None:
        if rec.line is not None:  # its commands, written by the C lane (RdbParser's resp), counted already
            self.put(rec.db, rec.line)
            return
        t, v, k = rec.vtype.type, rec.value, rec.key
        layout = rec.vtype.layout
        if t == "module":
            self._skipped(rec, f"a value of module {rec.extra.get('module', '?')!r}, which only that module can write back")
            return
        if (v is None and t != "stream") or (t != "stream" and not _read_whole(v)):
            self._skipped(rec, "its value was not read whole")
            return
        if t not in ("string", "ReJSON-RL", "list", "set", "zset", "hash") and not (
                t == "stream" and layout.startswith("stream")):
            self._skipped(rec, f"no command makes a {t} ({rec.vtype.rdb_name})")
            return
        if rec.db != self.db:
            self._select(rec.db)
        self.keys += 1
        if t in ("string", "ReJSON-RL"):
            self._send(b"SET", k, v)
        elif t == "list":
            self._batched((b"RPUSH", k), ((e,) for e in v))
        elif t == "set":
            self._batched((b"SADD", k), ((e[0] if isinstance(e, tuple) else e,) for e in v))
        elif t == "zset":
            self._batched((b"ZADD", k), ((redis_double(s).encode(), m) for m, s in v))
        elif t == "hash":
            self._batched((b"HSET", k), ((_b(e[0]), _b(e[1])) for e in v))
            expiring = [e for e in v if len(e) > 2 and e[2] is not None]
            for e in expiring:
                self._send(b"HPEXPIREAT", k, b"%d" % e[2], b"FIELDS", b"1", _b(e[0]))
        else:
            self._stream(rec)
        if rec.expire_ms is not None:
            self._send(b"PEXPIREAT", k, b"%d" % rec.expire_ms)

    def _stream(self, rec: KeyRecord) -> None:
        k = rec.key
        meta = rec.extra.get("stream", {})
        entries = rec.value or []
        last = meta.get("last_id", (0, 0))
        groups = meta.get("groups") or ()
        live = {sid for sid, _ in entries}
        # pending entries whose message was deleted: added as placeholders, claimed, deleted again
        gone = sorted({e["id"] for g in groups for e in g.get("pel", ()) if e["id"] not in live})
        placeholders = [(sid, (PLACEHOLDER,)) for sid in gone]
        for sid, fields in sorted((*entries, *placeholders), key=lambda e: e[0]) if gone else entries:
            self._send(b"XADD", k, _id(sid), *(p for f, x in fields for p in (f, x)))
        if not entries and not gone:  # an empty stream: made, then emptied
            self._send(b"XADD", k, b"MAXLEN", b"0", _id(last) if last != (0, 0) else b"0-1", b"f", b"v")
        setid = [b"XSETID", k, _id(last)]
        if "entries_added" in meta:
            setid += [b"ENTRIESADDED", b"%d" % meta["entries_added"], b"MAXDELETEDID", _id(meta["max_deleted_id"])]
        self._send(*setid)
        self._groups(k, groups)
        if gone:  # the placeholders go, and with them what XDEL changed (the largest deleted id)
            self._batched((b"XDEL", k), ((_id(sid),) for sid in gone))
            self._send(*setid)

    def _groups(self, k: bytes, groups) -> None:
        for g in groups:
            name = g["name"]
            create = [b"XGROUP", b"CREATE", k, name, _id(g["last_id"])]
            if g.get("entries_read", UNKNOWN_READ) != UNKNOWN_READ:
                create += [b"ENTRIESREAD", b"%d" % g["entries_read"]]
            self._send(*create)
            owner = {sid: c["name"] for c in g.get("consumers", ()) for sid in c.get("pel", ())}
            for c in g.get("consumers", ()):
                self._send(b"XGROUP", b"CREATECONSUMER", k, name, c["name"])
            for e in g.get("pel", ()):
                consumer = owner.get(e["id"])
                if consumer is None:
                    continue
                self._send(b"XCLAIM", k, name, consumer, b"0", _id(e["id"]), b"TIME", b"%d" % e["delivery_time"],
                           b"RETRYCOUNT", b"%d" % e["delivery_count"], b"FORCE", b"JUSTID")
