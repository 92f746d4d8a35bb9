"""The values of RDB keys, one reader per layout (spec/rdb.md §5, §6, §8.3).

A reader is a generator run by the parser (:class:`~.rdb.RdbParser`): it reads from the
parser's buffer with the parser's waiting helpers, so that a value of any size streams in
as its bytes come, one element at a time. It sets the record's element count, its
encoding where the bytes tell, its value when the parser keeps values, and returns the
index after the value. Damage inside a packed string is a finding on the key and decoding
goes on after the string; damage to the structure itself raises
:class:`~.primitives.Corrupt` and decoding stops.
"""

from __future__ import annotations


from . import layouts
from .native import C
from .primitives import (
    Corrupt, NeedMore, TooLong, read_binary_double, read_binary_float, read_len, read_ms, read_stream_id,
    read_string, read_string_double, skip_string, skip_strings, stream_id_of, string_encoding, take_strings,
)
from .records import KeyRecord, StreamId

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

#: Dragonfly's member expiry counts seconds from 2023-02-01 00:00:00 UTC (§8.3)
DF_EXPIRY_BASE = 1675209600
#: module type names are 9 characters of this set, 6 bits each (§6.7)
MODULE_CHARSET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
#: the module value opcodes (§6.7)
MODULE_EOF, MODULE_SINT, MODULE_UINT, MODULE_FLOAT, MODULE_DOUBLE, MODULE_STRING = 0, 1, 2, 3, 4, 5

READERS: dict[str, Callable] = {}
#: the record extras that differ when values are kept: a stream's metadata is whole, and a
#: list's node sizes and a packed value's bytes (what the memory model needs) are there
#: only then
KEPT_ONLY = frozenset({"stream", "node_bytes", "node_entries", "packed_bytes"})


def reader(*layouts_: str):
    def register(fn):
        for name in layouts_:
            READERS[name] = fn
        return fn
    return register


def _text(v) -> bytes:
    """A packed entry as Redis gives it back: integers in decimal."""
    return str(v).encode() if isinstance(v, int) else v


def _texts_python(entries) -> list:
    return [_text(e) for e in entries]


#: :func:`_text` of each entry (in C when built)
_texts = C.texts if C is not None else _texts_python


def _score(v, at: int) -> float:
    if isinstance(v, int):
        return float(v)
    try:
        return float(v)
    except ValueError:
        raise Corrupt(f"score {v[:40]!r} is not a number", at) from None


def module_name(module_id: int) -> tuple[str, int]:
    """(type name, encoding version) of a 64-bit module id (``moduleTypeNameByID``)."""
    encver = module_id & 1023
    module_id >>= 10
    name = []
    for _ in range(9):
        name.append(MODULE_CHARSET[module_id & 63])
        module_id >>= 6
    return "".join(reversed(name)), encver


# --------------------------------------------------------------------------- helpers

def _strings(r, p: int, n: int, items: list | None, members: layouts.Members | None = None):
    """``n`` strings in a row from ``p``, appended to ``items`` when values are kept (passed
    over unmade when not) and to ``members`` when given: the next index. Read straight from
    the buffer while they are in it; through the parser's waiting helpers when one is not,
    or is damaged or too long."""
    buf, cap = r.buf, r.cap
    k = 0
    if items is None and members is None:
        while k < n:
            p, done = skip_strings(buf, p, n - k, cap)
            k += done
            if k < n:
                try:
                    p = skip_string(buf, p, cap)[1]
                except (NeedMore, TooLong, Corrupt):
                    p = (yield from r.string_size(p))[1]
                k += 1
        return p
    put = items.append if members is None else members.append if items is None else _both(items, members)
    if items is None and members.step > 1:  # a hash's values, not kept: their lengths only
        while k < n:
            member = k % members.step == 0
            try:
                if member:
                    v, p = read_string(buf, p, cap)
                    put(v)
                else:
                    size, p = skip_string(buf, p, cap)
                    members.sized(size)
            except (NeedMore, TooLong, Corrupt):
                if member:
                    v, p = yield from r.string(p)
                    put(v)
                else:
                    size, p = yield from r.string_size(p)
                    members.sized(size)
            k += 1
        return p
    while k < n:
        got = items if members is None else []  # (the members see each string too)
        p, done = take_strings(buf, p, n - k, cap, got)
        if members is not None:
            for v in got:
                put(v)
        k += done
        if k < n:  # one that is not whole in the buffer, or that read_string complains of
            try:
                v, p = read_string(buf, p, cap)
            except (NeedMore, TooLong, Corrupt):
                v, p = yield from r.string(p)
            put(v)
            k += 1
    return p


