"""What a family's parts are to the engines, as :class:`~dcpinspect.families.Family` names
them: a connection's :class:`Sniffer` and :class:`Session`, the capture's
:class:`Correlator`, the record filters (:class:`RecordFilters`) and the hex dumps
(:class:`HexDumps`) of the families that have them. (Only what checks or annotates them
imports this module: a command's run does not.)"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from ..findings import Finding
from ..framing.framer import RawFrame


class Sniffer(Protocol):
    """One connection's first bytes, both ways, on a port no family claims. It takes the
    connection on strong evidence only: a capture of another protocol must not be
    decoded as this one (the families' sniffers rule out other protocols' openings with
    ``transport/foreign.py``)."""

    def add(self, direction: str, data: bytes) -> bool | None:
        """Is it this family's? Decided from the bytes so far of both directions (``c2s``
        or ``s2c``: which these are); None: need more. Once it says yes the engine decodes
        every byte the connection carried, from its first."""

    def __len__(self) -> int:
        """Bytes held while deciding (the engines count them against their cap)."""


class Session(Protocol):
    """One connection's decoding state: what was negotiated, streams, the rules' state."""

    def decode(self, raw: RawFrame, direction: str | None, ts: float | None, index: int | None) -> Any:
        """The frame decoded and judged (its findings on it)."""

    def gap(self) -> None:
        """Bytes were lost: answers and state carried by them may be missing."""

    def finish(self) -> list[Finding]:
        """The connection is over: what only its end can show."""


class Correlator(Protocol):
    """What a family knows of a whole capture beyond one connection: its sessions report
    to it as they decode. Plain data: it pickles, and :meth:`merge` folds in one fed with
    other connections of the same capture, so that parts decoded apart conclude alike."""

    def merge(self, other: "Correlator") -> None:
        """Take in what ``other`` was told (other connections of the same capture)."""

    def finish(self) -> list[tuple[Any, Finding]]:
        """The capture is over: ``(flow, finding)`` pairs, in a stable order, each finding
        on the connection (a flow key) it concerns, or None for the capture itself."""


class RecordFilters(Protocol):
    """How the record filters of ``decode`` and ``live`` apply to a family's records.

    A filter is a criterion name (the option's, without its dashes: ``opcode``,
    ``vbucket``, ``command``) and the values given. A family knows some criteria: its
    records are kept when they meet every criterion it knows that was given, whatever
    the criteria it does not know; when it knows none of those given, its records are
    dropped (the filter asks for what only other families' records have)."""

    #: the criteria it knows
    criteria: frozenset[str]

    def owns(self, record: Any) -> bool:
        """Whether a decoded record is one of this family's."""

    def matcher(self, given: dict[str, tuple]) -> Callable[[Any], bool]:
        """The test of a record against the criteria of ``given`` this family knows;
        ValueError (its message for the user) for a value it cannot take."""


class HexDumps(Protocol):
    """How the default family decodes hex dumps of its bytes (``dcpinspect hex``, and
    ``decode`` of a pasted dump)."""

    def frame_at(self, data: bytes, pos: int, end: int) -> bool:
        """Whether a frame starts at ``pos`` (bytes up to ``end``)."""

    def stream(self, data: bytes, blocks, collections: bool | None):
        """The frames of ``blocks`` of ``data`` pasted together, as one connection."""

    def diagram(self, block: bytes, start: int, collections: bool | None, captions):
        """One frame of a protocol document's byte diagram, its captions checked."""
