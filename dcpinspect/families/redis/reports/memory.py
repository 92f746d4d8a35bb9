"""Where a key's memory goes in the server: the model of what Redis 7.0 (64-bit, jemalloc
5.3) allocates for a key loaded from an RDB file, written as the server's
``MEMORY USAGE key SAMPLES 0`` counts it (``object.c`` ``objectComputeSize`` and
``memoryCommand``), plus the key's entry in the expires dict, which ``MEMORY USAGE``
leaves out.

The facts, each named after the server's structure (``src/server.h``, ``sds.h``,
``dict.h``, ``quicklist.h``, ``stream.h``, ``rax.h``):

* every key: its ``dictEntry`` in the db's dict (:data:`DICT_ENTRY`) and its name as an
  SDS string (:func:`sds_alloc`: the header of its length class, the bytes and the NUL,
  rounded up to jemalloc's size class, :func:`jemalloc`); a key with an expiry also has a
  ``dictEntry`` in the expires dict (:data:`EXPIRES_ENTRY`; the name is shared).
* strings (``tryObjectEncoding``): an integer of at most 20 characters is the ``robj``
  alone (:data:`ROBJ`); up to :data:`EMBSTR_MAX` bytes one allocation of ``robj``, SDS
  header and bytes (embstr); longer, the ``robj`` and its SDS (raw).
* listpacks (hashes, sorted sets) and intsets: the ``robj`` and the blob's allocation. A
  ziplist of an older file is converted on load (``lpAppend`` entry by entry): its size is
  that of the listpack the same entries make (:func:`listpack_bytes`).
* hash tables (hashes, sets): the ``robj``, the ``dict``, a bucket pointer per slot (the
  next power of two at or above the elements, at least 4, :func:`dict_slots`) and per
  element a ``dictEntry`` and its SDS strings.
* sorted sets as skiplists: the ``robj``, ``zset``, ``zskiplist``, the dict with its
  buckets, the header node of :data:`ZSKIPLIST_MAXLEVEL` levels, and per element its SDS,
  a ``dictEntry`` and a node whose level is random (p = 1/4): the expected allocation of
  one (:attr:`Sizes.zskiplist_node`).
* lists (quicklists): the ``robj``, the ``quicklist``, and per node a ``quicklistNode``
  and its listpack (or its one element, for a plain node), as the file has them; a list
  from an older file (ziplist nodes, plain lists) is cut into nodes of at most 8 KB as
  ``quicklistPushTail`` does (``list-max-listpack-size -2``).
* streams: the ``robj``, the ``stream``, the rax of its nodes (``MEMORY USAGE``'s own
  estimate: :data:`STREAM_ID` a key plus :data:`RAX_NODE_ESTIMATE` a rax node, the nodes
  counted as the radix tree of those keys has them, :func:`rax_nodes`), every node's
  listpack, and per consumer group a ``streamCG``, its PEL's rax and a ``streamNACK`` per
  pending entry, and per consumer a ``streamConsumer``, its name and its PEL's rax.

Where the server holds a key differently than the file (a listpack with more entries than
``hash-max-listpack-entries``, a plain set of integers, a small sorted set written as a
skiplist), the model converts it as ``rdbLoadObject`` does, by the thresholds of
:class:`Config`: the server's defaults, or those of a ``redis.conf``. Modules' and
Dragonfly's own types are counted as their serialised size.

Redis 7.2 and later (a file whose ``redis-ver`` says so, :func:`listpack_sets`; any file
of RDB 11 or later, :func:`for_version`) also hold small sets as listpacks: a plain set of at most
``set-max-intset-entries`` members is loaded as an intset until a member is no integer,
then made a listpack while it has fewer than ``set-max-listpack-entries`` (128) members
of at most ``set-max-listpack-value`` (64) bytes, else a hash table; a set listpack is kept
as it is up to 128 members (:func:`set_usage`). ``MEMORY USAGE`` counts the rest as 7.0.

Every allocation is rounded up to a size class of the server's jemalloc (:class:`Sizes`),
whose steps depend on how the server was built, not on its version: Redis's own build
(``make``, as the official images and a source build have it) links the jemalloc it
bundles, configured ``--with-lg-quantum=3``, whose classes step by 8 bytes up to 64
(24, 40 and 56 too); Debian's and Ubuntu's packages link the system's jemalloc, of
jemalloc's default 16-byte quantum. The same hash-table set's members of 15 to 22 bytes
take 24 bytes in the one and 32 in the other. ``Config.allocator`` says which; by
default "system" for a file of Redis 7.0 (the version Debian 12's and Ubuntu 24.04's
packages have) and "bundled" from 7.2 on (mostly run from Redis's own builds); a file
does not say how its server was built, so ``rdb --allocator`` may.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from pathlib import Path

from ..rdb.layouts import _backlen_size

# --------------------------------------------------------------------------- allocator

#: jemalloc's smallest size class (8 bytes) and its quantum, which depends on how the
#: server was built: Redis's own build (``make``: the source, the official images)
#: configures the jemalloc it bundles ``--with-lg-quantum=3`` (``deps/Makefile``), so that
#: its classes step by 8 bytes up to 64 (24, 40 and 56 too); a distribution's package that
#: links the system's jemalloc (Debian's and Ubuntu's ``redis-server``) has jemalloc's
#: default quantum, 16 bytes (8, 16, 32, 48, 64)
JEMALLOC_TINY = 8
ALLOCATORS = {"bundled": 8, "system": 16}
JEMALLOC_QUANTUM = ALLOCATORS["system"]
#: size classes per doubling above the quantum (``LG_SIZE_CLASS_GROUP`` = 2)
JEMALLOC_CLASSES_PER_DOUBLING = 4


def jemalloc(n: int, quantum: int = JEMALLOC_QUANTUM) -> int:
    """The size class jemalloc gives a request of ``n`` bytes (``malloc_usable_size``):
    8, 16, 32, 48, 64, 80, ... 128, 160, 192, 224, 256, 320, ... (``quantum`` 16; 8, 16,
    24, 32, 40, 48, 56, 64, 80, ... with 8): steps of the quantum, then four classes
    between each power of two and the next, for small, large and huge sizes alike."""
    if n <= JEMALLOC_TINY:
        return JEMALLOC_TINY
    if n <= quantum:
        return quantum
    delta = max(quantum, 1 << ((n - 1).bit_length() - 1 - 2))
    return (n + delta - 1) // delta * delta


# --------------------------------------------------------------------------- structures (64-bit)

#: ``robj``: type, encoding, lru (4 bytes), refcount, ptr
ROBJ = 16
#: ``dictEntry``: key, value, next
DICT_ENTRY = 24
#: the expires dict's entry of a key with an expiry (its key is the main dict's SDS)
EXPIRES_ENTRY = DICT_ENTRY
#: ``dict``: type, two tables, their used counts and size exponents, rehashidx, pauserehash
DICT = 56
#: a bucket: one ``dictEntry *`` slot of a table
DICT_BUCKET = 8
#: ``DICT_HT_INITIAL_SIZE``
DICT_MIN_SLOTS = 4
#: SDS headers by length class (``sdsReqType``): type 5 (length in the flags byte) under
#: 32 bytes, sdshdr8 under 256, sdshdr16 under 64 KiB, sdshdr32 under 4 GiB, sdshdr64
SDS_HEADERS = ((1 << 5, 1), (1 << 8, 3), (1 << 16, 5), (1 << 32, 9))
SDSHDR64 = 17
#: ``OBJ_ENCODING_EMBSTR_SIZE_LIMIT``: the longest string kept in the ``robj``'s allocation
EMBSTR_MAX = 44
#: the SDS header of an embstr (``sdshdr8``)
EMBSTR_HEADER = 3
#: the longest string ``tryObjectEncoding`` tries as an integer
INT_STRING_MAX = 20
#: ``zset``: dict, zsl
ZSET = 16
#: ``zskiplist``: header, tail, length, level
ZSKIPLIST = 32
#: ``zskiplistNode``: ele, score, backward; then a ``zskiplistLevel`` (forward, span) a level
ZSKIPLIST_NODE = 24
ZSKIPLIST_LEVEL = 16
ZSKIPLIST_MAXLEVEL = 32
ZSKIPLIST_P = 0.25
#: ``quicklist``: head, tail, count, len, fill/compress/bookmark bit fields
QUICKLIST = 40
#: ``quicklistNode``: prev, next, entry, sz, count/encoding/container bit fields
QUICKLIST_NODE = 40
#: ``SIZE_SAFETY_LIMIT``/``optimization_level[1]``: a node's listpack stays under 8 KB
#: (``list-max-listpack-size -2``); ``SIZE_ESTIMATE_OVERHEAD`` bytes are allowed an entry
QUICKLIST_NODE_BYTES = (4096, 8192, 16384, 32768, 65536)
QUICKLIST_ENTRY_OVERHEAD = 8
#: ``stream``: rax, length, last_id, first_id, max_deleted_entry_id, entries_added, cgroups
STREAM = 80
#: ``streamID``: ms and seq, the 16 bytes of a stream rax's keys
STREAM_ID = 16
#: ``streamRadixTreeMemoryUsage``: a ``raxNode`` header (4) and "30 longs" of pointers a node
RAX_NODE_ESTIMATE = 4 + 8 * 30
#: ``streamCG``: last_id, entries_read, pel, consumers
STREAM_CG = 40
#: ``streamNACK``: delivery_time, delivery_count, consumer
STREAM_NACK = 24
#: ``streamConsumer``: seen_time, name, pel
STREAM_CONSUMER = 24
#: a listpack's header (total bytes, entries) and end byte
LP_HEADER = 6
LP_END = 1
#: an intset's header (encoding, length)
INTSET_HEADER = 8


def _zskiplist_node_expected(quantum: int) -> float:
    """The expected allocation of a skiplist node: level L with probability
    (1 - p) p^(L-1) (``zslRandomLevel``), capped at the maximum level."""
    total, stay = 0.0, 1.0
    for level in range(1, ZSKIPLIST_MAXLEVEL + 1):
        share = stay if level == ZSKIPLIST_MAXLEVEL else stay * (1 - ZSKIPLIST_P)
        total += share * jemalloc(ZSKIPLIST_NODE + level * ZSKIPLIST_LEVEL, quantum)
        stay *= ZSKIPLIST_P
    return total


class Sizes:
    """What the allocator of a ``quantum`` (:data:`ALLOCATORS`) gives: a request's size
    class (:meth:`alloc`), an SDS string's allocation (:meth:`sds`), a skiplist's header
    and the expected allocation of one of its nodes."""

    def __init__(self, quantum: int) -> None:
        self.quantum = quantum
        self._sds_short = steps(self._sds, 4096)
        self.zskiplist_node = _zskiplist_node_expected(quantum)
        self.zskiplist_header = jemalloc(ZSKIPLIST_NODE + ZSKIPLIST_MAXLEVEL * ZSKIPLIST_LEVEL, quantum)

    def alloc(self, n: int) -> int:
        return jemalloc(n, self.quantum)

    def _sds(self, n: int) -> int:
        return jemalloc((sds_header(n) if n else 3) + n + 1, self.quantum)

    def sds(self, n: int) -> int:
        """The allocation of an SDS string of ``n`` bytes made to measure (``sdsnewlen``:
        an empty one is sdshdr8)."""
        return self._sds_short[n] if n < 4096 else self._sds(n)


@lru_cache(maxsize=None)
def sizes(quantum: int = JEMALLOC_QUANTUM) -> Sizes:
    return Sizes(quantum)


# --------------------------------------------------------------------------- the server's thresholds

@dataclass(frozen=True)
class Config:
    """The thresholds by which the server converts encodings on load, its defaults unless
    a ``redis.conf`` says otherwise (:meth:`read`; the older ``ziplist`` names too)."""

    hash_max_listpack_entries: int = 512
    hash_max_listpack_value: int = 64
    zset_max_listpack_entries: int = 128
    zset_max_listpack_value: int = 64
    set_max_intset_entries: int = 512
    list_max_listpack_size: int = -2
    set_max_listpack_entries: int = 128
    set_max_listpack_value: int = 64
    #: the server holds small sets, and lists of one node, as listpacks (Redis 7.2 and later)
    set_listpacks: bool = False
    #: the server's jemalloc (:data:`ALLOCATORS`); None: by the server the file names,
    #: "bundled" from Redis 7.2 on (mostly run from Redis's own builds), "system" before
    #: (the 7.0 of Debian's and Ubuntu's packages)
    allocator: str | None = None

    @property
    def sizes(self) -> "Sizes":
        """The size classes of the server's allocator."""
        return sizes(ALLOCATORS[self.allocator or ("bundled" if self.set_listpacks else "system")])

    @classmethod
    def read(cls, path: str | Path) -> "Config":
        """The thresholds a ``redis.conf`` sets (others keep their defaults); a line that
        names none of them is passed over. Raises ValueError on a value that is no number."""
        names = {f.name.replace("_", "-"): f.name for f in fields(cls)}
        for f in list(names):
            if "listpack" in f:
                names[f.replace("listpack", "ziplist")] = names[f]
        given = {}
        for line in Path(path).read_text(errors="replace").splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0].lower() in names:
                try:
                    given[names[parts[0].lower()]] = int(parts[1])
                except ValueError:
                    raise ValueError(f"{path}: {parts[0]} {parts[1]!r} is not a number") from None
        given.pop("set_listpacks", None)
        given.pop("allocator", None)  # (no redis.conf directive: how the server was built)
        if "set_max_listpack_entries" in given or "set_max_listpack_value" in given:
            given["set_listpacks"] = True  # (names only Redis 7.2 and later know)
        return cls(**given)


