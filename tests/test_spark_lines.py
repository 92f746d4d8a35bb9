"""The statistics of frames the jsonl lane wrote as lines: counted from what the lines carry
for them (a fixed frame's message, a stream run's packed frames), they are those of the
messages themselves, on captures where the lane takes most frames."""

from __future__ import annotations

import json
import struct
from collections import Counter
from pathlib import Path

import pytest

import dcpgen
from dcpinspect.engines.records import keyed_items
from dcpinspect.families import VALUES
from dcpinspect.families.mcbp.messages.opcodes import OP
from dcpinspect.families.mcbp.stats import RUN_FRAME, StreamRun
from dcpinspect.sessions.captured import Captured, Lines
from dcpinspect.families import stats_collector
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


def report(path: Path, lane: bool) -> tuple[dict, Counter]:
    """The statistics report of a capture, and how many frames came as lines, by what the
    lines carry for the statistics."""
    stats = stats_collector()
    lined: Counter = Counter()
    for key, item in keyed_items(read_records(path), lane=lane, detail=VALUES):
        stats.add(item, key)
        if type(item) is Lines:
            lined[type(item.counted).__name__] += item.count
    return json.loads(json.dumps(stats.report(), default=str)), lined


def test_statistics_of_lines_are_those_of_the_messages(captures):
    for path in captures:
        want, none = report(path, lane=False)
        got, _ = report(path, lane=True)
        assert not none
        assert got == want, path
    lined = report(captures[0], lane=True)[1]  # the comparison covers both kinds of lines
    assert lined["StreamRun"] > 400 and lined["Captured"] > 100, lined


def test_a_run_carries_each_of_its_lines_frames(captures):
    """Each frame a run packs is its line's: opcode, size, stream id and seqnos."""
    seen = 0
    for key, item in keyed_items(read_records(captures[0]), lane=True, detail=VALUES):
        if type(item) is not Lines:
            continue
        lines = [json.loads(line) for line in item.text.split(b"\n")[:-1]]
        assert len(lines) == item.count
        counted = item.counted
        if type(counted) is Captured:
            assert item.count == 1 and counted.msg.opcode == lines[0]["opcode"]
            assert (counted.ts, counted.number, counted.msg.size) == (lines[0]["ts"], lines[0]["frame"],
                                                                      lines[0]["length"])
            continue
        frames = list(struct.iter_unpack(RUN_FRAME, counted.frames))
        assert len(frames) == item.count
        for rec, (op, size, sid, a, b, c) in zip(lines, frames):
            assert (rec["ts"], rec["frame"], rec["opaque"], rec["vbucket"]) == (
                counted.ts, counted.number, counted.opaque, counted.vbucket)
            assert (op, size, sid) == (rec["opcode"], rec["length"], rec.get("stream_id", -1))
            fields = rec["fields"]
            if op == OP.DCP_SNAPSHOT_MARKER:
                assert (a, b) == (fields["start_seqno"], fields["end_seqno"])
                seen += 1
            else:
                assert a == fields["by_seqno"]
                seen += 1
    assert seen > 400
