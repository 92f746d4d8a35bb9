"""RDB's primitive encodings (spec/rdb.md §3): lengths, strings (plain, integer-encoded,
LZF), doubles, times and stream IDs.

Each reader takes the buffer and an index into it and returns ``(value, next index)``.
When the buffer ends first it raises :class:`NeedMore` with the index it needs to reach,
so that a streaming caller waits for exactly that many bytes; when the bytes cannot be
what the format says it raises :class:`Corrupt`; a string longer than the caller's cap
raises :class:`TooLong` with where its bytes start, so that they can be passed over unread.
"""

from __future__ import annotations

import struct

from .lzf import LzfError, check, decompress
from .native import C

#: the first byte's top bits of a length (§3.1)
LEN_6, LEN_14, LEN_32, LEN_64, LEN_ENC = 0, 1, 0x80, 0x81, 3
#: the low bits of an "encoded" string's first byte (``11xxxxxx``)
ENC_INT8, ENC_INT16, ENC_INT32, ENC_LZF = 0, 1, 2, 3

_I16 = struct.Struct("<h").unpack_from
_I32 = struct.Struct("<i").unpack_from
_I64 = struct.Struct("<q").unpack_from
_U32BE = struct.Struct(">I").unpack_from
_U64BE = struct.Struct(">Q").unpack_from
_U32 = struct.Struct("<I").unpack_from
_U64 = struct.Struct("<Q").unpack_from
_F64 = struct.Struct("<d").unpack_from
_F32 = struct.Struct("<f").unpack_from


class NeedMore(Exception):
    """The buffer ends before the item: ``args[0]`` is the index it needs to reach."""


class Corrupt(ValueError):
    """The bytes cannot be what the format says: ``args[0]`` says why, ``args[1]`` where
    (an index into what was decoded)."""

    @property
    def at(self) -> int:
        return self.args[1] if len(self.args) > 1 else 0

    @property
    def resume(self) -> int | None:
        """Where decoding can go on after the damage (the end of a string whose extent is
        known), or None when it cannot."""
        return self.args[2] if len(self.args) > 2 else None


class TooLong(Exception):
    """A string claims more bytes than the cap: ``length`` bytes from ``start`` (the index
    after its header), ``what`` names the claim."""

    def __init__(self, length: int, start: int, what: str) -> None:
        super().__init__(length, start, what)
        self.length, self.start, self.what = length, start, what


class LzfOverBudget(TooLong):
    """An LZF string would inflate past the input's budget (see :class:`Cap`): its
    ``length`` compressed bytes from ``start`` are passed over; ``inflated``, what it says it
    inflates to."""

    def __init__(self, length: int, start: int, inflated: int) -> None:
        super().__init__(length, start, "LZF string")
        self.inflated = inflated


class Cap(int):
    """The longest string a decoder holds (an int, as every ``cap`` is), which also carries
    the input's inflation budget: ``inflates(n)``, set by the decoder, charges the ``n``
    bytes an LZF string inflates to and says whether they were within it."""

    inflates = None


def _within_budget(cap, ulen: int, clen: int, q: int) -> None:
    inflates = getattr(cap, "inflates", None)
    if inflates is not None and not inflates(ulen):
        raise LzfOverBudget(clen, q, ulen)


def read_len(buf, p: int) -> tuple[int, int]:
    """A plain length (§3.1); an encoded-string marker here is corrupt."""
    n = len(buf)
    if p >= n:
        raise NeedMore(p + 1)
    b = buf[p]
    kind = b >> 6
    if kind == 0:
        return b, p + 1
    if kind == 1:
        if p + 2 > n:
            raise NeedMore(p + 2)
        return ((b & 0x3F) << 8) | buf[p + 1], p + 2
    if b == LEN_32:
        if p + 5 > n:
            raise NeedMore(p + 5)
        return _U32BE(buf, p + 1)[0], p + 5
    if b == LEN_64:
        if p + 9 > n:
            raise NeedMore(p + 9)
        return _U64BE(buf, p + 1)[0], p + 9
    if kind == LEN_ENC:
        raise Corrupt(f"a length was expected, byte 0x{b:02x} marks an encoded string", p)
    raise Corrupt(f"byte 0x{b:02x} is no length encoding", p)


def string_encoding(buf, p: int) -> str:
    """What a string at ``p`` is stored as: "int", "lzf" or "raw" (the first byte only)."""
    b = buf[p]
    if b >> 6 != LEN_ENC:
        return "raw"
    return "lzf" if b & 0x3F == ENC_LZF else "int"


