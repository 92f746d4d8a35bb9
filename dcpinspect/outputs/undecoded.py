"""The TCP connections of a capture that no family decoded, told in one line: how many, on
which server ports, how many bytes (what ``decode -f summary``, ``validate`` and ``stats``
print; ``decode -f jsonl`` writes one object for each)."""

from __future__ import annotations

from ..sessions.captured import Note, flow_label
from ..sessions.captured import undecoded_counts as tally  # noqa: F401 (the line's input)

#: server ports named in the line; the rest are counted together
PORTS_SHOWN = 8


def record(note: Note, label: str | None = None) -> dict:
    """The JSON Lines object of an ``undecoded`` note: its flow, server port and bytes each
    way (``label``: the flow's label, if made already)."""
    if note.flow is None:  # the connections past the listed ones
        return {"kind": note.kind, "message": note.message, "ts": note.ts, "bytes": note.size}
    return {"kind": note.kind, "message": note.message, "ts": note.ts,
            "flow": label if label is not None else flow_label(note.flow), "server_port": note.flow[3],
            "bytes_c2s": note.sides[0], "bytes_s2c": note.sides[1]}


def line(counts: dict) -> str | None:
    """``3 TCP connections not decoded (5,120 bytes): server port 443 ×2, 2000``; None when
    there are none."""
    n = counts["connections"]
    if not n:
        return None
    ports = list(counts["ports"].items())
    shown = ", ".join(p if c["connections"] == 1 else f"{p} ×{c['connections']}" for p, c in ports[:PORTS_SHOWN])
    if len(ports) > PORTS_SHOWN:
        shown += f" and {len(ports) - PORTS_SHOWN} more"
    where = f": server port{'s' if len(ports) > 1 else ''} {shown}" if ports else ""
    return (f"{n} TCP connection{'s' if n > 1 else ''} not decoded ({counts['bytes']:,} bytes){where}; "
            "--decode-as PORT=FAMILY decodes one")
