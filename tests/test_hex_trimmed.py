"""`dcpinspect hex` on packet dumps: whole packets, packets from the IP header on, several
packets in one paste, and pastes whose link/IP/TCP headers were cut.

Every paste is made by the real tool (tcpdump, tshark, xxd, hexdump, od) from real frame
bytes: whole packets come from a pcap of a TCP conversation written by ``synth``; trimmed
pastes from a pcap whose records hold only the TCP payloads (records that the tool dumps
byte for byte from offset 0: raw IP for tcpdump, USER0 for tshark), or from the payload
files themselves.
One tcpdump -X paste is also laid out by the test (the issue's case) so that it runs where
tcpdump is not installed; its layout is checked against tcpdump's own where it is.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from dcpinspect.transport import synth
from frames import request, response, run_cli
from test_hexdump import rows16

LINKTYPE_USER0 = 147
#: a conversation whose frames are cut across packets by a small MSS
MESSAGES = [
    ("c2s", request(0x50, extras=bytes(8), key=b"replicate", opaque=0x11)),  # DCP_OPEN
    ("s2c", response(0x50, opaque=0x11)),
    ("c2s", request(0x53, extras=bytes(48), opaque=0x22)),  # DCP_STREAM_REQ
    ("s2c", request(0x57, extras=bytes(31), key=b"doc-1", value=b"v" * 150, opaque=0x22)),  # DCP_MUTATION
    ("s2c", request(0x58, extras=bytes(18), key=b"doc-2", opaque=0x22)),  # DCP_DELETION
]
EXPECTED = [(f[1], int.from_bytes(f[12:16], "big")) for _, f in MESSAGES]
#: payloads pasted one packet each, every packet holding whole frames
PAYLOADS = [b"".join(f for _, f in MESSAGES[:2]), b"".join(f for _, f in MESSAGES[2:])]


def tool(*argv: str) -> str:
    if shutil.which(argv[0]) is None:
        pytest.skip(f"{argv[0]} is not installed")
    proc = subprocess.run(argv, capture_output=True, check=True, text=True)
    return proc.stderr + proc.stdout  # as pasted from a terminal


def decode(text: str, tmp_path: Path, name: str = "paste.txt") -> tuple[list[tuple[int, int]], str]:
    """(opcode, opaque) of every frame ``hex -f jsonl`` finds, and what it said on stderr."""
    path = tmp_path / name
    path.write_text(text)
    proc = run_cli("hex", "-f", "jsonl", str(path))
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    records = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert not any(r.get("truncated") for r in records), records
    return [(r["opcode"], r["opaque"]) for r in records if r["kind"] == "frame"], err


@pytest.fixture(scope="module")
def packets() -> list[bytes]:
    """Ethernet frames of the conversation: handshake, data cut at 64 bytes, FIN."""
    return synth.tcp_conversation(MESSAGES, mss=64, acks=False)


@pytest.fixture(scope="module")
def whole_pcap(tmp_path_factory, packets) -> Path:
    path = tmp_path_factory.mktemp("whole") / "conversation.pcap"
    synth.write_pcap(path, packets, "ether")
    return path


def payloads_pcap(directory: Path, linktype) -> Path:
    path = directory / "payloads.pcap"
    synth.write_pcap(path, PAYLOADS, linktype)
    return path


@pytest.fixture(scope="module")
def tcpdump_payloads(tmp_path_factory) -> Path:
    """The payloads as raw-IP records: tcpdump says "unknown ip 8" and dumps them from byte 0."""
    return payloads_pcap(tmp_path_factory.mktemp("raw"), "raw")


@pytest.fixture(scope="module")
def tshark_payloads(tmp_path_factory) -> Path:
    """The payloads as USER0 records, which tshark dumps from byte 0."""
    return payloads_pcap(tmp_path_factory.mktemp("user0"), LINKTYPE_USER0)


def dumps(kind: str, chunks: list[bytes], tmp_path: Path) -> str:
    """``kind`` (xxd, hexdump -C, od) run on each chunk, the outputs pasted one after another."""
    argv = {"xxd": ["xxd"], "hexdump-C": ["hexdump", "-C"], "od": ["od", "-A", "x", "-t", "x1z"]}[kind]
    texts = []
    for i, chunk in enumerate(chunks):
        path = tmp_path / f"chunk{i}.bin"
        path.write_bytes(chunk)
        texts.append(tool(*argv, str(path)))
    return "".join(texts)


# ------------------------------------------------------------------ whole packets

@pytest.mark.parametrize("flag", ["-X", "-XX", "-x", "-xx"])
def test_tcpdump_packets_from_ip_or_link_layer(flag: str, whole_pcap: Path, tmp_path: Path) -> None:
    """tcpdump -X (from the IP header) and -XX (from the link layer), many packets in one
    paste, frames cut across packets: every frame decodes, no fallback is needed."""
    frames, err = decode(tool("tcpdump", "-n", "-r", str(whole_pcap), flag), tmp_path)
    assert frames == EXPECTED
    assert "MCBP stream" not in err


def test_wireshark_dump_of_packets(whole_pcap: Path, tmp_path: Path) -> None:
    """tshark -x: every packet, and the "Reassembled TCP" buffers it adds after a PDU's last
    packet (titled, not data to complain about; no packets themselves)."""
    text = tool("tshark", "-r", str(whole_pcap), "-x")
    assert "Reassembled TCP (" in text
    frames, err = decode(text, tmp_path)
    assert frames == EXPECTED
    assert "wireshark dump holds" in err and "decoded their TCP payloads" in err
    assert "'Frame (" not in err and "'Reassembled TCP (" not in err


@pytest.mark.parametrize("kind", ["xxd", "hexdump-C", "od"])
@pytest.mark.parametrize("strip", [0, 14], ids=["ethernet", "ip"])
def test_tool_dumps_of_packets(kind: str, strip: int, packets: list[bytes], tmp_path: Path) -> None:
    """Each packet dumped by the tool on its own and the dumps pasted together."""
    frames, err = decode(dumps(kind, [p[strip:] for p in packets], tmp_path), tmp_path)
    assert frames == EXPECTED
    assert f"holds {len(packets)} packets" in err


# ------------------------------------------------------------------ trimmed pastes

@pytest.mark.parametrize("flag", ["-X", "-x"])
def test_tcpdump_paste_without_headers(flag: str, tcpdump_payloads: Path, tmp_path: Path) -> None:
    """Two packets whose bytes start at the MCBP frame: decoded as a stream, said once."""
    text = tool("tcpdump", "-n", "-r", str(tcpdump_payloads), flag)
    assert text.count("0x0000:") == 2
    frames, err = decode(text, tmp_path)
    assert frames == EXPECTED
    assert err.count("decoded as an MCBP stream") == 1
    assert "not link-layer/IP/TCP packets" in err


def test_wireshark_paste_without_headers(tshark_payloads: Path, tmp_path: Path) -> None:
    frames, err = decode(tool("tshark", "-r", str(tshark_payloads), "-x"), tmp_path)
    assert frames == EXPECTED
    assert "packets" not in err  # bytes that are no packets are simply a stream


@pytest.mark.parametrize("kind", ["xxd", "hexdump-C", "od"])
def test_tool_dumps_without_headers(kind: str, tmp_path: Path) -> None:
    frames, err = decode(dumps(kind, PAYLOADS, tmp_path), tmp_path)
    assert frames == EXPECTED
    assert "packets" not in err


def tcpdump_X(data: bytes) -> str:
    """``data`` in tcpdump -X's layout: 16 bytes a row in groups of two, then the ASCII column."""
    return "".join(f"\t0x{off:04x}:  {groups:<39}  {text}\n" for off, groups, text in rows16(data))


