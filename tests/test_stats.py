"""``dcpinspect stats``: per-connection / per-vbucket DCP statistics, the chart and the plot."""

from __future__ import annotations

import json
import struct
from io import StringIO

import pytest
from rich.console import Console

from dcpinspect.engines.connections import Captured, Note
from dcpinspect.engines.records import decode_capture_file
from dcpinspect.families.mcbp.messages import dcp
from dcpinspect.families.mcbp.messages.build import build_frame, request, response
from dcpinspect.families.mcbp.messages.codecs.frameinfo import encode_frame_info
from dcpinspect.families.mcbp.messages.frame import decode_frame
from dcpinspect.engines.stats import render
from dcpinspect.outputs.stats import report_json, sparkline
from dcpinspect.sessions.bounded import DecimatedSeries, Timeline
from dcpinspect.families import stats_collector
from dcpinspect.families.mcbp.stats import snapshot_type_label
from dcpinspect.transport import synth

TS0 = 1_700_000_000.0
DT = 0.001  # one message a millisecond on each connection
B_OFFSET = 0.0005  # connection B starts half a millisecond after A
CONN_A = ("10.0.0.1", 50000)
CONN_B = ("10.0.0.3", 50001)
SERVER = ("10.0.0.2", 11210)
LABEL_A = "10.0.0.1:50000-10.0.0.2:11210"
LABEL_B = "10.0.0.3:50001-10.0.0.2:11210"
EVIL_KEY = b"\x1b]0;pwned\x07\x1b[2Jevil"
MAX = 2**64 - 1


def stream_req(vb, opaque, sid=None, start=0):
    value = json.dumps({"sid": sid}).encode() if sid is not None else b""
    return request(0x53, dcp.STREAM_REQ, vbucket=vb, opaque=opaque, start_seqno=start, end_seqno=MAX,
                   vbucket_uuid=0, snap_start_seqno=start, snap_end_seqno=start, value=value)


def ok_stream(opaque):
    return response(0x53, opaque=opaque, value=dcp.FAILOVER_ENTRY.pack(vbucket_uuid=0xABCD, seqno=0))


def marker(vb, opaque, start, end, stype, sid=None):
    if sid is None:  # v1: everything in the extras
        return request(0x56, dcp.SNAPSHOT_V1, vbucket=vb, opaque=opaque, start_seqno=start, end_seqno=end,
                       snapshot_type=stype)
    return build_frame(0x08, 0x56, framing=_sid(sid), vbucket=vb, opaque=opaque,
                       extras=dcp.SNAPSHOT_V2_EXTRAS.pack(version=2),
                       value=dcp.SNAPSHOT_V22.pack(start_seqno=start, end_seqno=end, snapshot_type=stype,
                                                   max_visible_seqno=end))


def _sid(sid):
    return encode_frame_info(2, sid.to_bytes(2, "big"))


def item(opcode, layout, vb, opaque, key, sid=None, value=b"", **fields):
    if sid is None:
        return build_frame(0x80, opcode, vbucket=vb, opaque=opaque, key=key, extras=layout.pack(**fields), value=value)
    return build_frame(0x08, opcode, framing=_sid(sid), vbucket=vb, opaque=opaque, key=key,
                       extras=layout.pack(**fields), value=value)


def mutation(vb, opaque, seqno, key=None, sid=None):
    return item(0x57, dcp.MUTATION, vb, opaque, key or b"doc-%d" % seqno, sid, b'{"n":1}', by_seqno=seqno, rev_seqno=1)


def deletion(vb, opaque, seqno, sid=None):
    return item(0x58, dcp.DELETION_V2, vb, opaque, b"doc-%d" % seqno, sid, by_seqno=seqno, rev_seqno=2)


def expiration(vb, opaque, seqno, sid=None):
    return item(0x59, dcp.EXPIRATION, vb, opaque, b"doc-%d" % seqno, sid, by_seqno=seqno, rev_seqno=2)


def stream_end(vb, opaque, reason, sid=None):
    if sid is None:
        return request(0x55, dcp.STREAM_END, vbucket=vb, opaque=opaque, reason=reason)
    return build_frame(0x08, 0x55, framing=_sid(sid), vbucket=vb, opaque=opaque,
                       extras=dcp.STREAM_END.pack(reason=reason))


