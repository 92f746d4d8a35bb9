"""Build RDB bytes from the layouts of spec/rdb.md, for the tests: lengths, strings, the
packed layouts, records and whole files with their CRC-64 (computed here bit by bit, not
with the decoder's table)."""

from __future__ import annotations

import struct


def crc64_bitwise(data: bytes, crc: int = 0) -> int:
    """CRC-64 Jones, reflected, init 0 (§7), one bit at a time."""
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x95AC9329AC4BC9B5 if crc & 1 else crc >> 1
    return crc


def length(n: int) -> bytes:
    """§3.1, shortest form."""
    if n < 64:
        return bytes([n])
    if n < 1 << 14:
        return bytes([0x40 | n >> 8, n & 0xFF])
    if n < 1 << 32:
        return b"\x80" + struct.pack(">I", n)
    return b"\x81" + struct.pack(">Q", n)


def string(s: bytes | str) -> bytes:
    s = s.encode() if isinstance(s, str) else s
    return length(len(s)) + s


def int_string(v: int) -> bytes:
    """§3.2 integer encodings."""
    if -128 <= v <= 127:
        return b"\xc0" + struct.pack("<b", v)
    if -32768 <= v <= 32767:
        return b"\xc1" + struct.pack("<h", v)
    return b"\xc2" + struct.pack("<i", v)


def lzf_literals(data: bytes) -> bytes:
    """LZF of ``data`` made of literal runs only (valid LZF, no compression)."""
    out = bytearray()
    for i in range(0, len(data), 32):
        chunk = data[i:i + 32]
        out += bytes([len(chunk) - 1]) + chunk
    return bytes(out)


def lzf_string(compressed: bytes, ulen: int) -> bytes:
    return b"\xc3" + length(len(compressed)) + length(ulen) + compressed


def aux(key: str, value: bytes | str) -> bytes:
    return b"\xfa" + string(key) + string(value)


def listpack(entries: list) -> bytes:
    """§6.2: strings and small integers (7-bit uint, 13-bit, int16/32/64)."""
    body = bytearray()
    for e in entries:
        if isinstance(e, int):
            if 0 <= e <= 127:
                enc = bytes([e])
            elif -4096 <= e <= 4095:
                v = e & 0x1FFF
                enc = bytes([0xC0 | v >> 8, v & 0xFF])
            elif -32768 <= e <= 32767:
                enc = b"\xf1" + struct.pack("<h", e)
            elif -(1 << 31) <= e < 1 << 31:
                enc = b"\xf3" + struct.pack("<i", e)
            else:
                enc = b"\xf4" + struct.pack("<q", e)
        else:
            e = e.encode() if isinstance(e, str) else e
            if len(e) < 64:
                enc = bytes([0x80 | len(e)]) + e
            elif len(e) < 4096:
                enc = bytes([0xE0 | len(e) >> 8, len(e) & 0xFF]) + e
            else:
                enc = b"\xf0" + struct.pack("<I", len(e)) + e
        n = len(enc)
        back = bytearray()
        while True:  # most significant 7 bits first, bit 7 set on all but the first byte
            back.insert(0, n & 0x7F)
            n >>= 7
            if not n:
                break
        for i in range(1, len(back)):
            back[i] |= 0x80
        body += enc + bytes(back)
    total = 6 + len(body) + 1
    return struct.pack("<IH", total, min(len(entries), 0xFFFF)) + bytes(body) + b"\xff"


def ziplist(entries: list) -> bytes:
    """§6.1: strings and integers (int16/32/64, immediates 0..12)."""
    body = bytearray()
    prev = 0
    last = 10
    for e in entries:
        pre = bytes([prev]) if prev < 254 else b"\xfe" + struct.pack("<I", prev)
        if isinstance(e, int):
            if 0 <= e <= 12:
                enc = bytes([0xF1 + e])
            elif -32768 <= e <= 32767:
                enc = b"\xc0" + struct.pack("<h", e)
            elif -(1 << 31) <= e < 1 << 31:
                enc = b"\xd0" + struct.pack("<i", e)
            else:
                enc = b"\xe0" + struct.pack("<q", e)
        else:
            e = e.encode() if isinstance(e, str) else e
            enc = (bytes([len(e)]) if len(e) < 64 else bytes([0x40 | len(e) >> 8, len(e) & 0xFF])) + e
        last = 10 + len(body)
        body += pre + enc
        prev = len(pre) + len(enc)
    total = 10 + len(body) + 1
    return struct.pack("<IIH", total, last, len(entries)) + bytes(body) + b"\xff"


