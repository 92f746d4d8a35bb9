"""One RDB key record's bytes as located fields (spec/rdb.md §1, §3–§6): its prefix
opcodes, type byte, key and value, and inside the value the lengths, strings, scores and
the packed layouts (listpack, ziplist, intset headers and entries), each with its file
offset and size. The ``rdb FILE --key/--offset`` view prints them as the spec-style offset
table and the byte diagram (the outputs' :class:`~dcpinspect.messages.layout.Field` tree).

The record was decoded already; this reads it again from its bytes, at most the first
``rows`` elements of a collection and entries of a packed string (the rest is one field),
each string's text cut at ``text`` bytes. Bytes it cannot read (damage, a record cut
short, a layout it does not go into: streams, modules, Dragonfly's types) are one field
to the record's end; it never raises on them.
"""

from __future__ import annotations

import struct
from typing import Iterator

from ....messages.text import key_text
from ....messages.layout import Field
from ....outputs.escape import safe
from ....outputs.shown import Row
from ..rdb import types
from ..rdb.lzf import LzfError, decompress
from ..rdb.primitives import Corrupt, LEN_ENC, NeedMore, read_len, string_header
from .report import expiry_text
from ..rdb.types import ValueType

_U16 = struct.Struct("<H").unpack_from
_U32 = struct.Struct("<I").unpack_from
_I16 = struct.Struct("<h").unpack_from
_I32 = struct.Struct("<i").unpack_from
_I64 = struct.Struct("<q").unpack_from
_F64 = struct.Struct("<d").unpack_from

#: the layouts whose value is one string holding a packed layout, and which one
_PACKED = {"ziplist_list": "ziplist", "ziplist_zset": "ziplist", "ziplist_hash": "ziplist", "intset": "intset",
           "listpack_set": "listpack", "listpack_zset": "listpack", "listpack_hash": "listpack",
           "zipmap": "zipmap", "listpack_ex_pre_ga": "listpack", "hash_tmpl_lp_ref": "listpack"}
_INT_NAMES = {0: "int8", 1: "int16", 2: "int32"}
#: the fewest bytes of each packed layout (its header and end mark)
_SMALLEST = {"listpack": 7, "ziplist": 11, "intset": 8, "zipmap": 2}
#: bytes of a string the row of the field holding it shows (its bytes' row shows more)
BRIEF = 64
#: how many times the text cap an LZF string may inflate to for its text to be shown
INFLATED = 64


class _Stop(Exception):
    """The bytes cannot be read further: ``args[0]`` says why."""


