"""LZF decompression, as Redis' ``lzf_d.c`` (spec/rdb.md §3.2): a control byte below 32
copies that many plus one literal bytes, any other is a back-reference of ``(c >> 5) + 2``
bytes (7 taking a length byte more) at distance ``((c & 0x1f) << 8) + next + 1``."""

from __future__ import annotations

from .native import C


class LzfError(ValueError):
    """The compressed bytes do not give ``ulen`` bytes: the message says where they fail."""


def decompress(data: bytes | bytearray | memoryview, ulen: int) -> bytes:
    """Exactly ``ulen`` bytes from ``data``; never makes more than ``ulen`` bytes."""
    if C is not None:
        out = C.lzf(data, ulen)
        if out is not None:
            return out
    return decompress_python(bytes(data), ulen)


def check(data: bytes | bytearray | memoryview, ulen: int) -> None:
    """Raise :class:`LzfError` where :func:`decompress` would, without making the bytes."""
    if C.lzf_ok(data, ulen) if C is not None else _fits(data, ulen):
        return
    decompress_python(bytes(data), ulen)


def _fits(data, ulen: int) -> bool:
    """Whether the tokens of ``data`` make exactly ``ulen`` bytes (:func:`decompress_python`'s
    checks, counting the bytes instead of making them)."""
    i, n, o = 0, len(data), 0
    while i < n:
        c = data[i]
        if c < 32:
            i += c + 2
            o += c + 1
            continue
        length = c >> 5
        if length == 7:
            if i + 1 >= n:
                return False
            i += 1
            length += data[i]
        if i + 1 >= n or ((c & 0x1F) << 8) + data[i + 1] + 1 > o:
            return False
        i += 2
        o += length + 2
    return i == n and o == ulen


def decompress_python(data: bytes, ulen: int) -> bytes:
    """:func:`decompress` in Python alone: the reference, and the messages."""
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        c = data[i]
        i += 1
        if c < 32:
            run = c + 1
            if i + run > n:
                raise LzfError(f"literal run of {run} bytes at {i - 1} passes the end of the {n} compressed bytes")
            if len(out) + run > ulen:
                raise LzfError(f"literal run at {i - 1} makes more than the {ulen} bytes promised")
            out += data[i:i + run]
            i += run
            continue
        length = c >> 5
        if length == 7:
            if i >= n:
                raise LzfError(f"back-reference at {i - 1} cut short")
            length += data[i]
            i += 1
        if i >= n:
            raise LzfError(f"back-reference at {i - 1} cut short")
        back = ((c & 0x1F) << 8) + data[i] + 1
        i += 1
        length += 2
        start = len(out) - back
        if start < 0:
            raise LzfError(f"back-reference at {i - 2} reaches {back} bytes back, before the start")
        if len(out) + length > ulen:
            raise LzfError(f"back-reference at {i - 2} makes more than the {ulen} bytes promised")
        if back >= length:
            out += out[start:start + length]
        else:  # overlapping: the copy repeats the last ``back`` bytes
            chunk = out[start:]
            reps, rest = divmod(length, back)
            out += chunk * reps + chunk[:rest]
    if len(out) != ulen:
        raise LzfError(f"decompressed to {len(out)} bytes, {ulen} promised")
    return bytes(out)