DEFAULTS = Config()
#: the RDB version Redis 7.2 writes, the first whose server holds set listpacks
SET_LISTPACK_RDB = 11


def listpack_sets(cfg: Config, redis_ver) -> Config:
    """``cfg`` for the server named by a file's ``redis-ver`` aux field: with set listpacks
    from Redis 7.2 on."""
    if isinstance(redis_ver, bytes):
        redis_ver = redis_ver.decode("ascii", "replace")
    try:
        major, minor = (int(x) for x in str(redis_ver).split(".")[:2])
    except ValueError:
        return cfg
    return replace(cfg, set_listpacks=True) if (major, minor) >= (7, 2) and not cfg.set_listpacks else cfg


def for_version(cfg: Config, version: int | None) -> Config:
    """``cfg`` for a file of RDB ``version``: with set listpacks (and Redis's own build's
    allocator, unless one is named) from version 11, which Redis 7.2 writes."""
    if version is not None and version >= SET_LISTPACK_RDB and not cfg.set_listpacks:
        return replace(cfg, set_listpacks=True)
    return cfg


# --------------------------------------------------------------------------- pieces

def sds_header(n: int) -> int:
    for limit, size in SDS_HEADERS:
        if n < limit:
            return size
    return SDSHDR64


def sds_alloc(n: int, quantum: int = JEMALLOC_QUANTUM) -> int:
    """The allocation of an SDS string of ``n`` bytes made to measure (``sdsnewlen``: an
    empty one is sdshdr8), by an allocator of this ``quantum``."""
    return sizes(quantum).sds(n)


