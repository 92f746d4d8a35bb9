"""Dragonfly's syncs across the connections of one capture (spec/rdb.md §13): the Redis
family's correlator (``families.Correlator``).

A Dragonfly replica opens a control connection, whose ``REPLCONF capa dragonfly`` answer
announces a sync (``SYNC<n>``) of the master (its replid) with N flows, then N ``DFLY FLOW
<replid> SYNC<n> <i>`` connections, one per master shard, each carrying that shard's
snapshot. :class:`Syncs` hears of each from the connections' sessions, keyed by (master
replid, sync id), and judges at the capture's end what no single connection can:

- ``dfly-duplicate-key``: a key serialised by two flows of one sync (every entry exactly
  once, each in its own shard); keys are remembered as 64-bit BLAKE2b digests of their db
  and name, the same in every process, with the flow and the offset of the first record
  that had them (``DCPINSPECT_MAX_RDB_KEYS`` of them in all: ``dfly-keys-cap`` says when
  the rest went unchecked);
- ``dfly-sync-unannounced``: a FLOW for a sync that no control connection announced, when
  one from the same replica host to the same master was seen announcing before it;
- ``dfly-flow-count``: a sync whose control connection was seen from its announcement to
  ``DFLY SYNC`` (or ``STARTSTABLE``), with fewer FLOW connections than it announced (or
  one whose index is past them).

Plain data (dicts, sets, tuples, ints and strings): it pickles, and :meth:`Syncs.merge`
folds in one fed with other connections of the same capture (another worker process, a
Spark task), so that the findings are the same however the capture was split.
"""

from __future__ import annotations

from hashlib import blake2b

from ....limits import RDB_KEYS
from ..rules import DFLY_RULES

#: a remembered key's flow index sits in the low bits, its db above them, the offset of its
#: record above both
FLOW_BITS = DB_BITS = 16
FLOW_MASK = DB_MASK = (1 << 16) - 1
#: findings of one kind and sync written out at most; the rest are counted in the last
MAX_FINDINGS = 1000


def key_digest(db: int, key: bytes) -> int:
    """A key's identity across processes (Python's ``hash`` differs between them)."""
    return int.from_bytes(blake2b(db.to_bytes(8, "little") + key, digest_size=8).digest(), "little")


