"""Split an MCBP byte stream into frames, resynchronising after garbage or gaps (sans-I/O)."""

from __future__ import annotations

import re
import struct

from .messages.header import HEADER_SIZE, MAX_BODY_LENGTH
from .messages.names import FLEX_MAGICS, MAGICS, SERVER_MAGICS
from .messages.registry import CLIENT_SPECS, SERVER_SPECS
from ...framing.framer import Framer, RawFrame, RawRun, Skipped

_HDR = struct.Struct(">BBBBBBHI")
_MAGIC_RE = re.compile(b"[" + re.escape(bytes(sorted(MAGICS))) + b"]")
RESYNC_MAX_KEY = 1024

_U32 = struct.Struct(">I").unpack_from
_MAGIC_BYTES = bytes(sorted(MAGICS))

try:
    from . import _lane
except ImportError:  # built without a C compiler: no runs
    _lane = None


def header_problem(buf, pos: int, max_body: int = MAX_BODY_LENGTH, strict: bool = True) -> str | None:
    """Why the 24 bytes at ``pos`` are not a plausible header (None if they are)."""
    magic, opcode, b2, b3, extlen, datatype, vbs, bodylen = _HDR.unpack_from(buf, pos)
    if magic not in MAGICS:
        return f"unknown magic 0x{magic:02x}"
    flex = magic in FLEX_MAGICS
    framing, keylen = (b2, b3) if flex else (0, (b2 << 8) | b3)
    if bodylen > max_body:
        return f"body length {bodylen} exceeds {max_body}"
    if strict:
        if framing + extlen + keylen > bodylen:
            return "framing + extras + key exceed the body length"
        if datatype > 0x07:
            return f"invalid datatype 0x{datatype:02x}"
        table = SERVER_SPECS if magic in SERVER_MAGICS else CLIENT_SPECS
        if opcode not in table:
            return f"unknown opcode 0x{opcode:02x}"
        if keylen > RESYNC_MAX_KEY:
            return f"key length {keylen} is implausible"
    return None


