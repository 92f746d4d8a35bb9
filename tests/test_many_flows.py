"""A capture of very many connections, each holding one partial frame.

:func:`partial_frame_flows` writes the hostile capture: connections that each send one
segment, without a handshake, carrying a 24-byte MCBP header that claims a large body and
the first few bytes of that body, and nothing more. Every connection's splitter waits for
a frame that never comes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import servers

from frames import REPO, request
from dcpinspect.transport import synth

SERVER = ("10.255.0.1", 11210)


def client_of(n: int) -> tuple[str, int]:
    """The n-th connection's client: a distinct address and port for each n."""
    return f"10.{(n >> 16) & 0xFF}.{(n >> 8) & 0xFF}.{n & 0xFF}", 20000 + n % 40000


def partial_frame(n: int, body: int = 1 << 20, held: int = 8) -> bytes:
    """A DCP_MUTATION header claiming ``body`` bytes, then ``held`` bytes of that body."""
    head = request(0x57, extras=bytes(31), key=b"k%d" % n, vbucket=n % 1024, opaque=n,
                   body_length=body)
    return head[:24 + held]


def partial_frame_flows(path: str | os.PathLike, count: int, body: int = 1 << 20, held: int = 8,
                        fmt: str = "pcap") -> Path:
    """``count`` connections, one data segment each (client to server, mid-stream: no
    handshake), each the start of a frame whose claimed body never arrives."""

    def packets():
        for n in range(count):
            seg = synth.TcpSeg("c2s", 1000 + n, 1, synth.PSH | synth.ACK, partial_frame(n, body, held), 0)
            yield synth.frame(seg, client_of(n), SERVER, checksum=False)

    synth.write_pcap(path, packets(), "ether", fmt=fmt, dt=1e-5)
    return Path(path)


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``dcpinspect ARGS`` on this work tree, with ``env``."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.run([sys.executable, "-m", "dcpinspect", *args], capture_output=True, env=env,
                          timeout=600)


def items(path: Path, **kw) -> list:
    from dcpinspect.engines.records import keyed_items
    from dcpinspect.families import VALUES
    from dcpinspect.sources.capture import read_records

    kw.setdefault("detail", VALUES)
    return [item for _, item in keyed_items(read_records(path), **kw)]


def truncated_flows(got: list) -> set:
    """The connections whose one frame came out truncated, with the finding that says so."""
    from dcpinspect.engines.connections import Captured

    out = set()
    for item in got:
        if isinstance(item, Captured):
            msg = item.msg
            assert msg.truncated and len(msg.data) == 24 + 8, item
            assert [f.rule for f in msg.findings] == ["truncated"]
            out.add(item.flow)
    return out


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> Path:
    return partial_frame_flows(tmp_path_factory.mktemp("flows") / "partial.pcap", 3000)


@pytest.mark.parametrize("kw", [{}, {"follow": False}, {"lane": True}, {"part": 1, "parts": 2}],
                         ids=["follow", "records", "lane", "part"])
def test_every_partial_frame_is_reported_truncated(capture, kw):
    got = items(capture, **kw)
    flows = truncated_flows(got)
    want = 3000 if "parts" not in kw else 1500
    assert len(flows) == want
    assert not [i for i in got if getattr(i, "kind", None) == "capture"]  # under every cap: no note


def test_held_bytes_over_the_cap_are_given_up_with_a_note(tmp_path):
    """A cap of 4 KiB for 600 connections holding 32 bytes each: partial frames are given up
    (reported truncated, as at the end of the capture), a note says so, and a connection
    whose held frame was given up still decodes the whole frames that follow."""
    from dcpinspect.engines.connections import Captured

    head, count = partial_frame(10_000, body=40, held=8), 600
    rest = request(0x57, extras=bytes(31), key=b"k10000", opaque=10_000, body_length=40)[32:]
    tail = request(0x5C, opaque=7)  # a whole DCP_NOOP after the rest of the given-up frame
    packets = [synth.frame(synth.TcpSeg("c2s", 1000 + n, 1, synth.PSH | synth.ACK, partial_frame(n), 0),
                           client_of(n), SERVER, checksum=False) for n in range(count)]
    packets.insert(0, synth.frame(synth.TcpSeg("c2s", 5, 1, synth.PSH | synth.ACK, head, 0),
                                  client_of(count), SERVER, checksum=False))
    packets.append(synth.frame(synth.TcpSeg("c2s", 5 + len(head), 1, synth.PSH | synth.ACK, rest + tail, 0),
                               client_of(count), SERVER, checksum=False))
    path = tmp_path / "held.pcap"
    synth.write_pcap(path, packets)
    got = items(path, max_held=4096)
    notes = [i for i in got if getattr(i, "kind", None) == "capture"]
    assert notes and all("held bytes over the cap" in n.message and "DCPINSPECT_MAX_HELD" in n.message
                         for n in notes)
    assert sum(n.size for n in notes) >= (count * 32 - 4096) // 2
    survivor = [i for i in got if isinstance(i, Captured) and i.flow[:2] == client_of(count)]
    assert [i.msg.name for i in survivor] == ["DCP_MUTATION", "DCP_NOOP"]
    assert survivor[0].msg.truncated and not survivor[1].msg.truncated and not survivor[1].msg.findings
    assert len(truncated_flows([i for i in got if i not in survivor])) == count