def _both(items: list, members: layouts.Members):
    def put(v):
        items.append(v)
        members.append(v)
    return put


def _repeat(r, members: layouts.Members) -> None:
    """What the duplicate rules judge of the value just read (:meth:`~.rdb.RdbParser._judge`)."""
    if members.repeat is not None:
        r.duplicate = (members.repeat, members.longest)


def _packed(r, p: int, rec: KeyRecord, decode, what: str, sizes: list | None = None, members: tuple = ()):
    """A string holding a packed layout: (``decode`` of it — its entries, or their count —
    or None when damaged, next index); its length appended to ``sizes`` if given; a member
    repeated for the duplicate rules when ``members`` is (the layout, every how many
    entries a member is) and the layout is sound."""
    start = r.base + p
    try:
        raw, p = read_string(r.buf, p, r.cap)
    except (NeedMore, TooLong, Corrupt):
        raw, p = yield from r.string(p)
    if raw is None:
        return None, p
    if sizes is not None:
        sizes.append(len(raw))
    elif r.keeping:  # a value's one blob: what the server allocates for it when it keeps it
        rec.extra["packed_bytes"] = len(raw)
    try:
        out = decode(raw)
    except Corrupt as exc:
        r.note("rdb-corrupt", f"{what} of key {r.key_text(rec)}: {exc.args[0]}", start)
        return None, p
    if members:
        repeat = layouts.first_repeat(raw, *members)
        if repeat is not None:
            r.duplicate = (repeat, 0)
    return out, p


def _pairs(entries: list, what: str, size: int) -> list[tuple]:
    if len(entries) % size:
        raise Corrupt(_ungrouped(len(entries), what, size), 0)
    return [tuple(entries[i:i + size]) for i in range(0, len(entries), size)]


def _ungrouped(n: int, what: str, size: int) -> str:
    return f"{n} entries do not make {what} of {size}"


def _group_count(r, p, rec, n: int | None, what: str, size: int) -> int | None:
    """How many ``size``-tuples ``n`` packed entries make (None, and the finding
    :func:`_packed_groups` makes, when they do not divide)."""
    if n is None:
        return None
    if n % size:
        r.note("rdb-corrupt", f"{what} of key {r.key_text(rec)}: {_ungrouped(n, f'{what} groups', size)}",
               r.base + p)
        return None
    return n // size


def _packed_groups(r, p, rec, decode, what, size, members: tuple = ()):
    """A packed string of ``size``-tuples (field/value pairs, member/score pairs, triplets)."""
    entries, p = yield from _packed(r, p, rec, decode, what, members=members)
    if entries is None:
        return None, p
    try:
        return _pairs(entries, f"{what} groups", size), p
    except Corrupt as exc:
        r.note("rdb-corrupt", f"{what} of key {r.key_text(rec)}: {exc.args[0]}", r.base + p)
        return None, p


def _finish(r, rec: KeyRecord, items: list | None, value=None) -> None:
    rec.elements = None if items is None else len(items)
    if r.keeping and items is not None:
        rec.value = items if value is None else value


# --------------------------------------------------------------------------- plain types

@reader("string")
def string(r, p, rec):
    if p >= len(r.buf):
        p = yield from r.wait(p, p + 1)
    if rec.vtype.type == "string":
        rec.encoding = string_encoding(r.buf, p)
    if not r.keeping:
        try:
            size, p = skip_string(r.buf, p, r.cap)
        except (NeedMore, TooLong, Corrupt):
            size, p = yield from r.string_size(p)
        rec.elements = 1
        if size is not None:
            rec.extra["value_length"] = size
        return p
    raw, p = yield from r.string(p)
    rec.elements = 1
    if raw is not None:
        rec.extra["value_length"] = len(raw)
        if r.keeping:
            rec.value = raw
    return p


