"""Redis, Valkey and Dragonfly: RDB snapshots, as files and as the payload of a replication
stream, and the replication itself. The whole family is this package, in four parts:

- ``rdb/``: the RDB format, sans-I/O. :class:`~.rdb.decoder.RdbParser` is fed bytes as they
  come (a file read in chunks, a TCP payload) and gives key, aux and opcode records
  (:mod:`.rdb.records`) and findings as each completes. Its parts: the value types and
  opcodes of each vendor (``types``), the primitive encodings (``primitives``, with ``lzf``
  and ``crc64``), the packed layouts inside strings (``layouts``), the values (``values``),
  their JSON shape (``data``) and the server's digests of them (``digest``); ``_rdb.c``
  (driven by ``native``) reads the inner loops in C.
- ``replication/``: connections to port 6379 (and 6380), or any port whose first bytes
  ``sniff`` recognises, cut into RESP frames and RDB payload pieces (``resp``, with
  ``inline`` commands and ``resync`` after a gap), followed by the session (``session``),
  whose records (``frames``) the outputs print through the generic interface; replies
  paired with their commands (``pairing``), the record filters (``filters``), and what
  ``stats`` counts (``stats``) and shows (``stats_view``).
- ``dragonfly/``: Dragonfly's replication on the same connections: a replica's control and
  FLOW connections (``replica``), its journal records (``journal``), the syncs across
  connections (``syncs``, the family's correlator), and ``.dfs`` snapshot sets read as one
  snapshot (``dfs``).
- ``reports/``: the snapshot files read and printed (``snapshots``, with ``report``'s rows
  and ``anatomy``'s located fields), the keys a user selects (``selection``), the memory
  model and its reports (``memory``, ``usage``, ``flame``), the RESP export (``export``),
  the keys ``diff`` compares (``compare``), and the tables of bulk engines (``tables``).

Its rules are ``rules``, one table per scope.
"""

from __future__ import annotations

import os

from .. import Family, SnapshotFiles, Statistics
from .replication.filters import FILTERS
from .reports.tables import TABLES

#: Redis's default port, and the one a second instance on a host (often a replica) takes
PORTS = frozenset({6379, 6380})

# The decoder's modules are imported when a connection or a file first needs them: a
# process that meets no Redis (each worker of a capture of MCBP traffic) pays nothing for them.


def _sniffer(midstream: bool):
    from .replication.sniff import Sniffer

    return Sniffer(midstream)


def _framer(synced: bool, runs: bool):
    from .replication.resp import RespFramer

    return RespFramer(synced, runs)


def _session(options, seen_from_start: bool, correlator=None, flow=None):
    from .replication.session import Replication

    return Replication(options, seen_from_start, correlator, flow)


def _correlator():
    from .dragonfly.syncs import Syncs

    return Syncs()


def _is_snapshot(head: bytes) -> bool:
    from .rdb.types import header  # (the RDB magic: telling a file costs no decoder)

    return header(head[:9]) is not None


def _snapshots(*args, **kw) -> int:
    from .reports.snapshots import show

    return show(*args, **kw)


def _snapshot_sets(items: list) -> list:
    if not any(".dfs" in (os.path.basename(item) if isinstance(item, (str, os.PathLike)) else getattr(item, "name", ""))
               for item in items):
        return items
    from .dragonfly.dfs import gather

    return gather(items)


def _stats_view():
    from .replication.stats_view import VIEW  # rich: only for a command that prints statistics

    return VIEW


def _snapshot_rows(fh, name: str, values: bool = False):
    from .reports.tables import snapshot_rows

    return snapshot_rows(fh, name, values)


def _snapshot_data(item):
    from .reports.compare import snapshot_data

    return snapshot_data(item)


def _data_keys(record):
    from .reports.compare import data_keys

    return data_keys(record)


def _data_records(record):
    from .reports.compare import data_records

    return data_records(record)


def _rules() -> dict:
    from .rules import RULES

    return RULES


FAMILY = Family("redis", PORTS, frozenset(), _sniffer, _framer, _session, aliases=("resp", "rdb", "valkey", "dragonfly"),
                rules=_rules, correlator=_correlator, filters=FILTERS, statistics=Statistics(_stats_view),
                snapshots=SnapshotFiles(_is_snapshot, _snapshots, _snapshot_sets, _snapshot_rows, _snapshot_data,
                                        _data_keys, _data_records),
                tables=TABLES)