def intset(values: list[int], width: int = 2) -> bytes:
    fmt = {2: "h", 4: "i", 8: "q"}[width]
    return struct.pack("<II", width, len(values)) + struct.pack(f"<{len(values)}{fmt}", *values)


def rdb(body: bytes, version: int = 11, checksum: bool = True, magic: bytes | None = None) -> bytes:
    """A whole file: magic, ``body`` (records), EOF and the CRC-64 (0 when not ``checksum``)."""
    head = magic if magic is not None else b"REDIS%04d" % version
    data = head + body + b"\xff"
    if version < 5 and magic is None:
        return data
    return data + struct.pack("<Q", crc64_bitwise(data) if checksum else 0)


def key(type_: int, name: bytes | str, value: bytes, expire_ms: int | None = None) -> bytes:
    prefix = b"\xfc" + struct.pack("<q", expire_ms) if expire_ms is not None else b""
    return prefix + bytes([type_]) + string(name) + value


def zipmap(pairs: list[tuple[bytes, bytes]]) -> bytes:
    """§6.3: a count byte, then each field and value with their lengths (a free byte after
    each value), and 0xff."""
    body = bytearray([min(len(pairs), 254)])
    for field, value in pairs:
        body += bytes([len(field)]) + field + bytes([len(value), 0]) + value
    return bytes(body) + b"\xff"


def stream_node(ms: int, seq: int, fields: list[str], entries: list[tuple[int, int, list]]) -> bytes:
    """§6.4: one stream node as a RDB stream stores it, the 16-byte master ID (big-endian)
    and the listpack: the master entry (count, deleted 0, the fields, 0), then each entry
    with the master's fields (flags SAMEFIELDS, the ID as deltas, the values, lp-count)."""
    items: list = [len(entries), 0, len(fields), *fields, 0]
    for ms_delta, seq_delta, values in entries:
        items += [2, ms_delta, seq_delta, *values, len(values) + 3]
    return string(struct.pack(">QQ", ms, seq)) + string(listpack(items))


def stream(nodes: list[bytes], length: int, last: tuple[int, int]) -> bytes:
    """A STREAM_LISTPACKS value (type 15): the nodes, the stream's length and last ID, no
    consumer groups."""
    return length_(len(nodes)) + b"".join(nodes) + length_(length) + length_(last[0]) + length_(last[1]) + length_(0)


length_ = length


# ------------------------------------------------------------ hashes (and sets) whose fields expire

def _ms(v: int) -> bytes:
    return struct.pack("<Q", v)


def hash_metadata(fields, pre_ga: bool = False) -> bytes:
    """HASH_METADATA (24: a minimum expiry, then each field's TTL relative to it, +1) or its
    pre-GA form (22: absolute TTLs); 0 is no TTL."""
    ttls = [t for _, _, t in fields if t is not None]
    low = min(ttls) if ttls else 0
    out = b"" if pre_ga else _ms(low)
    out += length(len(fields))
    for f, v, t in fields:
        rel = 0 if t is None else (t if pre_ga else t - low + 1)
        out += length(rel) + string(f) + string(v)
    return out


def hash_listpack_ex(fields, pre_ga: bool = False) -> bytes:
    """HASH_LISTPACK_EX (25: a minimum expiry, then a listpack of field, value, TTL) or its
    pre-GA form (23: the listpack alone); TTL 0 is none."""
    ttls = [t for _, _, t in fields if t is not None]
    lp = listpack([x for f, v, t in fields for x in (f, v, t or 0)])
    return (b"" if pre_ga else _ms(min(ttls) if ttls else 0)) + string(lp)


def valkey_hash2(fields) -> bytes:
    """Valkey 9's HASH_2 (22 in a VALKEY file): each field, value and expiry (-1: none)."""
    return length(len(fields)) + b"".join(
        string(f) + string(v) + struct.pack("<q", -1 if t is None else t) for f, v, t in fields)


def dragonfly_hash(fields) -> bytes:
    """Dragonfly's HASH_WITH_EXPIRY (31): each field, value and expiry as seconds since
    Dragonfly's epoch offset, -1 none (as its saver writes it)."""
    out = length(len(fields))
    for f, v, t in fields:
        out += string(f) + string(v) + _df_expiry(t)
    return out


def dragonfly_set(members) -> bytes:
    """Dragonfly's SET_WITH_EXPIRY (32): each member and its expiry, as HASH_WITH_EXPIRY's."""
    return length(len(members)) + b"".join(string(m) + _df_expiry(t) for m, t in members)


def _df_expiry(t: int | None) -> bytes:
    return string(str(-1 if t is None else t // 1000 - 1675209600))
