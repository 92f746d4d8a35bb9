"""Synthetic captures through the whole CLI: ``dcpinspect decode FILE… --format jsonl``.

The DCP conversation is ``samples/make_samples.py:dcp_session()`` (HELO with
collections, open, controls, stream request, marker, system event, mutations,
deletion, stream end), carried by ``dcpinspect.transport.synth`` over every link
type, with TCP impairments, several flows, odd ports and damaged files. What each
frame must decode to is computed here from the frame bytes themselves, not from the
decoder.
"""

from __future__ import annotations

import re
import struct
import sys
from collections import Counter, defaultdict
from pathlib import Path

import subprocess

import pytest

import servers
from dcpinspect.transport import synth

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "samples"))
from make_samples import dcp_session  # noqa: E402

CLIENT = ("10.0.0.1", 50000)
SERVER = ("10.0.0.2", 11210)
FLOW = "10.0.0.1:50000-10.0.0.2:11210"
CLIENT_OPCODES = (0x1F, 0x50, 0x53, 0x5D, 0x5E)  # the consumer's requests
REQUEST_MAGICS = (0x80, 0x08)
DOCUMENT_OPCODES = (0x57, 0x58, 0x59, 0x5A)  # keys carry the collection prefix (HELO negotiated it)
BOGUS_4GIB = struct.pack(">BBHBBHIIQ", 0x81, 0x00, 0, 0, 0, 0, 0xFFFFFFFF, 0x77, 0)


# --- building and judging -------------------------------------------------------------


def conversation(vb: int = 5, opaque: int = 0x1000) -> list[tuple[str, bytes]]:
    """dcp_session() frames with who sends each: the consumer (client) sends HELO, open,
    controls and the stream request; the producer answers and streams."""
    out = []
    for f in dcp_session(vb=vb, opaque=opaque):
        from_client = (f[1] in CLIENT_OPCODES) == (f[0] in REQUEST_MAGICS)
        out.append(("c2s" if from_client else "s2c", f))
    return out


def _uleb128(b: bytes) -> int:
    """Length of the unsigned LEB128 number at the start of ``b``."""
    for i, byte in enumerate(b):
        if not byte & 0x80:
            return i + 1
    raise ValueError("unterminated leb128")


def describe(f: bytes) -> tuple:
    """(length, magic, opcode, opaque, key text, vbucket or status) straight from the bytes."""
    magic, opcode = f[0], f[1]
    if magic in (0x08, 0x18):
        framing, keylen = f[2], f[3]
    else:
        framing, keylen = 0, int.from_bytes(f[2:4], "big")
    extlen = f[4]
    word = int.from_bytes(f[6:8], "big")
    opaque = int.from_bytes(f[12:16], "big")
    start = 24 + framing + extlen
    key = f[start:start + keylen]
    if key and opcode in DOCUMENT_OPCODES and magic in REQUEST_MAGICS:
        key = key[_uleb128(key):]
    return (len(f), magic, opcode, opaque, key.decode("utf-8", "backslashreplace"), word)


def expected(msgs: list[tuple[str, bytes]], skip: dict[str, int] | None = None) -> list[tuple]:
    """(direction, offset, length, magic, opcode, opaque, key, vbucket|status) per frame, in order;
    ``skip``: bytes of a direction's stream missing from the capture's start (offsets shift)."""
    pos = {"c2s": 0, "s2c": 0}
    out = []
    for d, f in msgs:
        out.append((d, pos[d] - (skip or {}).get(d, 0)) + describe(f))
        pos[d] += len(f)
    return out


def got(records: list[dict], flow: str | None = None) -> list[tuple]:
    return [(r["direction"], r["offset"], r["length"], r["magic"], r["opcode"], r["opaque"], r["key"],
             r["vbucket"] if "vbucket" in r else r["status"])
            for r in servers.frames_of(records) if flow is None or r["flow"] == flow]


def signature(records: list[dict], flow: bool = True) -> list[tuple]:
    """Everything dcpinspect says except timestamps and packet numbers (and, if asked, the flow
    label): what two captures of the same conversation must agree on."""
    drop = {"ts", "frame"} | (set() if flow else {"flow"})
    return [tuple(sorted((k, repr(v)) for k, v in r.items() if k not in drop)) for r in records]


