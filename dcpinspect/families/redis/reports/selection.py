"""Which keys of a snapshot the outputs take (``rdb --match/--regex/--type/--db/--min-size/
--max-size/--min-elements/--max-elements/--expiring/--persistent/--expired/--at``).

:class:`KeySelection` is the one test: ``admits(rec, ctime_ms)`` on a whole
:class:`~.records.KeyRecord`, and ``wanted(db, key, type, expire_ms, ctime_ms)``, the part
decided before a value is read (all but the sizes), which the decoder asks so that a key
passed over costs no value decoding. Give one to :class:`~.rdb.RdbParser` (``select=``) and
it gives only the keys admitted. :func:`glob` is Redis's own pattern match, as ``SCAN
MATCH`` and ``KEYS`` apply it (``stringmatchlen`` in redis/src/util.c), byte for byte.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

#: the type names keys have (as ``TYPE`` says them); a module's own 9-character type name
#: (``ReJSON-RL``) is taken as well
TYPES = ("string", "list", "set", "zset", "hash", "stream", "module", "array",
         "ReJSON-RL", "MBbloom--", "CMSk-TYPE", "TopK-TYPE", "CF-TYPE")
#: the expiry states a key can be in at the snapshot's time
STATES = ("expiring", "persistent", "expired")
#: Redis stops following a pattern after this many nested '*' (stringmatchlen's "nesting")
STAR_NESTING = 1000


# ---------------------------------------------------------------------- Redis's glob

def _signed(b: int) -> int:
    """A byte as C's ``char`` compares it on the machines Redis runs on (signed)."""
    return b - 256 if b >= 128 else b


def _tokens(pattern: bytes) -> list:
    """The pattern read as ``stringmatchlen`` reads it: a list of ``"*"`` (a run of stars)
    and sets of the bytes one position takes (``?``, a literal, ``\\x``, a ``[...]`` class,
    whatever its oddities: ``[^...]``, ``\\`` escapes, reversed ranges ``[z-a]``, a range that
    eats the closing bracket ``[a-]``, a class left open to the pattern's end)."""
    n = len(pattern)

    def at(i: int) -> int:  # past the end C reads the terminating NUL
        return pattern[i] if i < n else 0

    out: list = []
    i = 0
    while i < n:
        c = pattern[i]
        if c == 0x2A:  # '*'
            while i + 1 < n and pattern[i + 1] == 0x2A:
                i += 1
            out.append("*")
        elif c == 0x3F:  # '?'
            out.append(None)  # any byte
        elif c == 0x5B:  # '['
            i += 1
            negate = at(i) == 0x5E
            if negate:
                i += 1
            members: set[int] = set()
            while True:
                left = n - i
                if at(i) == 0x5C and left >= 2:  # '\' escapes the next byte
                    i += 1
                    members.add(pattern[i])
                elif at(i) == 0x5D:  # ']'
                    break
                elif left <= 0:  # left open: the class ends the pattern
                    i -= 1
                    break
                elif left >= 3 and pattern[i + 1] == 0x2D:  # a range 'a-z'
                    lo, hi = sorted((_signed(pattern[i]), _signed(pattern[i + 2])))
                    members.update(b for b in range(256) if lo <= _signed(b) <= hi)
                    i += 2
                else:
                    members.add(pattern[i])
                i += 1
            out.append(frozenset(range(256)) - members if negate else frozenset(members))
        else:
            if c == 0x5C and n - i >= 2:  # '\' escapes the next byte
                i += 1
                c = pattern[i]
            out.append(frozenset((c,)))
        i += 1
    return out


def _segment(tokens: list) -> "re.Pattern[bytes]":
    parts = []
    for t in tokens:
        if t is None or len(t) == 256:
            parts.append(b".")
        elif not t:
            parts.append(b"(?!)")
        elif len(t) == 1:
            parts.append(b"\\x%02x" % next(iter(t)))
        else:
            parts.append(b"[" + b"".join(b"\\x%02x" % b for b in sorted(t)) + b"]")
    return re.compile(b"".join(parts), re.DOTALL)


def glob(pattern: bytes) -> Callable[[bytes], bool]:
    """The test of a key against ``pattern`` as ``SCAN ... MATCH pattern`` makes it: what
    ``stringmatchlen`` answers (its '*' alone matches every key, as SCAN and KEYS take it).
    Its time is linear in the key for each run of stars (the segments between the stars are
    placed leftmost, which for segments of fixed width is the only placement to try), never
    the backtracking of a regular expression with many stars."""
    if pattern == b"*":
        return lambda key: True
    tokens = _tokens(pattern)
    segments: list[list] = [[]]
    for t in tokens:
        if t == "*":
            segments.append([])
        else:
            segments[-1].append(t)
    if len(segments) - 1 - (not segments[-1]) > STAR_NESTING:
        # every run of stars but a last one is one level deeper in Redis's recursion,
        # which answers "no" past its limit: no key matches
        return lambda key: False
    if len(segments) == 1:
        whole = _segment(segments[0])
        width = len(segments[0])
        return lambda key: len(key) == width and (width == 0 or whole.match(key) is not None)
    first, middle, last = segments[0], segments[1:-1], segments[-1]
    head, head_w = _segment(first), len(first)
    tail, tail_w = _segment(last), len(last)
    inner = [(_segment(s), len(s)) for s in middle if s]

    def test(key: bytes) -> bool:
        if not key:  # stringmatchlen matches an empty key with the empty pattern alone
            return False
        if head_w and head.match(key) is None:
            return False
        pos = head_w
        for seg, _ in inner:
            m = seg.search(key, pos)
            if m is None:
                return False
            pos = m.end()
        end = len(key) - tail_w
        return end >= pos and (not tail_w or tail.match(key, end) is not None)

    return test


