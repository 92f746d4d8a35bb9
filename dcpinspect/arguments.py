"""The options of a command that starts without the typer app, declared once as a table of
:class:`Option` rows: the typer app builds the command from the table (:mod:`.cli`), and
:func:`parsed` reads a plain command line by the same table, so that ``dcpinspect rdb FILE``
runs without importing typer, click or rich (some 0.2 s of a small file's run). Whatever
:func:`parsed` does not take as plainly valid (help, an error, a form only click knows) is
left to the typer app, which prints what it always printed. Here too: what every command's
run shares, an engine call's outcome as the exit status (:func:`run`) and the guard
around the whole process (:func:`guarded`)."""

from __future__ import annotations

import os
import sys
from enum import Enum

from .limits import DIAGRAM_SHOWN, VALUE_SHOWN, LimitError, check_environment
from .slots import Slots

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Sequence

EXIT_OK, EXIT_VIOLATIONS, EXIT_UNUSABLE, EXIT_TRUNCATED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class Option(Slots):
    """One parameter of a command: the engine call's ``name`` for it, its ``flags`` (none:
    the positional argument), its ``kind`` (bool: a flag; int, str, :data:`PATH`, or an Enum
    of its choices), its ``default``, whether it may be given several times (``many``), the
    least int it takes (``min``), and what ``--help`` says of it."""

    __slots__ = ("name", "flags", "kind", "default", "many", "min", "metavar", "help")

    def __init__(self, name: str, flags: tuple[str, ...], kind: Any = bool, default: Any = None, many: bool = False,
                 min: int | None = None, metavar: str | None = None, help: str | None = None) -> None:
        self.name = name
        self.flags = flags
        self.kind = kind
        self.default = default
        self.many = many
        self.min = min
        self.metavar = metavar
        self.help = help

    __hash__ = Slots.hashed


#: the kind of an option that names a file: its path as a str, spelt as :func:`path_text` spells it
PATH = "path"


def path_text(value: str) -> str:
    """A path as ``str(pathlib.Path(value))`` spells it (what the typer app hands), without
    importing pathlib: no empty or ``.`` parts, no slash at the end, ``.`` for nothing."""
    root = "//" if value.startswith("//") and not value.startswith("///") else "/" if value.startswith("/") else ""
    parts = [p for p in value.split("/") if p and p != "."]
    return root + "/".join(parts) if root or parts else "."


class FailOn(str, Enum):
    warning = "warning"
    error = "error"


class SnapshotFormat(str, Enum):
    table = "table"
    jsonl = "jsonl"
    summary = "summary"
    resp = "resp"
    csv = "csv"


#: ``--max-value``, the same on every command with a table view
MAX_VALUE = Option("max_value", ("--max-value",), int, min=1, metavar="BYTES",
                   help=f"Bytes of each value the table shows (default {VALUE_SHOWN.default}).")

