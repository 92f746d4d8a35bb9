"""The pcapng that ``live --write`` keeps: read back by our reader and by tshark, record
for record (times to the microsecond, bytes, lengths on the wire, link types)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import servers
from dcpinspect.sources.capture import Record, read_records
from dcpinspect.sources.pcapng import PcapngWriter

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "memcached-binary.pcap"


def test_records_read_back_as_written(tmp_path):
    records = [r for r in read_records(SAMPLE)]
    # a second link type (raw IP: the Ethernet header cut) gets an interface of its own
    records.insert(3, Record(records[2].ts + 1e-6, 101, records[2].data[14:], records[2].wirelen - 14, 3))
    records.append(Record(1.5, 1, b"\x00" * 13, 60, len(records)))  # cut short: wire length kept
    out = tmp_path / "kept.pcapng"
    writer = PcapngWriter(open(out, "wb"), "lo")
    for rec in records:
        writer.write(rec)
    writer.close()
    back = list(read_records(out))
    assert [(round(r.ts, 6), r.linktype, r.data, r.wirelen) for r in back] == \
        [(round(r.ts, 6), r.linktype, r.data, r.wirelen) for r in records]
    servers.require("tshark")
    shark = subprocess.run(["tshark", "-r", str(out), "-T", "fields", "-e", "frame.len", "-e", "frame.cap_len",
                            "-e", "frame.interface_name"], capture_output=True, text=True, timeout=120)
    assert shark.returncode == 0, shark.stderr
    rows = [line.split("\t") for line in shark.stdout.splitlines()]
    assert [(int(a), int(b)) for a, b, _ in rows] == [(r.wirelen, len(r.data)) for r in records]
    assert {name for _, _, name in rows} == {"lo"}


def test_a_decode_of_the_kept_file_is_the_decode_of_the_original(tmp_path):
    out = tmp_path / "copy.pcapng"
    writer = PcapngWriter(open(out, "wb"))
    for rec in read_records(SAMPLE):
        writer.write(rec)
    writer.close()
    original = servers.dcpinspect("decode", "-f", "jsonl", SAMPLE)
    copy = servers.dcpinspect("decode", "-f", "jsonl", out)
    assert original.returncode == copy.returncode == 0
    assert copy.stdout == original.stdout
