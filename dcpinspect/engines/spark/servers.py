"""What the tasks of a file cut into byte ranges must know before they decode: the servers
its connections show speaking a family (a replication handshake, MCBP answers), found by
a first pass over the ranges.

After the shuffle each connection is decoded apart (``partition.decode_batches``), so a
connection on a port no family owns is taken there on its own bytes alone; in one process
a connection to a server that another connection showed is decoded too, from its first
byte (``connections.CaptureDecoder._server_known``). The first pass gives every connection's
decoder what one process learns: each range is read by a task of its own, its connections
on ports no family owns sniffed (``CaptureDecoder.watch``: nothing decoded, nothing
told), and what the sniffers take is a server of that family. A connection that a range
saw open whose first bytes run on into the next ranges is followed there until its
sniffers decide, for at most :data:`FOLLOW` ranges; the records of ports a family owns are
passed over unmade."""

from __future__ import annotations

from typing import Iterable, Iterator

from ...sources.capture import CaptureProblem
from ...sources.ranges import Range, range_records
from ...transport.packet import Skip, parse_record, plain_tcp4
from ..connections import CaptureDecoder

#: the ranges after its own that a task reads to let its connections' sniffers decide
FOLLOW = 2


def range_servers(ranges: list[Range], kw: dict) -> dict[tuple[str, int], str]:
    """The servers (address, port) → family name that the first of ``ranges`` shows,
    reading on into the others (the file's next ranges) while a connection it saw is still
    being sniffed. ``kw``: the capture decoder's keyword arguments (its ports)."""
    dec = CaptureDecoder(**{k: v for k, v in kw.items() if k in ("ports", "heuristic", "max_flows", "max_held")})
    if not dec.heuristic:
        return {}
    known = dec.ports | frozenset(dec.encrypted)
    for n, part in enumerate(ranges[:FOLLOW + 1]):
        if n and not _sniffing(dec):
            break
        for seg in _segments(range_records(part), known):
            if n and dec.reassembler.record((seg.src, seg.sport, seg.dst, seg.dport)) is None and \
                    dec.reassembler.record((seg.dst, seg.dport, seg.src, seg.sport)) is None:
                continue  # a connection the next range's own task sees begin
            dec.watch(seg)
    return {server: family.name for server, family in dec.servers.items()}


def _sniffing(dec: CaptureDecoder) -> bool:
    """A connection the decoder follows is open and its sniffers have not decided."""
    return any(und.fd is not None and und.sniffers for und in dec.undecided.values())


def _segments(records: Iterable, known: frozenset[int]) -> Iterator:
    """The TCP segments of ``records`` on ports no family owns (a plain Ethernet/IPv4/TCP
    record on a known port is passed over without being made)."""
    for rec in records:
        if isinstance(rec, CaptureProblem):
            continue
        raw = plain_tcp4(rec)
        if raw is not None and (int.from_bytes(raw[8:10], "big") in known or int.from_bytes(raw[10:12], "big") in known):
            continue
        seg = parse_record(rec)
        if not isinstance(seg, Skip):
            yield seg


def file_servers(found: Iterable[tuple[int, dict]]) -> dict[int, dict[tuple[str, int], str]]:
    """The servers each file's ranges showed, by file index (a server the first range to
    show it names keeps its family)."""
    out: dict[int, dict[tuple[str, int], str]] = {}
    for fi, servers in sorted(found, key=lambda f: f[0]):
        mine = out.setdefault(fi, {})
        for server, name in servers.items():
            mine.setdefault(server, name)
    return out