def oso(vb, opaque, flags):
    return request(0x65, dcp.OSO_SNAPSHOT, vbucket=vb, opaque=opaque, flags=flags)


def conversation_a():
    """vb 0: two snapshots (memory 1-4 with 4 items; disk+checkpoint 5-10 with 3 items and a 3-seqno hole),
    ends Ok.  vb 1: an OSO backfill (7, 3, 5), a memory snapshot 8-9, ends Closed."""
    return [
        ("c2s", request(0x50, dcp.OPEN, key=b"stats-test", flags=0x01, opaque=1)),  # 0
        ("s2c", response(0x50, opaque=1)),  # 1
        ("c2s", stream_req(0, 0x10)),  # 2  vb 0 requested
        ("s2c", ok_stream(0x10)),  # 3
        ("s2c", marker(0, 0x10, 0, 4, 0x01)),  # 4  memory, seqnos 1-4
        ("s2c", mutation(0, 0x10, 1)),  # 5  first item of vb 0
        ("s2c", mutation(0, 0x10, 2)),  # 6
        ("s2c", deletion(0, 0x10, 3)),  # 7
        ("s2c", expiration(0, 0x10, 4)),  # 8
        ("s2c", marker(0, 0x10, 5, 10, 0x06)),  # 9  disk+checkpoint, seqnos 5-10
        ("s2c", mutation(0, 0x10, 5)),  # 10
        ("s2c", mutation(0, 0x10, 6)),  # 11
        ("s2c", mutation(0, 0x10, 10)),  # 12 hole: 7, 8, 9
        ("s2c", stream_end(0, 0x10, 0)),  # 13 vb 0 ends Ok
        ("c2s", stream_req(1, 0x11)),  # 14 vb 1 requested
        ("s2c", ok_stream(0x11)),  # 15
        ("s2c", oso(1, 0x11, 0x01)),  # 16
        ("s2c", mutation(1, 0x11, 7)),  # 17 first item of vb 1
        ("s2c", deletion(1, 0x11, 3)),  # 18
        ("s2c", mutation(1, 0x11, 5)),  # 19
        ("s2c", oso(1, 0x11, 0x02)),  # 20
        ("s2c", marker(1, 0x11, 8, 9, 0x01)),  # 21
        ("s2c", mutation(1, 0x11, 8)),  # 22
        ("s2c", mutation(1, 0x11, 9)),  # 23
        ("s2c", stream_end(1, 0x11, 1)),  # 24 vb 1 ends Closed
    ]


def conversation_b():
    """vb 2 with stream ids: a request rejected with Rollback, then a stream with sync writes, a system
    event, a mutation whose key carries terminal escapes, SeqnoAdvanced; still open at the end."""
    rollback = response(0x53, opaque=0x20, status=0x23, value=dcp.ROLLBACK.pack(rollback_seqno=0))
    sysevent = build_frame(0x08, 0x5F, framing=_sid(7), vbucket=2, opaque=0x21, key=b"orders",
                           extras=dcp.SYSTEM_EVENT.pack(by_seqno=5, event=0, version=0),
                           value=dcp.SYSTEM_EVENT_VALUES[(0, 0)].pack(manifest_uid=1, scope_id=0, collection_id=8))
    return [
        ("c2s", request(0x50, dcp.OPEN, key=b"stats-test-b", flags=0x01, opaque=1)),  # 0
        ("s2c", response(0x50, opaque=1)),  # 1
        ("c2s", stream_req(2, 0x20, sid=7)),  # 2  rejected
        ("s2c", rollback),  # 3
        ("c2s", stream_req(2, 0x21, sid=7)),  # 4  vb 2 requested
        ("s2c", ok_stream(0x21)),  # 5
        ("s2c", marker(2, 0x21, 1, 6, 0x05, sid=7)),  # 6 memory+checkpoint
        ("s2c", item(0x60, dcp.PREPARE, 2, 0x21, b"sw-1", 7, b"{}", by_seqno=1, rev_seqno=1,
                     durability_level=1)),  # 7 first item of vb 2
        ("s2c", item(0x62, dcp.COMMIT, 2, 0x21, b"sw-1", 7, prepared_seqno=1, commit_seqno=2)),  # 8
        ("s2c", item(0x60, dcp.PREPARE, 2, 0x21, b"sw-2", 7, b"{}", by_seqno=3, rev_seqno=1,
                     durability_level=1)),  # 9
        ("s2c", item(0x63, dcp.ABORT, 2, 0x21, b"sw-2", 7, prepared_seqno=3, abort_seqno=4)),  # 10
        ("s2c", sysevent),  # 11
        ("s2c", mutation(2, 0x21, 6, key=EVIL_KEY, sid=7)),  # 12
        ("s2c", item(0x64, dcp.SEQNO_ADVANCED, 2, 0x21, b"", 7, by_seqno=9)),  # 13 no gap: advanced
    ]


