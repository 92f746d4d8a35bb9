"""Several worker processes over one capture print exactly what one process prints.

The captures are real TCP conversations written by ``dcpgen``/``synth`` (several connections
interleaved a few packets at a time, one joined mid-conversation, violations that show up
while streaming and at the end of input), the shipped samples (a lossy pcapng, a real
memcached capture), and a capture cut inside a record.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dcpgen
import servers
from dcpgen import Dcp
from dcpinspect.engines.connections import Captured
from dcpinspect.engines.records import Owners, keyed_items
from dcpinspect.sources.capture import read_records

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


@pytest.fixture(scope="module")
def busy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("parallel")
    flows = [dcpgen.busy_collections_connection(600, seed=s).frames for s in (1, 2, 3)]
    flows += [dcpgen.violating_connection(n).frames for n in range(4)]
    flows.append(dcpgen.mid_conversation_connection(300))
    return dcpgen.write_flows(flows, root / "busy.pcap", midstream=[len(flows) - 1], chunk=3)


@pytest.fixture(scope="module")
def cut(busy, tmp_path_factory) -> Path:
    """The busy capture cut short inside a record."""
    data = busy.read_bytes()
    path = tmp_path_factory.mktemp("parallel-cut") / "cut.pcap"
    path.write_bytes(data[: len(data) * 2 // 3 + 7])
    return path


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(servers.dcpinspect_argv() + [*map(str, args)], capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def captures(busy, cut):
    return [busy, cut, SAMPLES / "dcp-lossy.pcapng", SAMPLES / "memcached-binary.pcap", SAMPLES / "dcp-session.pcap"]


# -- the partition function and the keyed items (no processes) ---------------------------------

def test_owners_agree_both_ways_and_deal_connections_in_turn():
    owners = Owners(3)
    got = [owners.of("10.0.0.1", 50000 + n, "10.0.0.2", 11210) for n in range(7)]
    assert got == [0, 1, 2, 0, 1, 2, 0]
    assert [owners.of("10.0.0.2", 11210, "10.0.0.1", 50000 + n) for n in range(7)] == got
    assert owners.of("10.0.0.1", 50003, "10.0.0.2", 11210) == 0  # remembered, not dealt again


@pytest.mark.parametrize("parts", [2, 3, 5])
def test_parts_merged_by_key_are_the_single_run(busy, parts):
    whole = list(keyed_items(read_records(busy)))
    pieces = [list(keyed_items(read_records(busy), part, parts)) for part in range(parts)]
    flows = [{x.flow for _, x in items if isinstance(x, Captured)} for items in pieces]
    assert max(map(len, flows)) - min(map(len, flows)) <= 1  # connections dealt evenly
    merged = sorted((key, p, i) for p, items in enumerate(pieces) for i, (key, _) in enumerate(items))
    got = [pieces[p][i][1] for _, p, i in merged]
    assert [_ident(x) for x in got] == [_ident(x) for _, x in whole]
    assert sum(map(len, flows)) == len(set().union(*flows))  # a connection lives in one part


def _ident(item):
    if isinstance(item, Captured):
        return ("frame", item.flow, item.direction, item.msg.offset, item.number,
                tuple(f.rule for f in item.msg.findings))
    return (item.kind, item.flow, item.direction, item.offset, item.message)


def test_busy_capture_has_what_the_comparison_needs(busy):
    """The comparison below means something: streaming findings, end-of-input findings,
    several connections, frames numbered by packet (several frames to a packet)."""
    items = [x for _, x in keyed_items(read_records(busy))]
    frames = [x for x in items if isinstance(x, Captured)]
    rules = Counter(f.rule for x in frames for f in x.msg.findings)
    late = Counter(x.finding.rule for x in items if not isinstance(x, Captured) and x.finding is not None)
    assert rules["seqno-regression"] == 4
    assert late["ack-unanswered"] == 4 and late["noop-unanswered"] == 4
    assert len({x.flow for x in frames}) == 8
    assert len({x.number for x in frames}) < len(frames)


# -- the commands: same bytes whatever the number of workers ----------------------------------

@pytest.mark.parametrize("fmt", ["jsonl", "summary"])
def test_decode_prints_the_same_with_any_number_of_workers(busy, cut, fmt):
    for path in captures(busy, cut):
        one = run("decode", path, "-f", fmt, "-j", "1")
        assert one.returncode == 0, one.stderr
        assert one.stdout
        for jobs in ("2", "3"):
            many = run("decode", path, "-f", fmt, "-j", jobs)
            assert (many.returncode, many.stdout, many.stderr) == (one.returncode, one.stdout, one.stderr), (path, jobs)


def test_cut_capture_reports_the_cut_once(busy, cut):
    many = run("decode", cut, "-f", "jsonl", "-j", "3")
    notes = [line for line in many.stdout.splitlines() if '"kind":"capture"' in line]
    assert len(notes) == 1 and "left in the file" in notes[0]


@pytest.mark.parametrize("fmt", ["jsonl", "table"])
def test_validate_prints_the_same_with_any_number_of_workers(busy, cut, fmt):
    for path in (busy, cut):
        one = run("validate", path, "-f", fmt, "-j", "1")
        many = run("validate", path, "-f", fmt, "-j", "3")
        assert one.returncode == 1
        assert (many.returncode, many.stdout, many.stderr) == (one.returncode, one.stdout, one.stderr)


def test_strict_exit_code_counts_every_worker(busy):
    assert run("decode", busy, "-f", "jsonl", "-j", "3", "--strict").returncode == 1
    assert run("decode", SAMPLES / "dcp-session.pcap", "-f", "jsonl", "-j", "3", "--strict").returncode == 0


def test_filters_apply_in_the_workers(busy):
    one = run("decode", busy, "-f", "jsonl", "-j", "1", "--opcode", "mutation", "--vbucket", "101")
    many = run("decode", busy, "-f", "jsonl", "-j", "2", "--opcode", "mutation", "--vbucket", "101")
    assert one.stdout == many.stdout
    assert one.stdout.count('"kind":"frame"') == 2  # the regression pair of vb 101


def test_unreadable_file_fails_cleanly_with_workers(tmp_path):
    bad = tmp_path / "not-a-capture.pcap"
    bad.write_bytes(b"this is not a capture file at all" * 10)
    r = run("decode", bad, "-f", "jsonl", "-j", "2")
    assert r.returncode == 2
    assert r.stderr.startswith("dcpinspect: ") and "Traceback" not in r.stderr


def test_progress_counts_what_the_workers_send(busy):
    from functools import partial

    from dcpinspect.engines.parallel import Partitioned
    from dcpinspect.engines.sinks import make_sink

    counts: list[int] = []
    reads: list[int] = []
    parts = Partitioned(busy, 2, partial(make_sink, "jsonl"),
                        progress=lambda n, read: (counts.append(n), reads.append(read)))
    lines = list(parts)
    assert counts and sum(counts) == len(lines)
    assert reads[-1] == -1  # the slowest worker has read all of the file
    assert all(0 <= r <= busy.stat().st_size for r in reads[:-1])
    assert sum(t.frames for t in parts.results) == sum(1 for is_frame, _ in lines if is_frame)


@pytest.fixture(scope="module")
def large(tmp_path_factory) -> Path:
    """One connection carrying 33 MiB of documents: long enough for a progress line."""
    d = Dcp().handshake()
    p = d.stream(7)
    body = b'{"pad":"' + b"x" * (56 * 1024) + b'"}'
    p.marker(1, 600)
    for seqno in range(1, 601):
        p.mutation(seqno=seqno, value=body)
    path = d.pcap(tmp_path_factory.mktemp("parallel-large") / "large.pcap")
    assert path.stat().st_size > 32 * 2**20
    return path


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_progress_line_on_a_terminal_is_cleared_before_the_summary(large, jobs):
    import os
    import pty

    master, slave = pty.openpty()
    try:
        r = subprocess.run(servers.dcpinspect_argv() + ["decode", str(large), "-f", "summary", "-j", jobs],
                           stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, timeout=300)
    finally:
        os.close(slave)
    err = servers.drain(master)
    assert r.returncode == 0
    # the bar of the whole file (how far it moves in a run this short is the machine's; that
    # it moves with every worker, test_progress_of_a_summary_moves_with_every_worker)
    assert b" of 34." in err and b"/s, " in err and b" left" in err and err.startswith(b"\r[")
    assert err.endswith(b"\r\x1b[K")  # the line is gone before the summary is printed
    assert b"items of" not in r.stdout and b" frames in 1 connections" in r.stdout


def test_progress_of_a_summary_moves_with_every_worker(large):
    """A summary's workers send no payloads, only progress: the caller hears every worker
    while it waits for the first, so the position (the slowest worker's) moves before the
    end, not only once the first worker is done."""
    from dcpinspect.engines.reading import sink_run
    from dcpinspect.engines.sinks import recipe
    from dcpinspect.engines.filters import frame_filter
    from dcpinspect.families import HEADERS

    size = large.stat().st_size
    heard: list[int] = []
    kw = dict(ports=set(), collections=None, detail=HEADERS)
    payloads, results = sink_run(large, 2, recipe("summary", frame_filter({}), None, False), kw,
                                 lambda items, read: heard.append(read))
    assert list(payloads) == []
    assert sum(r.tally.frames for r in results()) > 600
    assert any(0 < r < size for r in heard), heard
    # heard from both from the start: the position is 0 only until the second speaks
    # (were the second only read after the first ended, about half would be 0)
    assert heard.count(0) <= max(2, len(heard) // 4), heard


def test_quiet_workers_report_progress_now_and_then_not_per_item(busy):
    import time
    from functools import partial

    from dcpinspect.engines.parallel import TICK, Partitioned
    from dcpinspect.engines.sinks import make_sink

    counts: list[int] = []
    start = time.monotonic()
    parts = Partitioned(busy, 2, partial(make_sink, "summary"), progress=lambda n, read: counts.append(n))
    for _ in parts:
        pass
    elapsed = time.monotonic() - start
    frames = sum(p.summary.total_frames() for p in parts.results)
    assert counts and frames > 2000
    assert len(counts) <= 2 * (1 + elapsed / TICK)  # one at the start, then one every TICK seconds


def _running_on(path: Path) -> list[str]:
    """Command lines of live processes that name ``path`` (workers inherit their parent's)."""
    out = []
    for pid in filter(str.isdigit, __import__("os").listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(path) in cmd and "pytest" not in cmd:
            out.append(cmd)
    return out


def test_reader_going_away_ends_the_run_cleanly(large):
    """``dcpinspect decode ... | head -1``: exit 0, nothing on stderr, no worker left behind."""
    import time

    p = subprocess.Popen(servers.dcpinspect_argv() + ["decode", str(large), "-f", "jsonl", "-j", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert p.stdout.readline().startswith(b'{"kind":"frame"')
    p.stdout.close()
    assert p.wait(timeout=60) == 0
    assert p.stderr.read() == b""
    time.sleep(0.2)
    assert _running_on(large) == []


def test_interrupt_stops_workers_and_exits_130(large):
    import os
    import signal
    import threading
    import time

    # stdout is a pipe nobody reads: the run blocks on it, so the signal lands mid-run
    def as_from_a_terminal():
        # Ctrl-C as a shell delivers it, whatever this test process inherited or a library
        # in it set (a blocked or ignored SIGINT is inherited across exec)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    p = subprocess.Popen(servers.dcpinspect_argv() + ["decode", str(large), "-f", "jsonl", "-j", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                         start_new_session=True, preexec_fn=as_from_a_terminal)
    time.sleep(1.0)
    assert p.poll() is None
    os.killpg(p.pid, signal.SIGINT)  # Ctrl-C reaches the whole process group
    # the rest is read, not refused: a closed pipe is a reader going away (exit 0), which
    # must not race the interrupt
    drain = threading.Thread(target=p.stdout.read, daemon=True)
    drain.start()
    assert p.wait(timeout=60) == 130
    drain.join(10)
    p.stdout.close()
    assert b"Traceback" not in p.stderr.read()
    time.sleep(0.2)
    assert _running_on(large) == []


def test_merge_by_runs_is_heapq_merge():
    """The run-at-a-time merge gives what heapq.merge gives, ties in part order included."""
    import heapq
    import random

    from dcpinspect.engines.parallel import _merge

    rng = random.Random(7)
    for _ in range(300):
        parts = []
        for p in range(rng.randint(1, 4)):
            keys = sorted(rng.randint(0, 30) for _ in range(rng.randint(0, 40)))
            items = [(k, (p, i)) for i, k in enumerate(keys)]
            cuts = sorted(rng.sample(range(1, len(items)), k=min(3, max(0, len(items) - 1)))) if items else []
            batches = [items[a:b] for a, b in zip([0] + cuts, cuts + [len(items)]) if items[a:b]]
            parts.append(batches)
        streams = [iter([([k for k, _ in b], [v for _, v in b]) for b in batches]) for batches in parts]
        want = [v for _, v in heapq.merge(*[[x for b in batches for x in b] for batches in parts],
                                          key=lambda kv: kv[0])]
        assert list(_merge(streams)) == want


# -- the owner test on raw bytes ----------------------------------------------------------

def _plain_packet() -> bytes:
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether

    return bytes(Ether() / IP(src="10.1.2.3", dst="10.9.8.7") / TCP(sport=40001, dport=11210, seq=5) / (b"x" * 30))


def test_plain_tcp4_names_the_connection_parse_record_finds():
    from dcpinspect.transport.packet import plain_tcp4
    from dcpinspect.sources.capture import Record

    raw = plain_tcp4(Record(0.0, 1, _plain_packet(), 84, 0))
    assert raw == bytes([10, 1, 2, 3, 10, 9, 8, 7]) + (40001).to_bytes(2, "big") + (11210).to_bytes(2, "big")


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 255)), max_size=4), st.integers(0, 90),
       st.sampled_from([1, 1, 1, 113, 101]))
def test_plain_tcp4_only_for_records_parse_record_takes(flips, cut, linktype):
    """Whatever the bytes, a record the owner test names would parse to a Segment of exactly
    those addresses and ports: skipping other workers' records unparsed loses nothing."""
    from dcpinspect.transport.packet import plain_tcp4
    from dcpinspect.sources.capture import Record
    from dcpinspect.transport.packet import Segment, parse_record

    data = bytearray(_plain_packet())
    for at, value in flips:
        data[at] = value
    data = bytes(data[:len(data) - cut])
    rec = Record(0.0, linktype, data, len(data), 0)
    raw = plain_tcp4(rec)
    if raw is None:
        return
    seg = parse_record(rec)
    assert isinstance(seg, Segment) and seg.proto == "tcp"
    import ipaddress

    assert raw == (ipaddress.ip_address(seg.src).packed + ipaddress.ip_address(seg.dst).packed
                   + seg.sport.to_bytes(2, "big") + seg.dport.to_bytes(2, "big"))


@pytest.mark.skipif(not __import__("dcpinspect.families.mcbp.lane", fromlist=["available"]).available(),
                    reason="built without the C lane")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_lane_and_python_path_print_the_same(busy, cut, jobs):
    """The command as users run it, with the fast lane and without (DCPINSPECT_PURE=1)."""
    import os

    for path in captures(busy, cut):
        fast = run("decode", path, "-f", "jsonl", "-j", jobs)
        slow = subprocess.run(servers.dcpinspect_argv() + ["decode", str(path), "-f", "jsonl", "-j", jobs],
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                              env={**os.environ, "DCPINSPECT_PURE": "1"})
        assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr), path
        assert fast.stdout.count("\n") > 0


