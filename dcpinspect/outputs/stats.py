"""``dcpinspect stats`` printed: the report a :class:`~dcpinspect.sessions.stats.StatsCollector`
computes, as rich tables of connections, vbuckets, streams and TAP connections, a sparkline
chart of items per second, and JSON (``outputs.plot`` draws it as a PNG).

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

from ..sessions.stats import MCBP, StatsCollector  # noqa: F401 (the collector re-exported: callers feed it)
from ..sessions.streams import MAX_SEQNO
from .escape import safe

SPARK = "▁▂▃▄▅▆▇█"


# -- JSON --------------------------------------------------------------------------------


def report_json(report: dict[str, Any], *, series: bool = True, indent: int | None = 2) -> str:
    """The report as JSON (``--format json``); ``series=False`` leaves out the per-vbucket
    ``series`` and the per-vbucket timeline bins (the bulk of a big capture)."""
    if not series:
        report = dict(report)
        report.pop("series", None)
        if isinstance(report.get("timeline"), dict):
            report["timeline"] = {k: v for k, v in report["timeline"].items() if k != "vbuckets"}
    return json.dumps(report, indent=indent, ensure_ascii=True, default=str)


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


def _fmt_num(v: float | None, digits: int = 1) -> str:
    if v is None:
        return "-"
    if abs(v) >= 1e6:
        return f"{v / 1e6:.{digits}f}M"
    if abs(v) >= 1e4:
        return f"{v / 1e3:.{digits}f}k"
    if float(v).is_integer():
        return f"{int(v)}"
    return f"{v:.{digits}f}"


def _fmt_s(v: float | None) -> str:
    if v is None:
        return "-"
    if abs(v) < 1:
        return f"{v * 1000:.3g} ms"
    return f"{v:.3f} s"


def _fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def _t(value: Any, style: str = "") -> Text:
    return Text(safe(value), style=style)


def _counter_text(d: dict | None, limit: int = 4) -> Text:
    if not d:
        return Text("-")
    items = list(d.items())
    parts = [f"{safe(k)} {v}" for k, v in items[:limit]]
    if len(items) > limit:
        parts.append(f"+{len(items) - limit} more")
    return Text(", ".join(parts))


_SHORT_TYPES = {"memory": "mem", "checkpoint": "ckpt", "history": "hist", "may-duplicate": "dup"}


def _short_type(label: str) -> str:
    return "+".join(_SHORT_TYPES.get(p, p) for p in str(label).split("+"))


@dataclass(frozen=True)
class Col:
    """A column of a terminal table; ``rank`` 0 is always shown, higher ranks go first when narrow."""

    name: str
    rank: int = 1
    right: bool = False
    wrap: bool = False


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
_CONN_COLS = (Col("connection", 0, wrap=True), Col("frames c2s/s2c", 1, True), Col("bytes c2s/s2c", 1, True),
              Col("duration", 1, True), Col("frames/s", 3, True), Col("bytes/s", 2, True), Col("streams", 2, True),
              Col("items", 1, True), Col("items/s", 2, True), Col("gaps", 3, True), Col("findings", 4, True))
_VB_COLS = (Col("vb", 0, True), Col("streams", 2), Col("snapshots", 1, wrap=True), Col("snap seqnos", 2, True),
            Col("snap items", 2, True), Col("mut/del/exp", 0, True), Col("prep/com/abt", 3, True),
            Col("sys", 4, True), Col("seqnos", 1, True), Col("gaps (max)", 1, True), Col("bytes", 3, True),
            Col("items/s", 2, True), Col("to 1st item", 3, True), Col("to end", 3, True),
            Col("end reasons", 2, wrap=True))
_STREAM_COLS = (Col("connection", 2, wrap=True), Col("vb", 0, True), Col("sid", 3, True), Col("opaque", 4),
                Col("requested", 4), Col("state", 1), Col("items", 0, True), Col("seqnos", 1, True),
                Col("gaps", 2, True), Col("to 1st item", 2, True), Col("to end", 2, True),
                Col("end reason", 1, wrap=True))


def _by_direction(counts: dict, fmt) -> str:
    """``c2s/s2c``; a hex dump's frames have no direction, so their total stands alone."""
    c2s, s2c, total = counts.get("c2s", 0), counts.get("s2c", 0), counts.get("total", 0)
    if total and c2s + s2c < total:
        return f"{fmt(total)} (no direction)"
    return f"{fmt(c2s)}/{fmt(s2c)}"


