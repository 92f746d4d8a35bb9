"""What a capture's items become, one sink per output: the same code in one process or in
each worker of :mod:`.parallel`, so both print the same bytes.

A sink's :meth:`take` returns a small picklable payload (or None) for the caller to print
in capture order, and keeps totals that :func:`combine_*` merges across workers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol

from ..outputs.undecoded import record as undecoded_record
from .finding_lines import FindingLines
from ..sessions.captured import Captured, Lines, Note, flow_label
from ..findings import LEVELS, Finding
from ..outputs.jsonl import dumps_line
from ..outputs.stamp import stamp as _stamp
from ..outputs.tally import Tally

if TYPE_CHECKING:
    from ..outputs.summary import CaptureSummary



class Sink(Protocol):
    """Turns items into payloads for the caller, keeps totals for :meth:`result`."""

    def take(self, key: int, item: Captured | Note) -> Any | None: ...

    def done(self) -> bool: ...

    def result(self) -> Any: ...


def run_sink(sink: Sink, keyed: Iterator[tuple[int, Captured | Note]]) -> Iterator[Any]:
    """One process: the sink's payloads in order."""
    take = sink.take
    for key, item in keyed:
        payload = take(key, item)
        if payload is not None:
            yield payload
            if sink.done():
                return


class _Labels(dict):
    """Flow → its ``ip:port-ip:port`` label, made once a flow."""

    def __missing__(self, flow) -> str:
        label = self[flow] = flow_label(flow)
        return label


@dataclass
class JsonlSink:
    """``decode --format jsonl``: payload ``(is_frame, line)`` (ASCII bytes, newline included:
    one line, or several for :class:`Lines`); totals: a :class:`Tally` of
    every frame, shown or not (``--strict`` judges them all). ``keep`` None: every frame."""

    keep: Callable[[Captured], bool] | None = None
    limit: int | None = None
    tally: Tally = field(default_factory=Tally)
    shown: int = 0
    labels: _Labels = field(default_factory=_Labels)

    def take(self, key: int, item: Captured | Note | Lines) -> tuple[bool, str] | None:
        if type(item) is Lines:  # only made with no filter and no limit (CaptureDecoder lane)
            self.tally.frames += item.count
            self.shown += item.count
            return True, item.text
        if isinstance(item, Captured):
            msg = item.msg
            self.tally.add_message(msg)
            if (self.keep is not None and not self.keep(item)) or (
                    self.limit is not None and self.shown >= self.limit):
                return None
            self.shown += 1
            rows = msg.placed_rows(dict(frame=item.number, ts=item.ts, flow=self.labels[item.flow],
                                        direction=item.direction))
            return True, dumps_line(rows[0]) if len(rows) == 1 else b"".join(map(dumps_line, rows))
        if item.kind == "undecoded":  # a connection not decoded: its server's port and bytes each way
            return False, dumps_line(undecoded_record(item, self.labels[item.flow] if item.flow else None))
        rec = {"kind": item.kind, "message": item.message, "ts": item.ts,
               "flow": self.labels[item.flow] if item.flow else None, "direction": item.direction,
               "offset": item.offset, "length": item.size}
        if item.finding is not None:  # what a connection's end or the whole capture showed
            rec["findings"] = [item.finding.to_json()]
        return False, dumps_line(rec)

    def done(self) -> bool:
        return self.limit is not None and self.shown >= self.limit

    def result(self) -> Tally:
        return self.tally


@dataclass
class SummarySink:
    """``decode --format summary``: no payloads (but True at the ``limit``-th frame counted);
    totals: per-connection counts of the frames
    ``keep`` selects (None: every frame), the first ``limit`` of them, and a :class:`Tally`
    of every frame read (``--strict`` judges them all)."""

    summary: "CaptureSummary" = field(default_factory=lambda: _summary())
    tally: Tally = field(default_factory=Tally)
    began: dict = field(default_factory=dict)  # flow → key of its first item
    judged: bool = True  # the frames went through the rules (False: headers only)
    keep: Callable[[Captured], bool] | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        self.summary.judged = self.judged

    def take(self, key: int, item: Captured | Note) -> None:
        summary = self.summary
        if isinstance(item, Captured):
            self.tally.add_message(item.msg)
            if self.keep is not None and not self.keep(item):
                summary.passed_over += 1
                return None
            summary.shown += 1
        elif self.keep is not None and item.flow is not None and item.flow not in summary.flows:
            return None  # a note of a connection none of whose frames is counted
        if item.flow is not None and item.flow not in self.began:
            self.began[item.flow] = key
        summary.add(item)
        # at the limit a payload, so that the loop asks done() and stops here
        return True if summary.shown == self.limit else None

    def done(self) -> bool:
        return self.limit is not None and self.summary.shown >= self.limit

    def result(self) -> "SummarySink":
        return self


