"""The ``hex`` and ``decode`` commands: frames of a pasted dump, or of capture files (and
dumps given as files) in capture order, printed as tables, diagrams, JSON Lines or a
summary. Each returns whether ``--strict`` found an error finding; what cannot be used
raises :class:`~.inputs.Unusable`."""

from __future__ import annotations

from pathlib import Path

from ..families import FIELDS, HEADERS, VALUES, family_named, stream_families
from ..outputs.progress import progress_for
from ..outputs.shown import Shown
from ..sources.capture import CaptureError
from .hexinput import decode_hex_text
from .inputs import TEXT, Truncated, Unusable, capture_unusable, dump_items, keyed, kind_of, pure, sink_run, text_of
from .parallel import WorkerCrash, worker_count
from .show import judged_failed, recipe, show_capture, show_sinks


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
        raise Unusable(f"no {stream_families()[0].name.upper()} frame in {len(dump.data)} bytes of "
                       f"{dump.format} input")
    failed = judged_failed(renderer.tally, strict)
    if cut is not None and not failed:
        where = "stdin" if path is None or str(path) == "-" else str(path)
        have = len(cut.data)
        need = 24 if have < 24 else 24 + cut.body_length
        raise Truncated(f"{where}: the frame at offset {cut.offset} is cut short: {have} of {need} bytes")
    return failed


def decode_ports(ports: list[int], decode_as: list[str]) -> dict[int, str]:
    """The server ports to decode besides the known ones, with the family of each:
    ``--port`` (the first family), and ``--decode-as PORT=FAMILY``."""
    first = stream_families()[0].name
    out = dict.fromkeys(ports, first)
    for spec in decode_as:
        port, _, name = spec.partition("=")
        family = family_named(name)
        if family is None or family.framer is None:
            known = ", ".join(f.name for f in stream_families())
            raise Unusable(f"--decode-as {spec!r}: {name!r} is no protocol family (they are {known})")
        try:
            out[int(port)] = family.name
        except ValueError:
            raise Unusable(f"--decode-as {spec!r}: {port!r} is not a port number") from None
    return out


def decode_files(files: list[Path], fmt: str, keep, limit: int | None, strict: bool, jobs: int, shown: Shown,
                 ports: set[int], collections: bool | None, heuristic: bool) -> bool:
    """Every file in turn, in ``fmt`` (table, jsonl or summary): a capture over ``jobs``
    worker processes when that pays, a hex dump as one connection named by the file."""
    headers_only = fmt == "summary" and not strict  # summary counts headers (judged only for --strict)
    detail = HEADERS if headers_only else VALUES if fmt != "table" else FIELDS  # jsonl needs no field rows
    kw = dict(ports=ports, collections=collections, heuristic=heuristic, detail=detail,
              lane=fmt == "jsonl" and keep.empty and limit is None and not pure(), follow=not pure())
    failed = False
    for path in files:
        if kind_of(path) == TEXT:  # a hex dump: one connection, frames by position
            failed |= show_capture(dump_items(path, collections), fmt, keep, limit, strict, shown=shown)
            continue
        sink = recipe(fmt, keep, limit, not headers_only)
        failed |= _decode_capture(path, fmt, keep, limit, strict, jobs, shown, sink, kw)
    return failed


def _decode_capture(path: Path, fmt: str, keep, limit: int | None, strict: bool, jobs: int, shown: Shown,
                    sink, kw: dict) -> bool:
    """One capture file: tables in this process, sinks' output over workers when it pays."""
    progress = progress_for(path, fmt)
    try:
        if fmt == "table":
            return show_capture(keyed(path, kw, progress), fmt, keep, limit, strict, progress, shown)
        payloads, results = sink_run(path, worker_count(jobs, path, limit is None), sink, kw, progress)
        return show_sinks(fmt, payloads, results, strict, progress)
    except (CaptureError, WorkerCrash) as exc:
        raise capture_unusable(path, exc) from None
