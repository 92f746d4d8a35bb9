"""Writing records as a pcapng file (what ``live --write`` keeps, as ``tshark -w`` does).

One section; an interface description block for each link type met (in the order met),
each with microsecond timestamps (``if_tsresol`` 6, pcapng's default, written out); one
enhanced packet block a record, with the bytes captured and the length on the wire.
Little-endian, as the machines that write most captures are.
"""

from __future__ import annotations

import struct
from typing import BinaryIO

from .capture import Record

_SHB, _IDB, _EPB = 0x0A0D0D0A, 1, 6
_BYTE_ORDER = 0x1A2B3C4D
#: the snapshot length written in each interface block: no limit (0)
SNAPLEN = 0


def _block(btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    length = 12 + len(body)
    return struct.pack("<II", btype, length) + body + struct.pack("<I", length)


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def section_header(application: str = "dcpinspect") -> bytes:
    body = struct.pack("<IHHq", _BYTE_ORDER, 1, 0, -1)  # version 1.0, section length unknown
    body += _option(4, application.encode()) + _option(0, b"")  # shb_userappl, end of options
    return _block(_SHB, body)


def interface(linktype: int, name: str | None = None) -> bytes:
    body = struct.pack("<HHI", linktype, 0, SNAPLEN)
    if name:
        body += _option(2, name.encode("utf-8", "replace"))  # if_name
    body += _option(9, b"\x06") + _option(0, b"")  # if_tsresol: microseconds
    return _block(_IDB, body)


def packet(ifid: int, rec: Record) -> bytes:
    ticks = int(round(rec.ts * 1_000_000)) & 0xFFFFFFFFFFFFFFFF
    body = struct.pack("<IIIII", ifid, ticks >> 32, ticks & 0xFFFFFFFF, len(rec.data),
                       max(rec.wirelen, len(rec.data))) + rec.data
    return _block(_EPB, body)


class PcapngWriter:
    """Records written to ``fh`` as they come (:meth:`write`), an interface block before the
    first record of each link type; :meth:`close` flushes and closes."""

    def __init__(self, fh: BinaryIO, iface: str | None = None) -> None:
        self._fh = fh
        self._iface = iface
        self._ids: dict[int, int] = {}
        self.records = 0
        fh.write(section_header())

    def write(self, rec: Record) -> None:
        ifid = self._ids.get(rec.linktype)
        if ifid is None:
            ifid = self._ids[rec.linktype] = len(self._ids)
            self._fh.write(interface(rec.linktype, self._iface))
        self._fh.write(packet(ifid, rec))
        self.records += 1

    def flush(self) -> None:
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()
