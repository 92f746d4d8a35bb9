"""Which command each reply of a Redis connection answers (spec/rdb.md §12).

A Redis server answers a client's commands in the order they came, one reply each, with
these exceptions, told apart here:

- RESP3 push messages (``>``) answer nothing, but a push that confirms a (P|S)SUBSCRIBE
  or an UNSUBSCRIBE is that command's answer;
- after SUBSCRIBE (and in a connection whose subscription the capture did not show, by
  their shape), published messages (``message``, ``pmessage``, ``smessage`` arrays)
  answer nothing, and SUBSCRIBE with N channels is answered N times (UNSUBSCRIBE with
  none: until the count of subscriptions left is 0);
- after MONITOR's ``+OK``, the server's lines about every command it runs
  (``+1700000000.123456 [0 127.0.0.1:50000] "set" ...``) answer nothing;
- a replica's ``REPLCONF ACK`` is never answered, nor are commands after ``CLIENT REPLY
  OFF`` (until ``ON``) or the one after ``CLIENT REPLY SKIP``;
- the master's replication stream, which the session tells apart before asking here.

A reply that answers a command records the command's frame (``reply_to``), its name
(``answers``) and the time between the command's last byte and the reply's
(``latency_ms``); a reply when no command the capture showed waits (a connection joined
mid-way) answers one from before the capture and records none.
"""

from __future__ import annotations

import re
from collections import deque

from ....limits import RESP_WAITING
from .answers import fits

#: commands remembered unanswered at most (a client that pipelines more is followed from there)
MAX_PENDING = RESP_WAITING.default
SUBSCRIBES = frozenset({b"SUBSCRIBE", b"PSUBSCRIBE", b"SSUBSCRIBE"})
UNSUBSCRIBES = frozenset({b"UNSUBSCRIBE", b"PUNSUBSCRIBE", b"SUNSUBSCRIBE"})
CONFIRMS = frozenset(w.lower() for w in SUBSCRIBES | UNSUBSCRIBES)
MESSAGES = {b"message": 3, b"smessage": 3, b"pmessage": 4}
#: a MONITOR line: the time, then the db and the client in brackets
MONITOR_LINE = re.compile(rb"[0-9]{1,12}\.[0-9]{1,9} \[[0-9]+ ")

#: what a server's frame is: a reply (answering a command or one before the capture), a
#: RESP3 push, a published message, a MONITOR line
REPLY, PUSH, MESSAGE, MONITOR = "reply", "push", "message", "monitor"


class Waiting:
    """A command the capture showed, not yet (wholly) answered."""

    __slots__ = ("frame", "ts", "name", "left", "subscribe")

    def __init__(self, frame: int, ts: float | None, name: str, left: int | None, subscribe: bool) -> None:
        self.frame, self.ts, self.name = frame, ts, name
        self.left = left  # answers still to come (None: until a confirmation counts 0 subscriptions)
        self.subscribe = subscribe


class Pairing:
    """One connection's commands waiting for their replies (see the module's docstring)."""

    __slots__ = ("waiting", "subscribed", "monitor", "off", "skip")

    def __init__(self) -> None:
        self.waiting: deque[Waiting] = deque()
        self.subscribed = False
        self.monitor = False
        self.off = False  # CLIENT REPLY OFF
        self.skip = False  # CLIENT REPLY SKIP: the next command is not answered

    def command(self, words: list[bytes], name: str, frame: int, ts: float | None) -> None:
        """The client sent a command (its words, as the session named it)."""
        verb = words[0].upper()
        args = words[1:]
        first = args[0].upper() if args else b""
        if verb == b"REPLCONF" and first == b"ACK":
            return
        if verb == b"RESET":  # leaves subscriptions, MONITOR and CLIENT REPLY
            self.subscribed = self.monitor = self.off = self.skip = False
        if verb == b"CLIENT" and first == b"REPLY" and len(args) >= 2:
            mode = args[1].upper()
            if mode == b"ON":
                self.off = self.skip = False
            elif mode in (b"OFF", b"SKIP"):
                self.off, self.skip = mode == b"OFF", mode == b"SKIP"
                return
        if self.off:
            return
        if self.skip:
            self.skip = False
            return
        left: int | None = 1
        if verb in SUBSCRIBES:
            left = max(1, len(args))
        elif verb in UNSUBSCRIBES:
            left = len(args) or None
        if len(self.waiting) >= MAX_PENDING:
            self.waiting.clear()
        self.waiting.append(Waiting(frame, ts, name, left, verb in SUBSCRIBES or verb in UNSUBSCRIBES))
        if verb == b"MONITOR":
            self.monitor = True

    def reply(self, value: tuple) -> tuple[str, Waiting | None]:
        """What a server's RESP value is, and the command it answers (None: none the capture showed)."""
        kind, items = value
        confirm = _confirmation(value)
        if kind == ">" and confirm is None:
            return PUSH, None
        head = self.waiting[0] if self.waiting else None
        if confirm is not None and head is not None and head.subscribe:
            self.subscribed = True
            if head.left is not None:
                head.left -= 1
            if head.left == 0 or (head.left is None and confirm == 0):
                self.waiting.popleft()
            return REPLY, head
        if kind == ">":
            return PUSH, None
        if (self.subscribed or head is None) and _message(value):
            self.subscribed = True
            return MESSAGE, None
        if (self.monitor or head is None) and kind == "+" and MONITOR_LINE.match(items or b""):
            self.monitor = True
            return MONITOR, None
        if head is None:
            return REPLY, None
        self.waiting.popleft()
        return REPLY, head

    def pairs(self, replies: list[tuple[int, bytes]], number: int) -> bool | None:
        """Whether replies the server sent (their type bytes, and the line of a status), the
        first carried by capture record ``number``, answer the waiting commands in order:
        no more of them than commands wait, each of a type its command may get (pushes
        aside). None when the pairing cannot tell: no command waits, or the first waits
        since after record ``number`` (what came before it answers commands before the
        capture), or published messages or MONITOR lines may come unasked."""
        waiting = self.waiting
        if not waiting or number <= waiting[0].frame or self.subscribed or self.monitor:
            return None
        i = 0
        for type_byte, line in replies:
            if type_byte == 62:  # > a push answers nothing
                continue
            if i >= len(waiting):
                return False
            if waiting[i].subscribe:  # answered once a channel: counted by the confirmations
                return None
            if not fits(waiting[i].name, type_byte, line):
                return False
            i += 1
        return True

    def take(self, verb: bytes) -> Waiting | None:
        """What is no RESP value answers the first waiting command when it is ``verb``
        (the bare RDB payload that answers SYNC)."""
        if self.waiting and self.waiting[0].name == verb.decode("latin-1"):
            return self.waiting.popleft()
        return None


def _strings(value: tuple) -> list | None:
    kind, items = value
    if kind not in "*>" or not isinstance(items, list):
        return None
    return items


def _confirmation(value: tuple) -> int | None:
    """The subscriptions left that a (P|S)(UN)SUBSCRIBE confirmation counts, else None."""
    items = _strings(value)
    if not items or len(items) != 3 or items[2][0] != ":" or not isinstance(items[0][1], bytes):
        return None
    return items[2][1] if items[0][1].lower() in CONFIRMS else None


def _message(value: tuple) -> bool:
    items = _strings(value)
    if not items or not isinstance(items[0][1], bytes):
        return False
    return MESSAGES.get(items[0][1].lower()) == len(items)
