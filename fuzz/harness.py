"""Fuzz harnesses for every entry point of dcpinspect: one ``check_<entry>(data)`` each.

A check takes the bytes a fuzzer chose, makes that entry point's input from them, runs it
the way a user's input runs, and asserts what every entry point keeps for any input:

- no exception escapes (an exception is the finding);
- the command line exits 0, 1 or 2;
- what is printed is bounded in the size of the input: at most ``OUTPUT_FACTOR`` bytes
  for each byte of input, plus ``OUTPUT_SLACK`` (one frame's table and a summary line);
- the peak of the traced Python heap (tracemalloc) stays under ``MEMORY_CAP``.

Campaigns (``fuzz/campaign.py``) run the same checks at campaign speed: memory is bounded
by libFuzzer's ``-rss_limit_mb`` instead of being measured on each input
(``MEMORY_WAY`` "none"), and the costly views run on a sample of the inputs, chosen by a
hash of the input so that a finding always replays the same way: the rich terminal views
(table, diagram, summary and stats tables) on one input in ``RICH_EVERY``, the gzipped
copy of a capture on one in ``GZIP_EVERY``, the commands themselves on one in
``CLI_EVERY``. The cheaper views (jsonl, the diagram's text, the summary and stats data)
run on every input. The suite runs everything on every input.

The entry points: ``hex`` (pasted text, ``decode_hex_text`` and the ``hex`` command),
``frame`` (one frame, and a byte stream split and decoded, with and without a negotiated
HELO / DCP_OPEN context, judged by the frame and stream rules), ``pcap`` and ``pcapng``
(capture file bytes through the reader and the whole engine: the record-by-record Python
path and the C path must print the same; then every capture command), ``conversation``
(whole TCP conversations built from fuzzer-chosen frames and impairments), and ``render``
(the table, diagram, jsonl, summary and stats outputs over whatever decodes).

The same checks run in the atheris campaigns (``fuzz/<entry>.py``) and in the test suite
(``tests/test_fuzz_*.py``, with hypothesis); inputs that found bugs are kept under
``fuzz/regressions/<entry>/`` and replayed by ``tests/test_fuzz_regressions.py``.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import io
import json
import os
import struct
import sys
import tempfile
import tracemalloc
import zlib
from pathlib import Path
from typing import Callable, Iterator, Sequence

REPO = Path(__file__).resolve().parent.parent
if str(REPO / "tests") not in sys.path:  # dcpgen and frames: the tests' frame builders
    sys.path.append(str(REPO / "tests"))

#: bytes of output allowed for each byte of input (rendered text, jsonl, stats)
OUTPUT_FACTOR = int(os.environ.get("DCPINSPECT_FUZZ_OUTPUT_FACTOR", "200"))
#: bytes of output allowed whatever the input (a frame's table, headings, the summary line)
OUTPUT_SLACK = int(os.environ.get("DCPINSPECT_FUZZ_OUTPUT_SLACK", str(64 * 1024)))
#: peak of the traced Python heap during one check
MEMORY_CAP = int(os.environ.get("DCPINSPECT_FUZZ_MEMORY_MB", "200")) * 1024 * 1024
#: frames and other operations a conversation is built from, at most
MAX_OPS = 64
#: the capture commands, run in this process: (name, arguments before the file)
CAPTURE_COMMANDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("decode-table", ("decode", "-f", "table")),
    ("decode-jsonl", ("decode", "-f", "jsonl", "-j", "1")),
    ("decode-summary", ("decode", "-f", "summary", "-j", "1")),
    ("validate", ("validate", "-j", "1")),
    ("validate-jsonl", ("validate", "-f", "jsonl", "-j", "1")),
    ("stats", ("stats", "--no-chart")),
    ("stats-json", ("stats", "-f", "json")),
)
EXIT_CODES = (0, 1, 2, 3)  # docs/index.md's Exit codes: 3 is hex's dump that ends inside a frame


class PropertyFailure(AssertionError):
    """An entry point broke one of the properties every input must keep."""


# --------------------------------------------------------------------------- choices


class Choices:
    """Decisions read from the front of a fuzzer's bytes, the rest left as data: a small
    stand-in for atheris' FuzzedDataProvider, so the suite and the replays need no atheris.
    Past the end every decision is 0 and every byte string empty."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    @property
    def left(self) -> int:
        return len(self.data) - self.pos

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def int(self, top: int) -> int:
        """An integer in 0..top, from as few bytes as hold ``top``."""
        if top <= 0:
            return 0
        n = (top.bit_length() + 7) // 8
        raw = self.bytes(n)
        return int.from_bytes(raw, "big") % (top + 1) if raw else 0

    def bool(self) -> bool:
        return bool(self.byte() & 1)

    def pick(self, options: Sequence):
        return options[self.byte() % len(options)]

    def bytes(self, n: int) -> bytes:
        out = self.data[self.pos: self.pos + max(0, n)]
        self.pos += len(out)
        return out

    def rest(self) -> bytes:
        out = self.data[self.pos:]
        self.pos = len(self.data)
        return out


# --------------------------------------------------------------------------- properties


