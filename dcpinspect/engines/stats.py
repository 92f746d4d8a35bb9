"""The ``stats`` command: one report over capture files and hex dumps given as files (per
connection, vbucket and stream), as tables or JSON, and optionally a plot."""

from __future__ import annotations

import sys
from pathlib import Path

from ..outputs.console import make_console
from ..outputs.escape import safe
from ..outputs.stats import render, report_json
from ..sessions.stats import StatsCollector
from .inputs import Unusable, items_of


def stats_files(files: list[Path], json: bool, plot_path: Path | None, chart: bool | None, ports: set[int],
                collections: bool | None) -> bool:
    """Print the report of all ``files`` together (and write its plot to ``plot_path``);
    nothing in it fails a run, so this returns False."""
    collector = StatsCollector()
    for path in files:
        for item in items_of(path, ports, collections):
            collector.add(item)
    report = collector.report()
    if not report["capture"].get("frames"):
        raise Unusable("no frame found in the input")
    if json:
        sys.stdout.write(report_json(report) + "\n")
    else:
        render(report, make_console(), chart=chart)
    if plot_path is not None:
        _plot(report, plot_path)
    return False


def _plot(report: dict, path: Path) -> None:
    from ..outputs.plot import PlotUnavailable, plot  # matplotlib: only when a plot is asked for

    try:
        plot(report, path)
    except PlotUnavailable as exc:
        raise Unusable(str(exc)) from None
    except OSError as exc:
        raise Unusable(f"cannot write {path}: {exc.strerror or exc}") from None
    make_console(stderr=True).print(f"wrote {safe(str(path))}")
