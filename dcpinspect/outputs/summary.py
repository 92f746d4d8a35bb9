"""Per-flow counts of a capture: frames by opcode, bytes, gaps, findings."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

from ..sessions.captured import Captured, Note, flow_label
from .escape import safe
from .rows import print_rows
from .undecoded import line as undecoded_line, tally


@dataclass
class FlowSummary:
    frames: Counter = field(default_factory=Counter)  # direction → frames
    bytes: Counter = field(default_factory=Counter)
    opcodes: Counter = field(default_factory=Counter)
    findings: Counter = field(default_factory=Counter)  # (severity, rule) → n
    #: frames whose findings are counted (all of them when the summary is judged; else
    #: the records of families that judge them whatever the context)
    judged: int = 0
    notes: Counter = field(default_factory=Counter)  # kind → n
    note_bytes: Counter = field(default_factory=Counter)
    first_ts: float | None = None
    last_ts: float | None = None


@dataclass
class CaptureSummary:
    flows: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    #: the frames went through the rules (False: headers only, so no findings to count)
    judged: bool = True
    #: frames counted, and frames read that a filter passed over (not counted)
    shown: int = 0
    passed_over: int = 0
    #: the connections no family decoded (``undecoded`` notes)
    undecoded: list = field(default_factory=list)

    def add(self, item: Captured | Note) -> None:
        if type(item) is Note and item.kind == "undecoded":
            self.undecoded.append(item)
            return
        if item.flow is None:
            self.notes.append(item)
            return
        fs = self.flows.get(item.flow)
        if fs is None:
            fs = self.flows[item.flow] = FlowSummary()
        if isinstance(item, Captured):
            msg = item.msg
            fs.frames[item.direction] += 1
            fs.bytes[item.direction] += msg.size
            fs.opcodes[msg.counted] += 1  # (table, name): named when rendered
            fs.judged += self.judged or msg.judged
            for f in msg.findings:
                fs.findings[(f.severity, f.rule)] += 1
            ts = item.ts
            if ts is not None:  # hex dumps have no times
                if fs.first_ts is None:
                    fs.first_ts = ts
                fs.last_ts = ts
        else:
            fs.notes[item.kind] += 1
            fs.note_bytes[item.kind] += item.size

    def total_frames(self) -> int:
        return sum(sum(fs.frames.values()) for fs in self.flows.values())

    def _judged(self, fs: FlowSummary) -> bool:
        """Whether every frame of a connection was judged (its findings are all counted)."""
        return self.judged or fs.judged == sum(fs.frames.values())

    def render(self, console: Console) -> None:
        head = ("flow", "c2s frames", "s2c frames", "bytes", "duration s", "gaps", "skipped B")
        unjudged = sum(not self._judged(fs) for fs in self.flows.values())
        counted = unjudged < len(self.flows) or not self.flows and self.judged
        if counted:
            head += ("errors", "warnings")
        rows = []
        by_kind: dict[tuple[str, str], Counter] = {}  # (column, title) → name → frames
        findings: Counter = Counter()
        for flow, fs in self.flows.items():
            for (table, key), n in fs.opcodes.items():
                column, title, name = table.count_name(key)
                by_kind.setdefault((column, title), Counter())[name] += n
            findings.update(fs.findings)
            errors = sum(n for (sev, _), n in fs.findings.items() if sev == "error")
            warnings = sum(n for (sev, _), n in fs.findings.items() if sev == "warning")
            dur = "-" if fs.first_ts is None else f"{abs(fs.last_ts - fs.first_ts):.3f}"
            sides = ("-", "-") if fs.frames[""] else (str(fs.frames["c2s"]), str(fs.frames["s2c"]))  # a hex dump
            cells = (safe(flow_label(flow)), *sides, str(sum(fs.bytes.values())), dur, str(fs.notes["gap"]),
                     str(fs.note_bytes["skipped"]))
            if counted:
                cells += (str(errors), str(warnings)) if self._judged(fs) else ("-", "-")
            rows.append(cells)
        print_rows(console, head, rows, title="Connections")
        console.print()
        tables = [(column, title, counts) for (column, title), counts in sorted(by_kind.items(), key=_table_order)]
        for i, (column, title, counts) in enumerate(tables or [("opcode", "Opcodes", Counter())]):
            if i:
                console.print()
            ops = Table(column, "frames", title=title, title_justify="left", box=None)
            for name, n in counts.most_common():
                ops.add_row(safe(name), str(n))
            console.print(ops)
        if findings:
            console.print()
            ft = Table("severity", "rule", "count", title="Findings", title_justify="left", box=None)
            for (sev, rule), n in sorted(findings.items(), key=lambda kv: (-kv[1], kv[0])):
                ft.add_row(sev, rule, str(n))
            console.print(ft)
        for note in self.notes:
            console.print(f"note: {safe(note.message)}")
        console.print(f"{self.total_frames()} frames in {len(self.flows)} connections"
                      + (f" (selected by the filters; {self.passed_over} other frames read)" if self.passed_over else ""))
        told = undecoded_line(tally(self.undecoded))
        if told:
            console.print(told)
        if unjudged or not (self.judged or self.flows):
            which = "frames" if unjudged in (0, len(self.flows)) else \
                f"the frames of {unjudged} of the {len(self.flows)} connections ('-')"
            console.print(f"{which} counted by their headers, not judged: `dcpinspect validate` "
                          "(or `--strict`) checks them against the rules")


def _table_order(entry) -> tuple:
    (column, _), _ = entry
    return (column != "opcode", column)  # frames counted by opcode first
