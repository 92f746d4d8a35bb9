"""The packed layouts RDB stores inside a string (spec/rdb.md §6.1–§6.3): ziplist,
listpack, intset and zipmap. Each takes the whole blob and gives its entries in order,
strings as bytes and integers as int, or raises :class:`~.primitives.Corrupt` with the
offset in the blob where it stops making sense; every length and count is checked against
the blob, so a blob never makes a reader go past its end.

Ziplists and listpacks are read in C when ``dcpinspect/families/redis/rdb/_rdb.c`` is built (:mod:`.native`),
and in Python when it is not or when C finds them damaged (the Python reading says
where); ``*_count`` give only how many entries an undamaged one holds."""

from __future__ import annotations

import struct

from .native import C
from .primitives import _I16, _I32, _I64, _U32, _U32BE, Corrupt

_U16 = struct.Struct("<H").unpack_from

Entry = bytes | int


class _Count:
    """Where a walk that only counts puts its entries: their number, nothing kept."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0

    def append(self, _entry) -> None:
        self.n += 1

    def __len__(self) -> int:
        return self.n


def _need(blob: bytes, end: int, what: str, at: int) -> None:
    if end > len(blob):
        raise Corrupt(f"{what} at {at} runs past the end of the {len(blob)}-byte blob", at)


def _int24(blob: bytes, p: int) -> int:
    v = blob[p] | blob[p + 1] << 8 | blob[p + 2] << 16
    return v - (1 << 24) if v & 0x800000 else v


# ----------------------------------------------------------------------------- ziplist

def ziplist(blob: bytes) -> list[Entry]:
    """A ziplist's entries (§6.1): ``zlbytes zltail zllen entries… 0xff``."""
    if C is not None:
        out = C.ziplist(blob)
        if out is not None:
            return out
    return ziplist_python(blob)


def ziplist_count(blob: bytes) -> int:
    """How many entries a ziplist holds; Corrupt as :func:`ziplist` when it is damaged."""
    if C is not None:
        n = C.ziplist_count(blob)
        if n is not None:
            return n
    return len(ziplist_python(blob, build=False))


def ziplist_python(blob: bytes, build: bool = True, out=None) -> list[Entry]:
    """:func:`ziplist` in Python alone: the reference, and the messages (``build`` False:
    the entries counted, none made: a sized object in place of the list; ``out``: where
    the entries go, one at a time, in place of a list)."""
    if len(blob) < 11:
        raise Corrupt(f"a ziplist is at least 11 bytes, this one {len(blob)}", 0)
    zlbytes, zltail, zllen = _U32(blob, 0)[0], _U32(blob, 4)[0], _U16(blob, 8)[0]
    if zlbytes != len(blob):
        raise Corrupt(f"zlbytes says {zlbytes}, the blob is {len(blob)} bytes", 0)
    if out is None:
        out = [] if build else _Count()
    p, prev, last = 10, 0, 10
    end = len(blob) - 1
    while p < end:
        at = p
        if blob[p] == 0xFF:
            break
        if blob[p] < 0xFE:
            prevlen, p = blob[p], p + 1
        else:
            _need(blob, p + 5, "prevlen", at)
            prevlen, p = _U32(blob, p + 1)[0], p + 5
        if prevlen != prev:
            raise Corrupt(f"entry at {at} says the one before is {prevlen} bytes, it is {prev}", at)
        _need(blob, p + 1, "entry", at)
        enc = blob[p]
        kind = enc >> 6
        if kind == 0:
            size, p = enc & 0x3F, p + 1
        elif kind == 1:
            _need(blob, p + 2, "string length", at)
            size, p = (enc & 0x3F) << 8 | blob[p + 1], p + 2
        elif enc == 0x80:
            _need(blob, p + 5, "string length", at)
            size, p = _U32BE(blob, p + 1)[0], p + 5
        elif kind == 2:
            raise Corrupt(f"entry encoding 0x{enc:02x} at {p} is not a ziplist encoding", p)
        else:
            size = -1
        if size >= 0:
            _need(blob, p + size, "string", at)
            out.append(blob[p:p + size] if build else None)
            p += size
        else:
            p += 1
            if enc == 0xC0:
                _need(blob, p + 2, "int16", at)
                out.append(_I16(blob, p)[0])
                p += 2
            elif enc == 0xD0:
                _need(blob, p + 4, "int32", at)
                out.append(_I32(blob, p)[0])
                p += 4
            elif enc == 0xE0:
                _need(blob, p + 8, "int64", at)
                out.append(_I64(blob, p)[0])
                p += 8
            elif enc == 0xF0:
                _need(blob, p + 3, "int24", at)
                out.append(_int24(blob, p))
                p += 3
            elif enc == 0xFE:
                _need(blob, p + 1, "int8", at)
                v = blob[p]
                out.append(v - 256 if v > 127 else v)
                p += 1
            elif 0xF1 <= enc <= 0xFD:
                out.append((enc & 0x0F) - 1)
            else:
                raise Corrupt(f"entry encoding 0x{enc:02x} at {p - 1} is not a ziplist encoding", p - 1)
        prev, last = p - at, at
    if p != end or blob[end] != 0xFF:
        raise Corrupt(f"the ziplist does not end with 0xff at {end} (entries end at {p})", p)
    if zllen != 0xFFFF and zllen != len(out):
        raise Corrupt(f"zllen says {zllen} entries, the ziplist holds {len(out)}", 8)
    if out and zltail != last:
        raise Corrupt(f"zltail says the last entry is at {zltail}, it is at {last}", 4)
    return out