#: how memory is measured: "tracemalloc" (the Python heap, exact, several times slower),
#: "rss" (the growth of the process's peak resident set, C allocations included, cheap) or
#: "none" (not on each input: a campaign's ``-rss_limit_mb`` bounds the whole process)
MEMORY_WAY = os.environ.get("DCPINSPECT_FUZZ_MEMORY", "tracemalloc")
#: render the rich terminal views (table, diagram through the console, summary and stats
#: tables) on one input in this many; 1 renders them on every input
RICH_EVERY = int(os.environ.get("DCPINSPECT_FUZZ_RICH_EVERY", "1"))
#: decode a capture's gzipped copy (and compare) on one input in this many
GZIP_EVERY = int(os.environ.get("DCPINSPECT_FUZZ_GZIP_EVERY", "1"))


def turn(data: bytes, every: int, salt: int = 0) -> bool:
    """Whether a check sampled one input in ``every`` runs on ``data``: by a hash of the
    input, so that the same input always runs the same way (``salt`` picks another sample)."""
    return every <= 1 or (zlib.crc32(data) ^ salt) % every == 0


def _rss_peak() -> tuple[int, int]:
    """(peak, current) resident set of this process, in bytes (Linux)."""
    with open("/proc/self/status") as f:
        fields = dict(line.split(":", 1) for line in f if line.startswith(("VmHWM", "VmRSS")))
    return int(fields["VmHWM"].split()[0]) * 1024, int(fields["VmRSS"].split()[0]) * 1024


@contextlib.contextmanager
def bounded_memory(what: str, way: str | None = None) -> Iterator[None]:
    """Memory may not grow by more than ``MEMORY_CAP`` inside the block, measured ``way``
    (``MEMORY_WAY`` unless given)."""
    way = way or MEMORY_WAY
    if way == "none":
        yield
        return
    if way == "rss":
        with open("/proc/self/clear_refs", "w") as f:  # the peak starts again from now
            f.write("5")
        base = _rss_peak()[1]
        yield
        peak = _rss_peak()[0] - base
    else:
        started = not tracemalloc.is_tracing()
        if started:
            tracemalloc.start()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        try:
            yield
        finally:
            peak = tracemalloc.get_traced_memory()[1] - base
            if started:
                tracemalloc.stop()
    if peak > MEMORY_CAP:
        raise PropertyFailure(f"{what}: peak memory ({way}) {peak:,} bytes, cap {MEMORY_CAP:,}")


def bounded_output(size: int, inputs: int, what: str) -> None:
    limit = OUTPUT_FACTOR * inputs + OUTPUT_SLACK
    if size > limit:
        raise PropertyFailure(f"{what}: {size:,} bytes of output for {inputs:,} bytes of input (limit {limit:,})")


def console(width: int = 120):
    from rich.console import Console

    return Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False)


def run_cli(args: Sequence[str], input: bytes | None = None, env: dict | None = None) -> tuple[int, bytes]:
    """A command in this process; returns (exit code, stdout and stderr). An exception that
    escapes the command is raised again as itself. Its memory is the resident set's growth:
    a command runs as the user runs it, and what it reserves without touching (a read of
    up to the text cap) is not memory the user pays for."""
    from typer.testing import CliRunner

    from dcpinspect.cli import app

    with bounded_memory(" ".join(args), "rss"):
        result = CliRunner().invoke(app, list(args), input=input, env=env)
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        raise exc.with_traceback(result.exc_info[2] if result.exc_info else None)
    if result.exit_code not in EXIT_CODES:
        raise PropertyFailure(f"{' '.join(args)}: exit code {result.exit_code}")
    return result.exit_code, result.stdout_bytes + (result.stderr_bytes or b"")


def _scratch() -> Path:
    shm = Path("/dev/shm")
    return Path(tempfile.mkdtemp(prefix="dcpfuzz-", dir=shm if shm.is_dir() else None))


@contextlib.contextmanager
def scratch_file(name: str, data: bytes) -> Iterator[Path]:
    """``data`` as a file named ``name`` (in memory where the system has a tmpfs)."""
    root = _scratch()
    path = root / name
    try:
        path.write_bytes(data)
        yield path
    finally:
        path.unlink(missing_ok=True)
        root.rmdir()


# --------------------------------------------------------------------------- frames


def exercise(msg, width: int = 120, rich: bool = True) -> int:
    """Everything one decoded frame goes through on its way to the user (the rich table
    only if ``rich``); returns the bytes of its largest view (each view is bounded on its
    own: a frame shown three ways is not three times too much). Nothing may raise."""
    from dcpinspect.families.mcbp.messages.describe import describe
    from dcpinspect.messages.layout import walk
    from dcpinspect.outputs.diagram import diagram
    from dcpinspect.families.mcbp.messages.record import frame_record
    from dcpinspect.outputs.jsonl import dumps
    from dcpinspect.outputs.table import frame_table
    from dcpinspect.families.mcbp.rules.frame import check_frame

    check_frame(msg)
    for _, f in walk(describe(msg)):
        if f.size < 0:
            raise PropertyFailure(f"field {f.name!r} has size {f.size}")
    text = dumps(frame_record(msg))
    json.loads(text)
    drawn = diagram(msg)
    if not rich:
        return max(len(text), len(drawn))
    con = console(width)
    con.print(frame_table(msg))
    return max(len(text), len(con.file.getvalue()), len(drawn))


