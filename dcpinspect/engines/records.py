"""A capture's records, in order, into the connections' decoder: each record parsed into a
TCP segment (``transport/packet.py``), dealt to the worker that owns its connection, fed to
:class:`~.connections.CaptureDecoder`; its items come out keyed by the record that caused
them, so that parts decoded apart merge back into capture order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from ..sources.capture import CaptureProblem, read_records
from ..transport.packet import Skip, parse_record, plain_tcp4, reverse_raw
from ..sessions.captured import Captured, Note
from .connections import CaptureDecoder, concluded
from .tails import INDEX, Tail


@dataclass
class ReadStats:
    records: int = 0
    skipped_records: int = 0
    skip_reasons: dict[str, int] = field(default_factory=dict)
    #: a part's correlators (see ``families.Correlator``), not concluded: the caller merges
    #: those of every part and concludes them (one part alone concludes its own)
    correlated: dict = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped_records += 1
        key = reason.split(":")[0]
        self.skip_reasons[key] = self.skip_reasons.get(key, 0) + 1


#: finish-time items sort after every record, in the order their connections began; the
#: correlators' findings after them all (CONCLUDED_KEY)
END_KEY = 1 << 62
UNDECODED_KEY = END_KEY + (END_KEY >> 1)
CONCLUDED_KEY = 2 * END_KEY
MAX_OWNERS = 1 << 20  # 4-tuples remembered before the owner table starts over


class Owners:
    """Which of ``parts`` workers decodes a connection: the n-th connection to appear in the
    capture goes to worker n mod parts. Every worker reads the same records in the same
    order, so all of them agree without talking, and connections are spread evenly."""

    __slots__ = ("parts", "table", "seen", "raw")

    def __init__(self, parts: int) -> None:
        self.parts = parts
        self.table: dict[tuple, int] = {}  # (src, sport, dst, dport), both ways → part
        self.seen = 0
        #: the same, by the 12 address and port bytes of a plain Ethernet/IPv4/TCP record
        #: (see :func:`plain_tcp4`), both ways: other workers' records are known unparsed
        self.raw: dict[bytes, int] = {}

    def of(self, src: str, sport: int, dst: str, dport: int) -> int:
        four = (src, sport, dst, dport)
        part = self.table.get(four)
        if part is None:
            if len(self.table) >= MAX_OWNERS:  # half a million connections: start over
                self.table.clear()
                self.raw.clear()
            part = self.table[four] = self.table[(dst, dport, src, sport)] = self.seen % self.parts
            self.seen += 1
        return part


def keyed_items(records, part: int = 0, parts: int = 1, stats: ReadStats | None = None, follow: bool = True,
                concluding: bool = True, **kw) -> Iterator[tuple[int, Captured | Note]]:
    """``(key, item)`` for the connections that :class:`Owners` gives to ``part`` (all of
    them when ``parts`` is 1). Keys order items across parts as one process emits them: the
    capture record that caused them, then, for what the end of input flushes, the record
    that began their connection. Notes about the file itself come with part 0. ``follow``:
    let a reader that can take the in-order records of connections under way in C
    (see tails.py); the items are the same either way. ``concluding``: one part alone
    concludes its correlators at the end; else (and always for several parts) they are
    left in ``stats.correlated`` for the caller to merge and conclude."""
    stats = stats if stats is not None else ReadStats()
    dec = CaptureDecoder(conclude=False, **kw)
    owners = Owners(parts)
    if parts > 1 and hasattr(records, "pass_over"):
        records.pass_over(owners.raw, part)  # the reader skips what plain_tcp4 would, unmade
    following = False
    if follow and hasattr(records, "follow"):
        table: dict = {}
        if records.follow(table):
            dec.follow_with(table)
            following = True
    for rec in records:
        if type(rec) is Tail:  # a followed direction's buffer holds a frame
            index = rec[INDEX]
            for item in dec.taken(rec):
                yield index, item
            continue
        if isinstance(rec, CaptureProblem):
            if part == 0:
                text = rec.message if rec.message.startswith("record ") else f"record {rec.index}: {rec.message}"
                yield rec.index, Note("capture", text)
            continue
        stats.records += 1
        raw = None
        if parts > 1 or following:
            raw = plain_tcp4(rec)
            if parts > 1 and raw is not None and owners.raw.get(raw, part) != part:
                continue  # another worker's connection, and parsing would find nothing to report
        seg = parse_record(rec)
        if isinstance(seg, Skip):
            stats.skip(seg.reason)
            continue
        if parts > 1:
            owner = owners.of(seg.src, seg.sport, seg.dst, seg.dport)
            known = (seg.sport in dec.ports or seg.dport in dec.ports or seg.sport in dec.encrypted
                     or seg.dport in dec.encrypted)
            if raw is not None and raw not in owners.raw and known:  # the reader passes over the rest
                owners.raw[raw] = owners.raw[reverse_raw(raw)] = owner
            if owner != part:
                if not known:  # what it shows of its server, every part learns
                    index = rec.index
                    for item in dec.watch(seg):
                        yield index, item
                continue
        index = rec.index
        for item in dec.feed(seg):
            yield index, item
        if following and raw is not None:
            dec.follow(raw, seg)
    stats.records += getattr(records, "passed", 0)
    began = {flow: fd.first_index for flow, fd in dec.flows.items()}
    for item in dec.finishing():
        if type(item) is Note and item.kind == "undecoded":  # after every connection's last items, in the
            yield UNDECODED_KEY + (item.offset or 0), item  # order they began (offset: their first record)
            continue
        yield END_KEY + began.get(item.flow, END_KEY), item
    if parts == 1 and concluding:
        for note in concluded(dec.correlators):
            yield CONCLUDED_KEY, note
    else:
        stats.correlated = dec.correlators


def keyed(inp, kw: dict, progress=None) -> Iterator[tuple[int, Captured | Note]]:
    """``(key, item)`` pairs of a whole capture (an opened input) in this process; the progress bar, if any,
    follows the reader's position."""
    records = read_records(inp)
    if progress is not None:
        progress.where = records.tell
        records.on_read(lambda: progress(0))  # moves on through stretches that yield nothing
    return keyed_items(records, **kw)


def decode_records(records, stats: ReadStats | None = None, **kw) -> Iterator[Captured | Note]:
    for _, item in keyed_items(records, stats=stats, **kw):
        yield item


def decode_capture_file(path, stats: ReadStats | None = None, **kw) -> Iterator[Captured | Note]:
    """Raises ``CaptureError`` only if the file is unreadable or not a capture."""
    yield from decode_records(read_records(path), stats, **kw)