# ----------------------------------------------------------------------------- listpack

def _backlen_size(size: int) -> int:
    if size <= 127:
        return 1
    if size < 16383:
        return 2
    if size < 2097151:
        return 3
    if size < 268435455:
        return 4
    return 5


def _backlen(blob: bytes, p: int, n: int) -> int:
    """The entry size a ``n``-byte backlen at ``p`` encodes (most significant byte first)."""
    v = 0
    for i in range(n):
        v = v << 7 | (blob[p + i] & 0x7F)
    return v


def listpack(blob: bytes) -> list[Entry]:
    """A listpack's entries (§6.2): ``total_bytes num_elements entries… 0xff``."""
    if C is not None:
        out = C.listpack(blob)
        if out is not None:
            return out
    return listpack_python(blob)


def listpack_count(blob: bytes) -> int:
    """How many entries a listpack holds; Corrupt as :func:`listpack` when it is damaged."""
    if C is not None:
        n = C.listpack_count(blob)
        if n is not None:
            return n
    return len(listpack_python(blob, build=False))


def listpack_python(blob: bytes, build: bool = True, out=None) -> list[Entry]:
    """:func:`listpack` in Python alone: the reference, and the messages (``build`` False:
    the entries counted, none made: a sized object in place of the list; ``out``: where
    the entries go, one at a time, in place of a list)."""
    if len(blob) < 7:
        raise Corrupt(f"a listpack is at least 7 bytes, this one {len(blob)}", 0)
    total, count = _U32(blob, 0)[0], _U16(blob, 4)[0]
    if total != len(blob):
        raise Corrupt(f"the listpack says it is {total} bytes, the blob is {len(blob)}", 0)
    if out is None:
        out = [] if build else _Count()
    p, end = 6, len(blob) - 1
    append = out.append
    while p < end:
        at = p
        b = blob[p]
        if b < 0x80:
            append(b)
            p += 1
        elif b < 0xC0:
            size = b & 0x3F
            _need(blob, p + 1 + size, "string", at)
            append(blob[p + 1:p + 1 + size] if build else None)
            p += 1 + size
        elif b < 0xE0:
            _need(blob, p + 2, "int13", at)
            v = (b & 0x1F) << 8 | blob[p + 1]
            append(v - 8192 if v & 0x1000 else v)
            p += 2
        elif b < 0xF0:
            _need(blob, p + 2, "string length", at)
            size = (b & 0x0F) << 8 | blob[p + 1]
            _need(blob, p + 2 + size, "string", at)
            append(blob[p + 2:p + 2 + size] if build else None)
            p += 2 + size
        elif b == 0xF0:
            _need(blob, p + 5, "string length", at)
            size = _U32(blob, p + 1)[0]
            _need(blob, p + 5 + size, "string", at)
            append(blob[p + 5:p + 5 + size] if build else None)
            p += 5 + size
        elif b == 0xF1:
            _need(blob, p + 3, "int16", at)
            append(_I16(blob, p + 1)[0])
            p += 3
        elif b == 0xF2:
            _need(blob, p + 4, "int24", at)
            append(_int24(blob, p + 1))
            p += 4
        elif b == 0xF3:
            _need(blob, p + 5, "int32", at)
            append(_I32(blob, p + 1)[0])
            p += 5
        elif b == 0xF4:
            _need(blob, p + 9, "int64", at)
            append(_I64(blob, p + 1)[0])
            p += 9
        elif b == 0xFF:
            break
        else:
            raise Corrupt(f"entry encoding 0x{b:02x} at {p} is not a listpack encoding", p)
        size = p - at
        n = _backlen_size(size)
        _need(blob, p + n, "backlen", at)
        if _backlen(blob, p, n) != size:
            raise Corrupt(f"the backlen of the entry at {at} does not give its size {size}", p)
        p += n
    if p != end or blob[end] != 0xFF:
        raise Corrupt(f"the listpack does not end with 0xff at {end} (entries end at {p})", p)
    if count != 0xFFFF and count != len(out):
        raise Corrupt(f"the listpack says {count} entries, it holds {len(out)}", 4)
    return out