def _stamp(frames, start):
    return [(start + i * DT, f) for i, f in enumerate(frames)]


def msg_ts(conv_start, k):
    """Time of message ``k`` of a conversation: SYN, SYN-ACK and ACK come first (acks=False)."""
    return conv_start + (3 + k) * DT


def write_capture(path):
    a = synth.tcp_conversation(conversation_a(), client=CONN_A, server=SERVER, acks=False)
    b = synth.tcp_conversation(conversation_b(), client=CONN_B, server=SERVER, acks=False)
    frames = sorted(_stamp(a, TS0) + _stamp(b, TS0 + B_OFFSET), key=lambda tf: tf[0])
    synth.write_pcap(path, frames, "ether")
    return path


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    return write_capture(tmp_path_factory.mktemp("stats") / "dcp.pcap")


@pytest.fixture(scope="module")
def collector(capture):
    return stats_collector().feed(decode_capture_file(capture))


@pytest.fixture(scope="module")
def report(collector):
    return collector.report()


def approx(v):
    return pytest.approx(v, abs=2e-6)


# -- the report ------------------------------------------------------------------------------


def test_capture_totals(report):
    cap = report["capture"]
    assert cap["connections"] == 2
    assert cap["vbuckets"] == 3
    assert cap["streams"] == 4  # vb 0, vb 1, vb 2 rejected, vb 2
    assert cap["items"] == 7 + 5 + 6
    assert cap["frames"] == len(conversation_a()) + len(conversation_b())
    assert cap["bytes"] == sum(len(m) for _, m in conversation_a() + conversation_b())
    assert cap["first_ts"] == approx(msg_ts(TS0, 0))
    assert cap["duration"] == approx(msg_ts(TS0, 24) - msg_ts(TS0, 0))


def test_connections(report):
    conns = report["connections"]
    assert set(conns) == {LABEL_A, LABEL_B}
    a = conns[LABEL_A]
    conv = conversation_a()
    assert a["frames"] == {"c2s": 3, "s2c": 22, "total": 25}
    assert a["bytes"]["c2s"] == sum(len(m) for d, m in conv if d == "c2s")
    assert a["bytes"]["s2c"] == sum(len(m) for d, m in conv if d == "s2c")
    assert a["duration"] == approx(24 * DT)
    assert a["rates"]["frames_per_s"] == pytest.approx(25 / (24 * DT), rel=1e-4)
    assert a["rates"]["items_per_s"] == pytest.approx(12 / (24 * DT), rel=1e-4)
    assert a["opcodes"]["DCP_MUTATION"] == 9
    assert a["opcodes"]["DCP_STREAM_REQ"] == 2
    assert a["opcodes"]["DCP_STREAM_REQ (response)"] == 2
    assert a["streams"] == 2 and a["items"] == 12
    b = conns[LABEL_B]
    assert b["frames"] == {"c2s": 3, "s2c": 11, "total": 14}
    assert b["streams"] == 2 and b["items"] == 6
    assert b["first_ts"] == approx(msg_ts(TS0 + B_OFFSET, 0))


