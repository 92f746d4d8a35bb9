"""What ``dcpinspect stats`` shows of MCBP: DCP's streams, items and vbuckets, and TAP.

The report's ``vbuckets``, ``streams``, ``tap``, ``series`` and the timeline's
``vbuckets`` are computed by :class:`~dcpinspect.sessions.stats.StatsCollector` (TAP's
by :class:`~dcpinspect.families.mcbp.sessions.tap.TapSession`); this view lays them out with
``outputs.stats``'s tables and cells: streams, items and items per second of each MCBP
connection, the vbuckets and streams tables, the TAP tables, the chart's line for each
busy vbucket and the plot's seqno per vbucket.
"""

from __future__ import annotations

from typing import Any

from ...outputs.stats import (
    Breakdown,
    Col,
    Panel,
    StatsView,
    cell,
    counter_text,
    fit_table,
    fmt_bytes,
    fmt_num,
    fmt_seconds,
    key_order,
    plural,
    regroup,
)
from .sessions.streams import MAX_SEQNO

#: what a connection's ``protocols`` count MCBP frames as (a report without ``protocols``
#: is one of MCBP alone)
MCBP = "mcbp"

_VB_COLS = (Col("vb", 0, True), Col("streams", 2), Col("snapshots", 1, wrap=True), Col("snap seqnos", 2, True),
            Col("snap items", 2, True), Col("mut/del/exp", 0, True), Col("prep/com/abt", 3, True),
            Col("sys", 4, True), Col("seqnos", 1, True), Col("gaps (max)", 1, True), Col("bytes", 3, True),
            Col("items/s", 2, True), Col("to 1st item", 3, True), Col("to end", 3, True),
            Col("end reasons", 2, wrap=True))
_STREAM_COLS = (Col("connection", 2, wrap=True), Col("vb", 0, True), Col("sid", 3, True), Col("opaque", 4),
                Col("requested", 4), Col("state", 1), Col("items", 0, True), Col("seqnos", 1, True),
                Col("gaps", 2, True), Col("to 1st item", 2, True), Col("to end", 2, True),
                Col("end reason", 1, wrap=True))
_TAP_CONN_COLS = (Col("connection", 0, wrap=True), Col("name", 2), Col("connect flags", 3, wrap=True),
                  Col("events", 1, wrap=True), Col("acks asked/answered", 1, True), Col("unanswered", 0, True),
                  Col("ack rtt mean/max", 2, True), Col("longest wait at", 4, True), Col("nacks", 1, True),
                  Col("errors", 3, True), Col("checkpoints", 2, True), Col("bytes", 2, True))
_TAP_VB_COLS = (Col("connection", 3, wrap=True), Col("vb", 0, True), Col("phase", 1), Col("states", 2, wrap=True),
                Col("mut/del", 0, True), Col("other events", 3, wrap=True), Col("backfill", 1, True),
                Col("checkpoints", 2, True), Col("acks", 2, True), Col("nacks", 1, True), Col("bytes", 2, True))

#: time columns of the operations panel at most
OPS_COLUMNS = 200

_SHORT_TYPES = {"memory": "mem", "checkpoint": "ckpt", "history": "hist", "may-duplicate": "dup"}


def _short_type(label: str) -> str:
    """``disk+checkpoint`` → ``disk+ckpt``: a snapshot type as the vbuckets table shows it."""
    return "+".join(_SHORT_TYPES.get(p, p) for p in str(label).split("+"))


def _fmt_seqno(v: Any) -> str:
    if v is None:
        return "-"
    if v == MAX_SEQNO:
        return "max"
    return str(v)