def dict_slots(n: int) -> int:
    """Slots of a dict made for ``n`` elements (``dictExpand``: the next power of two)."""
    return max(DICT_MIN_SLOTS, 1 << (n - 1).bit_length()) if n > 0 else 0


def as_int(s: bytes) -> int | None:
    """``s`` as the integer ``string2ll``/``lpStringToInt64`` read it (no sign but '-', no
    leading zero, no space, 64-bit), else None."""
    if not s or len(s) > INT_STRING_MAX:
        return None
    if s == b"0":
        return 0
    digits = s[1:] if s[:1] == b"-" else s
    if not digits or not digits.isdigit() or digits[:1] == b"0" or not digits.isascii():
        return None
    v = int(s)
    return v if -(1 << 63) <= v < (1 << 63) else None


def lp_entry(e) -> int:
    """Bytes of one listpack entry (encoding, data, backlen) holding ``e`` (bytes, or an
    int), as ``lpAppend`` encodes it: a string that is an integer is stored as one."""
    v = e if isinstance(e, int) else as_int(e)
    if v is not None:
        if 0 <= v <= 127:
            size = 1
        elif -4096 <= v <= 4095:
            size = 2
        elif -(1 << 15) <= v < 1 << 15:
            size = 3
        elif -(1 << 23) <= v < 1 << 23:
            size = 4
        elif -(1 << 31) <= v < 1 << 31:
            size = 5
        else:
            size = 9
    else:
        n = len(e)
        size = n + (1 if n < 64 else 2 if n < 4096 else 5)
    return size + _backlen_size(size)


