"""``dcpinspect diff A B``: two data sets compared key by key, each a snapshot file (or a
set of files read as one) or a capture (the data a full sync in it sends), in any pair.

A family gives the keys of each (:attr:`~dcpinspect.families.SnapshotFiles.data` for
its snapshot files, :attr:`~dcpinspect.families.SnapshotFiles.record_keys` for the records of a
capture it decoded with :attr:`~dcpinspect.families.Options.data`) as
:class:`~dcpinspect.families.DataKey` s: db, name, type, the value's digest and the
expiry. The keys of A are held (up to :data:`~dcpinspect.limits.DIFF_KEYS`, past which
the keys of B not found are counted as unchecked, not as new); B is streamed past them:
a key of B not held is only in B, one held is compared (type, then value by digest, then
expiry) and let go; what is left held at the end is only in A. A key is held as two byte
strings (its db and name; its type, digest and expiry packed in 30 bytes): about 150
bytes and the name's length each.
"""

from __future__ import annotations

import base64
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ..families import DataKey, families
from ..limits import DIFF_KEYS
from ..outputs.console import make_console
from ..outputs.escape import safe
from ..outputs.jsonl import dumps_line
from ..outputs.rows import print_rows
from ..sources.capture import looks_like_capture
from ..sources.inputs import InputError
from .inputs import Unusable
from .sent import chosen, sent_data
from .snapshots import _family_of, _gathered, _head_of

CHANGES = ("only_in_a", "only_in_b", "type", "value", "expiry")


@dataclass
class Tally:
    """What the comparison found, by kind of change, and what it could not check."""

    a: str
    b: str
    keys_a: int = 0
    keys_b: int = 0
    same: int = 0
    counts: dict = field(default_factory=lambda: dict.fromkeys(CHANGES, 0))
    #: keys of B not compared because A had more keys than are held
    unchecked: int = 0
    #: keys compared whose values have no digest (by type and expiry only)
    undigested: int = 0
    notes: list = field(default_factory=list)

    @property
    def different(self) -> bool:
        return any(self.counts.values())

    def line(self) -> str:
        c = self.counts
        said = (f"{self.a} ({self.keys_a:,} keys) vs {self.b} ({self.keys_b:,} keys): "
                + ("same" if not self.different else "different")
                + f"; {self.same:,} same, {c['only_in_a']:,} only in A, {c['only_in_b']:,} only in B, "
                  f"{c['type']:,} type changed, {c['value']:,} value changed, {c['expiry']:,} expiry changed")
        if self.unchecked:
            said += f", {self.unchecked:,} of B unchecked (more than {DIFF_KEYS.value():,} keys in A)"
        if self.undigested:
            said += f", {self.undigested:,} compared without a digest"
        return said

    def to_json(self) -> dict:
        return {"kind": "diff_summary", "a": self.a, "b": self.b, "keys_a": self.keys_a, "keys_b": self.keys_b,
                "same": self.same, **self.counts, "unchecked": self.unchecked, "undigested": self.undigested,
                "different": self.different, "notes": self.notes}


def diff_inputs(a: Path, b: Path, fmt: str = "table") -> bool:
    """Compare ``a`` and ``b`` and print what differs as ``fmt`` ("table", "jsonl" or
    "summary", one line); whether they differ. An input no family reads is Unusable."""
    tally = Tally(str(a), str(b))
    held: dict[bytes, bytes] = {}
    cap = DIFF_KEYS.value()
    over = 0
    packer = _Packer()
    for k in _keys(a, tally):
        tally.keys_a += 1
        if len(held) < cap:
            held[_DB(k.db) + k.key] = packer.pack(k)
        else:
            over += 1
    if over:
        tally.notes.append(f"{over:,} keys of A past the {cap:,} held (DCPINSPECT_MAX_DIFF_KEYS) were not compared")
    out = _Printer(fmt)
    for k in _keys(b, tally):
        tally.keys_b += 1
        old = held.pop(_DB(k.db) + k.key, None)
        if old is not None:
            old = packer.unpack(k.db, k.key, old)
        if old is None:
            if over:
                tally.unchecked += 1
            else:
                _change(tally, out, ("only_in_b",), None, k)
            continue
        changes = []
        if old.type != k.type:
            changes.append("type")
        elif old.digest is None or k.digest is None:
            tally.undigested += 1
        elif old.digest != k.digest:
            changes.append("value")
        if old.expire_ms != k.expire_ms:
            changes.append("expiry")
        if changes:
            _change(tally, out, tuple(changes), old, k)
        else:
            tally.same += 1
    for name, packed in held.items():
        _change(tally, out, ("only_in_a",), packer.unpack(int.from_bytes(name[:4], "big"), name[4:], packed), None)
    out.finish(tally)
    return tally.different