class FrameSplitter(Framer):
    """Feed bytes in stream order; get whole frames and skipped ranges back.

    A stream that starts at a known frame boundary is *synced*: the first header
    is trusted as long as its lengths are sane.  After garbage, a gap, or a
    capture that starts mid-stream, the splitter scans for the next plausible
    header (known magic, opcode and status, datatype ≤ 7, consistent lengths).
    Buffering is bounded by the largest legal frame.
    """

    __slots__ = ("_buf", "_runs", "_base", "_synced", "_max_body", "_skip", "_want", "_within")

    def __init__(self, synced: bool = True, max_body: int = MAX_BODY_LENGTH, runs: bool = False) -> None:
        Framer.__init__(self)
        self._buf = bytearray()
        #: the synced fast path hands whole frames over as one RawRun (needs the C lane)
        self._runs = runs
        self._base = 0
        self._synced = synced
        self._max_body = max_body
        self._skip: tuple[int, str] | None = None  # (stream offset, reason) of a range being skipped
        #: on a synced stream, the buffer size below which feeding cannot complete a frame
        #: (a frame split over many segments is looked at once, when it is whole)
        self._want = 0
        #: what :meth:`_complete_frame_within` learnt during the current drain, so that
        #: resynchronising past many candidate headers looks at each byte once
        self._within: tuple[int, int | None] | None = None

    @property
    def buffered(self) -> int:
        return len(self._buf)

    @property
    def buffer(self) -> bytearray:
        """The bytes held for the next frame. A reader that has the stream's next bytes in
        order may append them here itself and call ``feed(b"")`` once the buffer holds
        :attr:`wanted` bytes: the same frames come out as had it fed them."""
        return self._buf

    @property
    def wanted(self) -> int:
        """Feeding cannot complete a frame before the buffer holds this many bytes."""
        return self._want

    def feed(self, data: bytes) -> list[RawFrame | Skipped]:
        buf = self._buf
        buf += data
        if len(buf) < self._want:
            return []
        return self._drain(final=False)

    def gap(self, missing: int) -> list[RawFrame | Skipped]:
        """``missing`` bytes will never arrive: flush what is buffered, then resync."""
        out: list[RawFrame | Skipped] = []
        if self._buf:
            out.extend(self._drain(final=True))
        self._base += missing
        self._synced = False
        self._want = 0
        return out

    def close(self, data: bytes = b"") -> list[RawFrame | Skipped]:
        """End of stream (optionally with its last bytes): the rest comes out as truncated or skipped."""
        self._buf += data
        return self._drain(final=True)


    def _frames(self, buf: bytearray, out: list, n: int) -> int:
        """Synced fast path: cut whole frames whose magic is known and body length sane
        (all of header_problem(strict=False)); stop at anything else. Returns the end."""
        pos, base, max_body, magics = 0, self._base, self._max_body, MAGICS
        if self._runs:
            pos, count = _lane.cut(buf, 0, n, _MAGIC_BYTES, max_body)
            if count:
                out.append(RawRun(base, bytes(buf[:pos])))
            return pos
        view = None
        while n - pos >= HEADER_SIZE:
            bodylen = _U32(buf, pos + 8)[0]
            if buf[pos] not in magics or bodylen > max_body:
                break
            end = pos + HEADER_SIZE + bodylen
            if end > n:
                break
            if view is None:
                view = memoryview(buf)
            out.append(RawFrame(base + pos, view[pos:end].tobytes(), False))
            pos = end
        if view is not None:
            view.release()  # before the bytearray is resized
        return pos

    def _drain(self, final: bool) -> list[RawFrame | Skipped]:
        buf, out, pos, n = self._buf, [], 0, len(self._buf)
        self._within = None  # learnt about this buffer as it is now
        if self._synced and self._skip is None:
            pos = self._frames(buf, out, n)
        while n - pos >= HEADER_SIZE:
            problem = header_problem(buf, pos, self._max_body, strict=not self._synced)
            if problem is None and self._synced is False:
                problem = self._lookahead(buf, pos, n, final)
                if problem == "wait":
                    break
            if problem is not None and self._synced and self._self_consistent(buf, pos, n, final):
                problem = None
            if problem is not None:
                if self._skip is None:
                    self._skip = (self._base + pos, problem)
                self._synced = False
                m = _MAGIC_RE.search(buf, pos + 1)
                pos = m.start() if m else max(pos + 1, n - HEADER_SIZE + 1)
                continue
            size = HEADER_SIZE + int.from_bytes(buf[pos + 8 : pos + 12], "big")
            if n - pos < size:
                break
            self._end_skip(out, self._base + pos)
            out.append(RawFrame(self._base + pos, bytes(buf[pos : pos + size])))
            self._synced = True
            pos += size
        if final and pos < n:
            rest = buf[pos:n]
            whole = n - pos >= HEADER_SIZE and header_problem(buf, pos, self._max_body, strict=False) is None
            if whole or (n - pos < HEADER_SIZE and rest[0] in MAGICS and self._skip is None):
                self._end_skip(out, self._base + pos)
                out.append(RawFrame(self._base + pos, bytes(rest), truncated=True))
            elif self._skip is None:
                self._skip = (self._base + pos, "trailing bytes are not a frame")
            pos = n
        if final:
            self._end_skip(out, self._base + n)
        del buf[:pos]
        self._base += pos
        self._want = self._needed(buf) if self._synced and self._skip is None and not final else 0
        return out

    def _needed(self, buf: bytearray) -> int:
        """Bytes the buffer must hold before the frame at its start can come out (0: look now)."""
        if len(buf) < HEADER_SIZE:
            return HEADER_SIZE
        bodylen = _U32(buf, 8)[0]
        if buf[0] not in MAGICS or bodylen > self._max_body:
            return 0
        return HEADER_SIZE + bodylen

    def _end_skip(self, out: list, end: int) -> None:
        """A skipped range is reported once, whole, when the next frame (or the end) is found."""
        if self._skip is not None:
            start, reason = self._skip
            if end > start:
                text = reason if reason.startswith("trailing") else f"not a frame ({reason})"
                out.append(Skipped(start, end - start, text))
            self._skip = None

    def _self_consistent(self, buf, pos: int, n: int, final: bool) -> bool:
        """An unknown magic on a synced stream still frames if its lengths hold up:
        the frame ends exactly at the end of the input or at a plausible header."""
        bodylen = int.from_bytes(buf[pos + 8 : pos + 12], "big")
        keylen = int.from_bytes(buf[pos + 2 : pos + 4], "big")
        if bodylen > self._max_body or buf[pos + 4] + keylen > bodylen:
            return False
        nxt = pos + HEADER_SIZE + bodylen
        if nxt == n:
            return final
        return nxt + HEADER_SIZE <= n and header_problem(buf, nxt, self._max_body) is None

    def _lookahead(self, buf, pos: int, n: int, final: bool) -> str | None:
        """While resyncing, a candidate must be followed by another header or the end."""
        size = HEADER_SIZE + int.from_bytes(buf[pos + 8 : pos + 12], "big")
        nxt = pos + size
        if nxt + HEADER_SIZE <= n:
            return None if header_problem(buf, nxt, self._max_body) is None else "next header implausible"
        if not final:
            return "wait"
        if nxt > n and self._complete_frame_within(buf, pos + 1, n):
            return "a complete frame starts inside its claimed body"
        return None

    def _complete_frame_within(self, buf, start: int, n: int) -> bool:
        """Is there a plausible header in ``buf[start:n]`` whose whole frame is present?

        Within one drain ``start`` only grows, so the answer is remembered as the first such
        header at or after the last place looked from: every candidate a resync rejects asks
        again, and each byte is still looked at once (linear, not quadratic, in the bytes)."""
        known = self._within
        if known is not None and start >= known[0]:
            found = known[1]
            if found is None or found >= start:
                return found is not None
        found = None
        m = _MAGIC_RE.search(buf, start)
        while m is not None and m.start() + HEADER_SIZE <= n:
            q = m.start()
            if header_problem(buf, q, self._max_body) is None:
                if q + HEADER_SIZE + int.from_bytes(buf[q + 8 : q + 12], "big") <= n:
                    found = q
                    break
            m = _MAGIC_RE.search(buf, q + 1)
        self._within = (start, found)
        return found is not None

def split_frames(data: bytes, synced: bool = True) -> list[RawFrame | Skipped]:
    """Split a complete byte string (a pasted dump, a file) into frames."""
    return FrameSplitter(synced=synced).close(data)