@reader("list", "set")
def list_or_set(r, p, rec):
    n, p = yield from r.get(read_len, p)
    items = [] if r.keeping else None
    members = layouts.Members() if rec.vtype.layout == "set" else None
    p = yield from _strings(r, p, n, items, members)
    if members is not None:
        _repeat(r, members)
    rec.elements = n
    rec.value = items
    return p


@reader("hash")
def hash_(r, p, rec):
    n, p = yield from r.get(read_len, p)
    items = [] if r.keeping else None
    members = layouts.Members(2)
    p = yield from _strings(r, p, 2 * n, items, members)
    _repeat(r, members)
    if items is not None:
        items = list(zip(items[0::2], items[1::2]))
    rec.elements = n
    rec.value = items
    return p


@reader("zset", "zset2")
def zset(r, p, rec):
    n, p = yield from r.get(read_len, p)
    score = read_string_double if rec.vtype.layout == "zset" else read_binary_double
    items = [] if r.keeping else None
    members = layouts.Members()
    see = members.append
    buf, cap = r.buf, r.cap
    k = 0
    while k < n:
        try:  # straight from the buffer while the pairs are in it
            while k < n:
                m, q = read_string(buf, p, cap)
                s, p = score(buf, q)
                see(m)
                if items is not None:
                    items.append((m, s))
                k += 1
        except (NeedMore, TooLong, Corrupt):
            m, p = yield from r.string(p)
            s, p = yield from r.get(score, p)
            see(m)
            if items is not None:
                items.append((m, s))
            k += 1
    _repeat(r, members)
    rec.elements = n
    rec.value = items
    return p


# --------------------------------------------------------------------------- packed types

@reader("ziplist_list")
def ziplist_list(r, p, rec):
    if not r.keeping:
        rec.elements, p = yield from _packed(r, p, rec, layouts.ziplist_count, "ziplist")
        return p
    entries, p = yield from _packed(r, p, rec, layouts.ziplist, "ziplist")
    _finish(r, rec, entries, entries and _texts(entries))
    return p


@reader("intset")
def intset(r, p, rec):
    if not r.keeping:
        rec.elements, p = yield from _packed(r, p, rec, layouts.intset_count, "intset", members=("intset", 1))
        return p
    entries, p = yield from _packed(r, p, rec, layouts.intset, "intset", members=("intset", 1))
    _finish(r, rec, entries, entries and r.keeping and _texts(entries))
    return p


@reader("listpack_set")
def listpack_set(r, p, rec):
    if not r.keeping:
        rec.elements, p = yield from _packed(r, p, rec, layouts.listpack_count, "listpack", members=("listpack", 1))
        return p
    entries, p = yield from _packed(r, p, rec, layouts.listpack, "listpack", members=("listpack", 1))
    _finish(r, rec, entries, entries and _texts(entries))
    return p


def _zset_pairs(pairs):
    return [(_text(m), _score(s, 0)) for m, s in pairs]


@reader("ziplist_zset", "listpack_zset")
def packed_zset(r, p, rec):
    kind = "ziplist" if rec.vtype.layout == "ziplist_zset" else "listpack"
    if not r.keeping:  # counted and its scores read, no entry kept
        count = layouts.ziplist_count if kind == "ziplist" else layouts.listpack_count
        checked, p = yield from _packed(r, p, rec, lambda raw: (count(raw), layouts.bad_score(raw, kind)),
                                        rec.vtype.encoding, members=(kind, 2))
        n, bad = checked if checked is not None else (None, None)
        rec.elements = _group_count(r, p, rec, n, rec.vtype.encoding, 2)
        if rec.elements is not None and bad is not None:
            r.note("rdb-corrupt", f"{rec.vtype.encoding} of key {r.key_text(rec)}: score {bad[:40]!r} is not a number",
                   r.base + p)
            rec.elements = None
        return p
    decode = layouts.ziplist if kind == "ziplist" else layouts.listpack
    pairs, p = yield from _packed_groups(r, p, rec, decode, rec.vtype.encoding, 2, (kind, 2))
    if pairs is not None:
        try:
            pairs = _zset_pairs(pairs)
        except Corrupt as exc:
            r.note("rdb-corrupt", f"{rec.vtype.encoding} of key {r.key_text(rec)}: {exc.args[0]}", r.base + p)
            pairs = None
    _finish(r, rec, pairs)
    return p


