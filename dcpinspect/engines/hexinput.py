"""Pasted hex dumps → decoded messages, through the same core as captures."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from typing import Iterator

from ..framing.mcbp import FrameSplitter, RawFrame, Skipped, header_problem
from ..messages.frame import Message, decode_frame
from ..messages.header import HEADER_SIZE
from ..rules.captions import check_captions
from ..rules.frame import check_frame
from ..rules.registry import FRAME_RULES
from ..sources.hexdump import HexDump, parse_hexdump
from ..families.mcbp.conversation import Conversation
from .streaming import decode_bytes

PACKET_FORMATS = ("tcpdump-X", "tcpdump-xx")


@dataclass
class HexInput:
    dump: HexDump
    items: list[Message | Skipped] = field(default_factory=list)


def decode_hex_text(text: str, collections: bool | None = None) -> HexInput:
    """Decode a pasted dump. A dump of link/IP/TCP packets (tcpdump's, or any other tool's
    dump of whole packets) is decoded as a capture, each block a packet; any other bytes,
    and packets that carry no MCBP frame when the bytes themselves start with one (a paste
    whose headers were cut), as an MCBP stream. A fallback is said in ``dump.problems``."""
    dump = parse_hexdump(text)
    result = HexInput(dump)
    blocks = dump.blocks or ((0, len(dump.data)),) if dump.data else ()
    if dump.format == "diagram":
        for start, end in blocks:
            block = dump.data[start:end]
            items = list(_decode_block(block, start, collections, True))
            captions = [c for c in dump.captions if start <= c.start < end]
            if captions:
                _attach_captions(items, captions, start)
            result.items.extend(items)
        return result
    packets, note = _decode_packets(dump, blocks, collections)
    if packets is not None:
        result.items.extend(packets)
    else:
        result.items.extend(_decode_dumps(dump, blocks, collections))
    if note:
        result.dump = replace(dump, problems=dump.problems + (note,))
    return result


def _decode_packets(dump: HexDump, blocks, collections: bool | None) -> tuple[list | None, str]:
    """The items of ``dump`` read as packets, or None to read it as an MCBP stream; and a
    note saying how a dump was read when that is not what its format suggests."""
    packet_format = dump.format in PACKET_FORMATS
    framed = [end - start >= HEADER_SIZE and header_problem(dump.data, start) is None for start, end in blocks]
    if not blocks or (not packet_format and framed[0]):  # a dump of a stream, as most are
        return ([] if packet_format else None), ""
    from .files import ReadStats, decode_packet_blocks

    stats = ReadStats()
    items = list(decode_packet_blocks(dump, collections, stats))
    packets = stats.records - stats.skipped_records
    count = f"{packets} packet{'s' if packets != 1 else ''}"
    if any(isinstance(i, Message) for i in items):
        if packet_format:
            return items, ""
        return items, f"the {dump.format} dump holds {count} (link/IP/TCP): decoded their TCP payloads"
    if not packet_format:
        return None, ""
    if not packets:
        return None, (f"the {dump.format} bytes are not link-layer/IP/TCP packets "
                      "(headers cut?): decoded as an MCBP stream")
    if any(framed):
        return None, (f"the {count} carry no MCBP frame but the bytes start with one "
                      "(headers cut?): decoded as an MCBP stream")
    return items, ""


def _decode_dumps(dump: HexDump, blocks, collections: bool | None) -> Iterator[Message | Skipped]:
    """Several dumps pasted together are one conversation; a frame never spans two dumps."""
    conversation = Conversation.new(collections)
    last = None
    for start, end in blocks:
        for item in FrameSplitter().close(dump.data[start:end]):
            if isinstance(item, RawFrame):
                last = conversation.decode(RawFrame(item.offset + start, item.data, item.truncated))
                yield last
            else:
                yield Skipped(item.offset + start, item.size, item.reason)
    if last is not None:
        last.findings.extend(conversation.validator.finish())


def _decode_block(block: bytes, start: int, collections: bool | None, example: bool) -> Iterator[Message | Skipped]:
    items = [_shift(item, start) for item in decode_bytes(block, collections)]
    consistent = all(isinstance(i, Message) and not i.truncated for i in items)
    if not example or len(block) < HEADER_SIZE or consistent:
        yield from items
        return
    declared = struct.unpack_from(">I", block, 8)[0]
    held = len(block) - HEADER_SIZE
    first = next((i for i in items if isinstance(i, Message)), None)
    if declared != held and first is not None:
        first.findings.append(FRAME_RULES["body-length-mismatch"].finding(
            f"total body says {declared}, the example holds {held} body bytes", start + 8))
    yield from items
    if declared == held:
        return
    fixed = bytearray(block)
    fixed[8:12] = struct.pack(">I", held)
    msg = decode_frame(bytes(fixed), start)
    msg.data = block
    msg.note = f"as laid out in the example: total body taken as {held} instead of {declared}"
    check_frame(msg)
    yield msg


def _shift(item: Message | Skipped, by: int) -> Message | Skipped:
    if not by:
        return item
    if isinstance(item, Skipped):
        return Skipped(item.offset + by, item.size, item.reason)
    # Re-decode at the right absolute offset so every field offset is absolute.
    msg = decode_frame(item.data, item.offset + by)
    msg.findings = [f if f.offset is None else type(f)(f.rule, f.cls, f.severity, f.message, f.offset + by, f.ref)
                    for f in item.findings]
    return msg


def _attach_captions(items: list[Message | Skipped], captions, block_start: int) -> None:
    messages = [m for m in items if isinstance(m, Message)]
    target = messages[-1] if messages and messages[-1].note else (messages[0] if messages else None)
    if target is not None:
        check_captions(target, captions, block_start)
