"""Capture files built to hurt the reader: times no date can hold, one giant record, a
decompression bomb. Every input is crafted here from the pcap / pcapng layouts; each
must decode what it can, say what it could not, and stay within the record cap's memory.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

import servers

from frames import REPO, invoke_cli, run_cli
from test_capture_e2e import conversation
from dcpinspect.outputs.stamp import stamp
from dcpinspect.sources.capture import MAX_RECORD, MAX_RECORD_ENV, CaptureProblem, Record, read_records
from dcpinspect.transport import synth

MEMORY_LIMIT_KB = 200 * 1024  # peak RSS of a whole `dcpinspect decode` on a hostile file
EPOCH_NS = 1_700_000_000_000_000_000


# --- building captures ----------------------------------------------------------------------------


def packets(flows: int = 1) -> list[bytes]:
    """Ethernet frames of ``flows`` DCP conversations (the e2e sample), one after another."""
    out = []
    for k in range(flows):
        out += synth.tcp_conversation(conversation(), client=("10.0.0.1", 50000 + k))
    return out


def block(btype: int, body: bytes) -> bytes:
    n = 12 + len(body)
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


SHB = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))


def idb(tsresol: int | None = None, tsoffset: int | None = None) -> bytes:
    opts = b""
    if tsresol is not None:
        opts += struct.pack("<HHB3x", 9, 1, tsresol)
    if tsoffset is not None:
        opts += struct.pack("<HHq", 14, 8, tsoffset)
    return block(1, struct.pack("<HHI", 1, 0, 262144) + opts + (b"\0\0\0\0" if opts else b""))


def epb(ifid: int, ticks: int, data: bytes) -> bytes:
    return block(6, struct.pack("<IIIII", ifid, ticks >> 32, ticks & 0xFFFFFFFF, len(data), len(data))
                 + data + b"\0" * (-len(data) % 4))


def pcap_header(nanos: bool = False, endian: str = "<") -> bytes:
    return struct.pack(endian + "IHHiIII", 0xA1B23C4D if nanos else 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)


def pcap_record(sec: int, frac: int, data: bytes, endian: str = "<") -> bytes:
    return struct.pack(endian + "IIII", sec, frac, len(data), len(data)) + data


TSRESOLS = list(range(256))  # every byte: 10^-v for v < 128, 2^-(v & 0x7f) with the 0x80 flag
TSOFFSETS = [None, 0, -2**63, 2**63 - 1, -1_700_000_000, 2**62]


def flip(ticks: int, byte: int) -> int:
    """``ticks`` with byte ``byte`` (0: the most significant) of the 64-bit stamp inverted."""
    return ticks ^ (0xFF << (8 * (7 - byte)))


def hostile_times_pcapng(frames: list[bytes]) -> bytes:
    """One interface for each odd resolution and offset, the packets dealt round-robin over
    them, and every other packet with one byte of its 64-bit timestamp inverted."""
    ifaces = [(r, None) for r in (0x80, 0x00, 0x7F, 0xFF, 0x40, 0xBF)] + [(6, o) for o in TSOFFSETS]
    out = [SHB] + [idb(r, o) for r, o in ifaces]
    for i, data in enumerate(frames):
        ticks = EPOCH_NS // 1000 + i
        if i % 2:
            ticks = flip(ticks, (i // 2) % 8)
        out.append(epb(i % len(ifaces), ticks, data))
    return b"".join(out)


def clean_pcapng(frames: list[bytes]) -> bytes:
    return b"".join([SHB, idb(6)] + [epb(0, EPOCH_NS // 1000 + i, d) for i, d in enumerate(frames)])


def jsonl_strict(text: str) -> list[dict]:
    """Parse jsonl as strict JSON: NaN and Infinity are not JSON."""
    def refuse(name):
        raise ValueError(f"{name} in jsonl output")
    return [json.loads(line, parse_constant=refuse) for line in text.splitlines() if line.strip()]


def gzip_stream(path: Path, parts) -> None:
    """Write ``parts`` (bytes, or an int: that many zero bytes) gzip-compressed, streaming the
    zeros through zlib a MiB at a time so that nothing large is ever held."""
    z = zlib.compressobj(1, zlib.DEFLATED, 31)
    mib = bytes(1 << 20)
    with open(path, "wb") as f:
        for part in parts:
            if isinstance(part, int):
                while part:
                    n = min(part, len(mib))
                    f.write(z.compress(mib[:n]))
                    part -= n
            else:
                f.write(z.compress(part))
        f.write(z.flush())


def plain_stream(path: Path, parts) -> None:
    """The same, uncompressed: runs of zeros are holes in a sparse file."""
    with open(path, "wb") as f:
        for part in parts:
            if isinstance(part, int):
                f.seek(part, os.SEEK_CUR)
            else:
                f.write(part)
        f.truncate()


def measured(*args: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, int]:
    """``dcpinspect ARGS`` in a process of its own, and its peak RSS in KiB."""
    return servers.peak_rss(*args, env=env)


# --- timestamps ---------------------------------------------------------------------------------


@pytest.mark.parametrize("ts", [0, 1.5, -1, 1_700_000_000.123456, -62135596800, 253402300799, 253402300800,
                                -62135596801, 2.0**64, -(2.0**63), 1e308, -1e308, float("inf"), float("-inf"),
                                float("nan"), 5e-324, 10**30, -(10**30), 10**400])
def test_stamp_prints_every_time(ts):
    text = stamp(ts)
    assert isinstance(text, str) and text
    try:
        when = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=ts)
    except (OverflowError, ValueError):
        assert text.endswith("(not a date)") and text.startswith("ts="), text
        return
    assert text == f"{when.year:04d}-{when:%m-%d %H:%M:%S.%f}"


def test_reader_times_are_finite_for_every_resolution_offset_and_flipped_byte(tmp_path):
    data = packets()[3]
    path = tmp_path / "t.pcapng"
    for tsresol in TSRESOLS:
        for tsoffset in TSOFFSETS:
            ticks = [2**64 - 1, 0, EPOCH_NS] + [flip(EPOCH_NS, b) for b in range(8)]
            path.write_bytes(SHB + idb(tsresol, tsoffset) + b"".join(epb(0, t, data) for t in ticks))
            recs = list(read_records(path))
            assert all(type(r) is Record for r in recs) and len(recs) == len(ticks), (tsresol, tsoffset)
            for r in recs:
                assert isinstance(r.ts, float) and math.isfinite(r.ts), (tsresol, tsoffset, r.ts)
                assert stamp(r.ts)


@pytest.mark.parametrize("endian", ["<", ">"])
@pytest.mark.parametrize("nanos", [False, True])
def test_classic_pcap_extreme_seconds_and_fractions(tmp_path, nanos, endian):
    frames = packets()
    stamps = [(0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0), (0, 0xFFFFFFFF), (0x80000000, 999_999)]
    blob = pcap_header(nanos, endian) + b"".join(
        pcap_record(*stamps[i % len(stamps)], d, endian) for i, d in enumerate(frames))
    path = tmp_path / "extreme.pcap"
    path.write_bytes(blob)
    recs = list(read_records(path))
    assert len(recs) == len(frames) and all(math.isfinite(r.ts) for r in recs)
    table = invoke_cli("decode", str(path))
    assert table.returncode == 0, table.stderr
    assert b"2106-02-07" in table.stdout  # 0xffffffff seconds is a date: early in 2106
    assert _frames(invoke_cli("decode", "-f", "jsonl", str(path))) == _frames(
        invoke_cli("decode", "-f", "jsonl", str(_clean_pcap(tmp_path, frames))))


def _clean_pcap(tmp_path: Path, frames: list[bytes]) -> Path:
    path = tmp_path / "clean.pcap"
    synth.write_pcap(path, frames)
    return path


def _frames(result: subprocess.CompletedProcess) -> list[tuple]:
    """What each decoded frame is, leaving out its time."""
    assert result.returncode == 0, result.stderr
    return [(r["frame"], r["flow"], r["direction"], r.get("opcode"), r.get("key"))
            for r in jsonl_strict(result.stdout.decode()) if r["kind"] == "frame"]


def test_times_no_date_can_hold_print_in_every_command(tmp_path):
    frames = packets(flows=3)
    hostile = tmp_path / "times.pcapng"
    hostile.write_bytes(hostile_times_pcapng(frames))
    clean = tmp_path / "clean.pcapng"
    clean.write_bytes(clean_pcapng(frames))

    table = run_cli("decode", str(hostile))  # the terminal view, as a user runs it
    assert table.returncode == 0, table.stderr.decode()[-2000:]
    assert b"Traceback" not in table.stderr
    assert b"(not a date)" in table.stdout and b"2023-11-14" in table.stdout
    assert table.stdout.count(b"  frame ") == run_cli("decode", str(clean)).stdout.count(b"  frame ")

    dump = invoke_cli("decode", "-f", "jsonl", str(hostile))
    records = jsonl_strict(dump.stdout.decode())
    assert all(math.isfinite(r["ts"]) for r in records if r.get("ts") is not None)
    assert _frames(dump) == _frames(invoke_cli("decode", "-f", "jsonl", str(clean)))

    summary = invoke_cli("decode", "-f", "summary", str(hostile))
    assert summary.returncode == 0 and b"frames" in summary.stdout

    checked = run_cli("validate", "--info", str(hostile))
    assert checked.returncode in (0, 1) and b"Traceback" not in checked.stderr
    assert b"(not a date)" in checked.stdout or b"2023-11-14" in checked.stdout
    assert checked.stdout.splitlines()[-1] == run_cli("validate", "--info", str(clean)).stdout.splitlines()[-1]

    for args in (("stats",), ("stats", "-f", "json")):
        out = invoke_cli(*args, str(hostile))
        assert out.returncode == 0, (args, out.stderr)
        if "json" in args:
            json.loads(out.stdout, parse_constant=lambda name: pytest.fail(f"{name} in stats json"))


# --- one giant record -----------------------------------------------------------------------------

GIANT = 256 * 1024 * 1024


def _giant_pcap(frames: list[bytes], size: int) -> list:
    """A pcap: the first half of ``frames``, one record of ``size`` zero bytes, the rest."""
    half = len(frames) // 2
    before = [pcap_record(1_700_000_000, i, d) for i, d in enumerate(frames[:half])]
    after = [pcap_record(1_700_000_001, i, d) for i, d in enumerate(frames[half:])]
    return [pcap_header(), *before, struct.pack("<IIII", 1_700_000_000, 99, size, size), size, *after]


def _giant_pcapng(frames: list[bytes], size: int) -> list:
    """A pcapng: the same, the giant being an enhanced packet block of ``size`` bytes."""
    half = len(frames) // 2
    ts = EPOCH_NS // 1000
    before = [epb(0, ts + i, d) for i, d in enumerate(frames[:half])]
    after = [epb(0, ts + 1000 + i, d) for i, d in enumerate(frames[half:])]
    head = struct.pack("<IIIIIII", 6, size, 0, 0, 0, size - 32, size - 32)
    return [SHB, idb(6), *before, head, size - 32, struct.pack("<I", size), *after]


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
@pytest.mark.parametrize("gz", [False, True])
def test_giant_record_is_passed_over_in_bounded_memory(tmp_path, fmt, gz):
    frames = packets()
    parts = (_giant_pcap if fmt == "pcap" else _giant_pcapng)(frames, GIANT)
    path = tmp_path / (f"giant.{fmt}" + (".gz" if gz else ""))
    (gzip_stream if gz else plain_stream)(path, parts)
    clean = tmp_path / "clean.pcap"
    synth.write_pcap(clean, frames)

    result, peak_kb = measured("decode", "-f", "jsonl", str(path))
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert peak_kb < MEMORY_LIMIT_KB, f"peak RSS {peak_kb} KiB"
    records = jsonl_strict(result.stdout.decode())
    notes = [r["message"] for r in records if r["kind"] == "capture"]
    assert len(notes) == 1 and "over the" in notes[0] and str(MAX_RECORD) in notes[0], notes
    assert MAX_RECORD_ENV in notes[0]
    # every packet before and after it still decodes; frame numbers count the giant record
    want = [(n if n < len(frames) // 2 + 1 else n + 1) for n in _numbers(clean)]
    got = [r["frame"] for r in records if r["kind"] == "frame"]
    assert got == want


def _numbers(path: Path) -> list[int]:
    return [r["frame"] for r in jsonl_strict(invoke_cli("decode", "-f", "jsonl", str(path)).stdout.decode())
            if r["kind"] == "frame"]


def test_record_cap_can_be_raised_and_lowered(tmp_path):
    frames = packets()
    path = tmp_path / "big.pcap.gz"
    gzip_stream(path, _giant_pcap(frames, 2 * 1024 * 1024))
    raised = run_cli_env("decode", "-f", "jsonl", str(path), env={MAX_RECORD_ENV: "4M"})
    assert not [r for r in jsonl_strict(raised.stdout.decode()) if r["kind"] == "capture"]
    lowered = run_cli_env("decode", "-f", "jsonl", str(path), env={MAX_RECORD_ENV: "1048576"})
    notes = [r["message"] for r in jsonl_strict(lowered.stdout.decode()) if r["kind"] == "capture"]
    assert len(notes) == 1 and "1048576-byte record cap" in notes[0]
    bad = run_cli_env("decode", str(path), env={MAX_RECORD_ENV: "lots"})
    assert bad.returncode == 2 and MAX_RECORD_ENV.encode() in bad.stderr and b"Traceback" not in bad.stderr


def run_cli_env(*args: str, env: dict) -> subprocess.CompletedProcess:
    result, _ = measured(*args, env=env)
    return result


@pytest.mark.parametrize("gz", [False, True])
def test_length_past_the_end_of_file_over_the_cap_is_one_problem(tmp_path, gz):
    frames = packets()[:4]
    parts = [pcap_header(), *(pcap_record(1, i, d) for i, d in enumerate(frames)),
             struct.pack("<IIII", 1, 9, 0xFFFFFFF0, 60), b"\x01" * 1000]
    path = tmp_path / ("cut.pcap" + (".gz" if gz else ""))
    (gzip_stream if gz else plain_stream)(path, parts)
    items = list(read_records(path))
    assert [r.data for r in items if type(r) is Record] == frames
    problems = [p for p in items if type(p) is CaptureProblem]
    assert len(problems) == 1 and "file ends 1000 bytes into it" in problems[0].message


# --- decompression bomb ---------------------------------------------------------------------------

BOMB_ZEROS = 64 * 1024 * 1024


def test_gzip_bomb_of_zero_records_is_one_note_in_bounded_memory(tmp_path):
    frames = packets()
    after = b"".join(pcap_record(1_700_000_000, i, d) for i, d in enumerate(frames))
    path = tmp_path / "bomb.pcap.gz"
    gzip_stream(path, [pcap_header(), BOMB_ZEROS, after])
    assert path.stat().st_size < BOMB_ZEROS // 200  # a bomb: it inflates hundreds of times

    result, peak_kb = measured("decode", "-f", "jsonl", str(path))
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert peak_kb < MEMORY_LIMIT_KB, f"peak RSS {peak_kb} KiB"
    records = jsonl_strict(result.stdout.decode())
    runs = BOMB_ZEROS // 16
    notes = [r["message"] for r in records if r["kind"] == "capture"]
    assert notes == [f"record 0: {runs} all-zero record headers ({BOMB_ZEROS} zero bytes from byte 24, "
                     f"records 0-{runs - 1}) passed over: a zero-filled stretch, not packets"]
    clean = tmp_path / "clean.pcap"
    synth.write_pcap(clean, frames)
    assert [r["frame"] for r in records if r["kind"] == "frame"] == [n + runs for n in _numbers(clean)]


def test_zero_runs_anywhere_and_of_any_length_are_counted_exactly(tmp_path):
    frames = packets()[:6]
    path = tmp_path / "zeros.pcap"
    for run_bytes in (16, 48, 65536 + 16 * 7, (1 << 20) + 16, 3 * (1 << 20)):
        for at in (0, 3, 6):
            recs = [pcap_record(1, i, d) for i, d in enumerate(frames)]
            path.write_bytes(pcap_header() + b"".join(recs[:at]) + bytes(run_bytes) + b"".join(recs[at:]))
            items = list(read_records(path))
            problems = [p for p in items if type(p) is CaptureProblem]
            assert [r.data for r in items if type(r) is Record] == frames
            assert len(problems) == 1 and problems[0].index == at
            assert f" {run_bytes // 16} all-zero record headers" in problems[0].message
            assert [r.index for r in items if type(r) is Record] == [
                i if i < at else i + run_bytes // 16 for i in range(len(frames))]


def test_zero_tail_shorter_than_a_header_is_reported_as_a_cut(tmp_path):
    path = tmp_path / "tail.pcap"
    path.write_bytes(pcap_header() + pcap_record(1, 0, packets()[0]) + bytes(16 * 5 + 7))
    items = list(read_records(path))
    problems = [p.message for p in items if type(p) is CaptureProblem]
    assert len(problems) == 2 and " 5 all-zero record headers" in problems[0]
    assert "7 of 16 bytes" in problems[1]


def test_reader_reports_progress_through_stretches_without_records(tmp_path):
    path = tmp_path / "quiet.pcap.gz"
    gzip_stream(path, [pcap_header(), 16 * 1024 * 1024])
    records = read_records(path)
    seen: list[int] = []
    records.on_read(lambda: seen.append(records.tell()))
    items = list(records)
    assert len(items) == 1 and type(items[0]) is CaptureProblem
    assert len(seen) >= 16  # about once a MiB inflated
    assert seen == sorted(seen) and seen[-1] > 0
