"""Tests for dcpinspect.sources.hexdump."""

from __future__ import annotations

import shutil
import string
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcpinspect.sources.hexdump import Caption, HexDump, detect_format, parse_hexdump

DATA = Path(__file__).parent / "data" / "hexdump"
SEEDS = Path(__file__).parent / "data" / "seeds"
FORMATS = {"plain", "xxd", "hexdump-C", "od", "tcpdump-X", "tcpdump-xx", "wireshark",
           "diagram", "empty"}

# Bytes whose ASCII column looks like hex, holds spaces and the delimiters | > <.
TRICKY = (b"\x80\x56\x00\x00\x14" + bytes(11) + bytes(64)
          + b"deadbeef  cafe 00 11 |>x<" + bytes(range(0, 256, 7)))
SAMPLES = [b"\x80", b"deadbeef", b"\x80\x56\x00\x00\x14\x00\x00\x00", bytes(range(16)),
           bytes(range(17)), b"de ad be ef 0x00", TRICKY, bytes(4096)]
SAMPLE_IDS = [f"sample{i}-{len(b)}B" for i, b in enumerate(SAMPLES)]


def tool(*argv: str, data: bytes) -> str:
    if shutil.which(argv[0]) is None:
        pytest.skip(f"{argv[0]} is not installed")
    return subprocess.run(argv, input=data, capture_output=True, check=True).stdout.decode()


def check_single_block(result: HexDump, data: bytes, fmt: str) -> None:
    assert result.format == fmt
    assert result.data == data
    assert result.problems == ()
    assert result.blocks == ((0, len(data)),)


# ---------------------------------------------------------------- real tools

@pytest.mark.parametrize("data", SAMPLES, ids=SAMPLE_IDS)
@pytest.mark.parametrize("opts", [[], ["-g1"], ["-u"], ["-c", "8"], ["-g4"], ["-a"], ["-c", "32"]])
def test_xxd(data: bytes, opts: list[str]) -> None:
    text = tool("xxd", *opts, data=data)
    check_single_block(parse_hexdump(text), data, "xxd")


def test_xxd_ascii_column_with_hex_words_is_ignored() -> None:
    data = b"deadbeefcafebabe0123456789abcdef"
    text = tool("xxd", data=data)
    assert "deadbeefcafebabe" in text      # the ASCII column really looks like hex
    check_single_block(parse_hexdump(text), data, "xxd")


@pytest.mark.parametrize("data", SAMPLES, ids=SAMPLE_IDS)
def test_hexdump_canonical(data: bytes) -> None:
    text = tool("hexdump", "-C", data=data)
    check_single_block(parse_hexdump(text), data, "hexdump-C")


def test_hexdump_star_is_expanded() -> None:
    data = b"\x80\x56" + bytes(200) + b"tail"
    text = tool("hexdump", "-C", data=data)
    assert "\n*\n" in text
    check_single_block(parse_hexdump(text), data, "hexdump-C")
    # a dump that ends inside the repeated region
    data = b"\x01" * 16 + bytes(64)
    text = tool("hexdump", "-C", data=data)
    assert text.splitlines()[-2] == "*"
    check_single_block(parse_hexdump(text), data, "hexdump-C")


@pytest.mark.parametrize("data", SAMPLES, ids=SAMPLE_IDS)
@pytest.mark.parametrize("opts", [
    ["-A", "x", "-t", "x1z", "-v"],
    ["-A", "x", "-t", "x1z"],
    ["-A", "x", "-t", "x1"],
    ["-t", "x1"],                 # octal offsets
    ["-A", "d", "-t", "x1"],      # decimal offsets
])
def test_od(data: bytes, opts: list[str]) -> None:
    text = tool("od", *opts, data=data)
    check_single_block(parse_hexdump(text), data, "od")


def test_od_octal_offsets_are_read_as_octal() -> None:
    text = tool("od", "-t", "x1", data=bytes(range(40)))
    assert "0000020 10 11" in text
    assert parse_hexdump(text).data == bytes(range(40))


