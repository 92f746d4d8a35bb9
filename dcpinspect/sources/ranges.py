"""Byte ranges of one uncompressed capture file, for readers that work on a file's parts at
once (Spark tasks): where a range's first record begins, where its last one ends, how many
packets it holds, and the records themselves, the same :class:`Record` values that
:func:`~.capture.read_records` makes of the whole file.

A reader dropped at an arbitrary byte resynchronises on the next record boundary:

* classic pcap: a record header whose fraction of a second is below one second, whose
  captured length is within the snap length (and the record cap) and not above the wire
  length (at most 256 KiB, and at least a link header of it kept), and whose next two
  headers (or the file's end) are plausible too, with times within a day of the first;
* pcapng: a block whose length is at least 12, a multiple of 4, within the cap, whose
  trailing length agrees, and whose next block agrees too.

Resynchronising is a guess; :func:`plan_ranges` makes it exact. Each range is walked from
its guessed start to the first boundary at or past its end (:func:`walk_range`), and the
plan is only used when every range's walk ends where the next range's walk began: by
induction from the file's first record every boundary is then a real one, and every record
is read exactly once. A file where that does not hold, or whose walk found damage (a record
over the cap, all-zero headers, a cut tail), is read whole, so that it gives the same
records and the same notes as the whole-file reader.

The parsing functions take bytes and offsets (no I/O); :func:`walk_range` and
:func:`range_records` read the file.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Iterator

from .uris import open_binary, size_of
from .capture import _PCAP_MAGICS, _PCAPNG_SHB, GZIP_MAGIC, CaptureError, CaptureProblem, Record, _pcap, \
    _pcapng, _Skip, record_cap

__all__ = ["Layout", "layout_of", "pcap_record_length", "pcap_resync", "pcapng_block_length", "pcapng_resync",
           "RangeWalk", "walk_range", "Range", "plan_ranges", "range_records", "RANGE_SIZE"]

#: Default size of a range: a file at most this big is read whole.
RANGE_SIZE = 128 << 20
_READ = 4 << 20  # bytes read at a time while walking
_MAX_WIRE = 1 << 18  # a wire length above this is no real frame's (offloaded segments reach 64 KiB)
_MAX_BLOCK = 1 << 27  # the most a walk reads at once for one record or block
_NEAR = 86400  # seconds between records that follow one another, at most
_BT_SHB, _BT_IDB, _PACKET_BLOCKS = 0x0A0D0D0A, 1, (2, 3, 6)
_BLOCK_TYPES = frozenset((1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0xBAD, 0x40000BAD, _BT_SHB))


@dataclass(frozen=True)
class Layout:
    """What a reader needs to know of a file to read it from the middle: ``kind`` pcap,
    pcapng or whole (gzip, anything else: only read whole); for pcap its 24-byte header,
    byte order, header length and snap length."""

    kind: str
    header: bytes = b""
    endian: str = "<"
    hdrlen: int = 16
    fraction: int = 1_000_000
    snaplen: int = 0


def layout_of(head: bytes) -> Layout:
    """The layout of a file from its first 24 bytes."""
    magic = head[:4]
    if head[:2] == GZIP_MAGIC or len(head) < 24:
        return Layout("whole")
    if magic in _PCAP_MAGICS:
        endian, scale, hdrlen = _PCAP_MAGICS[magic]
        snaplen = struct.unpack_from(endian + "I", head, 16)[0]
        return Layout("pcap", head[:24], endian, hdrlen, 1_000_000_000 if scale < 1e-6 else 1_000_000, snaplen)
    if magic == _PCAPNG_SHB:
        return Layout("pcapng")
    return Layout("whole")


def pcap_record_length(buf: bytes, pos: int, layout: Layout, cap: int) -> int | None:
    """The whole length (header and data) of a plausible classic pcap record whose header is
    at ``buf[pos:]``, or None (implausible, or the header is not all in ``buf``)."""
    if pos + layout.hdrlen > len(buf):
        return None
    sec, frac, caplen, wirelen = struct.unpack_from(layout.endian + "IIII", buf, pos)
    if frac >= layout.fraction or caplen > wirelen or wirelen > _MAX_WIRE or caplen > cap or caplen < min(wirelen, 14):
        return None
    if layout.snaplen and caplen > max(layout.snaplen, 65535):
        return None
    if not wirelen:
        return None
    return layout.hdrlen + caplen


def _pcap_seconds(buf: bytes, pos: int, layout: Layout) -> int:
    return struct.unpack_from(layout.endian + "I", buf, pos)[0]


def pcap_resync(buf: bytes, pos: int, layout: Layout, cap: int, final: bool, depth: int = 3) -> tuple[bool, int]:
    """Look for the first offset at or after ``pos`` where ``depth`` plausible records follow
    one another (fewer when they end exactly at the buffer's end and ``final``: the file's
    end). ``(True, offset)`` when found; ``(False, offset)`` when the offsets before it are
    ruled out and it cannot be judged without more bytes."""
    return _resync(buf, pos, 1, depth, final, lambda at: pcap_record_length(buf, at, layout, cap),
                   lambda at: _wanted_pcap(buf, at, layout),
                   lambda a, b: abs(_pcap_seconds(buf, a, layout) - _pcap_seconds(buf, b, layout)) <= _NEAR)


def pcapng_block_length(buf: bytes, pos: int, endian: str, cap: int) -> int | None:
    """The length of a plausible pcapng block at ``buf[pos:]`` (type known, length at least
    12, a multiple of 4, within the cap, its trailing copy the same), or None (implausible,
    or not all in ``buf``)."""
    if pos + 8 > len(buf):
        return None
    btype, blen = struct.unpack_from(endian + "II", buf, pos)
    if btype not in _BLOCK_TYPES or blen < 12 or blen % 4 or blen > cap or pos + blen > len(buf):
        return None
    if struct.unpack_from(endian + "I", buf, pos + blen - 4)[0] != blen:
        return None
    return blen


def pcapng_resync(buf: bytes, pos: int, endian: str, cap: int, final: bool, depth: int = 2) -> tuple[bool, int]:
    """As :func:`pcap_resync`, for pcapng blocks (on 4-byte boundaries)."""
    return _resync(buf, pos + (-pos % 4), 4, depth, final, lambda at: pcapng_block_length(buf, at, endian, cap),
                   lambda at: _wanted_pcapng(buf, at, endian))


def _resync(buf: bytes, pos: int, step: int, depth: int, final: bool, length, wanted, near=None) -> tuple[bool, int]:
    end = len(buf)
    for at in range(pos, end, step):
        here = at
        for _ in range(depth):
            if here == end and final:
                return True, at
            n = length(here)
            if n is not None and near is not None and here != at and not near(at, here):
                break
            if n is None:
                if not final and here + wanted(here) > end:
                    if here == at:
                        return False, at  # this very offset needs more bytes
                    return False, at
                break
            here += n
        else:
            return True, at
    return final, end  # at the file's end, the end is the next boundary


def _wanted_pcap(buf: bytes, pos: int, layout: Layout) -> int:
    """Bytes a record at ``pos`` says it needs (its header when not even that is there)."""
    if pos + layout.hdrlen > len(buf):
        return layout.hdrlen
    caplen = struct.unpack_from(layout.endian + "I", buf, pos + 8)[0]
    return layout.hdrlen + min(caplen, _MAX_BLOCK)


def _wanted_pcapng(buf: bytes, pos: int, endian: str) -> int:
    if pos + 8 > len(buf):
        return 8
    return max(12, min(struct.unpack_from(endian + "I", buf, pos + 4)[0], _MAX_BLOCK))


@dataclass
class RangeWalk:
    """What walking one range found: ``first`` the offset of its first record (None: none
    found), ``stop`` the first boundary at or past its end, ``packets`` the packet records
    between, ``blocks`` the (offset, bytes) of the pcapng section headers and interface
    descriptions among them, ``damage`` why the file must be read whole instead ("" if not)."""

    start: int
    end: int
    first: int | None = None
    stop: int | None = None
    packets: int = 0
    blocks: list[tuple[int, bytes]] = field(default_factory=list)
    damage: str = ""


class _Window:
    """Bytes of a file around an offset, read a few MiB at a time."""

    def __init__(self, f, size: int) -> None:
        self.f, self.size = f, size
        self.base, self.buf = 0, b""

    def at(self, offset: int, n: int) -> tuple[bytes, int]:
        """A buffer holding ``[offset, offset + n)`` (less at the file's end) and where in it
        ``offset`` is."""
        if offset < self.base or offset + n > self.base + len(self.buf):
            if not (offset + n > self.base + len(self.buf) >= self.size and offset >= self.base):
                self.f.seek(offset)
                self.base, self.buf = offset, self.f.read(max(n, _READ))
        return self.buf, offset - self.base

    def final(self) -> bool:
        return self.base + len(self.buf) >= self.size


def walk_range(path: str, layout: Layout, start: int, end: int, size: int, cap: int | None = None) -> RangeWalk:
    """Walk the records that begin in ``[start, end)`` of a ``size``-byte file (the first
    range of a file begins at its first record): the first one found by resynchronising,
    then record by record to the first boundary at or past ``end``."""
    cap = record_cap() if cap is None else cap
    walk = RangeWalk(start, end)
    pcap = layout.kind == "pcap"
    with open_binary(path) as f:
        endian = "<"
        if not pcap:
            f.seek(8)
            endian = ">" if f.read(4) == b"\x1a\x2b\x3c\x4d" else "<"
        win = _Window(f, size)
        at = start if pcap else start + (-start % 4)  # pcapng blocks lie on 4-byte boundaries
        while True:  # resynchronise
            buf, pos = win.at(at, _READ)
            found, pos = (pcap_resync(buf, pos, layout, cap, win.final()) if pcap
                          else pcapng_resync(buf, pos, endian, cap, win.final()))
            if found:
                at = win.base + pos
                break
            if win.final() and win.base + pos >= size:  # no record begins here: the next range's is at the end
                walk.first = walk.stop = size
                return walk
            nxt = win.base + pos
            if nxt == at:  # one offset needs more than the window: read it from there, bigger
                buf, pos = win.at(at, (_wanted_pcap(buf, pos, layout) if pcap
                                       else _wanted_pcapng(buf, pos, endian)) * 3 + _READ)
                found, pos = (pcap_resync(buf, pos, layout, cap, win.final()) if pcap
                              else pcapng_resync(buf, pos, endian, cap, win.final()))
                if found:
                    at = win.base + pos
                    break
                nxt = win.base + pos if win.base + pos > at else at + 1
            at = nxt
        walk.first = at
        while at < end and at < size:
            buf, pos = win.at(at, 16)
            buf, pos = win.at(at, _wanted_pcap(buf, pos, layout) if pcap else _wanted_pcapng(buf, pos, endian))
            if pcap:
                n, packet = pcap_record_length(buf, pos, layout, cap), True
            else:
                if buf[pos:pos + 4] == _PCAPNG_SHB:  # a new section may change the byte order
                    endian = ">" if buf[pos + 8:pos + 12] == b"\x1a\x2b\x3c\x4d" else "<"
                    buf, pos = win.at(at, _wanted_pcapng(buf, pos, endian))
                n = pcapng_block_length(buf, pos, endian, cap)
                packet = False
                if n is not None:
                    btype = struct.unpack_from(endian + "I", buf, pos)[0]
                    packet = btype in _PACKET_BLOCKS
                    if btype in (_BT_SHB, _BT_IDB):
                        walk.blocks.append((at, bytes(buf[pos:pos + n])))
            if n is None or at + n > size:
                walk.damage = f"no whole plausible record at byte {at}"
                return walk
            walk.packets += packet
            at += n
        walk.stop = at
    return walk


@dataclass(frozen=True)
class Range:
    """One part of a file to read: bytes ``[start, stop)``, whose first packet is the file's
    packet ``base``; ``prologue`` the bytes a reader of the part reads first (the pcap file
    header, or the pcapng section header and interface descriptions in force). A file read
    whole is one Range with ``whole`` set."""

    path: str
    start: int
    stop: int
    base: int = 0
    prologue: bytes = b""
    whole: bool = False


def split_points(size: int, first: int, range_size: int) -> list[tuple[int, int]]:
    """``[start, end)`` pieces of about ``range_size`` bytes from ``first`` to ``size``."""
    n = max(1, -(-(size - first) // range_size))
    step = -(-(size - first) // n)
    return [(first + i * step, min(size, first + (i + 1) * step)) for i in range(n)]


def candidate_ranges(path: str, range_size: int) -> tuple[Layout, int, list[tuple[int, int]]]:
    """A file's layout, size and the pieces it would be split into (one when it is read whole)."""
    try:
        size = size_of(path)
        with open_binary(path) as f:
            head = f.read(24)
    except OSError as exc:
        raise CaptureError(f"cannot read {path}: {exc.strerror or exc}") from None
    layout = layout_of(head)
    if layout.kind == "whole" or size <= range_size:
        return layout, size, [(0, size)]
    return layout, size, split_points(size, 24 if layout.kind == "pcap" else 0, range_size)


def plan_ranges(path: str, layout: Layout, size: int, walks: list[RangeWalk]) -> list[Range]:
    """The ranges of a file from its pieces' walks, in order; the whole file as one Range
    unless the walks chain exactly and found no damage."""
    whole = [Range(path, 0, size, whole=True)]
    if layout.kind == "whole" or len(walks) < 2:
        return whole
    expect = 24 if layout.kind == "pcap" else 0
    for walk in walks:
        if walk.damage or walk.first is None or walk.first != expect or walk.stop is None:
            return whole
        expect = walk.stop
    if expect != size:
        return whole
    out, base, section = [], 0, b""
    for walk in walks:
        prologue = layout.header if layout.kind == "pcap" else section
        if layout.kind == "pcapng" and not prologue.startswith(_PCAPNG_SHB):
            if walk.first != 0:
                return whole
        out.append(Range(path, walk.first, walk.stop, base, prologue))
        base += walk.packets
        for _, block in walk.blocks:
            section = block if block[:4] == _PCAPNG_SHB else section + block
    return out


class _Slice:
    """A file-like of ``prologue`` then the file's bytes ``[start, stop)``."""

    def __init__(self, path: str, start: int, stop: int, prologue: bytes) -> None:
        self._f = open_binary(path)
        self._f.seek(start)
        self._left = stop - start
        self._pre = prologue

    def read(self, n: int) -> bytes:
        out = b""
        if self._pre:
            out, self._pre = self._pre[:n], self._pre[n:]
            n -= len(out)
        if n > 0 and self._left > 0:
            piece = self._f.read(min(n, self._left))
            self._left -= len(piece)
            out += piece
        return out

    def close(self) -> None:
        self._f.close()


def range_records(part: Range, max_record: int | None = None) -> Iterator[Record | CaptureProblem]:
    """The records of one range, numbered as in the whole file: the whole-file reader's own
    parser run over the range's prologue and bytes."""
    from .capture import read_records

    if part.whole:
        yield from read_records(part.path, max_record)
        return
    cap = record_cap() if max_record is None else max_record
    f = _Slice(part.path, part.start, part.stop, part.prologue)
    try:
        if part.prologue[:4] in _PCAP_MAGICS:
            head = f.read(24)
            gen = _pcap(f, head, *_PCAP_MAGICS[head[:4]], _Skip(), cap)
        else:
            gen = _pcapng(f, f.read(24), cap)
        base = part.base
        for rec in gen:
            if type(rec) is Record:
                rec.index += base
            else:
                rec = CaptureProblem(rec.index + base, rec.message)
            yield rec
    finally:
        f.close()
