"""The ``stats`` command: one report over capture files and hex dumps given as files, as
tables or JSON, and optionally a plot; and the report printed or drawn with every family's
part of it (:func:`render`, :func:`plot`: ``outputs.stats`` and ``outputs.plot`` with the
families' views)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from ..families import families, stats_collector
from ..outputs.console import make_console
from ..outputs.escape import safe
from ..outputs.progress import progress_for
from ..outputs.stats import StatsView, report_json
from ..outputs.undecoded import line as undecoded_line
from ..outputs.stats import render as render_report
from .inputs import Unusable
from .reading import items_of
from .options import CaptureOptions


def stats_views() -> tuple[StatsView, ...]:
    """Each family's view of a stats report, in the families' order (those that have one)."""
    return tuple(f.statistics.view() for f in families() if f.statistics is not None and f.statistics.view is not None)


def render(report: dict[str, Any], console: Any, **options: Any) -> None:
    """The report on ``console`` (a rich console): the common tables, then each family's part
    (``options`` as :func:`~dcpinspect.outputs.stats.render` takes them)."""
    render_report(report, console, views=stats_views(), **options)


def plot(report_or_collector: Any, path: str | os.PathLike, **options: Any) -> Path:
    """The report drawn to a PNG at ``path``, each family's panel above the throughput
    (``options`` as :func:`~dcpinspect.outputs.plot.plot` takes them; matplotlib is
    imported only now)."""
    from ..outputs.plot import plot as draw

    return draw(report_or_collector, path, views=stats_views(), **options)


def stats_files(files: list[Path], json: bool, plot_path: Path | None, chart: bool | None, capture: CaptureOptions,
                collections: bool | None) -> bool:
    """Print the report of all ``files`` together (and write its plot to ``plot_path``);
    nothing in it fails a run, so this returns False."""
    collector = stats_collector()
    for path in files:
        # the report is printed at the end: a progress line while each input is read
        for item in items_of(path, capture, collections, progress_for):
            collector.add(item)
    report = collector.report()
    if not report["capture"].get("frames"):
        told = undecoded_line(report["capture"]["undecoded"])
        raise Unusable("no frame found in the input" + (f" ({told})" if told else ""))
    if json:
        sys.stdout.write(report_json(report) + "\n")
    else:
        render(report, make_console(), chart=chart)
    if plot_path is not None:
        _plot(report, plot_path)
    return False


def _plot(report: dict, path: Path) -> None:
    from ..outputs.plot import PlotUnavailable  # matplotlib: only when a plot is asked for

    try:
        plot(report, path)
    except PlotUnavailable as exc:
        raise Unusable(str(exc)) from None
    except OSError as exc:
        raise Unusable(f"cannot write {path}: {exc.strerror or exc}") from None
    make_console(stderr=True).print(f"wrote {safe(str(path))}")