class Anatomy:
    """The fields of one record; ``data`` its bytes as read (perhaps fewer than
    ``length``), ``base`` the file offset of the first."""

    def __init__(self, data: bytes, base: int, length: int, rows: int | None, text: int | None) -> None:
        self.data, self.base, self.length = data, base, length
        self.rows, self.text = rows, text
        #: bytes of a field's string not shown, by (file offset, name) of the field
        self.cut: dict[tuple[int, str], int] = {}

    # -- helpers -----------------------------------------------------------------------------

    def field(self, name: str, label: str, start: int, end: int, value, display: str, children=()) -> Field:
        return Field(name, label, self.base + start, end - start, value, display, tuple(children))

    def need(self, end: int) -> None:
        if end > len(self.data):
            raise _Stop("the bytes end" if len(self.data) < self.length else "the record ends")

    def shown(self, raw: bytes, at: int, name: str) -> str:
        """The text of the string ``raw`` that field ``name`` at ``at`` holds, cut at ``text``
        bytes (what is left out is noted for the field's row)."""
        if self.text is not None and len(raw) > self.text:
            self.cut[(self.base + at, name)] = len(raw) - self.text
            return key_text(raw[:self.text])
        return key_text(raw)

    @staticmethod
    def brief(raw: bytes) -> str:
        """A string's beginning, for the row of the field that holds it whole."""
        return key_text(raw[:BRIEF]) + ("…" if len(raw) > BRIEF else "")

    def table_rows(self, fields: list[Field] | None = None, depth: int = 0) -> Iterator[Row]:
        """The offset table's rows (escaped), at most ``rows`` under one field."""
        fields = self.fields if fields is None else fields
        for count, f in enumerate(fields):
            if self.rows is not None and count >= self.rows:
                yield Row(depth, "", -1, 0, "", f"… {len(fields) - count:,} more rows not shown (--full shows all)")
                return
            left = self.cut.get((f.offset, f.name))
            note = f"… {left:,} more bytes not shown (--full shows all)" if left else ""
            yield Row(depth, safe(f.label), f.offset, f.size, safe(f.display), note)
            yield from self.table_rows(f.children, depth + 1)

    def length_field(self, p: int, name: str, label: str) -> tuple[Field, int, int]:
        try:
            n, q = read_len(self.data, p)
        except NeedMore as more:
            self.need(more.args[0])
            raise
        except Corrupt as exc:
            raise _Stop(exc.args[0]) from None
        return self.field(name, label, p, q, n, str(n)), n, q

    def after(self, fields: list[Field], p: int) -> int:
        """Where the last of ``fields`` ends (``p`` when there is none)."""
        return fields[-1].offset + fields[-1].size - self.base if fields else p

    def rest(self, p: int, why: str) -> Field:
        """The bytes from ``p`` to the record's end, not gone into."""
        end = max(p, self.length)
        return self.field("rest", "(rest)", p, end, None, f"{end - p:,} bytes: {why}")

    # -- strings -----------------------------------------------------------------------------

    def string(self, p: int, name: str, label: str, packed: str | None = None) -> tuple[Field, int]:
        """A string (§3.2) as its header and bytes; a packed layout's string as that layout."""
        data = self.data
        self.need(p + 1)
        b = data[p]
        if b >> 6 == LEN_ENC and b & 0x3F in _INT_NAMES:
            size = (1, 2, 4)[b & 0x3F]
            self.need(p + 1 + size)
            v = int.from_bytes(data[p + 1:p + 1 + size], "little", signed=True)
            return self.field(name, label, p, p + 1 + size, v, f"{v} ({_INT_NAMES[b & 0x3F]})", (
                self.field(f"{name}_encoding", "Encoding", p, p + 1, b, f"0x{b:02x} ({_INT_NAMES[b & 0x3F]})"),
                self.field(f"{name}_integer", "Integer", p + 1, p + 1 + size, v, str(v)))), p + 1 + size
        try:
            size, q, compressed = string_header(data, p)
        except NeedMore as more:
            self.need(more.args[0])
            raise
        except Corrupt as exc:
            raise _Stop(exc.args[0]) from None
        end = q + size
        if end > self.length:
            raise _Stop(f"a string of {size:,} bytes at offset {self.base + q} passes the record's end")
        if compressed:
            _, after_clen = read_len(data, p + 1)
            ulen, _ = read_len(data, after_clen)
            text = inflated = f"{size:,} bytes" + (f" (a {packed} inside)" if packed else "")
            if not packed and end <= len(data) and (self.text is None or ulen <= INFLATED * max(self.text, 1024)):
                try:
                    raw = decompress(data[q:end], ulen)
                    text, inflated = f"{size:,} bytes of LZF for {ulen:,}: {self.brief(raw)}", \
                        self.shown(raw, q, f"{name}_lzf")
                except LzfError as exc:
                    text = inflated = f"{size:,} bytes of LZF, damaged: {exc}"
            return self.field(name, label, p, end, None, text, (
                self.field(f"{name}_encoding", "Encoding", p, p + 1, b, f"0x{b:02x} (LZF)"),
                self.field(f"{name}_clen", "Compressed length", p + 1, after_clen, size, f"{size:,}"),
                self.field(f"{name}_length", "Length", after_clen, q, ulen, f"{ulen:,}"),
                self.field(f"{name}_lzf", "LZF data", q, end, None, inflated))), end
        header = self.field(f"{name}_length", "Length", p, q, size, f"{size:,}")
        if packed is not None and end <= len(data):
            inner = self.packed(packed, q, end)
            return self.field(name, label, p, end, None, f"{size:,} bytes: {packed}", (header, *inner)), end
        raw = bytes(data[q:min(end, len(data))])
        unread = "" if end <= len(data) else f" … ({end - len(data):,} bytes not read)"
        return self.field(name, label, p, end, None, self.brief(raw) + unread, (
            header, self.field(f"{name}_bytes", "Bytes", q, end, None,
                               self.shown(raw, q, f"{name}_bytes") + unread))), end

    # -- packed layouts (§6.1–§6.3) -----------------------------------------------------------

    def packed(self, kind: str, s: int, e: int) -> list[Field]:
        """The fields of the packed layout ``kind`` in ``s..e``: up to any damage, and the
        bytes from there as one field saying what is wrong."""
        out: list[Field] = []
        try:
            if e - s < _SMALLEST[kind]:
                raise _Stop(f"{e - s} bytes are too few for a {kind}")
            getattr(self, "_" + kind)(s, e, out)
        except (_Stop, IndexError, struct.error) as exc:
            why = exc.args[0] if isinstance(exc, _Stop) else "its entries pass its end"
            at = min(self.after(out, s), e)
            out.append(self.field("rest", "(rest)", at, e, None, f"{e - at:,} bytes: {why}"))
        return out

    def _entries(self, s: int, e: int, entry, out: list[Field]) -> int:
        """A packed layout's entries from ``s`` to its end mark, into ``out``: as many as
        fit in the rows shown beside the header, the end mark and a field for the rest."""
        p, i = s, 0
        while p < e and self.data[p] != 0xFF:
            if self.rows is not None and len(out) + 2 >= self.rows:
                out.append(self.field("more", "(more)", p, e - 1, None, f"… entries from {i} on, to the end mark"))
                return e - 1
            f, q = entry(p, i)
            if q > e:
                raise _Stop(f"entry {i} passes the end of its string")
            out.append(f)
            p, i = q, i + 1
        return p

    def _end(self, p: int, e: int) -> Field:
        if p >= e or self.data[p] != 0xFF:
            raise _Stop("no end mark")
        return self.field("end", "End", p, p + 1, 0xFF, "0xff")

    def _listpack(self, s: int, e: int, out: list[Field]) -> None:
        data = self.data
        total, count = _U32(data, s)[0], _U16(data, s + 4)[0]
        out += [self.field("total_bytes", "Total bytes", s, s + 4, total, f"{total:,}"),
                self.field("num_elements", "Elements", s + 4, s + 6, count,
                           "unknown (65535)" if count == 0xFFFF else str(count))]
        out.append(self._end(self._entries(s + 6, e, self._lp_entry, out), e))

    def _lp_entry(self, p: int, i: int) -> tuple[Field, int]:
        data = self.data
        b = data[p]
        if b < 0x80:
            size, v = 1, b
        elif b >> 6 == 2:
            size, v = 1 + (b & 0x3F), data[p + 1:p + 1 + (b & 0x3F)]
        elif b >> 5 == 6:
            raw = ((b & 0x1F) << 8) | data[p + 1]
            size, v = 2, raw - (1 << 13) if raw & (1 << 12) else raw
        elif b >> 4 == 14:
            n = ((b & 0x0F) << 8) | data[p + 1]
            size, v = 2 + n, data[p + 2:p + 2 + n]
        elif b == 0xF0:
            n = _U32(data, p + 1)[0]
            size, v = 5 + n, data[p + 5:p + 5 + n]
        elif b in (0xF1, 0xF2, 0xF3, 0xF4):
            width = {0xF1: 2, 0xF2: 3, 0xF3: 4, 0xF4: 8}[b]
            size, v = 1 + width, int.from_bytes(data[p + 1:p + 1 + width], "little", signed=True)
        else:
            raise _Stop(f"listpack entry byte 0x{b:02x} is no encoding")
        back = 1 if size <= 127 else 2 if size < 16383 else 3 if size < 2097151 else 4 if size < 268435455 else 5
        end = p + size + back
        self.need(end)
        text = str(v) if isinstance(v, int) else self.shown(bytes(v), p, f"entry_{i}")
        return self.field(f"entry_{i}", f"Entry {i}", p, end, v if isinstance(v, int) else None, text), end

    def _ziplist(self, s: int, e: int, out: list[Field]) -> None:
        data = self.data
        zlbytes, zltail, zllen = _U32(data, s)[0], _U32(data, s + 4)[0], _U16(data, s + 8)[0]
        out += [self.field("zlbytes", "Total bytes", s, s + 4, zlbytes, f"{zlbytes:,}"),
                self.field("zltail", "Tail offset", s + 4, s + 8, zltail, f"{zltail:,}"),
                self.field("zllen", "Entries", s + 8, s + 10, zllen,
                           "unknown (65535)" if zllen == 0xFFFF else str(zllen))]
        out.append(self._end(self._entries(s + 10, e, self._zl_entry, out), e))

    def _zl_entry(self, p: int, i: int) -> tuple[Field, int]:
        data = self.data
        q = p + (1 if data[p] < 254 else 5)
        b = data[q]
        kind = b >> 6
        if kind == 0:
            start, n = q + 1, b & 0x3F
        elif kind == 1:
            start, n = q + 2, ((b & 0x3F) << 8) | data[q + 1]
        elif b == 0x80:
            start, n = q + 5, int.from_bytes(data[q + 1:q + 5], "big")
        else:
            width = {0xC0: 2, 0xD0: 4, 0xE0: 8, 0xF0: 3, 0xFE: 1}.get(b)
            if width is None and 0xF1 <= b <= 0xFD:
                v, end = b - 0xF1, q + 1
            elif width is None:
                raise _Stop(f"ziplist entry encoding 0x{b:02x} is none known")
            else:
                v, end = int.from_bytes(data[q + 1:q + 1 + width], "little", signed=True), q + 1 + width
            self.need(end)
            return self.field(f"entry_{i}", f"Entry {i}", p, end, v, str(v)), end
        end = start + n
        self.need(end)
        return self.field(f"entry_{i}", f"Entry {i}", p, end, None, self.shown(bytes(data[start:end]), p, f"entry_{i}")), end

    def _intset(self, s: int, e: int, out: list[Field]) -> None:
        data = self.data
        width, count = _U32(data, s)[0], _U32(data, s + 4)[0]
        if width not in (2, 4, 8) or s + 8 + width * count != e:
            raise _Stop(f"an intset of {count} values of {width} bytes does not fill {e - s} bytes")
        out += [self.field("encoding", "Encoding", s, s + 4, width, f"{width} bytes a value"),
                self.field("count", "Count", s + 4, s + 8, count, str(count))]
        for i in range(count):
            if self.rows is not None and len(out) + 1 >= self.rows:
                out.append(self.field("more", "(more)", s + 8 + i * width, e, None, f"… values from {i} on"))
                break
            at = s + 8 + i * width
            v = int.from_bytes(data[at:at + width], "little", signed=True)
            out.append(self.field(f"integer_{i}", f"Value {i}", at, at + width, v, str(v)))

    def _zipmap(self, s: int, e: int, out: list[Field]) -> None:
        n = self.data[s]
        out += [self.field("zmlen", "Entries", s, s + 1, n, "unknown (254 or more)" if n >= 254 else str(n)),
                self.field("entries", "Entries and end", s + 1, e, None, f"{e - s - 1:,} bytes")]

    # -- the record ----------------------------------------------------------------------------

    def read(self, vtype: ValueType) -> "Anatomy":
        """Reads the record's fields (:attr:`fields`), its type byte taken as ``vtype`` (what
        the decoder took it for)."""
        self.fields = self._fields(vtype)
        return self

    def _fields(self, vtype: ValueType) -> list[Field]:
        out: list[Field] = []
        p = 0
        try:
            p = self._prefixes(out, p)
            self.need(p + 1)
            t = self.data[p]
            out.append(self.field("type", "Type", p, p + 1, t, f"{t} (0x{t:02x}, {vtype.rdb_name})"))
            key, p = self.string(p + 1, "key", "Key")
            out.append(key)
            if not vtype.layout:
                raise _Stop("a type whose layout is not known")
            out.append(self._value(p, vtype.layout))
        except _Stop as stop:
            out.append(self.rest(self.after(out, 0), stop.args[0]))
        except (NeedMore, Corrupt, IndexError, struct.error):
            out.append(self.rest(self.after(out, 0), "not read further"))
        return out

    def _prefixes(self, out: list[Field], p: int) -> int:
        data = self.data
        while True:
            self.need(p + 1)
            op = data[p]
            if op == types.EXPIRETIME_MS:
                self.need(p + 9)
                ms = _I64(data, p + 1)[0]
                out.append(self.field("expiretime_ms", "EXPIRETIME_MS", p, p + 9, ms, f"{ms} ms ({expiry_text(ms)})"))
                p += 9
            elif op == types.EXPIRETIME:
                self.need(p + 5)
                s = _I32(data, p + 1)[0]
                out.append(self.field("expiretime", "EXPIRETIME", p, p + 5, s, f"{s} s ({expiry_text(s * 1000)})"))
                p += 5
            elif op == types.IDLE:
                _, n, q = self.length_field(p + 1, "idle", "Idle seconds")
                out.append(self.field("idle", "IDLE", p, q, n, f"{n} s"))
                p = q
            elif op in (types.ENT_RAM_LRU, types.ENT_SLOT_NUM):
                _, v, q = self.length_field(p + 1, "enterprise", "Value")
                out.append(self.field(types.OPCODE_NAMES[op].lower(), types.OPCODE_NAMES[op], p, q, v, str(v)))
                p = q
            elif op == types.FREQ:
                self.need(p + 2)
                out.append(self.field("freq", "FREQ", p, p + 2, data[p + 1], str(data[p + 1])))
                p += 2
            elif op == types.DF_MASK:
                self.need(p + 5)
                mask = _U32(data, p + 1)[0]
                end = p + 5 + (4 if mask & 2 else 0)
                self.need(end)
                out.append(self.field("df_mask", "DF_MASK", p, end, mask, f"0x{mask:08x}"))
                p = end
            elif op in (types.KEY_META, types.SLOT_INFO) or op >= 200:
                raise _Stop(f"prefix opcode {types.OPCODE_NAMES.get(op, op)} not gone into")
            else:
                return p

    def _value(self, p: int, layout: str) -> Field:
        """The value from ``p`` (one field with the value's parts as its children)."""
        parts: list[Field] = []
        start = p
        try:
            p = self._parts(parts, p, layout)
        except _Stop as stop:
            parts.append(self.rest(self.after(parts, start), stop.args[0]))
        except (NeedMore, Corrupt, IndexError, struct.error):
            parts.append(self.rest(self.after(parts, start), "not read further"))
        end = max(self.length, start)
        return self.field("payload", "Value", start, end, None, f"{end - start:,} bytes ({layout})", parts)

    def _parts(self, out: list[Field], p: int, layout: str) -> int:
        if layout == "string":
            f, p = self.string(p, "string", "String")
            out.append(f)
            return p
        if layout in _PACKED:
            f, p = self.string(p, "packed", "Packed", _PACKED[layout])
            out.append(f)
            return p
        if layout == "listpack_ex":
            self.need(p + 8)
            ms = _I64(self.data, p)[0]
            out.append(self.field("min_expire", "Minimum expiry", p, p + 8, ms, f"{ms} ms"))
            f, p = self.string(p + 8, "packed", "Packed", "listpack")
            out.append(f)
            return p
        if layout in ("list", "set", "hash", "zset", "zset2", "quicklist", "quicklist2"):
            return self._collection(out, p, layout)
        raise _Stop(f"the {layout} layout not gone into")

    def _collection(self, out: list[Field], p: int, layout: str) -> int:
        label = "Nodes" if layout.startswith("quicklist") else "Count"
        f, n, p = self.length_field(p, "count", label)
        out.append(f)
        for i in range(n):
            if self.rows is not None and len(out) + 1 >= self.rows:
                out.append(self.rest(p, f"the {'nodes' if label == 'Nodes' else 'elements'} from {i} on"))
                return max(p, self.length)
            if layout in ("list", "set"):
                f, p = self.string(p, f"element_{i}", f"Element {i}")
                out.append(f)
            elif layout == "hash":
                f, p = self.string(p, f"field_{i}", f"Field {i}")
                out.append(f)
                f, p = self.string(p, f"value_{i}", f"Value {i}")
                out.append(f)
            elif layout in ("zset", "zset2"):
                f, p = self.string(p, f"member_{i}", f"Member {i}")
                out.append(f)
                p = self._score(out, p, i, layout == "zset2")
            elif layout == "quicklist":
                f, p = self.string(p, f"node_{i}", f"Node {i}", "ziplist")
                out.append(f)
            else:
                c, container, p = self.length_field(p, f"container_{i}", f"Container {i}")
                c = Field(c.name, c.label, c.offset, c.size, container,
                          {1: "1 (plain)", 2: "2 (packed)"}.get(container, str(container)))
                out.append(c)
                f, p = self.string(p, f"node_{i}", f"Node {i}", "listpack" if container == 2 else None)
                out.append(f)
        return p

    def _score(self, out: list[Field], p: int, i: int, binary: bool) -> int:
        data = self.data
        if binary:
            self.need(p + 8)
            v = _F64(data, p)[0]
            out.append(self.field(f"score_{i}", f"Score {i}", p, p + 8, v, repr(v)))
            return p + 8
        self.need(p + 1)
        n = data[p]
        special = {253: "nan", 254: "inf", 255: "-inf"}.get(n)
        end = p + 1 + (0 if special else n)
        self.need(end)
        text = special or bytes(data[p + 1:end]).decode("ascii", "replace")
        out.append(self.field(f"score_{i}", f"Score {i}", p, end, None, text))
        return end


def anatomy(data: bytes, base: int, length: int, vtype: ValueType, rows: int | None, text: int | None) -> Anatomy:
    """The key record at file offset ``base``, ``length`` bytes long, of which ``data`` are
    the first (all of them, or as many as were read), of type ``vtype``: its fields read."""
    return Anatomy(data, base, length, rows, text).read(vtype)