def read_string(buf, p: int, cap: int) -> tuple[bytes, int]:
    """A string (§3.2): plain, integer-encoded (given back in decimal, as Redis does) or LZF."""
    n = len(buf)
    if p >= n:
        raise NeedMore(p + 1)
    b = buf[p]
    if b < 0x40:  # the common case first: a short plain string
        end = p + 1 + b
        if end > n:
            raise NeedMore(end)
        return bytes(buf[p + 1:end]), end
    if b >> 6 == LEN_ENC:
        enc = b & 0x3F
        if enc == ENC_INT8:
            if p + 2 > n:
                raise NeedMore(p + 2)
            v = buf[p + 1]
            return str(v - 256 if v > 127 else v).encode(), p + 2
        if enc == ENC_INT16:
            if p + 3 > n:
                raise NeedMore(p + 3)
            return str(_I16(buf, p + 1)[0]).encode(), p + 3
        if enc == ENC_INT32:
            if p + 5 > n:
                raise NeedMore(p + 5)
            return str(_I32(buf, p + 1)[0]).encode(), p + 5
        if enc == ENC_LZF:
            ulen, q, end = _lzf_extent(buf, p, cap)
            _within_budget(cap, ulen, end - q, q)
            try:
                return decompress(buf[q:end], ulen), end
            except LzfError as exc:
                raise Corrupt(f"LZF string: {exc}", p, end) from None
        raise Corrupt(f"string encoding 0x{b:02x} is none of int8, int16, int32, LZF", p)
    size, q, end = _plain_extent(buf, p, cap)
    return bytes(buf[q:end]), end


def _lzf_extent(buf, p: int, cap: int) -> tuple[int, int, int]:
    """(inflated length, data start, end) of the LZF string whose encoding byte is at ``p``."""
    clen, q = read_len(buf, p + 1)
    ulen, q = read_len(buf, q)
    if clen > cap:
        raise TooLong(clen, q, "compressed string")
    if ulen > cap:
        raise TooLong(clen, q, f"string compressed to {clen:,} bytes from")
    end = q + clen
    if end > len(buf):
        raise NeedMore(end)
    return ulen, q, end


def _plain_extent(buf, p: int, cap: int) -> tuple[int, int, int]:
    """(length, data start, end) of the length-prefixed string at ``p``."""
    size, q = read_len(buf, p)
    if size > cap:
        raise TooLong(size, q, "string")
    end = q + size
    if end > len(buf):
        raise NeedMore(end)
    return size, q, end


def skip_string(buf, p: int, cap: int) -> tuple[int, int]:
    """(length, next index) of the string at ``p``: the length of what :func:`read_string`
    gives, without making it (LZF data is checked, not inflated); raises as it does."""
    n = len(buf)
    if p >= n:
        raise NeedMore(p + 1)
    b = buf[p]
    if b < 0x40:
        end = p + 1 + b
        if end > n:
            raise NeedMore(end)
        return b, end
    if b >> 6 == LEN_ENC:
        if b & 0x3F != ENC_LZF:
            raw, end = read_string(buf, p, cap)
            return len(raw), end
        ulen, q, end = _lzf_extent(buf, p, cap)
        _within_budget(cap, ulen, end - q, q)
        with memoryview(buf) as whole, whole[q:end] as data:
            try:
                check(data, ulen)
            except LzfError as exc:
                raise Corrupt(f"LZF string: {exc}", p, end) from None
        return ulen, end
    size, _, end = _plain_extent(buf, p, cap)
    return size, end


def skip_strings(buf, p: int, n: int, cap: int, tail: int = 0) -> tuple[int, int]:
    """(index, count) after as many of ``n`` strings in a row from ``p`` (each followed by
    ``tail`` bytes: a ZSET_2 score) as :func:`skip_string` passes over without a complaint
    and the buffer holds whole; it stops before the first other one, for the caller to read
    its own way. In C plain and integer-encoded ones (LZF ones are read one at a time, their
    inflated bytes charged to the input's budget: see :class:`Cap`); in Python the short
    plain strings only."""
    if C is not None:
        return C.skip_strings(buf, p, min(n, 1 << 62), cap, tail)
    done, end = 0, len(buf)
    while done < n and p < end:
        b = buf[p]
        if b >= 0x40:
            break
        q = p + 1 + b + tail
        if q > end:
            break
        p = q
        done += 1
    return p, done


def take_strings(buf, p: int, n: int, cap: int, items: list) -> tuple[int, int]:
    """:func:`skip_strings`'s strings, each appended to ``items`` as :func:`read_string`
    reads it (in C every encoding; in Python the short plain strings only)."""
    if C is not None:
        return C.skip_strings(buf, p, min(n, 1 << 62), cap, 0, items)
    done, end = 0, len(buf)
    put = items.append
    while done < n and p < end:
        b = buf[p]
        if b >= 0x40 or p + 1 + b > end:
            break
        put(bytes(buf[p + 1:p + 1 + b]))
        p += 1 + b
        done += 1
    return p, done


