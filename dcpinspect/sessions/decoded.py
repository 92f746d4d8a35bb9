"""What a family other than MCBP decodes a frame to, as the outputs read it.

A session of such a family returns :class:`Decoded` records from ``decode``; the outputs
print them through this interface alone, without naming their protocol: their JSON Lines
objects, their table rows, a name to count them under, their size on the wire and their
findings. The attributes that MCBP's ``Message`` has and such a record has not (opcode,
vbucket, stream id, spec) are None, so that filters and the stats collector pass them by.
"""

from __future__ import annotations

from typing import Any

from ..findings import Finding


class Decoded:
    """One decoded frame (or piece of a stream) of a family other than MCBP.

    Subclasses set ``protocol``, ``name``, ``size``, ``offset``, ``findings`` and
    ``truncated`` and implement :meth:`json_rows` and :meth:`table_rows`."""

    __slots__ = ()

    #: the ``protocol`` of its JSON Lines objects
    protocol: str = ""
    #: what summaries and stats count it under (already safe for a terminal)
    name: str = ""
    #: bytes on the wire
    size: int = 0
    #: stream offset of its first byte
    offset: int = 0
    findings: list[Finding]
    truncated: bool = False
    #: counted as a request (else "(response)" in the stats' opcode table)
    is_request: bool = True
    #: its session ran the rules on it, whatever the decoding context (a summary that
    #: counts MCBP frames by their headers alone still counts these records' findings)
    judged: bool = True
    #: the family's part of the ``stats`` report that counts these records, if it has one:
    #: a class whose ``name`` is the report's entry it makes, made once a collector (or the
    #: name of a part every collector is made with: ``families.stats_collector``), with
    #: ``add(captured, ts, key, collector)``, ``merge(other)`` and ``report(t0)`` (a
    #: JSON-ready value): see ``sessions/stats.py``
    stats_part = None
    #: what MCBP messages carry and these do not
    spec = None
    opcode = None
    vbucket = None
    stream_id = None
    note = ""

    @property
    def stats_protocol(self) -> str:
        """What a connection's ``protocols`` in ``stats`` count it as: its protocol."""
        return self.protocol

    @property
    def counted(self) -> tuple:
        """What summaries count it under: its own name."""
        return (Decoded, self.name)

    @staticmethod
    def count_name(name: str) -> tuple[str, str, str]:
        return "name", "Frames by name", name

    def json_rows(self) -> list[dict[str, Any]]:
        """Its JSON Lines objects, each beginning with ``kind`` (the sink adds where and
        when: frame, ts, flow, direction); none when it shows nothing on its own."""
        raise NotImplementedError

    def placed_rows(self, where: dict[str, Any]) -> list[dict[str, Any]]:
        """Its JSON Lines objects, each placed (``where``: frame, ts, flow, direction) after
        its ``kind``."""
        return [{"kind": row["kind"], **where, **row} for row in self.json_rows()]

    def table_rows(self) -> list[tuple[str, str]]:
        """``(field, value)`` rows for the table view (the outputs escape and cut them)."""
        raise NotImplementedError

    def title(self) -> str:
        """The table view's heading of it."""
        return f"{self.name}  {self.size} bytes at {self.offset}"
