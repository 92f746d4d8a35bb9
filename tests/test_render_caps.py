"""The terminal views are bounded: a value shows its first bytes, a diagram its first rows,
a field its first rows, each with a note saying how much was left out; ``--full`` (and
``--max-value`` / ``--max-diagram``) show more. Rows are as wide as they need to be, and
every offset shown is a wire offset inside the frame.

Frames are built here from the layouts; captures are written by the test.
"""

from __future__ import annotations

import io
import json
import re
import struct
from pathlib import Path

import cramjam
import pytest
from rich.cells import cell_len
from rich.console import Console

from dcpgen import write_capture
from dcpinspect.families.mcbp.messages import dcp
from dcpinspect.families.mcbp.messages.frame import decode_frame
from dcpinspect.outputs.diagram import diagram
from dcpinspect.outputs.shown import (MAX_DIAGRAM_SHOWN, MAX_ROWS_SHOWN, MAX_VALUE_SHOWN, Shown, field_text, rows,
                                      wrap)
from dcpinspect.families.mcbp.messages.describe import describe
from dcpinspect.outputs.table import frame_table
from dcpinspect.sources.hexdump import parse_hexdump
from frames import invoke_cli, request, response, run_cli

MiB = 1 << 20
BOUND = 64 * 1024  # what one frame may print in a terminal view, by default
JSON, SNAPPY, XATTR = 0x01, 0x02, 0x04


