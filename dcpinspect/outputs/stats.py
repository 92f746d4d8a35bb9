"""``dcpinspect stats`` printed: the report a :class:`~dcpinspect.sessions.stats.StatsCollector`
computes, as a rich table of connections, each protocol family's own sections, a sparkline
chart of items per second, and JSON (``outputs.plot`` draws it as a PNG).

What a family shows of the report is its :class:`StatsView`: its columns of the
connections table, its tables, the chart's lines under the total, the closing line and
the plot's panel. This module prints what is common to every report and asks the views
given to it for the rest; it names no family (``engines.stats`` hands it theirs).

Only the report's dict is read here, never the capture: a report read back from JSON, or
merged from parts computed elsewhere, prints the same as one computed in this process.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .escape import safe
from .jsonl import indented_json
from .undecoded import line as undecoded_line

SPARK = "▁▂▃▄▅▆▇█"


# -- JSON --------------------------------------------------------------------------------


def report_json(report: dict[str, Any], *, series: bool = True, indent: int | None = 2) -> str:
    """The report as JSON (``--format json``); ``series=False`` leaves out the ``series``
    and the timeline's bins per key (its entries that are tables, not one line): the bulk
    of a big capture."""
    if not series:
        report = dict(report)
        report.pop("series", None)
        if isinstance(report.get("timeline"), dict):
            report["timeline"] = {k: v for k, v in report["timeline"].items() if not isinstance(v, dict)}
    if indent == 2:
        fast = indented_json(report)
        if fast is not None:
            return fast
    return json.dumps(report, indent=indent, ensure_ascii=True, default=str)


# -- what a family shows -------------------------------------------------------------------


@dataclass(frozen=True)
class Col:
    """A column of a terminal table; ``rank`` 0 is always shown, higher ranks go first when narrow."""

    name: str
    rank: int = 1
    right: bool = False
    wrap: bool = False


@dataclass(frozen=True)
class Breakdown:
    """The chart's lines under the total: one for each key of the timeline's ``entry``
    (key → bins, as the total's), the ``lines`` busiest, each called ``label`` with the
    key in its braces; the others are counted as quieter ``plural``."""

    entry: str
    label: str
    plural: str


@dataclass(frozen=True)
class Panel:
    """A panel of the plot above the throughput: a value over time, one step line per key
    of the report's ``entry`` (key → ``[[seconds, value], ...]``), titled ``title`` with
    ``ylabel`` on its axis. The busiest lines (by the ``items`` of the key in the report's
    ``rank`` entry, else by their points) are named ``label`` with the key in its braces,
    the rest drawn grey and counted as other ``plural``; ``empty`` when no line has a point.
    ``lines``: the lines themselves (key → points), when they are not one entry of the
    report (a view that makes its panels from the report, :meth:`StatsView.panels`)."""

    entry: str
    title: str
    ylabel: str
    label: str
    plural: str
    empty: str
    rank: str | None = None
    lines: dict | None = None


class StatsView:
    """A protocol family's part of the ``stats`` report on a console (``Statistics.view`` of the family).

    :func:`render` asks each view given to it for the family's columns of the connections
    table (filled for the family's own connections, ``-`` for others), for its sections
    after that table, for the chart's lines under the total and for the closing line;
    :func:`~dcpinspect.outputs.plot.plot` asks for its panel. This base shows nothing of
    its own: a family overrides what it has."""

    #: the report's entries that are the family's own: its part of the report is shown
    #: when one of them holds something (or one of its connections is in the report)
    keys: tuple[str, ...] = ()
    #: its columns of the connections table, after the rates
    columns: tuple[Col, ...] = ()
    #: what the report is called when the family's line closes it (the plot's title)
    name: str = ""
    #: the chart's lines under the total
    breakdown: Breakdown | None = None
    #: what the chart says when the timeline holds no items
    no_items: str | None = None
    #: the plot's panel
    panel: Panel | None = None

    def owns(self, connection: dict[str, Any]) -> bool:
        """Whether a connection of the report (its entry under ``connections``) is the family's."""
        return False

    def cells(self, connection: dict[str, Any]) -> dict[str, Text]:
        """The family's cells (column name → :func:`cell`) of one of its connections."""
        return {}

    def shown(self, report: dict[str, Any]) -> bool:
        """Whether the family's part of ``report`` is shown: a report without connections
        shows it (empty), any other one when a connection is the family's or one of its
        entries holds something."""
        conns = report.get("connections", {})
        return not conns or any(self.owns(c) for c in conns.values()) or any(bool(report.get(k)) for k in self.keys)

    def sections(self, report: dict[str, Any], console: Console, max_rows: int) -> None:
        """Print the family's tables of ``report`` (each at most ``max_rows`` rows)."""

    def panels(self, report: dict[str, Any]) -> tuple[Panel, ...]:
        """The plot's panels of ``report`` (drawn when the family's part is shown): its
        :attr:`panel`, if it has one."""
        return () if self.panel is None else (self.panel,)

    def totals(self, capture: dict[str, Any]) -> str | None:
        """The closing line's count of the report's ``capture`` part, when the family's part is shown."""
        return None

    def label(self, report: dict[str, Any]) -> str:
        """What the family's part of ``report`` is called (the plot's title): its :attr:`name`."""
        return self.name

    def rate(self, report: dict[str, Any]) -> tuple[str, list[int]] | None:
        """What the plot's throughput counts over time for the family, if it counts anything:
        its unit (``items/s``, named for the family) and the count in each of the timeline's bins."""
        return None


# -- terminal ------------------------------------------------------------------------------


def sparkline(values: Sequence[float], top: float | None = None) -> str:
    """One block character per value scaled to ``top`` (default: the maximum); zero is a space."""
    top = max(values, default=0) if top is None else top
    out = []
    for v in values:
        if v <= 0 or top <= 0:
            out.append(" ")
        else:
            out.append(SPARK[min(len(SPARK) - 1, max(0, math.ceil(v / top * len(SPARK)) - 1))])
    return "".join(out)


def regroup(bins: Sequence[int], width: float, columns: int) -> tuple[list[float], float]:
    """Rates per second of ``bins`` merged into at most ``columns`` columns; and the column width."""
    if not bins or width <= 0:
        return [], width
    group = max(1, math.ceil(len(bins) / max(1, columns)))
    rates = []
    for i in range(0, len(bins), group):
        chunk = bins[i:i + group]
        rates.append(sum(chunk) / (len(chunk) * width))
    return rates, width * group


def chart_columns(items: int, limit: int) -> int:
    """How many time columns to draw: ``limit``, fewer for a sparse capture (about 2 items a column)."""
    return max(1, min(limit, max(10, items // 2)))


def fmt_num(v: float | None, digits: int = 1) -> str:
    """A count or a rate, short: ``1.5k``, ``2.0M``; ``-`` for none."""
    if v is None:
        return "-"
    if abs(v) >= 1e6:
        return f"{v / 1e6:.{digits}f}M"
    if abs(v) >= 1e4:
        return f"{v / 1e3:.{digits}f}k"
    if float(v).is_integer():
        return f"{int(v)}"
    return f"{v:.{digits}f}"


def fmt_seconds(v: float | None) -> str:
    """A duration: milliseconds below a second, else seconds; ``-`` for none."""
    if v is None:
        return "-"
    if abs(v) < 1:
        return f"{v * 1000:.3g} ms"
    return f"{v:.3f} s"


def fmt_bytes(n: float | None) -> str:
    """A size in B, kB, MB or GB; ``-`` for none."""
    if n is None:
        return "-"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def plural(n: Any, word: str) -> str:
    """``1 frame``, ``2 frames``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def key_order(key: Any) -> tuple:
    """Sorts a report's keys: numbers in their order, then the other names in theirs."""
    return (0, int(key), "") if str(key).isdigit() else (1, 0, str(key))


def cell(value: Any, style: str = "") -> Text:
    """A table cell (or a line) of a value from the report, made safe for the terminal."""
    return Text(safe(value), style=style)


def counter_text(d: dict | None, limit: int = 4, lead: Any = None) -> Text:
    """``name n, name n, +2 more``: the first ``limit`` of a count by name, after ``lead: ``
    when given; ``-`` for none."""
    if not d:
        return Text("-")
    items = list(d.items())
    parts = [f"{safe(k)} {v}" for k, v in items[:limit]]
    if len(items) > limit:
        parts.append(f"+{len(items) - limit} more")
    return Text(("" if lead is None else f"{safe(lead)}: ") + ", ".join(parts))


def fit_table(title: str, columns: Sequence[Col], rows: Sequence[dict[str, Text]], console: Console) -> Table:
    """A table of ``rows`` (column name → cell) without the least important columns that would not fit."""
    cols = list(columns)
    while True:
        table = Table(title=title, title_justify="left", box=None, pad_edge=False)
        for c in cols:
            table.add_column(c.name, justify="right" if c.right else "left", no_wrap=not c.wrap,
                             overflow="fold" if c.wrap else "ellipsis")
        for row in rows:
            table.add_row(*(row.get(c.name, Text("")) for c in cols))
        droppable = [c for c in cols if c.rank > 0]
        if not droppable or _needed_width(cols, rows) <= console.width:
            return table
        cols.remove(max(droppable, key=lambda c: (c.rank, cols.index(c))))


def _needed_width(cols: Sequence[Col], rows: Sequence[dict[str, Text]]) -> int:
    """Width of the table with every no-wrap cell whole and wrapping cells at most ``WRAP_WIDTH`` wide."""
    total = 2 * (len(cols) - 1)
    for c in cols:
        w = max([len(c.name)] + [r[c.name].cell_len for r in rows if c.name in r])
        total += min(w, WRAP_WIDTH) if c.wrap else w
    return total


WRAP_WIDTH = 24
#: the connections table's columns before the families' and after them
_CONN_HEAD = (Col("connection", 0, wrap=True), Col("frames c2s/s2c", 1, True), Col("bytes c2s/s2c", 1, True),
              Col("duration", 1, True), Col("frames/s", 3, True), Col("bytes/s", 2, True))
_CONN_TAIL = (Col("gaps", 3, True), Col("findings", 4, True))


def _by_direction(counts: dict, fmt) -> str:
    """``c2s/s2c``; a hex dump's frames have no direction, so their total stands alone."""
    c2s, s2c, total = counts.get("c2s", 0), counts.get("s2c", 0), counts.get("total", 0)
    if total and c2s + s2c < total:
        return f"{fmt(total)} (no direction)"
    return f"{fmt(c2s)}/{fmt(s2c)}"


def connection_columns(views: Sequence[StatsView]) -> tuple[Col, ...]:
    """The connections table's columns: the common ones around the families' (a column
    two families have is one)."""
    theirs: dict[str, Col] = {}
    for view in views:
        for col in view.columns:
            theirs.setdefault(col.name, col)
    return _CONN_HEAD + tuple(theirs.values()) + _CONN_TAIL


def render(report: dict[str, Any], console: Console, *, views: Sequence[StatsView] = (), chart: bool | None = None,
           max_rows: int = 200, chart_lines: int = 10) -> None:
    """The connections table, then each view's sections; then, when ``chart`` (default:
    the console is a terminal), a sparkline of items per second, total and for the busiest
    keys the views name; and the closing line.

    Every string of the report goes out through :func:`safe` inside a ``Text``: a report
    read back from JSON is as untrusted as the capture it came from.  On a narrow console
    the least important columns are left out.
    """
    cap = report.get("capture", {})
    rows = []
    conns = report.get("connections", {})
    for name, c in conns.items():
        rates = c.get("rates", {})
        frames, nbytes = c.get("frames", {}), c.get("bytes", {})
        bps = rates.get("bytes_per_s", {}).get("total")
        row = {
            "connection": cell(name),
            "frames c2s/s2c": cell(_by_direction(frames, str)),
            "bytes c2s/s2c": cell(_by_direction(nbytes, fmt_bytes)),
            "duration": cell(fmt_seconds(c.get("duration"))),
            "frames/s": cell(fmt_num(rates.get("frames_per_s"))),
            "bytes/s": cell("-" if bps is None else fmt_bytes(bps) + "/s"),
        }
        for view in views:
            if view.owns(c):
                row.update(view.cells(c))
        for view in views:
            for col in view.columns:
                row.setdefault(col.name, cell("-"))
        row["gaps"] = cell(c.get("capture_gaps", 0), "yellow" if c.get("capture_gaps") else "")
        row["findings"] = cell(c.get("findings", 0))
        rows.append(row)
    console.print(fit_table("Connections", connection_columns(views), rows, console))
    console.print()
    for view in views:
        view.sections(report, console, max_rows)
    if chart is None:
        chart = console.is_terminal
    if chart:
        console.print()
        render_chart(report, console, lines=chart_lines, views=views)
    console.print()
    _, total = totals_line(report, views)
    console.print(Text(f"{total} over {fmt_seconds(cap.get('duration'))}", style="bold"))
    told = undecoded_line(cap.get("undecoded") or {"connections": 0})
    if told:
        console.print(Text(told))


def totals_line(report: dict[str, Any], views: Sequence[StatsView] = ()) -> tuple[str, str]:
    """What closes the report: the count of the first view whose part is shown and that
    has one, with the view's label; else frames and connections, with the label of the one
    view shown (no name when several are)."""
    cap = report.get("capture", {})
    shown = [view for view in views if view.shown(report)]
    for view in shown:
        if line := view.totals(cap):
            return view.label(report), line
    name = shown[0].label(report) if len(shown) == 1 else ""
    return name, f"{plural(cap.get('frames', 0), 'frame')} in {plural(cap.get('connections', 0), 'connection')}"


def render_chart(report: dict[str, Any], console: Console, *, lines: int = 10, columns: int | None = None,
                 views: Sequence[StatsView] = ()) -> None:
    """Items per second over time: one sparkline for the total and one for each of the
    ``lines`` busiest keys of each view's :class:`Breakdown`."""
    tl = report.get("timeline") or {}
    width = tl.get("bin_width") or 0
    total = tl.get("items") or []
    if not total or not any(total) or width <= 0:
        empty = next((v.no_items for v in views if v.no_items), "items/s: no items")
        console.print(Text(empty, style="dim"))
        return
    parts = []
    for view in views:
        if view.breakdown is not None:
            bins = tl.get(view.breakdown.entry) or {}
            busy = sorted(bins.items(), key=lambda kv: (-sum(kv[1]), key_order(kv[0])))[:lines]
            parts.append((view.breakdown, bins, busy))
    label_w = max([5] + [len(b.label.format(safe(k))) for b, _, busy in parts for k, _ in busy])
    if columns is None:
        columns = chart_columns(sum(total), max(10, min(60, console.width - label_w - 22)))
    rates, col_w = regroup(total, width, columns)
    console.print(Text(f"Items per second (1 column = {fmt_seconds(col_w)}, {len(rates)} columns; "
                       "each line scaled to its peak)", style="bold"))
    chart = Table(box=None, show_header=False, pad_edge=False)
    chart.add_column(no_wrap=True)
    chart.add_column(no_wrap=True)
    chart.add_column(no_wrap=True, justify="right")
    chart.add_row(Text("total", style="bold"), Text(sparkline(rates), style="green"),
                  Text(f"peak {fmt_num(max(rates))}/s"))
    for b, _, busy in parts:
        for key, bins in busy:
            r, _ = regroup(list(bins) + [0] * (len(total) - len(bins)), width, columns)
            chart.add_row(cell(b.label.format(key)), Text(sparkline(r), style="cyan"),
                          Text(f"peak {fmt_num(max(r))}/s"))
    console.print(chart)
    for b, bins, busy in parts:
        if len(bins) > len(busy):
            console.print(Text(f"… {len(bins) - len(busy)} quieter {b.plural} not charted", style="dim"))
