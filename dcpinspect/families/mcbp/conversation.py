"""A connection of the MCBP family: what it negotiated, its DCP streams and TAP, its rules.

The family's :class:`~dcpinspect.families.Session`: it decodes each frame in the context
the connection negotiated, then the frame rules, the negotiation, the DCP stream
validator and (on TAP connections) the TAP rules see it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...findings import Finding
from ...framing.framer import RawFrame
from .messages.frame import DecodeContext, Message, decode_frame
from .rules.frame import check_frame
from .messages.opcodes import OP
from .rules.stream import ConnectionValidator
from .sessions.negotiation import Negotiation

_NOOP = OP.NOOP


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

    def gap(self) -> None:
        """Bytes of the connection were lost: answers may have gone with them."""
        self.validator.gap()

    def finish(self) -> list[Finding]:
        """The connection is over: the findings only its end can show."""
        return self.validator.finish()

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
        if spec is not None and (spec.family == "tap" or (msg.opcode == _NOOP and self.validator.tap is not None)):
            self._tap(msg, spec.family == "tap", direction, ts, index)

    def _tap(self, msg: Message, tap: bool, direction: str | None, ts: float | None, index: int | None) -> None:
        """A TAP frame, or a NOOP on a TAP connection: the TAP rules and session; the
        retired-opcode note once a connection."""
        from .rules.tap import TapChecker, once_per_connection  # TAP's, for TAP connections alone

        checker = self.validator.tap
        if checker is None:
            checker = self.validator.tap = TapChecker(self.validator.seen_from_start)
        if tap:
            msg.findings[:], self.tap_noted = once_per_connection(msg.findings, "retired-opcode", self.tap_noted)
        checker.feed(msg, direction, ts, index)