def plain_views(items) -> int:
    """The views of decoded items that need no rich console, as a sampled-out table or
    diagram is replaced by them: each frame's jsonl record and diagram text, each skipped
    range's reason. Returns the bytes of the larger of the two views."""
    from dcpinspect.families.mcbp.framer import Skipped
    from dcpinspect.outputs.diagram import diagram
    from dcpinspect.outputs.escape import safe
    from dcpinspect.families.mcbp.messages.record import frame_record
    from dcpinspect.outputs.jsonl import dumps

    records = drawn = 0
    for item in items:
        if isinstance(item, Skipped):
            records += len(safe(item.reason)) + 40
            drawn += len(safe(item.reason)) + 40
        else:
            records += len(dumps(frame_record(item)))
            drawn += len(diagram(item))
    return max(records, drawn)


def assert_tiles(items, start: int, total: int) -> None:
    """Frames and skipped ranges cover ``start..total`` exactly, in order."""
    from dcpinspect.families.mcbp.framer import Skipped

    pos = start
    for it in items:
        size = it.size if isinstance(it, Skipped) else len(it.data)
        if it.offset != pos or size <= 0:
            raise PropertyFailure(f"item at {it.offset} (size {size}) where {pos} was expected")
        pos += size
    if pos != total:
        raise PropertyFailure(f"items end at {pos}, the input at {total}")


_PRELUDES: list[list[tuple[str, bytes]]] = []


def preludes() -> list[list[tuple[str, bytes]]]:
    """Negotiations a fuzzed stream can follow: HELO with or without collections, DCP_OPEN,
    controls (stream ids, v2.2 markers, flow control)."""
    if not _PRELUDES:
        from dcpgen import Dcp

        _PRELUDES.extend([
            Dcp(collections=True).handshake().frames,
            Dcp(collections=False).handshake().frames,
            Dcp().handshake(("max_marker_version", "2.2"), stream_ids=True, buffer=4000).frames,
            Dcp(collections=False, delete_times=False).helo(features=[]).open(flags=0).frames,
        ])
    return _PRELUDES


def check_frame(data: bytes) -> None:
    """One frame decoded alone (no context, collections on, off), and the bytes as a stream:
    split, decoded, judged, with and without a negotiated connection before them."""
    from dcpinspect.engines.streaming import decode_bytes
    from dcpinspect.families.mcbp.conversation import Conversation
    from dcpinspect.families.mcbp.framer import RawFrame, split_frames
    from dcpinspect.families.mcbp.messages.frame import DecodeContext, Message, decode_frame
    from dcpinspect.families.mcbp.messages.record import frame_record
    from dcpinspect.outputs.jsonl import dumps

    ch = Choices(data)
    mode = ch.byte()
    body = ch.rest()
    with bounded_memory("frame"):
        rendered = 0
        collections = (None, True, False)[mode % 3]
        bounded_output(exercise(decode_frame(body, 0, DecodeContext(collections=collections)),
                                rich=turn(data, RICH_EVERY)), len(data), "frame views")
        items = split_frames(body)
        assert_tiles(items, 0, len(body))
        decoded = list(decode_bytes(body, collections))
        assert_tiles(decoded, 0, len(body))
        # the same bytes after a negotiation, each frame sent by the side its magic says
        # (or all by the producer), the stream rules judging the whole conversation
        prelude = preludes()[(mode >> 2) % len(preludes())]
        conv = Conversation.new(None, seen_from_start=True)
        for n, (direction, raw) in enumerate(prelude):
            conv.decode(RawFrame(0, raw), direction, float(n), n)
        by_magic = bool(mode & 0x40)
        out = []
        for n, item in enumerate(items, len(prelude)):
            if isinstance(item, RawFrame):
                direction = ("c2s" if item.data[0] in (0x80, 0x08, 0x82) else "s2c") if by_magic else "s2c"
                out.append(conv.decode(item, direction, float(n), n))
        out.extend(conv.validator.finish())
        for m in out:
            if isinstance(m, Message):
                line = dumps(frame_record(m))
                rendered += len(line)
            else:
                rendered += len(dumps(m.to_json()))
        bounded_output(rendered, len(data), "frame stream jsonl")


# --------------------------------------------------------------------------- hex


