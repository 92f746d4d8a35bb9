"""The ``validate`` command: the validator's findings of captures and hex dumps given as
files, printed as they are found (a table or JSON Lines), and whether any reaches the
severity that fails."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import Callable, Iterator

from ..families import VALUES
from ..findings import LEVELS
from ..outputs.console import make_console
from ..outputs.escape import safe
from ..outputs.findings_stream import FindingsStream
from ..outputs.jsonl import dumps
from ..outputs.progress import progress_for
from ..outputs.undecoded import line as undecoded_line, record as undecoded_record, tally
from ..sessions.captured import Note
from ..sources.capture import CaptureError
from .inputs import CAPTURE, Input, Unusable, kind_of, opened
from .reading import capture_unusable, dump_items, jobs_for, sink_run
from .options import CaptureOptions
from .parallel import WorkerCrash
from .show import clear
from .sinks import FindingRow, make_sink, run_sink

HEADERS = ("frame", "time", "flow", "vb", "sid", "severity", "class", "rule", "message")
#: the repeats table's first columns (FindingRow.repeat_cells); the count and frames follow
REPEAT_HEADERS = ("rule", "flow", "vb", "sid", "severity")


def validate_files(files: list[Path], jsonl: bool, fail_on: str, capture: CaptureOptions, collections: bool | None,
                   show_info: bool, jobs: int) -> bool:
    """Print the findings of every file as they are found, in capture order (damage to a
    file itself on stderr, as decode says it); returns whether one is of ``fail_on``'s
    severity or worse."""
    frames = 0
    undecoded: list[Note] = []  # connections no family decoded: told after the findings
    err = make_console(stderr=True)
    out = FindingsStream(jsonl, None if jsonl else make_console(), HEADERS, REPEAT_HEADERS)
    for path in files:
        with opened(path) as inp:
            if not inp.regular:  # a pipe: a finding may be the last for a long while
                out.as_found()
            progress = None
            try:
                captured = kind_of(inp) == CAPTURE
                if captured:
                    progress = progress_for(inp, "jsonl" if jsonl else "table", printed_between=True)
                out.before_print = lambda: clear(progress)
                payloads, results = findings_of(inp, capture, collections, jobs, show_info, progress, jsonl)
                for batch in payloads:
                    if type(batch) is tuple:  # a frame's findings as JSON lines (sinks.Written)
                        out.add_written(*batch)
                        continue
                    for row in batch:
                        if isinstance(row, str):
                            if jsonl:  # the lines found before it, first
                                out.flush()
                            clear(progress)
                            err.print(safe(f"note: {path}: {row}"), markup=False)
                        elif isinstance(row, Note):
                            undecoded.append(row)
                        else:
                            out.add(row)
                frames += sum(results())
            except (CaptureError, WorkerCrash) as exc:
                raise capture_unusable(inp, exc) from None
            finally:
                clear(progress)
    if frames == 0 and not undecoded:
        out.flush()
        raise Unusable("no frame found in the input")
    out.close(frames)
    _print_undecoded(undecoded, jsonl)
    return out.worst >= LEVELS[fail_on]


def _print_undecoded(undecoded: list[Note], jsonl: bool) -> None:
    """The connections no family decoded (a line, or an object each in JSON Lines): not
    findings, and no cause to fail."""
    if jsonl:
        sys.stdout.write("".join(dumps(undecoded_record(n)) + "\n" for n in undecoded))
        return
    told = undecoded_line(tally(undecoded))
    if told:
        make_console().print(told)


def findings_of(inp: Input, capture: CaptureOptions, collections: bool | None, jobs: int, show_info: bool,
                progress=None, lines: bool = False) -> tuple[Iterator[list[FindingRow | str]], Callable[[], list[int]]]:
    """Batches of findings rows of a capture (over ``jobs`` processes when it pays) or of a
    hex dump given as a file, in order as they are found (``lines``: a frame's as their JSON
    lines, sinks.Written), and a function giving the frames checked (a list to sum) once they
    are all read."""
    recipe = partial(make_sink, "findings", inp.name, show_info, lines=lines)
    if kind_of(inp) == CAPTURE:
        kw = dict(collections=collections, detail=VALUES, **capture.decoder())  # no field rows
        return sink_run(inp, jobs_for(inp, jobs, True), recipe, kw, progress)
    sink = recipe()
    return run_sink(sink, dump_items(inp, collections)), lambda: [sink.result()]
