"""RESP on the wire (spec/rdb.md §12): one direction of a Redis connection cut into frames.

:class:`RespFramer` is the family's :class:`~dcpinspect.framing.framer.Framer`. It reads
RESP2 and RESP3 values (simple strings, errors, integers, bulk strings, arrays, nulls,
doubles, booleans, blob errors, verbatim strings, big numbers, maps, sets, pushes,
attributes, streamed strings and aggregates) and inline commands, each a
:class:`RespFrame` whose ``value`` is already parsed, resuming where it stopped as bytes
come (a frame split at any byte gives the same frames). It switches mode inside its
direction where the master hands over a snapshot (§12.2): after ``+FULLRESYNC`` (or a bare
``$<len>`` bulk that starts with an RDB magic, the reply to ``SYNC``) the RDB payload,
``$<len>\\r\\n`` and that many bytes, or ``$EOF:<40 bytes>\\r\\n`` up to the same 40
bytes, goes on in pieces of at most :data:`PIECE` bytes cut at fixed payload offsets,
never held whole (the end mark is looked for in the last 39 bytes kept and the new ones);
then the command stream.

A Dragonfly flow connection (§13.2) switches the same way after the master's answer to
``DFLY FLOW``, ``*2 +FULL|+PARTIAL +<eof token>``: after ``FULL`` the shard's RDB comes
with no header at all, up to the eof token (the end mark, found as the diskless one is),
and then, as after ``PARTIAL`` at once, the raw journal records of stable sync (§9), a
frame each (of kind ``journal``: the SELECTs before an op and the op; a command past the
frame cap or the element cap is passed over as it comes and given as a frame with no
bytes, so that it is still counted). Journal bytes that are no record (or lost bytes)
are passed over up to the next SELECT and command that read whole.

Inline commands are split as Redis splits them (:mod:`.inline`); unbalanced quotes are a
protocol error. A direction joined mid-way, or after lost bytes or bytes that are no RESP,
goes on at the earliest frame start that reads whole with what follows it (:mod:`.resync`).

Bounded: a line longer than :data:`MAX_LINE`, a length that is no number, nesting deeper
than :data:`MAX_DEPTH` are a protocol error (a frame of kind ``error``, then the framer
looks for the next frame start); a frame that would hold more than the RESP frame cap, or
more elements than the element cap, is passed over as it comes (a Skipped range), holding
none of it.
"""

from __future__ import annotations

from typing import Any

from ....framing.framer import Framer, RawFrame, Skipped
from ....limits import RESP_ELEMENTS, RESP_FRAME
from ..dragonfly import journal
from . import resync
from .inline import split_args
from ..rdb.primitives import Corrupt, NeedMore, read_len
from .resync import AGGREGATE_TYPES, BULK_TYPES, LINE_TYPES, MAX_COUNT, MAX_DEPTH, MAX_LINE, TYPES  # noqa: F401
from .resync import line_problem as _line_problem
from .resync import number as _number
from ..rdb.types import header

#: payload bytes a piece holds at most; pieces are cut at multiples of it from the payload's start
PIECE = 64 * 1024
#: the length of the diskless payload's end mark
MARK = 40
NORMAL, LOST, PAYLOAD_LEN, PAYLOAD_EOF = "normal", "lost", "payload-len", "payload-eof"
#: a Dragonfly flow's stable sync: journal records, one passed over, the place lost
JOURNAL, JOURNAL_SKIP, JOURNAL_LOST = "journal", "journal-skip", "journal-lost"
#: the answers to DFLY FLOW, and the longest eof token taken as an end mark
FLOW_ANSWERS = (b"FULL", b"PARTIAL")
MAX_TOKEN = 256
#: how far past a candidate record's start the journal's resynchronisation looks, and the
#: most SELECTs before its command and strings in it a candidate may have (so that each
#: position costs a bounded reading, and the resynchronisation stays linear)
JOURNAL_LOOK = 64 * 1024
RESYNC_SELECTS, RESYNC_STRINGS = 16, 64
#: what reading one token gave: more bytes are needed, read on in the frame, a frame is out
WAIT, NEXT, DONE = 0, 1, 2