def _packets():
    scapy = pytest.importorskip("scapy.all")
    payload = bytes.fromhex("80560000140000000000000000deadbeef") + b"  deadbeef 0x0000: ab"
    return [
        scapy.Ether() / scapy.IP(src="127.0.0.1", dst="127.0.0.1")
        / scapy.TCP(sport=11210, dport=5000, flags="PA") / scapy.Raw(payload),
        scapy.Ether() / scapy.IP(src="127.0.0.1", dst="127.0.0.1")
        / scapy.TCP(sport=5000, dport=11210, flags="A"),
        scapy.Ether() / scapy.IP(src="10.0.0.1", dst="10.0.0.2")
        / scapy.TCP(sport=11210, dport=41000, flags="PA") / scapy.Raw(bytes(range(1, 50))),
    ]


def _pcap(tmp_path: Path) -> tuple[Path, list[bytes]]:
    scapy = pytest.importorskip("scapy.all")
    packets = _packets()
    path = tmp_path / "capture.pcap"
    scapy.wrpcap(str(path), packets)
    return path, [bytes(p) for p in packets]


@pytest.mark.parametrize("flag,fmt,link_layer", [
    ("-X", "tcpdump-X", False), ("-XX", "tcpdump-X", True),
    ("-x", "tcpdump-xx", False), ("-xx", "tcpdump-xx", True),
])
def test_tcpdump_real(tmp_path: Path, flag: str, fmt: str, link_layer: bool) -> None:
    if shutil.which("tcpdump") is None:
        pytest.skip("tcpdump is not installed")
    path, frames = _pcap(tmp_path)
    proc = subprocess.run(["tcpdump", "-n", "-r", str(path), flag],
                          capture_output=True, check=True, text=True)
    text = proc.stderr + proc.stdout       # as pasted from a terminal
    result = parse_hexdump(text)
    expected = frames if link_layer else [f[14:] for f in frames]
    assert result.format == fmt
    assert result.problems == ()
    assert [result.data[a:b] for a, b in result.blocks] == expected


@pytest.mark.parametrize("name,fmt,strip", [
    ("tcpdump_X.txt", "tcpdump-X", 14), ("tcpdump_xx.txt", "tcpdump-xx", 0),
    ("tshark_x.txt", "wireshark", 0),
])
def test_captured_tool_output_fixtures(name: str, fmt: str, strip: int) -> None:
    result = parse_hexdump((DATA / name).read_text())
    assert result.format == fmt
    assert result.problems == ()
    blocks = [result.data[a:b] for a, b in result.blocks]
    assert len(blocks) == 2
    assert blocks[0][:2] == b"\x45\x00" if strip else blocks[0][:6] == b"\xff" * 6
    assert blocks[0].endswith(b"deadbeef 0x0000: ab")
    assert len(blocks[0]) == 92 - strip and len(blocks[1]) == 54 - strip


def test_tshark_real(tmp_path: Path) -> None:
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed")
    path, frames = _pcap(tmp_path)
    proc = subprocess.run(["tshark", "-r", str(path), "-x"], capture_output=True, text=True)
    if proc.returncode:
        pytest.skip(f"tshark failed: {proc.stderr[:200]}")
    result = parse_hexdump(proc.stdout)
    assert result.format == "wireshark"
    assert [result.data[a:b] for a, b in result.blocks] == frames


def test_wireshark_copy_as_hex_dump() -> None:
    # Wireshark's "Copy as Hex Dump": offset, 3 spaces, bytes, 3 spaces, ASCII;
    # the short last line is not padded and its ASCII ("be") looks like hex.
    result = parse_hexdump((DATA / "wireshark_copy.txt").read_text())
    assert result.format == "wireshark"
    assert len(result.data) == 50
    assert result.data[:16] == bytes.fromhex("805600001400000000000000deadbeef")
    assert result.data[-6:] == b"deadbe"
    assert result.problems == ()


