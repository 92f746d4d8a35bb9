"""Where the memory goes: the memory reports of a snapshot, gathered key by key from the
estimates of :mod:`.memory` in memory that stays flat in the number of keys.

* ``memory``: the top ``n`` keys by memory (a heap of ``n``);
* ``bigkeys``: per type, the biggest key by elements and by memory, and each type's
  totals, as ``redis-cli --bigkeys --memkeys`` gives them;
* ``prefix``: memory, keys and elements by key prefix (cut at any of the separators, up
  to ``depth`` levels), in a table of at most ``prefix_cap`` prefixes: exact until it
  fills, then it keeps the heavier half and says that it pruned;
* ``types``: keys and memory per db, type and encoding;
* ``expiry``: keys and memory by time to expiry at the snapshot's ``ctime`` (or ``at``).

Plain data: :mod:`.snapshots` feeds the records and prints what :meth:`Reports.rows`
gives."""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Iterator

from ....messages.text import key_text
from .memory import DEFAULTS, Config, KeyMemory, for_version, key_figures, key_memory, listpack_sets
from ..rdb.native import optional
from ..rdb.records import AuxRecord, KeyRecord

NAMES = ("memory", "bigkeys", "prefix", "types", "expiry")
#: the columns of rdbtools' memory CSV (``rdb -c memory``), which ``--format csv`` writes
CSV_COLUMNS = ("database", "type", "key", "size_in_bytes", "encoding", "num_elements", "len_largest_element",
               "expiry")
#: what a Valkey file's estimate is: Valkey 8 embeds the key in its object and replaced the
#: dict by a hashtable of its own, so that it holds the same keys in less memory (about a
#: sixth less over tests/test_memory_usage.py's dataset, against Valkey 8.1's MEMORY USAGE)
VALKEY_NOTE = ("a Valkey file: the estimate is of Redis's structures; Valkey 8 holds the same keys "
               "in less memory (about a sixth less)")
#: prefixes a ``prefix`` report holds before it prunes to the heavier half
PREFIX_CAP = 100_000
#: ``expiry``'s buckets: (name, below this many ms to expiry)
HOUR_MS = 3_600_000
EXPIRY_BUCKETS = (("expired", 0), ("<1h", HOUR_MS), ("<1day", 24 * HOUR_MS), ("<1week", 7 * 24 * HOUR_MS),
                  ("later", None))
#: what ``bigkeys`` counts of each type, as redis-cli names it
UNITS = {"string": "bytes", "list": "items", "set": "members", "hash": "fields", "zset": "members",
         "stream": "entries"}


@dataclass
class Options:
    """What the reports are asked: their names, the top ``n``, the prefix separators and
    depth, the time expiries are measured from (ms; None: the snapshot's ctime), the
    server's thresholds. Which keys count is the decoder's key selection's to say."""

    names: tuple[str, ...] = ("memory",)
    top: int = 20
    seps: tuple[bytes, ...] = (b":",)
    depth: int = 2
    at_ms: int | None = None
    config: Config = DEFAULTS
    prefix_cap: int = PREFIX_CAP


@dataclass(slots=True)
class Measured:
    """One key as the reports see it."""

    db: int
    key: bytes
    type: str
    encoding: str
    elements: int
    memory: KeyMemory
    expire_ms: int | None
    shard: int | None = None

    def csv_row(self) -> tuple:
        from .report import expiry_text

        return (self.db, self.type, key_text(self.key), self.memory.total, self.memory.encoding, self.elements,
                self.memory.largest, expiry_text(self.expire_ms))


def prefixes(key: bytes, seps: tuple[bytes, ...], depth: int) -> list[bytes]:
    """The prefixes of ``key`` up to ``depth`` levels, each ending with its separator
    (``a:b:c`` by ``:`` gives ``a:``, ``a:b:``)."""
    out: list[bytes] = []
    at = 0
    if len(seps) == 1:
        sep = seps[0]
        parts = key.split(sep, depth)  # (the last part is the rest, after the last cut)
        if len(parts) > 1:
            step = len(sep)
            for part in parts[:-1]:
                at += len(part) + step
                out.append(key[:at])
        return out
    while len(out) < depth:
        cut = min((i for i in (key.find(s, at) for s in seps) if i >= 0), default=-1)
        if cut < 0:
            break
        end = cut + next(len(s) for s in seps if key.startswith(s, cut))
        out.append(key[:end])
        at = end
    return out


