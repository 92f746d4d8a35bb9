"""The ``dcpinspect`` command line: each command turns its options into one call of an
engine function (:mod:`dcpinspect.engines`) and what it returns into the exit status."""

from __future__ import annotations

import inspect
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from .arguments import MAX_VALUE, PATH, RDB, FailOn, Option, fail, guarded, rdb, run as _run
from .arguments import shown_of as _shown
from .limits import DIAGRAM_SHOWN

app = typer.Typer(
    no_args_is_help=True,
    help="Inspect and validate database replication traffic: Couchbase MCBP, DCP and TAP; Redis and Valkey "
         "RESP and replication (Dragonfly's too); RDB snapshot files. From captures, hex dumps, live interfaces.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from . import __version__

        sys.stdout.write(f"dcpinspect {__version__}\n")
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", "-V", callback=_print_version, is_eager=True,
                                          help="Print the version and exit.")) -> None:
    # the options before any command (the app's help is the Typer's)
    pass


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


def _typer_param(o: Option):
    """One row of a declared table as typer takes it: an Argument or an Option."""
    if not o.flags:
        return typer.Argument(o.default, help=o.help)
    extra = {k: v for k, v in (("min", o.min), ("metavar", o.metavar), ("help", o.help)) if v is not None}
    return typer.Option(list(o.default) if o.many else o.default, *o.flags, **extra)


def _declared(table: tuple[Option, ...]):
    """A command whose parameters are the rows of ``table`` (:mod:`.arguments`): the
    signature typer reads is made from them, and the command takes them by name (a
    :data:`~.arguments.PATH`, which typer reads as a Path, as a str)."""
    paths = [o.name for o in table if o.kind == PATH]

    def apply(func):
        def command(**options):
            for name in paths:
                got = options[name]
                options[name] = [os.fspath(p) for p in got] if isinstance(got, list) else \
                    None if got is None else os.fspath(got)
            return func(**options)

        params = []
        for o in table:
            kind = Path if o.kind == PATH else o.kind
            hint = list[kind] if o.many else kind if kind is bool or o.default is not None else Optional[kind]
            params.append(inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=_typer_param(o),
                                            annotation=hint))
        command.__name__, command.__doc__ = func.__name__, func.__doc__
        command.__signature__ = inspect.Signature(params, return_annotation=None)
        command.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
        return command
    return apply


#: ``--max-value``, the same on every command with a table view
MAX_VALUE_OPTION = _typer_param(MAX_VALUE)


#: which connections of a capture are decoded: the same three options on every command that
#: reads captures (``decode``, ``validate``, ``stats``, ``live``, ``analyze``), made into one
#: :class:`~.engines.options.CaptureOptions` by :func:`_capture`
PORT_OPTION = typer.Option([], "--port", "-p", min=1, max=65535, metavar="PORT",
                           help="Also decode this server port as MCBP (repeatable).")
DECODE_AS_OPTION = typer.Option([], "--decode-as", metavar="PORT=FAMILY",
                                help="Decode this server port as that protocol family (mcbp, redis; repeatable).")
NO_HEURISTIC_OPTION = typer.Option(False, "--no-heuristic",
                                   help="Decode only known ports and those given, never guess from the first bytes.")


def _capture(port: list[int], decode_as: list[str], no_heuristic: bool):
    """``--port``, ``--decode-as`` and ``--no-heuristic`` as the engines take them."""
    from .engines.options import OptionError, capture_options

    try:
        return capture_options(port, decode_as, no_heuristic)
    except OptionError as exc:
        fail(str(exc))


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
    """Decode frames from a pasted hex dump (plain hex, xxd, hexdump -C, od, tcpdump -X, Wireshark, spec diagrams): exit 0, 1 with --strict and an error, 2 unusable, 3 the dump ends inside a frame."""
    from .engines.decode import decode_hex_dump

    _run(lambda: decode_hex_dump(path, "diagram" if diagram else fmt.value, _collections(collections),
                                 _shown(full, max_value, max_diagram), strict))


class CaptureFormat(str, Enum):
    table = "table"
    jsonl = "jsonl"
    summary = "summary"