class RespFrame(RawFrame):
    """A frame of a Redis connection, as the framer cut it.

    ``kind``: ``value`` (a RESP value: ``value`` is ``(type, payload)``), ``inline`` (an
    inline command: ``value`` is ``("inline", [args])``), ``keepalive`` (an empty line),
    ``payload-start`` (the payload's header: ``value`` is ``("length", n)`` or ``("eof",
    mark)``), ``payload`` (a piece of the RDB; ``last`` on the one that ends it, ``resumed``
    on the first after lost bytes), ``payload-end`` (the diskless payload's end mark) or
    ``error`` (bytes that are no RESP: ``reason`` says why)."""

    __slots__ = ("kind", "value", "reason", "last", "resumed")

    def __init__(self, offset: int, data: bytes, truncated: bool = False, kind: str = "value", value: Any = None,
                 reason: str = "", last: bool = False, resumed: bool = False) -> None:
        self.offset = offset
        self.data = data
        self.truncated = truncated
        self.kind = kind
        self.value = value
        self.reason = reason
        self.last = last
        self.resumed = resumed

    __hash__ = RawFrame.hashed


class _Open:
    """An aggregate being read: its type, the elements still to come (None: streamed, up to
    its end mark), and the elements so far."""

    __slots__ = ("type", "left", "items")

    def __init__(self, type_: str, left: int | None) -> None:
        self.type, self.left, self.items = type_, left, []


