"""Is a connection on a port we do not know MCBP? Decided on strong evidence only, from
both directions' first bytes.

Each direction is cut into frames as the decoder would cut it (a synced splitter from a
connection's start, an unsynced one that looks for a whole frame when the capture
joined it mid-stream). Every frame must have a plausible header: a known magic and
opcode, lengths that add up, only known datatype bits, and a known status in a
response. The connection is MCBP once one direction holds :data:`RUN` such frames in a
row, or once a response in one direction answers a request of the other (the same
opcode and opaque). It is not once a header fails, or bytes are skipped between frames
of a direction seen from its start, or when a direction opens as another protocol does
(TLS, including the SSLv2-compatible hello whose first byte is MCBP's request magic,
HTTP, SSH, mail: :mod:`...transport.foreign`).
"""

from __future__ import annotations

from ...framing.framer import RawFrame
from .framer import FrameSplitter, header_problem
from .messages.header import HEADER_SIZE
from .messages.names import REQUEST_MAGICS, RESPONSE_MAGICS, SERVER_MAGICS, STATUS
from ...transport.foreign import DECIDE, foreign

#: frames in a row in one direction that make a connection MCBP
RUN = 3


def plausible(header: bytes) -> bool:
    """A frame's header as MCBP's: magic, opcode, lengths, datatype and (a response) status."""
    if header_problem(header, 0) is not None:
        return False
    if header[0] in RESPONSE_MAGICS and header[0] not in SERVER_MAGICS:
        return int.from_bytes(header[6:8], "big") in STATUS
    return True


class _Direction:
    __slots__ = ("splitter", "buf", "skip", "waiting", "head", "run", "asked", "answered", "opened")

    def __init__(self, midstream: bool) -> None:
        #: joined mid-stream: an unsynced splitter looks for frames; from the start, headers
        #: are read where the lengths put them (``buf`` from the next one on, ``skip``: the
        #: bytes of the current frame's body still to pass)
        self.splitter = FrameSplitter(synced=False) if midstream else None
        self.buf = bytearray()
        self.skip = 0
        self.waiting: bytes | None = None  # the header of a frame whose body is passing
        self.head = bytearray()  # the first bytes, to rule other protocols out
        self.run = 0  # plausible frames in a row
        self.asked: set[tuple[int, int]] = set()  # (opcode, opaque) of requests
        self.answered: set[tuple[int, int]] = set()  # of responses
        self.opened = midstream  # the other protocols' openings were ruled out

    def __len__(self) -> int:
        return len(self.buf) + len(self.head) + (self.splitter.buffered if self.splitter is not None else 0)

    def headers(self, data: bytes):
        """The header of each frame whole in the bytes so far; False: bytes that are no
        frame, where a frame must start."""
        if self.splitter is not None:
            for item in self.splitter.feed(data):
                yield item.data[:HEADER_SIZE] if type(item) is RawFrame else False
            return
        if self.skip > len(data):
            self.skip -= len(data)
            return
        self.buf += memoryview(data)[self.skip:]
        self.skip = 0
        if self.waiting is not None:  # its body has passed: whole
            yield self.waiting
            self.waiting = None
        while len(self.buf) >= HEADER_SIZE:
            header = bytes(self.buf[:HEADER_SIZE])
            if not plausible(header):
                yield False
                return
            size = HEADER_SIZE + int.from_bytes(header[8:12], "big")
            if size > len(self.buf):  # whole once its body has passed, which is not held
                self.skip = size - len(self.buf)
                self.buf.clear()
                self.waiting = header
                return
            del self.buf[:size]
            yield header


class Sniffer:
    """One connection's first bytes, both ways (see the module's docstring). Its length is
    every byte it holds."""

    __slots__ = ("sides", "midstream", "first")

    def __init__(self, midstream: bool) -> None:
        self.midstream = midstream
        self.sides: dict[str, _Direction] = {}
        self.first = ""  # the direction that spoke first

    def __len__(self) -> int:
        return sum(len(d) for d in self.sides.values())

    def add(self, direction: str, data: bytes) -> bool | None:
        """MCBP? Decided from the bytes so far (None: need more)."""
        side = self.sides.get(direction)
        if side is None:
            side = self.sides[direction] = _Direction(self.midstream)
            self.first = self.first or direction
        if not side.opened:
            side.head += data
            if foreign(bytes(side.head[:DECIDE]), self.first == direction) is not None:
                return False
            if len(side.head) >= DECIDE:
                side.opened = True
                side.head = bytearray()
        for header in side.headers(data):
            if header is False or not plausible(header):
                if not self.midstream:
                    return False
                side.run = 0
                continue
            side.run += 1
            if side.run >= RUN:
                return True
            magic, opcode = header[0], header[1]
            pair = (opcode, int.from_bytes(header[12:16], "big"))
            other = [s for d, s in self.sides.items() if d != direction]
            if magic in REQUEST_MAGICS:
                side.asked.add(pair)
                if any(pair in s.answered for s in other):
                    return True
            elif magic in RESPONSE_MAGICS:
                side.answered.add(pair)
                if any(pair in s.asked for s in other):
                    return True
        return None