def render(report: dict[str, Any], console: Console, *, chart: bool | None = None, max_rows: int = 200,
           chart_lines: int = 10) -> None:
    """Tables of connections, vbuckets and streams; then, when ``chart`` (default: the console
    is a terminal), a sparkline of items per second, total and for the busiest vbuckets.

    Every string of the report goes out through :func:`safe` inside a ``Text``: a report
    read back from JSON is as untrusted as the capture it came from.  On a narrow console
    the least important columns are left out.
    """
    cap = report.get("capture", {})
    rows = []
    conns = report.get("connections", {})
    # streams, items and vbuckets are DCP's: shown for MCBP connections (a report without
    # ``protocols`` is one of MCBP), "-" for other families' connections
    has_streams = {name: MCBP in c.get("protocols", {MCBP: 1}) for name, c in conns.items()}
    streams_apply = any(has_streams.values()) or not conns or bool(report.get("vbuckets") or report.get("streams"))
    for name, c in conns.items():
        rates = c.get("rates", {})
        frames, nbytes = c.get("frames", {}), c.get("bytes", {})
        bps = rates.get("bytes_per_s", {}).get("total")
        dcp = has_streams[name]
        rows.append({
            "connection": _t(name),
            "frames c2s/s2c": _t(_by_direction(frames, str)),
            "bytes c2s/s2c": _t(_by_direction(nbytes, _fmt_bytes)),
            "duration": _t(_fmt_s(c.get("duration"))),
            "frames/s": _t(_fmt_num(rates.get("frames_per_s"))),
            "bytes/s": _t("-" if bps is None else _fmt_bytes(bps) + "/s"),
            "streams": _t(c.get("streams", 0) if dcp else "-"),
            "items": _t(c.get("items", 0) if dcp else "-"),
            "items/s": _t(_fmt_num(rates.get("items_per_s")) if dcp else "-"),
            "gaps": _t(c.get("capture_gaps", 0), "yellow" if c.get("capture_gaps") else ""),
            "findings": _t(c.get("findings", 0)),
        })
    console.print(fit_table("Connections", _CONN_COLS, rows, console))
    console.print()
    if streams_apply:
        _render_streams(report, console, max_rows)
    if report.get("tap"):
        render_tap(report["tap"], console, max_rows)
    if chart is None:
        chart = console.is_terminal
    if chart:
        console.print()
        render_chart(report, console, lines=chart_lines)
    console.print()
    total = totals_line(cap) if streams_apply else \
        f"{_plural(cap.get('frames', 0), 'frame')} in {_plural(cap.get('connections', 0), 'connection')}"
    console.print(Text(f"{total} over {_fmt_s(cap.get('duration'))}", style="bold"))