@reader("ziplist_hash", "listpack_hash", "zipmap")
def packed_hash(r, p, rec):
    kind = rec.vtype.layout.split("_")[0]  # ziplist, listpack or zipmap
    if not r.keeping:
        count = {"ziplist_hash": layouts.ziplist_count, "listpack_hash": layouts.listpack_count,
                 "zipmap": layouts.zipmap_count}[rec.vtype.layout]
        n, p = yield from _packed(r, p, rec, count, rec.vtype.encoding, members=(kind, 2))
        rec.elements = _group_count(r, p, rec, n, rec.vtype.encoding, 2)
        return p
    decode = {"ziplist_hash": layouts.ziplist, "listpack_hash": layouts.listpack,
              "zipmap": layouts.zipmap}[rec.vtype.layout]
    pairs, p = yield from _packed_groups(r, p, rec, decode, rec.vtype.encoding, 2, (kind, 2))
    _finish(r, rec, pairs, pairs and [(_text(f), _text(v)) for f, v in pairs])
    return p


@reader("quicklist")
def quicklist(r, p, rec):
    nodes, p = yield from r.get(read_len, p)
    items, count, damaged, per_node = [], 0, False, []
    decode = layouts.ziplist if r.keeping else layouts.ziplist_count
    for _ in range(nodes):
        entries, p = yield from _packed(r, p, rec, decode, "quicklist node")
        if entries is None:
            damaged = True
            continue
        if not r.keeping:
            count += entries
            continue
        count += len(entries)
        per_node.append(len(entries))
        items += _texts(entries)
    rec.extra["nodes"] = nodes
    if r.keeping:
        rec.extra["node_entries"] = per_node
    rec.elements = None if damaged else count
    rec.value = items if r.keeping else None
    return p


@reader("quicklist2")
def quicklist2(r, p, rec):
    nodes, p = yield from r.get(read_len, p)
    items, count, damaged = [], 0, False
    sizes = [] if r.keeping else None
    for _ in range(nodes):
        at = r.base + p
        container, p = yield from r.get(read_len, p)
        if container == 1 and not r.keeping:
            size, p = yield from r.string_size(p)
            entries = None if size is None else 1
        elif container == 1:  # PLAIN: one element, as it is
            raw, p = yield from r.string(p)
            entries = None if raw is None else [raw]
            if raw is not None:
                sizes.append(len(raw))
        elif container == 2 and not r.keeping:
            entries, p = yield from _packed(r, p, rec, layouts.listpack_count, "quicklist node")
        elif container == 2:  # PACKED: a listpack
            entries, p = yield from _packed(r, p, rec, layouts.listpack, "quicklist node", sizes)
        else:
            _, p = yield from r.string(p)
            r.note("rdb-corrupt", f"quicklist node container {container} of key {r.key_text(rec)} is neither "
                                  "1 (plain) nor 2 (packed)", at)
            entries = None
        if entries is None:
            damaged = True
            continue
        if not r.keeping:
            count += entries
            continue
        count += len(entries)
        items += _texts(entries)
    rec.extra["nodes"] = nodes
    if r.keeping:
        rec.extra["node_bytes"] = sizes
    rec.elements = None if damaged else count
    rec.value = items if r.keeping else None
    return p


# --------------------------------------------------------------------------- hashes with field expiry

@reader("hash_metadata", "hash_metadata_pre_ga")
def hash_metadata(r, p, rec):
    min_expire = 0
    if rec.vtype.layout == "hash_metadata":
        min_expire, p = yield from r.get(read_ms, p)
        rec.extra["min_expire_ms"] = min_expire
    n, p = yield from r.get(read_len, p)
    items = [] if r.keeping else None
    members = layouts.Members(2)
    for _ in range(n):
        ttl, p = yield from r.get(read_len, p)
        f, p = yield from r.string(p)
        v, p = yield from r.string(p)
        members.append(f)
        members.append(v)
        if items is not None:
            expire = None if ttl == 0 else (ttl + min_expire - 1 if min_expire else ttl)
            items.append((f, v, expire))
    _repeat(r, members)
    rec.elements = n
    rec.value = items
    return p


