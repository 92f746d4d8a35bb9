"""The XATTR section at the front of a value with datatype bit 0x04 (spec §3.2)."""

import string
import struct

from . import jsontext
from .errors import CodecError

MAX_KEY_BYTES = 15
MIN_PAIR_BYTES = 7  # u32 pair_len + 1 key byte + two NULs
_LEADING_ALLOWED = {ord("_"), ord("$")}
_LEADING_RESTRICTED = {ord(c) for c in string.punctuation} | set(range(0x20)) | {0x7F}


def _check_key(raw: bytes) -> str:
    try:
        key = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CodecError("xattr key is not valid UTF-8") from None
    if not 1 <= len(raw) <= MAX_KEY_BYTES:
        raise CodecError(f"xattr key length {len(raw)} not in 1..{MAX_KEY_BYTES}")
    first = raw[0]
    if first in _LEADING_RESTRICTED:
        if first not in _LEADING_ALLOWED:
            raise CodecError(f"xattr key {key!r} starts with a reserved character")
        if len(raw) == 1:
            raise CodecError(f"xattr key {key!r} is only a prefix character")
    return key


def parse_xattrs(value: bytes | memoryview, too_deep: list[str] | None = None) -> tuple[list[tuple[str, str]], int]:
    """Parse and validate the XATTR section.

    Returns ``(pairs, body_offset)``: the (key, JSON text) pairs in wire order
    and the offset of the document body (4 + total_xattr_len).

    A value nested deeper than the JSON cap (codecs/jsontext) cannot be checked: with a
    ``too_deep`` list its key is added there and the pair kept; without one, it raises.
    """
    blob = bytes(value)
    if len(blob) < 4:
        raise CodecError(f"xattr blob of {len(blob)} bytes is shorter than 4")
    (total,) = struct.unpack_from(">I", blob)
    end = 4 + total
    if end > len(blob):
        raise CodecError(f"xattr total length {total} exceeds blob ({len(blob)} bytes)")
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    pos = 4
    while pos < end:
        if pos + MIN_PAIR_BYTES > end:
            raise CodecError(f"xattr pair at offset {pos} is shorter than {MIN_PAIR_BYTES} bytes")
        (pair_len,) = struct.unpack_from(">I", blob, pos)
        pos += 4
        if pos + pair_len > end:
            raise CodecError(f"xattr pair length {pair_len} at offset {pos - 4} runs past the section")
        pair = blob[pos:pos + pair_len]
        key_end = pair.find(b"\x00")
        if key_end < 0:
            raise CodecError(f"xattr key at offset {pos} is not NUL-terminated")
        value_end = pair.find(b"\x00", key_end + 1)
        if value_end < 0:
            raise CodecError(f"xattr value at offset {pos + key_end + 1} is not NUL-terminated")
        if value_end != pair_len - 1:
            raise CodecError(
                f"xattr pair length {pair_len} != key + value + 2 ({value_end + 1})")
        key = _check_key(pair[:key_end])
        try:
            text = pair[key_end + 1:value_end].decode("utf-8")
        except UnicodeDecodeError:
            raise CodecError(f"xattr value of {key!r} is not valid UTF-8") from None
        verdict = jsontext.verdict(text)
        if verdict == jsontext.TOO_DEEP:
            if too_deep is None:
                raise jsontext.JsonTooDeep(jsontext.too_deep_message(f"xattr value of {key!r}"))
            too_deep.append(key)
        elif verdict != jsontext.OK:
            raise CodecError(f"xattr value of {key!r} is not valid JSON")
        if key in seen:
            raise CodecError(f"duplicate xattr key {key!r}")
        seen.add(key)
        pairs.append((key, text))
        pos += pair_len
    return pairs, end


def encode_xattrs(pairs: list[tuple[str, str]]) -> bytes:
    """Build the XATTR section (without body) for ``pairs`` of (key, JSON text).

    Nothing is validated, so invalid sections can be built on purpose.
    """
    section = bytearray()
    for key, text in pairs:
        raw = key.encode("utf-8") + b"\x00" + text.encode("utf-8") + b"\x00"
        section += struct.pack(">I", len(raw)) + raw
    return struct.pack(">I", len(section)) + bytes(section)
