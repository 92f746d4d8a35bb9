"""CRC-64 "Jones" as Redis computes it over an RDB file (spec/rdb.md §7): reflected
polynomial 0x95ac9329ac4bc9b5, init 0, no final xor, stored as 8 bytes little-endian
after the EOF opcode. A stored 0 means the writer did not compute one."""

from __future__ import annotations

from .native import C

POLY = 0x95AC9329AC4BC9B5


def _table() -> tuple[int, ...]:
    out = []
    for n in range(256):
        crc = n
        for _ in range(8):
            crc = (crc >> 1) ^ POLY if crc & 1 else crc >> 1
        out.append(crc)
    return tuple(out)


TABLE = _table()


def crc64_python(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """The CRC of ``data``, continuing from ``crc`` (the CRC of the bytes before it)."""
    table = TABLE
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def _fast():
    """The CRC in C: dcpinspect's own (``_rdb.crc64``: with carry-less multiplication where
    the CPU has it, some 13 GB/s, else eight bytes at a time, some 2 GB/s) when it is built,
    else crcmod's (a byte at a time: some 200–450 MB/s) when installed with its extension
    (the ``redis`` extra); against some 4 MB/s in Python."""
    if C is not None:
        return C.crc64
    try:
        import crcmod
        import crcmod._crcfunext  # noqa: F401 - the pure-Python crcmod is no faster
    except ImportError:
        return None
    return crcmod.mkCrcFun(0x1AD93D23594C935A9, initCrc=0, rev=True, xorOut=0)


_C = _fast()


def crc64(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """The CRC of ``data``, continuing from ``crc`` (the CRC of the bytes before it)."""
    if _C is not None:
        return _C(data if C is not None else bytes(data), crc)
    return crc64_python(data, crc)


#: whether the fast CRC is in use
FAST = _C is not None