@reader("listpack_ex", "listpack_ex_pre_ga")
def listpack_ex(r, p, rec):
    if rec.vtype.layout == "listpack_ex":
        rec.extra["min_expire_ms"], p = yield from r.get(read_ms, p)
    if not r.keeping:
        n, p = yield from _packed(r, p, rec, layouts.listpack_count, "listpack", members=("listpack", 3))
        rec.elements = _group_count(r, p, rec, n, "listpack", 3)
        return p
    triplets, p = yield from _packed_groups(r, p, rec, layouts.listpack, "listpack", 3, ("listpack", 3))
    _finish(r, rec, triplets, triplets and [(_text(f), _text(v), t if isinstance(t, int) and t else None)
                                            for f, v, t in triplets])
    return p


@reader("valkey_hash2")
def valkey_hash2(r, p, rec):
    n, p = yield from r.get(read_len, p)
    items = [] if r.keeping else None
    members = layouts.Members(2)
    for _ in range(n):
        f, p = yield from r.string(p)
        v, p = yield from r.string(p)
        expire, p = yield from r.get(read_ms, p)
        members.append(f)
        members.append(v)
        if items is not None:
            items.append((f, v, None if expire == -1 else expire))
    _repeat(r, members)
    rec.elements = n
    rec.value = items
    return p


# --------------------------------------------------------------------------- hash templates (Redis 8.10)

#: template field names remembered in all (HASH_TEMPLATE records hold them; a key of type
#: 30 or 32 names its fields by its template's id)
TEMPLATE_FIELDS = 1 << 20


class HashTemplates:
    """The templates of a snapshot's HASH_TEMPLATE records (opcode 242, §6.6), by id: the
    field names, in the order the keys that refer to one give their values."""

    def __init__(self) -> None:
        self.fields: dict[int, list] = {}
        self.names = 0
        self.full = False

    def add(self, template_id: int, names: list) -> None:
        if self.names + len(names) > TEMPLATE_FIELDS:
            self.full = True
            return
        self.names += len(names)
        self.fields[template_id] = names

    def of(self, template_id, rec: KeyRecord, r) -> list | None:
        """The field names of template ``template_id`` (a finding on ``rec`` when no record
        before it defines it, and None)."""
        names = self.fields.get(template_id) if isinstance(template_id, int) else None
        if names is None:
            why = (f"more than {TEMPLATE_FIELDS:,} template fields were defined: not remembered" if self.full
                   else "no HASH_TEMPLATE record before it defines it")
            r.note("rdb-corrupt", f"key {r.key_text(rec)} refers to hash template {template_id!r}: {why}", rec.offset)
        return names


@reader("hash_tmpl_lp_ref")
def hash_tmpl_lp_ref(r, p, rec):
    """HASH_TMPL_LP_REF (type 30): a listpack whose first entry is the template's id and
    whose others are the values of the template's fields, in its order."""
    entries, p = yield from _packed(r, p, rec, layouts.listpack, "listpack")
    if not entries:
        if entries is not None:
            r.note("rdb-corrupt", f"the listpack of key {r.key_text(rec)} has no template id", rec.offset)
        _finish(r, rec, None)
        return p
    template_id, values = entries[0], _texts(entries[1:])
    rec.extra["template_id"] = template_id
    names = r._state.templates.of(template_id, rec, r)
    if names is not None and len(names) != len(values):
        r.note("rdb-corrupt", f"key {r.key_text(rec)} holds {len(values)} values for the {len(names)} fields of "
                              f"hash template {template_id}", rec.offset)
        names = None
    rec.elements = len(values)
    if r.keeping:
        rec.value = list(zip(names, values)) if names is not None else [(None, v) for v in values]
    return p


@reader("hash_tmpl_array_ref")
def hash_tmpl_array_ref(r, p, rec):
    """HASH_TMPL_ARRAY_REF (type 32): the template's id, then one string per field of the
    template: a key whose template is not known has no known end, and decoding stops."""
    template_id, p = yield from r.get(read_len, p)
    rec.extra["template_id"] = template_id
    names = r._state.templates.of(template_id, rec, r)
    if names is None:
        raise Corrupt(f"the values of key {r.key_text(rec)} cannot be counted without its template", p)
    items = [] if r.keeping else None
    for name in names:
        v, p = yield from r.string(p)
        if items is not None:
            items.append((name, v))
    rec.elements = len(names)
    rec.value = items
    return p


