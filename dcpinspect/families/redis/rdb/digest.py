"""Digests of RDB data as the server computes them (``DEBUG DIGEST-VALUE key`` and ``DEBUG
DIGEST``, redis/src/debug.c ``xorObjectDigest`` and ``computeDatasetDigest``), from the
values the decoder keeps, so that a snapshot can be compared with a live server, a replica
or another snapshot without loading it.

The server's two ways of adding data to a 20-byte digest: ``xor`` (SHA1 of the data XORed
in: the order of elements does not count: sets, a hash's fields, a zset's members, the keys
of a db) and ``mix`` (XOR, then the digest becomes the SHA1 of itself: the order counts:
a list, a stream). A key's digest: mix of its type (4 bytes, big-endian), then by type:

- string: mix of its bytes (an integer as its decimal text);
- list: mix of each element, in order;
- set: xor of each member;
- zset: xor, for each member, of its own digest (from zero: mix of the member, mix of its
  score as text);
- hash: xor, for each field, of its own digest (from zero: mix of the field, mix of the
  value, and xor of ``!!hexpire!!`` when the field has an expiry: Redis 7.4's hash field
  expiry, :data:`FIELD_TTL_COUNTS`);
- stream: mix of each live entry's id as ``ms.seq``, then of each field and value;
  consumer groups do not count;
- module: the module's own digest, which only the module knows: None here;

then xor of ``!!expire!!`` when the key has an expiry. The snapshot's digest: for each db
holding keys, in order, the running digest mixed with the db number (4 bytes, big-endian),
then the xor of each key's own digest (from zero: mix of its name, then its value's as
above, going on from there).

Whose digest a field's expiry enters: Redis 7.4 and later's (``hashTypeNext`` gives each
field's expiry to ``xorObjectDigest``); Valkey 9's ``HASH_2`` fields expire too, but
Valkey's ``debug.c`` leaves the expiry out, so its digest is the fields' alone. Dragonfly
has no ``DEBUG DIGEST``: its data's digests are what a Redis 7.4 holding the same data
says (a hash's field expiry counts; a set's member expiry, which Redis has not, does not),
for comparing it with a Redis, not with Dragonfly itself.

A score's text is the server version's: ``%.17g`` before Redis 7.2, the shortest digits
(:func:`.data.redis_double`) since; the snapshot's ``redis-ver`` aux field says which.
"""

from __future__ import annotations

from hashlib import sha1

from .data import g17, redis_double
from .native import C
from .records import AuxRecord, KeyRecord

#: the server's type numbers (OBJ_STRING ...)
OBJ_TYPES = {"string": 0, "list": 1, "set": 2, "zset": 3, "hash": 4, "module": 5, "stream": 6}
#: the hash layouts whose field expiry enters the digest (Redis's HFE; Dragonfly's, as Redis would)
FIELD_TTL_COUNTS = frozenset(("hash_metadata", "hash_metadata_pre_ga", "listpack_ex", "listpack_ex_pre_ga",
                              "df_hash_expiry"))
_HEXPIRE = int.from_bytes(sha1(b"!!hexpire!!").digest(), "big")
_EXPIRE = int.from_bytes(sha1(b"!!expire!!").digest(), "big")
_TYPE_H = {t: int.from_bytes(sha1(n.to_bytes(4, "big")).digest(), "big") for t, n in OBJ_TYPES.items()}
_FROM = int.from_bytes


def _h(data: bytes) -> int:
    return _FROM(sha1(data).digest(), "big")


def _mix(d: int, data: bytes) -> int:
    return _FROM(sha1((d ^ _FROM(sha1(data).digest(), "big")).to_bytes(20, "big")).digest(), "big")


def _mixh(d: int, h: int) -> int:
    return _FROM(sha1((d ^ h).to_bytes(20, "big")).digest(), "big")


def scores_of(redis_ver: bytes | str | None):
    """How a score is written into digests by the server of ``redis_ver`` (an aux field)."""
    if isinstance(redis_ver, bytes):
        redis_ver = redis_ver.decode("ascii", "replace")
    try:
        major, minor = (int(x) for x in (redis_ver or "").split(".")[:2])
    except ValueError:
        return redis_double
    return g17 if (major, minor) < (7, 2) else redis_double


def _b(v) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode()


def _sha1_each(elements) -> bytes:
    """The elements' SHA1s, one after the other."""
    return b"".join(sha1(_b(e)).digest() for e in elements)


def _mix_all(d: bytes, hashes: bytes) -> bytes:
    """``d`` (20 bytes) with each 20-byte SHA1 of ``hashes`` mixed in, in order."""
    n = _FROM(d, "big")
    for i in range(0, len(hashes), 20):
        n = _mixh(n, _FROM(hashes[i:i + 20], "big"))
    return n.to_bytes(20, "big")