def listpack_bytes(entries) -> int:
    """The bytes of the listpack these entries make."""
    return LP_HEADER + LP_END + sum(map(lp_entry, entries))


def score_entry(score: float):
    """A sorted set's score as ``zzlInsertAt`` puts it in a listpack: an integer when it
    is one (``double2ll``), else its ``%.17g`` text."""
    if math.isfinite(score) and score == int(score) and abs(score) < (1 << 62):
        return int(score)
    if math.isnan(score):
        return b"nan"
    if math.isinf(score):
        return b"inf" if score > 0 else b"-inf"
    return b"%.17g" % score


def intset_bytes(values) -> int:
    """An intset's bytes: the header and each value in the width the widest needs."""
    width, n = 2, 0
    for v in values:
        n += 1
        if not -(1 << 15) <= v < 1 << 15:
            width = max(width, 4 if -(1 << 31) <= v < 1 << 31 else 8)
    return INTSET_HEADER + n * width


def rax_nodes(keys) -> int:
    """The nodes of a rax holding these byte-string keys (sorted or not): the root, each
    key's end, each point where keys branch and the first node of each branch (a compressed
    node runs up to the next of these)."""
    keys = sorted(set(keys))
    if not keys:
        return 1
    starts = {b""}
    starts.update(keys)
    for a, b in zip(keys, keys[1:]):
        common = 0
        for x, y in zip(a, b):
            if x != y:
                break
            common += 1
        if common < len(a):  # a and b part at a[:common]: a branch there, a child each side
            starts.add(a[:common])
            starts.add(a[:common + 1])
            starts.add(b[:common + 1])
    # a key that is a prefix of the next does not branch; a branch point may be seen twice
    return len(starts)


# --------------------------------------------------------------------------- per type

def string_usage(raw: bytes | None, length: int, sz: Sizes) -> tuple[int, str]:
    """(bytes, encoding) of a string value: int, embstr or raw."""
    if raw is not None and length <= INT_STRING_MAX and as_int(raw) is not None:
        return ROBJ, "int"
    if length <= EMBSTR_MAX:
        return sz.alloc(ROBJ + EMBSTR_HEADER + length + 1), "embstr"
    return ROBJ + sz.sds(length), "raw"


def listpack_usage(entries, sz: Sizes, blob: int | None = None) -> int:
    """A listpack of these entries; ``blob``: the bytes of the one the file holds, which
    the server keeps as it is."""
    return ROBJ + sz.alloc(listpack_bytes(entries) if blob is None else blob)


def hashtable_usage(elements: int, element_bytes: int) -> int:
    """A dict-encoded set or hash: ``element_bytes`` is the SDS allocations of all."""
    return ROBJ + DICT + DICT_BUCKET * dict_slots(elements) + DICT_ENTRY * elements + element_bytes


def hash_usage(pairs: list, cfg: Config, packed: bool, blob: int | None = None) -> tuple[int, str]:
    """A hash's field-value pairs; ``packed``: the file holds a listpack or ziplist, which
    the server converts by its number of pairs alone (a plain hash also by its lengths);
    ``blob``: the bytes of a listpack the server keeps as it is."""
    longest = max((len(x) for p in pairs for x in p[:2]), default=0)
    sz = cfg.sizes
    if len(pairs) <= cfg.hash_max_listpack_entries and (packed or longest <= cfg.hash_max_listpack_value):
        return listpack_usage([x for p in pairs for x in p[:2]], sz, blob), "listpack"
    return hashtable_usage(len(pairs), sum(sz.sds(len(p[0])) + sz.sds(len(p[1])) for p in pairs)), "hashtable"