def _render_streams(report: dict[str, Any], console: Console, max_rows: int) -> None:
    """The vbuckets and streams tables."""
    vbs = report.get("vbuckets", {})
    ordered = sorted(vbs.items(), key=lambda kv: _vb_sort(kv[0]))
    rows = []
    for vb, v in ordered[:max_rows]:
        snaps = v.get("snapshots", {})
        seq = v.get("seqno", {})
        gaps = v.get("gaps", {})
        types = snaps.get("by_type") or {}
        snap_text = Text(str(snaps.get("count", 0)))
        if types:
            snap_text.append(": ")
            snap_text.append_text(_counter_text({_short_type(k): n for k, n in types.items()}))
        rows.append({
            "vb": _t(vb),
            "streams": _t(str(v.get("streams", 0))
                          + (f" ({v['rejected_streams']} rej.)" if v.get("rejected_streams") else "")),
            "snapshots": snap_text,
            "snap seqnos": _t(f"{_fmt_num((snaps.get('seqnos') or {}).get('mean'))}/"
                              f"{_fmt_num((snaps.get('seqnos') or {}).get('max'))}"),
            "snap items": _t(f"{_fmt_num((snaps.get('items') or {}).get('mean'))}/"
                             f"{_fmt_num((snaps.get('items') or {}).get('max'))}"),
            "mut/del/exp": _t(f"{v.get('mutations', 0)}/{v.get('deletions', 0)}/{v.get('expirations', 0)}"),
            "prep/com/abt": _t(f"{v.get('prepares', 0)}/{v.get('commits', 0)}/{v.get('aborts', 0)}"),
            "sys": _t(v.get("system_events", 0)),
            "seqnos": _t(f"{_fmt_seqno(seq.get('first'))}→{_fmt_seqno(seq.get('last'))}"),
            "gaps (max)": _t(f"{gaps.get('count', 0)} ({gaps.get('largest', 0)})",
                             "yellow" if gaps.get("count") else ""),
            "bytes": _t(_fmt_bytes(v.get("bytes"))),
            "items/s": _t(_fmt_num(v.get("items_per_s"))),
            "to 1st item": _t(_fmt_s((v.get("time_to_first_item") or {}).get("mean"))),
            "to end": _t(_fmt_s((v.get("time_to_end") or {}).get("mean"))),
            "end reasons": _counter_text(v.get("end_reasons")),
        })
    console.print(fit_table("Vbuckets", _VB_COLS, rows, console))
    if len(ordered) > max_rows:
        console.print(Text(f"… {len(ordered) - max_rows} more vbuckets (--format json for all)", style="dim"))
    if rows:
        console.print(Text("snap seqnos / snap items: mean/max snapshot size; mem=memory, ckpt=checkpoint, "
                           "hist=history, dup=may-duplicate; times: mean from the stream request", style="dim"))
    console.print()

    streams = report.get("streams", [])
    rows = []
    for s in streams[:max_rows]:
        req = s.get("request") or {}
        state = str(s.get("state"))
        if s.get("state") == "rejected":
            state += f" ({s.get('status')})"
        seq = s.get("seqno") or {}
        opaque = s.get("opaque")
        rows.append({
            "connection": _t(s.get("connection")),
            "vb": _t(s.get("vbucket")),
            "sid": _t("-" if s.get("stream_id") is None else s["stream_id"]),
            "opaque": _t(f"0x{opaque:08x}" if isinstance(opaque, int) else opaque),
            "requested": _t("?" if s.get("adopted") else
                            f"{_fmt_seqno(req.get('start_seqno'))}→{_fmt_seqno(req.get('end_seqno'))}"),
            "state": _t(state, "red" if s.get("state") == "rejected" else ""),
            "items": _t(s.get("items", 0)),
            "seqnos": _t(f"{_fmt_seqno(seq.get('first'))}→{_fmt_seqno(seq.get('last'))}"),
            "gaps": _t((s.get("gaps") or {}).get("count", 0)),
            "to 1st item": _t(_fmt_s(s.get("time_to_first_item"))),
            "to end": _t(_fmt_s(s.get("time_to_end"))),
            "end reason": _t(s.get("end_reason") or "-"),
        })
    console.print(fit_table("Streams", _STREAM_COLS, rows, console))
    hidden = len(streams) - min(len(streams), max_rows) + int(report.get("streams_omitted", 0) or 0)
    if hidden:
        console.print(Text(f"… {hidden} more streams (--format json for all)", style="dim"))


_TAP_CONN_COLS = (Col("connection", 0, wrap=True), Col("name", 2), Col("connect flags", 3, wrap=True),
                  Col("events", 1, wrap=True), Col("acks asked/answered", 1, True), Col("unanswered", 0, True),
                  Col("ack rtt mean/max", 2, True), Col("longest wait at", 4, True), Col("nacks", 1, True),
                  Col("errors", 3, True), Col("checkpoints", 2, True), Col("bytes", 2, True))
_TAP_VB_COLS = (Col("connection", 3, wrap=True), Col("vb", 0, True), Col("phase", 1), Col("states", 2, wrap=True),
                Col("mut/del", 0, True), Col("other events", 3, wrap=True), Col("backfill", 1, True),
                Col("checkpoints", 2, True), Col("acks", 2, True), Col("nacks", 1, True), Col("bytes", 2, True))


