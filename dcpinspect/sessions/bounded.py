"""Running summaries of a stream of numbers, bounded in memory, that merge: what the
stats collector (``sessions.stats``) keeps per vbucket and for the whole capture.

Each merge takes in a summary of other connections of the same capture; where the order
of what was added matters, the *keys* (places in the capture) that came with it decide.
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

MAX_SERIES_POINTS = 2000  # per vbucket, plus the latest point
MAX_BINS = 512  # throughput histogram bins (the bin width doubles to stay under)
FIRST_BIN_WIDTH = 1e-4  # seconds; doubled as the capture grows


def round_to(v: float | None, digits: int | None = 6) -> float | None:
    if v is None or digits is None:
        return v
    return round(v, digits)


@dataclass(slots=True)
class Agg:
    """Count, sum, minimum and maximum of a stream of numbers."""

    n: int = 0
    total: float = 0
    lo: float | None = None
    hi: float | None = None

    def add(self, v: float) -> None:
        self.n += 1
        self.total += v
        self.lo = v if self.lo is None else min(self.lo, v)
        self.hi = v if self.hi is None else max(self.hi, v)

    def merged(self, values: Iterable[float]) -> "Agg":
        out = Agg(self.n, self.total, self.lo, self.hi)
        for v in values:
            out.add(v)
        return out

    def merge(self, other: "Agg") -> None:
        """Add what ``other`` counted."""
        self.n += other.n
        self.total += other.total
        self.lo = pick(min, self.lo, other.lo)
        self.hi = pick(max, self.hi, other.hi)

    @property
    def mean(self) -> float | None:
        return self.total / self.n if self.n else None

    def json(self, digits: int | None = 6) -> dict[str, Any]:
        r = (lambda v: round_to(v, digits)) if digits is not None else (lambda v: v)  # noqa: E731
        return {"count": self.n, "min": r(self.lo), "mean": r(self.mean), "max": r(self.hi)}


def pick(f, a, b):
    """``f(a, b)`` of the two that are not None."""
    return b if a is None else a if b is None else f(a, b)


class DecimatedSeries:
    """At most ``cap`` evenly strided points of a sequence, plus the latest one.

    Every ``stride``-th point is kept; when the buffer fills, every other kept
    point is dropped and the stride doubles, so the kept points stay evenly
    spread over the whole sequence.  Each point may carry the key that orders it in
    the capture, for :meth:`merge`.
    """

    __slots__ = ("cap", "points", "keys", "stride", "seen", "last", "last_key")

    def __init__(self, cap: int = MAX_SERIES_POINTS) -> None:
        self.cap = max(2, cap)
        self.points: list[tuple[float, int]] = []
        self.keys: list[Any] = []
        self.stride = 1
        self.seen = 0
        self.last: tuple[float, int] | None = None
        self.last_key: Any = None

    def add(self, t: float, v: int, key: Any = None) -> None:
        point = (t, v)
        self.last, self.last_key = point, key
        if self.seen % self.stride == 0:
            self.points.append(point)
            self.keys.append(key)
            if len(self.points) >= self.cap:
                self.points = self.points[::2]
                self.keys = self.keys[::2]
                self.stride *= 2
        self.seen += 1

    def values(self) -> list[tuple[float, int]]:
        pts = list(self.points)
        if self.last is not None and (not pts or pts[-1] is not self.last):
            pts.append(self.last)
        return pts

    def merge(self, other: "DecimatedSeries") -> None:
        """Take in ``other``'s points, in key order, thinned to ``cap`` the same way. Exact
        (the series one collector fed with both would hold) while neither has dropped
        points; after that, evenly spread over what both kept."""
        if other.seen == 0:
            return
        mine = list(zip(self.keys, range(len(self.points)), self.points))
        theirs = list(zip(other.keys, range(len(other.points)), other.points))
        both = [(k, p) for k, _, p in heapq.merge(mine, theirs, key=lambda e: (e[0], e[1]))] \
            if comparable(self.keys + other.keys) else [(k, p) for k, _, p in mine + theirs]
        if self.seen == 0 or later(other.last_key, self.last_key):
            self.last, self.last_key = other.last, other.last_key
        self.stride = max(self.stride, other.stride)
        self.seen += other.seen
        self.points = [p for _, p in both]
        self.keys = [k for k, _ in both]
        while len(self.points) >= self.cap:
            self.points, self.keys = self.points[::2], self.keys[::2]
            self.stride *= 2


def comparable(keys: Sequence[Any]) -> bool:
    try:
        sorted(keys)
    except TypeError:
        return False
    return True


def later(a: Any, b: Any) -> bool:
    """Whether key ``a`` comes after key ``b`` (a missing or unordered key does not)."""
    try:
        return a > b
    except TypeError:
        return False


class Timeline:
    """Items and bytes per time bin, in total and per vbucket, and operations per name (a
    memcached client's GET, SET, ...); at most ``max_bins`` bins.

    All bins share one width, which doubles (merging neighbours) whenever a
    timestamp would fall beyond the last bin.  The bins start at ``t0``: the first
    time added, unless given.
    """

    def __init__(self, max_bins: int = MAX_BINS, width: float = FIRST_BIN_WIDTH, t0: float | None = None) -> None:
        self.max_bins = max(2, max_bins)
        self.width = width
        self.t0: float | None = t0
        self.t0_key: Any = None  # the key of the item that set t0
        self.items: list[int] = []
        self.bytes: list[int] = []
        self.vbuckets: dict[int, list[int]] = {}
        self.ops: dict[str, list[int]] = {}

    def _index(self, ts: float) -> int:
        if self.t0 is None:
            self.t0 = ts
        rel = ts - self.t0
        if rel <= 0:
            return 0
        i = int(rel / self.width)
        if i >= self.max_bins:
            factor = 1
            while i // factor >= self.max_bins:
                factor *= 2
            self._merge(factor)
            i = min(int(rel / self.width), self.max_bins - 1)
        return i

    def _merge(self, factor: int) -> None:
        def merge(bins: list[int]) -> list[int]:
            return [sum(bins[i:i + factor]) for i in range(0, len(bins), factor)]

        self.width *= factor
        self.items = merge(self.items)
        self.bytes = merge(self.bytes)
        self.vbuckets = {vb: merge(b) for vb, b in self.vbuckets.items()}
        self.ops = {op: merge(b) for op, b in self.ops.items()}

    @staticmethod
    def _bump(bins: list[int], i: int, n: int) -> None:
        if len(bins) <= i:
            bins.extend([0] * (i + 1 - len(bins)))
        bins[i] += n

    def add_bytes(self, ts: float, n: int, key: Any = None) -> None:
        if self.t0_key is None:
            self.t0_key = key
        i = self._index(ts)
        self._bump(self.bytes, i, n)
        self._bump(self.items, i, 0)

    def add_item(self, ts: float, vbucket: int) -> None:
        self._count("vbuckets", vbucket, ts, 1)

    def add_op(self, ts: float, name: str) -> None:
        """An operation called ``name`` at ``ts`` (counted apart from the items)."""
        self._count("ops", name, ts, 0)

    def _count(self, entry: str, key: Any, ts: float, items: int) -> None:
        """One more in ``key``'s bins of the table ``entry`` at ``ts``, and ``items`` more
        items (the table is looked up after the bins may have merged into new ones)."""
        i = self._index(ts)
        self._bump(self.items, i, items)
        table = getattr(self, entry)
        bins = table.get(key)
        if bins is None:
            bins = table[key] = []
        self._bump(bins, i, 1)

    def merge(self, other: "Timeline") -> None:
        """Add ``other``'s bins. Exact when both start at the same ``t0`` (give it to every
        part of a capture) or one is empty; else each of ``other``'s bins is counted at
        its start time on these bins."""
        if other.t0 is None or not (other.items or other.bytes):
            if self.t0 is None:
                self.t0, self.t0_key = other.t0, other.t0_key
            return
        if self.t0 is None or not (self.items or self.bytes):
            self.t0, self.t0_key, self.width = other.t0, other.t0_key, other.width
            self.items, self.bytes = list(other.items), list(other.bytes)
            self.vbuckets = {vb: list(b) for vb, b in other.vbuckets.items()}
            self.ops = {op: list(b) for op, b in other.ops.items()}
            return
        if self.t0 == other.t0 and _power_of_two(max(self.width, other.width) / min(self.width, other.width)):
            if other.width > self.width:
                self._merge(round(other.width / self.width))
            factor = round(self.width / other.width)
            regroup = (lambda b: [sum(b[i:i + factor]) for i in range(0, len(b), factor)]) if factor > 1 \
                else list  # noqa: E731
            _add_into(self.items, regroup(other.items))
            _add_into(self.bytes, regroup(other.bytes))
            for vb, bins in other.vbuckets.items():
                _add_into(self.vbuckets.setdefault(vb, []), regroup(bins))
            for op, bins in other.ops.items():
                _add_into(self.ops.setdefault(op, []), regroup(bins))
            while max(len(self.items), len(self.bytes)) > self.max_bins:
                self._merge(2)
            return
        if later(self.t0_key, other.t0_key):  # the other one began first: its bins lead
            mine = Timeline(self.max_bins, self.width, self.t0)
            mine.items, mine.bytes, mine.vbuckets, mine.ops = self.items, self.bytes, self.vbuckets, self.ops
            self.t0, self.t0_key, self.width = other.t0, other.t0_key, other.width
            self.items, self.bytes = list(other.items), list(other.bytes)
            self.vbuckets = {vb: list(b) for vb, b in other.vbuckets.items()}
            self.ops = {op: list(b) for op, b in other.ops.items()}
            other = mine
        # each of other's bins at its start on these bins: the last one first, so that the
        # width these bins end with is the one every index is taken at
        n = max(len(other.items), len(other.bytes), *map(len, other.vbuckets.values()), *map(len, other.ops.values()))
        last = self._index(other.t0 + (n - 1) * other.width)
        where = [self._index(other.t0 + i * other.width) for i in range(n - 1)] + [last]
        _add_at(self.bytes, where, other.bytes)
        _add_at(self.items, where, other.items)
        _add_at(self.items, where, [0] * len(other.bytes))  # (a bin with bytes has an items count)
        for vb, bins in other.vbuckets.items():
            _add_at(self.vbuckets.setdefault(vb, []), where, bins)
        for op, bins in other.ops.items():
            _add_at(self.ops.setdefault(op, []), where, bins)

    def json(self) -> dict[str, Any]:
        n = max(len(self.items), len(self.bytes))
        pad = lambda b: b + [0] * (n - len(b))  # noqa: E731
        return {
            "bin_width": self.width,
            "bins": n,
            "items": pad(list(self.items)),
            "bytes": pad(list(self.bytes)),
            "vbuckets": {str(vb): pad(list(b)) for vb, b in sorted(self.vbuckets.items())},
            "ops": {op: pad(list(b)) for op, b in sorted(self.ops.items())},
        }


def _power_of_two(ratio: float) -> bool:
    n = round(ratio)
    return n >= 1 and abs(ratio - n) < 1e-9 * n and n & (n - 1) == 0


def _add_at(bins: list[int], where: list[int], more: list[int]) -> None:
    """Add ``more[i]`` to ``bins[where[i]]`` (``where`` ascending, as long as ``more``)."""
    if more:
        need = where[len(more) - 1] + 1
        if len(bins) < need:
            bins.extend([0] * (need - len(bins)))
        for j, n in zip(where, more):
            bins[j] += n


def _add_into(bins: list[int], more: list[int]) -> None:
    if len(bins) < len(more):
        bins.extend([0] * (len(more) - len(bins)))
    for i, n in enumerate(more):
        bins[i] += n


def merge_counts(a: Counter, a_keys: dict, b: Counter, b_keys: dict) -> tuple[Counter, dict]:
    """Two counters whose labels came first at the keys in ``a_keys`` / ``b_keys``: one
    counter with its labels in the order they came first (what ``most_common`` keeps
    among equal counts)."""
    keys = dict(a_keys)
    for label, key in b_keys.items():
        if label not in keys or later(keys[label], key):
            keys[label] = key
    labels = list(a) + [label for label in b if label not in a]
    if comparable([keys.get(label) for label in labels]):
        labels.sort(key=lambda label: keys.get(label))
    return Counter({label: a[label] + b[label] for label in labels}), keys


def in_order(table: dict, key_of) -> dict:
    """``table`` with its entries in the order of their keys in the capture (ties, and keys
    that cannot be compared, keep the order they had)."""
    keys = [key_of(k, v) for k, v in table.items()]
    if not comparable(keys):
        return table
    order = sorted(range(len(keys)), key=keys.__getitem__)
    entries = list(table.items())
    return dict(entries[i] for i in order)