#: ``rdb``'s parameters, in the order of its ``--help``
RDB = (
    Option("files", (), PATH, ..., many=True, help="RDB files (Redis, Valkey, Dragonfly; gzip allowed)."),
    Option("fmt", ("--format", "-f"), SnapshotFormat, SnapshotFormat.table,
           help="table, jsonl, summary, or resp (the data as commands for redis-cli --pipe); csv with --report."),
    Option("key", ("--key",), str, help="Show this key's fields and bytes."),
    Option("offset", ("--offset",), int, min=0, help="Show the key whose bytes cover this offset."),
    Option("fail_on", ("--fail-on",), FailOn, FailOn.error, help="Exit 1 on findings of this severity or worse."),
    Option("full", ("--full",), bool, False, help="Show keys, values and bytes whole (the table caps them)."),
    MAX_VALUE,
    Option("max_diagram", ("--max-diagram",), int, min=1, metavar="BYTES",
           help=f"Bytes of a key's record the diagram draws (default {DIAGRAM_SHOWN.default})."),
    Option("match", ("--match",), str, metavar="GLOB",
           help="Keys matching this pattern, as SCAN MATCH takes it (* ? [a-z] [^a] \\x)."),
    Option("regex", ("--regex",), str, metavar="RE",
           help="Keys in which this regular expression (Python's) is found."),
    Option("key_type", ("--type",), str, (), many=True, metavar="TYPE",
           help="Keys of this type (string, list, set, zset, hash, stream, module, ...)."),
    Option("db", ("--db",), int, (), many=True, min=0, help="Keys of this db."),
    Option("min_size", ("--min-size",), int, min=0, metavar="BYTES",
           help="Keys whose serialised value has at least this many bytes."),
    Option("max_size", ("--max-size",), int, min=0, metavar="BYTES",
           help="Keys whose serialised value has at most this many bytes."),
    Option("min_elements", ("--min-elements",), int, min=0, metavar="N", help="Keys of at least this many elements."),
    Option("max_elements", ("--max-elements",), int, min=0, metavar="N", help="Keys of at most this many elements."),
    Option("expiring", ("--expiring",), bool, False, help="Keys with an expiry still ahead (at --at)."),
    Option("persistent", ("--persistent",), bool, False, help="Keys without an expiry."),
    Option("expired", ("--expired",), bool, False, help="Keys whose expiry is past (at --at)."),
    Option("values", ("--values",), bool, False,
           help="jsonl: each key's value and digest (DEBUG DIGEST-VALUE), and functions' code."),
    Option("digest", ("--digest",), bool, False,
           help="The snapshot's digest, as DEBUG DIGEST gives it, on the summary (reads every value)."),
    Option("jobs", ("--jobs", "-j"), int, 0, min=0,
           help="Processes that share jsonl --values of a large file: 0 as the machine allows (two from 64 MB "
                "on two cores or more), 1 one."),
    Option("at", ("--at",), str, metavar="TIME",
           help="When expiries are judged: Unix seconds or ISO 8601 (default: the snapshot's ctime, else now)."),
    Option("report", ("--report", "-r"), str, (), many=True, metavar="NAME",
           help="Memory reports: memory, bigkeys, prefix, types, expiry (several allowed)."),
    Option("top", ("--top", "-n"), int, 20, min=1, help="Rows of the memory and prefix reports."),
    Option("sep", ("--sep",), str, (), many=True, metavar="TEXT", help="Prefix separator (several allowed; default :)."),
    Option("depth", ("--depth",), int, 2, min=1, help="Prefix levels of the prefix report and the plot."),
    Option("config", ("--config",), PATH, metavar="FILE",
           help="The server's redis.conf (its encoding thresholds; default the server's defaults)."),
    Option("plot", ("--plot",), PATH, metavar="FILE.svg", help="Draw memory by prefix as a flame graph."),
    Option("allocator", ("--allocator",), str, metavar="NAME",
           help="The server's jemalloc: bundled (Redis's own build: source, official images) or system (Debian's, "
                "Ubuntu's packages); default: system for a Redis 7.0 file, bundled from 7.2."),
)


def rdb(o: dict) -> None:
    """``rdb``: the options by name (as :data:`RDB` declares them) in, one engine call, the
    exit status out."""
    from .engines.snapshots import snapshot_files

    select = {"match": o["match"], "regex": o["regex"], "type": tuple(o["key_type"]), "db": tuple(o["db"]),
              "min_size": o["min_size"], "max_size": o["max_size"], "min_elements": o["min_elements"],
              "max_elements": o["max_elements"], "expiring": o["expiring"], "persistent": o["persistent"],
              "expired": o["expired"], "at": o["at"]}
    reports = None
    if o["report"] or o["plot"] is not None:
        reports = {"names": tuple(o["report"]) or (("memory",) if o["plot"] is None else ()), "top": o["top"],
                   "seps": tuple(o["sep"]), "depth": o["depth"], "at": o["at"], "config": o["config"],
                   "plot": o["plot"], "allocator": o["allocator"]}
    elif o["fmt"] is SnapshotFormat.csv:
        fail("--format csv is the memory reports' (--report NAME)")
    shown = shown_of(o["full"], o["max_value"], o["max_diagram"])
    run(lambda: snapshot_files(o["files"], o["fmt"].value, o["key"], o["offset"], shown, o["fail_on"].value,
                               select, o["values"], o["digest"], reports, o["jobs"]))


