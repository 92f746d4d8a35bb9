"""The ``dcpinspect`` command line."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from .limits import DIAGRAM_SHOWN, VALUE_SHOWN, LimitError, check_environment
from .sources.inputs import CAPTURE, TEXT

if TYPE_CHECKING:
    from .outputs.render import Renderer

EXIT_OK, EXIT_VIOLATIONS, EXIT_UNUSABLE, EXIT_INTERRUPTED = 0, 1, 2, 130

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Inspect Couchbase MCBP/DCP (and TAP) traffic: hex dumps, captures, live interfaces.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


class Collections(str, Enum):
    auto = "auto"
    on = "on"
    off = "off"


class Format(str, Enum):
    table = "table"
    jsonl = "jsonl"
    diagram = "diagram"


class ListFormat(str, Enum):
    """Lists of rows (findings, rules): a table or JSON Lines."""

    table = "table"
    jsonl = "jsonl"


def _collections(value: Collections) -> bool | None:
    return {"auto": None, "on": True, "off": False}[value.value]


def fail(message: str, code: int = EXIT_UNUSABLE) -> None:
    """One unwrapped line on stderr, then exit."""
    from .outputs.escape import safe

    sys.stderr.write(f"dcpinspect: {safe(message)}\n")
    raise typer.Exit(code)


def _capture_error(path: Path, exc: Exception) -> None:
    text = str(exc)
    fail(text if str(path) in text else f"{path}: {text}")


def _read_text(path: Optional[Path]) -> str:
    from .sources.inputs import InputError, read_text, stdin_binary

    stdin = None
    if path is None or str(path) == "-":
        stdin = stdin_binary()
        if stdin is not None and sys.stdin.isatty():
            make_console(stderr=True).print("Paste a hex dump, then Ctrl-D:")
    try:
        return read_text(path, stdin)
    except InputError as exc:
        fail(str(exc))


def _input_kind(path: Path) -> str:
    """What a named input holds (:mod:`dcpinspect.sources.inputs`), or the one-line reason
    it cannot be used."""
    from .sources.inputs import InputError, input_kind

    try:
        return input_kind(path)
    except InputError as exc:
        fail(str(exc))


def make_console(stderr: bool = False):
    """A rich console (imported only by the outputs that print through one)."""
    from .outputs.render import make_console as make

    return make(stderr=stderr)


def _exit_code(renderer: Renderer, strict: bool) -> int:
    if strict and renderer.tally.severities["error"]:
        return EXIT_VIOLATIONS
    return EXIT_OK


#: ``--max-value``, the same on every command with a table view
MAX_VALUE_OPTION = typer.Option(None, "--max-value", min=1, metavar="BYTES",
                                help=f"Bytes of each value the table shows (default {VALUE_SHOWN.default}).")


def _shown(full: bool, max_value: int | None, max_diagram: int | None = None):
    """What the table and diagram show of each frame: ``--full``, ``--max-value``, ``--max-diagram``."""
    from .outputs.shown import Shown

    if full:
        return Shown.everything()
    caps = Shown()
    return Shown(max_value or caps.value, max_diagram or caps.diagram, caps.rows)


@app.command("hex")
def hex_command(
    path: Optional[Path] = typer.Argument(None, help="File holding the dump; '-' or nothing reads stdin."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, jsonl or diagram."),
    diagram: bool = typer.Option(False, "--diagram", help="Draw each frame as the spec's byte diagram."),
    collections: Collections = typer.Option(
        Collections.auto, help="Whether keys carry a collection-id prefix (auto: from HELO, else by the key's bytes)."
    ),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 when any frame has an error finding."),
    full: bool = typer.Option(False, "--full", help="Show values and diagrams whole (the table and diagram cap them)."),
    max_value: Optional[int] = MAX_VALUE_OPTION,
    max_diagram: Optional[int] = typer.Option(None, "--max-diagram", min=1, metavar="BYTES",
                                              help=f"Bytes of each frame the diagram draws (default {DIAGRAM_SHOWN.default})."),
) -> None:
    """Decode frames from a pasted hex dump (plain hex, xxd, hexdump -C, od, tcpdump -X, Wireshark, spec diagrams)."""
    from .engines.hexinput import decode_hex_text

    text = _read_text(path)
    result = decode_hex_text(text, _collections(collections))
    if not result.dump.data:
        where = "stdin" if path is None or str(path) == "-" else str(path)
        fail(f"{where}: no hex bytes found" + (f" ({result.dump.problems[0]})" if result.dump.problems else ""))
    err = make_console(stderr=True)
    for problem in result.dump.problems:
        err.print(f"dcpinspect: input: {_safe(problem)}")
    from .outputs.render import Renderer

    renderer = Renderer("diagram" if diagram else fmt.value, make_console(), shown=_shown(full, max_value, max_diagram))
    for item in result.items:
        renderer.item(item)
    if renderer.tally.frames == 0:
        renderer.summary()
        fail(f"no MCBP frame in {len(result.dump.data)} bytes of {result.dump.format} input")
    renderer.summary()
    raise typer.Exit(_exit_code(renderer, strict))


class CaptureFormat(str, Enum):
    table = "table"
    jsonl = "jsonl"
    summary = "summary"


def _port_map(ports: list[int], decode_as: list[str]) -> set[int]:
    out = set(ports)
    for spec in decode_as:
        port, _, proto = spec.partition("=")
        if proto.lower() not in ("mcbp", "dcp", "memcached"):
            fail(f"--decode-as {spec!r}: only PORT=mcbp is known")
        try:
            out.add(int(port))
        except ValueError:
            fail(f"--decode-as {spec!r}: {port!r} is not a port number")
    return out


def _frame_filter(opcode: list[str], vbucket: list[int], flow: str):
    from .engines.filters import FrameFilter, parse_opcode

    ops: set[int] = set()
    for o in opcode:
        try:
            ops |= parse_opcode(o)
        except ValueError as exc:
            fail(str(exc))
    return FrameFilter(frozenset(ops), frozenset(vbucket), flow)


def _stamp(ts: float) -> str:
    """A capture time as a date, or its raw number when it cannot be one (never raises)."""
    from .outputs.stamp import stamp

    return stamp(ts)


def show_capture(keyed, fmt: str, keep, limit: int | None, strict: bool, progress=None, shown=None) -> int:
    """Render ``(key, item)`` pairs of a capture decoded in this process; returns the exit code."""
    from .engines.parallel import run_sink

    if progress is not None:
        keyed = _tap(keyed, progress)
    if fmt == "table":
        code = _show_table(keyed, make_console(), keep, limit, strict, shown)
        _clear(progress)
        return code
    sink = _recipe(fmt, keep, limit)()
    return show_sinks(fmt, run_sink(sink, keyed), lambda: [sink.result()], strict, progress)


def _recipe(fmt: str, keep, limit: int | None = None, judged: bool = True):
    """How to make the sink of a format: a picklable recipe, for worker processes too."""
    from functools import partial

    from .engines.sinks import make_sink

    if fmt == "jsonl":
        return partial(make_sink, "jsonl", None if keep.empty else keep, limit)
    return partial(make_sink, "summary", judged=judged)


def show_sinks(fmt: str, payloads, results, strict: bool, progress=None) -> int:
    """Print jsonl or summary from sink ``payloads`` (in capture order) and, once they are
    all read, ``results()``: every sink's totals. Returns the exit code."""
    from .engines.sinks import combine_summaries, combine_tallies

    if fmt == "jsonl":
        write = _binary_out()
        for _, line in payloads:
            write(line)
        _clear(progress)
        tally = combine_tallies(results())
    else:
        for _ in payloads:
            pass
        _clear(progress)
        summaries = results()
        done = summaries[0] if len(summaries) == 1 else combine_summaries(summaries)
        done.summary.render(make_console())
        tally = done.tally
    return EXIT_VIOLATIONS if strict and tally.severities["error"] else EXIT_OK