class RespFramer(Framer):
    """One direction of a Redis connection (see the module's docstring)."""

    __slots__ = ("buf", "base", "pos", "stack", "bulk", "doomed", "elements", "state", "expect", "left", "paid",
                 "mark", "searched", "resumed", "skip_from", "skip_size", "frame_cap", "elements_cap", "_doomed_bytes",
                 "then", "need", "passing", "edge", "first", "chain", "direction", "session")

    def __init__(self, synced: bool = True, runs: bool = False) -> None:
        Framer.__init__(self)
        self.buf = bytearray()
        self.base = 0  # stream offset of buf[0]
        self.pos = 0  # where reading the frame at buf[0] goes on
        self.stack: list[_Open] = []
        self.bulk: tuple[str, int] | None = None  # a bulk's type and length, its header read
        self.doomed = ""  # why the frame being read is passed over (its bytes are not held)
        self._doomed_bytes = 0  # bytes of it passed over so far
        self.elements = 0
        self.state = NORMAL if synced else LOST
        self.expect = False  # +FULLRESYNC seen: the payload comes next
        self.left = 0  # payload bytes still to come ($<len> form)
        self.paid = 0  # payload bytes given so far
        self.mark = b""
        self.searched = 0
        self.resumed = False
        self.skip_from = 0  # where the bytes passed over while lost began
        self.skip_size = 0
        self.frame_cap = RESP_FRAME.value()
        self.elements_cap = RESP_ELEMENTS.value()
        self.then = NORMAL  # the state after the payload's end mark
        self.need = 0  # the buffer's length a journal record needs at least
        self.passing: list | None = None  # a journal record passed over: [entry, strings left, bytes left]
        self.chain: tuple[int, int | None] = (0, None)  # the SELECTs read of the next journal record: (end, db)
        self.edge = not synced  # while lost: the buffer's first byte may start a frame (see resync.py)
        self.first = not synced  # ... and it is the first after the start or lost bytes
        self.direction = ""  # c2s or s2c, when the engine says (see follows)
        self.session = None  # how to reach the connection's session (its pairing)

    # -- the Framer interface --------------------------------------------------------------

    def follows(self, direction: str, session) -> None:
        """A client's direction resynchronises on inline commands too; a server's on replies
        that pair with the commands waiting (resync.py)."""
        self.direction, self.session = direction, session

    def feed(self, data: bytes) -> list:
        if data:
            self.buf += data
        out: list = []
        self._run(out)
        return out

    def gap(self, missing: int) -> list:
        out: list = []
        buf = self.buf
        if self.state == PAYLOAD_LEN:
            if buf:
                self.left -= len(buf)
                self._piece(out, len(buf))
            self.resumed = True
            self.base += missing
            self.paid += missing
            self.left -= missing
            if self.left <= 0:  # the payload ended in the lost bytes, and commands may have followed
                out.append(RespFrame(self.base + self.left, b"", kind="payload", last=True, resumed=True))
                self._lose(self.base)
            return out
        if self.state == PAYLOAD_EOF:
            if buf:
                self._piece(out, len(buf))
            self.resumed = True
            self.base += missing
            self.paid += missing
            self.searched = 0
            return out
        if self.state in (JOURNAL, JOURNAL_SKIP, JOURNAL_LOST):
            self._journal_lost(out, "cut by lost bytes")
            self.skip_size += len(buf)
            self.base += len(buf)
            buf.clear()
            self._skipped(out, "before lost bytes")
            self.base += missing
            self.skip_from = self.base
            return out
        if self.state == LOST:
            self.skip_size += len(buf)
            self._skipped(out, "before lost bytes")
        elif buf or self.doomed or self.stack or self.bulk:
            start = self.base - self._doomed_bytes
            reason = (f"a RESP frame passed over ({self.doomed}), cut by lost bytes" if self.doomed
                      else "a RESP frame cut by lost bytes")
            out.append(Skipped(start, self.base + len(buf) - start, reason))
        self.base += len(buf) + missing
        buf.clear()
        self._lose(self.base)
        return out

    def close(self, data: bytes = b"") -> list:
        out = self.feed(data)
        buf = self.buf
        if self.state in (PAYLOAD_LEN, PAYLOAD_EOF):
            out.append(RespFrame(self.base, bytes(buf), True, kind="payload", last=True, resumed=self.resumed))
            self.base += len(buf)
        elif self.state == JOURNAL and buf:
            out.append(RespFrame(self.base, bytes(buf), True, kind="journal", value=None,
                                 reason="the stream ends inside a journal record"))
            self.base += len(buf)
        elif self.state in (JOURNAL_SKIP, JOURNAL_LOST):
            self._journal_lost(out, "cut by the end of the stream")
            self.skip_size += len(buf)
            self.base += len(buf)
            self._skipped(out, "no journal record found")
        elif self.state == LOST and buf and self._resync(out, True):
            out += self.close()  # the frames from the place taken, and how the stream ends
            return out
        elif self.state == LOST:
            self.skip_size += len(buf)
            self.base += len(buf)
            self._skipped(out, "no RESP frame start found")
        elif self.doomed:
            start = self.base - self._doomed_bytes
            out.append(Skipped(start, self.base + len(buf) - start, f"a RESP frame passed over ({self.doomed}), "
                                                                     "cut by the end of the stream"))
            self.base += len(buf)
        elif buf:
            out.append(RespFrame(self.base, bytes(buf), True, kind="value", value=None,
                                 reason="the stream ends inside the frame"))
            self.base += len(buf)
        buf.clear()
        self._reset()
        return out

    @property
    def buffered(self) -> int:
        return len(self.buf)

    @property
    def buffer(self) -> bytearray:
        return self.buf

    @property
    def wanted(self) -> int:
        n = len(self.buf)
        if self.state == PAYLOAD_LEN:
            return min(self.left, PIECE - self.paid % PIECE)
        if self.state == PAYLOAD_EOF:  # the mark may end the payload in the next bytes
            return self.searched + len(self.mark)
        if self.state == JOURNAL:
            return max(n + 1, self.need)
        if self.state == NORMAL and self.bulk is not None and not self.doomed:
            return max(n + 1, self.pos + self.bulk[1] + 2)
        return n + 1

    # -- reading ---------------------------------------------------------------------------

    def _reset(self) -> None:
        self.pos = 0
        self.stack = []
        self.bulk = None
        self.doomed = ""
        self._doomed_bytes = 0
        self.elements = 0

    def _lose(self, at: int) -> None:
        """The place in the stream is lost: look for a frame start from ``at`` on (resync.py)."""
        self._reset()
        self.state = LOST
        self.expect = False
        self.skip_from, self.skip_size = at, 0
        self.edge = self.first = True

    def _skipped(self, out: list, reason: str) -> None:
        if self.skip_size:
            out.append(Skipped(self.skip_from, self.skip_size, reason))
        self.skip_from, self.skip_size = self.base, 0

    def _frame_bytes(self) -> int:
        """Bytes of the frame being read so far (those passed over included)."""
        return self._doomed_bytes + self.pos

    def _run(self, out: list) -> None:
        while True:
            state = self.state
            if state == NORMAL:
                if not self._frame(out):
                    return
            elif state == LOST:
                if not self._resync(out):
                    return
            elif state == PAYLOAD_LEN:
                if not self._payload_len(out):
                    return
            elif state == PAYLOAD_EOF:
                if not self._payload_eof(out):
                    return
            elif state == JOURNAL:
                if not self._journal(out):
                    return
            elif state == JOURNAL_SKIP:
                if not self._journal_skip(out):
                    return
            elif not self._journal_resync(out):
                return

    def _resync(self, out: list, final: bool = False) -> bool:
        """Look for the earliest place a reply or command starts that reads whole (resync.py;
        ``final``: no more bytes will come)."""
        buf = self.buf
        direction = self.direction
        at, drop = resync.start(buf, self.edge, self.first, final, direction == "c2s",
                                self._pairs if direction == "s2c" and self.session is not None else None)
        if drop:
            self.edge = buf[drop - 1] == 10
            self.first = False
            self.skip_size += drop
            del buf[:drop]
            self.base += drop
        if at is None:
            return False
        self._skipped(out, "resynchronising: no RESP frame start")
        self.state = NORMAL
        return True

    def _pairs(self, at: int) -> bool | None:
        """Whether the replies from ``at`` in the buffer pair with the commands waiting."""
        pairing = getattr(self.session(), "pairing", None)
        if pairing is None or not pairing.waiting:
            return None
        replies = resync.replies(self.buf, at, at + resync.LOOK, min(len(pairing.waiting), resync.PAIRED) + 1)
        return pairing.pairs(replies, self.record_of(self.base + at + 1) + 1)

    def _error(self, out: list, end: int, reason: str) -> int:
        """Bytes that are no RESP up to ``end`` in the buffer: an error frame, then the
        framer looks for a command after them."""
        if self.doomed:
            start = self.base - self._doomed_bytes
            out.append(Skipped(start, self.base + end - start, f"a RESP frame passed over ({self.doomed})"))
            out.append(RespFrame(self.base + end, b"", kind="error", reason=reason))
        else:
            out.append(RespFrame(self.base, bytes(self.buf[:end]), kind="error", reason=reason))
        del self.buf[:end]
        self.base += end
        self._lose(self.base)
        return DONE

    def _line(self, out: list) -> int | None:
        """The end (after its newline) of the line at ``pos``; None when it has not come
        whole (or was too long: then an error frame is out and the state is lost)."""
        buf, pos = self.buf, self.pos
        nl = buf.find(b"\n", pos, pos + MAX_LINE + 2)
        if nl < 0:
            if len(buf) - pos > MAX_LINE + 1:
                self._error(out, len(buf), f"a line of more than {MAX_LINE} bytes with no end")
            return None
        return nl + 1

    def _frame(self, out: list) -> bool:
        """Read on in the frame at the buffer's start: False when more bytes are needed,
        True once a frame (or an error) is out or the mode changed."""
        while True:
            r = self._bulk_body(out) if self.bulk is not None else self._token(out)
            if r == WAIT:
                return False
            if r == DONE:
                return True
            if self.doomed:
                self._pass_over()

    def _token(self, out: list) -> int:
        buf, pos, stack = self.buf, self.pos, self.stack
        if pos >= len(buf):
            return WAIT
        top = not stack and pos == 0 and not self.doomed
        t = buf[pos]
        if top and t not in TYPES:
            return self._inline(out)
        end = self._line(out)
        if end is None:
            return WAIT if self.state == NORMAL else DONE
        if buf[end - 2] != 13:
            return self._error(out, end, "a RESP line ends in a bare newline")
        text = bytes(buf[pos + 1:end - 2])
        if stack and stack[-1].type == "$?":  # a streamed string's chunks, up to ;0
            n = _number(text) if t == 59 else None
            if n is None or n < 0:
                return self._error(out, end, "a streamed string holds something other than chunks")
            self.pos = end
            if n == 0:
                agg = stack.pop()
                return self._complete(("$", None if self.doomed else b"".join(agg.items)), out)
            self._cap(n)
            self.bulk = (";", n)
            return NEXT
        if t == 46 and stack and stack[-1].left is None:  # . ends a streamed aggregate
            if text:
                return self._error(out, end, "a streamed aggregate's end carries bytes")
            self.pos = end
            agg = stack.pop()
            return self._complete((agg.type, agg.items), out)
        if top and t == 36 and (self.expect or text.startswith(b"EOF:")):  # $: the payload after FULLRESYNC
            return self._payload_start(out, end, text)
        if t not in TYPES:
            return self._error(out, end, f"{chr(t)!r} is no RESP type")
        self.pos = end
        if t in LINE_TYPES:
            problem = _line_problem(t, text)
            if problem:
                return self._error(out, end, problem)
            return self._complete((chr(t), _line_value(t, text)), out)
        if t in BULK_TYPES:
            return self._bulk_header(out, t, text, end, top)
        return self._aggregate(out, t, text, end)

    def _inline(self, out: list) -> int:
        end = self._line(out)
        if end is None:
            return WAIT if self.state == NORMAL else DONE
        line = bytes(self.buf[:end])
        words = split_args(line[:-2] if line.endswith(b"\r\n") else line[:-1])
        if words is None:
            return self._error(out, end, "Protocol error: unbalanced quotes in request")
        self._emit(out, end, RespFrame(self.base, line, kind="inline" if words else "keepalive",
                                       value=("inline", words)))
        return DONE

    def _cap(self, n: int) -> None:
        """A bulk of ``n`` bytes comes: past the frame cap, the frame is passed over."""
        if not self.doomed and self._frame_bytes() + n + 2 > self.frame_cap:
            self._doom(f"a bulk string of {n:,} bytes, over the RESP frame cap of {self.frame_cap:,}")

    def _bulk_header(self, out: list, t: int, text: bytes, end: int, top: bool) -> int:
        if text == b"?" and t == 36:  # a streamed string: chunks up to ;0
            return self._open(out, "$?", None, end)
        n = _number(text)
        if n is None or n < -1 or (n == -1 and t != 36):
            return self._error(out, end, f"{text[:40]!r} is no bulk length")
        if n == -1:
            return self._complete(("$", None), out)
        if top and t == 36 and n >= 9:  # a bare RDB bulk: the reply to SYNC
            if len(self.buf) < end + 9:
                self.pos = 0  # the header is read again with the magic's bytes
                return WAIT
            if header(bytes(self.buf[end:end + 9])) is not None:
                return self._payload_start(out, end, text)
        self._cap(n)
        self.bulk = (chr(t), n)
        return NEXT

    def _bulk_body(self, out: list) -> int:
        t, n = self.bulk
        buf, pos = self.buf, self.pos
        if self.doomed:  # the body is passed over as it comes
            take = min(n, len(buf) - pos)
            del buf[pos:pos + take]
            self._doomed_bytes += take
            self.base += take
            n -= take
            self.bulk = (t, n)
            if n or len(buf) < pos + 2:
                return WAIT
            if buf[pos:pos + 2] != b"\r\n":
                return self._error(out, pos + 2, "a bulk string does not end in CRLF")
            self.bulk = None
            self.pos = pos + 2
            return NEXT if t == ";" else self._complete((t, None), out)
        if len(buf) < pos + n + 2:
            return WAIT
        if buf[pos + n:pos + n + 2] != b"\r\n":
            return self._error(out, pos + n + 2, "a bulk string does not end in CRLF")
        body = bytes(buf[pos:pos + n])
        self.bulk = None
        self.pos = pos + n + 2
        if t == ";":
            self.stack[-1].items.append(body)
            return NEXT
        return self._complete((t, body), out)

    def _aggregate(self, out: list, t: int, text: bytes, end: int) -> int:
        kind = chr(t)
        if text == b"?":
            return self._open(out, kind, None, end)
        n = _number(text)
        if n is None or n < -1 or n > MAX_COUNT or (n == -1 and t != 42):
            return self._error(out, end, f"{text[:40]!r} is no element count")
        if n == -1:
            return self._complete(("*", None), out)
        count = 2 * n if kind in "%|" else n
        if count == 0:
            return self._complete((kind, []), out)
        return self._open(out, kind, count, end)

    def _open(self, out: list, kind: str, count: int | None, end: int) -> int:
        if len(self.stack) >= MAX_DEPTH:
            return self._error(out, end, f"RESP values nested more than {MAX_DEPTH} deep")
        self.elements += count or 0
        if not self.doomed and self.elements > self.elements_cap:
            self._doom(f"more than {self.elements_cap:,} elements, the RESP element cap")
        self.stack.append(_Open(kind, count))
        return NEXT

    def _doom(self, reason: str) -> None:
        """The frame is too big to hold: from here on its bytes are passed over as they come."""
        self.doomed = reason
        self._doomed_bytes = 0
        self._pass_over()
        for agg in self.stack:
            agg.items = []

    def _pass_over(self) -> None:
        """Drop the bytes read of a frame being passed over."""
        pos = self.pos
        if pos:
            del self.buf[:pos]
            self.base += pos
            self._doomed_bytes += pos
            self.pos = 0

    def _complete(self, value: tuple, out: list) -> int:
        """A value is whole: into its aggregate (NEXT), or it is the frame (DONE)."""
        stack = self.stack
        while stack:
            agg = stack[-1]
            if not self.doomed:
                agg.items.append(value)
            if agg.left is None:
                return NEXT
            agg.left -= 1
            if agg.left:
                return NEXT
            stack.pop()
            if agg.type == "|":  # an attribute describes the value after it, which follows
                return NEXT
            value = (agg.type, agg.items)
        end = self.pos
        if self.doomed:
            start = self.base - self._doomed_bytes
            out.append(Skipped(start, self.base + end - start, f"a RESP frame passed over ({self.doomed})"))
            del self.buf[:end]
            self.base += end
            self._reset()
        else:
            self._emit(out, end, RespFrame(self.base, bytes(self.buf[:end]), kind="value", value=value))
        return DONE

    def _emit(self, out: list, end: int, frame: RespFrame) -> None:
        out.append(frame)
        del self.buf[:end]
        self.base += end
        self._reset()
        value = frame.value
        if frame.kind == "value" and value[0] == "+" and value[1].startswith(b"FULLRESYNC"):
            self.expect = True
        elif frame.kind != "keepalive":
            self.expect = False
            answer = flow_answer(value) if frame.kind == "value" else None
            if answer is not None:
                self._flow(*answer)

    # -- the RDB payload ---------------------------------------------------------------------

    def _payload_start(self, out: list, end: int, text: bytes) -> int:
        self.expect = False
        if text.startswith(b"EOF:"):
            mark = text[4:]
            if len(mark) != MARK:
                self._error(out, end, f"a diskless payload's mark is {len(mark)} bytes, not {MARK}")
                return DONE
            self._emit(out, end, RespFrame(self.base, bytes(self.buf[:end]), kind="payload-start",
                                           value=("eof", mark)))
            self.state, self.mark, self.searched = PAYLOAD_EOF, mark, 0
        else:
            n = _number(text)
            if n is None or n < 0:
                self._error(out, end, f"{text[:40]!r} is no payload length")
                return DONE
            self._emit(out, end, RespFrame(self.base, bytes(self.buf[:end]), kind="payload-start",
                                           value=("length", n)))
            if n == 0:
                out.append(RespFrame(self.base, b"", kind="payload", last=True))
                return DONE
            self.state, self.left = PAYLOAD_LEN, n
        self.paid = 0
        self.resumed = False
        return DONE

    def _piece(self, out: list, n: int, last: bool = False) -> None:
        out.append(RespFrame(self.base, bytes(self.buf[:n]), kind="payload", last=last, resumed=self.resumed))
        self.resumed = False
        del self.buf[:n]
        self.base += n
        self.paid += n

    def _payload_len(self, out: list) -> bool:
        buf = self.buf
        while self.left:
            n = min(self.left, PIECE - self.paid % PIECE)
            if len(buf) < n:
                return False
            self.left -= n
            self._piece(out, n, last=not self.left)
        self.state = NORMAL
        return True

    def _payload_eof(self, out: list) -> bool:
        buf, mark = self.buf, self.mark
        at = buf.find(mark, self.searched)
        if at < 0:
            self.searched = max(0, len(buf) - (len(mark) - 1))
            while self.searched >= (n := PIECE - self.paid % PIECE):
                self._piece(out, n)
                self.searched -= n
            return False
        while at >= (n := PIECE - self.paid % PIECE):
            self._piece(out, n)
            at -= n
        if at:
            self._piece(out, at)
        size = len(mark)
        out.append(RespFrame(self.base, bytes(buf[:size]), kind="payload-end", value=("eof", mark)))
        del buf[:size]
        self.base += size
        self.state, self.then = self.then, NORMAL
        return True

    # -- a Dragonfly flow (§13.2) ------------------------------------------------------------

    def _flow(self, kind: bytes, token: bytes) -> None:
        """The master answered DFLY FLOW: the shard's RDB up to the eof token, then the
        journal (FULL), or the journal at once (PARTIAL)."""
        if kind == b"FULL":
            self.state, self.mark, self.searched, self.then = PAYLOAD_EOF, token, 0, JOURNAL
            self.paid = 0
            self.resumed = False
        else:
            self.state = JOURNAL
        self.need, self.chain = 0, (0, None)

    def _journal(self, out: list) -> bool:
        buf = self.buf
        if not buf or len(buf) < self.need:
            return False
        try:
            # the SELECTs before the op read once, however many segments they come in
            at, db, short = journal.selects(buf, self.chain[0], self.chain[1])
            if at > self.frame_cap:
                raise Corrupt(f"SELECTs of more than {self.frame_cap:,} bytes (the RESP frame cap) before an op", at)
            self.chain = (at, db)
            if short:
                self.need = len(buf) + 1
                return False
            entry, end = journal.read_record(buf, 0, self.frame_cap, self.elements_cap, after=self.chain)
        except NeedMore as more:
            self.need = more.args[0]
            return False
        except journal.Oversized as big:
            del buf[:big.start]
            self.passing = [big.entry, big.strings, 0, big.start, str(big), big.total]
            self.base += big.start
            self.state = JOURNAL_SKIP
            self.need, self.chain = 0, (0, None)
            return True
        except Corrupt as exc:
            out.append(RespFrame(self.base, b"", kind="error", reason=f"journal: {exc.args[0]}"))
            self.state, self.need, self.chain = JOURNAL_LOST, 0, (0, None)
            self.skip_from, self.skip_size = self.base, 0
            return True
        self.need, self.chain = 0, (0, None)
        out.append(RespFrame(self.base, bytes(buf[:end]), kind="journal", value=entry, resumed=self.resumed))
        self.resumed = False
        del buf[:end]
        self.base += end
        return True

    def _journal_skip(self, out: list) -> bool:
        """A record too big to hold, passed over a string at a time as its bytes come."""
        buf, passing = self.buf, self.passing
        while True:
            if passing[2]:
                take = min(passing[2], len(buf))
                del buf[:take]
                self.base += take
                passing[3] += take
                passing[2] -= take
                if passing[2]:
                    return False
            if not passing[1]:
                entry, _, _, size, why, _ = passing
                entry.length = size
                out.append(RespFrame(self.base - size, b"", kind="journal", value=entry,
                                     reason=f"{why}: passed over"))
                self.passing, self.state = None, JOURNAL
                return True
            try:
                n, q = read_len(buf, 0)
                if n > passing[5]:
                    raise Corrupt(f"a string of {n:,} bytes passes the command's total size", 0)
            except NeedMore:
                return False
            except Corrupt as exc:
                self._journal_lost(out, f"journal: {exc.args[0]}")
                return True
            passing[5] -= n
            del buf[:q]
            self.base += q
            passing[3] += q
            passing[1] -= 1
            passing[2] = n

    def _journal_lost(self, out: list, why: str) -> None:
        """The place in the journal is lost: what was being passed over ends here."""
        if self.state == JOURNAL_SKIP and self.passing is not None:
            size = self.passing[3]
            out.append(Skipped(self.base - size, size, f"a journal record passed over, {why}"))
            self.passing = None
        elif self.state == JOURNAL and self.buf:
            out.append(Skipped(self.base, len(self.buf), f"a journal record {why}"))
            self.base += len(self.buf)
            self.buf.clear()
        if self.state != JOURNAL_LOST:
            self.skip_from, self.skip_size = self.base, 0
        self.state, self.need, self.chain = JOURNAL_LOST, 0, (0, None)

    def _journal_resync(self, out: list) -> bool:
        """Look for a SELECT and a command that read whole: the journal goes on there."""
        buf = self.buf
        if len(buf) < self.need:
            return False
        self.need = 0
        i = 0
        while True:
            i = buf.find(b"\x06", i)
            if i < 0:
                i = len(buf)
                break
            try:  # a candidate costs at most RESYNC_SELECTS SELECTs and RESYNC_STRINGS lengths
                entry, _ = journal.read_record(buf, i, JOURNAL_LOOK, RESYNC_STRINGS, most_selects=RESYNC_SELECTS)
            except NeedMore as more:
                if more.args[0] - i <= JOURNAL_LOOK:
                    self.need = more.args[0] - i  # a candidate, not yet whole: tried again once it may be
                    break
                i += 1
                continue
            except (Corrupt, journal.Oversized):
                i += 1
                continue
            if entry.op == journal.COMMAND and entry.dbid is not None and _command_name(entry.args):
                self.skip_size += i
                del buf[:i]
                self.base += i
                self._skipped(out, "resynchronising: no journal record")
                self.state, self.resumed = JOURNAL, True
                return True
            i += 1
        self.skip_size += i
        del buf[:i]
        self.base += i
        return False


def flow_answer(value: tuple) -> tuple[bytes, bytes] | None:
    """``(FULL or PARTIAL, eof token)`` when a RESP value is the answer to DFLY FLOW (§13.2)."""
    kind, items = value
    if kind != "*" or not items or len(items) != 2:
        return None
    (t1, directive), (t2, token) = items
    if t1 != "+" or t2 != "+" or directive not in FLOW_ANSWERS or not 0 < len(token) <= MAX_TOKEN:
        return None
    return directive, token


def _command_name(args: list[bytes]) -> bool:
    """A journal command's first string looks like a command's name."""
    return bool(args) and 0 < len(args[0]) <= 32 and args[0].replace(b".", b"").replace(b"_", b"").isalpha()


def _line_value(t: int, text: bytes):
    if t == 58:
        return int(text)
    if t == 95:
        return None
    if t == 35:
        return text == b"t"
    return text
