"""The ``dcpinspect`` command line."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from .outputs.render import Renderer, make_console

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
    make_console(stderr=True).print(f"dcpinspect: {message}")
    raise typer.Exit(code)


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


@app.command("rules")
def rules_command(fmt: Format = typer.Option(Format.table, "--format", "-f")) -> None:
    """List every rule the validator applies."""
    from rich.table import Table

    from .outputs.jsonl import dumps
    from .rules.registry import FRAME_RULES

    rules = list(FRAME_RULES.values())
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
