"""Turn pasted hex text (plain hex, xxd, hexdump -C, od, tcpdump, Wireshark, protocol-doc
byte diagrams) into bytes. Never raises on bad input; ``HexDump.problems`` says what was skipped.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Caption", "HexDump", "parse_hexdump", "detect_format"]

MAX_PROBLEMS = 20


@dataclass(frozen=True, slots=True)
class Caption:
    """One line of a diagram's field table; ``start``/``end`` are absolute, inclusive."""

    name: str
    start: int
    end: int
    text: str
    line: int


@dataclass(frozen=True, slots=True)
class HexDump:
    """Parse result; ``blocks`` are ``data[start:end]`` ranges, one per dump."""

    data: bytes
    format: str
    captions: tuple[Caption, ...] = ()
    problems: tuple[str, ...] = ()
    blocks: tuple[tuple[int, int], ...] = ()


_H = "[0-9a-fA-F]"
_FIRST_BYTE = rf"{_H}{{2}}(?!{_H})"
# One offset-prefixed line per dump family; the regexes are mutually exclusive.
_DUMP_ROWS = {
    "tcpdump": re.compile(rf"^\s*0[xX](?P<off>{_H}{{4,8}}):\s+(?P<rest>{_H}{{2}}.*)$"),
    "xxd": re.compile(rf"^\s*(?P<off>{_H}{{4,16}}):\s+(?P<rest>{_H}{{2}}.*)$"),
    "hexdump-C": re.compile(rf"^\s*(?P<off>{_H}{{8,16}})  (?P<rest>{_FIRST_BYTE}.*)$"),
    "od": re.compile(rf"^\s*(?P<off>{_H}{{6,7}}) (?P<rest>{_FIRST_BYTE}.*)$"),
    "wireshark": re.compile(rf"^\s*(?P<off>{_H}{{4,6}}) {{2,3}}(?P<rest>{_FIRST_BYTE}.*)$"),
}
_WEAK_FAMILIES = ("od", "wireshark")      # offset syntax that plain hex can mimic
_WIDE_GROUPS = ("xxd", "tcpdump")         # hex groups of 2, 4, 8 ... digits
_MID_GAP = ("hexdump-C", "wireshark")     # two spaces allowed after the 8th byte
_ASCII_DELIM = {"hexdump-C": "|", "od": ">"}
_END_ROW = re.compile(rf"^\s*(?P<off>{_H}{{6,16}})\s*$")
_STAR_ROW = re.compile(r"^\s*\*\s*$")
_WORD = re.compile(r"\S+")
_HEX_RUN = re.compile(rf"{_H}+")
_RADIX_DIGITS = {8: re.compile(r"[0-7]+"), 10: re.compile(r"[0-9]+")}
_TCPDUMP_HEADER = re.compile(r"^(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d\.\d+\s"
                             r"|^\s*(?:IP6?|ARP|reading from file)\b|\S > \S")
#: tshark -x names each data source it dumps: "Frame (62 bytes):", "Reassembled TCP (72 bytes):"
_WIRESHARK_TITLE = re.compile(r"^\s*[A-Za-z][\w .,/-]*\(\d+ bytes\):\s*$")
_HEADERS = {"tcpdump": _TCPDUMP_HEADER, "wireshark": _WIRESHARK_TITLE}
_DIAG_DECOR = re.compile(r"^\s*(?:Byte/.*|/[\s|]*|(?:\|(?:\s*\d)+\s*)+\||\+(?:-+\+)+)\s*$")
_DIAG_ROW = re.compile(r"^\s*(?P<off>\d+)\s*\|(?P<cells>.*)$")
_DIAG_CELL = re.compile(
    r"\s*(?:(?P<byte>0[xX][0-9a-fA-F]{2})(?:\s*\('.'\)|\s*\([^()|]*\))?\s*|(?P<other>[^|]*))\|"
)
_CAPTION = re.compile(
    r"^\s*(?P<name>[^\s():|#][^():|#]*?)?\s*"
    r"\((?P<a>\d+)(?:\s*[-,]\s*(?P<b>\d+))?\)\s*:\s*"
    r"(?P<text>.*?)(?:\s+#\s*(?P<comment>.*?))?\s*$"
)

_PLAIN_SPLIT = re.compile(r"[\s,;{}\[\]]+")
_PLAIN_TOKEN = re.compile(rf"(?P<prefix>0[xX])?(?P<hex>{_H}+)|(?P<esc>(?:\\[xX]{_H}{{2}})+)")
_DIGIT = re.compile(r"[0-9]")

