"""The keys of RDB data as ``diff`` compares them (:class:`~dcpinspect.families.DataKey`):
of a snapshot file or ``.dfs`` set, and of a full sync's payload decoded from a capture.

Both sides' digests are ``DEBUG DIGEST-VALUE``'s of the value alone (as if the key had no
expiry: expiries are compared apart), with scores written the one way (Redis 7.2's),
whatever server wrote each file, so that the same data compares equal across versions. A key whose digest cannot be made (a module's value) is compared by type and
expiry. Notes (strings) say what was not read: a snapshot whose decoding stopped.
"""

from __future__ import annotations

from typing import Iterator

from ... import DataKey, DataStart
from ..rdb.digest import digests
from ..rdb.records import Ending, KeyRecord


def _key(rec: KeyRecord, digest: str | None = None) -> DataKey:
    if digest is None:
        both = digests(rec, expiry=False)
        digest = None if both is None else f"{both[0]:040x}"
    return DataKey(rec.db, rec.key, rec.vtype.type, digest, rec.expire_ms)


def snapshot_data(item) -> Iterator:
    """The keys of a snapshot file (a path) or a ``.dfs`` set (a tuple of paths)."""
    if isinstance(item, tuple):
        from ..dragonfly.dfs import SetChecks, members_of, read_set

        members = members_of(item)
        pairs = read_set(members, SetChecks(members), True)
        name = str(members[0].path)
    else:
        from .snapshots import _unusable, records

        pairs = ((0, rec) for rec in records(item, True))
        name = str(item)
    for _, rec in pairs:
        if type(rec) is KeyRecord:
            yield _key(rec)
            rec.value = None
            continue
        if not isinstance(item, tuple):
            _unusable(item, rec)
        if isinstance(rec, Ending) and rec.stopped:
            yield (f"{name}: decoding stopped after {rec.bytes_read:,} bytes (see `dcpinspect rdb`): "
                   "its keys after the damage are not compared")


def data_keys(record) -> Iterator:
    """The keys a decoded record carries: a full sync's RDB payload piece read with
    ``Options.data`` (their digests made by the session), after a ``DataStart`` when the
    piece is the payload's header."""
    from ..replication.frames import PayloadRecord

    if not isinstance(record, PayloadRecord):
        return
    for rec in data_records(record):
        if isinstance(rec, DataStart):
            yield rec
        elif isinstance(rec, KeyRecord):
            yield _key(rec)  # digested again: the session wrote scores as the payload's server does
    if record.summary is not None and not record.summary.get("complete", True):
        yield "a full sync's payload in the capture is incomplete: its keys after the loss are not compared"


def data_records(record) -> Iterator:
    """The RDB records a full sync's payload piece carries (read with ``Options.data``:
    values kept), after a ``DataStart`` when the piece is the payload's header."""
    from ..replication.frames import PayloadRecord

    if not isinstance(record, PayloadRecord):
        return
    if record.head is not None:  # a full sync's payload begins
        yield DataStart(record.offset)
    yield from record.records