class McbpStats(StatsView):
    """DCP's and TAP's part of the ``stats`` report."""

    keys = ("vbuckets", "streams")
    columns = (Col("streams", 2, True), Col("items", 1, True), Col("items/s", 2, True))
    name = "DCP"
    breakdown = Breakdown("vbuckets", "vb {}", "vbuckets")
    no_items = "items/s: no DCP items"
    panel = Panel("series", "seqno over time per vbucket", "seqno", "vb {}", "vbuckets", "no DCP items",
                  rank="vbuckets")

    def owns(self, connection: dict[str, Any]) -> bool:
        return MCBP in connection.get("protocols", {MCBP: 1})

    def cells(self, connection: dict[str, Any]) -> dict[str, Any]:
        rates = connection.get("rates", {})
        return {"streams": cell(connection.get("streams", 0)), "items": cell(connection.get("items", 0)),
                "items/s": cell(fmt_num(rates.get("items_per_s")))}

    def sections(self, report: dict[str, Any], console, max_rows: int) -> None:
        """The vbuckets and streams tables when DCP's part is shown; the TAP tables when
        the report has TAP connections."""
        if self.shown(report):
            _render_streams(report, console, max_rows)
        if report.get("tap"):
            render_tap(report["tap"], console, max_rows)

    def panels(self, report: dict[str, Any]) -> tuple[Panel, ...]:
        """Seqno per vbucket (when the capture has DCP items, or nothing else to draw), and
        memcached's operations per second by opcode (when it has any)."""
        tl = report.get("timeline") or {}
        ops, width = tl.get("ops") or {}, tl.get("bin_width") or 0
        out = [self.panel] if report.get("series") or not ops else []
        if ops and width > 0:
            columns = max(1, min(OPS_COLUMNS, len(next(iter(ops.values())))))
            lines = {}
            for name, bins in sorted(ops.items(), key=lambda kv: (-sum(kv[1]), kv[0])):
                rates, col = regroup(bins, width, columns)
                lines[name] = [[round(i * col, 6), round(r, 3)] for i, r in enumerate(rates)]
            out.append(Panel("timeline", "memcached operations per second by opcode", "ops/s", "{}", "opcodes",
                             "no operations", lines=lines))
        return tuple(out)

    def label(self, report: dict[str, Any]) -> str:
        """DCP when the capture has DCP streams or items, TAP when it has TAP connections, else
        memcached (its operations)."""
        cap = report.get("capture", {})
        if cap.get("streams") or cap.get("items") or report.get("vbuckets"):
            return self.name
        return "TAP" if report.get("tap") else "memcached"

    def rate(self, report: dict[str, Any]) -> tuple[str, list[int]] | None:
        """DCP items per second; else memcached's operations (requests) per second."""
        tl = report.get("timeline") or {}
        items = tl.get("items") or []
        if any(items):
            return f"{self.name} items/s", items
        ops = list((tl.get("ops") or {}).values())
        if ops and any(map(any, ops)):
            return "memcached ops/s", [sum(col) for col in zip(*ops)]
        return None

    def totals(self, capture: dict[str, Any]) -> str:
        """``39 frames, 18 items in 4 streams, 3 vbuckets, 2 connections`` (nothing without DCP
        streams or items: the frames and connections then)."""
        if not capture.get("streams") and not capture.get("items"):
            return ""
        return (f"{plural(capture.get('frames', 0), 'frame')}, {plural(capture.get('items', 0), 'item')} in "
                f"{plural(capture.get('streams', 0), 'stream')}, {plural(capture.get('vbuckets', 0), 'vbucket')}, "
                f"{plural(capture.get('connections', 0), 'connection')}")


VIEW = McbpStats()


def _render_streams(report: dict[str, Any], console, max_rows: int) -> None:
    """The vbuckets and streams tables."""
    vbs = report.get("vbuckets", {})
    ordered = sorted(vbs.items(), key=lambda kv: key_order(kv[0]))
    rows = []
    for vb, v in ordered[:max_rows]:
        snaps = v.get("snapshots", {})
        seq = v.get("seqno", {})
        gaps = v.get("gaps", {})
        types = snaps.get("by_type") or {}
        count = snaps.get("count", 0)
        rows.append({
            "vb": cell(vb),
            "streams": cell(str(v.get("streams", 0))
                            + (f" ({v['rejected_streams']} rej.)" if v.get("rejected_streams") else "")),
            "snapshots": counter_text({_short_type(k): n for k, n in types.items()}, lead=count) if types
            else cell(count),
            "snap seqnos": cell(f"{fmt_num((snaps.get('seqnos') or {}).get('mean'))}/"
                                f"{fmt_num((snaps.get('seqnos') or {}).get('max'))}"),
            "snap items": cell(f"{fmt_num((snaps.get('items') or {}).get('mean'))}/"
                               f"{fmt_num((snaps.get('items') or {}).get('max'))}"),
            "mut/del/exp": cell(f"{v.get('mutations', 0)}/{v.get('deletions', 0)}/{v.get('expirations', 0)}"),
            "prep/com/abt": cell(f"{v.get('prepares', 0)}/{v.get('commits', 0)}/{v.get('aborts', 0)}"),
            "sys": cell(v.get("system_events", 0)),
            "seqnos": cell(f"{_fmt_seqno(seq.get('first'))}→{_fmt_seqno(seq.get('last'))}"),
            "gaps (max)": cell(f"{gaps.get('count', 0)} ({gaps.get('largest', 0)})",
                               "yellow" if gaps.get("count") else ""),
            "bytes": cell(fmt_bytes(v.get("bytes"))),
            "items/s": cell(fmt_num(v.get("items_per_s"))),
            "to 1st item": cell(fmt_seconds((v.get("time_to_first_item") or {}).get("mean"))),
            "to end": cell(fmt_seconds((v.get("time_to_end") or {}).get("mean"))),
            "end reasons": counter_text(v.get("end_reasons")),
        })
    console.print(fit_table("Vbuckets", _VB_COLS, rows, console))
    if len(ordered) > max_rows:
        console.print(cell(f"… {len(ordered) - max_rows} more vbuckets (--format json for all)", "dim"))
    if rows:
        console.print(cell("snap seqnos / snap items: mean/max snapshot size; mem=memory, ckpt=checkpoint, "
                           "hist=history, dup=may-duplicate; times: mean from the stream request", "dim"))
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
            "connection": cell(s.get("connection")),
            "vb": cell(s.get("vbucket")),
            "sid": cell("-" if s.get("stream_id") is None else s["stream_id"]),
            "opaque": cell(f"0x{opaque:08x}" if isinstance(opaque, int) else opaque),
            "requested": cell("?" if s.get("adopted") else
                              f"{_fmt_seqno(req.get('start_seqno'))}→{_fmt_seqno(req.get('end_seqno'))}"),
            "state": cell(state, "red" if s.get("state") == "rejected" else ""),
            "items": cell(s.get("items", 0)),
            "seqnos": cell(f"{_fmt_seqno(seq.get('first'))}→{_fmt_seqno(seq.get('last'))}"),
            "gaps": cell((s.get("gaps") or {}).get("count", 0)),
            "to 1st item": cell(fmt_seconds(s.get("time_to_first_item"))),
            "to end": cell(fmt_seconds(s.get("time_to_end"))),
            "end reason": cell(s.get("end_reason") or "-"),
        })
    console.print(fit_table("Streams", _STREAM_COLS, rows, console))
    hidden = len(streams) - min(len(streams), max_rows) + int(report.get("streams_omitted", 0) or 0)
    if hidden:
        console.print(cell(f"… {hidden} more streams (--format json for all)", "dim"))


