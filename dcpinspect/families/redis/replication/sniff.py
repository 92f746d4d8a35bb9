"""Is a connection on a port no family claims Redis? Decided on strong evidence only, from
both directions' first bytes (spec/rdb.md §12.1–§12.2):

- a replication handshake: a replica's REPLCONF, PSYNC, SYNC or Dragonfly's DFLY, as a
  RESP array or inline, among its first commands (after PING and AUTH), or a master's
  ``+FULLRESYNC <replid> <offset>`` / ``+CONTINUE``;
- both directions agreeing: the client's first command a whole RESP array naming a real
  Redis command (:mod:`.commands`), answered by a whole, well-formed reply (or by
  :data:`LONG` bytes of one, well-formed as far as they go);
- a connection joined mid-stream: two whole command arrays of real commands in a row, the
  first after a line's end (a master's command stream, a client's pipeline).

It is not Redis when a direction opens as another protocol does (TLS, HTTP, SSH, mail:
:mod:`...transport.foreign`), when the server speaks first, when a client's first bytes
are no command (an inline one other than the handshake's), or when a reply is malformed.
"""

from __future__ import annotations

import re

from ....transport.foreign import DECIDE, foreign
from .commands import NAMES

#: the commands that make a connection a replication link
REPLICATION = frozenset({b"REPLCONF", b"PSYNC", b"SYNC", b"DFLY"})
#: the commands a replica may send before those
PREAMBLE = frozenset({b"PING", b"AUTH"})
_MASTER = re.compile(rb"\+(?:FULLRESYNC [0-9a-fA-F]{40} [0-9]{1,20}|CONTINUE(?: [0-9a-fA-F]{40})?)\r\n")
#: an inline command's line: printable text
_TEXT = re.compile(rb"[\x20-\x7e\t]*\r?\Z")
_INT = re.compile(rb"-?[0-9]{1,20}\r\n")
_COUNT = re.compile(rb"(-1|[0-9]{1,9})\r\n")
#: a RESP command array's head, where the capture may have joined a stream
_HEAD = re.compile(rb"\*[1-9][0-9]{0,5}\r\n\$[1-9][0-9]?\r\n")
#: a replica's acknowledgement, after its array's count
_ACK = b"$8\r\nREPLCONF\r\n$3\r\nACK\r\n"
#: nesting that the sniffer follows in a reply
MAX_DEPTH = 16
#: bytes of a first reply, well-formed as far as they go, that answer a command as a
#: whole reply does (``COMMAND``'s reply to redis-cli is larger than the sniffer holds)
LONG = 1024
#: mid-stream, the bytes of the direction that showed command arrays after which it is taken
#: without a word from the other direction (which tells which side is the client's)
WAIT = 4096
NEED = None  # more bytes needed
BAD = -1  # not RESP


def reply(buf, pos: int, depth: int = 0):
    """The end of the RESP2/RESP3 value at ``pos``; NEED while it is not whole; BAD if it is
    no value."""
    if pos >= len(buf):
        return NEED
    kind = buf[pos]
    if kind in b"+-":  # a simple string or error: a line
        end = buf.find(b"\r\n", pos + 1)
        if end < 0:
            return NEED if b"\n" not in buf[pos + 1:] else BAD
        return end + 2
    if kind in b":_#,(":
        end = buf.find(b"\r\n", pos + 1)
        if end < 0:
            return NEED if len(buf) - pos < 48 else BAD
        line = bytes(buf[pos + 1:end])
        if kind == ord(":") and not _INT.fullmatch(line + b"\r\n"):
            return BAD
        if kind == ord("_") and line:
            return BAD
        if kind == ord("#") and line not in (b"t", b"f"):
            return BAD
        return end + 2
    if kind in b"$=!*%~>|":
        m = _COUNT.match(buf, pos + 1)
        if m is None:
            return NEED if len(buf) - pos < 14 and b"\n" not in buf[pos + 1:] else BAD
        n = int(m.group(1))
        at = m.end()
        if n < 0:
            return at if kind in b"$*" else BAD
        if kind in b"$=!":  # bulk: n bytes and a line end
            end = at + n
            if len(buf) < end + 2:
                return NEED
            return end + 2 if buf[end:end + 2] == b"\r\n" else BAD
        if depth >= MAX_DEPTH:
            return BAD
        count = n * 2 if kind in b"%|" else n
        for _ in range(count):
            at = reply(buf, at, depth + 1)
            if at is None or at == BAD:
                return at
        return reply(buf, at, depth + 1) if kind == ord("|") else at  # an attribute precedes a value
    return BAD


