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


#: finish-time items sort after every record, in the order their connections began
END_KEY = 1 << 62
MAX_OWNERS = 1 << 20  # 4-tuples remembered before the owner table starts over


class Owners:
    """Which of ``parts`` workers decodes a connection: the n-th connection to appear in the
    capture goes to worker n mod parts. Every worker reads the same records in the same
    order, so all of them agree without talking, and connections are spread evenly."""

    __slots__ = ("parts", "table", "seen")

    def __init__(self, parts: int) -> None:
        self.parts = parts
        self.table: dict[tuple, int] = {}  # (src, sport, dst, dport), both ways → part
        self.seen = 0

    def of(self, src: str, sport: int, dst: str, dport: int) -> int:
        four = (src, sport, dst, dport)
        part = self.table.get(four)
        if part is None:
            if len(self.table) >= MAX_OWNERS:  # half a million connections: start over
                self.table.clear()
            part = self.table[four] = self.table[(dst, dport, src, sport)] = self.seen % self.parts
            self.seen += 1
        return part


def keyed_items(records, part: int = 0, parts: int = 1, stats: ReadStats | None = None,
                **kw) -> Iterator[tuple[int, Captured | Note]]:
    """``(key, item)`` for the connections that :class:`Owners` gives to ``part`` (all of
    them when ``parts`` is 1). Keys order items across parts as one process emits them: the
    capture record that caused them, then, for what the end of input flushes, the record
    that began their connection. Notes about the file itself come with part 0."""
    stats = stats if stats is not None else ReadStats()
    dec = CaptureDecoder(**kw)
    owners = Owners(parts)
    for rec in records:
        if isinstance(rec, CaptureProblem):
            if part == 0:
                text = rec.message if rec.message.startswith("record ") else f"record {rec.index}: {rec.message}"
                yield rec.index, Note("capture", text)
            continue
        stats.records += 1
        seg = parse_record(rec)
        if isinstance(seg, Skip):
            stats.skip(seg.reason)
            continue
        if parts > 1 and owners.of(seg.src, seg.sport, seg.dst, seg.dport) != part:
            continue
        index = rec.index
        for item in dec.feed(seg):
            yield index, item
    began = {flow: fd.first_index for flow, fd in dec.flows.items()}
    for item in dec.finish():
        yield END_KEY + began.get(item.flow, END_KEY), item


def decode_records(records, stats: ReadStats | None = None, **kw) -> Iterator[Captured | Note]:
    for _, item in keyed_items(records, stats=stats, **kw):
        yield item


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
