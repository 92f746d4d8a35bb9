"""Directions the pcap reader follows in C (engines/tails.py, ``_lane.take_records``)
decode exactly as the record-by-record path decodes them.

Every comparison reads the same capture twice in this process, following and not, and
compares every item (frames as jsonl records with their numbers, times, flows and
directions; notes about gaps, skips and the end of input), the totals, and the reader's
record counts. The captures are real TCP conversations written by ``dcpgen``/``synth``:
interleaved connections, ones joined mid-stream, and hypothesis-made ones whose segments
are dropped, duplicated, reordered, split small, closed by FIN, RST or not at all, and
whose sequence numbers wrap.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dcpgen
from dcpgen import Dcp
from dcpinspect.families.mcbp import lane as lane_module
from dcpinspect.engines.records import ReadStats, keyed_items
from dcpinspect.engines.sinks import run_sink
from dcpinspect.engines.sinks import JsonlSink
from dcpinspect.families import FIELDS, VALUES
from dcpinspect.sources.capture import read_records
from dcpinspect.transport import synth

pytestmark = pytest.mark.skipif(not lane_module.available(), reason="built without the C lane")

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def run(path: Path, follow: bool, **kw) -> tuple[bytes, object, tuple, int]:
    """(jsonl of every item, the sink's totals, the read stats, records taken in C)."""
    records = read_records(path)
    stats = ReadStats()
    sink = JsonlSink()
    keyed = keyed_items(records, stats=stats, follow=follow, **kw)
    text = b"".join(line for _, line in run_sink(sink, keyed))
    tally = sink.result()
    return (text, (tally.frames, sorted(tally.severities.items())),
            (stats.records, stats.skipped_records, sorted(stats.skip_reasons.items())), records.passed)


def same(path: Path, **kw) -> int:
    """Assert following prints what record by record prints; return the records taken in C."""
    fast, fast_totals, fast_stats, taken = run(path, True, **kw)
    slow, slow_totals, slow_stats, none = run(path, False, **kw)
    assert none == 0 or kw.get("parts", 1) > 1
    if fast != slow:
        for i, (a, b) in enumerate(zip(fast.split(b"\n"), slow.split(b"\n"))):
            assert a == b, f"line {i + 1} differs"
    assert fast == slow
    assert fast_totals == slow_totals
    assert fast_stats == slow_stats
    return taken


def records_in(path: Path) -> int:
    return sum(1 for _ in read_records(path))


def conversation(n: int = 0) -> Dcp:
    d = Dcp().handshake(stream_ids=n % 2 == 1)
    p = d.stream(10 + n, sid=1 if n % 2 else None)
    for _ in range(4):
        p.snapshot(12, kind="mutation")
    p.snapshot(3, kind="deletion")
    d.noop()
    p.end()
    return d


@pytest.fixture(scope="module")
def busy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tails")
    flows = [dcpgen.busy_collections_connection(400, seed=s).frames for s in (1, 2)]
    flows += [conversation(n).frames for n in range(4)]
    flows.append(dcpgen.mid_conversation_connection(200))
    return dcpgen.write_flows(flows, root / "busy.pcap", midstream=[len(flows) - 1], chunk=3)


@pytest.mark.parametrize("detail", [VALUES, FIELDS], ids=["lean", "detail"])
@pytest.mark.parametrize("lane", [True, False])
def test_interleaved_connections_print_the_same(busy, detail, lane):
    taken = same(busy, detail=detail, lane=lane)
    assert taken > records_in(busy) // 2  # most records never became Records


@pytest.mark.parametrize("part", [0, 1])
def test_each_worker_part_prints_the_same(busy, part):
    assert same(busy, part=part, parts=2, detail=VALUES, lane=True) > 0


def test_flow_eviction_settles_what_was_taken(busy):
    """Seven connections over a table of three: flows are evicted (and end with what was
    counted for them) while their records are being taken in C."""
    assert same(busy, max_flows=3, detail=VALUES) > 0


def test_gzipped_capture_cut_inside_a_record(busy, tmp_path):
    """Read through the decompressor, and cut short: the last records are reported alike."""
    import gzip

    data = busy.read_bytes()
    path = tmp_path / "cut.pcap.gz"
    path.write_bytes(gzip.compress(data[: len(data) * 3 // 5 + 11]))
    assert same(path) > 0


@pytest.mark.parametrize("name", ["dcp-session.pcap", "memcached-binary.pcap", "dcp-lossy.pcapng"])
def test_samples_print_the_same(name):
    same(SAMPLES / name)


def test_bench_style_connections(tmp_path):
    """One write a packet for the set-up frames, ACKs after each: what a consumer sees."""
    frames = synth.tcp_conversation(conversation(1).frames, mss=200, acks=True)
    path = tmp_path / "acks.pcap"
    synth.write_pcap(path, frames)
    taken = same(path)
    assert taken >= len(frames) - 8  # all but the handshake, the first bytes and the close


# -- hypothesis: impaired conversations --------------------------------------------------

def flow_params() -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({
        "mss": st.sampled_from([64, 301, 1460]), "split": st.integers(1, 3),
        "isn": st.tuples(st.integers(0, 2**32 - 1), st.sampled_from([0, 2**32 - 700, 12345])),
        "handshake": st.booleans(), "close": st.sampled_from(["fin", "rst", None]), "acks": st.booleans(),
        "drop": st.sets(st.integers(0, 30), max_size=3), "duplicate": st.sets(st.integers(0, 30), max_size=3),
        "reorder": st.sets(st.integers(0, 30), max_size=3)})


def impaired_flow(n: int, p: dict) -> list[bytes]:
    segs = synth.tcp_segments(conversation(n).frames, mss=p["mss"], split=p["split"], isn=p["isn"],
                              handshake=p["handshake"], close=p["close"], acks=p["acks"])
    segs = synth.impair(segs, drop=p["drop"], duplicate=p["duplicate"], reorder=p["reorder"])
    return synth.frames(segs, client=("10.0.0.1", 40000 + n))


@given(st.lists(flow_params(), min_size=1, max_size=3), st.integers(0, 2**16),
       st.sampled_from([{}, {"part": 1, "parts": 2}, {"max_flows": 2}]))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
def test_impaired_conversations_print_the_same(tmp_path, params, seed, kw):
    flows = [impaired_flow(n, p) for n, p in enumerate(params)]
    rng = random.Random(seed)
    packets, heads = [], [0] * len(flows)
    while any(h < len(f) for h, f in zip(heads, flows)):
        n = rng.randrange(len(flows))
        step = rng.randint(1, 4)
        packets += flows[n][heads[n]:heads[n] + step]
        heads[n] += step
    path = tmp_path / f"impaired-{seed}.pcap"
    synth.write_pcap(path, packets, dt=1e-5)
    same(path, **kw)


# -- the C walk itself -------------------------------------------------------------------

def test_garbage_never_crashes_the_walk():
    from dcpinspect.sources._pcap import take_records

    rng = random.Random(7)
    packet = synth.frames(synth.tcp_segments([("c2s", b"\x80" * 40)], handshake=False, close=None,
                                             acks=False))[0]
    raw = packet[26:38]
    for _ in range(3000):
        record = bytearray(16 + len(packet))
        record[8:12] = len(packet).to_bytes(4, "little")
        record[12:16] = len(packet).to_bytes(4, "little")
        record[16:] = packet
        for _ in range(rng.randint(0, 6)):
            record[rng.randrange(len(record))] = rng.randrange(256)
        data = bytes(record) * rng.randint(1, 3)
        tail = [rng.randrange(2**32), bytearray(), rng.randint(0, 200), 0, 0, 0.0, -1, -1]
        pos, taken, hit = take_records(data, rng.randint(0, 20), 16, True, 1 << 20, None, None,
                                       {raw: tail}, 0, 1e-6)
        assert 0 <= pos <= len(data) and 0 <= taken <= 3
        assert len(tail[1]) <= 40 * 3
        assert hit is None or hit is tail


def test_a_malformed_tail_is_refused():
    from dcpinspect.sources._pcap import take_records

    packet = synth.frames(synth.tcp_segments([("c2s", b"x")], handshake=False, close=None, acks=False))[0]
    record = len(packet).to_bytes(4, "little") * 4 + packet
    with pytest.raises(TypeError):
        take_records(record, 0, 16, True, 1 << 20, None, None, {packet[26:38]: [0, 1]}, 0, 1e-6)
    with pytest.raises(TypeError):
        take_records(record, 0, 16, True, 1 << 20, None, None, {packet[26:38]: [0, b"", 0, 0, 0, 0.0, -1, -1]}, 0, 1e-6)