def test_tcpdump_X_layout_is_tcpdumps(tcpdump_payloads: Path) -> None:
    text = tool("tcpdump", "-n", "-r", str(tcpdump_payloads), "-X")
    rows = [line + "\n" for line in text.splitlines() if line.startswith("\t0x")]
    assert "".join(rows) == tcpdump_X(PAYLOADS[0]) + tcpdump_X(PAYLOADS[1])


def test_issue_paste_cut_at_the_frame(tmp_path: Path) -> None:
    """The issue's case: a tcpdump -X paste whose first byte is the frame's magic."""
    line = "12:00:00.000000 IP 10.0.0.2.11210 > 10.0.0.1.50000: Flags [P.], seq 1:40, ack 1, length 39\n"
    frames, err = decode(line + tcpdump_X(PAYLOADS[1]), tmp_path)
    assert frames == EXPECTED[2:]
    assert "decoded as an MCBP stream" in err


def test_packets_without_mcbp_but_bytes_that_start_with_a_frame(tmp_path: Path) -> None:
    """Bytes that parse as an Ethernet/IP/TCP packet carrying no MCBP (HTTP on port 80), yet
    whose first 24 bytes are a plausible header: the frames of the bytes themselves are shown."""
    seg = synth.TcpSeg("c2s", 1, 1, synth.ACK | synth.PSH, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 0)
    packet = bytearray(synth.frame(seg, ("10.0.0.1", 40000), ("10.0.0.2", 80)))
    packet[0:12] = bytes([0x80, 0x57]) + bytes(10)  # MACs that read as a DCP_MUTATION header, empty body
    stream = bytes(packet) + PAYLOADS[1]
    frames, err = decode(tcpdump_X(stream), tmp_path)
    assert frames[0] == (0x57, 0x08004500)  # opaque: the ethertype and the IP header's first bytes
    assert frames[-len(EXPECTED[2:]):] == EXPECTED[2:]
    assert "1 packet carry no MCBP frame but the bytes start with one" in err


def test_packets_that_carry_no_frame_still_say_so(whole_pcap: Path, tmp_path: Path, packets) -> None:
    """Packets whose payload is no MCBP and whose bytes are no frame either: exit 2, as before."""
    seg = synth.TcpSeg("c2s", 1, 1, synth.ACK | synth.PSH, b"GET / HTTP/1.1\r\n\r\n", 0)
    path = tmp_path / "http.txt"
    path.write_text(tcpdump_X(synth.frame(seg, ("10.0.0.1", 40000), ("10.0.0.2", 80))[14:]))
    proc = run_cli("hex", str(path))
    assert proc.returncode == 2
    assert b"no MCBP frame" in proc.stderr
    assert b"MCBP stream" not in proc.stderr