def set_usage(members: list, cfg: Config, intset: bool, blob: int | None = None,
              listpack: bool = False) -> tuple[int, str]:
    """A set's members (bytes); ``intset``: the file holds an intset (of ``blob`` bytes);
    ``listpack``: a listpack (of ``blob`` bytes; a server of set listpacks wrote it)."""
    if listpack or (cfg.set_listpacks and not intset):
        return _set_usage_72(members, cfg, blob if listpack else None)
    sz = cfg.sizes
    if len(members) <= cfg.set_max_intset_entries:
        ints = [as_int(m) for m in members]
        if intset or None not in ints:
            return ROBJ + sz.alloc(intset_bytes(ints) if blob is None else blob), "intset"
    return hashtable_usage(len(members), sum(sz.sds(len(m)) for m in members)), "hashtable"


def _set_usage_72(members: list, cfg: Config, blob: int | None) -> tuple[int, str]:
    """A set as Redis 7.2 loads it: a listpack the file holds (``blob``) kept up to
    ``set-max-listpack-entries``; a plain set as ``rdbLoadObject`` builds it member by
    member (an intset while they are integers, then a listpack while it may, then a hash
    table)."""
    n = len(members)
    sz = cfg.sizes
    table = (hashtable_usage(n, sum(sz.sds(len(m)) for m in members)), "hashtable")
    if blob is not None:
        return table if n > cfg.set_max_listpack_entries else (ROBJ + sz.alloc(blob), "listpack")
    if n > cfg.set_max_intset_entries:
        return table
    ints: list[int] = []
    packed: list | None = None
    longest = 0
    for m in members:
        longest = max(longest, len(m))
        if packed is None:
            v = as_int(m)
            if v is not None:
                ints.append(v)
                continue
            if not (len(ints) < cfg.set_max_listpack_entries and longest <= cfg.set_max_listpack_value):
                return table
            packed = list(ints)
        if not (len(packed) < cfg.set_max_listpack_entries and len(m) <= cfg.set_max_listpack_value):
            return table
        packed.append(m)
    if packed is None:
        return ROBJ + sz.alloc(intset_bytes(ints)), "intset"
    return listpack_usage(packed, sz), "listpack"


def zset_usage(pairs: list, cfg: Config, packed: bool, blob: int | None = None) -> tuple[int, str]:
    """A sorted set's (member, score) pairs; ``packed``: the file holds a listpack or
    ziplist (converted by its length alone), else the skiplist of a plain one is made a
    listpack when small enough, after loading; ``blob``: the bytes of a listpack the
    server keeps as it is."""
    longest = max((len(m) for m, _ in pairs), default=0)
    sz = cfg.sizes
    if len(pairs) <= cfg.zset_max_listpack_entries and (packed or longest <= cfg.zset_max_listpack_value):
        entries = []
        for m, s in pairs:
            entries.append(m)
            entries.append(score_entry(s))
        return listpack_usage(entries, sz, blob), "listpack"
    return skiplist_usage(len(pairs), sum(sz.sds(len(m)) for m, _ in pairs), sz), "skiplist"


def skiplist_usage(n: int, member_bytes: int, sz: Sizes) -> int:
    """A skiplist-encoded sorted set of ``n`` members whose SDS allocations are ``member_bytes``."""
    fixed = ROBJ + ZSET + ZSKIPLIST + DICT + DICT_BUCKET * dict_slots(n) + sz.zskiplist_header
    return round(fixed + member_bytes + n * (DICT_ENTRY + sz.zskiplist_node))


def quicklist_nodes(items, cfg: Config) -> list[int]:
    """The listpack bytes of each node ``quicklistPushTail`` makes of these elements."""
    fill = cfg.list_max_listpack_size
    limit = QUICKLIST_NODE_BYTES[min(-fill, len(QUICKLIST_NODE_BYTES)) - 1] if fill < 0 else None
    nodes: list[int] = []
    size = count = 0
    for e in items:
        n = lp_entry(e)
        fits = count and (size + len(e) + QUICKLIST_ENTRY_OVERHEAD <= limit if limit else count < fill)
        if not fits:
            if count:
                nodes.append(size)
            size, count = LP_HEADER + LP_END, 0
        size += n
        count += 1
    if count:
        nodes.append(size)
    return nodes


def quicklist_usage(node_bytes: list[int], sz: Sizes) -> int:
    """A quicklist whose nodes hold listpacks (or plain elements) of these byte sizes."""
    return quicklist_nodes_usage(len(node_bytes), sum(map(sz.alloc, node_bytes)))


def quicklist_nodes_usage(nodes: int, allocated: int) -> int:
    """A quicklist of ``nodes`` nodes whose listpacks' allocations are ``allocated``."""
    return ROBJ + QUICKLIST + QUICKLIST_NODE * nodes + allocated


def list_node_limits(cfg: Config) -> tuple[int, int]:
    """(bytes, elements) a quicklist node may hold by ``list-max-listpack-size``
    (``quicklistNodeLimit``: a negative fill limits the bytes, a positive the elements)."""
    fill = cfg.list_max_listpack_size
    if fill < 0:
        return QUICKLIST_NODE_BYTES[min(-fill, len(QUICKLIST_NODE_BYTES)) - 1], _NEVER
    return _NEVER, max(fill, 1)