@pytest.mark.skipif(not __import__("dcpinspect.families.mcbp.lane", fromlist=["available"]).available(),
                    reason="built without the C lane")
def test_reader_passes_over_exactly_the_other_parts_records(busy):
    """The reader's C walk skips what plain_tcp4 and the owner table say belong elsewhere,
    and nothing else: the records it yields keep their numbers."""
    from dcpinspect.transport.packet import plain_tcp4

    everything = [r for r in read_records(busy) if hasattr(r, "data")]
    owners = {}
    for n, rec in enumerate(everything):
        raw = plain_tcp4(rec)
        if raw is not None and n % 5:  # known owners for most connections, not all
            owners.setdefault(raw, hash(raw) % 3)
    for part in range(3):
        records = read_records(busy)
        assert records.pass_over(owners, part)
        got = [(r.index, r.data) for r in records if hasattr(r, "data")]
        want = [(r.index, r.data) for r in everything
                if plain_tcp4(r) is None or owners.get(plain_tcp4(r), part) == part]
        assert got == want
        assert records.passed == len(everything) - len(want) > 0


def test_progress_counts_the_frames_a_run_of_lines_stands_for(busy):
    """With the lane, a payload may hold many lines: progress counts the frames."""
    from functools import partial

    from dcpinspect.engines.parallel import Partitioned
    from dcpinspect.engines.sinks import make_sink
    from dcpinspect.families import VALUES

    counts: list[int] = []
    parts = Partitioned(busy, 2, partial(make_sink, "jsonl"), progress=lambda n, read: counts.append(n),
                        detail=VALUES, lane=True)
    sizes = [line.count(b"\n") for _, line in parts]
    assert max(sizes) > 1  # runs of lines were made
    assert sum(counts) == sum(sizes)