def test_wireshark_hex_only_and_mid_gap() -> None:
    text = ("0000  80 56 00 00 14 00 00 00  00 00 00 00 de ad be ef   .V...... ........\n"
            "0010  01 02  ..\n")
    result = parse_hexdump(text)
    assert result.format == "wireshark"
    assert result.data == bytes.fromhex("805600001400000000000000deadbeef") + b"\x01\x02"
    hex_only = "0000   80 56 00 00\n"
    assert parse_hexdump(hex_only).data == bytes.fromhex("80560000")
    assert detect_format(hex_only) == "wireshark"


@pytest.mark.parametrize("text,fmt", [
    ("00000000: 8056 0000  .V..", "xxd"),
    ("00000000  80 56 00 00                                       |.V..|\n00000004\n", "hexdump-C"),
    ("000000 80 56 00 00  >.V..<", "od"),
    ("\t0x0000:  4500 0028 0001 0000  E..(....", "tcpdump-X"),
    ("\t0x0000:  4500 0028 0001 0000", "tcpdump-xx"),
    ("0000   80 56 00 00   .V..", "wireshark"),
    ("   0| 0x80          | 0x56          |", "diagram"),
    ("80 56 00 00", "plain"),
    ("nothing to see here", "empty"),
    ("", "empty"),
])
def test_detect_format(text: str, fmt: str) -> None:
    assert detect_format(text) == fmt


# ---------------------------------------------------------------- plain hex

@pytest.mark.parametrize("text", [
    "80 56 00 00 14",
    "8056000014",
    "0x80, 0x56, 0x00, 0x00, 0x14",
    "0x80,0x56,0x0,0x0,0x14",
    "\\x80\\x56\\x00\\x00\\x14",
    "0x8056000014",
    "80 56\n00\n00 14\n",
    "8056 0000 14",
    "{0x80, 0x56, 0x00, 0x00, 0x14};",
    "  80 56 00 00 14  \r\n",
])
def test_plain_variants(text: str) -> None:
    for variant in (text, text.upper().replace("0X", "0x").replace("\\X", "\\x")):
        result = parse_hexdump(variant)
        assert result.format == "plain"
        assert result.data == b"\x80\x56\x00\x00\x14"
        assert result.problems == ()


def test_plain_odd_nibbles_keep_full_bytes() -> None:
    result = parse_hexdump("80 56 0")
    assert result.data == b"\x80\x56"
    assert result.problems == ("line 1: odd number of hex digits (5), last nibble ignored",)


def test_plain_starting_with_zero_offset_like_digits() -> None:
    assert parse_hexdump("0000000080560000").data == bytes(4) + b"\x80\x56\x00\x00"
    result = parse_hexdump("00000000 80 56 00 00")
    assert (result.format, result.data) == ("plain", bytes(4) + b"\x80\x56\x00\x00")


def test_plain_blocks_split_on_blank_lines() -> None:
    result = parse_hexdump("80 56\n00 00\n\n81 56 01\n")
    assert result.data == bytes.fromhex("80560000815601")
    assert result.blocks == ((0, 4), (4, 7))


def test_plain_letters_only_needs_a_pure_hex_input() -> None:
    assert parse_hexdump("deadbeef").data == bytes.fromhex("deadbeef")
    mixed = parse_hexdump("The bytes:\ncafe\n80 56\n")
    assert mixed.data == b"\x80\x56"       # "cafe" alone in prose is a word


# ---------------------------------------------------------------- dumps: offsets, blocks, garbage

def rows16(data: bytes):
    """``(offset, hex in groups of two bytes, ASCII column)`` of each 16-byte row, as xxd and
    tcpdump -X lay them out."""
    for i in range(0, len(data), 16):
        chunk = data[i:i + 16]
        groups = " ".join(chunk[j:j + 2].hex() for j in range(0, len(chunk), 2))
        yield i, groups, "".join(chr(c) if 0x20 <= c < 0x7f else "." for c in chunk)


