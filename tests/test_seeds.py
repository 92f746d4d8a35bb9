"""The seed documents (tests/data/seeds: excerpts of the upstream protocol documents) end to end.

* 000 (flattened text) and 001 (the markdown original) hold the two snapshot-marker
  examples of kv_engine's snapshot-marker.md: the V1 dump with total body 0 and a
  "(disk)" caption on flags 0x01, and the garbled V2 dump (extlen byte 0x14,
  total body 0, version byte 0x01).  The bytes decode by the normative layout; the
  header as written gives lengths-exceed-body + body-length-mismatch; the "as laid
  out" view (body length taken from the bytes the example holds) checks the
  captions.  Both spellings must give identical results.
* 003 is system_event.md: bytes say manifest 2, scope 8, collection 0,
  max_ttl 72000 while the captions call 57-60 Collection-ID and 61-64 Scope-ID.
* 002 and 004 have no hex example at all: the CLI exits 2 with one clear line.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from dcpinspect.engines.hexinput import decode_hex_text
from dcpinspect.families.mcbp.framer import Skipped
from dcpinspect.families.mcbp.messages.frame import Message
from dcpinspect.families.mcbp.rules.book import FRAME_RULES
from frames import DATA, frame_errors, invoke_cli, run_cli

SEEDS = DATA / "seeds"
FLAT, INDENTED = "000_82aafa3c52158972.txt", "001_957c72489c2ff7c0.txt"
NO_HEX = ["002_13e60474d906ada7.txt", "004_607922350440f776.txt"]
SYSTEM_EVENT = "003_b4c883c1ff0e9f61.txt"
MARKERS = [FLAT, INDENTED]


def text(name: str) -> str:
    return (SEEDS / name).read_text(encoding="utf-8")


def cli(*args: str, real: bool = False) -> subprocess.CompletedProcess:
    proc = (run_cli if real else invoke_cli)(*args)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def messages(items) -> list[Message]:
    return [i for i in items if isinstance(i, Message)]


def summary(items) -> list[tuple]:
    """Everything a user sees of a decode, for comparing two inputs."""
    out = []
    for i in items:
        if isinstance(i, Skipped):
            out.append(("skipped", i.offset, i.size))
        else:
            out.append(("frame", i.offset, i.size, i.name, i.note, i.truncated, i.fields,
                        [(f.rule, f.severity, f.message, f.offset) for f in i.findings]))
    return out


# ------------------------------------------------------------------ snapshot markers

V1_BYTES = bytes.fromhex("805600001400000000000000deadbeef" "0000000000000000" "0000000000000000"
                         "0000000000000008" "00000001")
V2_BYTES = bytes.fromhex(
    "8056000014000000" "00000000" "deadbeef" "0000000000000000"
    "01000000" "00000000" "01000000" "00000000" "08000000" "02000000" "00000000" "08000000" "00000000" "07")


@pytest.mark.parametrize("name", MARKERS)
def test_marker_seed_bytes(name: str) -> None:
    result = decode_hex_text(text(name))
    assert result.dump.format == "diagram"
    assert result.dump.data == V1_BYTES + V2_BYTES
    assert result.dump.blocks == ((0, 44), (44, 105))


def test_flat_and_indented_marker_seeds_decode_identically() -> None:
    a, b = decode_hex_text(text(FLAT)), decode_hex_text(text(INDENTED))
    assert a.dump.data == b.dump.data
    assert [(c.name, c.start, c.end, c.text) for c in a.dump.captions] == [
        (c.name, c.start, c.end, c.text) for c in b.dump.captions]
    assert summary(a.items) == summary(b.items)


@pytest.mark.parametrize("name", MARKERS)
def test_marker_seed_v1_example(name: str) -> None:
    items = decode_hex_text(text(name)).items
    written, skipped, laid_out = items[0], items[1], items[2]
    # The header as written: total body 0 but 20 extras
    assert isinstance(written, Message) and written.offset == 0 and not written.note
    assert written.name == "DCP_SNAPSHOT_MARKER" and written.body_length == 0 and written.extras_length == 20
    rules = {f.rule for f in written.findings}
    assert {"lengths-exceed-body", "body-length-mismatch"} <= rules
    mismatch = next(f for f in written.findings if f.rule == "body-length-mismatch")
    assert mismatch.offset == 8 and "20" in mismatch.message
    assert isinstance(skipped, Skipped) and (skipped.offset, skipped.size) == (24, 20)
    # The example as laid out: a valid v1 marker 0..8 Memory
    assert isinstance(laid_out, Message) and laid_out.note and laid_out.offset == 0 and laid_out.size == 44
    assert laid_out.fields["start_seqno"] == 0 and laid_out.fields["end_seqno"] == 8
    assert laid_out.fields["snapshot_type"] == ["Memory"]
    caps = [f for f in laid_out.findings if f.rule == "caption-mismatch"]
    assert len(caps) == 2
    total = next(f for f in caps if "Total body" in f.message)
    assert total.offset == 8 and "0x00000014" in total.message and "0x00000000" in total.message
    stype = next(f for f in caps if "Snapshot Type" in f.message)
    assert stype.offset == 40 and "(40-43)" in stype.message
    assert "disk" in stype.message and "Memory" in stype.message
    assert frame_errors(laid_out.findings) == []


@pytest.mark.parametrize("name", MARKERS)
def test_marker_seed_v2_example(name: str) -> None:
    items = decode_hex_text(text(name)).items
    written, skipped, laid_out = items[3], items[4], items[5]
    assert len(items) == 6
    assert isinstance(written, Message) and written.offset == 44 and written.body_length == 0
    assert {"lengths-exceed-body", "body-length-mismatch"} <= {f.rule for f in written.findings}
    assert "37" in next(f for f in written.findings if f.rule == "body-length-mismatch").message
    assert isinstance(skipped, Skipped) and (skipped.offset, skipped.size) == (68, 37)
    # By the normative layout the bytes are a v1 marker (extlen byte 0x14) with a 17-byte value.
    assert laid_out.note and laid_out.offset == 44 and laid_out.size == 61
    assert laid_out.extras_length == 20
    assert laid_out.values["start_seqno"] == 0x0100000000000000
    assert laid_out.values["end_seqno"] == 0x0100000000000000
    assert laid_out.values["snapshot_type"] == 0x08000000
    assert laid_out.value == bytes.fromhex("0200000000000000080000000000000007")
    rules = [f.rule for f in laid_out.findings]
    assert "value-forbidden" in rules and "reserved-flags" in rules
    caps = {f.offset - 44: f.message for f in laid_out.findings if f.rule == "caption-mismatch"}
    assert set(caps) == {4, 8, 24}
    assert "Extra length" in caps[4] and "0x01" in caps[4] and "0x14" in caps[4]
    assert "Total body" in caps[8] and "0x00000025" in caps[8] and "0x00000000" in caps[8]
    assert "Version" in caps[24] and "0x00" in caps[24] and "0x01" in caps[24]


@pytest.mark.parametrize("name", MARKERS)
def test_marker_seed_cli_table(name: str) -> None:
    proc = cli("hex", str(SEEDS / name), real=name == FLAT)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Traceback" not in proc.stderr
    assert out.count("DCP_SNAPSHOT_MARKER request") == 4
    assert out.count("lengths-exceed-body") == 2 and out.count("body-length-mismatch") == 2
    assert "as laid out in the example" in out
    assert "Total body (8-11) says 0x00000014, the bytes are 0x00000000" in out
    assert "Total body (8-11) says 0x00000025, the bytes are 0x00000000" in out
    assert "Snapshot Type (40-43) names (disk)" in out and "(Memory)" in out
    assert "Extra length (4) says 0x01, the bytes are 0x14" in out
    assert "Version (24) says 0x00, the bytes are 0x01" in out
    assert "4 frames, 57 bytes skipped in 2 ranges" in out


def test_marker_seeds_cli_outputs_are_identical() -> None:
    a, b = cli("hex", str(SEEDS / FLAT)), cli("hex", str(SEEDS / INDENTED))
    assert a.stdout == b.stdout and a.returncode == b.returncode == 0
    ja, jb = cli("hex", "--format", "jsonl", str(SEEDS / FLAT)), cli("hex", "--format", "jsonl", str(SEEDS / INDENTED))
    assert ja.stdout == jb.stdout


def test_marker_seed_cli_jsonl_and_strict() -> None:
    proc = cli("hex", "--format", "jsonl", "--strict", str(SEEDS / FLAT), real=True)
    assert proc.returncode == 1               # lengths-exceed-body etc. are errors
    recs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["kind"] for r in recs] == ["frame", "skipped", "frame", "frame", "skipped", "frame"]
    laid = [r for r in recs if r.get("note")]
    assert len(laid) == 2
    assert laid[0]["fields"]["snapshot_type"] == ["Memory"]
    assert {f["rule"] for f in recs[0]["findings"]} >= {"lengths-exceed-body", "body-length-mismatch"}
    assert sum(f["rule"] == "caption-mismatch" for r in laid for f in r["findings"]) == 5


# ------------------------------------------------------------------ system event

SYSTEM_EVENT_BYTES = bytes.fromhex(
    "805f000c0d0002100000002d000012100000000000000000000000000000000400000000016d79636f6c6c656374696f6e"
    "0000000000000002000000080000000000011940")


def test_system_event_seed_decodes_by_the_bytes() -> None:
    result = decode_hex_text(text(SYSTEM_EVENT))
    assert result.dump.format == "diagram"
    assert result.dump.data == SYSTEM_EVENT_BYTES       # = spec §14 row 22b
    (msg,) = result.items
    assert msg.name == "DCP_SYSTEM_EVENT" and not msg.truncated and not msg.note
    assert msg.vbucket == 0x210 and msg.opaque == 0x1210
    assert msg.fields["by_seqno"] == 4 and msg.fields["event"] == "BeginCollection" and msg.fields["version"] == 1
    assert msg.fields["key"] == "mycollection"
    assert msg.fields["manifest_uid"] == 2
    assert msg.fields["scope_id"] == 8
    assert msg.fields["collection_id"] == 0
    assert msg.fields["max_ttl"] == 72000
    assert frame_errors(msg.findings) == []
    caps = sorted((f.offset, f.message) for f in msg.findings if f.rule == "caption-mismatch")
    assert [o for o, _ in caps] == [57, 61]
    assert "Collection-ID" in caps[0][1] and "scope_id" in caps[0][1] and "61-64" in caps[0][1]
    assert "Scope-ID" in caps[1][1] and "collection_id" in caps[1][1] and "57-60" in caps[1][1]


def test_system_event_seed_cli() -> None:
    proc = cli("hex", str(SEEDS / SYSTEM_EVENT))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "DCP_SYSTEM_EVENT request" in out
    assert "mycollection" in out
    assert "0x00011940 (72000)" in out
    assert "caption calls bytes 57-60 'Collection-ID'" in out
    assert "caption calls bytes 61-64 'Scope-ID'" in out
    assert "1 frames," in out
    # Per frame, only the two caption warnings (stream rules may add their own findings).
    recs = [json.loads(x) for x in cli("hex", "--format", "jsonl", str(SEEDS / SYSTEM_EVENT)).stdout.splitlines()]
    (rec,) = recs
    frame_level = [f for f in rec["findings"] if f["rule"] in FRAME_RULES]
    assert sorted(f["rule"] for f in frame_level) == ["caption-mismatch", "caption-mismatch"]
    assert rec["fields"]["scope_id"] == 8 and rec["fields"]["collection_id"] == 0


# ------------------------------------------------------------------ no hex at all

@pytest.mark.parametrize("name", NO_HEX)
def test_seed_without_hex(name: str) -> None:
    result = decode_hex_text(text(name))
    assert result.dump.data == b"" and result.items == []
    assert result.dump.problems
    proc = cli("hex", str(SEEDS / name), real=True)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dcpinspect: ")
    assert "no hex" in lines[0]
    assert "Traceback" not in proc.stderr