# ---------------------------------------------------------------------- the selection

def parse_time(text: str) -> int:
    """``--at``: Unix seconds (a number), or an ISO 8601 time (UTC unless it says): in ms."""
    text = text.strip()
    try:
        return int(float(text) * 1000)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--at {text!r}: Unix seconds or an ISO 8601 time (2024-05-01T12:00:00Z)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return int(when.timestamp() * 1000)


@dataclass
class KeySelection:
    """The keys asked for: each criterion given narrows them; values of one criterion
    (several ``--type``, several ``--db``, several expiry states) widen it."""

    match: bytes | None = None
    regex: "re.Pattern[bytes] | None" = None
    types: frozenset[str] | None = None
    dbs: frozenset[int] | None = None
    min_size: int | None = None
    max_size: int | None = None
    min_elements: int | None = None
    max_elements: int | None = None
    states: frozenset[str] | None = None
    #: the time expiries are judged at (ms); None: the snapshot's ctime, else the time of the run
    at_ms: int | None = None

    def __post_init__(self) -> None:
        self._glob = glob(self.match) if self.match is not None else None
        self._now = int(time.time() * 1000)
        self.sizes = any(v is not None for v in (self.min_size, self.max_size, self.min_elements,
                                                 self.max_elements))

    @classmethod
    def from_options(cls, given: dict) -> "KeySelection | None":
        """The selection of the options given by name (``match``, ``regex``, ``type``,
        ``db``, ``min_size``, ``max_size``, ``min_elements``, ``max_elements``, ``expiring``,
        ``persistent``, ``expired``, ``at``; absent or None: not given), or None when none
        is; ValueError (its message for the user) for a value it cannot take."""
        given = {k: v for k, v in given.items() if v not in (None, (), [], False)}
        if not given:
            return None
        unknown = set(given) - {"match", "regex", "type", "db", "min_size", "max_size", "min_elements",
                                "max_elements", "at", *STATES}
        if unknown:
            raise ValueError(f"no key selection by {', '.join(sorted(unknown))}")
        match = given.get("match")
        regex = None
        if "regex" in given:
            try:
                regex = re.compile(_raw(given["regex"]), re.DOTALL)
            except re.error as exc:
                raise ValueError(f"--regex {given['regex']!r}: {exc}") from None
        types = None
        if "type" in given:
            names = {str(t).strip() for t in given["type"]}
            odd = sorted(t for t in names if t not in TYPES and len(t) != 9)
            if odd:
                raise ValueError(f"--type {', '.join(odd)}: one of {', '.join(TYPES)}, or a module's type name "
                                 "(9 characters)")
            types = frozenset(names)
        at = given.get("at")
        return cls(match=_raw(match) if match is not None else None, regex=regex, types=types,
                   dbs=frozenset(int(d) for d in given["db"]) if "db" in given else None,
                   min_size=given.get("min_size"), max_size=given.get("max_size"),
                   min_elements=given.get("min_elements"), max_elements=given.get("max_elements"),
                   states=frozenset(s for s in STATES if given.get(s)) or None,
                   at_ms=parse_time(at) if isinstance(at, str) else at)

    def time_of(self, ctime_ms: int | None) -> int:
        """The time expiries are judged at: ``--at``, else the snapshot's ctime, else now."""
        if self.at_ms is not None:
            return self.at_ms
        return ctime_ms if ctime_ms is not None else self._now

    def wanted(self, db: int, key: bytes, type_: str, expire_ms: int | None, ctime_ms: int | None) -> bool:
        """What can be told before a key's value is read: all but its sizes (and, for a
        module value, its module's type name, which its value holds)."""
        if self.dbs is not None and db not in self.dbs:
            return False
        if self.types is not None and type_ not in self.types and type_ != "module":
            return False
        if self.states is not None and self.state(expire_ms, ctime_ms) not in self.states:
            return False
        if self._glob is not None and not self._glob(key):
            return False
        return self.regex is None or self.regex.search(key) is not None

    def state(self, expire_ms: int | None, ctime_ms: int | None) -> str:
        """"persistent" (no expiry), "expired" (before the time of judging) or "expiring"."""
        if expire_ms is None:
            return "persistent"
        return "expired" if expire_ms < self.time_of(ctime_ms) else "expiring"

    def admits(self, rec, ctime_ms: int | None) -> bool:
        """Whether the whole key record ``rec`` is one asked for."""
        if not self.wanted(rec.db, rec.key, rec.vtype.type, rec.expire_ms, ctime_ms):
            return False
        if self.types is not None and rec.vtype.type == "module" and "module" not in self.types \
                and rec.extra.get("module") not in self.types:
            return False
        if self.sizes:
            size, elements = rec.size, rec.elements
            if self.min_size is not None and size < self.min_size:
                return False
            if self.max_size is not None and size > self.max_size:
                return False
            if self.min_elements is not None and (elements is None or elements < self.min_elements):
                return False
            if self.max_elements is not None and (elements is None or elements > self.max_elements):
                return False
        return True


def _raw(text) -> bytes:
    """A pattern from the command line as the bytes it stands for (surrogate escapes undone)."""
    return text if isinstance(text, bytes) else str(text).encode("utf-8", "surrogateescape")
