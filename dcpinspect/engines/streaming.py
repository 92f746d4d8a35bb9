"""The streaming engine: bytes in, decoded and judged messages out, constant memory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

from ..families import FIELDS, Family, Options, default_family
from ..families.interfaces import Session
from ..framing.framer import Framer, RawFrame, Skipped


@dataclass
class ByteStreamDecoder:
    """One connection's bytes, both directions in one stream (a hex dump, frames back to
    back): feed chunks, get the family's decoded frames and the ranges passed over."""

    conversation: Session
    splitter: Framer

    @classmethod
    def new(cls, collections: bool | None = None, synced: bool = True, detail: str = FIELDS,
            family: Family | None = None) -> "ByteStreamDecoder":
        """Of ``family`` (the default family if none), with the options the engine takes."""
        family = family or default_family()
        return cls(family.session(Options(detail, collections), False), family.framer(synced, False))

    def feed(self, data: bytes) -> list:
        return [self._handle(item) for item in self.splitter.feed(data)]

    def close(self, data: bytes = b"") -> list:
        """End of input; end-of-stream findings land on the last frame."""
        out = [self._handle(item) for item in self.splitter.close(data)]
        late = self.conversation.finish()
        last = next((m for m in reversed(out) if not isinstance(m, Skipped)), None)
        if last is not None:
            last.findings.extend(late)
        return out

    def gap(self, missing: int) -> list:
        return [self._handle(item) for item in self.splitter.gap(missing)]

    def _handle(self, item: RawFrame | Skipped):
        return self.conversation.decode(item) if isinstance(item, RawFrame) else item


def decode_bytes(data: bytes, collections: bool | None = None, synced: bool = True) -> Iterator:
    """Decode a complete byte string (one conversation, frames back to back)."""
    yield from ByteStreamDecoder.new(collections, synced).close(data)


def decode_chunks(chunks: Iterable[bytes], collections: bool | None = None) -> Iterator:
    dec = ByteStreamDecoder.new(collections)
    for chunk in chunks:
        yield from dec.feed(chunk)
    yield from dec.close()