def check_hex(data: bytes) -> None:
    """Pasted text: parsed and decoded in this process and rendered in every format, then
    the ``hex`` command on the same text."""
    from dcpinspect.engines.hexinput import decode_hex_text
    from dcpinspect.outputs.render import Renderer

    ch = Choices(data)
    mode = ch.byte()
    raw = ch.rest()
    text = raw.decode("utf-8", "replace")
    fmt = ("table", "jsonl", "diagram")[mode % 3]
    collections = (None, True, False)[(mode >> 2) % 3]
    with bounded_memory("hex"):
        result = decode_hex_text(text, collections)
        if fmt == "jsonl" or turn(data, RICH_EVERY):
            out = io.StringIO()
            con = console()
            renderer = Renderer(fmt, con, out)
            for item in result.items:
                renderer.item(item)
            renderer.summary()
            printed = len(out.getvalue()) + len(con.file.getvalue())
        else:  # the table and diagram sampled out: their plain text instead
            printed = plain_views(result.items)
        # a hexdump -C '*' line stands for as many repeated bytes as the next offset says
        # (up to the dump's cap): the output is bounded by the bytes the text stands for
        size = max(len(data), len(result.dump.data))
        bounded_output(printed, size, f"hex -f {fmt}")
    if _cli_turn(data):
        args = ["hex", "-f", fmt, "--collections", ("auto", "on", "off")[(mode >> 2) % 3]]
        if mode & 0x10:
            args.append("--strict")
        if mode & 0x20 and fmt == "table":
            args.append("--diagram")
        _, printed = run_cli(args, input=raw)
        bounded_output(len(printed), size, " ".join(args))
        with scratch_file("paste.txt", raw) as path:  # a dump given as a file, to the other commands
            for command in (("decode", "-f", "jsonl"), ("validate", "-f", "jsonl"), ("stats", "-f", "json")):
                _, printed = run_cli([*command, str(path)])
                bounded_output(len(printed), size, " ".join(command))


# --------------------------------------------------------------------------- captures


def engine_jsonl(path: Path, fast: bool, stats=None, collector=None) -> bytes:
    """The jsonl a capture decodes to in this process: the record-by-record Python path
    (``DCPINSPECT_PURE``) or the C path (records followed in C, the fast lane). A
    ``collector`` (a StatsCollector) counts the same items, the lane's lines by what they carry."""
    from dcpinspect.engines.records import keyed_items
    from dcpinspect.engines.sinks import run_sink
    from dcpinspect.engines.sinks import JsonlSink
    from dcpinspect.families import VALUES
    from dcpinspect.sources.capture import read_records

    sink = JsonlSink()
    keyed = keyed_items(read_records(path), stats=stats, detail=VALUES, lane=fast, follow=fast)
    if collector is not None:
        keyed = _counted(keyed, collector)
    text = b"".join(line for _, line in run_sink(sink, keyed))
    tally = sink.result()
    return text + f"{tally.frames} {sorted(tally.severities.items())}".encode()


def _counted(keyed, collector):
    for key, item in keyed:
        collector.add(item, key)
        yield key, item


def _report(collector) -> str:
    return json.dumps(collector.report(), default=str, indent=1)


def _lane_available() -> bool:
    from dcpinspect.families.mcbp import lane

    return lane.available()


#: run the capture commands on one input in this many (by a hash of the input: the same
#: input always runs the same way); 1 runs them on every input
CLI_EVERY = int(os.environ.get("DCPINSPECT_FUZZ_CLI_EVERY", "1"))


def check_capture_file(path: Path, inputs: int, gz: bool = True) -> None:
    """A capture file through the engine (the Python and C paths print the same, and so does
    the file gzipped), and the summary, findings and stats outputs, in this process."""
    from dcpinspect.engines.records import ReadStats
    from dcpinspect.families import stats_collector
    from dcpinspect.sessions.stats import StatsCollector
    from dcpinspect.sources.capture import CaptureError

    try:
        pure_stats, pure_counted = ReadStats(), stats_collector()
        pure = engine_jsonl(path, False, pure_stats, pure_counted)
    except CaptureError:
        pure = None  # not a capture at all: the commands say so, exit 2
    if pure is not None:
        bounded_output(len(pure), inputs, "engine jsonl")
        if _lane_available():
            fast_stats, fast_counted = ReadStats(), stats_collector()
            fast = engine_jsonl(path, True, fast_stats, fast_counted)
            if fast != pure:
                raise PropertyFailure(f"the C path prints differently:\n{_first_difference(pure, fast)}")
            if vars(fast_stats) != vars(pure_stats):
                raise PropertyFailure(f"the C path counts records differently: {vars(fast_stats)} {vars(pure_stats)}")
            counted = _report(pure_counted).encode(), _report(fast_counted).encode()
            if counted[0] != counted[1]:
                raise PropertyFailure("the statistics of the C path's lines differ from those of the messages:\n"
                                      + _first_difference(*counted))
        raw = path.read_bytes()
        if gz and turn(raw, GZIP_EVERY, salt=0x9E3779B9):
            zipped = path.with_name(path.name + ".gz")
            zipped.write_bytes(gzip.compress(raw, 1, mtime=0))
            try:
                if engine_jsonl(zipped, False) != pure:
                    raise PropertyFailure("the gzipped file decodes differently")
            finally:
                zipped.unlink()
        bounded_output(engine_reports(path, rich=turn(raw, RICH_EVERY)), inputs,
                       "summary, findings and stats")


def run_capture_commands(path: Path, inputs: int) -> None:
    """Every capture command on the file (``decode -f jsonl`` with and without the C paths)."""
    for name, args in CAPTURE_COMMANDS:
        for env in (({"DCPINSPECT_PURE": None}, {"DCPINSPECT_PURE": "1"}) if name == "decode-jsonl"
                    else ({"DCPINSPECT_PURE": None},)):
            _, printed = run_cli([*args, str(path)], env=env)
            bounded_output(len(printed), inputs, name)


