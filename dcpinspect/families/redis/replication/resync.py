"""Where a direction of a Redis connection joined mid-way (or after lost bytes) goes on:
RESP's grammar read without keeping anything, to judge candidate frame starts.

A candidate is the direction's first byte after the capture's start or lost bytes (a TCP
segment's first byte, the usual start of a reply or command), every byte after a newline,
when it is a RESP type byte, and a command array's head anywhere. It is taken when the
value from there parses whole and the bytes after it go on parsing as whole values
(:data:`RUN` of them, or up to the direction's end; the first byte after the capture's start
or lost bytes needs only its own value whole); the earliest such candidate wins, so that a
resynchronisation lands on the outermost start of a nested reply (``*2 *2 $15 ...``), not
inside it. A candidate whose first value needs more than :data:`LOOK` bytes to judge is
taken as it stands (the framer's caps bound it from there). Each candidate is read at
most up to :data:`LOOK` bytes past it, and a rejected one is never read again.

Where the framer knows its direction: a client's line that is an inline command (a real
command's name, then words split as Redis splits them) is a candidate too, as a RESP value
is; and a server's candidate must also pair with the client's commands waiting (the
framer's ``pairs``, given the candidate's replies as :func:`replies` reads them: no more
replies than commands wait, each of a type its command may get).
"""

from __future__ import annotations

import re

from .commands import NAMES
from .inline import split_args

#: the type bytes of RESP2 and RESP3 (anything else starting a frame is an inline command)
LINE_TYPES = frozenset(b"+-:_,#(")
BULK_TYPES = frozenset(b"$!=")
AGGREGATE_TYPES = frozenset(b"*~>%|")
TYPES = LINE_TYPES | BULK_TYPES | AGGREGATE_TYPES
#: Redis's PROTO_INLINE_MAX_SIZE: the longest line (inline command, simple string, header)
MAX_LINE = 64 * 1024
MAX_DEPTH = 64
#: Redis's own bound on an aggregate's count (INT_MAX) and a bulk's length (LLONG_MAX)
MAX_COUNT = (1 << 31) - 1
#: values after a candidate's first that must parse too (none for the first byte after the
#: capture's start or lost bytes: a segment's start), and how far past it one is read
RUN = 1
LOOK = 256 * 1024
#: a command array's head, a candidate wherever it is
COMMAND = re.compile(rb"\*[1-9][0-9]{0,6}\r\n\$[0-9]{1,9}\r\n")
#: what a probe found: more bytes are needed, or no RESP value starts there
NEED, BAD = -1, -2
#: an inline command's first word (a command's name, then a blank), one on its way, and
#: what no client types on a line
WORD = re.compile(rb"[ \t]*([A-Za-z][A-Za-z_|.-]{0,31})[ \t\r\n]")
WORD_SO_FAR = re.compile(rb"[ \t]*[A-Za-z][A-Za-z_|.-]{0,31}")
NOT_TEXT = re.compile(rb"[^\x20-\x7e\t]")
#: replies read past a server's candidate at most, to pair them with the waiting commands
#: (one more than the commands waiting, up to this: a candidate's reading stays bounded)
PAIRED = 8


def number(text: bytes) -> int | None:
    """A RESP length or count: an optional minus and at most 19 digits."""
    digits = text[1:] if text[:1] == b"-" else text
    if not digits or len(digits) > 19 or not digits.isdigit():
        return None
    return int(text)


def line_problem(t: int, text: bytes) -> str:
    """What is wrong with a line value of type byte ``t`` ("" when nothing)."""
    if t == 58 and number(text) is None:  # :
        return f"{text[:40]!r} is no RESP integer"
    if t == 95 and text:  # _
        return "a RESP3 null carries bytes"
    if t == 35 and text not in (b"t", b"f"):  # #
        return f"{text[:40]!r} is no RESP3 boolean"
    if t == 40 and not (text[1:] if text[:1] in (b"-", b"+") else text).isdigit():  # (
        return f"{text[:40]!r} is no RESP3 big number"
    return ""


def probe(buf: bytearray, pos: int, stop: int) -> int:
    """The end of the RESP value at ``pos`` in ``buf`` (read no further than ``stop``):
    NEED when it is not whole there, BAD when no value starts at ``pos``. Streamed
    values (``$?``, ``*?``) are not taken as starts."""
    n = min(len(buf), stop)
    left = [1]  # elements still to come at each depth
    while left:
        if pos >= n:
            return NEED
        t = buf[pos]
        if t not in TYPES:
            return BAD
        nl = buf.find(b"\n", pos, min(n, pos + MAX_LINE + 2))
        if nl < 0:
            return NEED if n - pos <= MAX_LINE + 1 else BAD
        if nl == pos or buf[nl - 1] != 13:
            return BAD
        text = bytes(buf[pos + 1:nl - 1])
        pos = nl + 1
        if t in LINE_TYPES:
            if line_problem(t, text):
                return BAD
        elif t in BULK_TYPES:
            k = number(text)
            if k is None or k < -1 or (k == -1 and t != 36):
                return BAD
            if k >= 0:
                if pos + k + 2 > n:
                    return NEED
                if buf[pos + k:pos + k + 2] != b"\r\n":
                    return BAD
                pos += k + 2
        else:
            k = number(text)
            if k is None or k < -1 or k > MAX_COUNT or (k == -1 and t != 42):
                return BAD
            if k > 0:
                if len(left) >= MAX_DEPTH:
                    return BAD
                if t == 124:  # an attribute: the value it describes follows it
                    left[-1] += 1
                left.append(2 * k if t in (37, 124) else k)
                continue
        while left:  # a value is whole: one element less in each aggregate it closes
            left[-1] -= 1
            if left[-1]:
                break
            left.pop()
    return pos