def combine_tallies(tallies: list[Tally]) -> Tally:
    total = Tally()
    for t in tallies:
        total.frames += t.frames
        total.skipped += t.skipped
        total.skipped_bytes += t.skipped_bytes
        total.severities.update(t.severities)
    return total


def combine_summaries(parts: list[SummarySink]) -> SummarySink:
    """One summary with connections in the order they first showed up in the capture."""
    out = SummarySink(tally=combine_tallies([p.tally for p in parts]), judged=all(p.judged for p in parts))
    firsts = sorted((key, i, flow) for i, p in enumerate(parts) for flow, key in p.began.items())
    for key, i, flow in firsts:
        fs, have = parts[i].summary.flows[flow], out.summary.flows.get(flow)
        if have is None:
            out.summary.flows[flow] = fs
            out.began[flow] = key
            continue
        for name in ("frames", "bytes", "opcodes", "findings", "notes", "note_bytes"):  # a connection that a
            getattr(have, name).update(getattr(fs, name))  # capture-level finding names, told apart
        if fs.first_ts is not None:
            have.first_ts = fs.first_ts if have.first_ts is None else min(have.first_ts, fs.first_ts)
            have.last_ts = fs.last_ts if have.last_ts is None else max(have.last_ts, fs.last_ts)
    for p in parts:
        out.summary.notes.extend(p.summary.notes)
        out.summary.passed_over += p.summary.passed_over
        out.summary.shown += p.summary.shown
    out.summary.undecoded = sorted((n for p in parts for n in p.summary.undecoded), key=lambda n: n.offset or 0)
    return out


class FindingRow:
    """One finding as ``validate`` prints it: a JSON record and the table's cells, both made
    when asked for (a capture can have a finding a connection: a row keeps the finding and
    the few facts about its frame, not the frame)."""

    __slots__ = ("finding", "source", "stamp", "frame", "ts", "flow", "direction", "opcode_name", "vbucket",
                 "stream_id", "framed")

    def __init__(self, finding: Finding, source: str, stamp: Callable[[float], str], frame: int | None,
                 ts: float | None, flow: str | None, direction: str | None, opcode_name: str | None,
                 vbucket: int | None, stream_id: int | None, framed: bool) -> None:
        self.finding, self.source, self.stamp = finding, source, stamp
        self.frame, self.ts, self.flow, self.direction = frame, ts, flow, direction
        self.opcode_name, self.vbucket, self.stream_id = opcode_name, vbucket, stream_id
        self.framed = framed  # on a frame (else a note: the end of a connection)

    def __getstate__(self):
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setstate__(self, state) -> None:
        for name, value in zip(self.__slots__, state):
            setattr(self, name, value)

    @property
    def severity(self) -> str:
        return self.finding.severity

    @property
    def record(self) -> dict:
        f = self.finding
        rec = {"file": self.source, **f.to_json()}
        rec.update(frame=self.frame, ts=self.ts, flow=self.flow, direction=self.direction,
                   opcode_name=self.opcode_name, vbucket=self.vbucket, stream_id=self.stream_id,
                   related_frame=f.frame)
        return rec

    @property
    def frame_cell(self) -> str:
        """The frame the table names: the finding's frame, or for a connection's end the
        frame it relates to."""
        f = self.finding
        return str(self.frame) if self.framed else (str(f.frame) if f.frame else "-")

    @property
    def fold_key(self) -> tuple:
        """What a repeat is the same in: the file, the connection, the stream, the rule."""
        return self.source, self.flow, self.vbucket, self.finding.stream_id, self.finding.rule

    @property
    def repeat_cells(self) -> tuple[str, ...]:
        """The cells of the row its repeats are folded into (before the count and frames)."""
        f, vb = self.finding, self.vbucket
        return (f.rule, self.flow or "-", "-" if vb is None else str(vb), "-" if f.stream_id is None else str(f.stream_id),
                f.severity)

    @property
    def where(self) -> str:
        """The stream, as the narrow view says it: ``vb 5 sid 1`` (the parts there are)."""
        f, vb = self.finding, self.vbucket
        return "" if vb is None else f"vb {vb}" + ("" if f.stream_id is None else f" sid {f.stream_id}")

    @property
    def folded(self) -> tuple[str, str, str]:
        """The lines of the narrow view: what and where, then when, the flow and the stream,
        then the message."""
        f = self.finding
        when = self.stamp(self.ts) if self.ts else ""
        return (f"frame {self.frame_cell}  {f.severity}  {f.cls}  {f.rule}",
                "  ".join(x for x in (when, self.flow or "", self.where) if x), f.message)

    @property
    def line(self) -> str:
        """The JSON line of :attr:`record`, its newline included."""
        return dumps_line(self.record).decode("ascii")

    @property
    def cells(self) -> tuple[str, ...]:
        f, vb = self.finding, self.vbucket
        return (self.frame_cell, self.stamp(self.ts) if self.ts else "-", self.flow or "-", "-" if vb is None else str(vb),
                "-" if f.stream_id is None else str(f.stream_id), f.severity, f.cls, f.rule, f.message)


