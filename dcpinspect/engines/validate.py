"""The ``validate`` command: the validator's findings of capture files and hex dumps given
as files, as a table or JSON Lines, and whether any reaches the severity that fails."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

from ..families import VALUES
from ..outputs.console import make_console
from ..outputs.escape import safe
from ..outputs.jsonl import dumps
from ..outputs.rows import print_rows
from ..sources.capture import CaptureError
from .inputs import CAPTURE, Input, Unusable, capture_unusable, dump_items, jobs_for, kind_of, opened, sink_run
from .options import CaptureOptions
from .parallel import WorkerCrash, run_sink
from ..findings import LEVELS
from .sinks import FindingRow, make_sink

HEADERS = ("frame", "time", "flow", "vb", "sid", "severity", "class", "rule", "message")


def validate_files(files: list[Path], jsonl: bool, fail_on: str, capture: CaptureOptions, collections: bool | None,
                   show_info: bool, jobs: int) -> bool:
    """Print the findings of every file (damage to a file itself on stderr, as decode says
    it); returns whether one is of ``fail_on``'s severity or worse."""
    rows: list[FindingRow] = []
    frames = 0
    err = make_console(stderr=True)
    for path in files:
        with opened(path) as inp:
            got, checked = findings_of(inp, capture, collections, jobs, show_info)
        for row in got:
            if isinstance(row, str):
                err.print(safe(f"note: {path}: {row}"), markup=False)
            else:
                rows.append(row)
        frames += checked
    _print_findings(rows, frames, jsonl)
    if frames == 0:
        raise Unusable("no frame found in the input")
    return max((LEVELS[r.severity] for r in rows), default=-1) >= LEVELS[fail_on]


def findings_of(inp: Input, capture: CaptureOptions, collections: bool | None, jobs: int,
                show_info: bool) -> tuple[list[FindingRow | str], int]:
    """Findings rows of a capture (over ``jobs`` processes when it pays), or of a hex dump
    given as a file; returns (rows in order, frames checked)."""
    recipe = partial(make_sink, "findings", inp.name, show_info)
    if kind_of(inp) == CAPTURE:
        kw = dict(collections=collections, detail=VALUES, **capture.decoder())  # no field rows
        try:
            payloads, results = sink_run(inp, jobs_for(inp, jobs, True), recipe, kw)
            rows = [row for batch in payloads for row in batch]
            return rows, sum(results())
        except (CaptureError, WorkerCrash) as exc:
            raise capture_unusable(inp, exc) from None
    sink = recipe()
    rows = [row for batch in run_sink(sink, dump_items(inp, collections)) for row in batch]
    return rows, sink.result()


def _print_findings(rows: list[FindingRow], frames: int, jsonl: bool) -> None:
    if jsonl:
        sys.stdout.write("".join(dumps(r.record) + "\n" for r in rows))
        return
    console = make_console()
    if rows:
        print_rows(console, HEADERS, (tuple(map(safe, r.cells)) for r in rows))
    errors = sum(1 for r in rows if r.severity == "error")
    console.print(f"{frames} frames checked: {errors} errors, {len(rows) - errors} other findings")
