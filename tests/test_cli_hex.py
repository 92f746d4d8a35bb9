"""`dcpinspect hex` end to end: every input format, the output formats, exit codes, escaping.

The input is a binary file holding several spec §14 frames back to back, dumped by
the real tools (xxd, hexdump -C, od -A x -t x1z) where they are installed, and
written as plain / 0x-prefixed hex by the test.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from dcpinspect.families.mcbp.messages import dcp
from dcpinspect.sources.hexdump import parse_hexdump
from frames import VECTORS, concatenated_vectors, invoke_cli, request, response, run_cli

NAMES = ("11", "14", "22", "33", "37", "38", "39", "19resp")
STREAM, WHERE = concatenated_vectors(NAMES)
OPCODE_NAMES = ["DCP_SNAPSHOT_MARKER", "DCP_MUTATION", "DCP_SYSTEM_EVENT", "DCP_MUTATION", "DCP_SNAPSHOT_MARKER",
                "DCP_MUTATION", "DCP_SYSTEM_EVENT", "DCP_NOOP"]
EXPECTED = [(off, len(data), name) for (off, data), name in zip(WHERE, OPCODE_NAMES)]


def cli(*args: str, input: bytes | None = None) -> subprocess.CompletedProcess:
    return invoke_cli(*args, input=input)


def jsonl(proc: subprocess.CompletedProcess) -> list[dict]:
    lines = proc.stdout.decode().splitlines()
    assert lines, proc.stderr.decode()
    return [json.loads(line) for line in lines]


def frames_of(records: list[dict]) -> list[tuple[int, int, str]]:
    return [(r["offset"], r["length"], r["opcode_name"]) for r in records if r["kind"] == "frame"]


def tool(*argv: str, path: Path) -> str:
    if shutil.which(argv[0]) is None:
        pytest.skip(f"{argv[0]} is not installed")
    return subprocess.run([*argv, str(path)], capture_output=True, check=True).stdout.decode()


@pytest.fixture(scope="module")
def binfile(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "frames.bin"
    path.write_bytes(STREAM)
    return path


def _plain(data: bytes) -> str:
    hx = data.hex()
    return "\n".join(hx[i: i + 64] for i in range(0, len(hx), 64)) + "\n"


def _plain_spaced(data: bytes) -> str:
    return "\n".join(" ".join(f"{b:02x}" for b in data[i: i + 16]) for i in range(0, len(data), 16)) + "\n"


def _c_array(data: bytes) -> str:
    rows = [", ".join(f"0x{b:02X}" for b in data[i: i + 12]) for i in range(0, len(data), 12)]
    return "{\n    " + ",\n    ".join(rows) + "\n};\n"


FORMATS = {
    "plain": lambda p: _plain(STREAM),
    "plain-spaced": lambda p: _plain_spaced(STREAM),
    "0x-prefixed": lambda p: _c_array(STREAM),
    "xxd": lambda p: tool("xxd", path=p),
    "xxd-g1": lambda p: tool("xxd", "-g1", path=p),
    "xxd-p": lambda p: tool("xxd", "-p", path=p),
    "hexdump-C": lambda p: tool("hexdump", "-C", path=p),
    "od": lambda p: tool("od", "-A", "x", "-t", "x1z", path=p),
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_input_format_decodes_every_frame(fmt: str, binfile: Path, tmp_path: Path) -> None:
    text = FORMATS[fmt](binfile)
    assert parse_hexdump(text).data == STREAM
    src = tmp_path / f"dump.{fmt}.txt"
    src.write_text(text)
    proc = cli("hex", "--format", "jsonl", str(src))
    assert proc.returncode == 0, proc.stderr.decode()
    records = jsonl(proc)
    assert [r["kind"] for r in records] == ["frame"] * len(NAMES)
    assert frames_of(records) == EXPECTED
    assert not any(r["truncated"] for r in records)
    # keys: row 14 has a plain key; the system event switches the engine to collection keys
    assert records[1]["key"] == "hello" and "collection_id" not in records[1]
    assert records[3]["collection_id"] == 8 and records[3]["stream_id"] == 7
    assert records[5]["key"] == "xdcrProvCollections_C29854"


@pytest.mark.parametrize("fmt", ["xxd", "plain", "hexdump-C"])
def test_stdin_input_and_table_output(fmt: str, binfile: Path) -> None:
    text = FORMATS[fmt](binfile)
    proc = (run_cli if fmt == "xxd" else cli)("hex", "-", input=text.encode())
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode()
    assert f"{len(NAMES)} frames" in out
    for off, size, name in EXPECTED:
        assert f"{name} request  {size} bytes at {off}" in out or f"{name} response Success  {size} bytes at {off}" in out


def test_trailing_partial_frame_is_reported_truncated(tmp_path: Path) -> None:
    partial = bytes.fromhex(VECTORS["38"])[:50]
    src = tmp_path / "partial.bin"
    src.write_bytes(STREAM + partial)
    dump = tmp_path / "partial.txt"
    dump.write_text(_plain_spaced(STREAM + partial))
    records = jsonl(cli("hex", "--format", "jsonl", str(dump)))
    assert frames_of(records)[:-1] == EXPECTED
    last = records[-1]
    assert last["kind"] == "frame" and last["truncated"] is True
    assert (last["offset"], last["length"], last["opcode_name"]) == (len(STREAM), 50, "DCP_MUTATION")
    assert "truncated" in {f["rule"] for f in last["findings"]}
    table = cli("hex", str(dump))
    assert table.returncode == 3  # everything before it decoded, and the cut said apart
    assert "(truncated)" in table.stdout.decode()
    assert table.stderr.decode() == f"dcpinspect: {dump}: the frame at offset {len(STREAM)} is cut short: 50 of " \
                                    f"{len(bytes.fromhex(VECTORS['38']))} bytes\n"


def test_partial_header_at_the_end(tmp_path: Path) -> None:
    dump = tmp_path / "p.txt"
    dump.write_text(_plain(STREAM + bytes.fromhex(VECTORS["14"])[:10]))
    proc = cli("hex", "--format", "jsonl", str(dump))
    last = jsonl(proc)[-1]
    assert last["kind"] == "frame" and last["truncated"] and last["offset"] == len(STREAM) and last["length"] == 10
    assert proc.returncode == 3
    # bytes 10 and on are not there: null, not zeros; those that are keep their values
    assert (last["opaque"], last["cas"]) == (None, None) and last["opcode"] == bytes.fromhex(VECTORS["14"])[1]


def test_header_cut_short_shows_absent_fields_and_exits_3() -> None:
    """``echo "80 00 00 05" | dcpinspect hex``: four header bytes of 24. The fields whose
    bytes are missing are shown as absent (not as zeros), and the exit status says the
    input was cut short."""
    proc = cli("hex", input=b"80 00 00 05\n")
    out = proc.stdout.decode()
    assert proc.returncode == 3
    assert proc.stderr.decode() == "dcpinspect: stdin: the frame at offset 0 is cut short: 4 of 24 bytes\n"
    rows = {line.split("(")[0].strip(): line.split(":", 1)[1].strip() for line in out.splitlines()
            if line.split("(")[0].strip() in ("Magic", "Key length", "Extra length", "Vbucket", "Total body", "CAS")}
    assert rows["Magic"].startswith("0x80") and rows["Key length"].startswith("0x0005")
    assert rows["Extra length"] == rows["Vbucket"] == rows["Total body"] == rows["CAS"] == "absent"
    js = jsonl(cli("hex", "-f", "jsonl", input=b"80 00 00 05\n"))[0]
    assert (js["vbucket"], js["opaque"], js["cas"], js["datatype"]) == (None, None, None, None)
    strict = cli("hex", "--strict", input=b"80 00 00 05\n")
    assert strict.returncode == 3  # a cut frame is a warning: --strict has nothing to fail


def test_header_cut_inside_a_field_says_how_much_is_there() -> None:
    out = cli("hex", input=b"80 00 00 05 00 00 12\n").stdout.decode()
    assert "Vbucket       (6,7)     : absent (1 of 2 bytes)" in out


def test_jsonl_one_object_per_line_with_skipped_ranges(tmp_path: Path) -> None:
    garbage = bytes(range(1, 40))          # no magic byte (0x08 is 8: avoid it)
    garbage = bytes(b for b in garbage if b not in (0x08, 0x18))
    dump = tmp_path / "g.txt"
    head = bytes.fromhex(VECTORS["14"])
    tail = bytes.fromhex(VECTORS["38"])
    dump.write_text(_plain_spaced(head + garbage + tail))
    proc = cli("hex", "--format", "jsonl", "--collections", "on", str(dump))
    assert proc.returncode == 0
    raw_lines = proc.stdout.decode().splitlines()
    records = [json.loads(line) for line in raw_lines]        # every line parses on its own
    assert all(isinstance(r, dict) for r in records)
    assert [r["kind"] for r in records] == ["frame", "skipped", "frame"]
    assert records[1]["offset"] == len(head) and records[1]["length"] == len(garbage)
    assert records[2]["offset"] == len(head) + len(garbage) and records[2]["collection_id"] == 8
    for r in (records[0], records[2]):
        assert {"protocol", "offset", "magic", "opcode", "opcode_name", "vbucket", "opaque", "cas", "datatype",
                "key", "fields", "findings"} <= set(r)
        assert r["protocol"] == "dcp"


@pytest.mark.parametrize("option", [["--diagram"], ["--format", "diagram"]])
def test_diagram_output_reparses_to_the_same_bytes(option, tmp_path: Path) -> None:
    dump = tmp_path / "d.txt"
    dump.write_text(_plain(STREAM))
    proc = cli("hex", *option, str(dump))
    assert proc.returncode == 0
    out = proc.stdout.decode()
    assert out.count("Byte/") == len(NAMES)
    parsed = parse_hexdump(out)
    assert parsed.format == "diagram"
    assert parsed.data == STREAM
    assert [parsed.data[a:b] for a, b in parsed.blocks] == [d for _, d in WHERE]


@pytest.mark.parametrize("option", [["--diagram"], ["--format", "diagram"]])
def test_diagram_rows_without_the_notes_reparse(option, tmp_path: Path) -> None:
    """The byte cells the diagram draws are right (whatever the notes after them)."""
    import re

    dump = tmp_path / "d.txt"
    dump.write_text(_plain(STREAM))
    out = cli("hex", *option, str(dump)).stdout.decode()
    stripped = re.sub(r"\|   \S.*$", "|", out, flags=re.M)
    parsed = parse_hexdump(stripped)
    assert parsed.data == STREAM
    assert [parsed.data[a:b] for a, b in parsed.blocks] == [d for _, d in WHERE]


# ------------------------------------------------------------------ --strict and exit codes

def _session(marker_version: int) -> bytes:
    """DCP_OPEN → STREAM_REQ → Success → marker v2.x → mutation: a well-formed conversation."""
    value = dcp.SNAPSHOT_V20.pack(start_seqno=0, end_seqno=1, snapshot_type=0x01, max_visible_seqno=1)
    return b"".join([
        request(0x50, extras=dcp.OPEN.pack(flags=0x01), key=b"test:conn", opaque=1),
        response(0x50, opaque=1),
        request(0x53, extras=dcp.STREAM_REQ.pack(end_seqno=2**64 - 1), opaque=0x10, vbucket=3),
        response(0x53, value=dcp.FAILOVER_ENTRY.pack(vbucket_uuid=0xABC, seqno=0), opaque=0x10),
        request(0x56, extras=bytes([marker_version]), value=value, opaque=0x10, vbucket=3),
        request(0x57, extras=dcp.MUTATION.pack(by_seqno=1, rev_seqno=1), key=b"k1", value=b"v", opaque=0x10,
                vbucket=3),
    ])


def test_strict_exit_codes(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text(_plain(_session(0x00)))
    bad.write_text(_plain(_session(0x01)))          # v2.1 marker: removed in 8.0 → EINVAL
    assert cli("hex", str(good)).returncode == 0
    assert cli("hex", "--strict", str(good)).returncode == 0
    proc = cli("hex", str(bad))
    assert proc.returncode == 0
    assert "snapshot-marker-version" in proc.stdout.decode()
    strict = run_cli("hex", "--strict", str(bad))       # the real process's exit status
    assert strict.returncode == 1
    assert "snapshot-marker-version" in strict.stdout.decode()
    records = jsonl(cli("hex", "--strict", "--format", "jsonl", str(bad)))
    marker = next(r for r in records if r["opcode_name"] == "DCP_SNAPSHOT_MARKER")
    assert "snapshot-marker-version" in {f["rule"] for f in marker["findings"]}


def test_strict_single_invalid_frame(tmp_path: Path) -> None:
    data = bytearray(bytes.fromhex(VECTORS["12"]))
    data[24] = 0x01
    src = tmp_path / "v21.txt"
    src.write_text(bytes(data).hex())
    assert cli("hex", "--strict", str(src)).returncode == 1
    assert cli("hex", str(src)).returncode == 0


@pytest.mark.parametrize("text", [
    "this is not a hex dump at all\njust words\n",
    "",
    "zz yy xx\n",
])
def test_no_hex_exits_2(text: str, tmp_path: Path) -> None:
    src = tmp_path / "junk.txt"
    src.write_text(text)
    proc = (run_cli if not text else cli)("hex", str(src))
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert err.startswith("dcpinspect: ") and "Traceback" not in err


def test_hex_that_holds_no_frame_exits_2(tmp_path: Path) -> None:
    src = tmp_path / "garbage.txt"
    src.write_text("00 11 22 33 44 55 66 77 01 02 03 04 05 06 07 09\n" * 4)
    proc = cli("hex", str(src))
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert "no MCBP frame" in err and "Traceback" not in err


def test_missing_file_exits_2_with_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "does-not-exist.txt"
    proc = run_cli("hex", str(missing))
    assert proc.returncode == 2
    assert proc.stdout == b""
    lines = proc.stderr.decode().strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("dcpinspect: ") and "does-not-exist.txt" in lines[0]
    assert "Traceback" not in proc.stderr.decode()


def test_directory_instead_of_file_exits_2(tmp_path: Path) -> None:
    proc = cli("hex", str(tmp_path))
    assert proc.returncode == 2
    assert len(proc.stderr.decode().strip().splitlines()) == 1 and b"Traceback" not in proc.stderr


# ------------------------------------------------------------------ terminal safety

EVIL_KEY = "\x1b[31mred\x07\u009b2J[bold red]x[/]\u202eevil".encode() + b"\x9b\x1b]0;title\x07"
FORBIDDEN_BYTES = {
    "ESC": b"\x1b",
    "BEL": b"\x07",
    "CSI (raw byte)": b"\x9b",
    "CSI (U+009B)": "\u009b".encode(),
    "RLO (U+202E)": "\u202e".encode(),
}


@pytest.fixture(scope="module")
def evil_dump(tmp_path_factory) -> Path:
    raw = request(0x57, extras=dcp.MUTATION.pack(by_seqno=1, rev_seqno=1), key=EVIL_KEY, value=b"v\x1b[0m\x07",
                  opaque=0x1B5B3331)
    path = tmp_path_factory.mktemp("evil") / "evil.txt"
    path.write_text(raw.hex())
    return path


@pytest.mark.parametrize("option", [[], ["--format", "jsonl"], ["--diagram"], ["--format", "diagram"]])
@pytest.mark.parametrize("collections", ["off", "auto"])
def test_control_sequences_in_keys_are_escaped(option, collections, evil_dump: Path) -> None:
    run = run_cli if (option, collections) == ([], "off") else cli     # one real terminal-less process
    proc = run("hex", "--collections", collections, *option, str(evil_dump))
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout
    for what, raw in FORBIDDEN_BYTES.items():
        assert raw not in out, f"raw {what} reached stdout"
    assert b"\x1b" not in proc.stderr and b"\x07" not in proc.stderr


@pytest.mark.parametrize("option", [[], ["--format", "jsonl"]])
def test_rich_markup_in_keys_is_shown_literally(option, evil_dump: Path) -> None:
    out = cli("hex", "--collections", "off", *option, str(evil_dump)).stdout.decode()
    assert "[bold red]x[/]" in out
    assert "red" in out and "evil" in out and "title" in out


def test_escaped_key_is_visible_in_the_table(evil_dump: Path) -> None:
    out = cli("hex", "--collections", "off", str(evil_dump)).stdout.decode()
    key_line = next(line for line in out.splitlines() if line.startswith("Key ") and "(55" in line)
    assert "\\x1b[31mred" in key_line and "\\x07" in key_line and "\\u202e" in key_line


def test_jsonl_keeps_the_key_exactly(evil_dump: Path) -> None:
    (rec,) = jsonl(cli("hex", "--collections", "off", "--format", "jsonl", str(evil_dump)))
    assert rec["key"].startswith("\x1b[31mred\x07\u009b2J[bold red]x[/]\u202eevil")


def test_literal_backslash_key_is_distinguishable_from_an_escaped_control(tmp_path: Path) -> None:
    shown = []
    for key in (b"a\\x1bz", b"a\x1bz"):
        src = tmp_path / "k.txt"
        src.write_text(request(0x57, extras=dcp.MUTATION.pack(by_seqno=1, rev_seqno=1), key=key).hex())
        out = cli("hex", "--collections", "off", str(src)).stdout.decode()
        shown.append(next(line for line in out.splitlines() if line.startswith("Key ") and "(55" in line))
    assert shown[0].split(":", 1)[1].strip() != shown[1].split(":", 1)[1].strip()


def test_console_script_is_installed() -> None:
    exe = shutil.which("dcpinspect")
    if exe is None:
        pytest.skip("console script not on PATH")
    proc = subprocess.run([exe, "hex", "--help"], capture_output=True, timeout=60)
    assert proc.returncode == 0 and b"--strict" in proc.stdout


# ------------------------------------------------------------------ tcpdump text (packets)

@pytest.fixture(scope="module")
def pcap(tmp_path_factory) -> Path:
    if shutil.which("tcpdump") is None:
        pytest.skip("tcpdump is not installed")
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap

    path = tmp_path_factory.mktemp("pcap") / "frames.pcap"
    pkt = Ether() / IP(src="127.0.0.1", dst="127.0.0.1") / TCP(sport=11210, dport=50000, flags="PA", seq=1000) / STREAM
    wrpcap(str(path), [pkt])
    return path


@pytest.mark.parametrize("flag", ["-X", "-xx"])
def test_tcpdump_text_input(flag: str, pcap: Path, tmp_path: Path) -> None:
    """A TCP packet carrying the frames, printed by the real tcpdump: the payload's frames decode."""
    text = subprocess.run(["tcpdump", "-n", "-r", str(pcap), flag], capture_output=True, check=True).stdout.decode()
    src = tmp_path / "tcpdump.txt"
    src.write_text(text)
    proc = cli("hex", "--format", "jsonl", str(src))
    assert proc.returncode == 0
    records = jsonl(proc)
    assert [r["opcode_name"] for r in records if r["kind"] == "frame"] == OPCODE_NAMES