def _xxd_like(data: bytes, start: int = 0) -> str:
    return "".join(f"{start + i:08x}: {groups:<39}  {text}\n" for i, groups, text in rows16(data))


def test_missing_line_is_reported() -> None:
    lines = _xxd_like(bytes(range(64))).splitlines()
    del lines[2]
    result = parse_hexdump("\n".join(lines))
    assert result.data == bytes(range(32)) + bytes(range(48, 64))
    assert result.problems == ("line 3: offset 0x30 expected 0x20, 16 bytes missing",)
    assert result.blocks == ((0, 48),)


def test_several_dumps_become_blocks() -> None:
    a, b, c = b"\x80\x56" * 10, b"\x81\x56" * 3, b"\x00\x01" * 9
    # blank line, restart at offset 0 without a blank line, dump at another offset
    text = _xxd_like(a) + "\n" + _xxd_like(b) + _xxd_like(c) + "\n" + _xxd_like(a, start=0x100)
    result = parse_hexdump(text)
    assert result.data == a + b + c + a
    assert result.blocks == ((0, 20), (20, 26), (26, 44), (44, 64))
    assert result.problems == ()
    # a forward jump inside one dump is a gap, not a new dump
    result = parse_hexdump(_xxd_like(b) + _xxd_like(c, start=0x100))
    assert result.blocks == ((0, 24),)
    assert result.problems == ("line 2: offset 0x100 expected 0x6, 250 bytes missing",)


def test_garbage_around_a_dump_is_reported_and_skipped() -> None:
    text = "$ xxd packet.bin\n" + _xxd_like(TRICKY) + "that was the packet\n"
    result = parse_hexdump(text)
    assert result.format == "xxd"
    assert result.data == TRICKY
    assert result.problems[0] == "line 1: not xxd data, skipped: '$ xxd packet.bin'"
    assert result.problems[1].startswith("line 11: not xxd data, skipped")


def test_problem_list_is_capped() -> None:
    text = "".join(f"junk line {i}\n" for i in range(50)) + _xxd_like(b"\x80\x56")
    result = parse_hexdump(text)
    assert result.data == b"\x80\x56"
    assert len(result.problems) == 21
    assert result.problems[-1] == "... 30 more"


def test_max_bytes_stops_with_a_problem() -> None:
    result = parse_hexdump(_xxd_like(bytes(1000)), max_bytes=100)
    assert result.data == bytes(100)
    assert any("max_bytes=100" in p for p in result.problems)


def test_star_expansion_respects_max_bytes() -> None:
    text = ("00000000  01 02 03 04 05 06 07 08  09 0a 0b 0c 0d 0e 0f 10  |................|\n"
            "*\n"
            "ffffffffffff\n")
    result = parse_hexdump(text, max_bytes=4096)
    assert result.data == bytes(range(1, 17)) * 256
    assert any("max_bytes=4096" in p for p in result.problems)


def test_tcpdump_timestamp_line_is_not_hex() -> None:
    line = "12:00:00.000000 IP 127.0.0.1.11210 > 127.0.0.1.5000: Flags [P.], seq 1:25, length 24"
    result = parse_hexdump(line)
    assert (result.format, result.data) == ("empty", b"")
    assert result.problems


def test_large_input_decodes_whole() -> None:
    data = bytes(range(256)) * 12_000                  # 3 MB of bytes, ~13 MB of text
    result = parse_hexdump(_xxd_like(data))
    assert result.data == data


# ---------------------------------------------------------------- diagrams

def _seed_texts(name: str, seed: str) -> list[str]:
    return [(DATA / name).read_text(), (SEEDS / seed).read_text()]