def command(buf, pos: int):
    """``(end, name)`` of the RESP command array at ``pos``: its elements all bulk strings,
    its name upper-cased; NEED while it is not whole; BAD if it is no command array."""
    if pos >= len(buf):
        return NEED
    if buf[pos] != ord("*"):
        return BAD
    m = _COUNT.match(buf, pos + 1)
    if m is None:
        return NEED if len(buf) - pos < 12 and b"\n" not in buf[pos + 1:] else BAD
    n, at, name = int(m.group(1)), m.end(), None
    if n < 1:
        return BAD
    for _ in range(n):
        if at >= len(buf):
            return NEED
        if buf[at] != ord("$"):
            return BAD
        end = reply(buf, at)
        if end is None or end == BAD:
            return end
        if name is None:
            name = bytes(buf[buf.index(b"\n", at) + 1:end - 2]).upper()
        at = end
    return at, name


def inline(buf, pos: int):
    """``(end, name)`` of the inline command (a line) at ``pos``; NEED while the line is
    not whole."""
    end = buf.find(b"\n", pos)
    if not _TEXT.match(buf, pos, end if end >= 0 else len(buf)):
        return BAD
    if end < 0:
        return NEED if len(buf) - pos < 512 else BAD
    word = bytes(buf[pos:end]).strip().split(b" ", 1)[0]
    return end + 1, word.upper()


class _Direction:
    __slots__ = ("buf", "pos", "units", "searched", "tried")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.pos = 0  # where the next command or reply starts
        self.units = 0  # whole commands or replies read
        self.searched = 0  # mid-stream: where to look for a command's start from
        self.tried = 0  # the buffer's length when a command or reply was last found not whole

    def worth(self) -> bool:
        """Whether to read the unit not yet whole again: once the bytes from it on have grown
        by a quarter (or while they are few), so that deciding stays linear in the bytes
        however they are cut into segments."""
        n = len(self.buf)
        return not self.tried or n <= 1024 or (n - self.tried) * 4 >= n - min(self.pos, self.searched or self.pos)


