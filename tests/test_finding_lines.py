"""validate's JSON lines made from a template of what a rule's rows share
(engines/finding_lines.py) are the lines of the rows' records, as dumps_line writes them:
for every shape of finding and every kind of member, on real captures with findings, in
one process or over workers, with and without the C parts."""

from __future__ import annotations

import io
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import dcpgen
from dcpinspect.engines.finding_lines import FindingLines
from dcpinspect.engines.inputs import opened
from dcpinspect.engines.reading import keyed
from dcpinspect.engines.sinks import FindingRow, FindingsSink
from dcpinspect.families import VALUES
from dcpinspect.findings import Finding
from dcpinspect.outputs.findings_stream import WINDOW_ROWS, FindingsStream

ROOT = Path(__file__).resolve().parents[1]
#: captures of the repository with findings of several rules, frame and connection ones
CAPTURES = (ROOT / "tests/data/pcap/dcp-repeats.pcap", ROOT / "samples/memcached-binary.pcap",
            ROOT / "samples/tap-backfill.pcap", ROOT / "samples/dcp-lossy.pcapng")

texts = st.text(max_size=12) | st.sampled_from(["", "a%sb", "{}", '"q"', "\x7f", "\x00\x1b[31m", "é☃", "\ud800"])
numbers = st.none() | st.integers(-3, 1 << 70) | st.booleans()
times = st.none() | st.floats(allow_nan=True, allow_infinity=True) | st.integers(0, 1 << 40) | st.sampled_from(
    [1700000000.00018, 1e-5, 1e16, 0.0])


@st.composite
def rows(draw) -> FindingRow:
    finding = Finding(draw(st.sampled_from(["seqno-regression", "r"])), draw(st.sampled_from(["ERANGE", "E"])),
                      draw(st.sampled_from(["error", "warning", "info"])), draw(texts),
                      draw(numbers), draw(st.sampled_from(["", "https://x/y#L1", "%"])), draw(numbers), draw(numbers),
                      draw(numbers))
    return FindingRow(finding, draw(st.sampled_from(["a.pcap", "b%s.pcap"])), None, draw(numbers), draw(times),
                      draw(st.none() | texts), draw(st.sampled_from([None, "c2s", "s2c"])),
                      draw(st.none() | st.sampled_from(["DCP_MUTATION", "GET"])), draw(numbers), draw(numbers),
                      draw(st.booleans()))


@settings(max_examples=300, deadline=None)
@given(st.lists(rows(), min_size=1, max_size=8))
def test_a_rows_line_is_its_records_line(batch):
    writer = FindingLines(FindingRow)  # one writer for the batch: its templates and last time are reused
    for row in batch:
        assert writer.line(row) == row.line


def test_a_time_that_is_not_finite_is_written_as_json_dumps_writes_it():
    writer = FindingLines(FindingRow)
    f = Finding("r", "E", "error", "m", 1)
    for ts in (1.5, math.nan, 1.5, math.inf, None, 2):
        row = FindingRow(f, "a.pcap", None, 3, ts, "x", "c2s", "GET", 0, None, True)
        assert writer.line(row) == row.line


def _payloads(path: Path, lines: bool) -> list:
    sink = FindingsSink(path.name, show_info=True, lines=lines)
    with opened(path) as inp:
        return [p for p in (sink.take(k, item) for k, item in keyed(inp, dict(collections=None, detail=VALUES), None))
                if p is not None]


def _regressing(tmp_path: Path, mutations: int = 400) -> Path:
    """bench/make_findings.py's capture at a small size: a seqno-regression on every mutation."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from make_findings import connection
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return dcpgen.write_flows([connection(mutations // 2, True) for _ in range(2)], tmp_path / "findings.pcap")


@pytest.mark.parametrize("name", [p.name for p in CAPTURES] + ["regressing"])
def test_the_lines_of_a_capture_are_its_rows_lines(name, tmp_path):
    path = _regressing(tmp_path) if name == "regressing" else next(p for p in CAPTURES if p.name == name)
    rows_payloads, lines_payloads = _payloads(path, False), _payloads(path, True)
    found = [p for p in rows_payloads if p and isinstance(p[0], FindingRow)]
    assert len(found) == len([p for p in lines_payloads if type(p) is tuple]) > 0
    want = iter(found)
    for payload in lines_payloads:
        if type(payload) is tuple:
            batch = next(want)
            assert payload[0] == "".join(row.line for row in batch)
            assert payload[1] == len(batch)


def test_lines_are_held_and_written_in_order_a_window_at_a_time(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    stream = FindingsStream(True)
    sent = [f"{i}\n" for i in range(WINDOW_ROWS + 5)]
    for line in sent[:WINDOW_ROWS - 1]:
        stream.add_written(line, 1, 1, 2)
    assert out.getvalue() == ""  # held
    stream.add_written(sent[WINDOW_ROWS - 1], 1, 1, 2)
    assert out.getvalue() == "".join(sent[:WINDOW_ROWS])  # a window: written at once
    for line in sent[WINDOW_ROWS:]:
        stream.add_written(line, 1, 0, 1)
    stream.close(7)
    assert out.getvalue() == "".join(sent)
    assert (stream.total, stream.errors, stream.worst) == (len(sent), WINDOW_ROWS, 2)


def _validate(path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dcpinspect", "validate", *args, str(path)], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, COLUMNS="200", NO_COLOR="1", **env))


def test_validate_prints_the_same_lines_over_workers_and_without_the_c_parts(tmp_path):
    path = _regressing(tmp_path, 2000)
    one = _validate(path, "-f", "jsonl", "-j1")
    assert one.returncode == 1 and one.stdout.count("\n") >= 1990
    assert all('"rule":"seqno-regression"' in line for line in one.stdout.splitlines())
    assert _validate(path, "-f", "jsonl", "-j2").stdout == one.stdout
    assert _validate(path, "-f", "jsonl", "-j1", DCPINSPECT_PURE="1").stdout == one.stdout


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_each_line_is_written_at_once(monkeypatch):
    out = _Terminal()
    monkeypatch.setattr(sys, "stdout", out)
    stream = FindingsStream(True)
    stream.add_written("a\n", 1, 1, 2)
    assert out.getvalue() == "a\n"
    stream.add_written("b\nc\n", 2, 0, 1)
    assert out.getvalue() == "a\nb\nc\n"


def test_a_finding_from_a_pipe_is_written_before_the_pipe_ends():
    """Findings read from a pipe (``tcpdump -w - | dcpinspect validate -f jsonl -``) are
    written as they are found, not held for a window that may never fill: the first line
    is out while the writer still holds the pipe open."""
    import select

    data = (Path(__file__).parent / "data" / "pcap" / "dcp-repeats.pcap").read_bytes()
    proc = subprocess.Popen([sys.executable, "-m", "dcpinspect", "validate", "-f", "jsonl", "-"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        proc.stdin.write(data)
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "no finding written while the pipe was open"
        assert b'"rule":"seqno-regression"' in proc.stdout.readline()
    finally:
        proc.stdin.close()
        rest = proc.stdout.read()
        proc.wait(timeout=60)
    assert proc.returncode == 1 and rest.count(b"\n") >= 1