# --------------------------------------------------------------------------- modules

def module_body(r, p):
    """A module value's opcode-tagged data, through its EOF opcode (§6.7): (values, next index)."""
    values = []
    while True:
        at = r.base + p
        op, p = yield from r.get(read_len, p)
        if op == MODULE_EOF:
            return values, p
        if op in (MODULE_SINT, MODULE_UINT):
            v, p = yield from r.get(read_len, p)
        elif op == MODULE_FLOAT:
            v, p = yield from r.get(read_binary_float, p)
        elif op == MODULE_DOUBLE:
            v, p = yield from r.get(read_binary_double, p)
        elif op == MODULE_STRING:
            v, p = yield from r.string(p)
        else:
            raise Corrupt(f"module opcode {op} at offset {at} is none of 0–5", p)
        if r.keeping and len(values) < 1024:
            values.append(v)


@reader("module")
def module(r, p, rec):
    module_id, p = yield from r.get(read_len, p)
    rec.extra["module"], rec.extra["module_encver"] = module_name(module_id)
    r.module_data(rec.extra["module"], f"key {r.key_text(rec)}", rec.offset)
    values, p = yield from module_body(r, p)
    rec.elements = None
    if r.keeping:
        rec.value = values
    return p


@reader("module_pre_ga")
def module_pre_ga(r, p, rec):
    r.stop("rdb-unknown-type", f"key {r.key_text(rec)} is a module value of the pre-GA format (type 6), "
                               "whose length only its module knows", rec.offset)
    return p
    yield  # a generator like every reader


# --------------------------------------------------------------------------- streams

def _stream_node(master: tuple[int, int], items: list, keep: bool) -> tuple[int, int, list]:
    """(live entries, deleted entries, entries as (id, [(field, value)]) when kept) of one
    stream node's listpack (§6.4)."""
    def num(i):
        v = items[i]
        if not isinstance(v, int):
            raise Corrupt(f"stream node entry {i} should be an integer", i)
        return v
    def count_of(i, what):  # a count indexes on: never negative, never past the entries left
        v = num(i)
        if v < 0:
            raise Corrupt(f"stream node entry {i} counts {v} {what}", i)
        if v > len(items) - i:
            raise Corrupt(f"stream node entry {i} counts {v} {what}, more than the {len(items) - i} entries left", i)
        return v
    try:
        count, deleted, nfields = num(0), num(1), count_of(2, "fields")
        if count < 0 or deleted < 0:
            raise Corrupt(f"the node's master entry counts {count} live and {deleted} deleted entries", 0)
        if 3 + nfields >= len(items):
            raise Corrupt(f"master entry of {nfields} fields passes the node's {len(items)} entries", 2)
        fields = items[3:3 + nfields]
        if num(3 + nfields) != 0:
            raise Corrupt("the master entry does not end with 0", 3 + nfields)
        i = 4 + nfields
        out, live, dead = [], 0, 0
        while i < len(items):
            flags, ms_delta, seq_delta = num(i), num(i + 1), num(i + 2)
            i += 3
            if flags & 2:  # the master entry's fields
                pairs = list(zip(fields, items[i:i + nfields]))
                i += nfields
            else:
                n = count_of(i, "field-value pairs")
                pairs = [(items[i + 1 + 2 * k], items[i + 2 + 2 * k]) for k in range(n)]
                i += 1 + 2 * n
            num(i)  # lp-count
            i += 1
            if i > len(items):
                raise Corrupt("a stream entry passes the end of its node", i)
            if flags & 1:
                dead += 1
                continue
            live += 1
            if keep:
                out.append((StreamId(master[0] + ms_delta, master[1] + seq_delta),
                            [(_text(f), _text(v)) for f, v in pairs]))
    except IndexError:
        raise Corrupt("a stream entry passes the end of its node", len(items)) from None
    if live != count or dead != deleted:
        raise Corrupt(f"the node's master entry counts {count} live and {deleted} deleted entries, "
                      f"it holds {live} and {dead}", 0)
    return live, dead, out


def _len2(r, p):
    a, p = yield from r.get(read_len, p)
    b, p = yield from r.get(read_len, p)
    return StreamId(a, b), p