SNAPSHOT_V1_CAPTIONS = [
    ("Magic", 0, 0, "0x80"), ("Opcode", 1, 1, "0x56"), ("Key length", 2, 3, "0x0000"),
    ("Extra length", 4, 4, "0x14"), ("Data type", 5, 5, "0x00"), ("Vbucket", 6, 7, "0x0000"),
    ("Total body", 8, 11, "0x00000014"), ("Opaque", 12, 15, "0xdeadbeef"),
    ("CAS", 16, 23, "0x0000000000000000"), ("Start Seqno", 24, 31, "0x0000000000000000"),
    ("End Seqno", 32, 39, "0x0000000000000008"),
    ("Snapshot Type", 40, 43, "0x00000001 (disk)"),
]
SNAPSHOT_V2_CAPTIONS = [
    ("Magic", 44, 44, "0x80"), ("Opcode", 45, 45, "0x56"), ("Key length", 46, 47, "0x0000"),
    ("Extra length", 48, 48, "0x01"), ("Data type", 49, 49, "0x00"),
    ("Vbucket", 50, 51, "0x0000"), ("Total body", 52, 55, "0x00000025"),
    ("Opaque", 56, 59, "0xdeadbeef"), ("CAS", 60, 67, "0x0000000000000000"),
    ("Version", 68, 68, "0x00"), ("Start Seqno", 69, 76, "0x0000000000000001"),
    ("End Seqno", 77, 84, "0x0000000000000008"), ("Snapshot Type", 85, 88, "0x00000002 (disk)"),
    ("Max Visible Seqno", 89, 96, "0x0000000000000008"),
    ("High Completed Seqno", 97, 104, "0x0000000000000007"),
]


@pytest.mark.parametrize("text", _seed_texts("snapshot_marker_indented.md", "001_957c72489c2ff7c0.txt")
                         + _seed_texts("snapshot_marker_flat.txt", "000_82aafa3c52158972.txt"))
def test_seed_snapshot_marker(text: str) -> None:
    result = parse_hexdump(text)
    assert result.format == "diagram"
    assert result.problems == ()
    assert result.blocks == ((0, 44), (44, 105))
    v1, v2 = (result.data[a:b] for a, b in result.blocks)
    assert v1[:16] == bytes.fromhex("80 56 00 00 14 00 00 00 00 00 00 00 de ad be ef")
    assert v1[-4:] == bytes.fromhex("00 00 00 01")
    assert v2[:16] == v1[:16] and len(v2) == 61 and v2[-1:] == b"\x07"
    assert v2[24] == 0x01 and v2[32] == 0x01 and v2[44] == 0x02
    got = [(c.name, c.start, c.end, c.text) for c in result.captions]
    assert got == SNAPSHOT_V1_CAPTIONS + SNAPSHOT_V2_CAPTIONS
    opaque = result.captions[7]
    assert result.data[opaque.start:opaque.end + 1] == bytes.fromhex("deadbeef")
    assert all(isinstance(c.line, int) and c.line > 0 for c in result.captions)


def test_seed_snapshot_marker_caption_lines() -> None:
    text = (DATA / "snapshot_marker_indented.md").read_text()
    lines = text.splitlines()
    for caption in parse_hexdump(text).captions:
        assert caption.name in lines[caption.line - 1]
        assert caption.text in lines[caption.line - 1]


@pytest.mark.parametrize("text", _seed_texts("system_event_flat.txt", "003_b4c883c1ff0e9f61.txt"))
def test_seed_system_event(text: str) -> None:
    result = parse_hexdump(text)
    assert result.format == "diagram"
    assert result.problems == ()
    assert result.blocks == ((0, 69),)        # the field-name layout adds no bytes
    assert result.data[:8] == bytes.fromhex("80 5f 00 0c 0d 00 02 10")
    assert result.data[-4:] == bytes.fromhex("00 01 19 40")
    assert result.data[37:49] == b"mycollection"
    got = [(c.name, c.start, c.end, c.text) for c in result.captions]
    assert got[:3] == [("Magic", 0, 0, "0x80"), ("Opcode", 1, 1, "0x5F"),
                       ("Key length", 2, 3, "0x000C")]
    assert got[9:] == [
        ("by seqno", 24, 31, "0x0000000000000004"), ("event", 32, 35, "0x00000000"),
        ("version", 36, 36, "0x01"), ("Key", 37, 48, "mycollection"),
        ("Value", 49, 56, "0x0000000000000002"), ("Collection-ID", 57, 60, "0x00000008"),
        ("Scope-ID", 61, 64, "0x00000000"), ("max_ttl", 65, 68, "0x00011940"),
    ]
    for name, start, end, value in got:
        if value.startswith("0x"):
            assert int(value, 16) == int.from_bytes(result.data[start:end + 1], "big"), name


