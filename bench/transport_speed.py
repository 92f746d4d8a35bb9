"""Throughput of the capture reader, header parser and TCP reassembler.

Writes a synthetic pcap of about 200k segments (50 interleaved flows, mixed
message sizes) and prints records/s for each stage added in turn.

    python bench/transport_speed.py [--segments N] [--keep PATH] [--scapy] [--tshark]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from dcpinspect.sources.capture import Record, read_records  # noqa: E402
from dcpinspect.transport import synth  # noqa: E402
from dcpinspect.transport.packet import Segment, parse_record  # noqa: E402
from dcpinspect.transport.reassembly import Reassembler  # noqa: E402


def make_capture(path: str, segments: int, flows: int = 50) -> int:
    rng = random.Random(7)
    per_flow = []
    total = 0
    for i in range(flows):
        msgs = []
        n = 0
        while n < segments // flows:
            size = rng.choice((24, 60, 120, 300, 900, 1400, 2900, 8000))
            msgs.append(("c2s" if rng.random() < 0.3 else "s2c", rng.randbytes(size)))
            n += 1 + size // 1460 + 1  # data segments plus the ACK
        segs = synth.tcp_segments(msgs, isn=(rng.getrandbits(32), rng.getrandbits(32)))
        per_flow.append(synth.frames(segs, ("10.1.0.%d" % (i + 1), 40000 + i), ("10.2.0.1", 11210),
                                     checksum=False))
        total += len(per_flow[-1])
    interleaved = []
    idx = [0] * flows
    live = list(range(flows))
    while live:
        i = rng.choice(live)
        interleaved.append(per_flow[i][idx[i]])
        idx[i] += 1
        if idx[i] == len(per_flow[i]):
            live.remove(i)
    synth.write_pcap(path, interleaved, "ether")
    return total


def timed(label: str, fn, n_expected: int, repeat: int = 3) -> float:
    """Best of ``repeat`` runs, by CPU time (other processes on the machine do not count)."""
    best_cpu = best_wall = float("inf")
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        n = fn()
        best_cpu = min(best_cpu, time.process_time() - c)
        best_wall = min(best_wall, time.perf_counter() - t)
        assert n == n_expected, (label, n, n_expected)
    print(f"{label:44s} {n / best_cpu:>12,.0f} records/s  (cpu {best_cpu:.2f} s, wall {best_wall:.2f} s)")
    return n / best_cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--segments", type=int, default=200_000)
    ap.add_argument("--keep", help="write the capture here instead of a temporary file")
    ap.add_argument("--scapy", action="store_true", help="also time scapy's RawPcapReader")
    ap.add_argument("--tshark", action="store_true", help="also time tshark's TCP field export")
    args = ap.parse_args()
    path = args.keep or os.path.join(tempfile.mkdtemp(), "bench.pcap")
    t = time.perf_counter()
    n = make_capture(path, args.segments)
    print(f"wrote {n} frames, {os.path.getsize(path) / 1e6:.1f} MB in {time.perf_counter() - t:.1f} s: {path}")

    def read_only():
        return sum(1 for r in read_records(path) if type(r) is Record)

    def read_parse():
        c = 0
        for r in read_records(path):
            if type(parse_record(r)) is Segment:
                c += 1
        return c

    def full():
        ra = Reassembler()
        c = 0
        for r in read_records(path):
            s = parse_record(r)
            if type(s) is Segment:
                ra.feed(s)
                c += 1
        ra.flush()
        return c

    timed("read_records", read_only, n)
    timed("read_records + parse_record", read_parse, n)
    rate = timed("read_records + parse_record + Reassembler", full, n)
    if args.scapy:
        from scapy.utils import RawPcapReader

        def scapy_raw():
            with RawPcapReader(path) as rd:
                return sum(1 for _ in rd)

        timed("scapy RawPcapReader (reference)", scapy_raw, n)
    if args.tshark and shutil.which("tshark"):
        cmd = ["tshark", "-n", "-r", path, "-T", "fields", "-e", "tcp.stream", "-e", "tcp.seq", "-e", "tcp.len"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        lines = subprocess.run(cmd, capture_output=True, check=True).stdout.count(b"\n")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        assert lines == n, (lines, n)
        print(f"{'tshark -T fields tcp.stream,seq,len':44s} {n / cpu:>12,.0f} records/s  (cpu {cpu:.2f} s)"
              f"  -> full pipeline is {rate / (n / cpu):.1f}x tshark")
    print(f"target 300,000 segments/s: {'met' if rate >= 300_000 else 'NOT met'}")
    if not args.keep:
        os.remove(path)
        os.rmdir(os.path.dirname(path))


if __name__ == "__main__":
    main()