def string_header(buf, p: int) -> tuple[int, int, bool]:
    """(bytes stored, index of the first, compressed) of the string at ``p``, for passing
    over it unread; integer-encoded strings give their payload."""
    n = len(buf)
    if p >= n:
        raise NeedMore(p + 1)
    b = buf[p]
    if b >> 6 == LEN_ENC:
        enc = b & 0x3F
        if enc in (ENC_INT8, ENC_INT16, ENC_INT32):
            return (1, 2, 4)[enc], p + 1, False
        if enc == ENC_LZF:
            clen, q = read_len(buf, p + 1)
            _, q = read_len(buf, q)
            return clen, q, True
        raise Corrupt(f"string encoding 0x{b:02x} is none of int8, int16, int32, LZF", p)
    size, q = read_len(buf, p)
    return size, q, False


def read_bytes(buf, p: int, size: int) -> tuple[bytes, int]:
    """``size`` raw bytes."""
    end = p + size
    if end > len(buf):
        raise NeedMore(end)
    return bytes(buf[p:end]), end


def read_u8(buf, p: int) -> tuple[int, int]:
    if p >= len(buf):
        raise NeedMore(p + 1)
    return buf[p], p + 1


def read_u32(buf, p: int) -> tuple[int, int]:
    """4 bytes little-endian unsigned (Dragonfly's masks, ids and sizes)."""
    if p + 4 > len(buf):
        raise NeedMore(p + 4)
    return _U32(buf, p)[0], p + 4


def read_u64(buf, p: int) -> tuple[int, int]:
    """8 bytes little-endian unsigned (Dragonfly's journal offset)."""
    if p + 8 > len(buf):
        raise NeedMore(p + 8)
    return _U64(buf, p)[0], p + 8


def read_ms(buf, p: int) -> tuple[int, int]:
    """A millisecond time: 8 bytes little-endian signed (§3.3)."""
    if p + 8 > len(buf):
        raise NeedMore(p + 8)
    return _I64(buf, p)[0], p + 8


def read_seconds(buf, p: int) -> tuple[int, int]:
    """A second time: 4 bytes little-endian signed (EXPIRETIME, §3.3)."""
    if p + 4 > len(buf):
        raise NeedMore(p + 4)
    return _I32(buf, p)[0], p + 4


def read_binary_double(buf, p: int) -> tuple[float, int]:
    """8-byte IEEE-754 little-endian (ZSET_2 scores, module doubles)."""
    if p + 8 > len(buf):
        raise NeedMore(p + 8)
    return _F64(buf, p)[0], p + 8


def read_binary_float(buf, p: int) -> tuple[float, int]:
    """4-byte IEEE-754 little-endian (module floats)."""
    if p + 4 > len(buf):
        raise NeedMore(p + 4)
    return _F32(buf, p)[0], p + 4


#: the string double's special lengths (§3.3)
_SPECIAL_DOUBLES = {253: float("nan"), 254: float("inf"), 255: float("-inf")}


def read_string_double(buf, p: int) -> tuple[float, int]:
    """A ZSET (type 3) score: a length byte and that many ASCII characters, or 253/254/255
    for NaN, +inf, -inf."""
    if p >= len(buf):
        raise NeedMore(p + 1)
    n = buf[p]
    if n in _SPECIAL_DOUBLES:
        return _SPECIAL_DOUBLES[n], p + 1
    end = p + 1 + n
    if end > len(buf):
        raise NeedMore(end)
    text = bytes(buf[p + 1:end])
    try:
        return float(text.decode("ascii")), end
    except ValueError:
        raise Corrupt(f"score {text[:40]!r} is not a number", p) from None


def read_stream_id(buf, p: int) -> tuple[tuple[int, int], int]:
    """A raw stream ID: 16 bytes, ms and seq as big-endian u64 (PEL entries, node keys)."""
    if p + 16 > len(buf):
        raise NeedMore(p + 16)
    return (_U64BE(buf, p)[0], _U64BE(buf, p + 8)[0]), p + 16


def stream_id_of(raw: bytes) -> tuple[int, int]:
    """The ID a 16-byte radix key names."""
    if len(raw) != 16:
        raise Corrupt(f"a stream node key is 16 bytes, this one {len(raw)}", 0)
    return _U64BE(raw, 0)[0], _U64BE(raw, 8)[0]


def read_ll_string(buf, p: int, cap: int) -> tuple[int, int]:
    """A long long written as a string (Dragonfly's member expiry, §8.3)."""
    raw, q = read_string(buf, p, cap)
    try:
        return int(raw), q
    except ValueError:
        raise Corrupt(f"{raw[:40]!r} is not an integer", p) from None