LAYOUT = """\
     Byte/     0       |       1       |       2       |       3       |
        /              |               |               |               |
       |0 1 2 3 4 5 6 7|0 1 2 3 4 5 6 7|0 1 2 3 4 5 6 7|0 1 2 3 4 5 6 7|
       +---------------+---------------+---------------+---------------+
      0| by_seqno ...                                                  |
       +---------------+---------------+---------------+---------------+
      4| ... by_seqno                                                  |
       +---------------+---------------+---------------+---------------+
      8| event                                                         |
       +---------------+---------------+---------------+---------------+
     12| version       |
       +---------------+
       Total 13 bytes
"""


def test_layout_only_diagram_has_no_bytes() -> None:
    result = parse_hexdump(LAYOUT)
    assert (result.format, result.data, result.blocks) == ("diagram", b"", ())
    assert result.problems == ("diagram shows field names, no byte values",)


def test_flush_left_rows_without_borders() -> None:
    text = "Example:\n0| 0x80 | 0x56 | 0x00 | 0x00 |\n4| 0x14 |\nTotal 5 bytes\n"
    result = parse_hexdump(text)
    assert (result.format, result.data) == ("diagram", b"\x80\x56\x00\x00\x14")


def test_diagram_rows_of_any_width_and_char_annotations() -> None:
    text = (
        "+-------+-------+-------+-------+-------+-------+\n"
        " 0| 0x80 | 0x7c ('|') | 0x27 (''') | 0x6d ('m') | 0x20 (' ') | 0x00 |\n"
        "+-------+-------+-------+-------+-------+-------+\n"
        " 6| 0x01 | 0x02 |\n"
    )
    result = parse_hexdump(text)
    assert result.data == b"\x80|'m \x00\x01\x02"
    assert result.problems == ()


def test_diagram_offset_gap_is_reported_and_concatenated() -> None:
    text = ("+----+----+----+----+\n"
            " 0| 0x80 | 0x56 | 0x00 | 0x00 |\n"
            " 4| 0x14 | 0x00 | 0x00 | 0x00 |\n"
            "12| 0xde | 0xad | 0xbe | 0xef |\n")
    result = parse_hexdump(text)
    assert result.data == bytes.fromhex("8056000014000000deadbeef")
    assert result.problems == ("line 4: offset 12 expected 8, 4 bytes missing",)


def test_markdown_and_prose_are_not_hex() -> None:
    text = (
        "| Flag | Name   | Description |\n"
        "|------|---|------------|\n"
        "| 0x01 | Memory | Specifies that the snapshot contains in-memory items only. |\n"
        "Flag | Name | Description |\n---|---|---|\n"
        "0x01 | Memory | Specifies that the snapshot contains in-memory items only. |\n"
        "0x02 | Disk | Specifies that the snapshot contains on-disk items only. |\n"
        "- 0: 1b version\n- 1: 8b Start Seqno\n* 17: 4b Snapshot Type\n"
        "### Encoding Examples\n"
        "PROTOCOL_BINARY_RESPONSE_KEY_ENOENT (0x01)\n"
        "If a stream does not exist for the vbucket specfied on this connection.\n"
    )
    result = parse_hexdump(text)
    assert (result.format, result.data) == ("empty", b"")
    assert result.problems == ("no hex data found in 13 non-blank lines",)
    # the same prose around a diagram is silently ignored
    doc = text + "\n      0| 0x80 | 0x56 |\n\n" + text
    result = parse_hexdump(doc)
    assert (result.format, result.data, result.problems) == ("diagram", b"\x80\x56", ())


