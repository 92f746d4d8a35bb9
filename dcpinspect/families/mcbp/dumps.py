"""Hex dumps of MCBP bytes: a stream of frames pasted whole, or one frame of a protocol
document's byte diagram, whose captions are checked against the bytes (the family's
``dumps``, which the hex-dump engine asks)."""

from __future__ import annotations

import struct
from typing import Iterator

from ...framing.framer import RawFrame, Skipped
from .framer import FrameSplitter, header_problem
from .messages.frame import Message, decode_frame
from .messages.header import HEADER_SIZE
from .rules.captions import check_captions
from .rules.frame import check_frame
from .rules.book import FRAME_RULES
from .conversation import Conversation


def frame_at(data: bytes, pos: int, end: int) -> bool:
    """Whether a plausible frame header starts at ``pos`` (bytes up to ``end``)."""
    return end - pos >= HEADER_SIZE and header_problem(data, pos) is None


def stream(data: bytes, blocks, collections: bool | None) -> Iterator[Message | Skipped]:
    """Several dumps pasted together are one conversation; a frame never spans two dumps."""
    conversation = Conversation.new(collections)
    last = None
    for start, end in blocks:
        for item in FrameSplitter().close(data[start:end]):
            if isinstance(item, RawFrame):
                last = conversation.decode(RawFrame(item.offset + start, item.data, item.truncated))
                yield last
            else:
                yield Skipped(item.offset + start, item.size, item.reason)
    if last is not None:
        last.findings.extend(conversation.finish())


def diagram(block: bytes, start: int, collections: bool | None, captions) -> list[Message | Skipped]:
    """One frame of a byte diagram (at ``start`` of the dump): decoded as its bytes say,
    and, where its total body length disagrees with the bytes shown, also as laid out;
    the diagram's captions checked against the frame they describe."""
    items = list(_example(block, start, collections))
    if captions:
        messages = [m for m in items if isinstance(m, Message)]
        target = messages[-1] if messages and messages[-1].note else (messages[0] if messages else None)
        if target is not None:
            check_captions(target, captions, start)
    return items


def _example(block: bytes, start: int, collections: bool | None) -> Iterator[Message | Skipped]:
    items = [_shift(item, start) for item in _decoded(block, collections)]
    consistent = all(isinstance(i, Message) and not i.truncated for i in items)
    if len(block) < HEADER_SIZE or consistent:
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


def _decoded(block: bytes, collections: bool | None) -> list[Message | Skipped]:
    """A block's frames back to back, as one conversation (its end's findings on the last)."""
    conversation = Conversation.new(collections)
    out = [conversation.decode(i) if isinstance(i, RawFrame) else i for i in FrameSplitter().close(block)]
    last = next((m for m in reversed(out) if isinstance(m, Message)), None)
    if last is not None:
        last.findings.extend(conversation.finish())
    return out


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
