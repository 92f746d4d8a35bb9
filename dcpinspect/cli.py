"""The ``dcpinspect`` command line."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from .outputs.render import Renderer, make_console
from .outputs.table import frame_table

EXIT_OK, EXIT_VIOLATIONS, EXIT_UNUSABLE, EXIT_INTERRUPTED = 0, 1, 2, 130
MAX_TEXT_INPUT = 256 * 1024 * 1024

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
    try:
        if path is None or str(path) == "-":
            if sys.stdin is None or sys.stdin.closed:
                fail("no input: give a file or pipe a hex dump on stdin")
            if sys.stdin.isatty():
                make_console(stderr=True).print("Paste a hex dump, then Ctrl-D:")
            data = sys.stdin.buffer.read(MAX_TEXT_INPUT + 1)
        else:
            with open(path, "rb") as fh:
                data = fh.read(MAX_TEXT_INPUT + 1)
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")
    if len(data) > MAX_TEXT_INPUT:
        fail(f"input is larger than {MAX_TEXT_INPUT} bytes of text")
    return data.decode("utf-8", "replace")


def _exit_code(renderer: Renderer, strict: bool) -> int:
    if strict and renderer.tally.severities["error"]:
        return EXIT_VIOLATIONS
    return EXIT_OK


@app.command("hex")
def hex_command(
    path: Optional[Path] = typer.Argument(None, help="File holding the dump; '-' or nothing reads stdin."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, jsonl or diagram."),
    diagram: bool = typer.Option(False, "--diagram", help="Draw each frame as the spec's byte diagram."),
    collections: Collections = typer.Option(
        Collections.auto, help="Whether keys carry a collection-id prefix (auto: from HELO, else by the key's bytes)."
    ),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 when any frame has an error finding."),
) -> None:
    """Decode frames from a pasted hex dump (plain hex, xxd, hexdump -C, od, tcpdump -X, Wireshark, spec diagrams)."""
    from .engines.hexinput import decode_hex_text

    text = _read_text(path)
    result = decode_hex_text(text, _collections(collections))
    if not result.dump.data:
        fail("no hex bytes found in the input" + (f" ({result.dump.problems[0]})" if result.dump.problems else ""))
    err = make_console(stderr=True)
    for problem in result.dump.problems:
        err.print(f"dcpinspect: input: {problem}")
    renderer = Renderer("diagram" if diagram else fmt.value, make_console())
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
    import datetime as _dt

    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")


def show_capture(items, fmt: str, keep, limit: int | None, strict: bool, progress=None) -> int:
    """Render captured items; returns the exit code."""
    from .engines.capture import Captured, flow_label
    from .outputs.summary import CaptureSummary

    console = make_console()
    err = make_console(stderr=True)
    renderer = Renderer("jsonl" if fmt == "jsonl" else "table", console)
    summary = CaptureSummary()
    shown = 0
    labels: dict = {}  # flow → its label, made once
    write = sys.stdout.write
    if fmt == "jsonl":
        from .outputs.jsonl import dumps, frame_record
    for item in items:
        if progress is not None:
            progress(item)
        if isinstance(item, Captured):
            renderer.tally.add(item.msg)
            if fmt == "summary":
                summary.add(item)
                continue
            if not keep(item):
                continue
            if limit is not None and shown >= limit:
                break
            shown += 1
            label = labels.get(item.flow)
            if label is None:
                label = labels[item.flow] = flow_label(item.flow)
            if fmt == "jsonl":
                write(dumps(frame_record(item.msg, kind="frame", ts=item.ts, flow=label,
                                         direction=item.direction)) + "\n")
            else:
                console.print(frame_table(item.msg, f"{_stamp(item.ts)}  {label} {item.direction}"))
                console.print()
        else:
            summary.add(item)
            if fmt == "jsonl":
                from .outputs.jsonl import dumps

                rec = {"kind": item.kind, "message": item.message, "ts": item.ts,
                       "flow": flow_label(item.flow) if item.flow else None, "direction": item.direction,
                       "offset": item.offset, "length": item.size}
                sys.stdout.write(dumps(rec) + "\n")
            elif fmt == "table" and item.kind != "start":
                where = f" {flow_label(item.flow)} {item.direction or ''}" if item.flow else ""
                err.print(f"note:{where} {item.kind}: {item.message}", markup=False)
    if fmt == "summary":
        summary.render(console)
    elif fmt == "table":
        renderer.summary()
    return EXIT_VIOLATIONS if strict and renderer.tally.severities["error"] else EXIT_OK


@app.command("decode")
def decode_command(
    files: list[Path] = typer.Argument(..., help="pcap / pcapng files (gzip allowed)."),
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
) -> None:
    """Decode MCBP/DCP frames from capture files, in capture order."""
    from .engines.files import decode_capture_file
    from .sources.capture import CaptureError

    keep = _frame_filter(opcode, vbucket, flow)
    ports = _port_map(port, decode_as)
    code = EXIT_OK
    for path in files:
        if not path.exists():
            fail(f"{path}: no such file")
        try:
            from .messages.frame import DecodeContext

            lean = (DecodeContext(headers_only=True) if fmt is CaptureFormat.summary
                    else DecodeContext(detail=False) if fmt is CaptureFormat.jsonl else None)  # jsonl: no field rows
            items = decode_capture_file(path, ports=ports, collections=_collections(collections),
                                        heuristic=not no_heuristic, base=lean)
            progress = _progress(path) if fmt != "jsonl" else None
            code = max(code, show_capture(items, fmt.value, keep, limit, strict, progress))
        except CaptureError as exc:
            _capture_error(path, exc)
    raise typer.Exit(code)


def _progress(path: Path):
    """A progress line on stderr for long files, when stderr is a terminal."""
    if not sys.stderr.isatty() or path.stat().st_size < 32 * 1024 * 1024:
        return None
    import time

    state = {"n": 0, "t": 0.0}
    err = make_console(stderr=True)

    def tick(item) -> None:
        state["n"] += 1
        now = time.monotonic()
        if now - state["t"] > 0.5:
            state["t"] = now
            err.print(f"\r{state['n']} items…", end="")

    return tick


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
) -> None:
    """Sniff an interface and decode frames as they arrive; a summary at the end or on Ctrl-C."""
    import queue
    import threading

    from .engines.files import decode_records
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
        items = decode_records(feed(), ports=set(port), collections=_collections(collections))
        code = show_capture(items, fmt.value, keep, None, strict, progress=summary.add)
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


def _items_of(path: Path, ports: set[int], collections: bool | None):
    """Captured frames and notes from a capture file, or from a hex dump given as a file."""
    from .engines.capture import Captured
    from .engines.files import decode_capture_file
    from .sources.capture import CaptureError

    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        fail(f"{path}: {exc.strerror or exc}")
    if head[:4] in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d",
                    b"\x0a\x0d\x0d\x0a") or head[:2] == b"\x1f\x8b":
        try:
            yield from decode_capture_file(path, ports=ports, collections=collections)
        except CaptureError as exc:
            _capture_error(path, exc)
        return
    from .engines.hexinput import decode_hex_text
    from .messages.frame import Message

    result = decode_hex_text(_read_text(path), collections)
    if not result.dump.data:
        fail(f"{path}: neither a capture nor a hex dump")
    for n, item in enumerate(result.items, 1):
        if isinstance(item, Message):
            yield Captured(0.0, ("hex", 0, str(path), 0), "", item, n, n)


@app.command("validate")
def validate_command(
    files: list[Path] = typer.Argument(..., help="Captures (pcap, pcapng, gzip) or hex dumps."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table or jsonl."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Exit 1 on findings of this severity or worse."),
    port: list[int] = typer.Option([], "--port", "-p", help="Also decode these server ports as MCBP."),
    collections: Collections = typer.Option(Collections.auto),
    show_info: bool = typer.Option(False, "--info", help="Also list info-level findings."),
) -> None:
    """Check DCP conversations against the protocol's rules: exit 0 clean, 1 violations, 2 unusable input."""
    from rich.table import Table

    from .engines.capture import Captured, flow_label
    from .outputs.jsonl import dumps

    levels = {"info": 0, "warning": 1, "error": 2}
    threshold = levels[fail_on.value]
    rows, worst, frames = [], -1, 0
    for path in files:
        if not path.exists():
            fail(f"{path}: no such file")
        for item in _items_of(path, set(port), _collections(collections)):
            if isinstance(item, Captured):
                frames += 1
                found = [(f, item) for f in item.msg.findings]
            elif item.finding is not None:
                found = [(item.finding, item)]
            else:
                continue
            for f, where in found:
                if f.severity == "info" and not show_info:
                    continue
                worst = max(worst, levels[f.severity])
                rows.append((str(path), f, where))
    if fmt is Format.jsonl:
        for path, f, where in rows:
            rec = {"file": path, **f.to_json()}
            if isinstance(where, Captured):
                msg = where.msg
                rec.update(frame=where.number, ts=where.ts, flow=flow_label(where.flow),
                           direction=where.direction or None, opcode_name=msg.name,
                           vbucket=f.vbucket if f.vbucket is not None else msg.vbucket,
                           stream_id=f.stream_id if f.stream_id is not None else msg.stream_id,
                           related_frame=f.frame)
            else:
                rec.update(frame=f.frame, ts=where.ts, flow=flow_label(where.flow) if where.flow else None,
                           direction=None, opcode_name=None, vbucket=f.vbucket, stream_id=f.stream_id,
                           related_frame=f.frame)
            sys.stdout.write(dumps(rec) + "\n")
    else:
        console = make_console()
        table = Table("frame", "time", "flow", "vb", "sid", "severity", "class", "rule", "message", box=None)
        for path, f, where in rows:
            frame = str(where.number) if isinstance(where, Captured) else (str(f.frame) if f.frame else "-")
            vb = f.vbucket if f.vbucket is not None else (where.msg.vbucket if isinstance(where, Captured) else None)
            table.add_row(frame, _stamp(where.ts) if where.ts else "-", flow_label(where.flow) if where.flow else "-",
                          "-" if vb is None else str(vb), "-" if f.stream_id is None else str(f.stream_id),
                          f.severity, f.cls, f.rule, _safe(f.message))
        if rows:
            console.print(table)
        errors = sum(1 for _, f, _ in rows if f.severity == "error")
        console.print(f"{frames} frames checked: {errors} errors, {len(rows) - errors} other findings")
    if frames == 0:
        fail("no MCBP frame found in the input")
    raise typer.Exit(EXIT_VIOLATIONS if worst >= threshold else EXIT_OK)


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
        if not path.exists():
            fail(f"{path}: no such file")
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
        make_console(stderr=True).print(f"wrote {plot_path}")


@app.command("rules")
def rules_command(fmt: Format = typer.Option(Format.table, "--format", "-f")) -> None:
    """List every rule the validator applies."""
    from rich.table import Table

    from .outputs.jsonl import dumps
    from .rules.registry import ALL_RULES

    rules = list(ALL_RULES.values())
    if fmt is Format.jsonl:
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
        app()
    except KeyboardInterrupt:
        sys.stderr.write("dcpinspect: interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(EXIT_OK)
