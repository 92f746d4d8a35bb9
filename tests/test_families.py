"""The protocol-family seam: a family written outside dcpinspect plugs in by its package
alone, and the engine takes connections to it by port and by sniffing, beside MCBP, with
no change to the engine."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from dcpinspect import families as families_module
from dcpinspect.engines.records import decode_records
from dcpinspect.families import Family, SnapshotFiles, families
from dcpinspect.findings import Finding
from dcpinspect.framing.framer import Framer, RawFrame, Skipped
from dcpinspect.sessions.captured import Captured, Note
from dcpinspect.sources.capture import read_records
from dcpinspect.transport import synth

from frames import request, response

LINE_PORT = 7777


class LineFramer(Framer):
    """Frames end with a newline; a gap passes over the rest of the line it broke."""

    __slots__ = ("_buf", "_base", "_lost")

    def __init__(self, synced: bool, runs: bool) -> None:
        Framer.__init__(self)
        self._buf = bytearray()
        self._base = 0
        self._lost = not synced

    def feed(self, data: bytes) -> list:
        self._buf += data
        out = []
        while True:
            end = self._buf.find(b"\n")
            if end < 0:
                return out
            line = bytes(self._buf[:end + 1])
            del self._buf[:end + 1]
            if self._lost:
                out.append(Skipped(self._base, len(line), "after lost bytes"))
                self._lost = False
            else:
                out.append(RawFrame(self._base, line))
            self._base += len(line)

    def gap(self, missing: int) -> list:
        out = [Skipped(self._base, len(self._buf), "before lost bytes")] if self._buf else []
        self._base += len(self._buf) + missing
        self._buf.clear()
        self._lost = True
        return out

    def close(self, data: bytes = b"") -> list:
        out = self.feed(data)
        if self._buf:
            out.append(RawFrame(self._base, bytes(self._buf), truncated=True))
            self._base += len(self._buf)
            self._buf.clear()
        return out

    @property
    def buffered(self) -> int:
        return len(self._buf)

    @property
    def buffer(self) -> bytearray:
        return self._buf

    @property
    def wanted(self) -> int:
        return 0


class LineSniffer:
    def __init__(self, midstream: bool) -> None:
        self.data = bytearray()

    def __len__(self) -> int:
        return len(self.data)

    def add(self, direction: str, data: bytes) -> bool | None:
        if direction != "c2s":  # the client speaks first
            return None
        self.data += data
        if len(self.data) < 6:
            return None
        return self.data.startswith(b"HELLO ")


class LineSession:
    """Counts lines; a connection that never says BYE is judged at its end."""

    def __init__(self, options, seen_from_start: bool) -> None:
        self.lines: list[bytes] = []
        self.gaps = 0

    def decode(self, raw: RawFrame, direction, ts, index):
        self.lines.append(raw.data)
        return ("line", direction, raw.offset, raw.data)

    def gap(self) -> None:
        self.gaps += 1

    def finish(self) -> list[Finding]:
        if any(line.startswith(b"BYE") for line in self.lines):
            return []
        return [Finding("no-bye", "EINVAL", "error", f"{len(self.lines)} lines and no BYE", None, "toy §1")]


@pytest.fixture
def line_family(monkeypatch):
    module = types.ModuleType("toy.line_family")
    module.FAMILY = Family("line", frozenset({LINE_PORT}), frozenset({7778}), LineSniffer,
                           LineFramer, LineSession)
    monkeypatch.setitem(sys.modules, "toy.line_family", module)
    monkeypatch.setattr(families_module, "PACKAGES", ("mcbp", "toy.line_family"))
    return module.FAMILY


def _capture(tmp_path, conversations) -> list:
    frames = []
    for n, (port, messages, close) in enumerate(conversations):
        frames += synth.tcp_conversation(messages, client=("10.0.0.1", 40000 + n), server=("10.0.0.2", port),
                                         close=close)
    path = tmp_path / "mixed.pcap"
    synth.write_pcap(path, frames)
    return list(decode_records(read_records(path)))


def _lines(items, port):
    return [i.msg for i in items if isinstance(i, Captured) and i.flow[3] == port]


def test_the_families_listed_are_the_ones_the_engine_uses(line_family):
    assert [f.name for f in families()] == ["mcbp", "line"]


def test_a_family_plugs_in_beside_mcbp_by_port_and_by_sniffing(tmp_path, line_family):
    mcbp = [("c2s", request(0x0A, opaque=7)), ("s2c", response(0x0A, opaque=7))]
    chat = [("c2s", b"HELLO there\n"), ("s2c", b"HI\n"), ("c2s", b"BYE\n")]
    items = _capture(tmp_path, [(11210, mcbp, "fin"), (LINE_PORT, chat, "fin"), (9999, chat, "fin"),
                                (LINE_PORT, [("c2s", b"HELLO\nno end")], "fin"), (7778, chat, "fin")])
    # MCBP on its port, as ever
    assert [m.opcode for m in _lines(items, 11210)] == [0x0A, 0x0A]
    # the line family on its port, and on a port nobody claims, by its sniffer
    for port in (LINE_PORT, 9999):
        assert _lines(items, port)[:3] == [("line", "c2s", 0, b"HELLO there\n"), ("line", "s2c", 0, b"HI\n"),
                                           ("line", "c2s", 12, b"BYE\n")]
    # its session's end-of-connection rule reaches the output as a finding note
    ended = [i for i in items if isinstance(i, Note) and i.kind == "finding"]
    assert [(n.flow[1], n.finding.rule) for n in ended] == [(40003, "no-bye")]
    assert _lines(items, LINE_PORT)[-1] == ("line", "c2s", 6, b"no end")
    # its encrypted port is noted, not decoded
    assert [i.message for i in items if isinstance(i, Note) and i.kind == "encrypted"] == [
        "port 7778 carries TLS: not decoded"]
    assert _lines(items, 7778) == []


def test_without_the_family_its_traffic_is_not_decoded(tmp_path):
    chat = [("c2s", b"HELLO there\n"), ("s2c", b"HI\n")]
    items = _capture(tmp_path, [(LINE_PORT, chat, "fin")])
    assert _lines(items, LINE_PORT) == []


def test_a_gap_reaches_the_family_framer_and_session(tmp_path, line_family):
    chat = [("c2s", b"HELLO there\n"), ("c2s", b"lost line\n"), ("c2s", b"after\n"), ("c2s", b"BYE\n")]
    frames = synth.tcp_conversation(chat, client=("10.0.0.1", 40000), server=("10.0.0.2", LINE_PORT), drop=[1])
    path = tmp_path / "gap.pcap"
    synth.write_pcap(path, frames)
    items = list(decode_records(read_records(path)))
    # the family's framer resynchronises its way (a line after lost bytes may be a tail)
    notes = [(i.kind, i.offset, i.size) for i in items if isinstance(i, Note)]
    assert notes == [("gap", 12, 10), ("skipped", 22, 6)]
    assert [m[3] for m in _lines(items, LINE_PORT)] == [b"HELLO there\n", b"BYE\n"]


def test_snapshot_files_go_to_the_family_that_tells_them(tmp_path, monkeypatch):
    """``engines/snapshots.py`` hands each file to the family whose ``snapshots.is_snapshot`` says it
    is one (RDB files to the Redis family), and names no family itself."""
    from dcpinspect.engines import snapshots
    from dcpinspect.engines.inputs import Unusable

    seen = []

    def show(contents, fmt, key, offset, shown):
        seen.append((Path(contents.name).name, fmt))
        return 2 if b"BAD" in contents.read() else -1

    module = types.ModuleType("toy.lines_snapshots")
    module.FAMILY = Family("lines", snapshots=SnapshotFiles(lambda head: head.startswith(b"LINES"), show))
    monkeypatch.setitem(sys.modules, "toy.lines_snapshots", module)
    monkeypatch.setattr(families_module, "PACKAGES", ("mcbp", "redis", "toy.lines_snapshots"))
    good, bad = tmp_path / "good.lines", tmp_path / "bad.lines"
    good.write_bytes(b"LINES\nfine\n")
    bad.write_bytes(b"LINES\nBAD\n")
    assert snapshots.snapshot_files([good], "summary") is False
    assert snapshots.snapshot_files([good, bad], "jsonl") is True
    assert seen == [("good.lines", "summary"), ("good.lines", "jsonl"), ("bad.lines", "jsonl")]
    # a file no family tells is left to the first that reads snapshots, which says why not
    other = tmp_path / "other.bin"
    other.write_bytes(b"nothing of the kind")
    with pytest.raises(Unusable, match="not an RDB file"):
        snapshots.snapshot_files([other], "table")


def test_decode_as_names_any_family(tmp_path):
    """``--decode-as PORT=FAMILY`` takes a family by its name or an alias: Redis
    replication on a port nobody claims, MCBP on another, with the sniffing off."""
    import subprocess

    import rdbgen

    payload = rdbgen.rdb(b"\xfe\x00" + rdbgen.key(0, b"k", rdbgen.string(b"v")))
    redis = [("c2s", b"*1\r\n$4\r\nPING\r\n"), ("s2c", b"+PONG\r\n"), ("c2s", b"*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n"),
             ("s2c", b"+FULLRESYNC " + b"a" * 40 + b" 0\r\n"), ("s2c", b"$%d\r\n" % len(payload) + payload),
             ("s2c", b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\nb\r\n")]
    mcbp = [("c2s", request(0x0A, opaque=7)), ("s2c", response(0x0A, opaque=7))]
    frames = (synth.tcp_conversation(redis, client=("10.0.0.1", 40000), server=("10.0.0.2", 7001))
              + synth.tcp_conversation(mcbp, client=("10.0.0.1", 40001), server=("10.0.0.2", 7002)))
    path = tmp_path / "two.pcap"
    synth.write_pcap(path, frames)

    def rows(*args):
        proc = subprocess.run([sys.executable, "-m", "dcpinspect", "decode", "-f", "jsonl", "--no-heuristic",
                               *args, str(path)], capture_output=True, text=True)
        assert proc.returncode in (0, 1), proc.stderr
        import json
        return [json.loads(line) for line in proc.stdout.splitlines()]

    assert [r for r in rows() if r["kind"] != "undecoded"] == []
    assert [(r["flow"], r["server_port"], r["bytes_c2s"] > 0, r["bytes_s2c"] > 0) for r in rows()] == [
        ("10.0.0.1:40000-10.0.0.2:7001", 7001, True, True), ("10.0.0.1:40001-10.0.0.2:7002", 7002, True, True)]
    got = rows("--decode-as", "7001=resp", "--decode-as", "7002=DCP")
    protocols = {r.get("protocol") for r in got}
    assert {"resp", "rdb", "mcbp"} <= protocols, protocols
    assert any(r.get("command") == ["SET", "a", "b"] for r in got)
    bad = subprocess.run([sys.executable, "-m", "dcpinspect", "decode", "--decode-as", "7001=http", str(path)],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "is no protocol family (they are mcbp, redis)" in bad.stderr
