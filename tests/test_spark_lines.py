"""The statistics of frames the jsonl lane wrote as lines: counted from each line by the
message it was written from (the MCBP family's ``line_message``), they are those of the
messages themselves, on captures where the lane takes most frames."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import dcpgen
from dcpinspect.engines.files import keyed_items
from dcpinspect.families.mcbp.tables import LineMessage, line_message
from dcpinspect.families import VALUES
from dcpinspect.sessions.captured import Captured, Lines
from dcpinspect.sessions.stats import StatsCollector
from dcpinspect.sources.capture import read_records

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


@pytest.fixture(scope="module")
def captures(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("lines")
    flows = [dcpgen.busy_collections_connection(400, seed=s).frames for s in (11, 12)]
    flows += [dcpgen.busy_sync_replication_connection(300).frames, dcpgen.violating_connection(2).frames]
    busy = dcpgen.write_flows(flows, root / "busy.pcap", chunk=5)
    return [busy, SAMPLES / "dcp-session.pcap", SAMPLES / "dcp-lossy.pcapng"]


def report(path: Path, lane: bool) -> tuple[dict, int]:
    """The statistics report of a capture, and how many frames came as lines."""
    stats = StatsCollector()
    lined = 0
    for key, item in keyed_items(read_records(path), lane=lane, detail=VALUES):
        if type(item) is Lines:
            for line in item.text.split(b"\n")[:-1]:
                ts, number, msg = line_message(line)
                stats.add(Captured(ts, item.flow, item.direction, msg, number), key)
                lined += 1
        else:
            stats.add(item, key)
    return json.loads(json.dumps(stats.report(), default=str)), lined


def test_statistics_of_lines_are_those_of_the_messages(captures):
    for path in captures:
        want, _ = report(path, lane=False)
        got, lined = report(path, lane=True)
        assert got == want, path
    assert report(captures[0], lane=True)[1] > 500  # the comparison covers the lane's lines


def test_a_line_read_without_its_value_is_read_as_a_whole(captures):
    """The value's text is left unparsed; what the statistics read is the same."""
    for key, item in keyed_items(read_records(captures[0]), lane=True, detail=VALUES):
        if type(item) is not Lines:
            continue
        for line in item.text.split(b"\n")[:-1]:
            ts, number, msg = line_message(line)
            whole = LineMessage(json.loads(line))
            rec = json.loads(line)
            assert (ts, number) == (rec["ts"], rec["frame"])
            for name in LineMessage.__slots__:
                if name not in ("fields", "values"):
                    assert getattr(msg, name) == getattr(whole, name), name
            for name in ("fields", "values"):
                assert {k: v for k, v in getattr(whole, name).items() if k not in ("value", "value_hex")} == {
                    k: v for k, v in getattr(msg, name).items() if k not in ("value", "value_hex")}
