"""The stats collector in parts: collectors fed with disjoint sets of a capture's
connections (as worker processes or Spark executors would be) merge into the report one
collector fed with everything gives; a collector pickles and comes back the same."""

from __future__ import annotations

import pickle
from io import StringIO

import pytest
from rich.console import Console

import dcpgen
import tapgen
from dcpinspect.engines.records import keyed_items
from dcpinspect.engines.stats import render
from dcpinspect.outputs.stats import report_json
from dcpinspect.sessions.bounded import DecimatedSeries, Timeline
from dcpinspect.sessions.captured import Note
from dcpinspect.families import stats_collector
from dcpinspect.sessions.stats import StatsCollector
from dcpinspect.sources.capture import read_records
from test_stats import write_capture as write_two_connection_capture


def _tap_conversation() -> list[tuple[str, bytes]]:
    tap = tapgen.Tap().connect()
    tap.backfill(3, 12, interval=4)
    tap.backfill(4, 6, interval=3, answer=False)  # ACKs left unanswered
    tap.takeover([3, 4])
    return tap.frames


@pytest.fixture(scope="module")
def many_connections(tmp_path_factory):
    """Six connections of one capture, interleaved: two busy DCP connections with
    collections, OSO and stream-ids, a sync-replication one, one captured after its stream
    requests, and two TAP connections (dealt to different parts)."""
    flows = [dcpgen.busy_collections_connection(400, seed=21).frames,
             dcpgen.busy_sync_replication_connection(400, seed=22).frames,
             dcpgen.mid_conversation_connection(300, seed=23),
             _tap_conversation(),
             _tap_conversation()[:-6],
             dcpgen.busy_collections_connection(300, seed=24).frames]
    return dcpgen.write_flows(flows, tmp_path_factory.mktemp("parts") / "many.pcap", midstream=[2], chunk=16)


@pytest.fixture(scope="module")
def two_connections(tmp_path_factory):
    return write_two_connection_capture(tmp_path_factory.mktemp("parts") / "two.pcap")


def _keyed(path, part=0, parts=1):
    return keyed_items(read_records(path), part, parts)


def _whole(path) -> StatsCollector:
    return stats_collector().feed_keyed(_keyed(path))


def _parts(path, parts: int, t0: float | None) -> list[StatsCollector]:
    """One collector a worker's share of the connections (``engines.records.Owners`` deals them)."""
    return [stats_collector(t0=t0).feed_keyed(_keyed(path, part, parts)) for part in range(parts)]


def _table(report) -> str:
    out = StringIO()
    render(report, Console(file=out, width=160, color_system=None), chart=True)
    return out.getvalue()


@pytest.mark.parametrize("capture", ["two_connections", "many_connections"])
def test_parts_merge_into_the_whole(capture, request):
    path = request.getfixturevalue(capture)
    whole = _whole(path)
    a, b = _parts(path, 2, whole.timeline.t0)
    assert a.connections and b.connections and not set(a.connections) & set(b.connections)
    expected = whole.report()
    merged = a.merge(b).report()
    assert report_json(merged) == report_json(expected)  # same numbers, in the same order
    assert _table(merged) == _table(expected)
    a, b = _parts(path, 2, whole.timeline.t0)
    assert report_json(b.merge(a).report()) == report_json(expected)


def test_parts_merge_in_any_order(many_connections):
    whole = _whole(many_connections)
    parts = _parts(many_connections, 3, whole.timeline.t0)
    assert all(p.connections for p in parts)
    merged = parts[2].merge(parts[0]).merge(parts[1])
    assert report_json(merged.report()) == report_json(whole.report())