def list_usage(node_bytes: list[int], elements: int, cfg: Config, sz: Sizes, packed: bool = True) -> tuple[int, str]:
    """A list loaded as these quicklist nodes (listpacks of these bytes; ``packed``: the
    one node is no plain one): a server of Redis 7.2 or later (``cfg.set_listpacks``) holds
    a list of one packed node within the node's limits as that listpack
    (``listTypeTryConvertQuicklist``), else a quicklist."""
    if cfg.set_listpacks and packed and len(node_bytes) == 1:
        most_bytes, most_elements = list_node_limits(cfg)
        if node_bytes[0] <= most_bytes and elements <= most_elements:
            return ROBJ + sz.alloc(node_bytes[0]), "listpack"
    return quicklist_usage(node_bytes, sz), "quicklist"


def stream_usage(meta: dict, sz: Sizes) -> int:
    """A stream: ``meta`` is the reader's (its node keys and listpack bytes, its groups
    with their PELs and consumers)."""
    keys = meta.get("node_keys", [])
    total = ROBJ + STREAM + STREAM_ID * len(keys) + RAX_NODE_ESTIMATE * rax_nodes(keys)
    total += sum(sz.alloc(b) for b in meta.get("node_bytes", []))
    for g in meta.get("groups", []) if isinstance(meta.get("groups"), list) else []:
        pel = [_id_bytes(e["id"]) for e in g["pel"]]
        total += STREAM_CG + STREAM_NACK * len(pel) + _rax_usage(pel)
        for c in g["consumers"]:
            total += STREAM_CONSUMER + len(c["name"] or b"") + _rax_usage([_id_bytes(i) for i in c["pel"]])
    return total


def _rax_usage(keys: list[bytes]) -> int:
    return STREAM_ID * len(keys) + RAX_NODE_ESTIMATE * rax_nodes(keys)


def _id_bytes(sid) -> bytes:
    ms, seq = sid
    return ms.to_bytes(8, "big") + seq.to_bytes(8, "big")


# --------------------------------------------------------------------------- a key

@dataclass(slots=True)
class KeyMemory:
    """A key's memory: ``usage`` as ``MEMORY USAGE key SAMPLES 0`` counts it, ``expires``
    (its expires dict entry), the ``encoding`` the server holds it in, and the length of
    its largest element (``largest``, as the readers give it: a member's, field's or value's
    bytes, an integer's decimal text; None where there is none: a stream, a module's value)."""

    usage: int
    expires: int
    encoding: str
    largest: int | None

    @property
    def total(self) -> int:
        return self.usage + self.expires


def key_overhead(key: bytes, sz: Sizes) -> int:
    """The key's entry in the db's dict and its name."""
    return DICT_ENTRY + sz.sds(len(key))


def key_figures(rec, cfg: Config = DEFAULTS) -> tuple[int, int, str, int | None]:
    """The :class:`KeyMemory` figures of a key record (usage, expires, encoding, largest),
    as a tuple: the reports make the object only for the keys they keep."""
    got = rec.extra.get("memory") if rec.value is None else None
    if got is not None:
        return got[0], EXPIRES_ENTRY if rec.expire_ms is not None else 0, got[1], got[2]
    usage, encoding, largest = value_usage(rec, cfg)
    return (key_overhead(rec.key, cfg.sizes) + usage, EXPIRES_ENTRY if rec.expire_ms is not None else 0,
            encoding, largest)


def key_memory(rec, cfg: Config = DEFAULTS) -> KeyMemory:
    """The memory of a key record read with its value kept, or measured by the C lane
    (:class:`LaneMeasure`: its sum by this model's rules, in ``extra["memory"]``)."""
    return KeyMemory(*key_figures(rec, cfg))


def _whole(x):
    if x is None:
        return b""
    if isinstance(x, tuple):
        return tuple(b"" if y is None else y for y in x)
    return x


def _longest(items) -> int:
    return max(map(len, items), default=0)