class Sniffer:
    """One connection's first bytes, both ways (see the module's docstring)."""

    __slots__ = ("sides", "midstream", "first", "client", "found")

    def __init__(self, midstream: bool) -> None:
        self.midstream = midstream
        self.sides: dict[str, _Direction] = {}
        self.first = ""
        #: mid-stream, once it says yes: the direction its bytes show to be the client's
        #: (see :meth:`_client`), or "" when they do not tell
        self.client = ""
        #: mid-stream: the two command arrays found (their direction, start and the first's
        #: end), while the other direction is awaited to tell which side is the client's
        self.found: tuple[_Direction, int, int] | None = None

    def __len__(self) -> int:
        return sum(len(d.buf) for d in self.sides.values())

    def add(self, direction: str, data: bytes) -> bool | None:
        side = self.sides.get(direction)
        if side is None:
            side = self.sides[direction] = _Direction()
            self.first = self.first or direction
        side.buf += data
        if not side.worth():
            return None
        if self.midstream:
            return self._midstream(side) if self.found is None else self._decided()
        head = bytes(side.buf[:DECIDE])
        if foreign(head, self.first == direction) is not None:
            return False
        if direction == "s2c":
            return self._replies(side)
        return self._commands(side)

    def _commands(self, side: _Direction) -> bool | None:
        buf = side.buf
        while side.pos < len(buf):
            if buf[side.pos] in b"\r\n":  # an empty line between commands: the server passes over it
                side.pos += 1
                continue
            got = command(buf, side.pos) if buf[side.pos] == ord("*") else inline(buf, side.pos)
            if got is NEED:
                side.tried = len(buf)
                return None
            if got == BAD:
                return False
            end, name = got
            if name in REPLICATION:
                return True
            if buf[side.pos] != ord("*") and name not in PREAMBLE:
                return False  # inline commands tell nothing else (POP3, SMTP, ... send such lines)
            if name not in NAMES:
                return False
            side.pos = end
            side.units += 1
        return self._agree()

    def _replies(self, side: _Direction) -> bool | None:
        buf = side.buf
        if self.first == "s2c":  # the server spoke first: only a master's answer to PSYNC
            if _MASTER.match(buf):
                return True
            head = bytes(buf[:12])
            opening = any(r.startswith(head) or head.startswith(r) for r in (b"+FULLRESYNC ", b"+CONTINUE"))
            return None if opening and b"\n" not in buf and len(buf) < 96 else False
        while side.pos < len(buf):
            if _MASTER.match(buf, side.pos):
                return True
            end = reply(buf, side.pos)
            if end is NEED:  # a long reply, well-formed as far as it came, counts as one
                side.tried = len(buf)
                if len(buf) - side.pos >= LONG and not side.units:
                    side.units = 1
                    return self._agree()
                return None
            if end == BAD:
                return False
            side.pos = end
            side.units += 1
        return self._agree()

    def _agree(self) -> bool | None:
        """Both directions: a whole command answered by a whole reply."""
        c2s, s2c = self.sides.get("c2s"), self.sides.get("s2c")
        if c2s is None or s2c is None or not c2s.units or not s2c.units:
            return None
        return True

    def _decided(self) -> bool | None:
        """Two command arrays were found: Redis, once the bytes tell which side is the
        client's, or the other direction has spoken without telling, or :data:`WAIT`
        bytes of the first came alone (a capture of one direction)."""
        side, start, end = self.found
        self.client = self._client(side, start, end)
        other = next((s for s in self.sides.values() if s is not side), None)
        if self.client or (other is not None and other.buf.strip()) or len(side.buf) >= WAIT:
            return True
        side.tried = len(side.buf)
        return None

    def _client(self, side: _Direction, start: int, end: int) -> str:
        """The direction of ``side``, whose command arrays from ``start`` on made the
        connection Redis, if it is surely the client's: a replica's ``REPLCONF ACK``, or
        commands whose other direction holds replies and no command array (a master's
        stream is answered by a replica's acknowledgements, which are arrays; a subscriber
        receives arrays and sends none). The other direction, if it holds such an
        acknowledgement (``side`` is a master's stream). Else ""."""
        direction = next(d for d, s in self.sides.items() if s is side)
        first = bytes(side.buf[start:end]).upper()
        if first.startswith(_ACK, first.index(b"\n") + 1):
            return direction
        theirs = "s2c" if direction == "c2s" else "c2s"
        other = self.sides.get(theirs)
        if other is None or not other.buf.strip():
            return ""
        buf = other.buf
        if _ACK in bytes(buf).upper():  # a master's stream, acknowledged by its replica
            return theirs
        if buf[:1] == b"*" or any(m.start() == 0 or buf[m.start() - 1] == ord("\n") for m in _HEAD.finditer(buf)):
            return ""
        return direction

    def _midstream(self, side: _Direction) -> bool | None:
        """Two whole command arrays in a row, the first where a line ended (or at the start)."""
        buf = side.buf
        at = side.searched
        while True:
            m = _HEAD.search(buf, at)
            if m is None:
                side.searched = max(at, len(buf) - 16)
                return None
            start = m.start()
            if start and buf[start - 1] != ord("\n"):
                at = start + 1
                continue
            first = command(buf, start)
            if first is NEED:
                side.searched, side.tried = start, len(buf)
                return None
            if first != BAD and first[1] in NAMES:
                second = command(buf, first[0])
                if second is NEED:
                    side.searched, side.tried = start, len(buf)
                    return None
                if second != BAD and second[1] in NAMES:
                    self.found = (side, start, first[0])
                    return self._decided()
            at = start + 1