def test_the_many_connections_capture_has_what_the_merge_must_order(many_connections):
    """The capture has what a merge must put back in order: streams of several connections
    interleaved, vbuckets fed by several connections, TAP connections in both parts."""
    rep = _whole(many_connections).report()
    assert rep["capture"]["connections"] == 6 and len(rep["tap"]) == 2
    assert any(v["connections"] > 1 for v in rep["vbuckets"].values())
    owners = [s["connection"] for s in rep["streams"]]
    runs = [o for i, o in enumerate(owners) if i == 0 or owners[i - 1] != o]
    assert len(runs) > len(set(owners))  # a connection's streams come in more than one run
    assert any(s["adopted"] for s in rep["streams"])
    a, b = _parts(many_connections, 2, None)
    assert a.parts["mcbp"]._tap and b.parts["mcbp"]._tap


def test_parts_without_a_shared_t0_keep_every_count(many_connections):
    """Timelines that start at different times merge by bin start times: the bins differ
    from one collector's, but no item or byte is lost, and everything else is the same."""
    whole = _whole(many_connections).report()
    a, b = _parts(many_connections, 2, None)
    assert a.timeline.t0 != b.timeline.t0
    merged = a.merge(b).report()
    assert sum(merged["timeline"]["items"]) == sum(whole["timeline"]["items"]) == whole["capture"]["items"]
    assert sum(merged["timeline"]["bytes"]) == sum(whole["timeline"]["bytes"])
    for vb, bins in whole["timeline"]["vbuckets"].items():
        assert sum(merged["timeline"]["vbuckets"][vb]) == sum(bins)
    for part in ("capture", "connections", "vbuckets", "streams", "tap", "series"):
        assert merged[part] == whole[part]


def test_capture_notes_keep_the_order_they_came_in():
    """Notes about the capture itself, counted by two parts, come out in the order their
    kinds first came (what the report's ``notes`` dict keeps)."""
    notes = [(2, Note("skipped", "not TCP")), (5, Note("capture", "record 5: truncated")),
             (7, Note("skipped", "not TCP")), (9, Note("encrypted", "TLS"))]
    whole = stats_collector().feed_keyed(notes)
    late, early = stats_collector().feed_keyed(notes[1:2] + notes[3:]), stats_collector().feed_keyed(notes[::2])
    merged = late.merge(early).report()["capture"]["notes"]
    assert list(merged.items()) == list(whole.report()["capture"]["notes"].items())
    assert list(merged) == ["skipped", "capture", "encrypted"]


def test_a_collector_pickles(many_connections):
    c = _whole(many_connections)
    back = pickle.loads(pickle.dumps(c))
    assert report_json(back.report()) == report_json(c.report())


def test_pickled_parts_merge_into_the_whole(two_connections):
    """What an executor sends its driver: a pickled collector."""
    whole = _whole(two_connections)
    a, b = (pickle.loads(pickle.dumps(p)) for p in _parts(two_connections, 2, whole.timeline.t0))
    assert report_json(a.merge(b).report()) == report_json(whole.report())


