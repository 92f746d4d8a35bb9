"""Every cap on what an input can make dcpinspect do: one table of them, with their
defaults and the environment variables or options that change them.

A capture, a paste or a file can claim anything in its length fields; each cap bounds the
time or memory one such claim can cost, and what it cuts is reported (a note, a finding,
a line on stderr), never silently dropped. The table of docs/limits-and-hostile-input.md is this table.
"""

from __future__ import annotations

import os
import re

from .slots import Slots

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


class LimitError(ValueError):
    """An environment variable that does not give a usable value: the message says which."""


class Limit(Slots):
    __slots__ = ("name", "default", "unit", "what", "env", "option", "least", "most")

    def __init__(self, name: str, default: int, unit: str, what: str, env: str = "", option: str = "", least: int = 1,
                 most: int | None = None) -> None:
        self.name = name
        self.default = default
        self.unit = unit  # "bytes" (a K/M/G suffix allowed), or what is counted
        self.what = what  # what it bounds, as docs/limits-and-hostile-input.md says it
        self.env = env  # the variable that changes it, if one does
        self.option = option  # the command-line option that changes it, if one does
        self.least = least
        self.most = most

    __hash__ = Slots.hashed

    def value(self) -> int:
        """The cap in force: the variable's value when it is set, else the default."""
        text = os.environ.get(self.env, "").strip() if self.env else ""
        if not text:
            return self.default
        m = re.fullmatch(r"(\d+)\s*([KMG]?)(?:I?B)?" if self.unit == "bytes" else r"(\d+)()", text.upper())
        got = int(m.group(1)) * _UNITS[m.group(2)] if m else None
        if got is None or got < self.least or (self.most is not None and got > self.most):
            span = f"from {self.least}" + (f" to {self.most}" if self.most is not None else "")
            example = f"{self.default} or {self.default >> 20}M" if self.unit == "bytes" and self.default >= 1 << 20 \
                else str(self.default)
            raise LimitError(f"{self.env}={text[:40]!r} is not a number of {self.unit} {span} (e.g. {example})")
        return got


FRAME_BODY = Limit(
    "frame body", 30 * 1024 * 1024, "bytes",
    "Largest MCBP body length taken as a frame (kv_engine's max_packet_size); a longer "
    "claim is not a frame, and resynchronisation looks for the next header")
RECORD = Limit(
    "capture record", 16 * 1024 * 1024, "bytes",
    "Largest pcap record or pcapng block read; a longer one is passed over unread with a "
    "note, and reading goes on after it", env="DCPINSPECT_MAX_RECORD", least=64)
TEXT_INPUT = Limit(
    "text input", 256 * 1024 * 1024, "bytes",
    "Most text read from a hex-dump file or from stdin; more is refused with exit 2",
    env="DCPINSPECT_MAX_TEXT")
INFLATE = Limit(
    "Snappy inflation", 20 * 1024 * 1024, "bytes",
    "Largest size a Snappy value may inflate to (kv_engine's document cap); a larger claim "
    "is a snappy-invalid finding and the value is shown as it came")
JSON_DEPTH = Limit(
    "JSON nesting", 512, "levels",
    "Deepest nesting of a JSON document from packet data that is parsed; a deeper one is a "
    "json-too-deep finding", env="DCPINSPECT_MAX_JSON_DEPTH", most=10_000)
VALUE_TEXT = Limit(
    "JSON Lines value text", 4096, "characters",
    "Characters of a text value written into a JSON Lines record (then `…`); binary values "
    "are written whole as `value_hex`")
ENTRY_ROWS = Limit(
    "list rows decoded", 65536, "rows",
    "Rows made for the entries of one list value (failover log, feature list, vbucket "
    "seqnos); the rest are one row, while JSON carries every entry")
VALUE_SHOWN = Limit(
    "value shown", 1024, "bytes",
    "Bytes of each value the table view shows, with a note of what is left out",
    option="--max-value BYTES, --full")
DIAGRAM_SHOWN = Limit(
    "diagram shown", 512, "bytes",
    "Bytes of a frame the byte diagram draws, with a note of what is left out",
    option="--max-diagram BYTES, --full")
ROWS_SHOWN = Limit(
    "rows shown", 256, "rows",
    "Rows the table view shows under one field (failover logs, feature lists)", option="--full")
HELD = Limit(
    "bytes held", 64 * 1024 * 1024, "bytes",
    "Bytes held, all connections together, for frames not yet whole and for sniffing "
    "unknown ports; past it the largest holders give theirs up, with a note",
    env="DCPINSPECT_MAX_HELD", least=1024)
FLOWS = Limit(
    "connections", 100_000, "connections",
    "Connections tracked at once; past it the least recently active tenth are closed, with a note",
    env="DCPINSPECT_MAX_FLOWS")
OUT_OF_ORDER = Limit(
    "out-of-order bytes", 4 * 1024 * 1024, "bytes",
    "Bytes held per direction of a connection waiting for a lost segment; past it the hole "
    "is declared a gap and decoding resynchronises after it")
SNAPSHOT_KEYS = Limit(
    "snapshot keys", 4_000_000, "keys",
    "Keys remembered per snapshot for the duplicate-key rule; a larger snapshot stops being "
    "checked for duplicates")