def run_decode(paths, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``dcpinspect decode PATH… ARGS…`` as a subprocess (in ``cwd`` if given: short relative paths)."""
    paths = paths if isinstance(paths, list) else [paths]
    return subprocess.run(servers.dcpinspect_argv() + ["decode", *map(str, paths), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def decode(paths, *args: str, rc: int = 0) -> list[dict]:
    """``decode … --format jsonl`` parsed; the exit code is checked and no traceback allowed."""
    res = run_decode(paths, "--format", "jsonl", *args)
    assert "Traceback" not in res.stderr, res.stderr
    assert res.returncode == rc, res.stderr
    return servers.jsonl(res.stdout)


def write(path: Path, frames, linktype="ether", **kw) -> Path:
    synth.write_pcap(path, frames, linktype, **kw)
    return path


def no_errors(records: list[dict]) -> None:
    for r in servers.frames_of(records):
        assert [x for x in r["findings"] if x["severity"] == "error"] == [], r


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The conversation over Ethernet, decoded: the reference every variant must match."""
    path = write(tmp_path_factory.mktemp("clean") / "clean.pcap", synth.tcp_conversation(conversation()))
    return path, decode(path)


# --- the clean conversation -----------------------------------------------------------


def test_clean_conversation_decodes_exactly(clean):
    path, records = clean
    assert servers.notes_of(records) == []
    assert got(records) == expected(conversation())
    assert {r["flow"] for r in records} == {FLOW}
    no_errors(records)
    frames = servers.frames_of(records)
    required = {"kind", "ts", "flow", "direction", "protocol", "offset", "magic", "opcode", "opcode_name", "opaque",
                "cas", "datatype", "key", "fields", "findings"}
    for r in frames:
        assert required <= set(r), required - set(r)
        assert ("vbucket" in r) == (r["magic"] in REQUEST_MAGICS) != ("status" in r)
    # DCP frames are reported as such, keys without their collection prefix but with its id
    muts = [r for r in frames if r["opcode_name"] == "DCP_MUTATION"]
    assert [r["collection_id"] for r in muts] == [8, 8] and all(r["protocol"] == "dcp" for r in muts)
    assert all(r.get("stream_id") == 1 for r in frames if r["magic"] == 0x08)
    # the time of a frame is that of the record that completed it: record 3 is the first data segment
    assert frames[0]["ts"] == pytest.approx(1_700_000_000.0 + 3 * 1e-4, abs=1e-6)
    assert [r["ts"] for r in frames] == sorted(r["ts"] for r in frames)


LINKTYPES = ["ether", "vlan", "qinq", "sll", "sll2", "null", "loop", "raw", "raw4", "raw6", "ipv6"]


def _client(i: int, linktype: str) -> str:
    host = "[fd00::a00:1]" if linktype in ("raw6", "ipv6") else "10.0.0.1"
    return f"{host}:{50000 + i}"


@pytest.fixture(scope="module")
def per_link_type(tmp_path_factory):
    """One pcap per link type (client port 50000+i), all decoded by one ``decode FILE…`` command."""
    d = tmp_path_factory.mktemp("links")
    paths = [write(d / f"{lt}.pcap", synth.tcp_conversation(conversation(), client=("10.0.0.1", 50000 + i),
                                                             linktype=lt), lt)
             for i, lt in enumerate(LINKTYPES)]
    flows = defaultdict(list)
    for r in decode(paths):
        flows[r["flow"]].append(r)
    return flows


@pytest.mark.parametrize("linktype", LINKTYPES)
def test_every_link_type(per_link_type, clean, linktype):
    i = LINKTYPES.index(linktype)
    server = "[fd00::a00:2]:11210" if linktype in ("raw6", "ipv6") else "10.0.0.2:11210"
    records = per_link_type[f"{_client(i, linktype)}-{server}"]
    assert signature(records, flow=False) == signature(clean[1], flow=False)


@pytest.mark.parametrize("suffix", [".pcapng", ".pcapng.gz"])
def test_pcapng_one_interface_per_link_type(tmp_path, clean, suffix):
    """One pcapng with all link types as separate interfaces, one flow each, interleaved."""
    convs = {}
    for i, lt in enumerate(LINKTYPES):
        convs[lt] = synth.tcp_conversation(conversation(), client=("10.0.0.1", 50000 + i), linktype=lt)
    items = []
    for k in range(max(map(len, convs.values()))):
        for lt, frames in convs.items():
            if k < len(frames):
                items.append((1_700_000_000.0 + len(items) * 1e-4, frames[k], lt))
    path = write(tmp_path / f"all{suffix}", items, fmt="pcapng", nanos=True)
    if suffix.endswith(".gz"):
        assert path.read_bytes()[:2] == b"\x1f\x8b"
    records = decode(path)
    assert servers.notes_of(records) == []
    flows = defaultdict(list)
    for r in records:
        flows[r["flow"]].append(r)
    assert len(flows) == len(LINKTYPES)
    for i, lt in enumerate(LINKTYPES):
        label = next(f for f in flows if f.startswith(_client(i, lt) + "-"))
        assert signature(flows[label], flow=False) == signature(clean[1], flow=False), lt


def test_several_files_in_one_command(tmp_path, clean):
    a = write(tmp_path / "a.pcap", synth.tcp_conversation(conversation()))
    b = write(tmp_path / "b.pcapng", synth.tcp_conversation(conversation(vb=9, opaque=0x99), linktype="sll2"),
              "sll2", fmt="pcapng")
    records = decode([a, b])
    assert got(records) == expected(conversation()) + expected(conversation(vb=9, opaque=0x99))


# --- TCP impairments ------------------------------------------------------------------


def test_one_byte_segments_reordered_and_duplicated_decode_identically(tmp_path, clean):
    segs = synth.tcp_segments(conversation(), mss=1)
    n = sum(1 for s in segs if s.payload)
    assert n == sum(len(f) for _, f in conversation())
    impaired = synth.impair(segs, reorder=range(3, n, 7), duplicate=range(5, n, 11))
    assert [s.offset for s in impaired if s.payload] != sorted(s.offset for s in impaired if s.payload)
    records = decode(write(tmp_path / "impaired.pcap", synth.frames(impaired)))
    assert signature(records) == signature(clean[1])


def test_split_and_coalesced_frames_decode_identically(tmp_path, clean):
    """Frames cut in 3 parts of at most 17 bytes; and consecutive frames of one direction sent
    together, so that one segment carries several frames."""
    coalesced: list[tuple[str, bytes]] = []
    for d, f in conversation():
        if coalesced and coalesced[-1][0] == d:
            coalesced[-1] = (d, coalesced[-1][1] + f)
        else:
            coalesced.append((d, f))
    assert len(coalesced) < len(conversation())
    for name, msgs, kw in (("split3", conversation(), dict(split=3, mss=17)),
                           ("coalesced", coalesced, dict(acks=False))):
        records = decode(write(tmp_path / f"{name}.pcap", synth.tcp_conversation(msgs, **kw)))
        assert signature(records) == signature(clean[1]), name


def test_sequence_numbers_wrapping_at_2_32(tmp_path, clean):
    isn = (2**32 - 100, 2**32 - 300)
    segs = synth.tcp_segments(conversation(), mss=50, isn=isn)
    seqs = {d: [s.seq for s in segs if s.direction == d and s.payload] for d in ("c2s", "s2c")}
    for d, start in zip(("c2s", "s2c"), isn):
        assert seqs[d][0] > start and min(seqs[d]) < 1000  # the wrap happens inside the data
    records = decode(write(tmp_path / "wrap.pcap", synth.frames(segs)))
    assert signature(records) == signature(clean[1])


def _data_segment(segs, direction: str, inside: tuple[int, int]) -> int:
    """Index (among data segments) of the first one of ``direction`` starting inside [a, b)."""
    data = [s for s in segs if s.payload]
    return next(i for i, s in enumerate(data) if s.direction == direction and inside[0] <= s.offset < inside[1])


@pytest.mark.parametrize("where", ["mid-frame", "whole-frame"])
def test_dropped_segment_gives_a_gap_and_decoding_resyncs(tmp_path, where):
    msgs = conversation()
    exp = expected(msgs)
    mut = next(e for e in exp if e[4] == 0x57)  # the first mutation (s2c)
    start, end = mut[1], mut[1] + mut[2]
    if where == "mid-frame":
        segs = synth.tcp_segments(msgs, mss=40)
        k = _data_segment(segs, "s2c", (start + 1, end))
    else:
        segs = synth.tcp_segments(msgs, mss=1460)
        k = _data_segment(segs, "s2c", (start, start + 1))
    lost = [s for s in segs if s.payload][k]
    records = decode(write(tmp_path / "drop.pcap", synth.frames(synth.impair(segs, drop=[k]))))
    gaps = servers.notes_of(records, "gap")
    assert [(g["flow"], g["direction"], g["offset"], g["length"]) for g in gaps] == \
        [(FLOW, "s2c", lost.offset, len(lost.payload))]
    assert "bytes lost" in gaps[0]["message"]
    mine = got(records)
    # everything but the damaged frame decodes, exactly, in order: the splitter resyncs
    assert [e for e in mine if e[:2] != ("s2c", start)] == [e for e in exp if e != mut]
    damaged = [r for r in servers.frames_of(records) if r["direction"] == "s2c" and r["offset"] == start]
    if where == "whole-frame":
        assert damaged == [] and servers.notes_of(records, "skipped") == []
    else:
        # what is left of it comes out truncated and/or skipped, never as a complete frame
        assert all(r["truncated"] for r in damaged)
        covered = sum(r["length"] for r in damaged) + sum(
            n["length"] for n in servers.notes_of(records, "skipped")) + len(lost.payload)
        assert covered == mut[2]
        assert all(start <= n["offset"] < end for n in servers.notes_of(records, "skipped"))
    keys_after = [r["key"] for r in servers.frames_of(records) if r["direction"] == "s2c" and r["offset"] >= end]
    assert keys_after == ["order::1002", "order::0999", ""]


def test_capture_starting_mid_stream(tmp_path):
    """No handshake, and each direction's first segment starts inside a frame."""
    msgs = conversation()
    exp = expected(msgs)
    ctl = next(e for e in exp if e[0] == "c2s" and e[6] == "enable_stream_id")
    marker = next(e for e in exp if e[4] == 0x56)
    segs = synth.tcp_segments(msgs, mss=20, handshake=False)
    data = [s for s in segs if s.payload]
    first_c = next(s for s in data if s.direction == "c2s" and s.offset > ctl[1])
    first_s = next(s for s in data if s.direction == "s2c" and s.offset > marker[1] + 24)
    skip = {"c2s": first_c.offset, "s2c": first_s.offset}
    start = segs.index(first_c)
    keep = [s for i, s in enumerate(segs) if i >= start and (not s.payload or s.offset >= skip[s.direction])]
    records = decode(write(tmp_path / "mid.pcap", synth.frames(keep)))
    # every frame that starts inside the capture decodes, at offsets counted from its first byte
    want = [e for e in expected(msgs, skip) if e[1] >= 0]
    mine = got(records)
    for d in ("c2s", "s2c"):  # per direction: a frame found while resyncing waits for the next header
        assert [e for e in mine if e[0] == d] == [e for e in want if e[0] == d]
    assert [e[4] for e in want if e[0] == "s2c"] == [0x5F, 0x57, 0x57, 0x58, 0x55]
    assert [e[4] for e in want if e[0] == "c2s"] == [0x53]
    # the partial frames were skipped: from the first byte up to the first whole frame
    skipped = defaultdict(int)
    for n in servers.notes_of(records, "skipped"):
        assert n["offset"] >= 0
        skipped[n["direction"]] += n["length"]
    first = {d: min(e[1] for e in want if e[0] == d) for d in ("c2s", "s2c")}
    assert first["c2s"] > 0 and first["s2c"] > 24
    assert dict(skipped) == first
    assert not servers.notes_of(records, "gap")
    no_errors(records)


def test_fifty_concurrent_flows_interleaved(tmp_path):
    convs, exp = [], {}
    for i in range(50):
        client = (f"10.1.{i // 200}.{i % 200 + 1}", 40000 + i)
        msgs = conversation(vb=i, opaque=0x2000 + i)
        convs.append(synth.tcp_conversation(msgs, client=client, server=("10.0.9.9", 11210), mss=64,
                                            isn=(1000 * i + 7, 2**32 - 77 * i - 1)))
        exp[f"{client[0]}:{client[1]}-10.0.9.9:11210"] = expected(msgs)
    frames = []
    for k in range(max(map(len, convs))):
        for c in convs:
            if k < len(c):
                frames.append(c[k])
    records = decode(write(tmp_path / "flows.pcap", frames))
    assert servers.notes_of(records) == []
    for label, want in exp.items():
        assert got(records, label) == want, label
    assert sum(len(v) for v in exp.values()) == len(records)
    # the output interleaves flows in capture order (not grouped per flow)
    assert len({r["flow"] for r in records[:50]}) >= 25


# --- damaged frames, odd ports --------------------------------------------------------


@pytest.mark.parametrize("same_segment", [False, True], ids=["own-segment", "with-next-frame"])
def test_four_gib_body_length_is_skipped_and_decoding_goes_on(tmp_path, same_segment):
    msgs = conversation()
    i = next(n for n, (_, f) in enumerate(msgs) if f[1] == 0x57)
    if same_segment:
        bad = msgs[:i] + [("s2c", BOGUS_4GIB + msgs[i][1])] + msgs[i + 1:]
    else:
        bad = msgs[:i] + [("s2c", BOGUS_4GIB)] + msgs[i:]
    records = decode(write(tmp_path / "huge.pcap", synth.tcp_conversation(bad)))
    at = expected(msgs)[i][1]
    skipped = servers.notes_of(records, "skipped")
    assert skipped and skipped[0]["offset"] == at and skipped[0]["direction"] == "s2c"
    assert "4294967295" in skipped[0]["message"]  # the reason names the body length
    assert sum(n["length"] for n in skipped) == 24
    assert all(at <= n["offset"] < at + 24 for n in skipped)
    want = [e if e[0] == "c2s" or e[1] < at else e[:1] + (e[1] + 24,) + e[2:] for e in expected(msgs)]
    assert got(records) == want


def test_skipped_range_does_not_depend_on_segmentation(tmp_path):
    msgs = conversation()
    i = next(n for n, (_, f) in enumerate(msgs) if f[1] == 0x57)
    bad = msgs[:i] + [("s2c", BOGUS_4GIB + msgs[i][1])] + msgs[i + 1:]
    ref = decode(write(tmp_path / "mss1460.pcap", synth.tcp_conversation(bad)))
    tiny = decode(write(tmp_path / "mss1.pcap", synth.tcp_conversation(bad, mss=1)))
    assert [(n["offset"], n["length"], n["message"]) for n in servers.notes_of(ref, "skipped")] == \
        [(expected(msgs)[i][1], 24, "not a frame (body length 4294967295 exceeds 31457280)")]
    assert signature(tiny) == signature(ref)


def test_tls_port_is_noted_not_decoded(tmp_path):
    path = write(tmp_path / "tls.pcap", synth.tcp_conversation(conversation(), server=("10.0.0.2", 11207)))
    records = decode(path)
    assert servers.frames_of(records) == []
    (note,) = records
    assert note["kind"] == "encrypted" and note["flow"] == "10.0.0.1:50000-10.0.0.2:11207"
    assert "11207" in note["message"] and "TLS" in note["message"]
    res = run_decode(path)  # table: the note goes to stderr
    assert res.returncode == 0 and "encrypted" in res.stderr and "0 frames" in res.stdout


def test_non_default_port_heuristic_and_explicit_ports(tmp_path, clean):
    server = ("10.0.0.2", 12345)
    path = write(tmp_path / "odd.pcap", synth.tcp_conversation(conversation(), server=server))
    ref = signature(clean[1], flow=False)
    assert signature(decode(path), flow=False) == ref  # found by the heuristic
    (note,) = decode(path, "--no-heuristic")  # not decoded, and said so
    assert note["kind"] == "undecoded" and note["server_port"] == 12345 and note["bytes_c2s"] > 0
    assert signature(decode(path, "--no-heuristic", "--port", "12345"), flow=False) == ref
    assert signature(decode(path, "--no-heuristic", "--decode-as", "12345=mcbp"), flow=False) == ref
    bad = run_decode(path, "--decode-as", "12345=http")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


def test_heuristic_leaves_other_protocols_alone(tmp_path):
    http = [("c2s", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 3), ("s2c", b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")]
    path = write(tmp_path / "http.pcap", synth.tcp_conversation(http, server=("10.0.0.2", 8080)))
    assert [(r["kind"], r["server_port"], r["bytes_c2s"], r["bytes_s2c"]) for r in decode(path)] == [
        ("undecoded", 8080, 81, 38)]


# --- filters and formats --------------------------------------------------------------


@pytest.fixture(scope="module")
def two_flows(tmp_path_factory):
    a = synth.tcp_conversation(conversation(vb=5, opaque=0x1000), client=("10.0.0.1", 50001))
    b = synth.tcp_conversation(conversation(vb=7, opaque=0x7000), client=("10.0.0.3", 50003))
    frames = [f for pair in zip(a, b) for f in pair]
    return write(tmp_path_factory.mktemp("two") / "two.pcap", frames)


@pytest.mark.parametrize("spec", ["DCP_MUTATION", "0x57", "87", "mutation"])
def test_filter_opcode_by_name_or_number(two_flows, spec):
    records = decode(two_flows, "--opcode", spec)
    assert [(r["opcode_name"], r["vbucket"], r["key"]) for r in records] == [
        ("DCP_MUTATION", 5, "order::1001"), ("DCP_MUTATION", 7, "order::1001"),
        ("DCP_MUTATION", 5, "order::1002"), ("DCP_MUTATION", 7, "order::1002")]


def test_filter_several_opcodes_vbucket_flow_limit(two_flows):
    both = decode(two_flows, "--opcode", "DCP_DELETION", "--opcode", "0x55")
    assert Counter(r["opcode_name"] for r in both) == {"DCP_DELETION": 2, "DCP_STREAM_END": 2}
    vb7 = decode(two_flows, "--vbucket", "7")
    assert vb7 and {r["vbucket"] for r in vb7} == {7}
    assert [r["opcode"] for r in vb7] == [0x53, 0x56, 0x5F, 0x57, 0x57, 0x58, 0x55]  # requests carry a vbucket
    flow = decode(two_flows, "--flow", "10.0.0.3:50003")
    assert {r["flow"] for r in flow} == {"10.0.0.3:50003-10.0.0.2:11210"} and len(flow) == 16
    assert decode(two_flows, "--flow", "192.0.2.1") == []
    limited = decode(two_flows, "--limit", "3")
    assert got(limited) == got(decode(two_flows))[:3]
    combo = decode(two_flows, "--opcode", "mutation", "--vbucket", "7", "--limit", "1")
    assert [(r["vbucket"], r["key"]) for r in combo] == [(7, "order::1001")]
    res = run_decode(two_flows, "--opcode", "no-such-opcode")
    assert res.returncode == 2 and "no-such-opcode" in res.stderr and "Traceback" not in res.stderr


def _summary_rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        cells = line.split()
        if cells and re.match(r"^\S+:\d+-\S+:\d+$", cells[0]):
            rows[cells[0]] = cells[1:]
    return rows


def test_summary_counts(tmp_path, two_flows):
    res = run_decode(two_flows, "--format", "summary")
    assert res.returncode == 0, res.stderr
    rows = _summary_rows(res.stdout)
    assert set(rows) == {"10.0.0.1:50001-10.0.0.2:11210", "10.0.0.3:50003-10.0.0.2:11210"}
    for cells in rows.values():  # headers counted, frames not judged: no findings columns
        c2s, s2c, nbytes, _dur, gaps, skipped = cells
        assert (int(c2s), int(s2c), int(gaps), int(skipped)) == (5, 11, 0, 0)
        assert int(nbytes) == sum(len(f) for _, f in conversation())
    assert "32 frames in 2 connections" in res.stdout
    assert "not judged" in res.stdout
    # --strict judges every frame, so the summary counts findings as the table shows them
    strict = run_decode(two_flows, "--format", "summary", "--strict")
    assert strict.returncode == 0, strict.stderr
    table = run_decode(two_flows)
    warnings = len(re.findall(r"^\s*WARNING ", table.stdout, re.M))
    for cells in _summary_rows(strict.stdout).values():
        assert len(cells) == 8 and int(cells[6]) == 0
    assert sum(int(c[7]) for c in _summary_rows(strict.stdout).values()) == warnings
    assert "not judged" not in strict.stdout
    opcodes = dict(re.findall(r"^\s*(DCP_MUTATION|DCP_CONTROL \(response\)|HELO)\s+(\d+)\s*$", res.stdout, re.M))
    assert opcodes == {"DCP_MUTATION": "4", "DCP_CONTROL (response)": "4", "HELO": "2"}
    # with damage: the gap and the skipped bytes are counted
    msgs = conversation()
    segs = synth.tcp_segments(msgs, mss=40)
    k = _data_segment(segs, "s2c", (expected(msgs)[12][1] + 1, expected(msgs)[12][1] + 100))
    lossy = write(tmp_path / "lossy.pcap", synth.frames(synth.impair(segs, drop=[k])))
    res = run_decode(lossy, "--format", "summary")
    (cells,) = _summary_rows(res.stdout).values()
    skipped_bytes = sum(n["length"] for n in servers.notes_of(decode(lossy), "skipped"))
    assert (int(cells[4]), int(cells[5])) == (1, skipped_bytes)


# --- damaged and wrong files ----------------------------------------------------------


def _cut(src: Path, dst: Path, n: int) -> Path:
    dst.write_bytes(src.read_bytes()[:-n])
    return dst


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_truncated_capture_keeps_what_came_before(tmp_path, fmt):
    msgs = conversation()
    # no FIN and no ACKs: the last record carries the last frame (STREAM_END), cut in its middle
    frames = synth.tcp_conversation(msgs, close=None, acks=False)
    path = write(tmp_path / f"full.{fmt}", frames, fmt=fmt)
    cut = _cut(path, tmp_path / f"cut.{fmt}", 20 if fmt == "pcap" else 24)
    records = decode(cut)
    assert got(records) == expected(msgs)[:-1]  # every complete frame before the cut
    (note,) = servers.notes_of(records)
    assert note["kind"] == "capture" and note["flow"] is None
    assert str(len(frames) - 1) in note["message"]  # names the damaged record
    # and cut inside the last (pure ACK) record of a normal capture: nothing is lost
    normal = write(tmp_path / f"normal.{fmt}", synth.tcp_conversation(msgs), fmt=fmt)
    records = decode(_cut(normal, tmp_path / f"cut2.{fmt}", 10))
    assert got(records) == expected(msgs)
    assert [n["kind"] for n in servers.notes_of(records)] == ["capture"]


def test_truncation_note_names_the_record_once(tmp_path):
    path = write(tmp_path / "full.pcap", synth.tcp_conversation(conversation()))
    (note,) = servers.notes_of(decode(_cut(path, tmp_path / "cut.pcap", 10)))
    assert len(re.findall(r"record \d+", note["message"])) == 1, note["message"]


def test_text_file_given_as_capture(tmp_path):
    (tmp_path / "notes.txt").write_text("this is not a capture\n" * 20)
    res = run_decode("notes.txt", cwd=tmp_path)
    assert res.returncode == 2 and res.stdout == ""
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dcpinspect: ") and "notes.txt" in lines[0]
    assert "neither a capture (pcap, pcapng, gzip) nor a hex dump" in lines[0]


def test_missing_and_empty_files(tmp_path):
    res = run_decode("nope.pcap", cwd=tmp_path)
    assert res.returncode == 2 and res.stdout == "" and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == ["dcpinspect: nope.pcap: no such file"]
    (tmp_path / "empty.pcap").write_bytes(b"")
    res = run_decode("empty.pcap", cwd=tmp_path)
    assert res.returncode == 2 and "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert "empty" in res.stderr


def test_text_file_error_names_the_path_once(tmp_path):
    (tmp_path / "notes.txt").write_text("this is not a capture\n")
    res = run_decode("notes.txt", cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.count("notes.txt") == 1, res.stderr


def test_long_path_error_stays_on_one_line(tmp_path):
    deep = tmp_path / ("d" * 170)
    deep.mkdir()
    res = run_decode(deep / "missing.pcap")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