# ----------------------------------------------------------------------------- intset

def _intset_head(blob: bytes) -> tuple[int, int, str]:
    """(width, count, struct format) of an intset, its header checked against the blob."""
    if len(blob) < 8:
        raise Corrupt(f"an intset is at least 8 bytes, this one {len(blob)}", 0)
    width, count = _U32(blob, 0)[0], _U32(blob, 4)[0]
    fmt = {2: "h", 4: "i", 8: "q"}.get(width)
    if fmt is None:
        raise Corrupt(f"intset encoding {width} is none of 2, 4, 8", 0)
    if 8 + width * count != len(blob):
        raise Corrupt(f"{count} integers of {width} bytes do not fill the {len(blob) - 8} bytes after the header", 4)
    if not count:
        raise Corrupt("an intset holds no integer (the server's integrity check refuses an empty one)", 4)
    return width, count, fmt


def intset(blob: bytes) -> list[int]:
    """An intset's integers (§6.3): ``encoding:u32 length:u32`` then sorted integers."""
    width, count, fmt = _intset_head(blob)
    values = list(struct.unpack_from(f"<{count}{fmt}", blob, 8))
    if values != sorted(values):  # not in order: say where
        for i in range(1, count):
            if values[i] < values[i - 1]:
                raise Corrupt(f"intset integers are not in increasing order at {i}", 8 + width * i)
    return values


def intset_count(blob: bytes) -> int:
    """How many integers an intset holds, with :func:`intset`'s checks, none of them kept."""
    width, count, fmt = _intset_head(blob)
    prev = None
    for i, (v,) in enumerate(struct.iter_unpack("<" + fmt, memoryview(blob)[8:])):
        if prev is not None and v < prev:
            raise Corrupt(f"intset integers are not in increasing order at {i}", 8 + width * i)
        prev = v
    return count


def _intset_repeat(blob: bytes) -> int | None:
    """The first integer of a sound intset equal to the one before it (its integers are in
    order), or None."""
    _, _, fmt = _intset_head(blob)
    prev = None
    for (v,) in struct.iter_unpack("<" + fmt, memoryview(blob)[8:]):
        if v == prev:
            return v
        prev = v
    return None


# ----------------------------------------------------------------------------- members

class Members:
    """The members of one set or sorted set, or the fields of one hash (every ``step``-th
    entry or string of its value), taken one at a time as Redis gives them back (integers in
    decimal): ``repeat``, the first one that came before, and ``longest``, the most bytes of
    any entry (a plain hash's fields and values alike: None when one was past reading).
    Kept as 64-bit hashes, 8 bytes each when dcpinspect.families.redis.rdb._rdb is built."""

    __slots__ = ("_new", "step", "n", "repeat", "longest")

    def __init__(self, step: int = 1) -> None:
        from .decoder import Seen  # the parser's table of key hashes, one home for both

        self._new = Seen().add
        self.step, self.n, self.repeat, self.longest = step, 0, None, 0

    def append(self, entry) -> None:
        """One more entry or string (None: one not read: too long, or damaged)."""
        if entry is None:
            self.longest = None
        else:
            text = str(entry).encode() if isinstance(entry, int) else bytes(entry)
            if self.longest is not None and len(text) > self.longest:
                self.longest = len(text)
            if self.n % self.step == 0 and not self._new(hash(text)) and self.repeat is None:
                self.repeat = text
        self.n += 1

    def sized(self, size: int | None) -> None:
        """One more string that is no member, by its length alone (None: not read)."""
        if size is None or self.longest is None:
            self.longest = None
        elif size > self.longest:
            self.longest = size
        self.n += 1

    def __len__(self) -> int:
        return self.n