def value_usage(rec, cfg: Config) -> tuple[int, str, int | None]:
    """(bytes, encoding in the server, largest element's length) of a record's value."""
    layout, value, t = rec.vtype.layout, rec.value, rec.type
    sz = cfg.sizes
    if value is None:  # measured by the C lane (LaneMeasure), or not kept, or damaged
        return _shape_usage(rec, sz)
    if isinstance(value, list):  # an element too long to hold, or damaged, counts as empty
        if None in value or (value and type(value[0]) is tuple):  # (else each is whole already)
            value = [_whole(x) for x in value]
    if t == "string" and layout == "string":
        length = len(value)
        usage, enc = string_usage(value, length, sz)
        return usage, enc, length
    blob = rec.extra.get("packed_bytes") if layout in ("listpack_hash", "listpack_zset", "intset",
                                                       "listpack_set") else None
    if t == "hash" and layout in ("hash", "ziplist_hash", "listpack_hash", "zipmap"):
        usage, enc = hash_usage(value, cfg, packed=layout != "hash", blob=blob)
        return usage, enc, _longest(x for p in value for x in p[:2])
    if t == "set" and layout in ("set", "intset", "listpack_set"):
        usage, enc = set_usage(value, cfg, intset=layout == "intset", blob=blob, listpack=layout == "listpack_set")
        return usage, enc, _longest(value)
    if t == "zset" and layout in ("zset", "zset2", "ziplist_zset", "listpack_zset"):
        usage, enc = zset_usage(value, cfg, packed=layout not in ("zset", "zset2"), blob=blob)
        return usage, enc, _longest(m for m, _ in value)
    if t == "list":
        nodes = rec.extra.get("node_bytes")
        if layout == "quicklist2" and nodes is not None:
            # (a plain node holds its one element as it is; a listpack of one is longer)
            plain = len(nodes) == 1 and len(value) == 1 and nodes[0] == len(value[0])
            return (*list_usage(nodes, len(value), cfg, sz, packed=not plain), _longest(value))
        if layout == "quicklist" and rec.extra.get("node_entries") is not None:
            sizes, at = [], 0
            for n in rec.extra["node_entries"]:
                if n:
                    sizes.append(listpack_bytes(value[at:at + n]))
                at += n
            return (*list_usage(sizes, len(value), cfg, sz), _longest(value))
        if layout == "list":  # (rdbLoadObject tries a listpack of it; an old ziplist stays a quicklist)
            return (*list_usage(quicklist_nodes(value, cfg), len(value), cfg, sz), _longest(value))
        return quicklist_usage(quicklist_nodes(value, cfg), sz), "quicklist", _longest(value)
    if t == "stream" and isinstance(rec.extra.get("stream"), dict):
        return stream_usage(rec.extra["stream"], sz), "stream", None
    return ROBJ + rec.size, rec.encoding, None


# --------------------------------------------------------------------------- measured without values

#: element and allocation sizes the C lane looks up (longer ones leave the key to the readers)
LANE_TABLE = 1 << 16
#: the C lane's rules (``_rdb.c`` ``MR_*``): leave the key to the readers; sum its
#: elements' SDS allocations (left when it has at most ``a`` elements of at most ``b``
#: bytes: the server may pack it); its packed blob's bytes (left past ``a`` elements: the
#: server unpacks it); its quicklist nodes' allocations; a string (its bytes given up to
#: ``a``); a set's elements' allocations (left when it has at most ``a`` elements that all
#: look like decimal integers: the server may make it an intset, as_int decides; or when
#: it has at most ``b``, which a server of set listpacks may pack); a stream's nodes,
#: consumer groups and consumers
MR_DECLINE, MR_ELEMENTS, MR_PACKED, MR_NODES, MR_STRING, MR_SET, MR_STREAM = range(7)
_NEVER = (1 << 63) - 1
#: the encodings the lane names (a rule's ``enc`` is an index here; a string's three from ``int``)
LANE_ENCODINGS = ("int", "embstr", "raw", "hashtable", "skiplist", "listpack", "intset", "quicklist", "stream")
#: a rule's figures, each an int64 (``_rdb.c`` ``Rule``): mode, a, b, then the sum the lane
#: makes of a key it measures: ``base`` + ``slot`` x the dict's slots (:func:`dict_slots`) +
#: ``node`` x its quicklist nodes + the allocations summed + ``elem`` (a float, apart) x its
#: elements, rounded as :func:`round` rounds; and the index of its encoding
RULE_FIELDS = ("mode", "a", "b", "base", "slot", "node", "enc", "spare")


def steps(f, n: int) -> list[int]:
    """``[f(0), ..., f(n - 1)]`` of a nondecreasing ``f`` (a size class: ``jemalloc``,
    ``sds_alloc``), asked only about its steps (found by doubling, then halving)."""
    out: list[int] = []
    i = 0
    while i < n:
        v = f(i)
        step = 1
        while i + step < n and f(i + step) == v:
            step *= 2
        lo, hi = i + step // 2, min(i + step, n)  # f(lo) == v; hi is past the run, or n
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if f(mid) == v:
                lo = mid
            else:
                hi = mid
        out += [v] * (lo + 1 - i)
        i = lo + 1
    return out


@lru_cache(maxsize=2)
def _lane_tables(sz: Sizes) -> tuple[bytes, bytes]:
    return (struct.pack(f"<{LANE_TABLE}I", *steps(sz.sds, LANE_TABLE)),
            struct.pack(f"<{LANE_TABLE}I", *steps(sz.alloc, LANE_TABLE)))


#: the lane's model-wide figures (``_rdb.c`` ``MD_*``): a key's entry in the db's dict, the
#: request of an embstr beyond its bytes, the longest embstr, the dict's fewest slots, a
#: stream's (its rax's keys and nodes, a consumer group, a pending entry, a consumer), and
#: the ``robj`` (of a one-node list held as its listpack)
LANE_MODEL = (DICT_ENTRY, ROBJ + EMBSTR_HEADER + 1, EMBSTR_MAX, DICT_MIN_SLOTS, STREAM_ID, RAX_NODE_ESTIMATE,
              STREAM_CG, STREAM_NACK, STREAM_CONSUMER, ROBJ)


def _enc(name: str) -> int:
    return LANE_ENCODINGS.index(name)