def test_caption_rules() -> None:
    text = (
        "Magic (0): 0x99\n"                                # before any diagram: ignored
        "+------+------+------+------+\n"
        " 0| 0x80 | 0x01 | 0x02 | 0x03 |\n"
        " 4| 0x00 | 0x00 | 0x00 | 0x08 |\n"
        "+------+------+------+------+\n"
        "    Field           (offset) (value)\n"
        "    Magic           (0)    : 0x80   \n"
        "    Pair            (1,2)  : 0x0102 # two bytes\n"
        "    (3): 0x03\n"
        "    (4-7): 0x00000008 # Collection-ID\n"
        "    Beyond          (8-9)  : 0x0000\n"
    )
    result = parse_hexdump(text)
    assert [(c.name, c.start, c.end, c.text, c.line) for c in result.captions] == [
        ("Magic", 0, 0, "0x80", 7), ("Pair", 1, 2, "0x0102", 8), ("Pair", 3, 3, "0x03", 9),
        ("Collection-ID", 4, 7, "0x00000008", 10), ("Beyond", 8, 9, "0x0000", 11),
    ]
    assert result.problems == (
        "line 11: caption 'Beyond' (8-9) lies outside its diagram's bytes",)


def test_caption_with_reversed_offsets_is_reported() -> None:
    result = parse_hexdump("0| 0x80 | 0x56 |\nOpcode (1-0): 0x56\nMagic (0): 0x80\n")
    assert [c.name for c in result.captions] == ["Magic"]
    assert result.problems == ("line 2: caption offsets (1-0) make no sense, skipped",)


def test_captions_after_a_layout_drawing_are_ignored() -> None:
    assert parse_hexdump(LAYOUT + "by seqno (0-7): 0x01\n").captions == ()


# ---------------------------------------------------------------- garbage

@pytest.mark.parametrize("text", [
    "", "   \n\t\n", "hello world", "The quick brown fox jumps over the lazy dog.\n" * 5,
    "\x00\x01\x02\xff\xfe garbage \x7f", "}{][)(*&^%$#@!", "|||\n+--+\n/",
    "Byte/ 0 | 1 |\n", "   12| version |\n",
])
def test_garbage_gives_no_bytes(text: str) -> None:
    result = parse_hexdump(text)
    assert result.data == b""
    assert result.problems
    assert result.blocks == ()


NO_HEX = st.characters(blacklist_characters="0123456789abcdefABCDEF", blacklist_categories=("Cs",))


@settings(deadline=None)
@given(st.text(alphabet=NO_HEX, max_size=300))
def test_text_without_hex_digits_gives_no_bytes(text: str) -> None:
    result = parse_hexdump(text)
    assert result.data == b""
    assert result.problems


@settings(deadline=None)
@given(st.binary(max_size=400))
def test_binaryish_text_without_hex_digits(raw: bytes) -> None:
    text = bytes(c for c in raw if chr(c) not in string.hexdigits).decode("latin-1")
    result = parse_hexdump(text)
    assert result.data == b""
    assert result.problems


def _check_invariants(result: HexDump) -> None:
    assert isinstance(result, HexDump)
    assert result.format in FORMATS
    assert len(result.problems) <= 21
    if not result.data:
        assert result.problems
    ends = [0] + [b for _, b in result.blocks]
    assert [a for a, _ in result.blocks] == ends[:-1]
    assert ends[-1] == len(result.data)
    assert all(a < b for a, b in result.blocks)
    assert all(isinstance(c, Caption) and c.start <= c.end for c in result.captions)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=500) | st.lists(st.sampled_from([
    "0| 0x80 | 0x56 |", "+---+---+", "Magic (0): 0x80", "(1-2): 0x0000 # x", "*",
    "00000000: 8056 0000  .V..", "00000010  80 56 00 00  |.V..|", "000000 80 56", "0000   80 56",
    "\t0x0000:  4500 0034", "12:00:00.000000 IP a > b", "00000020", "", "deadbeef", "80 5",
    "  4| 0x14 | x |", "Byte/ 0 |", "000010 00", "ffffffffff",
]), max_size=30).map("\n".join))
def test_never_raises(text: str) -> None:
    result = parse_hexdump(text, max_bytes=100_000)
    _check_invariants(result)
    assert detect_format(text) == result.format


