"""The streaming engine: bytes in, decoded and judged messages out, constant memory."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator

from ..framing.mcbp import FrameSplitter, RawFrame, Skipped
from ..messages.frame import DecodeContext, Message, decode_frame
from ..rules.frame import check_frame
from ..rules.stream import ConnectionValidator
from ..rules.tap import TapChecker, once_per_connection
from ..sessions.tap import NOOP
from ..sessions.negotiation import Negotiation


@dataclass
class Conversation:
    """One connection's decoding state: negotiation for the decoder, the stream validator."""

    negotiation: Negotiation
    validator: ConnectionValidator
    base: DecodeContext
    #: no message judged yet: the first one may show the connection was seen from its start
    fresh: bool = field(default=True)
    #: the retired-opcode note was given for a TAP frame of this connection (it is given once)
    tap_noted: bool = field(default=False)

    @classmethod
    def new(cls, collections: bool | None = None, base: DecodeContext | None = None,
            seen_from_start: bool = False) -> "Conversation":
        negotiation = Negotiation(collections_override=collections, seen_from_start=seen_from_start)
        return cls(negotiation, ConnectionValidator(negotiation, seen_from_start), base or DecodeContext())

    def decode(self, raw: RawFrame, direction: str | None = None, ts: float | None = None,
               index: int | None = None) -> Message:
        if self.base.headers_only:
            return decode_frame(raw.data, raw.offset, self.base)
        msg = decode_frame(raw.data, raw.offset, self.negotiation.context(self.base))
        self.judge(msg, direction, ts, index)
        return msg

    def judge(self, msg: Message, direction: str | None = None, ts: float | None = None,
              index: int | None = None) -> None:
        """The frame rules, then the connection's negotiation and stream state, on a decoded
        message (its findings land on it)."""
        if self.fresh:
            self.fresh = False
            if msg.is_request and msg.spec is not None and msg.spec.opens_connection:
                self.negotiation.seen_from_start = self.validator.seen_from_start = True
        check_frame(msg)
        self.negotiation.observe(msg)
        self.validator.feed(msg, direction, ts, index)
        spec = msg.spec
        if spec is not None and (spec.family == "tap" or (msg.opcode == NOOP and self.validator.tap is not None)):
            self._tap(msg, spec.family == "tap", direction, ts, index)

    def _tap(self, msg: Message, tap: bool, direction: str | None, ts: float | None, index: int | None) -> None:
        """A TAP frame, or a NOOP on a TAP connection: the TAP rules and session; the
        retired-opcode note once a connection."""
        checker = self.validator.tap
        if checker is None:
            checker = self.validator.tap = TapChecker(self.validator.seen_from_start)
        if tap:
            msg.findings[:], self.tap_noted = once_per_connection(msg.findings, "retired-opcode", self.tap_noted)
        checker.feed(msg, direction, ts, index)


@dataclass
class ByteStreamDecoder:
    """One direction-interleaved MCBP conversation: feed chunks, get messages."""

    conversation: Conversation
    splitter: FrameSplitter

    @classmethod
    def new(cls, collections: bool | None = None, synced: bool = True, base: DecodeContext | None = None):
        return cls(Conversation.new(collections, base), FrameSplitter(synced=synced))

    def feed(self, data: bytes) -> list[Message | Skipped]:
        return [self._handle(item) for item in self.splitter.feed(data)]

    def close(self, data: bytes = b"") -> list[Message | Skipped]:
        """End of input; end-of-stream findings land on the last message."""
        out = [self._handle(item) for item in self.splitter.close(data)]
        late = self.conversation.validator.finish()
        last = next((m for m in reversed(out) if isinstance(m, Message)), None)
        if last is not None:
            last.findings.extend(late)
        return out

    def gap(self, missing: int) -> list[Message | Skipped]:
        return [self._handle(item) for item in self.splitter.gap(missing)]

    def _handle(self, item: RawFrame | Skipped) -> Message | Skipped:
        return self.conversation.decode(item) if isinstance(item, RawFrame) else item


def decode_bytes(data: bytes, collections: bool | None = None, synced: bool = True) -> Iterator[Message | Skipped]:
    """Decode a complete byte string (one conversation, frames back to back)."""
    yield from ByteStreamDecoder.new(collections, synced).close(data)


def decode_chunks(chunks: Iterable[bytes], collections: bool | None = None) -> Iterator[Message | Skipped]:
    dec = ByteStreamDecoder.new(collections)
    for chunk in chunks:
        yield from dec.feed(chunk)
    yield from dec.close()