def test_vbucket_0_snapshots_counts_gap_timing(report):
    v = report["vbuckets"]["0"]
    assert v["streams"] == 1 and v["rejected_streams"] == 0
    assert v["snapshots"] == {
        "count": 2,
        "by_type": {"memory": 1, "disk+checkpoint": 1},
        "seqnos": {"mean": 5.0, "max": 6},  # 1-4 and 5-10
        "items": {"mean": 3.5, "max": 4},
    }
    assert (v["mutations"], v["deletions"], v["expirations"]) == (5, 1, 1)
    assert (v["prepares"], v["commits"], v["aborts"], v["system_events"]) == (0, 0, 0, 0)
    assert v["items"] == 7
    assert v["seqno"] == {"first": 1, "last": 10, "min": 1, "max": 10}
    assert v["gaps"] == {"count": 1, "largest": 3, "missing": 3, "backwards": 0}
    conv = conversation_a()
    assert v["bytes"] == sum(len(m) for _, m in conv[2:14])
    assert v["frames"] == 12
    assert v["time_to_first_item"]["count"] == 1
    assert v["time_to_first_item"]["mean"] == approx(msg_ts(TS0, 5) - msg_ts(TS0, 2))  # 3 ms
    assert v["time_to_end"]["max"] == approx(msg_ts(TS0, 13) - msg_ts(TS0, 2))  # 11 ms
    assert v["end_reasons"] == {"Ok": 1}
    assert v["items_per_s"] == pytest.approx(7 / (7 * DT), rel=1e-4)  # items from 5 to 12


def test_vbucket_1_oso_is_not_a_gap(report):
    v = report["vbuckets"]["1"]
    assert v["oso_snapshots"] == 1
    assert v["snapshots"]["count"] == 1 and v["snapshots"]["by_type"] == {"memory": 1}
    assert (v["mutations"], v["deletions"]) == (4, 1)
    assert v["seqno"] == {"first": 7, "last": 9, "min": 3, "max": 9}
    assert v["gaps"]["count"] == 0 and v["gaps"]["backwards"] == 0
    assert v["end_reasons"] == {"Closed": 1}
    assert v["time_to_first_item"]["mean"] == approx(3 * DT)
    assert v["time_to_end"]["mean"] == approx(10 * DT)


def test_vbucket_2_rejected_sync_writes_open_stream(report):
    v = report["vbuckets"]["2"]
    assert v["streams"] == 2 and v["rejected_streams"] == 1
    assert (v["prepares"], v["commits"], v["aborts"], v["system_events"], v["mutations"]) == (2, 1, 1, 1, 1)
    assert v["seqno_advanced"] == 1
    assert v["items"] == 6
    assert v["seqno"]["last"] == 9
    assert v["gaps"]["count"] == 0  # 6 → 9 by SeqnoAdvanced
    assert v["snapshots"] == {"count": 1, "by_type": {"memory+checkpoint": 1},
                              "seqnos": {"mean": 6.0, "max": 6}, "items": {"mean": 6.0, "max": 6}}
    assert v["end_reasons"] == {}
    assert v["time_to_end"]["count"] == 0
    assert v["time_to_first_item"]["mean"] == approx(3 * DT)  # request #4 → prepare #7


def test_streams(report):
    streams = {(s["vbucket"], s["opaque"]): s for s in report["streams"]}
    assert set(streams) == {(0, 0x10), (1, 0x11), (2, 0x20), (2, 0x21)}
    s0 = streams[(0, 0x10)]
    assert s0["connection"] == LABEL_A and s0["state"] == "ended" and s0["end_reason"] == "Ok"
    assert s0["time_to_first_item"] == approx(3 * DT) and s0["time_to_end"] == approx(11 * DT)
    assert s0["request"] == {"start_seqno": 0, "end_seqno": MAX, "flags": 0}
    assert s0["counts"]["mutations"] == 5 and s0["snapshots"] == 2
    assert s0["gaps"]["largest"] == 3
    rej = streams[(2, 0x20)]
    assert rej["state"] == "rejected" and rej["status"] == "Rollback" and rej["rollback_seqno"] == 0
    assert rej["stream_id"] == 7 and rej["items"] == 0
    s2 = streams[(2, 0x21)]
    assert s2["state"] == "open" and s2["stream_id"] == 7 and s2["end_reason"] is None
    assert s2["open_snapshot"] == {"start": 1, "end": 6, "type": "memory+checkpoint", "items": 6}
    assert s2["time_to_end"] is None


