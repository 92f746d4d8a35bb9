"""The stats report's seam: ``outputs.stats`` prints what every report has and asks each
family's view (``Family.statistics.view``) for the rest. A view written outside dcpinspect
plugs in by its family alone: its columns beside MCBP's (filled for its connections, "-"
for others; a column both have is one, filled by the connection's family), its section,
its chart lines, its closing line. Reports from captures built with synth."""

from __future__ import annotations

import json
import re
import sys
import types
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from dcpinspect import families as families_module
from dcpinspect.engines.reading import items_of
from dcpinspect.engines.options import CaptureOptions
from dcpinspect.engines.stats import plot, render, stats_views
from dcpinspect.families import Family, Statistics, family_named
from dcpinspect.outputs.stats import Breakdown, Col, StatsView, cell, fit_table, report_json
from dcpinspect.families import stats_collector
from dcpinspect.sessions.stats import StatsCollector

from test_family_summaries import DCP, DCP_FLOW, REDIS, REDIS_FLOW, capture


class RespView(StatsView):
    """A toy view of RESP connections: its frames, an ``items`` column MCBP has too, a
    table of its own, the chart's lines of a timeline entry of its own."""

    columns = (Col("resp frames", 1, True), Col("items", 1, True))
    breakdown = Breakdown("toy", "toy {}", "toys")

    def owns(self, connection):
        return "resp" in connection.get("protocols", {})

    def cells(self, connection):
        return {"resp frames": cell(connection["protocols"]["resp"]), "items": cell("n/a")}

    def sections(self, report, console, max_rows):
        rows = [{"connection": cell(name), "frames": cell(c["frames"]["total"])}
                for name, c in report.get("connections", {}).items() if self.owns(c)]
        console.print(fit_table("RESP connections", (Col("connection", 0), Col("frames", 0, True)), rows, console))

    def totals(self, capture):
        return f"{capture.get('frames')} RESP and other frames"


@pytest.fixture
def resp_view(monkeypatch):
    module = types.ModuleType("toy.resp_view")
    module.FAMILY = Family("toy-resp", statistics=Statistics(RespView))
    monkeypatch.setitem(sys.modules, "toy.resp_view", module)
    monkeypatch.setattr(families_module, "PACKAGES", ("mcbp", "redis", "toy.resp_view"))
    return module.FAMILY


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> dict:
    path = capture(tmp_path_factory.mktemp("views") / "mixed.pcap", DCP, REDIS)
    collector = stats_collector()
    for item in items_of(Path(path), CaptureOptions(), None):
        collector.add(item)
    return collector.report()


def _render(report, **kw) -> str:
    buf = StringIO()
    render(report, Console(file=buf, width=250), **kw)
    return buf.getvalue()


def _row(text: str, flow: str) -> list[str]:
    """The cells of the first row of ``text`` that is the connection's."""
    return next(line for line in text.splitlines() if line.startswith(flow + " ")).split()


def test_the_views_are_the_families_that_have_one(resp_view):
    views = stats_views()
    assert [type(v) for v in views] == [type(family_named("mcbp").statistics.view()),
                                        type(family_named("redis").statistics.view()), RespView]


def test_a_family_view_adds_its_columns_and_its_section(resp_view, mixed):
    text = _render(mixed, chart=False)
    header = next(line for line in text.splitlines() if line.startswith("connection "))
    assert header.split()[-7:] == ["streams", "items", "items/s", "resp", "frames", "gaps", "findings"]
    redis, dcp = _row(text, REDIS_FLOW), _row(text, DCP_FLOW)
    # streams, items, items/s, resp frames: the items column is one, filled by the connection's family
    assert redis[-6:-2] == ["-", "n/a", "-", str(mixed["connections"][REDIS_FLOW]["protocols"]["resp"])]
    assert dcp[-6:-2] == [str(mixed["connections"][DCP_FLOW]["streams"]), str(mixed["connections"][DCP_FLOW]["items"]),
                          dcp[-4], "-"]
    assert dcp[-4] != "-"
    # the families' sections in their order, then the closing line of the first family shown
    assert text.index("Vbuckets") < text.index("Streams") < text.index("RESP connections")
    section = text[text.index("RESP connections"):]
    assert _row(section, REDIS_FLOW) == [REDIS_FLOW, str(mixed["connections"][REDIS_FLOW]["frames"]["total"])]
    assert re.search(r"^\d+ frames, \d+ items in 1 stream, 1 vbucket, 2 connections over", text, re.M)
    assert "RESP and other frames" not in text  # MCBP's part is shown, and comes first


def test_without_the_view_its_columns_and_section_are_gone(mixed):
    text = _render(mixed, chart=False)
    assert "resp frames" not in text and "RESP connections" not in text
    assert _row(text, REDIS_FLOW)[-5:-2] == ["-", "-", "-"]


def test_a_view_closes_the_report_when_it_alone_is_shown(resp_view, tmp_path):
    report = stats_collector()
    for item in items_of(capture(tmp_path / "redis.pcap", REDIS), CaptureOptions(), None):
        report.add(item)
    text = _render(report.report(), chart=False)
    assert "Vbuckets" not in text and "RESP connections" in text
    frames = report.report()["capture"]["frames"]
    assert text.rstrip().splitlines()[-1].startswith(f"{frames} RESP and other frames over ")


def test_a_view_charts_the_keys_of_its_timeline_entry(resp_view, mixed):
    report = json.loads(report_json(mixed))
    report["timeline"]["toy"] = {"x\x1b[2J": report["timeline"]["items"], "quiet": [0]}
    text = _render(report, chart=True, chart_lines=1)
    chart = text[text.index("Items per second"):]
    peaks = dict(re.findall(r"^(total|vb 5|toy x\\x1b\[2J)\s.*peak (\S+)/s$", chart, re.M))
    assert set(peaks) == {"total", "vb 5", "toy x\\x1b[2J"}  # the key escaped
    assert peaks["toy x\\x1b[2J"] == peaks["total"] and "\x1b[2J" not in chart
    assert "… 1 quieter toys not charted" in chart


def test_the_plot_draws_a_panel_for_each_view_that_has_one(mixed, tmp_path):
    pytest.importorskip("matplotlib")
    from dcpinspect.outputs.plot import plot as draw

    def png_size(path):
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")

    assert png_size(plot(mixed, tmp_path / "all.png", width=400, height=300)) == (400, 300)
    assert png_size(draw(mixed, tmp_path / "none.png", width=400, height=300)) == (400, 300)
    assert (tmp_path / "all.png").read_bytes() != (tmp_path / "none.png").read_bytes()


def test_every_string_of_a_report_from_elsewhere_is_escaped_in_the_mcbp_tables(mixed):
    report = json.loads(report_json(mixed))
    vb = report["vbuckets"]["5"]
    vb["snapshots"]["count"] = "\x1b[2J"
    vb["snapshots"]["by_type"] = {"\x1b]0;x\x07": 1}
    report["tap"] = {"\x1b[6n": {"name": "\x1b[2J", "connect_flags": ["\x1b[2J"], "vbuckets": {"\x1b[2J": {}}}}
    text = _render(report, chart=False)
    assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b[2J: \\x1b]0;x\\x07 1" in text  # the vbucket's snapshots: count and types, escaped
