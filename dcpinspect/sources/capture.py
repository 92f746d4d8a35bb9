"""Streaming pcap / pcapng record reader.

Records are read raw with ``struct`` from a chunked buffer; link layers are
not interpreted here. Damage (truncated tail, absurd lengths, unknown
interfaces) is reported in place as ``CaptureProblem`` values; only a file
that cannot be opened or is not a capture at all raises ``CaptureError``.
Plain and gzip-compressed files are accepted; memory stays flat.

Whatever a length field says, reading is bounded: a record (pcap) or block
(pcapng) longer than the record cap (``MAX_RECORD``, raised with the
``DCPINSPECT_MAX_RECORD`` environment variable) is passed over without being
read into memory (a seek on plain files, inflated and discarded a chunk at a
time in gzip ones) and reported; the records after it still decode. A stretch
of all-zero pcap record headers (a zero-filled region, or a decompression
bomb of zeros) is passed over at memory speed and reported once with its
count, not as one empty record each.

Timestamps are always finite floats (seconds since 1970): a pcap record's is
seconds plus a fraction, a pcapng one's a 64-bit tick count times the
interface's resolution (at most one second a tick) plus its ``if_tsoffset``
(a signed 64-bit number of seconds), so its size is below 2**65 whatever the
file says. A time that is no calendar date stays as it is in the record (and in
jsonl); the terminal views print it raw (see ``outputs/stamp.py``).
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Iterator

from ..limits import RECORD, Limit, LimitError
from .inputs import GZIP_MAGIC
from .uris import open_binary

__all__ = ["Record", "CaptureProblem", "CaptureError", "read_records", "record_cap", "MAX_RECORD",
           "MAX_RECORD_ENV"]

#: Default cap on one pcap record or pcapng block, in bytes. Far above any real snap
#: length (link layers carry at most 256 KiB frames); a longer record is passed over
#: unread and reported.
MAX_RECORD = RECORD.default
#: The environment variable that sets the cap (bytes, or with a K/M/G suffix).
MAX_RECORD_ENV = RECORD.env
_CHUNK = 1 << 20


def limit_value(limit: Limit) -> int:
    """A limit in force for reading a capture; ``CaptureError`` when its variable is unusable."""
    try:
        return limit.value()
    except LimitError as exc:
        raise CaptureError(str(exc)) from None


def record_cap() -> int:
    """The cap on a record in bytes: ``$DCPINSPECT_MAX_RECORD`` if set, else ``MAX_RECORD``.
    Raises ``CaptureError`` for a value that is not a size."""
    return limit_value(RECORD)


@dataclass(slots=True, unsafe_hash=True)
class Record:
    """One captured frame; ``index`` is its 0-based packet number in the file; ``ts`` its
    time in seconds since 1970, always finite (see the module's notes).

    Not frozen: one is made a packet, and a frozen dataclass's ``__init__`` guards every
    field it sets (about 1 µs a record); nothing changes a record once it is made."""

    ts: float
    linktype: int
    data: bytes
    wirelen: int
    index: int

    @property
    def truncated(self) -> bool:
        """True when the capture kept fewer bytes than were on the wire."""
        return len(self.data) < self.wirelen


@dataclass(frozen=True, slots=True)
class CaptureProblem:
    """Damage found before record ``index``; yielded in place, never raised."""

    index: int
    message: str


class CaptureError(Exception):
    """The file cannot be opened or is not a pcap / pcapng capture."""


# --- input streams -----------------------------------------------------------------


class _Gunzip:
    """Streaming gzip reader that returns what decompresses before a cut or error."""

    def __init__(self, raw: BinaryIO, stream: bool = False):
        self._raw = raw
        self._z = zlib.decompressobj(wbits=47)
        self._pending = b""
        self.error: str | None = None
        #: a pipe: ``read`` returns once anything has inflated, not when ``n`` bytes have
        self._stream = stream

    def read(self, n: int) -> bytes:
        out = [self._pending] if self._pending else []
        have = len(self._pending)
        self._pending = b""
        while have < n and self.error is None and not (self._stream and have):
            if self._z.eof:
                rest = self._z.unused_data
                if not rest:
                    rest = self._raw.read(_CHUNK)
                    if not rest:
                        break
                self._z = zlib.decompressobj(wbits=47)
            else:
                rest = self._z.unconsumed_tail or self._raw.read(_CHUNK)
                if not rest:
                    self.error = "compressed stream ends before its end marker"
                    break
            saved = self._z.copy()
            try:
                piece = self._z.decompress(rest, _CHUNK)
            except zlib.error as exc:
                self.error = f"corrupt compressed data ({exc})"
                piece = _salvage(saved, rest)
            if piece:
                out.append(piece)
                have += len(piece)
        data = b"".join(out)
        if len(data) > n:
            data, self._pending = data[:n], data[n:]
        return data

    def close(self) -> None:
        self._raw.close()


def _salvage(z, data: bytes) -> bytes:
    """What decompresses from ``data`` before the point where it is corrupt."""
    out = []
    for i in range(0, len(data), 256):
        saved = z.copy()
        try:
            out.append(z.decompress(data[i:i + 256]))
        except zlib.error:
            for j in range(i, min(i + 256, len(data))):
                try:
                    out.append(saved.decompress(data[j:j + 1]))
                except zlib.error:
                    break
            break
    return b"".join(out)


class _Watch:
    """What the reader calls after each chunk it reads (see Records.on_read)."""

    __slots__ = ("tick",)

    def __init__(self) -> None:
        self.tick = None


class _Buffer:
    """Chunked byte buffer over a stream: ``need(n)`` makes n bytes available at ``pos``."""

    __slots__ = ("f", "buf", "pos", "consumed", "eof", "watch")

    def __init__(self, f, head: bytes, watch: _Watch | None = None):
        self.f = f
        self.buf = head
        self.pos = 0
        self.consumed = 0  # file offset of buf[0]
        self.eof = False
        self.watch = watch or _Watch()

    def need(self, n: int) -> bool:
        """Ensure ``buf[pos:pos+n]`` exists; False if the stream ends first."""
        avail = len(self.buf) - self.pos
        if avail >= n:
            return True
        parts = [self.buf[self.pos:]]
        self.consumed += self.pos
        self.pos = 0
        while avail < n and not self.eof:
            piece = self.f.read(max(_CHUNK, min(n - avail, _CHUNK * 16)))
            if not piece:
                self.eof = True
                break
            parts.append(piece)
            avail += len(piece)
            if self.watch.tick is not None:
                self.watch.tick()
        self.buf = b"".join(parts)
        return avail >= n

    def skip(self, n: int) -> int:
        """Pass over the next ``n`` bytes without holding them: a seek on a plain file, read
        and discarded a chunk at a time otherwise. Returns how many there were (fewer when
        the stream ends first)."""
        avail = len(self.buf) - self.pos
        if avail >= n:
            self.pos += n
            return n
        self.consumed += len(self.buf)
        self.buf, self.pos = b"", 0
        done = avail + self._seek(n - avail)
        while done < n and not self.eof:
            piece = self.f.read(min(n - done, _CHUNK))
            if not piece:
                self.eof = True
                break
            done += len(piece)
            if self.watch.tick is not None:
                self.watch.tick()
        self.consumed += done - avail
        if done < n:
            self.eof = True
        return done

    def _seek(self, n: int) -> int:
        """Seek a plain regular file ``n`` bytes on (no further than its end); how far it went."""
        if isinstance(self.f, _Gunzip):
            return 0
        try:
            here = self.f.tell()
            size = os.fstat(self.f.fileno()).st_size
            if not self.f.seekable() or size < here:
                return 0
            step = min(n, size - here)
            self.f.seek(here + step)
        except (OSError, ValueError, AttributeError):
            return 0
        if step < n:
            self.eof = True
        return step

    def offset(self) -> int:
        return self.consumed + self.pos

    def left(self) -> int:
        return len(self.buf) - self.pos


# --- entry point ---------------------------------------------------------------------

_PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6, 16),
    b"\xa1\xb2\xc3\xd4": (">", 1e-6, 16),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9, 16),
    b"\xa1\xb2\x3c\x4d": (">", 1e-9, 16),
    b"\x34\xcd\xb2\xa1": ("<", 1e-6, 24),  # Kuznetzov's modified pcap
    b"\xa1\xb2\xcd\x34": (">", 1e-6, 24),
}
_PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"


def looks_like_capture(head: bytes) -> bool:
    """Whether a file's first bytes are a pcap or pcapng magic, or gzip's (whose content
    :func:`read_records` judges)."""
    return head[:4] in _PCAP_MAGICS or head[:4] == _PCAPNG_SHB or head[:2] == GZIP_MAGIC


def read_records(path: str | os.PathLike, max_record: int | None = None) -> "Records":
    """Return an iterator over the records of a pcap / pcapng file (optionally gzipped).

    Raises ``CaptureError`` at once if the file cannot be opened or is not a
    capture; damage found later is yielded as ``CaptureProblem``. ``max_record``:
    the cap on a record, by default :func:`record_cap`.
    """
    cap = record_cap() if max_record is None else max_record
    f = _open(path)
    try:
        head = _read_full(f, 24)
    except OSError as exc:
        f.close()
        raise CaptureError(f"cannot read {_name(path)}: {exc.strerror or exc}") from None
    magic = head[:4]
    if magic in _PCAP_MAGICS:
        skip, watch = _Skip(), _Watch()
        return Records(f, _pcap(f, head, *_PCAP_MAGICS[magic], skip, cap, watch), skip, watch)
    if magic == _PCAPNG_SHB and (len(head) < 12 or head[8:12] in (b"\x4d\x3c\x2b\x1a", b"\x1a\x2b\x3c\x4d")):
        watch = _Watch()
        return Records(f, _pcapng(f, head, cap, watch), None, watch)
    why = getattr(f, "error", None) or ("empty file" if not head else f"unknown magic {magic.hex()}")
    f.close()
    raise CaptureError(f"{_name(path)}: not a pcap or pcapng capture ({why})")


def _name(path) -> str:
    return path.name if hasattr(path, "peek") else os.fspath(path)


class Records:
    """The records of one capture file, in order; :meth:`tell` says how far into the file
    (bytes on disk, compressed ones for gzip) reading has got, for progress reports."""

    def __init__(self, f, gen, skip: "_Skip | None" = None, watch: _Watch | None = None) -> None:
        self._file = getattr(f, "_raw", f)
        self._gen = _records(f, gen)
        self._skip = skip
        self._watch = watch

    def on_read(self, tick) -> None:
        """Call ``tick()`` (no arguments) after each chunk of about a MiB the reader reads or
        passes over, so that a progress display moves on through stretches that yield no
        record (zero-filled runs, records over the cap, packets that decode to nothing)."""
        if self._watch is not None:
            self._watch.tick = tick

    def pass_over(self, owners: dict, part: object) -> bool:
        """From now on, pass over (never yield) the plain Ethernet/IPv4/TCP records whose 12
        address and port bytes ``owners`` maps to something other than ``part``: another
        worker's connections, known without making a Record. False if this reader cannot
        (pcapng, or no compiled lane); :attr:`passed` counts them."""
        if self._skip is None or _c_records is None:
            return False
        self._skip.owners, self._skip.part = owners, part
        return True

    def follow(self, tails: dict) -> bool:
        """From now on, take the plain Ethernet/IPv4/TCP records whose 12 address and port
        bytes ``tails`` maps to a followed direction (engines/tails.py) in C when they are
        pure ACKs or its next bytes in order, and yield the direction (a ``Tail``) instead of
        a Record when its buffer holds a frame to cut. False if this reader cannot (pcapng,
        or no compiled lane); :attr:`passed` counts these records too."""
        if self._skip is None or _c_records is None:
            return False
        self._skip.tails = tails
        return True

    @property
    def passed(self) -> int:
        """Records taken in C, never made into a Record: other workers', followed ones."""
        return 0 if self._skip is None else self._skip.passed

    def __iter__(self) -> Iterator[Record | CaptureProblem]:
        return self._gen  # the generator itself: no extra call a record

    def __next__(self) -> Record | CaptureProblem:
        return next(self._gen)

    def tell(self) -> int:
        try:
            return self._file.tell()
        except (OSError, ValueError):  # closed at the end
            return -1


def _records(f, gen):
    try:
        yield from gen
    finally:
        f.close()


def _read_full(f, n: int) -> bytes:
    """``n`` bytes (fewer only at the end): a stream's ``read`` gives what has arrived."""
    data = f.read(n)
    while len(data) < n:
        piece = f.read(n - len(data))
        if not piece:
            break
        data += piece
    return data


def _open(path):
    """The bytes of a capture: ``path`` a local path, a URI (sources/uris.py), or an input
    opened already whose first bytes were peeked (``sources/inputs.Input``: a pipe, a FIFO,
    stdin), which is read on from its start, never opened again."""
    if hasattr(path, "peek"):
        raw = path.handle()
        try:
            gz = path.peek(2) == GZIP_MAGIC
        except OSError as exc:
            raise CaptureError(f"cannot read {path.name}: {exc.strerror or exc}") from None
        return _Gunzip(raw, stream=not path.regular) if gz else raw
    try:
        raw = open_binary(path)  # a local path, or a URI (sources/uris.py)
    except OSError as exc:
        raise CaptureError(f"cannot open {os.fspath(path)}: {exc.strerror or exc}") from None
    try:
        gz = raw.read(2) == GZIP_MAGIC
        raw.seek(0)
    except OSError as exc:
        raw.close()
        raise CaptureError(f"cannot read {os.fspath(path)}: {exc.strerror or exc}") from None
    return _Gunzip(raw) if gz else raw


def _cut_short(f, index: int, prefix: str, what: str, left: int, need: int, at: int) -> CaptureProblem | None:
    """What to say when the file ends before a header (None when it ends cleanly)."""
    note = _stream_note(f)
    if left:
        return CaptureProblem(index, f"{prefix}file ends inside {what} ({left} of {need} bytes) at byte {at}{note}")
    return CaptureProblem(index, prefix + note[2:]) if note else None


def _stream_note(f) -> str:
    """The decompressor's complaint, if any, as a message suffix (reported once)."""
    err = getattr(f, "error", None)
    if not err:
        return ""
    f.error = None
    return f"; {err}"


# --- pcap ----------------------------------------------------------------------------


class _Skip:
    """What a pcap reader takes in C (see Records.pass_over and Records.follow)."""

    __slots__ = ("owners", "part", "tails", "passed")

    def __init__(self) -> None:
        self.owners: dict | None = None
        self.part: object = None
        self.tails: dict | None = None
        self.passed = 0


try:
    from ._pcap import take_records as _take_records
except ImportError:  # built without a C compiler
    _c_records = _take_records = None
else:
    _c_records = True


def _over_cap(index: int, what: str, length: int, at: int, cap: int, got: int, f) -> CaptureProblem:
    """The note for a record or block over the cap, passed over (``got`` of its bytes were there)."""
    if got < length:
        return CaptureProblem(index, f"record {index}: bad {what} length {length} at byte {at}: over the "
                                     f"{cap}-byte record cap, and the file ends {got} bytes into it"
                                     f"{_stream_note(f)}")
    return CaptureProblem(index, f"record {index}: {what} length {length} at byte {at} is over the {cap}-byte "
                                 f"record cap: passed over unread (raise the cap with {MAX_RECORD_ENV}=BYTES)")


_ZEROS = [bytes(1 << k) for k in range(17)]  # all-zero blocks of 1 byte .. 64 KiB


def _zero_run(b: _Buffer, hdrlen: int) -> int:
    """Pass over the all-zero record headers at the buffer's position, refilling as needed;
    returns how many. Zeros are found by comparing whole blocks, not byte by byte."""
    n = 0
    while True:
        buf, pos = b.buf, b.pos
        end = len(buf)
        at = pos
        big = _ZEROS[16]
        while at + 65536 <= end and buf[at:at + 65536] == big:
            at += 65536
        for k in range(15, -1, -1):  # then halves: the first non-zero byte, or the end
            if at + (1 << k) <= end and buf[at:at + (1 << k)] == _ZEROS[k]:
                at += 1 << k
        whole = (at - pos) // hdrlen
        n += whole
        b.pos = pos + whole * hdrlen
        if at < end or not b.need(hdrlen):  # a non-zero byte, or the stream ends
            return n


def _pcap(f, head: bytes, endian: str, scale: float, hdrlen: int, skip: _Skip, cap: int = MAX_RECORD,
          watch: _Watch | None = None):
    if len(head) < 24:
        yield CaptureProblem(0, f"file ends inside the pcap header ({len(head)} of 24 bytes){_stream_note(f)}")
        return
    _, _, _, _, _, linktype = struct.unpack(endian + "HHiIII", head[4:24])
    linktype &= 0xFFFF  # upper bits carry FCS information
    unpack = struct.Struct(endian + "IIII").unpack_from
    make = Record
    b = _Buffer(f, b"", watch)
    index = 0
    little = endian == "<"
    while True:
        buf = b.buf
        pos = b.pos
        if linktype == 1 and (skip.owners is not None or skip.tails is not None):
            pos, taken, tail = _take_records(buf, pos, hdrlen, little, cap, skip.owners, skip.part,
                                             skip.tails, index, scale)
            if taken:
                index += taken
                skip.passed += taken
                b.pos = pos
            if tail is not None:
                yield tail
                continue
        if len(buf) - pos < hdrlen:
            if not b.need(hdrlen):
                problem = _cut_short(f, index, f"record {index}: ", "the record header", b.left(), hdrlen,
                                     b.offset() + 24)
                if problem is not None:
                    yield problem
                return
            continue  # refilled: look again for records to pass over
        sec, frac, caplen, wirelen = unpack(buf, pos)
        if caplen > cap:
            at = b.offset() + 24
            b.pos = pos + hdrlen
            got = b.skip(caplen)
            yield _over_cap(index, "record", caplen, at, cap, got, f)
            if got < caplen:
                return
            index += 1
            continue
        if not (caplen or wirelen or sec or frac):
            at = b.offset() + 24
            n = _zero_run(b, hdrlen)
            if n:
                yield CaptureProblem(index, f"record {index}: {n} all-zero record headers ({n * hdrlen} zero bytes "
                                            f"from byte {at}, records {index}-{index + n - 1}) passed over: "
                                            f"a zero-filled stretch, not packets")
                index += n
                continue
        end = pos + hdrlen + caplen
        if end > len(buf):
            if not b.need(hdrlen + caplen):
                yield CaptureProblem(index, f"record {index}: record length {caplen} exceeds the "
                                            f"{b.left() - hdrlen} bytes left in the file{_stream_note(f)}")
                return
            continue  # refilled: the record is whole now
        yield make(sec + frac * scale, linktype, buf[pos + hdrlen:end], wirelen, index)
        b.pos = end
        index += 1


# --- pcapng --------------------------------------------------------------------------

_BT_SHB = 0x0A0D0D0A
_BT_IDB = 1
_BT_PB = 2
_BT_SPB = 3
_BT_EPB = 6


class _Iface:
    __slots__ = ("linktype", "snaplen", "div", "mul", "offset")

    def __init__(self, linktype: int, snaplen: int):
        self.linktype = linktype
        self.snaplen = snaplen
        self.div = 1_000_000  # ticks per second, when the resolution is a power of 10
        self.mul = 0.0  # seconds per tick, when it is a power of 2
        self.offset = 0

    def record(self, hi: int, lo: int, data: bytes, wirelen: int, index: int) -> Record:
        """A record stamped from this interface's 64-bit tick count."""
        ticks = (hi << 32) | lo
        return Record((ticks * self.mul if self.mul else ticks / self.div) + self.offset,
                      self.linktype, data, wirelen, index)


def _pcapng(f, head: bytes, cap: int = MAX_RECORD, watch: _Watch | None = None):
    b = _Buffer(f, head, watch)
    index = 0
    endian = "<"
    u32 = struct.Struct("<I").unpack_from
    blkhdr = struct.Struct("<II").unpack_from
    epb = struct.Struct("<IIIII").unpack_from
    ifaces: list[_Iface] = []
    make = Record
    while True:
        if b.left() < 8 and not b.need(8):
            problem = _cut_short(f, index, "", "a block header", b.left(), 8, b.offset())
            if problem is not None:
                yield problem
            return
        buf, pos = b.buf, b.pos
        btype, blen = blkhdr(buf, pos)
        if btype == _BT_SHB:
            if not b.need(12):
                yield CaptureProblem(index, f"file ends inside a section header at byte {b.offset()}"
                                            f"{_stream_note(f)}")
                return
            buf, pos = b.buf, b.pos
            bom = buf[pos + 8:pos + 12]
            if bom == b"\x4d\x3c\x2b\x1a":
                endian = "<"
            elif bom == b"\x1a\x2b\x3c\x4d":
                endian = ">"
            else:
                yield CaptureProblem(index, f"bad section header byte-order magic {bom.hex()} at byte {b.offset()}")
                return
            u32 = struct.Struct(endian + "I").unpack_from
            blkhdr = struct.Struct(endian + "II").unpack_from
            epb = struct.Struct(endian + "IIIII").unpack_from
            btype, blen = blkhdr(buf, pos)
            ifaces = []
        if blen < 12 or blen % 4:
            yield CaptureProblem(index, f"bad block length {blen} (block type {btype:#x}) at byte {b.offset()}")
            return
        if blen > cap:
            at = b.offset()
            b.pos = pos + 8
            got = 8 + b.skip(blen - 8)
            yield _over_cap(index, f"block (type {btype:#x})", blen, at, cap, got, f)
            if got < blen:
                return
            if btype in (_BT_EPB, _BT_SPB, _BT_PB):
                index += 1
            continue
        end = pos + blen
        if end > len(buf):
            if not b.need(blen):
                yield CaptureProblem(index, f"block length {blen} (block type {btype:#x}) exceeds the "
                                            f"{b.left()} bytes left in the file{_stream_note(f)}")
                return
            buf, pos = b.buf, b.pos
            end = pos + blen
        if u32(buf, end - 4)[0] != blen:
            yield CaptureProblem(index, f"block length {blen} does not match its trailer "
                                        f"{u32(buf, end - 4)[0]} at byte {b.offset()}")
            return
        b.pos = end
        if btype == _BT_EPB:
            if blen < 32:
                yield CaptureProblem(index, f"record {index}: enhanced packet block too short ({blen})")
                index += 1
                continue
            ifid, hi, lo, caplen, wirelen = epb(buf, pos + 8)
            if caplen > blen - 32:
                yield CaptureProblem(index, f"record {index}: captured length {caplen} exceeds its block")
                index += 1
                continue
            if ifid >= len(ifaces):
                yield CaptureProblem(index, f"record {index}: unknown interface {ifid}")
                index += 1
                continue
            yield ifaces[ifid].record(hi, lo, buf[pos + 28:pos + 28 + caplen], wirelen, index)
            index += 1
        elif btype == _BT_SPB:
            if not ifaces:
                yield CaptureProblem(index, f"record {index}: simple packet block before any interface")
                index += 1
                continue
            ifc = ifaces[0]
            wirelen = u32(buf, pos + 8)[0]
            caplen = min(wirelen, blen - 16)
            if ifc.snaplen:
                caplen = min(caplen, ifc.snaplen)
            yield make(0.0, ifc.linktype, buf[pos + 12:pos + 12 + caplen], wirelen, index)
            index += 1
        elif btype == _BT_PB:
            if blen < 32:
                yield CaptureProblem(index, f"record {index}: packet block too short ({blen})")
                index += 1
                continue
            ifid = struct.unpack_from(endian + "H", buf, pos + 8)[0]
            hi, lo, caplen, wirelen = struct.unpack_from(endian + "IIII", buf, pos + 12)
            if ifid >= len(ifaces) or caplen > blen - 32:
                yield CaptureProblem(index, f"record {index}: bad packet block")
                index += 1
                continue
            yield ifaces[ifid].record(hi, lo, buf[pos + 28:pos + 28 + caplen], wirelen, index)
            index += 1
        elif btype == _BT_IDB:
            if blen < 20:
                yield CaptureProblem(index, f"interface description block too short ({blen})")
                return
            linktype, _, snaplen = struct.unpack_from(endian + "HHI", buf, pos + 8)
            ifc = _Iface(linktype, snaplen)
            _idb_options(ifc, buf, pos + 16, end - 4, endian)
            ifaces.append(ifc)
        # other block types (name resolution, statistics, custom, ...) are skipped


def _idb_options(ifc: _Iface, buf: bytes, pos: int, end: int, endian: str) -> None:
    opt = struct.Struct(endian + "HH").unpack_from
    while pos + 4 <= end:
        code, length = opt(buf, pos)
        pos += 4
        if code == 0:
            break
        if pos + length > end:
            break
        if code == 9 and length >= 1:  # if_tsresol
            v = buf[pos]
            if v & 0x80:
                ifc.mul = 2.0 ** -(v & 0x7F)
            else:
                ifc.div = 10 ** v
                ifc.mul = 0.0
        elif code == 14 and length >= 8:  # if_tsoffset, seconds
            ifc.offset = struct.unpack_from(endian + "q", buf, pos)[0]
        pos += (length + 3) & ~3