def test_timeline_and_series(report):
    tl = report["timeline"]
    assert sum(tl["items"]) == 18
    assert sum(tl["bytes"]) == report["capture"]["bytes"]
    assert {k: sum(v) for k, v in tl["vbuckets"].items()} == {"0": 7, "1": 5, "2": 6}
    assert tl["bins"] <= 512
    s0 = report["series"]["0"]
    assert [p[1] for p in s0] == [1, 2, 3, 4, 5, 6, 10]
    assert s0[0][0] == approx(msg_ts(TS0, 5) - msg_ts(TS0, 0))
    assert [p[1] for p in report["series"]["1"]] == [7, 8, 9]  # OSO end: one point at its highest seqno


def test_report_is_json_and_stable(collector, report):
    json.dumps(report)  # JSON-ready as it is, no default= needed
    text = report_json(report)
    assert json.loads(text)["vbuckets"]["0"]["gaps"]["largest"] == 3
    assert json.loads(report_json(report, series=False)).get("series") is None
    assert collector.report() == report  # report() does not disturb the collector


def test_snapshot_type_labels():
    assert snapshot_type_label(0x01) == "memory"
    assert snapshot_type_label(0x06) == "disk+checkpoint"
    assert snapshot_type_label(0x12) == "disk+history"
    assert snapshot_type_label(0x09) == "memory"  # Acknowledge is not a type
    assert snapshot_type_label(0x100) == "0x100"
    assert snapshot_type_label(0) == "none"


# -- bounded memory ---------------------------------------------------------------------------


def _cap(ts, msg_bytes, flow=("10.0.0.1", 1, "10.0.0.2", 11210)):
    return Captured(ts, flow, "s2c", decode_frame(msg_bytes), 0)


def test_memory_bounded_per_vbucket():
    c = stats_collector()
    c.add(_cap(0.0 + 1.0, stream_req(3, 9)))
    c.add(_cap(1.0, ok_stream(9)))
    n = 50_000
    for i in range(1, n + 1):
        c.add(_cap(1.0 + i * 0.01, mutation(3, 9, i)))
    vs = c.parts["mcbp"].vbuckets[3]
    assert len(vs.series.points) < 2000 and len(vs.series.values()) <= 2001
    assert vs.series.values()[-1][1] == n  # the latest point is always kept
    assert len(c.timeline.items) <= 512 and len(c.timeline.vbuckets[3]) <= 512
    rep = c.report()
    assert rep["vbuckets"]["3"]["mutations"] == n and rep["vbuckets"]["3"]["gaps"]["count"] == 0
    assert sum(rep["timeline"]["items"]) == n


def test_decimated_series_even_stride():
    s = DecimatedSeries(cap=8)
    for i in range(100):
        s.add(float(i), i)
    pts = [v for _, v in s.points]
    stride = pts[1] - pts[0]
    assert all(b - a == stride for a, b in zip(pts, pts[1:]))
    assert s.values()[-1] == (99.0, 99)


def test_timeline_merges_bins():
    t = Timeline(max_bins=4, width=1.0)
    for ts in (0.0, 1.0, 2.0, 3.0):
        t.add_item(ts, 0)
    t.add_item(9.5, 1)
    assert t.width == 4.0 and t.items == [4, 0, 1] and t.vbuckets == {0: [4], 1: [0, 0, 1]}


def test_notes_are_counted():
    c = stats_collector()
    flow = ("10.0.0.1", 1, "10.0.0.2", 11210)
    c.add(_cap(5.0, stream_req(0, 1), flow))
    c.add(Note("gap", "100 bytes lost", 5.1, flow, "s2c", 0, 100))
    c.add(Note("capture", "record 3: truncated"))
    rep = c.report()
    conn = rep["connections"]["10.0.0.1:1-10.0.0.2:11210"]
    assert conn["capture_gaps"] == 1 and conn["lost_bytes"] == 100
    assert rep["capture"]["notes"] == {"capture": 1}