def engine_reports(path: Path, rich: bool = True) -> int:
    """What ``decode -f summary``, ``validate`` and ``stats`` make of a capture, in this
    process (the summary's rich table only if ``rich``); returns the bytes they print."""
    from dcpinspect.outputs.stamp import stamp as _stamp
    from dcpinspect.engines.connections import Captured, Note
    from dcpinspect.engines.records import keyed_items
    from dcpinspect.engines.sinks import FindingsSink, SummarySink
    from dcpinspect.outputs.jsonl import dumps
    from dcpinspect.outputs.stats import report_json
    from dcpinspect.families import stats_collector
    from dcpinspect.sessions.stats import StatsCollector
    from dcpinspect.sources.capture import read_records

    summary, findings, stats = SummarySink(), FindingsSink(str(path), True, _stamp), stats_collector()
    printed = 0
    for key, item in keyed_items(read_records(path)):
        summary.take(key, item)
        stats.add(item)
        for row in findings.take(key, item) or ():  # a finding's row, a damaged file's note, an undecoded one
            if isinstance(row, Note):
                printed += len(row.message)
                continue
            printed += len(row) if isinstance(row, str) else len(dumps(row.record)) + sum(map(len, row.cells))
        if isinstance(item, Captured):
            printed += len(_stamp(item.ts))
    if rich:
        con = console()
        summary.summary.render(con)
        printed += len(con.file.getvalue())
    return printed + len(report_json(stats.report()))


def _first_difference(a: bytes, b: bytes) -> str:
    for i, (x, y) in enumerate(zip(a.split(b"\n"), b.split(b"\n"))):
        if x != y:
            return f"line {i + 1}:\n  python: {x[:300]!r}\n  C:      {y[:300]!r}"
    return f"lengths {len(a)} and {len(b)}"


def check_capture(data: bytes, suffix: str = ".pcap") -> None:
    """Capture file bytes, as they are (``suffix`` only names the file)."""
    with scratch_file(f"fuzz{suffix}", data) as path:
        with bounded_memory(f"capture{suffix}"):
            check_capture_file(path, len(data))
        if _cli_turn(data):
            run_capture_commands(path, len(data))


def _cli_turn(data: bytes) -> bool:
    return CLI_EVERY <= 1 or zlib.crc32(data) % CLI_EVERY == 0


def check_pcap(data: bytes) -> None:
    check_capture(data, ".pcap")


def check_pcapng(data: bytes) -> None:
    check_capture(data, ".pcapng")


# --------------------------------------------------------------------------- conversations


def _small(ch: Choices) -> int:
    """A seqno-like number: mostly small, sometimes at the edges of 64 bits."""
    k = ch.byte()
    if k < 200:
        return k
    return (0, 1, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 2, 2**64 - 1)[k % 8]


def _random_frame(ch: Choices) -> bytes:
    from dcpinspect.families.mcbp.messages.build import build_frame
    from dcpinspect.families.mcbp.messages.names import MAGICS

    magic = ch.pick(sorted(MAGICS))
    opcode = ch.byte()
    framing = ch.bytes(ch.int(8)) if magic in (0x08, 0x18) else b""
    extras = ch.bytes(ch.int(48))
    key = ch.bytes(ch.int(32))
    value = ch.bytes(ch.int(96))
    lie = ch.byte()
    body = len(framing) + len(extras) + len(key) + len(value)
    body_length = None if lie < 224 else (body + 1, max(0, body - 1), 0, 2**32 - 1, 30 << 20, 1 << 20)[lie % 6]
    word = ch.int(0xFFFF)
    return build_frame(magic, opcode, framing=framing, extras=extras, key=key, value=value, vbucket=word,
                       status=word, opaque=ch.int(0xFFFFFFFF), datatype=ch.int(7), body_length=body_length)


def build_conversation(data: bytes) -> tuple[list[bytes | tuple], str, str]:
    """(packets, link type, file format) of a TCP conversation made from ``data``: which DCP
    exchanges it carries (built with tests/dcpgen.py, valid or broken on purpose, with spec
    vectors and fuzzer-made frames among them), and how TCP carries it (segment sizes,
    sequence numbers, lost, repeated and reordered segments, how it ends, the link type)."""
    from dcpgen import DISK, MEMORY, Dcp
    from frames import TAP_VECTORS, VECTORS

    from dcpinspect.transport import synth

    ch = Choices(data)
    d = Dcp(collections=ch.bool(), delete_times=ch.bool())
    if ch.bool():
        controls = [c for c, on in zip((("max_marker_version", "2.2"), ("enable_expiry_opcode", "true"),
                                        ("enable_sync_writes", "true"), ("send_stream_end_on_client_close_stream",
                                                                         "true")), (ch.bool() for _ in range(4))) if on]
        d.handshake(*controls, stream_ids=ch.bool(), buffer=ch.pick((0, 0, 64, 4000)))
    producers = []
    vectors = sorted(VECTORS) + [f"tap-{k}" for k in sorted(TAP_VECTORS)]
    for _ in range(MAX_OPS):
        if ch.left < 2:
            break
        try:
            _operation(ch, d, producers, vectors)
        except (struct.error, ValueError, KeyError, OverflowError):
            pass  # a value the builders cannot write (a seqno plus a CAS past 64 bits): no frame
    return _carry(ch, d.frames)


