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
from ...framing.mcbp import FrameSplitter, header_problem
from ...messages.header import HEADER_SIZE
from ...messages.names import REQUEST_MAGICS, RESPONSE_MAGICS, SERVER_MAGICS, STATUS
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
    __slots__ = ("splitter", "head", "run", "asked", "answered", "opened")

    def __init__(self, midstream: bool) -> None:
        self.splitter = FrameSplitter(synced=not midstream)
        self.head = bytearray()  # the first bytes, to rule other protocols out
        self.run = 0  # plausible frames in a row
        self.asked: set[tuple[int, int]] = set()  # (opcode, opaque) of requests
        self.answered: set[tuple[int, int]] = set()  # of responses
        self.opened = midstream  # the other protocols' openings were ruled out


class Sniffer:
    """One connection's first bytes, both ways (see the module's docstring). Its length is
    every byte its splitters hold."""

    __slots__ = ("sides", "midstream", "first")

    def __init__(self, midstream: bool) -> None:
        self.midstream = midstream
        self.sides: dict[str, _Direction] = {}
        self.first = ""  # the direction that spoke first

    def __len__(self) -> int:
        return sum(d.splitter.buffered + len(d.head) for d in self.sides.values())

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
        for item in side.splitter.feed(data):
            if type(item) is not RawFrame:  # skipped bytes
                if not self.midstream:
                    return False
                side.run = 0
                continue
            if len(item.data) < HEADER_SIZE or not plausible(item.data):
                if not self.midstream:
                    return False
                side.run = 0
                continue
            side.run += 1
            if side.run >= RUN:
                return True
            magic, opcode = item.data[0], item.data[1]
            pair = (opcode, int.from_bytes(item.data[12:16], "big"))
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
