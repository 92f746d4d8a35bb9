"""Redis, Valkey and Dragonfly (spec/rdb.md): RDB snapshots, as files and as the payload
of a replication stream.

The RDB decoder is sans-I/O: :class:`~.rdb.RdbParser` is fed bytes as they come (a file
read in chunks, a TCP payload) and gives key, aux and opcode records and findings as each
completes. Its parts: the primitive encodings (:mod:`.primitives`, with :mod:`.lzf` and
:mod:`.crc64`), the packed layouts inside strings (:mod:`.layouts`), the value types and
opcodes of each vendor (:mod:`.types`), the values (:mod:`.values`) and Dragonfly's
journal records (:mod:`.journal`). Its snapshot files are read and printed by
:mod:`.snapshots`.

Replication from captures (§12): connections to port 6379 (and 6380), or any port whose
first bytes :mod:`.sniff` recognises, are cut into RESP frames and RDB payload pieces by
:mod:`.resp` and followed by the session in :mod:`.session`, whose records
(:mod:`.frames`) the outputs print through the generic interface.
"""

from __future__ import annotations

from .. import Family
from .resp import RespFramer
from .session import Replication
from .snapshots import is_snapshot, show
from .sniff import Sniffer

#: Redis's default port, and the one a second instance on a host (often a replica) takes
PORTS = frozenset({6379, 6380})


def _framer(synced: bool, runs: bool) -> RespFramer:
    return RespFramer(synced, runs)


def _session(options, seen_from_start: bool) -> Replication:
    return Replication(options, seen_from_start)


FAMILY = Family("redis", PORTS, frozenset(), Sniffer, _framer, _session, snapshots=show, is_snapshot=is_snapshot,
                aliases=("resp", "rdb", "valkey"))