def test_an_unpickled_collector_goes_on_counting(two_connections):
    items = list(_keyed(two_connections))
    whole = stats_collector().feed_keyed(items)
    half = stats_collector().feed_keyed(items[:len(items) // 2])
    resumed = pickle.loads(pickle.dumps(half)).feed_keyed(items[len(items) // 2:])
    assert report_json(resumed.report()) == report_json(whole.report())


# -- the building blocks -------------------------------------------------------------------


def test_series_merge_is_exact_while_no_part_thinned():
    """Two halves under the cap, together over it: the merged series is the one a single
    series fed with every point in key order keeps."""
    whole, odd, even = DecimatedSeries(cap=16), DecimatedSeries(cap=16), DecimatedSeries(cap=16)
    for k in range(25):
        whole.add(k * 0.5, k, k)
        (odd if k % 2 else even).add(k * 0.5, k, k)
    assert odd.stride == even.stride == 1 and whole.stride > 1
    even.merge(odd)
    assert even.values() == whole.values() and even.stride == whole.stride and even.seen == whole.seen


def test_series_merge_after_thinning_stays_bounded_and_keeps_the_latest():
    a, b = DecimatedSeries(cap=8), DecimatedSeries(cap=8)
    for k in range(0, 100, 2):
        a.add(float(k), k, k)
    for k in range(1, 60, 2):
        b.add(float(k), k, k)
    a.merge(b)
    assert len(a.points) < 8 and a.values()[-1] == (98.0, 98) and a.seen == 80
    keys = a.keys
    assert keys == sorted(keys)


def test_timeline_merge_with_a_shared_t0_is_exact():
    """Bins of different widths over the same start: the merged bins are those of one
    timeline fed with every time."""
    times_a = [0.0, 0.5, 1.0, 30.0]  # widens to 16 s bins
    times_b = [0.25, 2.0, 3.5]  # stays at 1 s bins
    whole, a, b = (Timeline(max_bins=4, width=1.0, t0=0.0) for _ in range(3))
    for ts in times_a:
        whole.add_item(ts, 1)
        a.add_item(ts, 1)
    for ts in times_b:
        whole.add_item(ts, 2)
        b.add_item(ts, 2)
    assert a.width != b.width
    a.merge(b)
    assert a.json() == whole.json()
    a, b = (Timeline(max_bins=4, width=1.0, t0=0.0) for _ in range(2))
    for ts in times_a:
        a.add_item(ts, 1)
    for ts in times_b:
        b.add_item(ts, 2)
    b.merge(a)  # the narrower one takes in the wider
    assert b.json() == whole.json()


def test_frames_flushed_at_the_end_take_their_connections_time():
    """The engine stamps frames it flushes at the end of input 0.0: each takes the latest
    time of its own connection, which a part knows without the others."""
    from dcpinspect.families.mcbp.messages.frame import decode_frame
    from dcpinspect.sessions.captured import Captured
    from test_stats import mutation

    early, late = ("10.0.0.1", 1, "10.0.0.2", 11210), ("10.0.0.3", 2, "10.0.0.2", 11210)
    frames = [(1, Captured(10.0, early, "s2c", decode_frame(mutation(0, 1, 1)), 1)),
              (2, Captured(11.0, early, "s2c", decode_frame(mutation(0, 1, 2)), 2)),
              (3, Captured(20.0, late, "s2c", decode_frame(mutation(1, 2, 1)), 3)),
              (9, Captured(0.0, early, "s2c", decode_frame(mutation(0, 1, 3)), 3))]
    whole = stats_collector().feed_keyed(frames)
    rep = whole.report()
    assert rep["connections"]["10.0.0.1:1-10.0.0.2:11210"]["first_ts"] == 10.0
    assert rep["connections"]["10.0.0.1:1-10.0.0.2:11210"]["last_ts"] == 11.0
    assert rep["vbuckets"]["0"]["last_item_ts"] == 11.0
    parts = (stats_collector(t0=10.0).feed_keyed(f for f in frames if f[1].flow == flow) for flow in (early, late))
    merged = next(parts).merge(next(parts))
    assert report_json(merged.report()) == report_json(rep)


def test_timeline_merge_from_another_start_places_each_bin_at_its_start():
    """Other bins are counted at their start times on these bins, which widen first when
    the last of them falls past the last bin: 2.5 and 3.5 go to [2, 4), 4.5 and 5.5 to [4, 6)."""
    mine, other = Timeline(max_bins=4, width=1.0, t0=0.0), Timeline(max_bins=4, width=1.0, t0=2.5)
    mine.add_bytes(0.5, 10)
    other.add_bytes(2.6, 1)
    other.add_bytes(5.6, 2)
    other.add_item(5.7, 7)
    assert other.bytes == [1, 0, 0, 2]
    mine.merge(other)
    assert (mine.width, mine.t0) == (2.0, 0.0)
    assert mine.json()["bytes"] == [10, 1, 2]
    assert mine.json()["items"] == [0, 0, 1]
    assert mine.json()["vbuckets"] == {"7": [0, 0, 1]}