#: the commands :func:`parsed` reads, by name: their table and what runs them (``__main__.py``)
QUICK: dict[str, tuple[Sequence[Option], Callable[[dict], None]]] = {"rdb": (RDB, rdb)}


def parsed(table: Sequence[Option], args: Sequence[str]) -> dict | None:
    """The options of ``args`` by name, as the typer app built from ``table`` hands them
    to its command; None for anything but the plain forms (``--flag``, ``--name VALUE``,
    ``--name=VALUE``, ``-x VALUE``, the positional arguments): help, a value out of range
    or not one of the choices, an unknown option, no positional argument, an option given
    twice that is not ``many``, a value that starts with ``-``, ``--``: the typer app then
    reads them and says what it always said."""
    by_flag = {flag: o for o in table for flag in o.flags}
    options = {o.name: list(o.default) if o.many else o.default for o in table if o.flags}
    positional = [o for o in table if not o.flags]
    given, plain = set(), []
    rest = iter(args)
    for arg in rest:
        if arg == "-" or (arg and not arg.startswith("-")):
            plain.append(arg)
            continue
        flag, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        o = by_flag.get(flag)
        if o is None or (o.name in given and not o.many):
            return None
        given.add(o.name)
        if o.kind is bool:
            if eq:
                return None
            options[o.name] = True
            continue
        if not eq:
            value = next(rest, None)
            if value is None or (value.startswith("-") and value != "-"):
                return None
        value = _converted(o, value)
        if value is None:
            return None
        if o.many:
            options[o.name].append(value)
        else:
            options[o.name] = value
    if len(positional) != 1 or not plain:
        return None
    options[positional[0].name] = [_converted(positional[0], a) for a in plain]
    return options


def _converted(o: Option, value: str):
    """``value`` as the option's kind, None where click might read it otherwise or refuse it."""
    if o.kind is int:
        if not (value.isascii() and value.isdigit()) or (o.min is not None and int(value) < o.min):
            return None
        return int(value)
    if o.kind == PATH:
        return path_text(value)
    if isinstance(o.kind, type) and issubclass(o.kind, Enum):
        return next((c for c in o.kind if c.value == value), None)
    return o.kind(value)


def shown_of(full: bool, max_value: int | None, max_diagram: int | None = None):
    """What the table and diagram show of each frame: ``--full``, ``--max-value``, ``--max-diagram``."""
    from .outputs.shown import Shown

    if full:
        return Shown.everything()
    caps = Shown()
    return Shown(max_value or caps.value, max_diagram or caps.diagram, caps.rows)


def fail(message: str, code: int = EXIT_UNUSABLE) -> None:
    """One unwrapped line on stderr, then exit."""
    from .outputs.escape import safe

    sys.stderr.write(f"dcpinspect: {safe(message)}\n")
    raise SystemExit(code)


def run(call: Callable[[], bool]) -> None:
    """Exit with what an engine function found: 1 when it found violations, 0 when not, 2
    (its one line on stderr) when an input or option is unusable, 3 when the input ends
    inside a frame."""
    from .engines import Unusable

    try:
        failed = call()
    except Unusable as exc:
        fail(str(exc))
    except Exception as exc:
        from .engines.inputs import Truncated  # the capture engines': imported when one is raised

        if isinstance(exc, Truncated):
            fail(str(exc), EXIT_TRUNCATED)
        raise
    raise SystemExit(EXIT_VIOLATIONS if failed else EXIT_OK)


def guarded(call: Callable[[], None]) -> None:
    """Run the whole command line: the environment's caps checked first, Ctrl-C as exit
    130, and a reader that went away (``| head``) as exit 0."""
    try:
        check_environment()
    except LimitError as exc:
        sys.stderr.write(f"dcpinspect: {exc}\n")
        sys.exit(EXIT_UNUSABLE)
    try:
        call()
    except KeyboardInterrupt:
        sys.stderr.write("dcpinspect: interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        try:  # what is still buffered must not fail again when the interpreter exits
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        sys.stderr.close()
        sys.exit(EXIT_OK)
    except SystemExit as exc:
        if exc.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            # the reader went away (``| head``): typer swallows EPIPE as exit 1, which here
            # would mean "violations found"; stopping early is not a failure
            sys.exit(EXIT_OK)
        raise