# -- terminal ---------------------------------------------------------------------------------


def _render(report, **kw):
    buf = StringIO()
    console = Console(file=buf, force_terminal=True, width=160, color_system="truecolor")
    render(report, console, **kw)
    return buf.getvalue()


def test_render_tables_and_sparkline(report):
    out = _render(report)
    assert "Connections" in out and "Vbuckets" in out and "Streams" in out
    assert "2: mem 1, disk+ckpt 1" in out  # vb 0's snapshots, types abbreviated
    assert "1 (3)" in out  # vb 0: one gap, 3 seqnos long
    assert "Items per second" in out
    assert any(ch in out for ch in "▁▂▃▄▅▆▇█")
    chart = out[out.index("Items per second"):]
    assert "total" in chart and "vb 0" in chart and "vb 2" in chart


def test_narrow_console_keeps_the_key_columns(report):
    buf = StringIO()
    render(report, Console(file=buf, width=60), chart=True)
    out = buf.getvalue()
    assert max(len(line) for line in out.splitlines()) <= 60
    vb_table = out[out.index("Vbuckets"):out.index("Streams")]
    assert "mut/del/exp" in vb_table and "5/1/1" in vb_table and "gaps" in vb_table
    assert "to end" not in vb_table  # dropped to fit


def test_chart_only_on_terminal_unless_asked(report):
    buf = StringIO()
    render(report, Console(file=buf, width=160))  # not a terminal
    assert "Items per second" not in buf.getvalue()
    buf = StringIO()
    render(report, Console(file=buf, width=160), chart=True)
    assert "Items per second" in buf.getvalue()


def test_no_raw_escape_from_capture(report):
    out = _render(report)
    assert "\x1b]" not in out and "\x07" not in out and "\x1b[2J" not in out
    # strings in a report from elsewhere (e.g. JSON) are escaped too
    evil = json.loads(report_json(report))
    evil["connections"][EVIL_KEY.decode("latin-1")] = evil["connections"].pop(LABEL_A)
    evil["vbuckets"]["0"]["end_reasons"] = {"\x1b[2J\x1b]0;x\x07": 1}
    evil["vbuckets"]["0"]["snapshots"]["by_type"] = {"[bold]\x1b[6n": 1}
    evil["streams"][0]["connection"] = "\x1b[2Jconn"
    evil["timeline"]["vbuckets"]["\x1b[2J"] = [5, 5]
    out = _render(evil)
    assert "\x1b]" not in out and "\x07" not in out and "\x1b[2J" not in out and "\x1b[6n" not in out
    assert "\\x1b[2J" in out and "[bold]" in out  # shown escaped, not interpreted as markup


def test_sparkline_levels():
    assert sparkline([0, 1, 2, 4, 8]) == " ▁▂▄█"
    assert sparkline([]) == ""
    assert sparkline([3, 3]) == "██"


# -- plot -------------------------------------------------------------------------------------


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_plot_png(tmp_path, collector, report):
    pytest.importorskip("matplotlib")
    from dcpinspect.engines.stats import plot

    out = plot(report, tmp_path / "stats.png")
    data = out.read_bytes()
    assert _png_size(data) == (1200, 800)
    assert len(data) > 10_000
    out2 = plot(collector, tmp_path / "small.png", width=640, height=480, dpi=80)
    assert _png_size(out2.read_bytes()) == (640, 480)


def test_plot_odd_labels(tmp_path, report):
    pytest.importorskip("matplotlib")
    from dcpinspect.engines.stats import plot

    odd = json.loads(report_json(report))
    odd["series"]["$\x1b[2J$"] = odd["series"].pop("0")  # would be mathtext, and an escape
    data = plot(odd, tmp_path / "odd.png", title="a $title$ \x1b[2J").read_bytes()
    assert _png_size(data) == (1200, 800)


def test_plot_empty_report(tmp_path):
    pytest.importorskip("matplotlib")
    from dcpinspect.engines.stats import plot

    data = plot(stats_collector().report(), tmp_path / "empty.png").read_bytes()
    assert _png_size(data) == (1200, 800)