def _DB(db: int) -> bytes:
    return db.to_bytes(4, "big")


class _Packer:
    """A held key's type, digest and expiry as 30 bytes: type number, flags (1: a digest,
    2: an expiry), digest, expiry."""

    _S = struct.Struct(">BB20sq")

    def __init__(self) -> None:
        self.types: list[str] = []
        self.numbers: dict[str, int] = {}

    def pack(self, k: DataKey) -> bytes:
        n = self.numbers.get(k.type)
        if n is None:
            if len(self.types) >= 255:
                raise Unusable("more than 255 types of keys")
            n = self.numbers[k.type] = len(self.types)
            self.types.append(k.type)
        flags = (k.digest is not None) | (k.expire_ms is not None) << 1
        return self._S.pack(n, flags, bytes.fromhex(k.digest) if k.digest else b"",
                            k.expire_ms if k.expire_ms is not None else 0)

    def unpack(self, db: int, key: bytes, packed: bytes) -> DataKey:
        n, flags, digest, expire = self._S.unpack(packed)
        return DataKey(db, key, self.types[n], digest.hex() if flags & 1 else None, expire if flags & 2 else None)


def _change(tally: Tally, out: "_Printer", changes: tuple, a: DataKey | None, b: DataKey | None) -> None:
    for c in changes:
        tally.counts[c] += 1
    out.row(changes, a, b)


def _keys(path: Path, tally: Tally) -> Iterator[DataKey]:
    """The keys of one input, from the family that reads it; notes (strings) go to the tally."""
    try:
        path, which = chosen(path)
        head = _head_of(path)
        if looks_like_capture(head[:4]) and not any(f.snapshots is not None and f.snapshots.is_snapshot(head)
                                                     for f in families()):
            yield from _capture_keys(path, tally, which)
            return
        if which is not None:
            raise Unusable(f"{path}#{which}: only a capture holds several data sets to choose from")
        for item in _gathered([path]):
            family = _family_of(_head_of(item[0] if isinstance(item, tuple) else item))
            if family.snapshots.data is None:
                raise Unusable(f"{path}: no protocol family compares its data")
            for k in family.snapshots.data(item):
                if isinstance(k, str):
                    tally.notes.append(k)
                else:
                    yield k
    except InputError as exc:
        raise Unusable(str(exc)) from None


def _capture_keys(path: Path, tally: Tally, which: int | None = None) -> Iterator[DataKey]:
    """The keys of one data set sent whole in a capture (:mod:`.sent`)."""
    yield from sent_data(path, which, [f.snapshots.record_keys for f in families()
                                           if f.snapshots is not None and f.snapshots.record_keys is not None], tally.notes)


class _Printer:
    """The rows as they come: a table (in batches), JSON Lines, or nothing (summary)."""

    BATCH = 10_000

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self.rows: list = []
        self.console = make_console() if fmt == "table" else None
        self.write = sys.stdout.buffer.write if hasattr(sys.stdout, "buffer") else (
            lambda b: sys.stdout.write(b.decode("ascii")))

    def row(self, changes: tuple, a: DataKey | None, b: DataKey | None) -> None:
        k = a or b
        if self.fmt == "jsonl":
            obj = {"kind": "diff", "changes": list(changes), "db": k.db, "key": _text(k.key)}
            obj["a"] = None if a is None else _side(a)
            obj["b"] = None if b is None else _side(b)
            self.write(dumps_line(obj))
        elif self.fmt == "table":
            self.rows.append((" ".join(changes), str(k.db), safe(k.key.decode("utf-8", "backslashreplace")),
                              _typed(a), _typed(b), _exp(a), _exp(b)))
            if len(self.rows) >= self.BATCH:
                self._flush()

    def _flush(self) -> None:
        print_rows(self.console, ("change", "db", "key", "type A", "type B", "expiry A", "expiry B"), self.rows)
        self.rows = []

    def finish(self, tally: Tally) -> None:
        if self.fmt == "jsonl":
            self.write(dumps_line(tally.to_json()))
            sys.stdout.flush()
            return
        if self.fmt == "table" and self.rows:
            self._flush()
        for note in tally.notes:
            sys.stderr.write(safe(f"note: {note}") + "\n")
        line = safe(tally.line())
        if self.console is not None:
            self.console.print(line, soft_wrap=True)
        else:
            print(line)


def _text(raw: bytes):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode("ascii")}


def _side(k: DataKey) -> dict:
    return {"type": k.type, "digest": k.digest, "expire_ms": k.expire_ms}


def _typed(k: DataKey | None) -> str:
    return "" if k is None else k.type


def _exp(k: DataKey | None) -> str:
    return "" if k is None or k.expire_ms is None else str(k.expire_ms)