@reader("stream1", "stream2", "stream3", "stream4")
def stream(r, p, rec):
    version = int(rec.vtype.layout[-1])
    nodes, p = yield from r.get(read_len, p)
    entries, live = [], 0
    node_keys: list = []
    node_bytes: list | None = [] if r.keeping else None
    for _ in range(nodes):
        at = r.base + p
        key, p = yield from r.string(p)
        items, p = yield from _packed(r, p, rec, layouts.listpack, "stream node", node_bytes)
        if key is None or items is None:
            continue
        if r.keeping:
            node_keys.append(key)
        try:
            # measuring for the memory model, a stream's entries are counted, not made
            n, _, got = _stream_node(stream_id_of(key), items, r.keeping and r.measure is None)
        except Corrupt as exc:
            r.note("rdb-corrupt", f"stream node of key {r.key_text(rec)}: {exc.args[0]}", at)
            continue
        live += n
        entries.extend(got)
    meta: dict = {"nodes": nodes}
    if r.keeping:  # what the server's memory of it needs (memory.stream_usage)
        meta["node_keys"], meta["node_bytes"] = node_keys, node_bytes
    meta["length"], p = yield from r.get(read_len, p)
    meta["last_id"], p = yield from _len2(r, p)
    if version >= 2:
        meta["first_id"], p = yield from _len2(r, p)
        meta["max_deleted_id"], p = yield from _len2(r, p)
        meta["entries_added"], p = yield from r.get(read_len, p)
    ngroups, p = yield from r.get(read_len, p)
    groups = []
    for _ in range(ngroups):
        group: dict = {}
        group["name"], p = yield from r.string(p)
        group["last_id"], p = yield from _len2(r, p)
        if version >= 2:
            group["entries_read"], p = yield from r.get(read_len, p)
        npel, p = yield from r.get(read_len, p)
        pel = []
        for _ in range(npel):
            sid, p = yield from r.get(read_stream_id, p)
            sid = StreamId(*sid)
            delivered, p = yield from r.get(read_ms, p)
            count, p = yield from r.get(read_len, p)
            if r.keeping:
                pel.append({"id": sid, "delivery_time": delivered, "delivery_count": count})
        group["pel"] = pel if r.keeping else npel
        nconsumers, p = yield from r.get(read_len, p)
        consumers = []
        for _ in range(nconsumers):
            consumer: dict = {}
            consumer["name"], p = yield from r.string(p)
            consumer["seen_time"], p = yield from r.get(read_ms, p)
            if version >= 3:
                consumer["active_time"], p = yield from r.get(read_ms, p)
            ncpel, p = yield from r.get(read_len, p)
            cpel = []
            for _ in range(ncpel):
                sid, p = yield from r.get(read_stream_id, p)
                cpel.append(StreamId(*sid))
            consumer["pel"] = cpel
            consumers.append(consumer)
        group["consumers"] = consumers
        groups.append(group)
    if version >= 4:
        idmp: dict = {}
        idmp["duration"], p = yield from r.get(read_len, p)
        idmp["max_entries"], p = yield from r.get(read_len, p)
        nproducers, p = yield from r.get(read_len, p)
        producers = []
        for _ in range(nproducers):
            pid, p = yield from r.string(p)
            n, p = yield from r.get(read_len, p)
            iids = []
            for _ in range(n):
                iid, p = yield from r.string(p)
                sid, p = yield from _len2(r, p)
                iids.append((iid, sid))
            producers.append({"pid": pid, "iids": iids})
        idmp["producers"] = producers
        idmp["iids_added"], p = yield from r.get(read_len, p)
        idmp["iids_duplicates"], p = yield from r.get(read_len, p)
        meta["idmp"] = idmp
    meta["groups"] = groups if r.keeping else len(groups)
    rec.extra["stream"] = meta if r.keeping else {k: meta[k] for k in ("nodes", "length", "groups")}
    if live != meta["length"]:  # the server keeps the field as the stream's length, unless no node holds it
        if nodes:
            r.note("rdb-stream-length", f"stream {r.key_text(rec)} says {meta['length']} entries, its nodes hold "
                                        f"{live}", rec.offset)
        else:
            r.note("rdb-corrupt", f"stream {r.key_text(rec)} says {meta['length']} entries and has no node",
                   rec.offset)
    rec.elements = meta["length"]
    if r.keeping:
        rec.value = entries
    return p