def _xor_all(elements, pairs: bool, flag: bytes | None = None, score=None) -> bytes:
    """The xor of the elements' SHA1s (a tuple: of its first item); ``pairs``: of each
    ``(a, b[, expiry])``'s own digest from zero, ``mix(mix(0, a), b)`` (``b`` through
    ``score`` when given), xored with ``flag`` when the expiry is not None."""
    acc = 0
    flag_n = _FROM(flag, "big") if flag is not None else 0
    for e in elements:
        if not pairs:
            acc ^= _h(_b(e[0] if isinstance(e, tuple) else e))
            continue
        ed = _mix(_mix(0, _b(e[0])), (score(e[1]).encode() if score is not None else _b(e[1])))
        if len(e) > 2 and e[2] is not None:
            ed ^= flag_n
        acc ^= _h(ed.to_bytes(20, "big"))
    return acc.to_bytes(20, "big")


#: the element loops in C (``_rdb.digest_mix``, ``digest_xor``) when built: the same
#: digests, without a Python object per SHA1
SHA1_EACH, MIX_ALL, XOR_ALL = ((C.sha1_each, C.digest_mix, C.digest_xor) if C is not None
                               else (_sha1_each, _mix_all, _xor_all))
_HEXPIRE_B = _HEXPIRE.to_bytes(20, "big")


def digests(rec: KeyRecord, score=redis_double, expiry: bool = True) -> tuple[int, int] | None:
    """(``DEBUG DIGEST-VALUE`` of the key, its part of ``DEBUG DIGEST``) as integers; None for
    a module's value or a value the decoder did not keep whole. ``expiry`` False: as if the
    key had no expiry (its value alone)."""
    t = rec.vtype.type
    if t not in OBJ_TYPES or t == "module":
        return None
    v = rec.value
    if v is None and not (t == "stream" and rec.elements == 0):
        return None
    if t == "hash" and rec.vtype.layout in ("hash_tmpl_lp_ref", "hash_tmpl_array_ref") \
            and any(f is None for f, _ in v):
        return None
    ordered = b""  # the SHA1s of the elements mixed in turn
    unordered = 0
    if t == "string":
        ordered = sha1(v).digest()
    elif t == "list":
        ordered = SHA1_EACH(v)
    elif t == "stream":
        elements = []
        put = elements.append
        for (ms, seq), fields in v or ():
            put(b"%d.%d" % (ms, seq))
            for f, x in fields:
                put(f)
                put(x)
        ordered = SHA1_EACH(elements)
    elif t == "set":
        unordered = _FROM(XOR_ALL(v, False), "big")
    elif t == "zset":
        unordered = _FROM(XOR_ALL(v, True, None, score), "big")
    else:  # hash
        flag = _HEXPIRE_B if rec.vtype.layout in FIELD_TTL_COUNTS else None  # (Valkey's HASH_2: its TTLs do not count)
        unordered = _FROM(XOR_ALL(v, True, flag), "big")
    tail = unordered ^ (_EXPIRE if expiry and rec.expire_ms is not None else 0)
    type_h = _TYPE_H[t]

    def from_(d: int) -> int:
        start = _mixh(d, type_h).to_bytes(20, "big")
        return _FROM(MIX_ALL(start, ordered) if ordered else start, "big") ^ tail

    return from_(0), _h(from_(_mix(0, rec.key)).to_bytes(20, "big"))


def hexdigest(d: int | None) -> str | None:
    return None if d is None else f"{d:040x}"


class SnapshotDigest:
    """``DEBUG DIGEST`` of a snapshot, added to key by key; ``unknown``: keys whose digest
    could not be made (module values), which leave it incomplete."""

    def __init__(self) -> None:
        self.per_db: dict[int, int] = {}
        self.unknown = 0

    def add(self, db: int, part: int | None) -> None:
        """A key of ``db`` whose part of the digest is ``part`` (None: not known)."""
        if part is None:
            self.unknown += 1
            return
        self.per_db[db] = self.per_db.get(db, 0) ^ part

    def value(self) -> int:
        final = 0
        for db in sorted(self.per_db):
            final = _mix(final, db.to_bytes(4, "big")) ^ self.per_db[db]
        return final

    def hexdigest(self) -> str:
        return f"{self.value():040x}"


class Digester:
    """The digests of one snapshot's keys as they come: each key's (``key``), and the
    snapshot's (``snapshot``), with scores written as the server named by the snapshot's
    ``redis-ver`` aux field writes them (``see`` each aux record)."""

    def __init__(self) -> None:
        self.score = redis_double
        self.snapshot = SnapshotDigest()

    def see(self, rec) -> None:
        if type(rec) is AuxRecord and rec.key == b"redis-ver":
            self.score = scores_of(rec.value)

    def key(self, rec: KeyRecord) -> str | None:
        """``DEBUG DIGEST-VALUE`` of the key (None: not known), added to the snapshot's."""
        both = digests(rec, self.score)
        self.snapshot.add(rec.db, None if both is None else both[1])
        return None if both is None else f"{both[0]:040x}"
