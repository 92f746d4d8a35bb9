"""Capture files (pcap, pcapng, gzip) and hex-dumped packets into the capture engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from ..framing.mcbp import Skipped
from ..messages.frame import Message
from ..sources.capture import CaptureProblem, Record, read_records
from ..sources.hexdump import HexDump
from ..transport.packet import Skip, parse_record
from .capture import CaptureDecoder, Captured, Note

LINKTYPE_ETHERNET, LINKTYPE_RAW = 1, 101


@dataclass
class ReadStats:
    records: int = 0
    skipped_records: int = 0
    skip_reasons: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped_records += 1
        key = reason.split(":")[0]
        self.skip_reasons[key] = self.skip_reasons.get(key, 0) + 1


def decode_records(records, stats: ReadStats | None = None, **kw) -> Iterator[Captured | Note]:
    stats = stats if stats is not None else ReadStats()
    dec = CaptureDecoder(**kw)
    for rec in records:
        if isinstance(rec, CaptureProblem):
            text = rec.message if rec.message.startswith("record ") else f"record {rec.index}: {rec.message}"
            yield Note("capture", text)
            continue
        stats.records += 1
        seg = parse_record(rec)
        if isinstance(seg, Skip):
            stats.skip(seg.reason)
            continue
        yield from dec.feed(seg)
    yield from dec.finish()


def decode_capture_file(path, stats: ReadStats | None = None, **kw) -> Iterator[Captured | Note]:
    """Raises ``CaptureError`` only if the file is unreadable or not a capture."""
    yield from decode_records(read_records(path), stats, **kw)


def _linktype(packet: bytes) -> int:
    version = packet[0] >> 4 if packet else 0
    if version == 4 and len(packet) >= 20 and 20 <= (packet[0] & 0x0F) * 4 <= len(packet):
        return LINKTYPE_RAW
    if version == 6 and len(packet) >= 40:
        return LINKTYPE_RAW
    return LINKTYPE_ETHERNET


def decode_packet_blocks(dump: HexDump, collections: bool | None = None) -> Iterator[Message | Skipped]:
    """Packets pasted from ``tcpdump -X`` / ``-xx``: one block a packet, link type guessed."""
    records = (
        Record(float(i), _linktype(dump.data[s:e]), dump.data[s:e], e - s, i) for i, (s, e) in enumerate(dump.blocks)
    )
    for item in decode_records(records, collections=collections):
        if isinstance(item, Captured):
            yield item.msg
        elif item.kind == "skipped":
            yield Skipped(item.offset or 0, item.size, item.message)
