"""Is a connection on a port we do not know MCBP? Decided from one direction's first bytes."""

from __future__ import annotations

from ...framing.framer import RawFrame
from ...framing.mcbp import FrameSplitter, header_problem
from ...messages.header import HEADER_SIZE


class Sniffer:
    """One direction's first bytes, and (on a connection joined mid-stream) an unsynced
    splitter that looks for a whole MCBP frame in them. The probe is fed each byte once, so
    deciding costs time linear in the bytes, however they are cut into segments: the first
    frame an unsynced splitter finds does not depend on the cuts. Its length is every byte
    held, the probe's own included."""

    __slots__ = ("data", "probe", "midstream")

    def __init__(self, midstream: bool) -> None:
        self.data = bytearray()
        self.probe: FrameSplitter | None = None
        self.midstream = midstream

    def __len__(self) -> int:
        return len(self.data) + (self.probe.buffered if self.probe is not None else 0)

    def add(self, data: bytes) -> bool | None:
        """MCBP? Decided from the bytes so far (None: need more)."""
        self.data += data
        if len(self.data) >= HEADER_SIZE and header_problem(self.data, 0) is None:
            return True
        if not self.midstream:
            return None if len(self.data) < HEADER_SIZE else False
        if self.probe is None:
            self.probe = FrameSplitter(synced=False)
            data = bytes(self.data)
        return True if any(isinstance(i, RawFrame) for i in self.probe.feed(data)) else None