def tokens(size: int) -> bytes:
    """``size`` bytes of text with no spaces, every part different: a wrapped rendering of it
    joins back to it exactly, and a cut in the wrong place shows."""
    out = b"".join(b"%08d;" % i for i in range(size // 9 + 1))
    return out[:size]


def binary(size: int) -> bytes:
    return (bytes(range(256)) * (size // 256 + 1))[:size]


def mutation(value: bytes, datatype: int = 0, key: bytes = b"doc-1") -> bytes:
    return request(0x57, extras=dcp.MUTATION.pack(by_seqno=1, rev_seqno=1), key=key, value=value,
                   datatype=datatype, vbucket=5, opaque=0x10)


def deflate(data: bytes) -> bytes:
    return bytes(cramjam.snappy.compress_raw(data))


def xattr_blob(pairs: dict[str, str]) -> bytes:
    body = b"".join(struct.pack(">I", len(k) + len(v) + 2) + k.encode() + b"\0" + v.encode() + b"\0"
                    for k, v in pairs.items())
    return struct.pack(">I", len(body)) + body


# The four kinds of 10 MiB value: (frame, bytes of the value the table counts, inflated?)
TEXT = tokens(10 * MiB)
DOC = b'{"a":"' + tokens(10 * MiB - 8) + b'"}'
BIG = {
    "plain": (mutation(TEXT), 10 * MiB, False),
    "json": (mutation(DOC, JSON), 10 * MiB, False),
    "snappy": (mutation(deflate(TEXT), SNAPPY), 10 * MiB, True),
    "binary": (mutation(binary(10 * MiB)), 10 * MiB, False),
    "snappy-binary": (mutation(deflate(binary(10 * MiB)), SNAPPY), 10 * MiB, True),
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """Each big frame as a hex dump and as a pcap of one connection."""
    where = tmp_path_factory.mktemp("caps")
    out = {}
    for name, (frame, _, _) in BIG.items():
        dump = where / f"{name}.hex"
        dump.write_text(frame.hex())
        out[name] = (dump, write_capture([("s2c", frame)], where / f"{name}.pcap"))
    return out


def cli(*args: str):
    proc = invoke_cli(*args)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode()


def value_lines(out: str) -> tuple[str, list[str]]:
    """The value row of the table (the last row labelled Value) and its continuation lines:
    its offsets, and the value's text with each line's indent taken off."""
    lines = out.splitlines()
    at = max(i for i, line in enumerate(lines) if re.match(r"\s*Value\s+\(", line))
    head = lines[at]
    where = re.search(r"\((\d+(?:[-,]\d+)?)\)", head).group(1)
    column = head.index(": ") + 2
    parts = [head[column:]]
    for line in lines[at + 1:]:
        if not line.strip() or not line.startswith(" " * column):
            break
        parts.append(line[column:])
    return where, parts


# ------------------------------------------------------------------ 1. huge values

@pytest.mark.parametrize("command", ["hex", "decode"])
@pytest.mark.parametrize("kind", list(BIG))
def test_a_ten_mib_value_prints_its_first_bytes_and_says_how_many_are_left(kind, command, inputs) -> None:
    frame, total, inflated = BIG[kind]
    dump, pcap = inputs[kind]
    out = cli(command, "--collections", "off", str(dump if command == "hex" else pcap))
    assert len(out.encode()) < BOUND
    how = " (inflated)" if inflated else ""
    assert f"… {total - MAX_VALUE_SHOWN:,} of {total:,} bytes{how} not shown (--full shows all)" in out
    where, parts = value_lines(out)
    start = 24 + 31 + 5  # header, mutation extras, key
    assert where == f"{start}-{len(frame) - 1}"  # the wire bytes, compressed or not
    shown = "".join(p for p in parts if not p.lstrip().startswith("…"))
    if kind.endswith("binary"):
        assert bytes.fromhex(shown) == binary(MAX_VALUE_SHOWN)
    else:
        assert shown == (DOC if kind == "json" else TEXT)[:MAX_VALUE_SHOWN].decode()


@pytest.mark.parametrize("kind,command", [("plain", "decode"), ("json", "hex"), ("snappy", "hex"),
                                          ("binary", "hex")])
def test_full_shows_the_whole_value(kind, command, inputs) -> None:
    frame, total, _ = BIG[kind]
    dump, pcap = inputs[kind]
    out = cli(command, "--full", "--collections", "off", str(dump if command == "hex" else pcap))
    assert "not shown" not in out
    _, parts = value_lines(out)
    if kind == "binary":
        assert bytes.fromhex(" ".join(parts)) == binary(total)   # hex breaks between bytes
    else:
        text = "".join(parts)
        assert text.split("(10,485,760 bytes inflated)")[0] == (DOC if kind == "json" else TEXT).decode()
        assert ("bytes inflated" in text) == (kind == "snappy")


def test_max_value_sets_how_much_is_shown(inputs) -> None:
    out = cli("hex", "--max-value", "5000", "--collections", "off", str(inputs["json"][0]))
    assert f"… {10 * MiB - 5000:,} of {10 * MiB:,} bytes not shown" in out
    _, parts = value_lines(out)
    assert "".join(parts[:-1]) == DOC[:5000].decode()  # past the decoder's own 4096-character cut


def test_a_cut_never_splits_a_character() -> None:
    text = ("é" * 3000).encode()  # two bytes each: 1023 bytes is 511 and a half characters
    msg = decode_frame(mutation(text), 0)
    value = next(f for f in describe(msg)[-1:] if f.name == "value")
    shown, note = field_text(msg, value, 1023)
    assert shown == "é" * 511
    assert note.startswith(f"… {6000 - 1022:,} of 6,000 bytes not shown")


def test_jsonl_is_not_cut_by_the_terminal_caps(tmp_path: Path) -> None:
    dump = tmp_path / "v.hex"
    dump.write_text(mutation(binary(3 * MAX_VALUE_SHOWN)).hex())
    rec = json.loads(cli("hex", "-f", "jsonl", "--collections", "off", str(dump)).splitlines()[0])
    assert rec["fields"]["value_hex"] == binary(3 * MAX_VALUE_SHOWN).hex()


# ------------------------------------------------------------------ diagrams

@pytest.fixture(scope="module")
def big_frame_dump(tmp_path_factory) -> tuple[bytes, Path]:
    frame = mutation(binary(300_000))
    path = tmp_path_factory.mktemp("diagram") / "big.hex"
    path.write_text(frame.hex())
    return frame, path


def test_a_300_kb_frame_draws_its_first_rows(big_frame_dump) -> None:
    frame, path = big_frame_dump
    out = cli("hex", "--diagram", "--collections", "off", str(path))
    assert len(out.encode()) < BOUND
    assert f"… {len(frame) - MAX_DIAGRAM_SHOWN:,} more bytes not drawn (--full draws all)" in out
    assert f"Total {len(frame)} bytes" in out
    parsed = parse_hexdump(out)
    assert parsed.data == frame[:MAX_DIAGRAM_SHOWN]  # the rows drawn are the frame's first bytes


def test_max_diagram_and_full_draw_more(big_frame_dump) -> None:
    frame, path = big_frame_dump
    out = cli("hex", "--diagram", "--max-diagram", "1001", "--collections", "off", str(path))
    assert parse_hexdump(out).data == frame[:1004]  # whole rows of four
    assert f"… {len(frame) - 1004:,} more bytes not drawn" in out
    out = cli("hex", "--diagram", "--full", "--collections", "off", str(path))
    assert "not drawn" not in out
    assert parse_hexdump(out).data == frame


# ------------------------------------------------------------------ rows under one field

def test_a_long_failover_log_shows_its_first_entries(tmp_path: Path) -> None:
    entries = 5000
    log = b"".join(dcp.FAILOVER_ENTRY.pack(vbucket_uuid=i + 1, seqno=i) for i in range(entries))
    dump = tmp_path / "log.hex"
    dump.write_text(response(0x53, value=log, opaque=0x10).hex())
    out = cli("hex", str(dump))
    assert len(out.encode()) < BOUND
    assert out.count("Failover log [") == MAX_ROWS_SHOWN
    assert f"… {entries - MAX_ROWS_SHOWN:,} more rows not shown (--full shows all)" in out
    assert cli("hex", "--full", str(dump)).count("Failover log [") == entries


def test_a_long_finding_message_is_cut(tmp_path: Path) -> None:
    """A finding may quote the packet: a stream request's scope of 1 MiB."""
    scope = b'{"scope":"' + b"z" * MiB + b'"}'
    dump = tmp_path / "scope.hex"
    dump.write_text(request(0x53, extras=dcp.STREAM_REQ.pack(end_seqno=2**64 - 1), value=scope).hex())
    out = cli("hex", str(dump))
    assert len(out.encode()) < BOUND
    words = " ".join(out.split())  # rich wraps a finding at spaces
    assert re.search(r"stream-request-value: scope id 'z+ … [\d,]+ more characters not shown \(--full shows all\)",
                     words.replace("z z", "zz"))


# ------------------------------------------------------------------ 2. rows as wide as they need

def test_one_long_value_does_not_widen_the_other_rows(tmp_path: Path) -> None:
    dump = tmp_path / "long.hex"
    dump.write_text(mutation(b" ".join([b"word"] * 200)).hex())
    proc = run_cli("hex", "--collections", "off", str(dump))  # a real process, not a terminal: 160 columns
    lines = proc.stdout.decode().splitlines()
    assert all(line == line.rstrip() for line in lines)  # nothing is padded
    assert all(len(line) <= 160 for line in lines)
    magic = next(line for line in lines if line.startswith("Magic"))
    assert magic.endswith(": 0x80 (ClientRequest)") and len(magic) < 60
    _, parts = value_lines(proc.stdout.decode())
    assert len(parts) > 1 and " ".join(parts) == " ".join(["word"] * 200)  # wrapped at spaces


@pytest.mark.parametrize("width", [1, 10, 30, 80, 200])
def test_every_line_fits_the_console(width: int) -> None:
    msg = decode_frame(mutation(("語" * 500 + "x" * 500).encode() + b" " * 3, key=b"k" * 20), 0)
    con = Console(file=io.StringIO(), width=width, color_system=None)
    con.print(frame_table(msg))
    out = con.file.getvalue()
    lines = out.splitlines()
    if width >= 40:  # narrower, rich cuts the header and the labels; values still wrap
        assert all(cell_len(line) <= width for line in lines)
    if width >= 10:
        assert "語" * (5 if width >= 30 else 1) in out and "k" * (19 if width >= 30 else 1) in out


def test_wrap_keeps_every_character() -> None:
    for text, width in (("ab cd ef gh", 4), ("x" * 50, 7), ("語x語" * 20, 5), ("", 3), ("a b", 1)):
        lines = wrap(text, width)
        assert all(cell_len(line) <= width for line in lines)
        joined = " ".join(lines) if " " in text else "".join(lines)
        assert joined.replace(" ", "") == text.replace(" ", "")


# ------------------------------------------------------------------ offsets are wire offsets

def _snappy_frames() -> dict[str, bytes]:
    doc = b'{"name":"' + b"ab" * 100 + b'"}'  # compresses well: inflated far longer than sent
    return {
        "snappy": mutation(deflate(doc), SNAPPY | JSON),
        "snappy+xattr": mutation(deflate(xattr_blob({"_sync": '{"rev":"1-a"}', "meta": '"m"'}) + doc),
                                 SNAPPY | XATTR | JSON),
    }


def _spans(out: str) -> list[tuple[str, int, int]]:
    found = []
    for line in out.splitlines():
        m = re.match(r"^(\s*\S.*?)\s+\((\d+)(?:[-,](\d+))?\)\s", line)
        if m:
            found.append((m.group(1).strip(), int(m.group(2)), int(m.group(3) or m.group(2))))
    return found


@pytest.mark.parametrize("name", list(_snappy_frames()))
@pytest.mark.parametrize("at", [0, 471])
def test_offsets_shown_are_inside_the_frame(name: str, at: int) -> None:
    frame = _snappy_frames()[name]
    msg = decode_frame(frame, at)
    con = Console(file=io.StringIO(), width=160, color_system=None)
    con.print(frame_table(msg))
    out = con.file.getvalue()
    spans = _spans(out)
    assert spans and all(at <= lo <= hi < at + len(frame) for _, lo, hi in spans), spans
    value_at = at + 24 + 31 + 5
    assert [(lo, hi) for label, lo, hi in spans if label == "Value"][-1] == (value_at, at + len(frame) - 1)
    inflated = len(cramjam.snappy.decompress_raw(frame[value_at - at:]))
    assert f"{msg.fields['value_inflated_length']} bytes" in out and inflated > len(frame)
    assert "bytes inflated)" in out  # the value's text says what it came to


@pytest.mark.parametrize("name", list(_snappy_frames()))
def test_diagram_names_fields_where_they_start(name: str) -> None:
    frame = _snappy_frames()[name]
    msg = decode_frame(frame, 471)
    text = diagram(msg, None)
    rows_named = {int(m.group(1)): m.group(2) for m in re.finditer(r"^\s*(\d+)\|.*\|   (.+)$", text, re.M)}
    assert all(row < len(frame) for row in rows_named)
    value_row = (24 + 31 + 5) // 4 * 4
    assert "value" in rows_named[value_row]
    assert text.endswith(f"Total {len(frame)} bytes")


def test_rows_keep_children_inside_their_parent() -> None:
    msg = decode_frame(_snappy_frames()["snappy+xattr"], 100)
    found = list(rows(msg, describe(msg), Shown.everything()))
    assert all(100 <= r.offset and r.offset + r.size <= 100 + len(msg.data) for r in found)
