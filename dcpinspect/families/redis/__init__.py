"""Redis, Valkey and Dragonfly (spec/rdb.md): RDB snapshots, as files and as the payload
of a replication stream.

The RDB decoder is sans-I/O: :class:`~.rdb.RdbParser` is fed bytes as they come (a file
read in chunks, a TCP payload) and gives key, aux and opcode records and findings as each
completes. Its parts: the primitive encodings (:mod:`.primitives`, with :mod:`.lzf` and
:mod:`.crc64`), the packed layouts inside strings (:mod:`.layouts`), the value types and
opcodes of each vendor (:mod:`.types`), the values (:mod:`.values`) and Dragonfly's
journal records (:mod:`.journal`). Its snapshot files are read and printed by
:mod:`.snapshots`, Dragonfly's ``.dfs`` file sets as one snapshot by :mod:`.dfs`.

Replication from captures (§12): connections to port 6379 (and 6380), or any port whose
first bytes :mod:`.sniff` recognises, are cut into RESP frames and RDB payload pieces by
:mod:`.resp` and followed by the session in :mod:`.session`, whose records
(:mod:`.frames`) the outputs print through the generic interface. Dragonfly's replication
(§13) on the same connections: :mod:`.dragonfly` follows a replica's control and FLOW
connections, and :mod:`.syncs` (the family's correlator) the syncs across them.
"""

from __future__ import annotations

from .. import Family
from .filters import FILTERS
from .sniff import Sniffer
from .tables import TABLES

#: Redis's default port, and the one a second instance on a host (often a replica) takes
PORTS = frozenset({6379, 6380})

# The decoder's modules are imported when a connection or a file first needs them: a
# process that meets no Redis (each worker of a capture of MCBP traffic) pays nothing for them.


def _framer(synced: bool, runs: bool):
    from .resp import RespFramer

    return RespFramer(synced, runs)


def _session(options, seen_from_start: bool, correlator=None, flow=None):
    from .session import Replication

    return Replication(options, seen_from_start, correlator, flow)


def _correlator():
    from .syncs import Syncs

    return Syncs()


def _is_snapshot(head: bytes) -> bool:
    from .types import header  # (the RDB magic: telling a file costs no decoder)

    return header(head[:9]) is not None


def _snapshots(*args, **kw) -> int:
    from .snapshots import show

    return show(*args, **kw)


def _snapshot_sets(items: list) -> list:
    if not any(".dfs" in getattr(item, "name", "") for item in items):
        return items
    from .dfs import gather

    return gather(items)


def _stats_view():
    from .stats_view import VIEW  # rich: only for a command that prints statistics

    return VIEW


def _snapshot_rows(fh, name: str, values: bool = False):
    from .tables import snapshot_rows

    return snapshot_rows(fh, name, values)


def _snapshot_data(item):
    from .compare import snapshot_data

    return snapshot_data(item)


def _data_keys(record):
    from .compare import data_keys

    return data_keys(record)


def _data_records(record):
    from .compare import data_records

    return data_records(record)


FAMILY = Family("redis", PORTS, frozenset(), Sniffer, _framer, _session, snapshots=_snapshots,
                is_snapshot=_is_snapshot, filters=FILTERS, aliases=("resp", "rdb", "valkey", "dragonfly"),
                correlator=_correlator, tables=TABLES, snapshot_rows=_snapshot_rows,
                snapshot_sets=_snapshot_sets, snapshot_data=_snapshot_data, data_keys=_data_keys,
                data_records=_data_records,
                stats_view=_stats_view)