class _Scores:
    """Where a walk puts a sorted set's entries to find the first score (every second
    entry) that is no number: counted, none kept."""

    __slots__ = ("n", "bad")

    def __init__(self) -> None:
        self.n, self.bad = 0, None

    def append(self, entry) -> None:
        if self.n & 1 and self.bad is None and not isinstance(entry, int):
            try:
                float(entry)
            except ValueError:
                self.bad = bytes(entry)
        self.n += 1

    def __len__(self) -> int:
        return self.n


def bad_score(blob: bytes, kind: str) -> bytes | None:
    """The first score of a sound ziplist or listpack of member/score pairs that is no
    number, or None; none of its entries kept (C says when every score is plainly one)."""
    if C is not None and C.packed_scores(blob, kind == "ziplist"):
        return None
    scores = _Scores()
    (ziplist_python if kind == "ziplist" else listpack_python)(blob, out=scores)
    return scores.bad


def first_repeat(blob: bytes, kind: str, step: int) -> bytes | None:
    """The first member of a sound packed value (``kind``: listpack, ziplist, zipmap or
    intset; every ``step``-th entry) that equals one before it, as Redis gives it back, or
    None. In C a first pass over the blob tells whether any two hash alike, and only then
    is it read in Python."""
    if kind == "intset":
        v = _intset_repeat(blob)
        return None if v is None else str(v).encode()
    if C is not None and kind != "zipmap" and not C.packed_repeats(blob, kind == "ziplist", step):
        return None
    members = Members(step)
    {"listpack": listpack_python, "ziplist": ziplist_python, "zipmap": zipmap}[kind](blob, out=members)
    return members.repeat


# ----------------------------------------------------------------------------- zipmap

def _zipmap_len(blob: bytes, p: int) -> tuple[int, int]:
    _need(blob, p + 1, "length", p)
    b = blob[p]
    if b < 254:
        return b, p + 1
    if b == 254:
        _need(blob, p + 5, "length", p)
        return _U32(blob, p + 1)[0], p + 5
    raise Corrupt(f"the zipmap ends (0xff at {p}) between a key and its value", p)


def zipmap_count(blob: bytes) -> int:
    """How many keys and values a zipmap holds, with :func:`zipmap`'s checks, none made."""
    return len(zipmap(blob, build=False))


def zipmap(blob: bytes, build: bool = True, out=None) -> list[bytes]:
    """A zipmap's keys and values, alternating (§6.3): ``zmlen`` then ``len key len free
    value`` until 0xff (``build`` False: counted, none made; ``out``: where they go)."""
    if len(blob) < 2:
        raise Corrupt(f"a zipmap is at least 2 bytes, this one {len(blob)}", 0)
    zmlen = blob[0]
    if out is None:
        out = [] if build else _Count()
    p = 1
    while True:
        _need(blob, p + 1, "entry", p)
        if blob[p] == 0xFF:
            p += 1
            break
        size, p = _zipmap_len(blob, p)
        _need(blob, p + size, "key", p)
        out.append(blob[p:p + size] if build else None)
        p += size
        size, p = _zipmap_len(blob, p)
        _need(blob, p + 1, "free byte", p)
        free = blob[p]
        p += 1
        _need(blob, p + size + free, "value", p)
        out.append(blob[p:p + size] if build else None)
        p += size + free
    if p != len(blob):
        raise Corrupt(f"{len(blob) - p} bytes after the zipmap's end", p)
    if not out:
        raise Corrupt("a zipmap holds no pair (the server's integrity check refuses an empty one)", 0)
    if zmlen < 254 and zmlen != len(out) // 2:
        raise Corrupt(f"zmlen says {zmlen} pairs, the zipmap holds {len(out) // 2}", 0)
    return out
