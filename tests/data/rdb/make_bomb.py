"""Writes tests/data/rdb/dragonfly-zstd-bomb.rdb: a Dragonfly RDB file of 1.6 KB whose one ZSTD blob
inflates to 48 MiB of zero bytes (16.7 million empty string keys, as a Dragonfly reader sees
them), for the example (docs/rdb.md) of the inflation budget. Needs ``zstandard``."""

from __future__ import annotations

from pathlib import Path

import zstandard

ZSTD_BLOB = 0xC9          # Dragonfly's RDB_OPCODE_COMPRESSED_ZSTD_BLOB_START
AUX, EOF = 0xFA, 0xFF


def length(n: int) -> bytes:
    """RDB's length encoding (6-bit, 14-bit or 32-bit)."""
    if n < 1 << 6:
        return bytes([n])
    if n < 1 << 14:
        return bytes([0x40 | n >> 8, n & 0xFF])
    return b"\x80" + n.to_bytes(4, "big")


def string(s: bytes) -> bytes:
    return length(len(s)) + s


def bomb(size: int = 48 << 20) -> bytes:
    frame = zstandard.ZstdCompressor(level=3, write_content_size=True).compress(bytes(size))
    return (b"REDIS0009" + bytes([AUX]) + string(b"df-ver") + string(b"v1.30.0")
            + bytes([ZSTD_BLOB]) + string(frame) + bytes([EOF]) + bytes(8))


if __name__ == "__main__":
    out = Path(__file__).with_name("dragonfly-zstd-bomb.rdb")
    out.write_bytes(bomb())
    print(f"wrote {out} ({out.stat().st_size} bytes)")