def render_tap(tap: dict[str, Any], console: Console, max_rows: int = 200) -> None:
    """The TAP tables: per connection (events, ACK round trips and the longest wait, NACKs,
    checkpoints, bytes) and per vbucket (phase, takeover states, backfill duration)."""
    rows, vb_rows = [], []
    for name, t in list(tap.items())[:max_rows]:
        acks = t.get("acks") or {}
        rtt = acks.get("round_trip") or {}
        wait = acks.get("longest_wait") or {}
        events = t.get("events") or {}
        rows.append({
            "connection": _t(name),
            "name": _t(t.get("name") or "-"),
            "connect flags": _t("+".join(map(str, t.get("connect_flags") or [])) or
                                ("-" if t.get("connect_flags") is None else "none")),
            "events": _counter_text(events),
            "acks asked/answered": _t(f"{acks.get('requested', 0)}/{acks.get('answered', 0)}"),
            "unanswered": _t(acks.get("unanswered", 0), "red" if acks.get("unanswered") else ""),
            "ack rtt mean/max": _t(f"{_fmt_s(rtt.get('mean'))}/{_fmt_s(rtt.get('max'))}"),
            "longest wait at": _t("-" if not wait else f"frame {wait.get('frame')}, vb {wait.get('vbucket')}"),
            "nacks": _t(t.get("nacks", 0), "yellow" if t.get("nacks") else ""),
            "errors": _t(t.get("errors", 0), "red" if t.get("errors") else ""),
            "checkpoints": _t(t.get("checkpoints", 0)),
            "bytes": _t(_fmt_bytes(t.get("bytes"))),
        })
        for vb, v in sorted((t.get("vbuckets") or {}).items(), key=lambda kv: _vb_sort(kv[0])):
            ev = dict(v.get("events") or {})
            backfill = v.get("backfill") or {}
            cps = v.get("checkpoints") or {}
            vb_rows.append({
                "connection": _t(name),
                "vb": _t(vb),
                "phase": _t(v.get("phase") or "-"),
                "states": _t("→".join(map(str, v.get("states") or [])) or "-"),
                "mut/del": _t(f"{ev.pop('mutation', 0)}/{ev.pop('delete', 0)}"),
                "other events": _counter_text(ev),
                "backfill": _t("-" if not backfill.get("count") else
                               _fmt_s(backfill.get("seconds")) + (" (open)" if backfill.get("open") else "")),
                "checkpoints": _t(f"{cps.get('count', 0)}" + (f" (last {cps['last']})" if cps.get("last") is not None else "")),
                "acks": _t(v.get("acks", 0)),
                "nacks": _t(v.get("nacks", 0)),
                "bytes": _t(_fmt_bytes(v.get("bytes"))),
            })
    console.print()
    console.print(fit_table("TAP connections", _TAP_CONN_COLS, rows, console))
    console.print()
    console.print(fit_table("TAP vbuckets", _TAP_VB_COLS, vb_rows[:max_rows], console))
    if len(vb_rows) > max_rows:
        console.print(Text(f"… {len(vb_rows) - max_rows} more TAP vbuckets (--format json for all)", style="dim"))
    console.print(Text("acks: ACK requests (TAP_FLAG_ACK) and the answers that matched one; an answer covers the "
                       "requests before it; rtt: from the request to the answer that covered it", style="dim"))


def _plural(n: Any, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def totals_line(cap: dict[str, Any]) -> str:
    """``18 items in 4 streams, 3 vbuckets, 2 connections`` for a report's ``capture`` part."""
    return (f"{_plural(cap.get('frames', 0), 'frame')}, {_plural(cap.get('items', 0), 'item')} in "
            f"{_plural(cap.get('streams', 0), 'stream')}, {_plural(cap.get('vbuckets', 0), 'vbucket')}, "
            f"{_plural(cap.get('connections', 0), 'connection')}")


def _vb_sort(vb: str) -> tuple:
    return (0, int(vb), "") if str(vb).isdigit() else (1, 0, str(vb))


def _fmt_seqno(v: Any) -> str:
    if v is None:
        return "-"
    if v == MAX_SEQNO:
        return "max"
    return str(v)


def render_chart(report: dict[str, Any], console: Console, *, lines: int = 10, columns: int | None = None) -> None:
    """Items per second over time: one sparkline for the total and one per busy vbucket."""
    tl = report.get("timeline") or {}
    width = tl.get("bin_width") or 0
    total = tl.get("items") or []
    if not total or not any(total) or width <= 0:
        console.print(Text("items/s: no DCP items", style="dim"))
        return
    vb_bins = tl.get("vbuckets") or {}
    busy = sorted(vb_bins.items(), key=lambda kv: (-sum(kv[1]), _vb_sort(kv[0])))[:lines]
    label_w = max([5] + [len(f"vb {safe(vb)}") for vb, _ in busy])
    if columns is None:
        columns = chart_columns(sum(total), max(10, min(60, console.width - label_w - 22)))
    rates, col_w = regroup(total, width, columns)
    console.print(Text(f"Items per second (1 column = {_fmt_s(col_w)}, {len(rates)} columns; "
                       "each line scaled to its peak)", style="bold"))
    chart = Table(box=None, show_header=False, pad_edge=False)
    chart.add_column(no_wrap=True)
    chart.add_column(no_wrap=True)
    chart.add_column(no_wrap=True, justify="right")
    chart.add_row(Text("total", style="bold"), Text(sparkline(rates), style="green"),
                  Text(f"peak {_fmt_num(max(rates))}/s"))
    for vb, bins in busy:
        r, _ = regroup(list(bins) + [0] * (len(total) - len(bins)), width, columns)
        chart.add_row(_t(f"vb {vb}"), Text(sparkline(r), style="cyan"), Text(f"peak {_fmt_num(max(r))}/s"))
    console.print(chart)
    if len(vb_bins) > len(busy):
        console.print(Text(f"… {len(vb_bins) - len(busy)} quieter vbuckets not charted", style="dim"))