def render_tap(tap: dict[str, Any], console, max_rows: int = 200) -> None:
    """The TAP tables: per connection (events, ACK round trips and the longest wait, NACKs,
    checkpoints, bytes) and per vbucket (phase, takeover states, backfill duration)."""
    rows, vb_rows = [], []
    for name, t in list(tap.items())[:max_rows]:
        acks = t.get("acks") or {}
        rtt = acks.get("round_trip") or {}
        wait = acks.get("longest_wait") or {}
        events = t.get("events") or {}
        rows.append({
            "connection": cell(name),
            "name": cell(t.get("name") or "-"),
            "connect flags": cell("+".join(map(str, t.get("connect_flags") or [])) or
                                  ("-" if t.get("connect_flags") is None else "none")),
            "events": counter_text(events),
            "acks asked/answered": cell(f"{acks.get('requested', 0)}/{acks.get('answered', 0)}"),
            "unanswered": cell(acks.get("unanswered", 0), "red" if acks.get("unanswered") else ""),
            "ack rtt mean/max": cell(f"{fmt_seconds(rtt.get('mean'))}/{fmt_seconds(rtt.get('max'))}"),
            "longest wait at": cell("-" if not wait else f"frame {wait.get('frame')}, vb {wait.get('vbucket')}"),
            "nacks": cell(t.get("nacks", 0), "yellow" if t.get("nacks") else ""),
            "errors": cell(t.get("errors", 0), "red" if t.get("errors") else ""),
            "checkpoints": cell(t.get("checkpoints", 0)),
            "bytes": cell(fmt_bytes(t.get("bytes"))),
        })
        for vb, v in sorted((t.get("vbuckets") or {}).items(), key=lambda kv: key_order(kv[0])):
            ev = dict(v.get("events") or {})
            backfill = v.get("backfill") or {}
            cps = v.get("checkpoints") or {}
            vb_rows.append({
                "connection": cell(name),
                "vb": cell(vb),
                "phase": cell(v.get("phase") or "-"),
                "states": cell("→".join(map(str, v.get("states") or [])) or "-"),
                "mut/del": cell(f"{ev.pop('mutation', 0)}/{ev.pop('delete', 0)}"),
                "other events": counter_text(ev),
                "backfill": cell("-" if not backfill.get("count") else
                                 fmt_seconds(backfill.get("seconds")) + (" (open)" if backfill.get("open") else "")),
                "checkpoints": cell(f"{cps.get('count', 0)}"
                                    + (f" (last {cps['last']})" if cps.get("last") is not None else "")),
                "acks": cell(v.get("acks", 0)),
                "nacks": cell(v.get("nacks", 0)),
                "bytes": cell(fmt_bytes(v.get("bytes"))),
            })
    console.print()
    console.print(fit_table("TAP connections", _TAP_CONN_COLS, rows, console))
    console.print()
    console.print(fit_table("TAP vbuckets", _TAP_VB_COLS, vb_rows[:max_rows], console))
    if len(vb_rows) > max_rows:
        console.print(cell(f"… {len(vb_rows) - max_rows} more TAP vbuckets (--format json for all)", "dim"))
    console.print(cell("acks: ACK requests (TAP_FLAG_ACK) and the answers that matched one; an answer covers the "
                       "requests before it; rtt: from the request to the answer that covered it", "dim"))
