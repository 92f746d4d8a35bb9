"""Pasted hex dumps → decoded frames, through the same core as captures: a dump of whole
packets as a capture, anything else as the bytes of one connection of the first family
(its ``dumps``: a stream of frames, or a protocol document's byte diagram)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterator

from ..families import Family, default_family
from ..framing.framer import Skipped
from ..sessions.captured import Captured
from ..sources.capture import Record
from ..sources.hexdump import HexDump, parse_hexdump
from ..transport.packet import LINKTYPE_ETHERNET, LINKTYPE_RAW
from .records import ReadStats, decode_records

PACKET_FORMATS = ("tcpdump-X", "tcpdump-xx")


@dataclass
class HexInput:
    dump: HexDump
    items: list = field(default_factory=list)


def decode_hex_text(text: str, collections: bool | None = None) -> HexInput:
    """Decode a pasted dump. A dump of link/IP/TCP packets (tcpdump's, or any other tool's
    dump of whole packets) is decoded as a capture, each block a packet; any other bytes,
    and packets that carry no frame when the bytes themselves start with one (a paste
    whose headers were cut), as a stream of the default family's frames. A fallback is said
    in ``dump.problems``."""
    family = default_family()
    dump = parse_hexdump(text)
    result = HexInput(dump)
    blocks = dump.blocks or ((0, len(dump.data)),) if dump.data else ()
    if dump.format == "diagram":
        for start, end in blocks:
            captions = [c for c in dump.captions if start <= c.start < end]
            result.items.extend(family.hex_dumps.diagram(dump.data[start:end], start, collections, captions))
        return result
    packets, note = _decode_packets(dump, blocks, collections, family)
    if packets is not None:
        result.items.extend(packets)
    else:
        result.items.extend(family.hex_dumps.stream(dump.data, blocks, collections))
    if note:
        result.dump = replace(dump, problems=dump.problems + (note,))
    return result


def _decode_packets(dump: HexDump, blocks, collections: bool | None, family: Family) -> tuple[list | None, str]:
    """The items of ``dump`` read as packets, or None to read it as a stream of
    ``family``'s frames; and a note saying how a dump was read when that is not what its
    format suggests."""
    packet_format = dump.format in PACKET_FORMATS
    framed = [family.hex_dumps.frame_at(dump.data, start, end) for start, end in blocks]
    name = family.name.upper()
    if not blocks or (not packet_format and framed[0]):  # a dump of a stream, as most are
        return ([] if packet_format else None), ""
    stats = ReadStats()
    items = list(decode_packet_blocks(dump, collections, stats))
    packets = stats.records - stats.skipped_records
    count = f"{packets} packet{'s' if packets != 1 else ''}"
    if any(not isinstance(i, Skipped) for i in items):
        if packet_format:
            return items, ""
        return items, f"the {dump.format} dump holds {count} (link/IP/TCP): decoded their TCP payloads"
    if not packet_format:
        return None, ""
    if not packets:
        return None, (f"the {dump.format} bytes are not link-layer/IP/TCP packets "
                      f"(headers cut?): decoded as an {name} stream")
    if any(framed):
        return None, (f"the {count} carry no {name} frame but the bytes start with one "
                      f"(headers cut?): decoded as an {name} stream")
    return items, ""


def _linktype(packet: bytes) -> int:
    version = packet[0] >> 4 if packet else 0
    if version == 4 and len(packet) >= 20 and 20 <= (packet[0] & 0x0F) * 4 <= len(packet):
        return LINKTYPE_RAW
    if version == 6 and len(packet) >= 40:
        return LINKTYPE_RAW
    return LINKTYPE_ETHERNET


def decode_packet_blocks(dump: HexDump, collections: bool | None = None,
                         stats: ReadStats | None = None) -> Iterator:
    """Packets pasted from ``tcpdump -X`` / ``-xx``: one block a packet, link type guessed.
    ``stats`` counts the blocks, and those that are no link/IP packet."""
    records = (
        Record(float(i), _linktype(dump.data[s:e]), dump.data[s:e], e - s, i) for i, (s, e) in enumerate(dump.blocks)
    )
    for item in decode_records(records, stats, collections=collections):
        if isinstance(item, Captured):
            yield item.msg
        elif item.kind == "skipped":
            yield Skipped(item.offset or 0, item.size, item.message)
