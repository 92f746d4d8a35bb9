"""Redis, Valkey and Dragonfly (spec/rdb.md): RDB snapshots, as files and as the payload
of a replication stream.

The RDB decoder is sans-I/O: :class:`~.rdb.RdbParser` is fed bytes as they come (a file
read in chunks, a TCP payload) and gives key, aux and opcode records and findings as each
completes. Its parts: the primitive encodings (:mod:`.primitives`, with :mod:`.lzf` and
:mod:`.crc64`), the packed layouts inside strings (:mod:`.layouts`), the value types and
opcodes of each vendor (:mod:`.types`), the values (:mod:`.values`) and Dragonfly's
journal records (:mod:`.journal`). Its snapshot files are read and printed by
:mod:`.snapshots`.
"""

from __future__ import annotations

from .. import Family
from .snapshots import is_snapshot, show

#: replication streams come next (ports, a framer and a session); today, snapshot files
FAMILY = Family("redis", snapshots=show, is_snapshot=is_snapshot)