def _operation(ch: Choices, d, producers: list, vectors: list[str]) -> None:
    """One exchange or frame of the conversation."""
    from dcpgen import DISK, MEMORY
    from frames import TAP_VECTORS, VECTORS

    op = ch.byte() % 20
    p = producers[ch.byte() % len(producers)] if producers else None
    if op in (0, 1) or p is None:
        sid = ch.int(8) or None if d.stream_ids else None
        producers.append(d.stream(ch.int(1023), start=_small(ch), sid=sid, end=ch.pick((2**64 - 1, 100, 0))))
    elif op in (2, 3):
        p.snapshot(1 + ch.int(6), flags=ch.pick((MEMORY, DISK, MEMORY | 4, DISK | 0x10 | 0x20)),
                   version=ch.pick(("v1", "2.0", "2.2")),
                   kind=ch.pick(("mutation", "deletion", "expiration", "prepare")))
    elif op == 4:
        p.marker(_small(ch), _small(ch), flags=ch.int(0x3F), version=ch.pick(("v1", "2.0", "2.2")))
    elif op == 5:
        p.mutation(key=ch.bytes(ch.int(24)) or None, seqno=_small(ch) if ch.bool() else None,
                   value=ch.bytes(ch.int(80)), datatype=ch.int(7))
    elif op == 6:
        p.deletion(seqno=_small(ch) if ch.bool() else None)
    elif op == 7:
        p.expiration(seqno=_small(ch) if ch.bool() else None)
    elif op == 8:
        p.prepare(seqno=_small(ch) if ch.bool() else None)
    elif op == 9:
        p.system_event(event=ch.int(8), name=ch.bytes(ch.int(16)) or b"c", version=ch.int(2))
    elif op == 10:
        p.seqno_advanced(_small(ch))
    elif op == 11:
        p.oso([_small(ch) for _ in range(ch.int(4))])
    elif op == 12:
        p.end(ch.int(8))
        producers.remove(p)
    elif op == 13:
        d.noop(reply=ch.bool())
    elif op == 14:
        d.buffer_ack(ch.int(5000))
    elif op == 15:
        opaque = d.stream_request(ch.int(1023), start=_small(ch), snap_start=_small(ch), snap_end=_small(ch))
        if ch.bool():
            d.stream_rollback(opaque, _small(ch))
        else:
            d.stream_error(opaque, ch.int(0xFF), context=ch.bytes(ch.int(40)).decode("latin-1") or None)
    elif op == 16:
        name = ch.pick(vectors)
        raw = bytes.fromhex(VECTORS[name] if name in VECTORS else TAP_VECTORS[name[4:]])
        flips = ch.int(3)
        if flips:
            raw = bytearray(raw)
            for _ in range(flips):
                raw[ch.int(len(raw) - 1)] = ch.byte()
            raw = bytes(raw)
        (d.client if ch.bool() else d.server)(raw)
    elif op in (17, 18):
        (d.client if ch.bool() else d.server)(_random_frame(ch))
    else:
        by_client = ch.bool()
        garbage = ch.bytes(1 + ch.int(40))
        if not garbage:  # the input may end before the bytes it asked for
            return
        if by_client:
            d.client(garbage)
        else:  # no stream message: not counted against the consumer's buffer
            d.server(garbage, counted=False)


def _synth():
    """``dcpinspect.transport.synth``, parsing each of a conversation's few IP addresses once
    (it parses both of a segment's again for each frame it writes)."""
    from dcpinspect.transport import synth

    if not hasattr(synth._addr_bytes, "cache_info"):
        synth._addr_bytes = functools.lru_cache(maxsize=None)(synth._addr_bytes)
    return synth


