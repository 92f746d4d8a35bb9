"""Raw (unframed) snappy block format, used for datatype bit 0x02 (spec §3.1)."""

import cramjam

from .errors import CodecError
from .....limits import INFLATE

DEFAULT_MAX_SIZE = INFLATE.default  # max document size
_MAX_VARINT_BYTES = 5


def uncompressed_length(value: bytes | memoryview) -> tuple[int, int]:
    """Read the leading varint: ``(uncompressed_length, bytes_used)``."""
    length = 0
    for index in range(min(len(value), _MAX_VARINT_BYTES)):
        byte = value[index]
        length |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            if length > 0xFFFFFFFF:
                raise CodecError("snappy: uncompressed length exceeds u32")
            return length, index + 1
    raise CodecError("snappy: truncated or overlong uncompressed-length varint")


def inflate(value: bytes | memoryview, max_size: int = DEFAULT_MAX_SIZE) -> bytes:
    """Decompress a raw snappy block, refusing output larger than ``max_size``."""
    data = bytes(value)
    length, _ = uncompressed_length(data)
    if length > max_size:
        raise CodecError(f"snappy: uncompressed size {length} exceeds cap {max_size}")
    try:
        out = bytes(cramjam.snappy.decompress_raw(data))
    except cramjam.DecompressionError as exc:
        detail = str(exc).removeprefix("snappy: ")
        raise CodecError(f"snappy: {detail}") from None
    if len(out) != length:
        raise CodecError(f"snappy: inflated {len(out)} bytes, header says {length}")
    return out


def deflate(data: bytes | memoryview) -> bytes:
    """Compress ``data`` into a raw snappy block."""
    return bytes(cramjam.snappy.compress_raw(bytes(data)))