class Syncs:
    """What the capture's Dragonfly connections said of their syncs (see the module's
    docstring)."""

    def __init__(self) -> None:
        #: (replid, sync id) → (control connection, frame of the answer, flows announced)
        self.announced: dict[tuple[str, str], tuple] = {}
        #: (replid, sync id) → frame of the first DFLY SYNC or STARTSTABLE on its control connection
        self.started: dict[tuple[str, str], int] = {}
        #: (replid, sync id) → {flow index: (its connection, frame of DFLY FLOW)}
        self.flows: dict[tuple[str, str], dict[int, tuple]] = {}
        #: (replid, sync id) → {key digest: its first record, packed (see :func:`_pack`)}
        self.keys: dict[tuple[str, str], dict[int, int]] = {}
        #: (replid, sync id) → {key digest: (db, {flow index: offset of its first record})} of
        #: the keys of two flows or more
        self.twice: dict[tuple[str, str], dict[int, tuple[int, dict[int, int]]]] = {}
        self.remembered = 0
        self.cap = RDB_KEYS.value()  # digests remembered at most
        self.capped: tuple | None = None  # (sync, flow index, offset) of the first key not remembered

    # -- what the sessions report -----------------------------------------------------------

    def announce(self, conn, frame: int, replid: str, sync_id: str, flows: int | None) -> None:
        """A control connection's ``REPLCONF capa dragonfly`` was answered."""
        sync = (replid, sync_id)
        have = self.announced.get(sync)
        if have is None or frame < have[1]:
            self.announced[sync] = (conn, frame, flows)

    def start(self, frame: int, replid: str, sync_id: str) -> None:
        """The control connection asked for the sync's next phase (DFLY SYNC or STARTSTABLE)."""
        sync = (replid, sync_id)
        if sync not in self.started or frame < self.started[sync]:
            self.started[sync] = frame

    def flow(self, conn, frame: int, replid: str, sync_id: str, index: int) -> None:
        """A ``DFLY FLOW`` connection of the sync."""
        flows = self.flows.setdefault((replid, sync_id), {})
        have = flows.get(index)
        if have is None or frame < have[1]:
            flows[index] = (conn, frame)

    def key(self, replid: str, sync_id: str, index: int, db: int, key: bytes, offset: int) -> None:
        """A key record of flow ``index``'s snapshot, at ``offset`` in it."""
        if index > FLOW_MASK or db > DB_MASK or offset < 0:
            return
        self._remember((replid, sync_id), key_digest(db, key), _pack(index, db, offset))

    def _remember(self, sync: tuple[str, str], digest: int, where: int) -> None:
        keys = self.keys.setdefault(sync, {})
        first = keys.get(digest)
        if first is None:
            if self.remembered >= self.cap:
                if self.capped is None or (sync, where) < self.capped:
                    self.capped = (sync, where)
                return
            keys[digest] = where
            self.remembered += 1
            return
        if (first & FLOW_MASK) == (where & FLOW_MASK):  # twice in one flow: the snapshot's own rule says so
            return
        self._twice(sync, digest, (where >> FLOW_BITS) & DB_MASK, (_place(first), _place(where)))
        if (where & FLOW_MASK) < (first & FLOW_MASK):
            keys[digest] = where  # the first flow's record stands for the key, whatever the order

    def _twice(self, sync: tuple[str, str], digest: int, db: int, places) -> None:
        """A key of two flows or more: each flow's first record of it (the same in any split)."""
        seen = self.twice.setdefault(sync, {}).setdefault(digest, (db, {}))[1]
        for flow, offset in places:
            seen[flow] = min(offset, seen.get(flow, offset))

    # -- the Correlator interface -----------------------------------------------------------

    def merge(self, other: "Syncs") -> None:
        for sync, (conn, frame, flows) in other.announced.items():
            self.announce(conn, frame, *sync, flows)
        for sync, frame in other.started.items():
            self.start(frame, *sync)
        for sync, flows in other.flows.items():
            for index, (conn, frame) in flows.items():
                self.flow(conn, frame, *sync, index)
        for sync, twice in other.twice.items():
            for digest, (db, places) in twice.items():
                self._twice(sync, digest, db, places.items())
        for sync, keys in other.keys.items():
            for digest, where in keys.items():
                self._remember(sync, digest, where)
        if other.capped is not None and (self.capped is None or other.capped < self.capped):
            self.capped = other.capped

    def finish(self) -> list[tuple]:
        out: list[tuple] = []
        for sync in sorted(self.twice):
            out += self._duplicates(sync)
        for sync in sorted(self.flows):
            out += self._unannounced(sync)
        for sync in sorted(self.started):
            out += self._count(sync)
        if self.capped is not None:
            (replid, sync_id), where = self.capped
            flow, offset = _place(where)
            conn = self.flows.get((replid, sync_id), {}).get(flow, (None, None))[0]
            out.append((conn, DFLY_RULES["dfly-keys-cap"].finding(
                f"{self.remembered:,} keys remembered (DCPINSPECT_MAX_RDB_KEYS): from the key at offset {offset} "
                f"of flow {flow} of {sync_id} on, keys are not checked for being in two flows", offset)))
        return out

    # -- the rules --------------------------------------------------------------------------

    def _duplicates(self, sync: tuple[str, str]) -> list[tuple]:
        replid, sync_id = sync
        flows = self.flows.get(sync, {})
        rows = sorted((sorted(places.items()), db, digest) for digest, (db, places) in self.twice[sync].items())
        out = []
        for places, db, digest in rows[:MAX_FINDINGS]:
            where = ", ".join(f"flow {flow} at offset {offset}" for flow, offset in places)
            conn, frame = flows.get(places[-1][0], (None, None))
            out.append((conn, DFLY_RULES["dfly-duplicate-key"].finding(
                f"a key of db {db} (digest {digest:016x}) is serialised by {len(places)} flows of "
                f"{sync_id} (master {replid}): {where}", places[-1][1], frame=frame)))
        if len(rows) > MAX_FINDINGS:
            conn, frame = flows.get(rows[-1][0][-1][0], (None, None))
            out.append((conn, DFLY_RULES["dfly-duplicate-key"].finding(
                f"{len(rows) - MAX_FINDINGS:,} more keys of {sync_id} are serialised by two flows or more", None,
                frame=frame)))
        return out

    def _unannounced(self, sync: tuple[str, str]) -> list[tuple]:
        replid, sync_id = sync
        if sync in self.announced:
            return []
        out = []
        for index, (conn, frame) in sorted(self.flows[sync].items()):
            if conn is None:
                continue
            seen = sorted((f, s) for s, (c, f, _) in self.announced.items()
                          if c is not None and f < frame and _replica_and_master(c) == _replica_and_master(conn))
            if not seen:
                continue  # no control connection of that replica to that master was seen: nothing to say
            named = ", ".join(f"{s[1]} of {s[0]}" for _, s in seen[-3:])
            out.append((conn, DFLY_RULES["dfly-sync-unannounced"].finding(
                f"DFLY FLOW {replid} {sync_id} {index}: the control connections of this replica to this master "
                f"announced {named}, not this sync", None, frame=frame)))
        return out

    def _count(self, sync: tuple[str, str]) -> list[tuple]:
        replid, sync_id = sync
        announced = self.announced.get(sync)
        if announced is None or announced[2] is None:
            return []
        conn, frame, count = announced
        seen = sorted(self.flows.get(sync, {}))
        missing = [i for i in range(count) if i not in seen]
        extra = [i for i in seen if i >= count]
        if not missing and not extra:
            return []
        what = []
        if missing:
            what.append(f"no FLOW connection for flow{'s' * (len(missing) > 1)} "
                        f"{_indices(missing)}")
        if extra:
            what.append(f"FLOW connections for flow{'s' * (len(extra) > 1)} {_indices(extra)}, past them")
        return [(conn, DFLY_RULES["dfly-flow-count"].finding(
            f"{sync_id} of master {replid} announced {count} flows and the replica went on to "
            f"DFLY SYNC / STARTSTABLE; {len(seen)} FLOW connections were seen: {'; '.join(what)}", None,
            frame=self.started[sync]))]


def _pack(flow: int, db: int, offset: int) -> int:
    """A key record's place in one int (a dict of them costs a third of one of tuples)."""
    return flow | db << FLOW_BITS | offset << (FLOW_BITS + DB_BITS)


def _place(where: int) -> tuple[int, int]:
    """(flow index, offset) of a remembered key."""
    return where & FLOW_MASK, where >> (FLOW_BITS + DB_BITS)


def _replica_and_master(conn) -> tuple:
    """A connection's replica host and master endpoint (client address; server address and port)."""
    return conn[0], conn[2], conn[3]


def _indices(values: list[int]) -> str:
    shown = ", ".join(map(str, values[:16]))
    return shown + (f" and {len(values) - 16} more" if len(values) > 16 else "")


