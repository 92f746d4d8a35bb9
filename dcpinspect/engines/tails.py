"""Directions of TCP connections that the pcap reader follows in C (``Records.follow``).

Most records of a connection that is under way are pure ACKs, or the next bytes of one
direction in order. Once a direction is in order (nothing held out of order, no FIN) the
reader takes such records without making them into Records: it appends their payload to
the direction's frame splitter buffer, counts the ACKs, and hands the direction back (its
:class:`Tail`) only when the buffer holds a frame to cut. Before any other record of the
connection is decoded, and at the end of input, what was taken is *settled*: the
reassembler and the frame numbering then stand as if every record had gone the ordinary way.

Sans-I/O and picklable: plain lists and dicts.
"""

from __future__ import annotations

#: The slots that ``_lane.take_records`` reads and writes (see its comment): INDEX is the
#: last record taken, an ACK or not; DATA the last that carried bytes.
NEXT, BUF, WANT, PENDING, PACKETS, TS, INDEX, DATA = range(8)
#: The decoder's own: bytes the reassembler has not been told of, the direction's
#: ``(src, sport, dst, dport)``, its 12 raw address and port bytes, its Side, FlowDecoder
#: and name.
MOVED, KEY, RAW, SIDE, FLOW, DIRECTION = range(8, 14)


class Tail(list):
    """One followed direction: ``[next seq, splitter buffer or None (ACKs only), bytes
    wanted, bytes appended since the last cut, records taken, last record's time, last
    record's number, last data record's number, ...]`` (the slots above)."""

    __slots__ = ()


def new_tail(key: tuple, raw: bytes, nxt: int | None, side, flow, direction: str) -> Tail:
    """A direction whose next bytes in order carry ``nxt`` (None: only its ACKs are taken)."""
    buf = None if nxt is None or side is None else side.buffer
    want = 0 if buf is None else side.wanted
    return Tail((nxt or 0, buf, want, 0, 0, 0.0, -1, -1, 0, key, raw, side, flow, direction))


class Tails:
    """The followed directions of one decoder: by raw bytes for the reader, by
    ``(src, sport, dst, dport)`` for the decoder (both directions of a connection share
    one list of their tails)."""

    __slots__ = ("raw", "by_key")

    def __init__(self, raw: dict) -> None:
        self.raw: dict[bytes, Tail] = raw  # the reader's table, filled and emptied here
        self.by_key: dict[tuple, list[Tail]] = {}

    def add(self, pair: list[Tail]) -> None:
        for tail in pair:
            self.raw[tail[RAW]] = tail
            self.by_key[tail[KEY]] = pair

    def drop(self, key: tuple) -> list[Tail]:
        """The tails of the connection of direction ``key``, no longer followed ([] if none)."""
        pair = self.by_key.get(key)
        if pair is None:
            return []
        for tail in pair:
            self.raw.pop(tail[RAW], None)
            self.by_key.pop(tail[KEY], None)
        return pair

    def drop_all(self) -> list[Tail]:
        tails = list(self.raw.values())
        self.raw.clear()
        self.by_key.clear()
        return tails


def carried(tail: Tail) -> None:
    """Tell the side of the bytes appended since it was last told, all carried by the last
    record with data: no frame ends in them before it (else the reader would have handed
    the direction back there), so every frame number stays what it would be."""
    n = tail[PENDING]
    if n:
        tail[PENDING] = 0
        tail[MOVED] += n
        tail[SIDE].carried(n, tail[DATA])


def settle(tail: Tail, reassembler) -> None:
    """Tell the side and the reassembler of everything the reader took for ``tail``."""
    carried(tail)
    if tail[PACKETS]:
        reassembler.advance(tail[KEY], tail[PACKETS], tail[MOVED], tail[TS], tail[INDEX])
        tail[PACKETS] = tail[MOVED] = 0