def _binary_out():
    """A write for ASCII bytes onto stdout, past the text layer when there is one."""
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is not None:
        return buffer.write
    text = sys.stdout.write
    return lambda data: text(data.decode("ascii"))


def _sink_run(path: Path, jobs: int, recipe, kw: dict, progress=None):
    """A capture file's sink payloads, over ``jobs`` worker processes or in this one, and a
    function giving every sink's result once the payloads are read."""
    from .engines.parallel import Partitioned, run_sink

    if jobs > 1:
        parts = Partitioned(path, jobs, recipe, progress=progress, **kw)
        return parts, lambda: parts.results
    keyed = _keyed(path, kw, progress)
    if progress is not None:
        keyed = _tap(keyed, progress)
    sink = recipe()
    return run_sink(sink, keyed), lambda: [sink.result()]


def _keyed(path: Path, kw: dict, progress=None):
    """``(key, item)`` pairs of a whole capture file in this process; the progress bar, if
    any, follows the reader's position."""
    from .engines.files import keyed_items
    from .sources.capture import read_records

    records = read_records(path)
    if progress is not None:
        progress.where = records.tell
        records.on_read(lambda: progress(0))  # moves on through stretches that yield nothing
    return keyed_items(records, **kw)


def _clear(progress) -> None:
    """Take a progress bar off the terminal before anything else is printed there."""
    if hasattr(progress, "close"):  # the live command's progress is a plain callback
        progress.close()