FOLDED = Limit(
    "repeats folded", 65536, "rows",
    "Rules and streams whose repeats the validate table folds into one row; past it the "
    "findings of a new rule and stream are each printed in full (JSON Lines prints every one)")

RDB_STRING = Limit(
    "RDB string", 512 * 1024 * 1024, "bytes",
    "Longest string of an RDB file or payload held to decode it (a key, a value, a packed "
    "ziplist or listpack, an LZF string's either size, a Dragonfly blob); a longer claim is an "
    "rdb-string-too-long finding and its bytes are passed over unread",
    env="DCPINSPECT_MAX_RDB_STRING", least=1024)
RDB_INFLATE_RATIO = Limit(
    "RDB inflation ratio", 1000, "times",
    "Bytes Dragonfly's LZ4 and ZSTD blobs (nested at any depth) and the LZF strings of one RDB "
    "file or payload inflate to, all together, against the bytes read so far; past it the rest of "
    "the blob, or the LZF string, is an rdb-inflate-cap finding, passed over, and decoding goes on "
    "after it", env="DCPINSPECT_MAX_RDB_INFLATE_RATIO")
RDB_INFLATED = Limit(
    "RDB bytes inflated", 8 << 30, "bytes",
    "Bytes the compressed blobs and LZF strings of one RDB file or payload inflate to in all, "
    "whatever the ratio; "
    "past it as past the ratio", env="DCPINSPECT_MAX_RDB_INFLATED", least=1024)
RDB_NESTING = Limit(
    "RDB blob nesting", 4, "levels",
    "Compressed blobs decoded inside one another; a deeper one is an rdb-inflate-cap finding, "
    "passed over, and decoding goes on after it")
RDB_KEYS = Limit(
    "RDB keys remembered", 2_000_000, "keys",
    "Keys of one RDB snapshot remembered (as 64-bit hashes, all dbs in one table: about 16 "
    "bytes a key with the C module, 24 at most, some 70 in pure Python) for the duplicate-key "
    "rule; past it the rest of the snapshot is not checked for duplicates, with a note",
    env="DCPINSPECT_MAX_RDB_KEYS")
DIFF_KEYS = Limit(
    "diff keys", 2_000_000, "keys",
    "Keys of the first input `diff` holds (about 150 bytes each and the name); the keys of the "
    "second past them are counted as unchecked, not compared", env="DCPINSPECT_MAX_DIFF_KEYS")
RESP_FRAME = Limit(
    "RESP frame", 16 * 1024 * 1024, "bytes",
    "Largest RESP frame (a command or reply of a Redis connection) held to decode it; a "
    "larger one is passed over as it comes, a skipped range with its offset and size, and its "
    "bytes still count to the replication offset", env="DCPINSPECT_MAX_RESP_FRAME", least=1024)
RESP_ELEMENTS = Limit(
    "RESP elements", 1 << 18, "elements",
    "Elements of one RESP frame (all its arrays, maps and sets together) held; a frame that "
    "claims more is passed over as it comes, as a skipped range")

RESP_WAITING = Limit(
    "Redis commands awaiting replies", 100_000, "commands",
    "Commands of one Redis connection remembered until their replies come (to pair each reply "
    "with its command); a client that pipelines more is paired afresh from the next command")
RESP_LATENCIES = Limit(
    "Redis latencies kept", 1 << 16, "latencies",
    "Latencies kept per command name for the p50 and p99 of stats; past it every other one "
    "goes and one in two is kept from then on (the count, mean and max stay exact)")

LIMITS = (FRAME_BODY, RECORD, TEXT_INPUT, INFLATE, JSON_DEPTH, VALUE_TEXT, ENTRY_ROWS, VALUE_SHOWN, DIAGRAM_SHOWN,
          ROWS_SHOWN, HELD, FLOWS, OUT_OF_ORDER, SNAPSHOT_KEYS, FOLDED, RDB_STRING, RDB_INFLATE_RATIO, RDB_INFLATED,
          RDB_NESTING, RDB_KEYS, DIFF_KEYS, RESP_FRAME, RESP_ELEMENTS, RESP_WAITING, RESP_LATENCIES)


def check_environment() -> None:
    """Raise :class:`LimitError` for the first variable set to something unusable."""
    for lim in LIMITS:
        lim.value()


def _size(n: int, unit: str) -> str:
    if unit == "bytes" and n >= 1 << 30 and n % (1 << 30) == 0:
        return f"{n >> 30} GiB"
    if unit == "bytes" and n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    return f"{n:,} {unit}"


def markdown_table() -> str:
    """The table of limits in docs/limits-and-hostile-input.md."""
    rows = ["| limit | default | raised by | what it bounds |", "| --- | --- | --- | --- |"]
    for lim in LIMITS:
        how = ", ".join(x for x in (f"`{lim.env}`" if lim.env else "", f"`{lim.option}`" if lim.option else "") if x)
        rows.append(f"| {lim.name} | {_size(lim.default, lim.unit)} | {how or 'fixed'} | {lim.what} |")
    return "\n".join(rows) + "\n"
