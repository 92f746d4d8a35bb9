"""``dcpinspect stats --plot out.png``: each family's panel (its :class:`~.stats.Panel`: a
value over time per key), and the throughput below them.

matplotlib is an optional extra (``pip install 'dcpinspect[plot]'``); it is imported
here, lazily, and drawn with the Agg canvas directly (no pyplot, no global backend
switch), so plotting works headless and leaves the caller's matplotlib state alone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from .escape import safe
from .stats import Panel, StatsView, chart_columns, regroup, totals_line

#: lines of a panel named in its legend (the busiest); the others are drawn grey
LEGEND_LINES = 10
MAX_COLUMNS = 200
#: Ten colours for the named lines; grey is kept for the others.
PALETTE = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:olive",
           "tab:cyan", "navy")  # throughput steps across the panel
_MB = 1e6
#: the formats a plot's file name may ask for by its suffix (any other: PNG)
FORMATS = {".svg": "svg", ".pdf": "pdf", ".png": "png"}


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def _matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import FuncFormatter, MaxNLocator
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise PlotUnavailable("plotting needs matplotlib: pip install 'dcpinspect[plot]'") from exc
    return Figure, FigureCanvasAgg, FuncFormatter, MaxNLocator


def plot(report_or_collector: Any, path: str | os.PathLike, *, views: Sequence[StatsView] = (), width: int = 1200,
         height: int = 800, dpi: int = 100, title: str | None = None) -> Path:
    """Write a ``width`` × ``height`` pixel PNG of a stats report (or a ``StatsCollector``) to
    ``path`` (SVG or PDF when its name ends in ``.svg`` or ``.pdf``).

    A panel for each view that has one (a value over capture time, one line per key: the
    ``LEGEND_LINES`` busiest named in the legend, the rest thin and grey), above the
    throughput: what the capture's family counts per second (its :meth:`StatsView.rate`)
    and MB/s over time.  Raises :class:`PlotUnavailable` without matplotlib.
    """
    report = report_or_collector.report() if hasattr(report_or_collector, "report") else report_or_collector
    Figure, FigureCanvasAgg, FuncFormatter, MaxNLocator = _matplotlib()
    panels = [p for v in views if v.shown(report) for p in v.panels(report)]

    fig = Figure(figsize=(width / dpi, height / dpi), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    axes = list(fig.subplots(len(panels) + 1, 1, sharex=True, squeeze=False,
                             height_ratios=(3,) * len(panels) + (2,))[:, 0])
    ax_tp = axes[-1]
    fig.suptitle(_label(title) if title else _title(report, views), fontsize="medium")

    for ax, panel in zip(axes, panels):
        _lines_panel(ax, report, panel, FuncFormatter, MaxNLocator)
    _throughput_panel(ax_tp, report, views, FuncFormatter)
    ax_tp.set_xlabel("time since first frame (s)")
    _finding_marks(axes, report)
    for ax in axes:
        ax.grid(True, alpha=0.3, linewidth=0.6)
        ax.margins(x=0.01)

    out = Path(path)
    fig.savefig(out, format=FORMATS.get(out.suffix.lower(), "png"), dpi=dpi)
    return out


def _title(report: dict, views: Sequence[StatsView]) -> str:
    duration = report.get("capture", {}).get("duration")
    span = f" over {duration:.3f} s" if isinstance(duration, (int, float)) else ""
    name, line = totals_line(report, views)
    return f"{name + ' ' if name else ''}stats: {line}{span}"


def _lines_panel(ax, report: dict, panel: Panel, FuncFormatter, MaxNLocator) -> None:
    series = (report.get(panel.entry) or {}) if panel.lines is None else panel.lines
    ranks = (report.get(panel.rank) or {}) if panel.rank else {}
    ax.set_title(panel.title, fontsize="small", loc="left")
    ax.set_ylabel(panel.ylabel)
    if not any(series.values()):
        ax.text(0.5, 0.5, panel.empty, transform=ax.transAxes, ha="center", va="center", color="grey")
        return
    busy = sorted(series, key=lambda k: (-(ranks.get(k, {}).get("items") or len(series[k])), _num(k)))
    named = busy[:LEGEND_LINES]
    quiet = busy[LEGEND_LINES:]
    for key in quiet:  # underneath, unlabelled
        xs, ys = _xy(series[key])
        ax.plot(xs, ys, color="0.6", linewidth=0.6, alpha=0.6, drawstyle="steps-post")
    for color, key in zip(PALETTE, sorted(named, key=_num)):
        xs, ys = _xy(series[key])
        ax.plot(xs, ys, color=color, linewidth=1.4, drawstyle="steps-post", marker="." if len(xs) <= 50 else None,
                markersize=4, label=_label(panel.label.format(key)))
    if quiet:
        ax.plot([], [], color="0.6", linewidth=0.6, label=f"{len(quiet)} other {panel.plural}")
    lo, hi = ax.get_ylim()
    if hi - lo < 2:  # a flat line: room for whole numbers around it
        middle = round((lo + hi) / 2)
        ax.set_ylim(middle - 1, middle + 1)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{int(v):,}"))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False,
              title="busiest" if quiet else None, title_fontsize="small")


def _throughput_panel(ax, report: dict, views: Sequence[StatsView], FuncFormatter) -> None:
    """What the capture carried over time: the count of the first view that counts something
    (:meth:`StatsView.rate`: items or operations a second) and MB/s; MB/s alone when none does."""
    tl = report.get("timeline") or {}
    width = tl.get("bin_width") or 0
    nbytes = tl.get("bytes") or []
    count = next((r for v in views if v.shown(report) and (r := v.rate(report)) is not None), None)
    unit, items = count if count is not None else ("", [])
    ax.set_title("throughput", fontsize="small", loc="left")
    if not nbytes or width <= 0:
        ax.set_ylabel(unit or "MB/s")
        ax.text(0.5, 0.5, "no frames", transform=ax.transAxes, ha="center", va="center", color="grey")
        return
    n = max(len(items), len(nbytes))
    items = list(items) + [0] * (n - len(items))
    nbytes = list(nbytes) + [0] * (n - len(nbytes))
    columns = chart_columns(sum(items) if count is not None else len(nbytes), MAX_COLUMNS)
    bps, col = regroup(nbytes, width, columns)
    mbs = [b / _MB for b in bps]
    xs = [i * col for i in range(len(bps) + 1)]  # column edges; the last value repeats to close the step
    handles = []
    ax_mb = ax
    if count is not None:
        ips, _ = regroup(items, width, columns)
        ax.set_ylabel(_label(unit), color="tab:blue")
        ax.fill_between(xs, ips + ips[-1:], step="post", color="tab:blue", alpha=0.2, linewidth=0)
        (l1,) = ax.step(xs, ips + ips[-1:], where="post", color="tab:blue", linewidth=1.2, label=_label(unit))
        ax.tick_params(axis="y", labelcolor="tab:blue")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _short(v)))
        ax.set_ylim(bottom=0)
        handles.append(l1)
        ax_mb = ax.twinx()
    (l2,) = ax_mb.step(xs, mbs + mbs[-1:], where="post", color="tab:orange", linewidth=1.2, label="MB/s")
    ax_mb.set_ylabel("MB/s", color="tab:orange")
    ax_mb.tick_params(axis="y", labelcolor="tab:orange")
    ax_mb.set_ylim(bottom=0)
    handles.append(l2)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.07, 1.0), fontsize="small", frameon=False,
              title=f"per {_seconds(col)}", title_fontsize="small")


def _finding_marks(axes, report: dict) -> None:
    """A thin red line on every panel where a finding happened, named once in the throughput's legend."""
    marks = report.get("findings_at") or []
    if not marks:
        return
    for ax in axes:
        for t, _ in marks:
            ax.axvline(t, color="tab:red", linewidth=0.6, alpha=0.5, zorder=0)
    axes[-1].text(1.07, 0.0, f"red: {len(marks)} finding{'s' if len(marks) != 1 else ''}", transform=axes[-1].transAxes,
                  fontsize="small", color="tab:red", va="bottom")


def _label(text: object) -> str:
    """Capture-derived text for matplotlib: escaped, and no ``$`` to start mathtext."""
    return safe(text).replace("$", r"\$")


def _xy(points) -> tuple[list[float], list[int]]:
    return [p[0] for p in points], [p[1] for p in points]


def _num(key: str) -> tuple:
    return (0, int(key)) if str(key).isdigit() else (1, 0)


def _short(v: float) -> str:
    if abs(v) >= 1e6:
        return f"{v / 1e6:.3g}M"
    if abs(v) >= 1e3:
        return f"{v / 1e3:.3g}k"
    return f"{v:.3g}"


def _seconds(v: float) -> str:
    if v >= 1:
        return f"{v:.3g} s"
    if v >= 1e-3:
        return f"{v * 1e3:.3g} ms"
    return f"{v * 1e6:.3g} µs"