_Row = tuple[int, int, bytes, bool]      # line, offset, byte values, names a field


class _Assembler:
    """Collects bytes into blocks, checks offsets and enforces ``max_bytes``."""

    def __init__(self, max_bytes: int) -> None:
        self.data, self.blocks, self.problems = bytearray(), [], []
        self.problem_count, self.max_bytes, self.full, self.show = 0, max(0, max_bytes), False, hex
        self.start = 0            # index in data where the current block starts
        self.base = 0             # dump offset of the current block's first byte
        self.expected: int | None = None
        self.separated = True     # a blank/foreign line came since the last row
        self.repeat: bytes | None = None
        self.last = b""

    def problem(self, message: str) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(message)

    def all_problems(self) -> tuple[str, ...]:
        extra = self.problem_count - len(self.problems)
        return tuple(self.problems) + ((f"... {extra} more",) if extra else ())

    def close(self) -> None:
        if len(self.data) > self.start:
            self.blocks.append((self.start, len(self.data)))
        self.start = len(self.data)

    def start_block(self, offset: int) -> None:
        self.close()
        self.base = self.expected = offset
        self.repeat = None

    def add(self, chunk: bytes) -> None:
        room = self.max_bytes - len(self.data)
        if len(chunk) > room:
            chunk = chunk[: max(room, 0)]
            if not self.full:
                self.problem(f"more than max_bytes={self.max_bytes} bytes; the rest is ignored")
            self.full = True
        self.data += chunk

    def _fill(self, line: int, gap: int) -> None:
        pattern = self.repeat or b""
        if not pattern or gap % len(pattern):
            self.problem(f"line {line}: '*' repeat does not fit the {gap} byte gap")
        if pattern:
            n = max(0, min(gap, self.max_bytes - len(self.data) + 1))
            self.add((pattern * (n // len(pattern) + 1))[:n])

    def _sync(self, line: int, off: int) -> None:
        exp = self.expected
        if exp is None or off < exp or (self.separated and off != exp):
            if exp is not None and off < exp and off != 0 and not self.separated:
                self.problem(f"line {line}: offset {self.show(off)} goes back "
                             f"(expected {self.show(exp)}); starting a new block")
            self.start_block(off)
        elif off > exp:
            if self.repeat is not None:
                self._fill(line, off - exp)
            else:
                self.problem(f"line {line}: offset {self.show(off)} expected "
                             f"{self.show(exp)}, {off - exp} bytes missing")
            self.expected = off
        self.separated = False
        self.repeat = None

    def row(self, line: int, off: int, chunk: bytes) -> None:
        self._sync(line, off)
        self.add(chunk)
        self.expected = off + len(chunk)
        self.last = chunk

    def end(self, line: int, off: int) -> None:
        """A final offset-only line: the total length of the dump."""
        exp = self.expected
        if exp is None:
            return
        if off > exp and self.repeat is not None:
            self._fill(line, off - exp)
        elif off != exp:
            self.problem(f"line {line}: dump ends at {self.show(off)} "
                         f"but its rows end at {self.show(exp)}")
        self.expected, self.repeat, self.separated = None, None, True


def _hex_area(rest: str, family: str) -> tuple[bytes, bool]:
    """Bytes from the hex column of ``rest``; also whether an ASCII column follows."""
    delim = _ASCII_DELIM.get(family)
    has_ascii = False
    if delim and delim in rest:
        rest, has_ascii = rest.partition(delim)[0], True
    out, pos = bytearray(), None
    for m in _WORD.finditer(rest):
        tok = m.group()
        if pos is not None:
            gap = m.start() - pos
            if gap > 1 and not (gap == 2 and family in _MID_GAP and len(out) == 8):
                break
        if len(tok) % 2 or not _HEX_RUN.fullmatch(tok) or (
                len(tok) != 2 and family not in _WIDE_GROUPS):
            break
        out += bytes.fromhex(tok)
        pos = m.end()
    return bytes(out), has_ascii or bool(rest[pos or 0:].strip())


def _plain_hex(line: str) -> tuple[str, bool] | None:
    """Hex digits of a plain-hex line and whether the line is clearly hex."""
    tokens = [t for t in _PLAIN_SPLIT.split(line) if t]
    digits, strong = [], bool(_DIGIT.search(line))
    for tok in tokens:
        m = _PLAIN_TOKEN.fullmatch(tok)
        if not m:
            return None
        strong |= bool(m["esc"] or m["prefix"])
        if m["esc"]:
            digits.append(m["esc"].replace("\\x", "").replace("\\X", ""))
        else:   # "0x1" in a C array is one byte
            digits.append(m["hex"].zfill(2) if m["prefix"] else m["hex"])
    strong |= all(len(t) == 2 for t in tokens)
    return ("".join(digits), strong) if tokens else None


def _detect(lines: list[str]) -> tuple[str, bool]:
    """The family of the input, and whether weakly-hex plain lines are allowed."""
    if any(isinstance(item, list) for item in _diagram_scan(lines)):
        return "diagram", False
    counts: Counter[str] = Counter()
    sure: set[str] = set()         # weak families with unambiguous evidence
    plain_strong = plain_all = nonblank = 0
    previous = ""
    for line in lines:
        if not line.strip():
            continue
        nonblank += 1
        family = ""
        for candidate, regex in _DUMP_ROWS.items():
            if m := regex.match(line):
                family = candidate
                counts[family] += 1
                if _hex_area(m["rest"], family)[1] or (
                        family == "wireshark" and not m["off"].strip("0")):
                    sure.add(family)
                break
        if previous == "od" and _END_ROW.match(line):
            sure.add("od")
        previous = previous if _STAR_ROW.match(line) else family
        if plain := _plain_hex(line):
            plain_all += 1
            plain_strong += plain[1]
    for family, count in counts.most_common():
        if family not in _WEAK_FAMILIES or count >= 2 or family in sure:
            return family, False
    if plain_strong or plain_all == nonblank:
        return "plain", plain_all == nonblank
    return "empty", False


def _parse_dump(lines: list[str], family: str, asm: _Assembler) -> bool:
    """Feed an offset-based dump into ``asm``; returns whether an ASCII column was seen."""
    regex = _DUMP_ROWS[family]
    records: list[tuple[str, int, str, bytes]] = []
    has_ascii = False
    for n, line in enumerate(lines, 1):
        m = regex.match(line)
        if m:
            chunk, ascii_col = _hex_area(m["rest"], family)
            has_ascii |= ascii_col
            records.append(("row", n, m["off"], chunk))
        elif _STAR_ROW.match(line):
            records.append(("star", n, "", b""))
        elif family in ("hexdump-C", "od") and (e := _END_ROW.match(line)):
            records.append(("end", n, e["off"], b""))
        else:
            records.append(("sep", n, "", b""))
            header = _HEADERS.get(family)
            if line.strip() and not (header and header.search(line)):
                asm.problem(f"line {n}: not {family} data, skipped: {line.strip()[:40]!r}")
    radix = _od_radix(records) if family == "od" else 16
    asm.show = {8: "{:07o}".format, 10: str}.get(radix, hex)
    # Line width from row-to-row steps (a dump's last row is usually short, and a
    # '*' stands for repeated lines, so neither step says how wide a line is).
    deltas = Counter(
        int(b[2], radix) - int(a[2], radix) for a, b in zip(records, records[1:]) if a[0] == b[0] == "row"
    )
    width = max((d for d, _ in deltas.most_common(1) if d > 0), default=None)
    for kind, n, off, chunk in records:
        if asm.full:
            break
        if kind == "row":
            asm.row(n, int(off, radix), chunk[:width] if width else chunk)
        elif kind == "end":
            asm.end(n, int(off, radix))
        elif kind == "star":
            asm.repeat = asm.last
        else:
            asm.separated = True
    return has_ascii


def _od_radix(records: list[tuple[str, int, str, bytes]]) -> int:
    """Octal, decimal or hex offsets: whichever makes offsets match byte counts."""
    offs = [r[2] for r in records if r[0] != "sep" and r[2]]
    candidates = [16] + [r for r, rx in _RADIX_DIGITS.items()
                         if offs and all(rx.fullmatch(o) for o in offs)]
    prefer = (8, 10, 16) if offs and len(offs[0]) == 7 else (16, 10, 8)

    def score(radix: int) -> tuple[int, int]:
        hits = sum(int(b[2], radix) - int(a[2], radix) == len(a[3])
                   for a, b in zip(records, records[1:])
                   if a[0] == "row" and b[0] in ("row", "end"))
        return hits, -prefer.index(radix)

    return max(candidates, key=score)


def _diagram_cells(cells: str) -> tuple[bool, bytes, bool]:
    """(all cells are bytes, their values, some cell names a field)."""
    if "|" in cells:
        cells = cells[: cells.rindex("|") + 1]  # text after the last cell is a note
    else:
        cells += "|"
    values, named = bytearray(), False
    for m in _DIAG_CELL.finditer(cells):
        if m["byte"]:
            values.append(int(m["byte"][2:], 16))
        elif m["other"].strip():
            named = True
    return bool(values) and not named, bytes(values), named


def _diagram_scan(lines: list[str]) -> Iterator[list[_Row] | tuple[int, str]]:
    """Yield each diagram as a list of rows and every other line as ``(number, text)``."""
    table: list[_Row] = []
    in_table = False
    for n, line in enumerate(lines, 1):
        if _DIAG_DECOR.match(line):
            in_table = True
            continue
        if m := _DIAG_ROW.match(line):
            all_bytes, values, named = _diagram_cells(m["cells"])
            if in_table or all_bytes:
                table.append((n, int(m["off"]), values, named))
                in_table = True
                continue
        if table:
            yield table
            table = []
        in_table = False
        yield n, line
    if table:
        yield table


def _parse_diagram(lines: list[str], asm: _Assembler) -> list[Caption]:
    """Feed the example diagrams into ``asm`` and collect their captions."""
    asm.show = str
    captions: list[Caption] = []
    examples = layouts = 0
    context: tuple[int, int] | None = None   # (block start, block base) for captions
    previous_name = ""
    for item in _diagram_scan(lines):
        if isinstance(item, list):
            if any(named for *_, named in item):
                layouts, context = layouts + 1, None
                continue
            examples += 1
            asm.separated = True
            for n, off, values, _ in item:
                asm.row(n, off, values)
            context = (asm.start, asm.base)
        elif context and (c := _CAPTION.match(item[1])):
            a = int(c["a"])
            b = int(c["b"]) if c["b"] else a
            if b < a or a < context[1]:
                asm.problem(f"line {item[0]}: caption offsets ({a}-{b}) make no sense, skipped")
                continue
            previous_name = c["name"] or c["comment"] or previous_name
            start = context[0] + a - context[1]
            captions.append(Caption(previous_name, start, start + b - a, c["text"], item[0]))
    if layouts and not examples:
        asm.problem("diagram shows field names, no byte values")
    asm.close()
    for cap in captions:
        if not any(a <= cap.start and cap.end < b for a, b in asm.blocks):
            asm.problem(f"line {cap.line}: caption {cap.name!r} ({cap.start}-{cap.end}) "
                        f"lies outside its diagram's bytes")
    return captions


def _parse_plain(lines: list[str], allow_weak: bool, asm: _Assembler) -> None:
    """Feed plain hex into ``asm``; blank or foreign lines separate blocks."""
    digits: list[str] = []
    last = 0

    def flush() -> None:
        hexd = "".join(digits)
        if len(hexd) % 2:
            asm.problem(f"line {last}: odd number of hex digits ({len(hexd)}), last nibble ignored")
            hexd = hexd[:-1]
        if hexd:
            asm.start_block(0)
            asm.add(bytes.fromhex(hexd))
        digits.clear()

    for n, line in enumerate(lines, 1):
        if asm.full:
            break
        plain = _plain_hex(line) if line.strip() else None
        if plain and (plain[1] or allow_weak):
            digits.append(plain[0])
            last = n
            continue
        flush()
        if line.strip():
            asm.problem(f"line {n}: not hex, skipped: {line.strip()[:40]!r}")
    flush()


def parse_hexdump(text: str, *, max_bytes: int = 64 * 1024 * 1024) -> HexDump:
    """Auto-detect the format of ``text`` and return the bytes it shows."""
    if not isinstance(text, str) or not text.strip():
        return HexDump(b"", "empty", problems=("input is empty",))
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    family, allow_weak = _detect(lines)
    asm = _Assembler(max_bytes)
    captions: list[Caption] = []
    fmt = family
    if family == "empty":
        nonblank = sum(1 for line in lines if line.strip())
        asm.problem(f"no hex data found in {nonblank} non-blank lines")
    elif family == "plain":
        _parse_plain(lines, allow_weak, asm)
    elif family == "diagram":
        captions = _parse_diagram(lines, asm)
    else:
        has_ascii = _parse_dump(lines, family, asm)
        if family == "tcpdump":
            fmt = "tcpdump-X" if has_ascii else "tcpdump-xx"
    asm.close()
    if not asm.data and not asm.problem_count:
        asm.problem("no bytes found")
    return HexDump(bytes(asm.data), fmt, tuple(captions), asm.all_problems(), tuple(asm.blocks))


def detect_format(text: str) -> str:
    """The format ``parse_hexdump`` would report for ``text``."""
    return parse_hexdump(text).format