def _tap(keyed, progress):
    for pair in keyed:
        progress(pair[1])
        yield pair


def _show_table(keyed, console, keep, limit: int | None, strict: bool, caps=None) -> int:
    from .engines.capture import Captured, flow_label

    from .outputs.render import Renderer

    renderer = Renderer("table", console, shown=caps or _shown(False, None))
    err = make_console(stderr=True)
    shown = 0
    for _, item in keyed:
        if isinstance(item, Captured):
            renderer.tally.add(item.msg)
            if not keep(item):
                continue
            if limit is not None and shown >= limit:
                break
            shown += 1
            from .outputs.table import frame_table

            when = "" if item.ts is None else f"{_stamp(item.ts)}  "  # hex dumps have no times
            console.print(frame_table(item.msg, f"{when}{flow_label(item.flow)} {item.direction}"
                                                f"  frame {item.number}", renderer.shown))
            console.print()
        elif item.kind != "start":
            where = f" {flow_label(item.flow)} {item.direction or ''}" if item.flow else ""
            err.print(_safe(f"note:{where} {item.kind}: {item.message}"), markup=False)
    renderer.summary()
    return EXIT_VIOLATIONS if strict and renderer.tally.severities["error"] else EXIT_OK


def _jobs(jobs: int, path: Path, eligible: bool) -> int:
    """Worker processes for one file: ``--jobs`` as given, or (0) one per CPU for captures
    big enough to repay starting them."""
    from .engines.parallel import available_cpus

    if not eligible:
        return 1
    if jobs > 0:
        return jobs
    try:
        big = path.stat().st_size >= AUTO_JOBS_BYTES
    except OSError:
        big = False
    return min(available_cpus(), MAX_AUTO_JOBS) if big else 1


AUTO_JOBS_BYTES = 16 * 1024 * 1024
MAX_AUTO_JOBS = 8