#: a frame's findings rows as JSON Lines prints them, all a process sends of them: their
#: lines (newlines included), how many, how many are errors, and the highest severity level
#: (built-in types alone: nothing of ours to call when they are pickled or unpickled)
Written = tuple[str, int, int, int]


@dataclass
class FindingsSink:
    """``validate``: payload a list of :class:`FindingRow` (and, for damage to the capture
    file itself, its note's text), or with ``lines`` a frame's rows as :data:`Written`;
    totals: frames checked."""

    source: str  # the file name the rows carry
    show_info: bool = False
    stamp: Callable[[float], str] = _stamp  # a date, or the raw time when it cannot be one
    frames: int = 0
    labels: _Labels = field(default_factory=_Labels)
    #: rows as their JSON lines (:data:`Written`), made where the finding is found (in the
    #: worker process, that sends the lines and not the rows)
    lines: bool = False
    #: what writes the rows' lines (made with the sink, in the process that writes them)
    writer: FindingLines = field(default_factory=lambda: FindingLines(FindingRow))

    def take(self, key: int, item: Captured | Note) -> list[FindingRow | str] | Written | None:
        if isinstance(item, Captured):
            self.frames += 1
            found = item.msg.findings
            if not found:
                return None
        elif item.finding is not None:
            found = [item.finding]
        elif item.kind == "capture":  # the file is damaged, or a cap gave something up
            return [item.message]
        elif item.kind == "undecoded":  # told with the count of frames checked
            return [item]
        else:
            return None
        if not self.show_info:
            found = [f for f in found if f.severity != "info"]
            if not found:
                return None
        if self.lines:  # the lines of the rows, made without them
            of, source, members = self.writer.of, self.source, self._members
            if len(found) == 1:
                f = found[0]
                severity = f.severity
                return of(f, source, *members(f, item)), 1, int(severity == "error"), LEVELS[severity]
            severities = [f.severity for f in found]
            return ("".join(of(f, source, *members(f, item)) for f in found), len(found), severities.count("error"),
                    max(LEVELS[s] for s in severities))
        return [FindingRow(f, self.source, self.stamp, *self._members(f, item)) for f in found]

    def _members(self, f: Finding, where: Captured | Note) -> tuple:
        """The members of ``f``'s row after its finding, source and stamp (FindingRow's order)."""
        flow = self.labels[where.flow] if where.flow else None
        if isinstance(where, Captured):
            msg = where.msg
            return (where.number, where.ts, flow, where.direction or None, msg.name,
                    f.vbucket if f.vbucket is not None else msg.vbucket,
                    f.stream_id if f.stream_id is not None else msg.stream_id, True)
        return f.frame, where.ts, flow, None, None, f.vbucket, f.stream_id, False

    def done(self) -> bool:
        return False

    def result(self) -> int:
        return self.frames


def make_sink(kind: str, *args: Any, **kw: Any):
    """A sink by name, for worker processes (a picklable recipe: name and arguments)."""
    return {"jsonl": JsonlSink, "summary": SummarySink, "findings": FindingsSink}[kind](*args, **kw)


def recipe(fmt: str, keep, limit: int | None = None, judged: bool = True) -> Callable:
    """How to make the sink of a format: a picklable recipe, for worker processes too."""
    if fmt == "jsonl":
        return partial(make_sink, "jsonl", None if keep.empty else keep, limit)
    return partial(make_sink, "summary", judged=judged, keep=None if keep.empty else keep, limit=limit)


def _summary() -> "CaptureSummary":
    from ..outputs.summary import CaptureSummary  # rich: only for the formats that print one

    return CaptureSummary()
