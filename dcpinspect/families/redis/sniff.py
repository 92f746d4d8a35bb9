"""Is a connection on a port no family claims Redis replication? Decided from one
direction's first bytes (spec/rdb.md §12.1–§12.2): a replica's first commands (PING,
AUTH, REPLCONF, PSYNC, SYNC, a Dragonfly replica's DFLY, as RESP arrays or inline), or a
master's ``+FULLRESYNC`` / ``+CONTINUE``. A connection joined mid-stream is taken on any
RESP command array found after a line's end in its first bytes (a master's command
stream)."""

from __future__ import annotations

import re

#: a RESP command array's head: its count, the name's length and the name
COMMAND = re.compile(rb"\*([1-9][0-9]{0,3})\r\n\$([1-9][0-9]?)\r\n([A-Za-z][A-Za-z-]{0,19})\r\n")
INLINE = re.compile(rb"(PING|SYNC|PSYNC|REPLCONF|AUTH|DFLY)(?: [^\r\n]{0,200})?\r?\n", re.I)
REPLICATION = frozenset({b"PING", b"AUTH", b"REPLCONF", b"PSYNC", b"SYNC", b"DFLY"})
REPLIES = (b"+FULLRESYNC ", b"+CONTINUE")
#: bytes enough to decide at a connection's start
DECIDE = 64


def _command(m: re.Match) -> bool:
    return int(m.group(2)) == len(m.group(3))


class Sniffer:
    """One direction's first bytes (see the module's docstring)."""

    __slots__ = ("data", "midstream", "searched")

    def __init__(self, midstream: bool) -> None:
        self.data = bytearray()
        self.midstream = midstream
        self.searched = 0

    def __len__(self) -> int:
        return len(self.data)

    def add(self, data: bytes) -> bool | None:
        self.data += data
        head = bytes(self.data[:DECIDE])
        m = COMMAND.match(head)
        if m is not None and _command(m) and m.group(3).upper() in REPLICATION:
            return True
        if INLINE.match(head) or any(head.startswith(r) for r in REPLIES):
            return True
        if self.midstream:
            return self._midstream()
        first = head[:1]
        if first == b"*":  # a command array's head is at most 34 bytes
            return None if m is None and len(head) < 34 else False
        if first == b"+":
            return None if any(r.startswith(head) for r in REPLIES) else False
        if first.isalpha():
            return None if b"\n" not in head and len(head) < DECIDE else False
        return False

    def _midstream(self) -> bool | None:
        data = self.data
        at = self.searched
        while True:
            nl = data.find(b"\n*", at)
            if nl < 0:
                self.searched = max(0, len(data) - 1)
                return None
            m = COMMAND.match(data, nl + 1)
            if m is not None and _command(m):
                return True
            if m is None and len(data) - nl < DECIDE:
                self.searched = nl
                return None
            at = nl + 1