# --------------------------------------------------------------------------- Dragonfly types

def _df_expiry(v: int) -> int | None:
    return None if v == -1 else (v + DF_EXPIRY_BASE) * 1000


def _ll(r, p):
    raw, p = yield from r.string(p)
    try:
        return int(raw), p
    except (TypeError, ValueError):
        raise Corrupt(f"an expiry {raw!r:.40} is not an integer", p) from None


@reader("df_hash_expiry", "df_set_expiry")
def df_with_expiry(r, p, rec):
    n, p = yield from r.get(read_len, p)
    hashed = rec.vtype.layout == "df_hash_expiry"
    items = [] if r.keeping else None
    # the server passes over a member already expired as it loads (and judges no repeat of
    # it): one that expired before the snapshot's ctime surely has
    members, ctime = layouts.Members(), r._state.ctime_ms
    for _ in range(n):
        m, p = yield from r.string(p)
        v = None
        if hashed:
            v, p = yield from r.string(p)
        e, p = yield from _ll(r, p)
        expire = _df_expiry(e)
        if expire is None or ctime is None or expire > ctime:
            members.append(m)
        if items is not None:
            items.append((m, v, expire) if hashed else (m, expire))
    _repeat(r, members)
    rec.elements = n
    rec.value = items
    return p


def _chunks(r, p, total):
    """Chunks ``{len, raw bytes}`` until ``total`` bytes (SBF2, CUCKOO filters), passed over."""
    seen = 0
    while seen < total:
        at = r.base + p
        size, p = yield from r.get(read_len, p)
        if size == 0 or seen + size > total:
            raise Corrupt(f"a chunk of {size} bytes at offset {at} does not fit the {total - seen} left", p)
        p = yield from r.skip(p, size)
        seen += size
    return p


@reader("df_sbf", "df_sbf2")
def df_sbf(r, p, rec):
    info: dict = {}
    info["options"], p = yield from r.get(read_len, p)
    info["grow_factor"], p = yield from r.get(read_binary_double, p)
    info["fp_prob"], p = yield from r.get(read_binary_double, p)
    for name in ("prev_size", "current_size", "max_capacity", "num_filters"):
        info[name], p = yield from r.get(read_len, p)
    for _ in range(info["num_filters"]):
        _, p = yield from r.get(read_len, p)  # hash count
        if rec.vtype.layout == "df_sbf":
            _, p = yield from r.pass_string(p)
        else:
            total, p = yield from r.get(read_len, p)
            p = yield from _chunks(r, p, total)
    rec.extra["filter"] = info
    rec.elements = info["num_filters"]
    return p


@reader("df_cms")
def df_cms(r, p, rec):
    info: dict = {}
    for name in ("width", "depth", "total_count"):
        info[name], p = yield from r.get(read_len, p)
    p = yield from r.skip(p, 8 * info["width"] * info["depth"])
    rec.extra["filter"] = info
    rec.elements = info["width"] * info["depth"]
    return p


@reader("df_topk")
def df_topk(r, p, rec):
    info: dict = {}
    for name in ("options", "k", "width", "depth"):
        info[name], p = yield from r.get(read_len, p)
    info["decay"], p = yield from r.get(read_binary_double, p)
    n, p = yield from r.get(read_len, p)
    heap = []
    for _ in range(n):
        item, p = yield from r.string(p)
        count, p = yield from r.get(read_len, p)
        if r.keeping:
            heap.append((item, count))
    counters, p = yield from r.get(read_len, p)
    p = yield from r.skip(p, counters)
    rec.extra["filter"] = info
    rec.elements = n
    rec.value = heap if r.keeping else None
    return p


@reader("df_cuckoo")
def df_cuckoo(r, p, rec):
    info: dict = {}
    for name in ("slots_per_bucket", "max_iterations", "expansion", "num_buckets", "num_items", "num_deletes",
                 "num_filters"):
        info[name], p = yield from r.get(read_len, p)
    for _ in range(info["num_filters"]):
        total, p = yield from r.get(read_len, p)
        p = yield from _chunks(r, p, total)
    rec.extra["filter"] = info
    rec.elements = info["num_items"]
    return p
