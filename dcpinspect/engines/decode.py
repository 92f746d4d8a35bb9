"""The ``hex`` and ``decode`` commands: frames of a pasted dump, or of capture files (and
dumps given as files) in capture order, printed as tables, diagrams, JSON Lines or a
summary. Each returns whether ``--strict`` found an error finding; what cannot be used
raises :class:`~.inputs.Unusable`."""

from __future__ import annotations

from pathlib import Path

from ..families import FIELDS, HEADERS, VALUES, default_family
from ..outputs.progress import progress_for
from ..outputs.shown import Shown
from ..sources.capture import CaptureError
from .hexinput import decode_hex_text
from .inputs import TEXT, Input, Truncated, Unusable, kind_of, opened, pure, text_of
from .options import CaptureOptions
from .reading import capture_unusable, dump_items, jobs_for, sink_run
from .records import keyed
from .parallel import WorkerCrash
from .show import judged_failed, show_capture, show_sinks
from .sinks import recipe


def decode_hex_dump(path: Path | None, fmt: str, collections: bool | None, shown: Shown, strict: bool) -> bool:
    """A pasted dump (from ``path``, or stdin for none or ``-``) frame by frame in ``fmt``
    (table, jsonl or diagram); what the dump's reader noticed goes to stderr first."""
    result = decode_hex_text(text_of(path), collections)
    dump = result.dump
    if not dump.data:
        where = "stdin" if path is None or str(path) == "-" else str(path)
        raise Unusable(f"{where}: no hex bytes found" + (f" ({dump.problems[0]})" if dump.problems else ""))
    from ..outputs.console import make_console  # the terminal views' imports, for them alone
    from ..outputs.escape import safe
    from ..outputs.render import Renderer

    err = make_console(stderr=True)
    for problem in dump.problems:
        err.print(f"dcpinspect: input: {safe(problem)}")
    renderer = Renderer(fmt, make_console(), shown=shown)
    cut = None
    for item in result.items:
        renderer.item(item)
        if getattr(item, "truncated", False):
            cut = item
    renderer.summary()
    if renderer.tally.frames == 0:
        raise Unusable(f"no {default_family().name.upper()} frame in {len(dump.data)} bytes of "
                       f"{dump.format} input")
    failed = judged_failed(renderer.tally, strict)
    if cut is not None and not failed:
        where = "stdin" if path is None or str(path) == "-" else str(path)
        have = len(cut.data)
        need = 24 if have < 24 else 24 + cut.body_length
        raise Truncated(f"{where}: the frame at offset {cut.offset} is cut short: {have} of {need} bytes")
    return failed


def decode_files(files: list[Path], fmt: str, keep, limit: int | None, strict: bool, jobs: int, shown: Shown,
                 capture: CaptureOptions, collections: bool | None, values: bool = False) -> bool:
    """Every input in turn (a file, ``-``, a pipe), in ``fmt`` (table, jsonl or summary): a
    capture over ``jobs`` worker processes when that pays, a hex dump as one connection
    named by the file; ``values``: records carry the data they move whole (:attr:`Options.data`)."""
    headers_only = fmt == "summary" and not strict  # summary counts headers (judged only for --strict)
    detail = HEADERS if headers_only else VALUES if fmt != "table" else FIELDS  # jsonl needs no field rows
    kw = dict(collections=collections, detail=detail, **capture.decoder(),
              lane=fmt == "jsonl" and keep.empty and limit is None and not pure() and not values, follow=not pure())
    if values:
        kw["data"] = True
    failed = False
    for path in files:
        with opened(path) as inp:
            if kind_of(inp) == TEXT:  # a hex dump: one connection, frames by position
                failed |= show_capture(dump_items(inp, collections), fmt, keep, limit, strict, shown=shown)
                continue
            sink = recipe(fmt, keep, limit, not headers_only)
            failed |= _decode_capture(inp, fmt, keep, limit, strict, jobs, shown, sink, kw)
    return failed


def _decode_capture(inp: Input, fmt: str, keep, limit: int | None, strict: bool, jobs: int, shown: Shown,
                    sink, kw: dict) -> bool:
    """One capture: tables in this process, sinks' output over workers when it pays."""
    progress = progress_for(inp, fmt)
    try:
        if fmt == "table":
            return show_capture(keyed(inp, kw, progress), fmt, keep, limit, strict, progress, shown)
        payloads, results = sink_run(inp, jobs_for(inp, jobs, limit is None), sink, kw, progress)
        return show_sinks(fmt, payloads, results, strict, progress)
    except (CaptureError, WorkerCrash) as exc:
        raise capture_unusable(inp, exc) from None
