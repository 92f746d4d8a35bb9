"""What ``dcpinspect stats`` shows of Redis: the report's ``redis`` entry (computed by
:mod:`.stats`) as tables of commands with their latency percentiles, the slowest replies,
each replication connection's sync phases and each Dragonfly sync's flows; and in the plot,
the master's and the replica's offsets over time and the replica's ACK lag."""

from __future__ import annotations

from typing import Any

from ....outputs.stats import Col, Panel, StatsView, cell, fit_table, fmt_bytes, fmt_num, fmt_seconds

#: what a connection's ``protocols`` count Redis records as
PROTOCOLS = ("resp", "rdb", "journal")

_COMMAND_COLS = (Col("command", 0), Col("replies", 0, True), Col("p50", 0, True), Col("p99", 1, True),
                 Col("max", 0, True), Col("mean", 2, True))
_SLOW_COLS = (Col("command", 0), Col("latency", 0, True), Col("connection", 1, wrap=True),
              Col("command frame", 2, True), Col("reply frame", 2, True))
_LINK_COLS = (Col("connection", 0, wrap=True), Col("sync", 1), Col("handshake", 2, True), Col("transfer", 1, True),
              Col("payload", 1, True), Col("rate", 2, True), Col("keys", 2, True), Col("load", 1, True),
              Col("stable", 2, True), Col("cmds/s", 1, True), Col("bytes/s", 2, True), Col("acks", 3, True),
              Col("ack lag", 0, True))
_FLOW_COLS = (Col("sync", 1, wrap=True), Col("flow", 0, True), Col("connection", 2, wrap=True),
              Col("full sync", 1, True), Col("bytes", 2, True), Col("keys", 2, True), Col("stable", 1, True),
              Col("records", 1, True), Col("lsns", 0, True))


def _ms(v: Any) -> str:
    return "-" if v is None else f"{v:.3f} ms"


class RedisStatsView(StatsView):
    """Redis's part of the ``stats`` report."""

    keys = ("redis",)
    name = "Redis"

    def owns(self, connection: dict[str, Any]) -> bool:
        protocols = connection.get("protocols") or {}
        return any(p in protocols for p in PROTOCOLS)

    def shown(self, report: dict[str, Any]) -> bool:
        conns = report.get("connections", {})
        return any(self.owns(c) for c in conns.values()) or any(bool(v) for v in (report.get("redis") or {}).values())

    def sections(self, report: dict[str, Any], console, max_rows: int) -> None:
        redis = report.get("redis") or {}
        commands = redis.get("commands") or {}
        if commands:
            rows = [{"command": cell(name), "replies": cell(c.get("count", 0)),
                     "p50": cell(_ms(c["latency_ms"].get("p50"))), "p99": cell(_ms(c["latency_ms"].get("p99"))),
                     "max": cell(_ms(c["latency_ms"].get("max"))), "mean": cell(_ms(c["latency_ms"].get("mean")))}
                    for name, c in list(commands.items())[:max_rows]]
            console.print(fit_table("Redis commands", _COMMAND_COLS, rows, console))
            console.print(cell("latency: from the command's last byte to its reply's; replies: those the "
                               "capture paired with a command", "dim"))
            console.print()
        slowest = redis.get("slowest") or []
        if slowest:
            rows = [{"command": cell(s.get("command")), "latency": cell(_ms(s.get("latency_ms"))),
                     "connection": cell(s.get("connection")), "command frame": cell(s.get("command_frame")),
                     "reply frame": cell(s.get("reply_frame"))} for s in slowest]
            console.print(fit_table("Slowest replies", _SLOW_COLS, rows, console))
            console.print()
        links = redis.get("replication") or {}
        if links:
            rows = []
            for name, link in list(links.items())[:max_rows]:
                ph = link.get("phases") or {}
                tr, st = ph.get("transfer") or {}, ph.get("stable") or {}
                rows.append({
                    "connection": cell(name), "sync": cell(link.get("resync") or "-"),
                    "handshake": cell(fmt_seconds((ph.get("handshake") or {}).get("seconds"))),
                    "transfer": cell(fmt_seconds(tr.get("seconds"))), "payload": cell(fmt_bytes(tr.get("bytes"))),
                    "rate": cell("-" if tr.get("bytes_per_s") is None else fmt_bytes(tr["bytes_per_s"]) + "/s"),
                    "keys": cell("-" if tr.get("keys") is None else tr["keys"]),
                    "load": cell(fmt_seconds((ph.get("load") or {}).get("seconds"))),
                    "stable": cell(fmt_seconds(st.get("seconds"))), "cmds/s": cell(fmt_num(st.get("commands_per_s"))),
                    "bytes/s": cell("-" if st.get("bytes_per_s") is None else fmt_bytes(st["bytes_per_s"]) + "/s"),
                    "acks": cell(link.get("acks", 0)),
                    "ack lag": cell("-" if link.get("lag") is None else f"{link['lag']:,} B",
                                    "yellow" if link.get("lag") else ""),
                })
            console.print(fit_table("Redis replication", _LINK_COLS, rows, console))
            console.print(cell("handshake: to +FULLRESYNC or +CONTINUE; transfer: the payload; load: from its end to "
                               "the replica's first ACK; stable: from there on (cmds/s, bytes/s of the master's "
                               "stream); ack lag: the master's offset minus the last ACK's", "dim"))
            console.print()
        syncs = redis.get("dragonfly") or {}
        if syncs:
            rows = []
            for sync, flows in syncs.items():
                for conn, f in flows.items():
                    ph = f.get("phases") or {}
                    full, st, lsns = ph.get("full_sync") or {}, ph.get("stable") or {}, f.get("lsns") or {}
                    rows.append({
                        "sync": cell(sync), "flow": cell("-" if f.get("flow_id") is None else f["flow_id"]),
                        "connection": cell(conn), "full sync": cell(fmt_seconds(full.get("seconds"))),
                        "bytes": cell(fmt_bytes(full.get("bytes"))),
                        "keys": cell("-" if full.get("keys") is None else full["keys"]),
                        "stable": cell(fmt_seconds(st.get("seconds"))), "records": cell(st.get("records", 0)),
                        "lsns": cell("-" if lsns.get("first") is None else f"{lsns['first']}→{lsns['last']}"),
                    })
            console.print(fit_table("Dragonfly syncs", _FLOW_COLS, rows[:max_rows], console))
            console.print()

    def panels(self, report: dict[str, Any]) -> tuple[Panel, ...]:
        """The master's and the replica's replication offsets over time, and the ACK lag,
        one line per replication connection."""
        links = (report.get("redis") or {}).get("replication") or {}
        if not links:
            return ()
        offsets: dict[str, list] = {}
        lags: dict[str, list] = {}
        for name, link in links.items():
            series = link.get("series") or {}
            offsets[f"{name} master"] = series.get("master_offset") or []
            offsets[f"{name} replica ACK"] = series.get("replica_offset") or []
            lags[name] = series.get("ack_lag") or []
        return (Panel("redis", "Redis replication offset over time (the master's stream, the replica's ACKs)",
                      "offset", "{}", "offsets", "no replication stream", lines=offsets),
                Panel("redis", "replica ACK lag (master offset − acknowledged offset)", "bytes behind", "{}",
                      "connections", "no ACK", lines=lags))


VIEW = RedisStatsView()