def inline(buf: bytearray, pos: int, stop: int) -> int:
    """The end of the inline command at ``pos`` (a line of text whose first word is a real
    command's name), NEED or BAD, as :func:`probe`."""
    n = min(len(buf), stop)
    word = WORD.match(buf, pos, n)
    if word is None:  # a name still coming, or none
        return NEED if n - pos <= 40 and WORD_SO_FAR.fullmatch(buf, pos, n) else BAD
    if word.group(1).upper() not in NAMES:
        return BAD
    nl = buf.find(b"\n", pos, min(n, pos + MAX_LINE + 1))
    if nl < 0:
        return NEED if n - pos <= MAX_LINE else BAD
    line = bytes(buf[pos:nl - 1 if nl > pos and buf[nl - 1] == 13 else nl])
    if NOT_TEXT.search(line):  # text, as a client types it
        return BAD
    words = split_args(line)
    return nl + 1 if words and words[0].upper() in NAMES else BAD


def replies(buf: bytearray, at: int, stop: int, most: int) -> list[tuple[int, bytes]]:
    """The replies from ``at`` on (at most ``most``, read no further than ``stop``): each
    one's type byte and, for a status, its line; the last may be one not yet whole."""
    out: list[tuple[int, bytes]] = []
    pos, n = at, min(len(buf), stop)
    while pos < n and len(out) < most:
        t = buf[pos]
        nxt = probe(buf, pos, stop)
        if nxt == BAD:
            break
        line = b""
        if t == 43:  # +
            cr = buf.find(b"\r", pos, min(n, pos + 64))
            line = bytes(buf[pos + 1:cr]) if cr > 0 else b""
        out.append((t, line))
        if nxt == NEED:
            break
        pos = nxt
    return out


def start(buf: bytearray, edge: bool, first: bool, final: bool = False, lines: bool = False,
          pairs=None) -> tuple[int | None, int]:
    """The earliest candidate taken in ``buf`` (``edge``: its first byte is one), or None;
    and how many bytes at the front can go (no candidate is left in them, or one waits
    for more bytes at that place). ``first``: the buffer's first byte is the first after
    the capture's start or lost bytes, whose candidate needs only its own value whole (a
    byte that is a candidate for following a newline is none, once the bytes before it
    went). ``final``: no more bytes will come (a candidate that reads whole up to the end
    is taken). ``lines``: inline commands are candidates too (a
    client's direction); ``pairs(at)``: whether the replies from ``at`` pair with the
    commands waiting (False: they do not; None: it cannot tell) for a server's."""
    n = len(buf)
    at = 0 if edge else _next(buf, 0, 0)
    while at < n:
        if buf[at] in TYPES or lines:
            verdict = _judge(buf, at, final, 0 if first and at == 0 else RUN, lines)
            if verdict and pairs is not None and pairs(at) is False:
                verdict = None
            if verdict is not None:
                return (at, at) if verdict else (None, at)
        at = _next(buf, at, at + 1)
    return None, n


def _next(buf: bytearray, at: int, after: int) -> int:
    """The next candidate after ``at``: after a newline, or a command array's head anywhere
    (a command glued to bytes that are no RESP)."""
    nl = buf.find(b"\n", at)
    line = len(buf) if nl < 0 else nl + 1
    m = COMMAND.search(buf, after)
    return line if m is None or m.start() >= line else m.start()


def _judge(buf: bytearray, at: int, final: bool, run: int, lines: bool = False) -> bool | None:
    """True: take the candidate; False: wait for more bytes; None: it is no start. The
    verdict is the same however the bytes came: it waits until the first value and the
    ``run`` after it are whole, or :data:`LOOK` bytes are held past the candidate."""
    stop = at + LOOK
    end = at
    for _ in range(run + 1):
        if end >= len(buf) and end > at:
            return True if final or end >= stop else False
        nxt = inline(buf, end, stop) if lines and buf[end] not in TYPES else probe(buf, end, stop)
        if nxt == BAD:
            return None
        if nxt == NEED:
            # at the end, a value cut short is taken after whole ones, or at a segment's start
            return True if len(buf) >= stop or (final and (end > at or run == 0)) else False
        end = nxt
    return True