@app.command("decode")
def decode_command(
    files: list[Path] = typer.Argument(..., help="pcap / pcapng files (gzip allowed), or hex dumps."),
    fmt: CaptureFormat = typer.Option(CaptureFormat.table, "--format", "-f", help="table, jsonl or summary."),
    opcode: list[str] = typer.Option([], "--opcode", "-o", help="Only these opcodes (name, part of a name, or number)."),
    vbucket: list[int] = typer.Option([], "--vbucket", help="Only these vbuckets."),
    command: list[str] = typer.Option([], "--command", help="Only these commands (RESP: SET, REPLCONF, +FULLRESYNC, ...)."),
    flow: str = typer.Option("", "--flow", help="Only flows whose 'ip:port-ip:port' label contains this."),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", help="Stop after printing this many frames."),
    port: list[int] = PORT_OPTION,
    decode_as: list[str] = DECODE_AS_OPTION,
    no_heuristic: bool = NO_HEURISTIC_OPTION,
    collections: Collections = typer.Option(Collections.auto, help="Key collection prefix: auto (from HELO), on, off."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 when any frame has an error finding."),
    jobs: int = typer.Option(0, "--jobs", "-j", min=0,
                             help="Worker processes for jsonl and summary (0: one per CPU on files over 16 MiB)."),
    full: bool = typer.Option(False, "--full", help="Show values whole (the table caps them)."),
    max_value: Optional[int] = MAX_VALUE_OPTION,
    values: bool = typer.Option(False, "--values", help="jsonl: the keys of snapshots sent over connections (a "
                                                        "full sync's RDB payload) with their values and digests."),
) -> None:
    """Decode the frames of capture files (or hex dumps), in capture order: Couchbase MCBP, DCP and TAP, Redis and Valkey RESP and replication (Dragonfly's too)."""
    from .engines.decode import decode_files
    from .engines.filters import frame_filter

    capture = _capture(port, decode_as, no_heuristic)
    _run(lambda: decode_files(files, fmt.value, frame_filter(dict(opcode=opcode, vbucket=vbucket, command=command), flow), limit, strict, jobs,
                              _shown(full, max_value), capture, _collections(collections), values))


@app.command("live")
def live_command(
    iface: str = typer.Option(..., "--interface", "-i", help="Interface to sniff (e.g. lo, eth0)."),
    bpf: Optional[str] = typer.Option(None, "--filter", help="BPF capture filter, e.g. 'tcp port 11210'."),
    count: int = typer.Option(0, "--count", "-c", help="Stop after this many packets (0: no limit)."),
    duration: Optional[float] = typer.Option(None, "--duration", "-t", help="Stop after this many seconds."),
    fmt: CaptureFormat = typer.Option(CaptureFormat.table, "--format", "-f", help="table, jsonl or summary."),
    opcode: list[str] = typer.Option([], "--opcode", "-o"),
    vbucket: list[int] = typer.Option([], "--vbucket"),
    command: list[str] = typer.Option([], "--command"),
    port: list[int] = PORT_OPTION,
    decode_as: list[str] = DECODE_AS_OPTION,
    no_heuristic: bool = NO_HEURISTIC_OPTION,
    collections: Collections = typer.Option(Collections.auto),
    strict: bool = typer.Option(False, "--strict"),
    full: bool = typer.Option(False, "--full", help="Show values whole (the table caps them)."),
    max_value: Optional[int] = MAX_VALUE_OPTION,
    write: Optional[Path] = typer.Option(None, "--write", "-w", metavar="FILE",
                                         help="Also keep every packet sniffed in this pcapng file."),
) -> None:
    """Sniff an interface and decode frames as they arrive; a summary at the end or on Ctrl-C."""
    from .engines.live import live_capture

    _run(lambda: live_capture(iface, bpf, count, duration, fmt.value,
                              dict(opcode=opcode, vbucket=vbucket, command=command), _capture(port, decode_as, no_heuristic),
                              _collections(collections), strict, _shown(full, max_value), write))


@app.command("validate")
def validate_command(
    files: list[Path] = typer.Argument(..., help="Captures (pcap, pcapng, gzip) or hex dumps."),
    fmt: ListFormat = typer.Option(ListFormat.table, "--format", "-f", help="table or jsonl."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Exit 1 on findings of this severity or worse."),
    port: list[int] = PORT_OPTION,
    decode_as: list[str] = DECODE_AS_OPTION,
    no_heuristic: bool = NO_HEURISTIC_OPTION,
    collections: Collections = typer.Option(Collections.auto),
    show_info: bool = typer.Option(False, "--info", help="Also list info-level findings."),
    jobs: int = typer.Option(0, "--jobs", "-j", min=0,
                             help="Worker processes a capture (0: one per CPU on files over 16 MiB)."),
) -> None:
    """Check conversations against the protocols' rules (DCP and TAP streams, MCBP frames, Redis replication), printing findings as they are found: exit 0 clean, 1 violations, 2 unusable input."""
    from .engines.validate import validate_files

    _run(lambda: validate_files(files, fmt is ListFormat.jsonl, fail_on.value, _capture(port, decode_as, no_heuristic),
                                _collections(collections),
                                show_info, jobs))


class StatsFormat(str, Enum):
    table = "table"
    json = "json"


@app.command("stats")
def stats_command(
    files: list[Path] = typer.Argument(..., help="Captures (pcap, pcapng, gzip) or hex dumps."),
    fmt: StatsFormat = typer.Option(StatsFormat.table, "--format", "-f", help="table or json."),
    plot_path: Optional[Path] = typer.Option(
        None, "--plot", help="Write each protocol's panels over time (DCP seqnos, Redis offsets and ACK lag), the "
                             "throughput and where findings happened to this PNG (SVG, PDF: by the name's suffix)."),
    chart: Optional[bool] = typer.Option(None, "--chart/--no-chart", help="Terminal chart (default: when a terminal)."),
    port: list[int] = PORT_OPTION,
    decode_as: list[str] = DECODE_AS_OPTION,
    no_heuristic: bool = NO_HEURISTIC_OPTION,
    collections: Collections = typer.Option(Collections.auto),
) -> None:
    """Statistics of captures: per connection bytes, rates and timings; DCP vbuckets and streams (snapshots, items, seqno ranges and gaps); Redis replication syncs."""
    from .engines.stats import stats_files

    _run(lambda: stats_files(files, fmt is StatsFormat.json, plot_path, chart, _capture(port, decode_as, no_heuristic),
                             _collections(collections)))


@app.command("rdb")
@_declared(RDB)
def rdb_command(**options) -> None:
    """Decode RDB snapshot files (Redis, Valkey, Dragonfly): keys with type, encoding, size and expiry; checksum and damage as findings; memory reports."""
    rdb(options)


@app.command("diff")
def diff_command(
    a: Path = typer.Argument(..., help="Snapshot file (RDB, a .dfs set by one of its files) or capture of a full sync."),
    b: Path = typer.Argument(..., help="The other one, of any of those kinds."),
    fmt: CaptureFormat = typer.Option(CaptureFormat.table, "--format", "-f", help="table, jsonl or summary (one line)."),
) -> None:
    """Compare two data sets key by key: only in A, only in B, type, value (by digest) or expiry changed; exit 0 same, 1 different, 2 unusable."""
    from .engines.diff import diff_inputs

    _run(lambda: diff_inputs(a, b, fmt.value))


@app.command("analyze")
def analyze_command(
    paths: list[str] = typer.Argument(..., help="Captures (pcap, pcapng, gzip) and RDB files: paths, globs, "
                                                "directories or URIs (file://, s3a://, hdfs://...)."),
    out: str = typer.Option(..., "--out", help="Directory (or URI) for the Parquet tables."),
    master: Optional[str] = typer.Option(None, "--master", show_default="local[*]",
                                         help="Spark master: local[N], spark://HOST:PORT, yarn..."),
    remote: Optional[str] = typer.Option(None, "--remote", metavar="sc://HOST:PORT",
                                         help="Run on a Spark Connect server instead of a master."),
    split: str = typer.Option("auto", "--split", metavar="auto|connections|ranges",
                              help="Cut large captures by connections (each task reads the file) or by byte "
                                   "ranges (shuffled); auto: ranges past 8 tasks a file."),
    spark_conf: list[str] = typer.Option([], "--spark-conf", metavar="KEY=VALUE", help="A Spark setting."),
    range_size: int = typer.Option(128 << 20, "--range-size", min=4096, metavar="BYTES",
                                   help="Input bytes a task takes: a larger capture is read by several tasks."),
    port: list[int] = PORT_OPTION,
    decode_as: list[str] = DECODE_AS_OPTION,
    no_heuristic: bool = NO_HEURISTIC_OPTION,
    collections: Collections = typer.Option(Collections.auto),
    values: bool = typer.Option(False, "--values", help="The keys table's json: each key of an RDB file or a full "
                                                        "sync with its value, as rdb --values gives it."),
) -> None:
    """Decode and validate captures and RDB files on Spark (the spark extra) into Parquet tables: exit 0 clean, 1 errors, 2 unusable."""
    from .engines.spark.job import analyze_paths

    if split not in ("auto", "connections", "ranges"):
        fail(f"--split {split!r}: one of auto, connections, ranges")
    _run(lambda: analyze_paths(paths, out, master, spark_conf, range_size, _capture(port, decode_as, no_heuristic),
                               _collections(collections),
                               split, remote, values))


@app.command("rules")
def rules_command(fmt: ListFormat = typer.Option(ListFormat.table, "--format", "-f", help="table or jsonl.")) -> None:
    """List every rule the validator applies."""
    from .families import rule_book
    from .outputs.rulebook import print_rule_book

    print_rule_book(rule_book(), fmt is ListFormat.jsonl)


def main() -> None:
    """The typer app, every command through it (the console script is ``__main__.main``)."""
    guarded(app)