class PrefixTable:
    """Memory, keys and elements by (db, prefix), at most ``cap`` prefixes: exact until it
    fills, then the lighter half is dropped (and counted), so that a heavy prefix seen
    early stays; one seen only after a pruning counts from then on. The kept half is the
    ``cap // 2`` heaviest, heaviest first, rows of equal memory in their order; a new row
    comes last. ``seps`` and ``depth`` cut a key (:meth:`add_key`) as :func:`prefixes` does.
    ``_prefixes.c`` keeps the same rows in C (:func:`prefix_table`)."""

    def __init__(self, cap: int = PREFIX_CAP, seps: tuple[bytes, ...] = (b":",), depth: int = 2) -> None:
        self.cap = cap
        self.seps, self.depth = seps, depth
        self.table: dict[tuple[int, bytes], list[int]] = {}
        self.pruned = 0

    @classmethod
    def of_rows(cls, rows, pruned: int, cap: int, seps: tuple[bytes, ...], depth: int) -> "PrefixTable":
        """A table holding these rows (((db, prefix), [memory, keys, elements]), in order)."""
        t = cls(cap, seps, depth)
        t.table = dict(rows)
        t.pruned = pruned
        return t

    def __len__(self) -> int:
        return len(self.table)

    def rows(self) -> list[tuple[tuple[int, bytes], list[int]]]:
        return list(self.table.items())

    def add(self, db: int, prefix: bytes, memory: int, elements: int) -> None:
        self.add_all(db, (prefix,), memory, elements)

    def add_key(self, db: int, key: bytes, memory: int, elements: int) -> None:
        """A key's memory and elements under each of its prefixes."""
        cut = prefixes(key, self.seps, self.depth)
        if cut:
            self.add_all(db, cut, memory, elements)

    def add_all(self, db: int, prefixes, memory: int, elements: int) -> None:
        """A key's memory and elements under each of its ``prefixes``."""
        table = self.table
        for prefix in prefixes:
            row = table.get((db, prefix))
            if row is None:
                if len(table) >= self.cap:
                    self._prune()
                    table = self.table
                table[(db, prefix)] = [memory, 1, elements]
            else:
                row[0] += memory
                row[1] += 1
                row[2] += elements

    def _prune(self) -> None:
        keep = heapq.nlargest(self.cap // 2, self.table.items(), key=lambda kv: kv[1][0])
        self.pruned += len(self.table) - len(keep)
        self.table = dict(keep)

    def heaviest(self, n: int | None = None) -> list[tuple[tuple[int, bytes], list[int]]]:
        items = self.table.items()
        return heapq.nlargest(n, items, key=lambda kv: kv[1][0]) if n else sorted(items, key=lambda kv: -kv[1][0])


_native = optional(f"{__package__}._prefixes")
#: ``_prefixes.c``'s table when it is built (and ``DCPINSPECT_PURE`` is not set), else None
CPrefixTable = _native.PrefixTable if _native is not None else None


def prefix_table(cap: int = PREFIX_CAP, seps: tuple[bytes, ...] = (b":",), depth: int = 2):
    """A prefix table: in C when it is built, else :class:`PrefixTable`; the same rows."""
    if CPrefixTable is not None and depth >= 0:
        return CPrefixTable(cap, seps, depth)
    return PrefixTable(cap, seps, depth)


def in_python(table) -> PrefixTable:
    """``table`` as a :class:`PrefixTable` (the C table's sums would pass int64)."""
    if isinstance(table, PrefixTable):
        return table
    return PrefixTable.of_rows(table.rows(), table.pruned, table.cap, table.seps, table.depth)


@dataclass
class _Big:
    """One type's figures for ``bigkeys``: its biggest keys and what they were measured by."""

    keys: int = 0
    elements: int = 0
    memory: int = 0
    by_elements: Measured | None = None
    by_memory: Measured | None = None
    most_elements: int = -1
    most_memory: int = -1


class Reports:
    """The reports asked for, fed key by key (:meth:`add`) and aux field by aux field."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.keys = 0
        self.memory = 0
        self.key_bytes = 0
        self.ctime_ms: int | None = None
        self._top: list[tuple[int, int, Measured]] = []
        self._seq = 0
        self.big: dict[str, _Big] = {}
        self.prefixes = prefix_table(options.prefix_cap, options.seps, options.depth)
        self.types: dict[tuple[int, str, str], list[int]] = {}
        self._expiry: dict[str, list[int]] = {}
        self.plot = None
        names = frozenset(options.names)
        self._top_n = options.top if "memory" in names else 0
        self._do_bigkeys, self._do_prefix = "bigkeys" in names, "prefix" in names
        self._do_types, self._do_expiry = "types" in names, "expiry" in names
        self._seps, self._depth = options.seps, options.depth
        #: the Valkey version the file names (its ``valkey-ver``), None for a Redis file
        self.valkey: bytes | None = None

    def measure(self, rec: KeyRecord, shard: int | None = None, km: KeyMemory | None = None) -> Measured:
        """The key's figures (``km``: its memory, when known already)."""
        if km is None:
            km = key_memory(rec, self.options.config)
        return Measured(rec.db, rec.key, rec.vtype.type, km.encoding, rec.elements or 0, km, rec.expire_ms, shard)

    def header(self, vendor: str, version: int) -> None:
        """A file's header: the server the model is of (set listpacks from RDB 11)."""
        self.options.config = for_version(self.options.config, version)

    def aux(self, rec: AuxRecord) -> None:
        if rec.key == b"valkey-ver":  # the model is of Redis's structures, not Valkey's
            self.valkey = rec.value
        if rec.key == b"redis-ver":  # the server the model is of (set listpacks from 7.2)
            self.options.config = listpack_sets(self.options.config, rec.value)
        if rec.key == b"ctime":
            try:
                self.ctime_ms = int(rec.value) * 1000
            except ValueError:
                pass

    def add(self, rec: KeyRecord, shard: int | None = None, keep: bool = False) -> Measured | None:
        """One key's figures into the reports asked; its :class:`Measured` is made only for
        what keeps it (a top key, a type's biggest, the plot), or when ``keep`` asks for it
        (returned, else None)."""
        fig = key_figures(rec, self.options.config)
        total = fig[0] + fig[1]
        m = self.measure(rec, shard, KeyMemory(*fig)) if keep or self.plot is not None else None
        self.keys += 1
        self.memory += total
        self.key_bytes += len(rec.key)
        if self._top_n:
            self._seq += 1
            top = self._top
            if len(top) < self._top_n:
                heapq.heappush(top, (total, -self._seq, m or self.measure(rec, shard, KeyMemory(*fig))))
            elif total > top[0][0]:  # (a later key of the same memory ranks below)
                heapq.heapreplace(top, (total, -self._seq, m or self.measure(rec, shard, KeyMemory(*fig))))
        if self._do_bigkeys:
            t = rec.vtype.type
            b = self.big.get(t)
            if b is None:
                b = self.big[t] = _Big()
            elements = rec.elements or 0
            count = fig[3] if t == "string" else elements  # (as redis-cli --bigkeys: a string's length)
            b.keys += 1
            b.elements += count
            b.memory += total
            if count > b.most_elements:
                m = m or self.measure(rec, shard, KeyMemory(*fig))
                b.most_elements, b.by_elements = count, m
            if total > b.most_memory:
                m = m or self.measure(rec, shard, KeyMemory(*fig))
                b.most_memory, b.by_memory = total, m
        if self._do_prefix:
            try:
                self.prefixes.add_key(rec.db, rec.key, total, rec.elements or 0)
            except OverflowError:  # (the C table's sums would pass int64: on in Python)
                self.prefixes = in_python(self.prefixes)
                self.prefixes.add_key(rec.db, rec.key, total, rec.elements or 0)
        if self._do_types:
            row = self.types.get((rec.db, rec.vtype.type, fig[2]))
            if row is None:
                self.types[(rec.db, rec.vtype.type, fig[2])] = [1, total]
            else:
                row[0] += 1
                row[1] += total
        if self._do_expiry:
            self._expiry_add(rec.expire_ms, total)
        if self.plot is not None:
            self.plot.add(m, prefixes(rec.key, self._seps, self._depth))
        return m

    def _expiry_add(self, expire_ms: int | None, total: int) -> None:
        if expire_ms is None:
            name = "none"
        else:
            at = self.options.at_ms if self.options.at_ms is not None else self.ctime_ms
            if at is None:
                name = "unknown"
            else:
                left = expire_ms - at
                for name, below in EXPIRY_BUCKETS:
                    if below is None or left < below:
                        break
        row = self._expiry.get(name)
        if row is None:
            self._expiry[name] = [1, total]
        else:
            row[0] += 1
            row[1] += total

    # ------------------------------------------------------------------ what is shown

    def top(self) -> list[Measured]:
        return [m for _, _, m in sorted(self._top, reverse=True)]

    def share(self, memory: int) -> str:
        return f"{100 * memory / self.memory:.1f}%" if self.memory else "-"

    def tables(self) -> Iterator[tuple[str, tuple[str, ...], list[tuple]]]:
        """Each report as (title, headers, rows of plain values), in the order asked."""
        for name in self.options.names:
            yield getattr(self, f"_{name}_table")()

    def _memory_table(self):
        from .report import expiry_text

        rows = [(m.db, key_text(m.key), m.type, m.memory.encoding, m.elements, m.memory.largest, m.memory.total,
                 self.share(m.memory.total), expiry_text(m.expire_ms)) for m in self.top()]
        return (f"Top {self.options.top} keys by memory",
                ("db", "key", "type", "encoding", "elements", "largest", "memory", "share", "expiry"), rows)

    def _bigkeys_table(self):
        rows = []
        for t, b in sorted(self.big.items()):
            unit = UNITS.get(t, "elements")
            e, mm = b.by_elements, b.by_memory
            rows.append((t, key_text(e.key), e.db, b.most_elements, unit, key_text(mm.key), mm.db, mm.memory.total,
                         b.keys, b.elements, b.memory, f"{100 * b.keys / self.keys:.2f}%",
                         f"{b.elements / b.keys:.2f}"))
        return ("Biggest keys per type", ("type", "biggest by elements", "its db", "its elements", "unit",
                                          "biggest by memory", "db of it", "its memory", "keys", "elements",
                                          "memory", "share of keys", "avg elements"), rows)

    def _prefix_table(self):
        rows = [(db, key_text(p), n, e, mem, self.share(mem))
                for (db, p), (mem, n, e) in self.prefixes.heaviest(self.options.top)]
        title = f"Top {self.options.top} prefixes by memory (depth {self.options.depth})"
        if self.prefixes.pruned:
            title += (f"; the table held {self.prefixes.cap:,} prefixes and pruned "
                      f"{self.prefixes.pruned:,} lighter ones, so prefixes first seen late may be undercounted")
        return title, ("db", "prefix", "keys", "elements", "memory", "share"), rows

    def _types_table(self):
        rows = [(db, t, enc, n, mem, self.share(mem))
                for (db, t, enc), (n, mem) in sorted(self.types.items(), key=lambda kv: (kv[0][0], -kv[1][1]))]
        return "Keys and memory per db, type and encoding", ("db", "type", "encoding", "keys", "memory", "share"), rows

    def _expiry_table(self):
        order = ["none", *(n for n, _ in EXPIRY_BUCKETS), "unknown"]
        rows = [(n, *self._expiry[n], self.share(self._expiry[n][1])) for n in order if n in self._expiry]
        at = self.options.at_ms if self.options.at_ms is not None else self.ctime_ms
        from .report import expiry_text

        title = f"Keys by time to expiry at {expiry_text(at) if at is not None else '(no ctime: unknown)'}"
        return title, ("expires", "keys", "memory", "share"), rows

    def json_objects(self) -> Iterator[dict]:
        """Each report's rows as JSON Lines objects (``kind``: the report's name)."""
        for name, (title, headers, rows) in zip(self.options.names, self.tables()):
            names = _json_names(headers)
            for row in rows:
                yield {"kind": name, "protocol": "rdb", **dict(zip(names, row))}
            if name == "prefix" and self.prefixes.pruned:
                yield {"kind": "prefix-pruned", "protocol": "rdb", "cap": self.prefixes.cap,
                       "pruned": self.prefixes.pruned}
        total = {"kind": "memory-total", "protocol": "rdb", "keys": self.keys, "memory": self.memory}
        if self.valkey is not None:
            total["note"] = VALKEY_NOTE
        yield total


def _json_names(headers: tuple[str, ...]) -> list[str]:
    return [h.replace(" ", "_") for h in headers]