def lane_rule(vtype, cfg: Config) -> tuple[tuple[int, ...], float]:
    """What the C lane does with a key of this value type: the :data:`RULE_FIELDS` and the
    float each element adds (the formulas of :func:`hashtable_usage`, :func:`skiplist_usage`,
    :func:`string_usage`, :func:`quicklist_nodes_usage`, :func:`stream_usage`)."""
    table = ROBJ + DICT, DICT_BUCKET, 0, _enc("hashtable")
    if vtype is None:
        return (MR_DECLINE, 0, 0, 0, 0, 0, 0, 0), 0.0
    layout, t = vtype.layout, vtype.type
    if layout == "string" and t == "string":
        return (MR_STRING, INT_STRING_MAX, 0, ROBJ, 0, 0, _enc("int"), 0), 0.0
    if layout == "hash":
        return (MR_ELEMENTS, cfg.hash_max_listpack_entries, cfg.hash_max_listpack_value, *table, 0), float(DICT_ENTRY)
    if layout == "set" and t == "set":  # (a server of set listpacks may pack a small one)
        return ((MR_SET, cfg.set_max_intset_entries, cfg.set_max_listpack_entries if cfg.set_listpacks else 0, *table, 0),
                float(DICT_ENTRY))
    if layout == "zset2":
        sz = cfg.sizes
        fixed = ROBJ + ZSET + ZSKIPLIST + DICT + sz.zskiplist_header
        return ((MR_ELEMENTS, cfg.zset_max_listpack_entries, cfg.zset_max_listpack_value, fixed, DICT_BUCKET, 0,
                 _enc("skiplist"), 0), DICT_ENTRY + sz.zskiplist_node)
    packed = {"listpack_set": cfg.set_max_listpack_entries, "intset": cfg.set_max_intset_entries,
              "listpack_hash": cfg.hash_max_listpack_entries, "listpack_zset": cfg.zset_max_listpack_entries}
    if layout in packed:
        enc = _enc("intset" if layout == "intset" else "listpack")
        return (MR_PACKED, packed[layout], 0, ROBJ, 0, 0, enc, 0), 0.0
    if layout == "quicklist2":  # (a: the bytes, b: the elements of a one-node list a 7.2+ server packs)
        most_bytes, most_elements = list_node_limits(cfg) if cfg.set_listpacks else (-1, -1)
        return (MR_NODES, most_bytes, most_elements, ROBJ + QUICKLIST, 0, QUICKLIST_NODE, _enc("quicklist"),
                _enc("listpack")), 0.0
    if t == "stream" and layout.startswith("stream"):
        return (MR_STREAM, 0, 0, ROBJ + STREAM, 0, 0, _enc("stream"), 0), 0.0
    return (MR_DECLINE, 0, 0, 0, 0, 0, 0, 0), 0.0


class LaneMeasure:
    """What the memory model asks of the C record lane (``RdbParser(measure=...)``): given
    the lane's value type of each type byte, the tables, rules and figures ``scan`` takes."""

    def __init__(self, cfg: Config = DEFAULTS) -> None:
        self.cfg = cfg
        self._made: dict[tuple, tuple] = {}

    def __call__(self, vtypes: list, version: int = 0) -> tuple:
        """The tables and rules for a file of RDB ``version`` whose type bytes mean ``vtypes``."""
        made = (version, *map(id, vtypes))
        got = self._made.get(made)
        if got is None:
            cfg = for_version(self.cfg, version)
            rules = [lane_rule(v, cfg) for v in vtypes]
            got = (*_lane_tables(cfg.sizes), struct.pack(f"<{len(RULE_FIELDS) * 256}q", *(x for r, _ in rules for x in r)),
                   struct.pack("<256d", *(e for _, e in rules)), struct.pack(f"<{len(LANE_MODEL)}q", *LANE_MODEL),
                   LANE_ENCODINGS)
            self._made[made] = got
        return got


def _shape_usage(rec, sz: Sizes) -> tuple[int, str, int | None]:
    """A record the C lane measured (what ``extra`` holds), else what the file holds of it."""
    extra, vtype = rec.extra, rec.vtype
    layout = vtype.layout
    if layout == "string" and vtype.type == "string" and "value_length" in extra:
        length = extra["value_length"]
        if rec.encoding == "int":
            return ROBJ, "int", length
        usage, enc = string_usage(extra.get("head"), length, sz)
        return usage, enc, length
    n = rec.elements or 0
    if "alloc" in extra and layout in ("hash", "set"):  # MR_ELEMENTS, MR_SET
        return hashtable_usage(n, extra["alloc"]), "hashtable", extra["largest"]
    if "alloc" in extra and layout == "zset2":
        return skiplist_usage(n, extra["alloc"], sz), "skiplist", extra["largest"]
    if "packed_bytes" in extra:
        return (ROBJ + sz.alloc(extra["packed_bytes"]), "intset" if layout == "intset" else "listpack",
                extra.get("largest"))
    if "alloc" in extra and layout == "quicklist2":
        return quicklist_nodes_usage(extra.get("nodes", 0), extra["alloc"]), "quicklist", extra.get("largest")
    return ROBJ + rec.size, rec.encoding, None