def test_held_cap_and_flow_cap_from_the_environment(capture):
    """The caps are raised (or lowered) by environment variables; the notes name them."""
    env = {**os.environ, "DCPINSPECT_MAX_HELD": "16K", "DCPINSPECT_MAX_FLOWS": "500"}
    proc = cli("decode", str(capture), "-f", "jsonl", "-j1", env=env)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    frames = [r for r in lines if r["kind"] == "frame"]
    notes = [r["message"] for r in lines if r["kind"] == "capture"]
    assert len(frames) == 3000 and all(r["truncated"] for r in frames)
    assert len({r["flow"] for r in frames}) == 3000
    assert any("more than 500 connections at once" in m and "DCPINSPECT_MAX_FLOWS" in m for m in notes)
    bad = cli("decode", str(capture), "-f", "jsonl", env={**os.environ, "DCPINSPECT_MAX_HELD": "lots"})
    assert bad.returncode == 2 and "DCPINSPECT_MAX_HELD" in bad.stderr.decode()


#: Peak memory allowed for a run over 20,000 idle connections: the interpreter with its
#: imports takes about 27 MB, and each connection's state (reassembler, splitter, frame
#: numbering, decoder) about 1.2 KB, so some 51-57 MB is measured; before per-flow state was
#: made compact (5 KB a connection, and every connection's last items held at once at the
#: end) it was 132 MB for decode and 200 MB for validate.
PEAK_20K_FLOWS_MB = 90


@pytest.fixture(scope="module")
def capture_20k(tmp_path_factory) -> Path:
    return partial_frame_flows(tmp_path_factory.mktemp("flows20k") / "partial-20k.pcap", 20_000)


@pytest.mark.parametrize("command", [["decode", "-f", "jsonl", "-j1"], ["decode", "-f", "summary", "-j1"],
                                     ["validate", "-j1"]], ids=lambda c: "-".join(c[:2]))
def test_peak_memory_of_20000_idle_connections(capture_20k, command):
    """Measured in a process of its own, whose only child is the command (RUSAGE_CHILDREN
    is the largest child a process has waited for)."""
    proc, peak_kb = servers.peak_rss(command[0], capture_20k, *command[1:])
    code = proc.returncode
    assert code in (0, 1), proc.stderr
    assert peak_kb < PEAK_20K_FLOWS_MB * 1024, f"peak {peak_kb // 1024} MB"


def test_idle_connection_state_is_compact(capture):
    """What a connection holding one partial frame keeps, measured by tracemalloc as the
    growth between 1,000 and 3,000 such connections: reassembler flow and directions,
    flow tables, decoder, side, splitter and its 32 held bytes, frame marks."""
    import gc
    import tracemalloc

    from dcpinspect.engines.connections import CaptureDecoder
    from dcpinspect.families import VALUES
    from dcpinspect.sources.capture import read_records
    from dcpinspect.transport.packet import parse_record

    def held(n: int) -> int:
        dec = CaptureDecoder(detail=VALUES)
        gc.collect()
        tracemalloc.start()
        try:
            for i, rec in enumerate(read_records(capture)):
                if i == n:
                    break
                for _ in dec.feed(parse_record(rec)):
                    pass
            gc.collect()
            return tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()

    per_flow = (held(3000) - held(1000)) / 2000
    # measured 907 B on its own: the record of flow and decoder together (296 B with its
    # key), the side with its splitter (144 B) and buffer (56 B + the 32 held), the one
    # direction that carried bytes (112 B), the flow table's entry (55 B), and the objects
    # the flow's numbers and client address are (about 170 B, the address's 85 B shared
    # by the connections of one client); 5.2 KB before per-flow state was made compact
    assert per_flow < 960, per_flow


@pytest.mark.parametrize("seed", range(6))
def test_many_rows_print_as_rich_prints_them(seed):
    """validate's table of many findings is laid out without rich measuring every row, and
    reads byte for byte as rich's own table: rows that fit, rows that wrap, wide characters."""
    import io
    import random

    from rich.table import Table

    from dcpinspect.outputs.console import make_console
    from dcpinspect.outputs.rows import RICH_ROWS, print_rows

    rng = random.Random(seed)
    words = ["a", "vb", "snapshot", "marker", "max_marker_version=2.2", "10.0.0.1:50000-10.0.0.2:11210",
             "x" * 40, "\u00fc", "\u6f22\u5b57"]
    kinds = rng.choice([3, 5, 7, 9])  # the longer words make rows wrap at 160 columns
    head = ("frame", "time", "flow", "vb", "sid", "severity", "class", "rule", "message")
    rows = [tuple(" ".join(rng.choice(words[:kinds]) for _ in range(rng.randint(0, 4))) for _ in head)
            for _ in range(RICH_ROWS + 1 + rng.randint(0, 300))]

    def printed(draw) -> str:
        stream = io.StringIO()
        draw(make_console(stream))
        return stream.getvalue()

    def by_rich(console) -> None:
        table = Table(*head, box=None)
        for r in rows:
            table.add_row(*r)
        console.print(table)

    assert printed(lambda c: print_rows(c, head, rows)) == printed(by_rich)