@app.command("decode")
def decode_command(
    files: list[Path] = typer.Argument(..., help="pcap / pcapng files (gzip allowed), or hex dumps."),
    fmt: CaptureFormat = typer.Option(CaptureFormat.table, "--format", "-f", help="table, jsonl or summary."),
    opcode: list[str] = typer.Option([], "--opcode", "-o", help="Only these opcodes (name, part of a name, or number)."),
    vbucket: list[int] = typer.Option([], "--vbucket", help="Only these vbuckets."),
    flow: str = typer.Option("", "--flow", help="Only flows whose 'ip:port-ip:port' label contains this."),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", help="Stop after printing this many frames."),
    port: list[int] = typer.Option([], "--port", "-p", help="Also decode these server ports as MCBP."),
    decode_as: list[str] = typer.Option([], "--decode-as", help="PORT=mcbp: decode this port as MCBP."),
    no_heuristic: bool = typer.Option(False, "--no-heuristic", help="Only decode known ports."),
    collections: Collections = typer.Option(Collections.auto, help="Key collection prefix: auto (from HELO), on, off."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 when any frame has an error finding."),
    jobs: int = typer.Option(0, "--jobs", "-j", min=0,
                             help="Worker processes for jsonl and summary (0: one per CPU on files over 16 MiB)."),
    full: bool = typer.Option(False, "--full", help="Show values whole (the table caps them)."),
    max_value: Optional[int] = MAX_VALUE_OPTION,
) -> None:
    """Decode MCBP/DCP frames from capture files (or hex dumps), in capture order."""
    from .engines.parallel import WorkerCrash, run_sink
    from .messages.frame import DecodeContext
    from .sources.capture import CaptureError

    keep = _frame_filter(opcode, vbucket, flow)
    ports = _port_map(port, decode_as)
    # summary counts headers (judged only for --strict); jsonl needs no field rows
    headers_only = fmt is CaptureFormat.summary and not strict
    lean = (DecodeContext(headers_only=True) if headers_only
            else DecodeContext(detail=False) if fmt is not CaptureFormat.table else None)
    pure = bool(os.environ.get("DCPINSPECT_PURE"))  # no C shortcuts: the reference the tests compare with
    kw = dict(ports=ports, collections=_collections(collections), heuristic=not no_heuristic, base=lean,
              lane=fmt is CaptureFormat.jsonl and keep.empty and limit is None and not pure, follow=not pure)
    code = EXIT_OK
    for path in files:
        if _input_kind(path) == TEXT:  # a hex dump: one connection, frames by position
            keyed = _hex_items(path, kw["collections"])
            if fmt is CaptureFormat.table:
                code = max(code, show_capture(keyed, fmt.value, keep, limit, strict, shown=_shown(full, max_value)))
            else:
                sink = _recipe(fmt.value, keep, limit)()  # dumps are always judged
                code = max(code, show_sinks(fmt.value, run_sink(sink, keyed), lambda: [sink.result()], strict))
            continue
        progress = _progress(path, fmt.value)
        try:
            if fmt is CaptureFormat.table:
                code = max(code, show_capture(_keyed(path, kw, progress), fmt.value, keep, limit, strict, progress,
                                              _shown(full, max_value)))
                continue
            n = _jobs(jobs, path, limit is None)
            payloads, results = _sink_run(path, n, _recipe(fmt.value, keep, limit, not headers_only), kw, progress)
            code = max(code, show_sinks(fmt.value, payloads, results, strict, progress))
        except CaptureError as exc:
            _capture_error(path, exc)
        except WorkerCrash as exc:
            fail(f"{path}: a worker process failed: {exc}")
    raise typer.Exit(code)


def _progress(path: Path, fmt: str) -> "_Progress | None":
    """A progress line on stderr for long files, when stderr is a terminal that frames are
    not being printed to."""
    from .sources.inputs import gzipped

    size = path.stat().st_size
    if not sys.stderr.isatty() or size < (PROGRESS_GZIP_BYTES if gzipped(path) else PROGRESS_BYTES):
        return None
    if fmt != "summary" and sys.stdout.isatty():
        return None
    return _Progress(size)


#: files this big get a progress bar; gzip files sooner, since they may inflate a thousandfold
PROGRESS_BYTES, PROGRESS_GZIP_BYTES = 32 * 1024 * 1024, 1024 * 1024


class _Progress:
    """A bar on stderr: call with an item (one more) or a count of items done since the last
    call, and optionally how far into the file reading has got (-1: the end)."""

    WIDTH = 30

    def __init__(self, size: int, where=None) -> None:
        self.n, self.shown, self.size = 0, 0.0, max(1, size)
        self.where = where  # () -> bytes read, when the caller owns the reader
        self.read = 0

    def __call__(self, done=1, read: int | None = None) -> None:
        import time

        self.n += done if isinstance(done, int) else getattr(done, "count", 1)  # Lines: several frames
        if read is not None:
            self.read = self.size if read < 0 else read
        now = time.monotonic()
        if now - self.shown > 0.5:
            self.shown = now
            if self.where is not None:
                at = self.where()
                self.read = self.size if at < 0 else at
            part = min(1.0, self.read / self.size)
            bar = "#" * int(part * self.WIDTH)
            sys.stderr.write(f"\r[{bar:-<{self.WIDTH}}] {part:4.0%} of {self.size / 2**20:,.0f} MiB, "
                             f"{self.n:,} items")
            sys.stderr.flush()

    def close(self) -> None:
        """Clear the line (before anything else is printed to the terminal)."""
        if self.shown:
            self.shown = 0.0
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


@app.command("live")
def live_command(
    iface: str = typer.Option(..., "--interface", "-i", help="Interface to sniff (e.g. lo, eth0)."),
    bpf: Optional[str] = typer.Option(None, "--filter", help="BPF capture filter, e.g. 'tcp port 11210'."),
    count: int = typer.Option(0, "--count", "-c", help="Stop after this many packets (0: no limit)."),
    duration: Optional[float] = typer.Option(None, "--duration", "-t", help="Stop after this many seconds."),
    fmt: CaptureFormat = typer.Option(CaptureFormat.table, "--format", "-f", help="table, jsonl or summary."),
    opcode: list[str] = typer.Option([], "--opcode", "-o"),
    vbucket: list[int] = typer.Option([], "--vbucket"),
    port: list[int] = typer.Option([], "--port", "-p", help="Also decode these server ports as MCBP."),
    collections: Collections = typer.Option(Collections.auto),
    strict: bool = typer.Option(False, "--strict"),
    full: bool = typer.Option(False, "--full", help="Show values whole (the table caps them)."),
    max_value: Optional[int] = MAX_VALUE_OPTION,
) -> None:
    """Sniff an interface and decode frames as they arrive; a summary at the end or on Ctrl-C."""
    import queue
    import threading

    from .engines.files import keyed_items
    from .outputs.summary import CaptureSummary
    from .sources.live import LiveError, check_interface, sniff_records

    try:
        check_interface(iface)
    except LiveError as exc:
        fail(str(exc))
    keep = _frame_filter(opcode, vbucket, "")
    records: queue.Queue = queue.Queue(maxsize=10000)
    done = object()
    errors: list[str] = []

    def producer() -> None:
        try:
            sniff_records(iface, records.put, bpf, count, duration)
        except LiveError as exc:
            errors.append(str(exc))
        finally:
            records.put(done)

    def feed():
        while True:
            rec = records.get()
            if rec is done:
                return
            yield rec

    thread = threading.Thread(target=producer, daemon=True)
    thread.start()
    summary = CaptureSummary()
    code = EXIT_OK
    try:
        keyed = keyed_items(feed(), ports=set(port), collections=_collections(collections))
        code = show_capture(keyed, fmt.value, keep, None, strict, progress=summary.add,
                            shown=_shown(full, max_value))
    except KeyboardInterrupt:
        pass
    if errors:
        fail(errors[0])
    if fmt is not CaptureFormat.summary:
        summary.render(make_console(stderr=True))
    raise typer.Exit(code)


class FailOn(str, Enum):
    warning = "warning"
    error = "error"


def _findings_of(path: Path, ports: set[int], collections: bool | None, jobs: int, show_info: bool):
    """Findings rows of a capture file (over ``jobs`` processes when it pays), or of a hex dump
    given as a file; returns (rows in order, frames checked)."""
    from functools import partial

    from .engines.parallel import WorkerCrash, run_sink
    from .messages.frame import DecodeContext  # findings need no field rows
    from .sources.capture import CaptureError

    recipe = partial(_findings_sink, str(path), show_info)
    if _input_kind(path) == CAPTURE:
        kw = dict(ports=ports, collections=collections, base=DecodeContext(detail=False))
        try:
            payloads, results = _sink_run(path, _jobs(jobs, path, True), recipe, kw)
            rows = [row for batch in payloads for row in batch]
            return rows, sum(results())
        except CaptureError as exc:
            _capture_error(path, exc)
        except WorkerCrash as exc:
            fail(f"{path}: a worker process failed: {exc}")
    sink = recipe()
    rows = [row for batch in run_sink(sink, _hex_items(path, collections)) for row in batch]
    return rows, sink.result()


def _hex_items(path: Path, collections: bool | None):
    """A hex dump given as a file, as captured items of one pseudo-connection named by the file."""
    from .engines.capture import Captured
    from .engines.hexinput import decode_hex_text
    from .messages.frame import Message

    text = _read_text(path)
    result = decode_hex_text(text, collections)
    if not result.dump.data:
        fail(f"{path}: " + ("empty file" if not text.strip() else "neither a capture (pcap, pcapng, gzip) nor a hex dump"))
    frames = (i for i in result.items if isinstance(i, Message))
    for n, msg in enumerate(frames, 1):
        yield n, Captured(None, ("hex", 0, str(path), 0), "", msg, n)  # a dump has no times


def _items_of(path: Path, ports: set[int], collections: bool | None):
    """Captured frames and notes of a capture file or of a hex dump given as a file."""
    from .engines.files import decode_capture_file
    from .messages.frame import DecodeContext  # counts need no field rows
    from .sources.capture import CaptureError

    if _input_kind(path) == TEXT:
        yield from (item for _, item in _hex_items(path, collections))
        return
    try:
        yield from decode_capture_file(path, ports=ports, collections=collections, base=DecodeContext(detail=False))
    except CaptureError as exc:
        _capture_error(path, exc)


def _findings_sink(source: str, show_info: bool):
    from .engines.sinks import FindingsSink

    return FindingsSink(source, show_info, _stamp)


@app.command("validate")
def validate_command(
    files: list[Path] = typer.Argument(..., help="Captures (pcap, pcapng, gzip) or hex dumps."),
    fmt: ListFormat = typer.Option(ListFormat.table, "--format", "-f", help="table or jsonl."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Exit 1 on findings of this severity or worse."),
    port: list[int] = typer.Option([], "--port", "-p", help="Also decode these server ports as MCBP."),
    collections: Collections = typer.Option(Collections.auto),
    show_info: bool = typer.Option(False, "--info", help="Also list info-level findings."),
    jobs: int = typer.Option(0, "--jobs", "-j", min=0,
                             help="Worker processes a capture (0: one per CPU on files over 16 MiB)."),
) -> None:
    """Check DCP conversations against the protocol's rules: exit 0 clean, 1 violations, 2 unusable input."""
    from .outputs.jsonl import dumps
    from .engines.sinks import LEVELS

    rows, frames = [], 0
    err = make_console(stderr=True)
    for path in files:
        got, checked = _findings_of(path, set(port), _collections(collections), jobs, show_info)
        for row in got:
            if isinstance(row, str):  # damage to the file itself: said on stderr, as decode says it
                err.print(_safe(f"note: {path}: {row}"), markup=False)
            else:
                rows.append(row)
        frames += checked
    worst = max((LEVELS[r.severity] for r in rows), default=-1)
    if fmt is ListFormat.jsonl:
        sys.stdout.write("".join(dumps(r.record) + "\n" for r in rows))
    else:
        console = make_console()
        if rows:
            from .outputs.rows import print_rows

            print_rows(console, ("frame", "time", "flow", "vb", "sid", "severity", "class", "rule", "message"),
                       (tuple(map(_safe, r.cells)) for r in rows))
        errors = sum(1 for r in rows if r.severity == "error")
        console.print(f"{frames} frames checked: {errors} errors, {len(rows) - errors} other findings")
    if frames == 0:
        fail("no MCBP frame found in the input")
    raise typer.Exit(EXIT_VIOLATIONS if worst >= LEVELS[fail_on.value] else EXIT_OK)


def _safe(text: str) -> str:
    from .outputs.escape import safe

    return safe(text)


class StatsFormat(str, Enum):
    table = "table"
    json = "json"


@app.command("stats")
def stats_command(
    files: list[Path] = typer.Argument(..., help="Captures (pcap, pcapng, gzip) or hex dumps."),
    fmt: StatsFormat = typer.Option(StatsFormat.table, "--format", "-f", help="table or json."),
    plot_path: Optional[Path] = typer.Option(None, "--plot", help="Write seqno-over-time and throughput to this PNG."),
    chart: Optional[bool] = typer.Option(None, "--chart/--no-chart", help="Terminal chart (default: when a terminal)."),
    port: list[int] = typer.Option([], "--port", "-p", help="Also decode these server ports as MCBP."),
    collections: Collections = typer.Option(Collections.auto),
) -> None:
    """Per connection, vbucket and stream: snapshots, items, seqno ranges and gaps, bytes, rates, timings."""
    from .outputs.stats import StatsCollector, render, report_json

    collector = StatsCollector()
    for path in files:
        for item in _items_of(path, set(port), _collections(collections)):
            collector.add(item)
    report = collector.report()
    if not report["capture"].get("frames"):
        fail("no MCBP frame found in the input")
    if fmt is StatsFormat.json:
        sys.stdout.write(report_json(report) + "\n")
    else:
        render(report, make_console(), chart=chart)
    if plot_path is not None:
        from .outputs.plot import PlotUnavailable, plot

        try:
            plot(report, plot_path)
        except PlotUnavailable as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"cannot write {plot_path}: {exc.strerror or exc}")
        make_console(stderr=True).print(f"wrote {_safe(str(plot_path))}")


@app.command("rules")
def rules_command(fmt: ListFormat = typer.Option(ListFormat.table, "--format", "-f", help="table or jsonl.")) -> None:
    """List every rule the validator applies."""
    from rich.table import Table

    from .outputs.jsonl import dumps
    from .rules.registry import ALL_RULES

    rules = list(ALL_RULES.values())
    if fmt is ListFormat.jsonl:
        for r in rules:
            sys.stdout.write(dumps({"rule": r.id, "class": r.cls, "severity": r.severity, "scope": r.scope,
                                    "ref": r.ref, "summary": r.summary}) + "\n")
        return
    table = Table("rule", "class", "severity", "scope", "reference", "what it checks", box=None)
    for r in rules:
        table.add_row(r.id, r.cls, r.severity, r.scope, r.ref, r.summary)
    make_console().print(table)


def main() -> None:
    try:
        check_environment()
    except LimitError as exc:
        sys.stderr.write(f"dcpinspect: {exc}\n")
        sys.exit(EXIT_UNUSABLE)
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("dcpinspect: interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(EXIT_OK)
    except SystemExit as exc:
        if exc.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            # the reader went away (``| head``): typer swallows EPIPE as exit 1, which here
            # would mean "violations found"; stopping early is not a failure
            sys.exit(EXIT_OK)
        raise