# ---------------------------------------------------------------- round trips

def _plain(data: bytes, style: int) -> str:
    if style == 0:
        return " ".join(f"{b:02x}" for b in data)
    if style == 1:
        return "\n".join(data[i:i + 20].hex().upper() for i in range(0, len(data), 20))
    if style == 2:
        return ", ".join(f"0x{b:02x}" for b in data)
    if style == 3:
        return "".join(f"\\x{b:02x}" for b in data)
    return "0x" + data.hex()


def _hexdump_c_like(data: bytes) -> str:
    lines, previous, starred = [], None, False
    for i in range(0, len(data), 16):
        chunk = data[i:i + 16]
        if chunk == previous and len(chunk) == 16:
            if not starred:
                lines.append("*")
            starred = True
            continue
        previous, starred = chunk, False
        left = " ".join(f"{b:02x}" for b in chunk[:8])
        right = " ".join(f"{b:02x}" for b in chunk[8:])
        text = "".join(chr(c) if 0x20 <= c < 0x7f else "." for c in chunk)
        lines.append(f"{i:08x}  {left:<23}  {right:<23}  |{text}|")
    lines.append(f"{len(data):08x}")
    return "\n".join(lines) + "\n"


def _diagram(data: bytes, width: int, indent: str) -> str:
    def cell(b: int) -> str:
        return f"0x{b:02x} ('{chr(b)}')" if chr(b).isalnum() and b < 0x7f else f"0x{b:02x}"

    border = indent + "   +" + "---------------+" * width
    lines = [indent + "Byte/" + "|".join(f"{i:^15}" for i in range(width)) + "|", border]
    for i in range(0, len(data), width):
        cells = "|".join(f" {cell(b):<14}" for b in data[i:i + width])
        lines += [f"{indent}{i:>3}|{cells}|", border]
    return "Prose before.\n\n" + "\n".join(lines) + "\n\n    Field (offset) (value)\n"


@settings(deadline=None)
@given(st.binary(min_size=1, max_size=300), st.integers(0, 4))
def test_round_trip_plain(data: bytes, style: int) -> None:
    result = parse_hexdump(_plain(data, style))
    assert (result.format, result.data, result.problems) == ("plain", data, ())


@settings(deadline=None)
@given(st.binary(min_size=1, max_size=300), st.integers(0, 0xFFFF))
def test_round_trip_xxd_like(data: bytes, start: int) -> None:
    result = parse_hexdump(_xxd_like(data, start * 16))
    assert (result.format, result.data, result.problems) == ("xxd", data, ())


@settings(deadline=None)
@given(st.lists(st.sampled_from([bytes(16), b"\xff" * 16, b"de ad be ef |>x<  ", b"\x80V"]),
                min_size=1, max_size=20).map(b"".join) | st.binary(min_size=1, max_size=300))
def test_round_trip_hexdump_c_like(data: bytes) -> None:
    result = parse_hexdump(_hexdump_c_like(data))
    assert (result.format, result.data, result.problems) == ("hexdump-C", data, ())


@settings(deadline=None)
@given(st.binary(min_size=1, max_size=200), st.integers(1, 8), st.sampled_from(["", "      "]))
def test_round_trip_diagram(data: bytes, width: int, indent: str) -> None:
    result = parse_hexdump(_diagram(data, width, indent))
    assert (result.format, result.data, result.problems) == ("diagram", data, ())
    assert result.blocks == ((0, len(data)),)
