"""What every protocol family's framer is to the engines (sans-I/O).

A framer takes one direction of a connection's bytes in stream order and gives back
whole frames (:class:`RawFrame`) and the ranges it had to pass over (:class:`Skipped`),
each at its absolute stream offset. A family's framer subclasses :class:`Framer` and
implements ``feed``, ``gap``, ``close`` and the three buffer properties; the base holds
what the engines need of any framer: which capture record carried which bytes, so that
a frame is numbered by the record holding its last byte (as Wireshark numbers a
reassembled PDU) however late the framer could confirm it.
"""

from __future__ import annotations

from ..slots import Slots


class RawFrame(Slots):
    """One whole frame cut from a stream: ``offset``, the stream offset of its first byte,
    its ``data``, and whether the capture cut it short (``truncated``)."""

    __slots__ = ("offset", "data", "truncated")

    def __init__(self, offset: int, data: bytes, truncated: bool = False) -> None:
        self.offset = offset
        self.data = data
        self.truncated = truncated

    __hash__ = Slots.hashed


class RawRun(Slots):
    """Whole frames back to back, for a family's fast path (a framer made with ``runs=True``):
    ``offset``, the stream offset of the first byte, and ``data``."""

    __slots__ = ("offset", "data")

    def __init__(self, offset: int, data: bytes) -> None:
        self.offset = offset
        self.data = data

    __hash__ = Slots.hashed


class Skipped(Slots):
    """Bytes a framer passed over: ``size`` of them from stream offset ``offset``, and why."""

    __slots__ = ("offset", "size", "reason")

    def __init__(self, offset: int, size: int, reason: str) -> None:
        self.offset = offset
        self.size = size
        self.reason = reason

    __hash__ = Slots.hashed


#: marks a framer keeps at most; past it the oldest go (a framer holding this many
#: records' bytes is skipping, and the numbers stay close)
MAX_MARKS = 65536


class Framer:
    """One direction's framer. The interface (each family implements it):

    - ``feed(data)``: the next bytes in order; the frames and skipped ranges they complete.
    - ``gap(missing)``: ``missing`` bytes will never come; what is held comes out, and the
      framer resynchronises.
    - ``close(data=b"")``: the end of the stream; the rest comes out truncated or skipped.
    - ``buffered``: bytes held for frames not yet whole (the engines cap their total).
    - ``buffer``: the bytearray holding them, to which a reader that has the stream's next
      bytes in order may append them itself, then call ``feed(b"")``.
    - ``wanted``: feeding cannot complete a frame before ``buffer`` holds this many bytes.

    The record marks, ``(stream offset after a record's bytes, record)`` oldest first, are
    the first one in two slots and the rest in a list from ``_head`` on (an idle direction
    holds one mark, in no object of its own). ``counted`` is how much of the buffer an
    engine's held-bytes total counts."""

    __slots__ = ("fed", "counted", "_end", "_index", "_more", "_head")

    def __init__(self) -> None:
        self.fed = 0  # stream offset after the last byte handed over (gaps count)
        self.counted = 0
        self._end: int | None = None  # the first mark, if any
        self._index = -1
        self._more: list[tuple[int, int]] | None = None
        self._head = 0

    def feed(self, data: bytes) -> list[RawFrame | RawRun | Skipped]:
        raise NotImplementedError

    def gap(self, missing: int) -> list[RawFrame | RawRun | Skipped]:
        raise NotImplementedError

    def close(self, data: bytes = b"") -> list[RawFrame | RawRun | Skipped]:
        raise NotImplementedError

    def follows(self, direction: str, session) -> None:
        """The engine says which direction the framer reads (``c2s`` or ``s2c``) and how to
        reach its connection's session (``session()``, made when first asked): a family
        whose framing leans on the other direction reads it there. Most need neither."""

    @property
    def buffered(self) -> int:
        raise NotImplementedError

    @property
    def buffer(self) -> bytearray:
        raise NotImplementedError

    @property
    def wanted(self) -> int:
        raise NotImplementedError

    # -- which record carried which bytes ------------------------------------------------

    def carried(self, size: int, index: int) -> None:
        """Record ``index`` carried the next ``size`` bytes."""
        self.fed += size
        if self._end is None:
            self._end, self._index = self.fed, index
            return
        more = self._more
        if more is None:
            more = self._more = []
        more.append((self.fed, index))
        if len(more) - self._head >= MAX_MARKS:
            self._next()

    def lost(self, missing: int) -> None:
        """``missing`` bytes were lost (no record carried them)."""
        self.fed += missing

    def record_of(self, end: int) -> int:
        """The record that carried stream byte ``end - 1`` (-1 if none is known)."""
        while self._end is not None and self._end < end and self._more is not None:
            self._next()
        return self._index if self._end is not None else -1

    def first_mark(self) -> tuple[int, int] | None:
        """The oldest mark still held."""
        return None if self._end is None else (self._end, self._index)

    def held_marks(self) -> int:
        more = self._more
        return (self._end is not None) + (0 if more is None else len(more) - self._head)

    def _next(self) -> None:
        """Forget the first mark (there is a next one)."""
        more, h = self._more, self._head
        self._end, self._index = more[h]
        h += 1
        if h == len(more):
            self._more, h = None, 0
        elif h > 32 and 2 * h > len(more):  # compact now and then: amortised O(1)
            del more[:h]
            h = 0
        self._head = h
