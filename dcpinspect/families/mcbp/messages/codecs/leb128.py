"""Unsigned LEB128 as used for the collection-id prefix of document keys (spec §5)."""

from .errors import CodecError

U32_MAX = 0xFFFFFFFF
MAX_U32_BYTES = 5
RESERVED_COLLECTION_IDS = range(1, 8)


def decode_uleb128(buf: bytes | memoryview, offset: int = 0) -> tuple[int, int]:
    """Decode a canonical unsigned LEB128 u32 at ``offset``.

    Returns ``(value, bytes_used)``.
    """
    if offset < 0:
        raise CodecError(f"negative leb128 offset {offset}")
    data = bytes(buf[offset:offset + MAX_U32_BYTES])
    value = 0
    for index, byte in enumerate(data):
        value |= (byte & 0x7F) << (7 * index)
        if byte & 0x80:
            continue
        if byte == 0 and index > 0:
            raise CodecError("non-canonical leb128")
        if value > U32_MAX:
            raise CodecError("leb128 value exceeds u32")
        return value, index + 1
    raise CodecError("no stop-byte found")


def encode_uleb128(n: int) -> bytes:
    """Encode ``n`` (0..0xFFFFFFFF) in canonical unsigned LEB128."""
    if not isinstance(n, int) or not 0 <= n <= U32_MAX:
        raise CodecError(f"leb128 value out of u32 range: {n!r}")
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def split_collection_key(
    key: bytes | memoryview, *, allow_reserved: bool = False
) -> tuple[int, bytes, int]:
    """Split a collection-aware key into ``(cid, logical_key, prefix_length)``.

    Collection ids 1..7 are reserved on the wire and rejected unless
    ``allow_reserved`` is true; the logical key must not be empty.
    """
    cid, used = decode_uleb128(key)
    logical = bytes(key[used:])
    if not logical:
        raise CodecError("empty logical key after collection-id prefix")
    if not allow_reserved and cid in RESERVED_COLLECTION_IDS:
        raise CodecError(f"collection id {cid} is reserved")
    return cid, logical, used
