"""The streaming engine: bytes in, decoded and judged messages out, constant memory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

from ..framing.mcbp import FrameSplitter, RawFrame, Skipped
from ..messages.frame import DecodeContext, Message, decode_frame
from ..rules.frame import check_frame
from ..sessions.negotiation import Negotiation


@dataclass
class ByteStreamDecoder:
    """One direction-interleaved MCBP conversation: feed chunks, get messages."""

    negotiation: Negotiation
    base: DecodeContext
    splitter: FrameSplitter

    @classmethod
    def new(cls, collections: bool | None = None, synced: bool = True, base: DecodeContext | None = None):
        return cls(Negotiation(collections_override=collections), base or DecodeContext(), FrameSplitter(synced=synced))

    def feed(self, data: bytes) -> list[Message | Skipped]:
        return [self._handle(item) for item in self.splitter.feed(data)]

    def close(self, data: bytes = b"") -> list[Message | Skipped]:
        return [self._handle(item) for item in self.splitter.close(data)]

    def gap(self, missing: int) -> list[Message | Skipped]:
        return [self._handle(item) for item in self.splitter.gap(missing)]

    def decode(self, raw: RawFrame) -> Message:
        msg = decode_frame(raw.data, raw.offset, self.negotiation.context(self.base))
        check_frame(msg)
        self.negotiation.observe(msg)
        return msg

    def _handle(self, item: RawFrame | Skipped) -> Message | Skipped:
        return self.decode(item) if isinstance(item, RawFrame) else item


def decode_bytes(data: bytes, collections: bool | None = None, synced: bool = True) -> Iterator[Message | Skipped]:
    """Decode a complete byte string (one conversation, frames back to back)."""
    yield from ByteStreamDecoder.new(collections, synced).close(data)


def decode_chunks(chunks: Iterable[bytes], collections: bool | None = None) -> Iterator[Message | Skipped]:
    dec = ByteStreamDecoder.new(collections)
    for chunk in chunks:
        yield from dec.feed(chunk)
    yield from dec.close()