def _carry(ch: Choices, messages: list[tuple[str, bytes]]) -> tuple[list[bytes | tuple], str, str]:
    """How TCP carries the conversation, and the capture it is written to: at most
    ``MAX_PACKETS`` packets, whose frames alone are built (the choices read are the same
    whatever the cut)."""
    synth = _synth()

    if ch.bool():  # several frames in one write, as a socket sends them
        from dcpgen import coalesce

        messages = coalesce(messages, ch.pick((64, 1460, 16384)))
    linktype = ch.pick(("ether", "vlan", "qinq", "ipv6", "sll", "sll2", "null", "loop", "raw", "raw4", "raw6"))
    handshake = ch.bool() or ch.bool()
    segs = synth.tcp_segments(messages, mss=ch.pick((1460, 1460, 536, 100, 7, 1, 9000)), split=1 + ch.int(3),
                              isn=(ch.int(2**32 - 1), ch.int(2**32 - 1)), handshake=handshake,
                              close=ch.pick(("fin", "rst", None)) if handshake else None, acks=ch.bool())
    data_segs = sum(1 for s in segs if s.payload)
    drop = {ch.int(data_segs) for _ in range(ch.int(2))}
    duplicate = {ch.int(data_segs) for _ in range(ch.int(3))}
    reorder = {ch.int(data_segs) for _ in range(ch.int(3))}
    segs = synth.impair(segs, drop=drop, duplicate=duplicate, reorder=reorder)
    server = ("10.0.0.2", ch.pick((11210, 11210, 11209, 11211, 11207, 4000)))
    checksum = ch.bool()
    if ch.bool():  # a second connection, the same traffic from another port, interleaved
        segs = segs[: (MAX_PACKETS + 1) // 2]
        other = synth.frames(segs, client=("10.0.0.3", 50001), server=server, linktype=linktype)
        packets: list = synth.frames(segs, server=server, linktype=linktype, checksum=checksum)
        packets = [p for pair in zip(packets, other) for p in pair][:MAX_PACKETS]
    else:
        packets = synth.frames(segs[:MAX_PACKETS], server=server, linktype=linktype, checksum=checksum)
    fmt = ch.pick(("pcap", "pcapng"))
    if ch.bool():  # time that stands still or goes back
        packets = [(1_700_000_000.0 - (i % 3) * ch.int(1000) * 1e-3, p) for i, p in enumerate(packets)]
    return packets, linktype, fmt


#: packets a conversation may grow to (tiny segments of many frames): the rest is cut
MAX_PACKETS = int(os.environ.get("DCPINSPECT_FUZZ_MAX_PACKETS", "4000"))
#: compare the engine's other paths with the one every conversation goes through (see
#: ``check_conversation``) on one input in this many; by default as often as a capture's
#: gzipped copy is compared with it (``GZIP_EVERY``): both read the same capture again
COMPARE_EVERY = int(os.environ.get("DCPINSPECT_FUZZ_COMPARE_EVERY", str(GZIP_EVERY)))


def check_conversation(data: bytes) -> None:
    """A whole TCP conversation through the engine, and the capture commands.

    On every input, the capture (written once, in memory where the system has a tmpfs) goes
    once through the engine as ``validate``, ``stats`` and ``decode -f jsonl`` read it, into
    their sinks together (:func:`conversation_sinks`): nothing raises and each output is
    bounded. On one input in ``COMPARE_EVERY``, the Python path alone and the C paths print
    the same jsonl and count the same records; on one in ``RICH_EVERY``, the capture is
    decoded with every field's rows and the summary and stats tables are rendered; on one in
    ``CLI_EVERY``, every capture command runs (exit codes 0, 1 or 2, bounded output)."""
    from dcpinspect.engines.records import ReadStats
    from dcpinspect.sources.capture import CaptureError
    from dcpinspect.transport import synth

    packets, linktype, fmt = build_conversation(data)
    root = _scratch()
    path = root / f"conversation.{fmt}"
    try:
        synth.write_pcap(path, packets, linktype, fmt=fmt)
        size = path.stat().st_size
        with bounded_memory("conversation"):
            try:
                stats = ReadStats()
                text = conversation_sinks(path, size, stats, rich=turn(data, RICH_EVERY))
            except CaptureError:
                text = None  # not a capture at all: the commands say so, exit 2
            if text is not None and turn(data, COMPARE_EVERY, salt=0x9E3779B9):
                _compare_paths(path, text, stats)
            if text is not None and turn(data, RICH_EVERY):
                bounded_output(engine_reports(path), size, "summary, findings and stats with field rows")
        if _cli_turn(data):
            run_capture_commands(path, size)
    finally:
        path.unlink(missing_ok=True)
        root.rmdir()


def conversation_sinks(path: Path, inputs: int, stats, rich: bool = True) -> bytes:
    """One pass of the engine over a capture as ``validate``, ``stats`` and ``decode -f jsonl``
    make it (no field rows; the in-order records of plain connections followed in C) into all
    their sinks at once: the jsonl lines, the findings rows, the summary's counts and the
    stats report (and its tables if ``rich``), each bounded in ``inputs``. Returns the jsonl
    and its tally, as :func:`engine_jsonl` gives them."""
    from dcpinspect.engines.connections import Captured
    from dcpinspect.engines.records import keyed_items
    from dcpinspect.engines.sinks import FindingsSink, JsonlSink, SummarySink
    from dcpinspect.families import VALUES
    from dcpinspect.outputs.jsonl import dumps
    from dcpinspect.outputs.stamp import stamp
    from dcpinspect.engines.stats import render
    from dcpinspect.outputs.stats import report_json
    from dcpinspect.families import stats_collector
    from dcpinspect.sessions.stats import StatsCollector
    from dcpinspect.sources.capture import read_records

    jsonl, summary, collector = JsonlSink(), SummarySink(), stats_collector()
    findings = FindingsSink(str(path), True, stamp)
    lines: list[bytes] = []
    rows = 0
    for key, item in keyed_items(read_records(path), stats=stats, detail=VALUES):
        lines.append(jsonl.take(key, item)[1])
        summary.take(key, item)
        collector.add(item)
        for row in findings.take(key, item) or ():  # a finding's row, or a damaged file's note
            rows += len(row) if isinstance(row, str) else len(dumps(row.record)) + sum(map(len, row.cells))
        if isinstance(item, Captured):  # and each frame's time, as the tables show it
            rows += len(stamp(item.ts))
    text = b"".join(lines)
    bounded_output(len(text), inputs, "engine jsonl")
    bounded_output(rows, inputs, "findings")
    report = collector.report()
    printed = len(report_json(report))
    if rich:
        con = console()
        summary.summary.render(con)
        render(report, con, chart=True)
        printed += len(con.file.getvalue())
    bounded_output(printed, inputs, "summary and stats")
    tally = jsonl.result()
    return text + f"{tally.frames} {sorted(tally.severities.items())}".encode()


def _compare_paths(path: Path, text: bytes, stats) -> None:
    """The Python path alone (no records followed in C) and the C paths (the fast lane too)
    print what the every-input pass printed, and count the same records; the statistics of
    the C paths' lines are those of the Python path's messages."""
    from dcpinspect.engines.records import ReadStats
    from dcpinspect.families import stats_collector
    from dcpinspect.sessions.stats import StatsCollector

    reports = []
    for fast in (False, True) if _lane_available() else (False,):
        way = "the C paths" if fast else "the Python path alone"
        other_stats, counted = ReadStats(), stats_collector()
        other = engine_jsonl(path, fast, other_stats, counted)
        if other != text:
            raise PropertyFailure(f"{way} and the every-input pass print differently:\n"
                                  f"{_first_difference(*((text, other) if fast else (other, text)))}")
        if vars(other_stats) != vars(stats):
            raise PropertyFailure(f"{way} and the every-input pass count records differently: "
                                  f"{vars(other_stats)} {vars(stats)}")
        reports.append(_report(counted).encode())
    if len(reports) == 2 and reports[0] != reports[1]:
        raise PropertyFailure("the statistics of the C paths' lines differ from those of the messages:\n"
                              + _first_difference(*reports))


# --------------------------------------------------------------------------- renderers


def check_render(data: bytes) -> None:
    """Whatever a byte stream decodes to, through every renderer at a chosen width: the
    table, the byte diagram, jsonl, the capture summary and the stats report."""
    from dcpinspect.engines.connections import Captured, Note
    from dcpinspect.engines.streaming import ByteStreamDecoder
    from dcpinspect.families.mcbp.framer import Skipped
    from dcpinspect.families.mcbp.messages.frame import Message
    from dcpinspect.outputs.render import Renderer
    from dcpinspect.engines.stats import render
    from dcpinspect.outputs.stats import report_json
    from dcpinspect.families import stats_collector
    from dcpinspect.sessions.stats import StatsCollector
    from dcpinspect.outputs.summary import CaptureSummary

    ch = Choices(data)
    width = 20 + ch.int(200)
    mode = ch.byte()
    body = ch.rest()
    with bounded_memory("render"):
        dec = ByteStreamDecoder.new((None, True, False)[mode % 3])
        items = dec.feed(body[: len(body) // 2]) + dec.close(body[len(body) // 2:])
        printed = 0
        rich = turn(data, RICH_EVERY)
        if not rich:  # the console views sampled out: their plain text instead
            bounded_output(plain_views(items), len(data), "render text")
        for fmt in ("table", "diagram", "jsonl") if rich else ("jsonl",):
            out, con = io.StringIO(), console(width)
            renderer = Renderer(fmt, con, out)
            for item in items:
                renderer.item(item, "10.0.0.1:1-10.0.0.2:11210 c2s" if mode & 8 else "")
            renderer.summary()
            size = len(out.getvalue()) + len(con.file.getvalue())
            bounded_output(size, len(data), f"render {fmt}")
            printed = max(printed, size)
        flow = ("10.0.0.1", 50000, "10.0.0.2", 11210)
        captured: list = []
        for n, item in enumerate(items, 1):
            ts = 1_700_000_000.0 + n * (1e-3 if mode & 0x10 else -1e-3)
            if isinstance(item, Message):
                direction = "c2s" if item.data[:1] in (b"\x80", b"\x08") and not mode & 0x20 else "s2c"
                captured.append(Captured(ts, flow, direction, item, n))
            elif isinstance(item, Skipped):
                captured.append(Note("skipped", item.reason, ts, flow, "s2c", item.offset, item.size))
        collector = stats_collector()
        summary = CaptureSummary()
        for item in captured:
            collector.add(item)
            summary.add(item)
        report = collector.report()
        con = console(width)
        if rich:
            render(report, con, chart=bool(mode & 0x40))
        text = report_json(report)
        json.loads(text)
        if rich:
            summary.render(con)
        bounded_output(len(con.file.getvalue()) + len(text), len(data), "stats")


# --------------------------------------------------------------------------- registry

CHECKS: dict[str, Callable[[bytes], None]] = {
    "hex": check_hex,
    "frame": check_frame,
    "pcap": check_pcap,
    "pcapng": check_pcapng,
    "conversation": check_conversation,
    "render": check_render,
}


def load() -> None:
    """Import every module the checks reach (atheris instruments what is imported inside its
    ``instrument_imports`` block; the checks import lazily)."""
    import importlib
    import pkgutil

    import dcpinspect

    skip = ("dcpinspect.families.mcbp.scapy", "dcpinspect.sources.live", "dcpinspect.outputs.plot")
    for mod in pkgutil.walk_packages(dcpinspect.__path__, "dcpinspect."):
        if not mod.name.startswith(skip) and not mod.name.endswith("__main__"):
            importlib.import_module(mod.name)
