"""The families' correlator seam: a family written outside dcpinspect, whose connections
make sense only together, gets one capture-level object its sessions report to; the engine
concludes it at the end of the capture, and over worker processes merges the workers'
before concluding, so that ``-j2`` finds what one process finds. No Dragonfly in sight."""

from __future__ import annotations

import sys
import types
from functools import partial

import pytest

from dcpinspect import families as families_module
from dcpinspect.engines.reading import sink_run
from dcpinspect.engines.sinks import make_sink
from dcpinspect.families import Family
from dcpinspect.findings import Finding
from dcpinspect.sessions.decoded import Decoded
from dcpinspect.transport import synth

from test_families import LineFramer, LineSniffer

PORT = 7790


class Rooms:
    """Which connections joined which room (``JOIN <room> <size>``): a room is judged once
    the capture is over, by all its members, wherever they were decoded."""

    def __init__(self) -> None:
        self.sizes: dict[str, int] = {}
        self.members: dict[str, set] = {}

    def join(self, flow, room: str, size: int) -> None:
        self.sizes[room] = size
        self.members.setdefault(room, set()).add(flow)

    def merge(self, other: "Rooms") -> None:
        self.sizes.update(other.sizes)
        for room, flows in other.members.items():
            self.members.setdefault(room, set()).update(flows)

    def finish(self) -> list[tuple]:
        out = []
        for room in sorted(self.sizes):
            members = sorted(self.members[room])
            if len(members) < self.sizes[room]:
                out.append((members[-1], Finding("room-short", "EINVAL", "error",
                                                 f"room {room}: {len(members)} of {self.sizes[room]} joined")))
        return out


class Line(Decoded):
    """A line of the toy protocol, as the outputs read a record."""

    __slots__ = ("offset", "size", "text", "findings")
    protocol = name = "room"

    def __init__(self, offset: int, text: bytes) -> None:
        self.offset, self.size, self.text, self.findings = offset, len(text), text, []

    def json_rows(self) -> list:
        return [{"kind": "frame", "protocol": "room", "line": self.text.decode()}]

    def table_rows(self) -> list:
        return [("line", self.text.decode())]


class RoomSession:
    def __init__(self, options, seen_from_start: bool, rooms: Rooms | None = None, flow=None) -> None:
        self.rooms, self.flow = rooms, flow

    def decode(self, raw, direction, ts, index):
        words = raw.data.split()
        if words[:1] == [b"JOIN"] and len(words) == 3 and self.rooms is not None:
            self.rooms.join(self.flow, words[1].decode(), int(words[2]))
        return Line(raw.offset, raw.data)

    def gap(self) -> None:
        pass

    def finish(self) -> list:
        return []


@pytest.fixture
def room_family(monkeypatch):
    module = types.ModuleType("toy.room_family")
    module.FAMILY = Family("room", frozenset({PORT}), frozenset(), LineSniffer, LineFramer, RoomSession,
                           correlator=Rooms)
    monkeypatch.setitem(sys.modules, "toy.room_family", module)
    monkeypatch.setattr(families_module, "PACKAGES", ("mcbp", "toy.room_family"))
    return module.FAMILY


def _capture(tmp_path, joins) -> str:
    frames = []
    for n, line in enumerate(joins):
        frames += synth.tcp_conversation([("c2s", line), ("s2c", b"OK\n")], client=("10.0.0.1", 41000 + n),
                                         server=("10.0.0.2", PORT))
    path = tmp_path / "rooms.pcap"
    synth.write_pcap(path, frames)
    return str(path)


def _findings(path, jobs: int):
    payloads, results = sink_run(path, jobs, partial(make_sink, "findings", path, True), {})
    rows = [row for batch in payloads for row in batch]
    return [(r.flow, r.finding.rule, r.finding.message) for r in rows], sum(results())


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_a_correlator_concludes_alike_however_the_capture_is_split(tmp_path, room_family, jobs):
    path = _capture(tmp_path, [b"JOIN a 3\n", b"JOIN b 2\n", b"JOIN a 3\n", b"JOIN b 2\n", b"JOIN c 2\n"])
    got, frames = _findings(path, jobs)
    assert frames == 10
    assert got == [("10.0.0.1:41002-10.0.0.2:7790", "room-short", "room a: 2 of 3 joined"),
                   ("10.0.0.1:41004-10.0.0.2:7790", "room-short", "room c: 1 of 2 joined")]


def test_a_family_without_a_correlator_gets_the_two_argument_session(tmp_path, monkeypatch):
    module = types.ModuleType("toy.room_family")
    module.FAMILY = Family("room", frozenset({PORT}), frozenset(), LineSniffer, LineFramer,
                           lambda options, seen: RoomSession(options, seen))
    monkeypatch.setitem(sys.modules, "toy.room_family", module)
    monkeypatch.setattr(families_module, "PACKAGES", ("mcbp", "toy.room_family"))
    got, frames = _findings(_capture(tmp_path, [b"JOIN a 3\n"]), 2)
    assert got == [] and frames == 2
