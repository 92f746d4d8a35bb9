"""What a Redis connection's frames decode to, as the outputs read them (the
:class:`~dcpinspect.sessions.decoded.Decoded` interface): a RESP frame (a command, a reply,
the handshake's lines) with its replication offset, and a piece of an RDB payload with the
keys, aux fields and findings completed in it, in the same objects as the ``rdb`` command
writes (and, in a Dragonfly flow's snapshot, its replication opcodes); a record of a
Dragonfly flow's stable-sync journal with its LSN."""

from __future__ import annotations

from typing import Any

from ....findings import Finding
from ....limits import VALUE_TEXT
from ....messages.text import key_text
from ....outputs.escape import safe
from ....sessions.decoded import Decoded
from ..reports import report
from .stats import RedisStats
from ..rdb.data import function_json, value_json
from ..dragonfly.journal import OP_NAMES, JournalEntry
from ..rdb.records import AuxRecord, KeyRecord, OpRecord
from ..rdb.types import DF_FULLSYNC_END, DF_JOURNAL_BLOB, DF_JOURNAL_OFFSET, FUNCTION2, FUNCTION_PRE_GA

#: RESP type bytes by name (spec/rdb.md §12; RESP3 adds the second row)
TYPE_NAMES = {"+": "simple", "-": "error", ":": "integer", "$": "bulk", "*": "array",
              "_": "null", ",": "double", "#": "boolean", "!": "blob-error", "=": "verbatim", "(": "big-number",
              "%": "map", "~": "set", ">": "push", "inline": "inline", "keepalive": "keepalive", "invalid": "invalid"}
STRING_TYPES = frozenset("+-$!=(,")
#: characters of a command name counted in summaries
NAME_CHARS = 32
#: the opcodes of a Dragonfly flow's snapshot shown as rows of their own (§8.2, §13.2)
REPLICATION_OPCODES = frozenset({DF_FULLSYNC_END, DF_JOURNAL_BLOB, DF_JOURNAL_OFFSET})
#: a function library's records, kept when the payload is read with its data
FUNCTION_OPCODES = frozenset({FUNCTION2, FUNCTION_PRE_GA})


def text(raw: bytes, limit: int | None = None) -> str:
    """Bytes from the wire as JSON text (UTF-8, other bytes as ``\\xNN``), cut at ``limit``."""
    limit = VALUE_TEXT.default if limit is None else limit
    if len(raw) > 4 * limit:
        raw = raw[:4 * limit]
    out = key_text(raw)
    return out if len(out) <= limit else out[:limit] + "…"


def json_value(value: tuple) -> Any:
    """A parsed RESP value as JSON: strings as text, aggregates as lists, maps as lists of pairs."""
    kind, payload = value
    if payload is None or isinstance(payload, (bool, int)):
        return payload
    if isinstance(payload, bytes):
        return text(payload)
    if isinstance(payload, list):
        if kind == "inline":
            return [text(w) for w in payload]
        items = [json_value(v) for v in payload]
        return [items[i:i + 2] for i in range(0, len(items), 2)] if kind in "%|" else items
    return str(payload)


def command_of(value: tuple) -> list[bytes] | None:
    """The words of a command: an inline line, or an array of strings (None otherwise)."""
    kind, payload = value
    if kind == "inline":
        return payload or None
    if kind == "*" and payload and all(v[0] in STRING_TYPES and isinstance(v[1], bytes) for v in payload):
        return [v[1] for v in payload]
    return None


class RespRecord(Decoded):
    """One RESP frame: its type, the command's words (or the reply's value), its
    replication offset (of its first byte, when known: the ``+FULLRESYNC`` offset plus the
    command stream's bytes before it) and what the handshake or an ACK says in ``fields``."""

    __slots__ = ("offset", "size", "type", "value", "command", "repl_offset", "fields", "findings", "truncated",
                 "name", "is_request", "role", "reply_to", "answers", "latency_ms")

    stats_part = RedisStats
    protocol = "resp"

    def __init__(self, offset: int, size: int, type_: str, value: tuple | None, truncated: bool = False) -> None:
        self.offset, self.size, self.type, self.value, self.truncated = offset, size, type_, value, truncated
        self.command = command_of(value) if value is not None else None
        self.repl_offset: int | None = None
        self.fields: dict[str, Any] = {}
        self.findings: list[Finding] = []
        self.is_request = self.command is not None
        #: what the frame is to its connection: a command, a reply (or a RESP3 push, a
        #: published message, a MONITOR line: see pairing.py); "" when not known (a hex dump)
        self.role = ""
        self.reply_to: int | None = None  # the frame of the command a reply answers
        self.answers: str | None = None  # and its name
        self.latency_ms: float | None = None
        if self.command is not None:
            self.name = safe(text(self.command[0], NAME_CHARS).upper())
        else:
            self.name = _value_name(value, type_)

    def as_reply(self, role: str) -> None:
        """The frame is the server's: a reply (or a push, a message, a MONITOR line), not a command."""
        self.role = role
        if self.command is not None:
            self.command, self.is_request = None, False
            self.name = _value_name(self.value, self.type)
        self.is_request = False

    @property
    def verb(self) -> bytes:
        """The command's name in upper case (b"" for what is no command)."""
        return self.command[0].upper() if self.command else b""

    @property
    def args(self) -> list[bytes]:
        return self.command[1:] if self.command else []

    def json_rows(self) -> list[dict[str, Any]]:
        row: dict[str, Any] = {"kind": "frame", "protocol": "resp", "offset": self.offset, "length": self.size,
                               "type": TYPE_NAMES.get(self.type, self.type)}
        if self.command is not None:
            row["command"] = [text(w) for w in self.command]
        elif self.value is not None and self.type not in ("keepalive",):
            row["value"] = json_value(self.value)
        row["repl_offset"] = self.repl_offset
        if self.role:
            row["role"] = self.role
        if self.role == "reply":
            row["reply_to"], row["latency_ms"] = self.reply_to, self.latency_ms
        row.update(self.fields)
        row["truncated"] = self.truncated
        row["findings"] = [f.to_json() for f in self.findings]
        return [row]

    def table_rows(self) -> list[tuple[str, str]]:
        rows = [("type", TYPE_NAMES.get(self.type, self.type))]
        if self.command is not None:
            rows.append(("command", " ".join(text(w) for w in self.command)))
        elif self.value is not None and self.type != "keepalive":
            rows.append(("value", str(json_value(self.value))))
        if self.repl_offset is not None:
            rows.append(("replication offset", f"{self.repl_offset} to {self.repl_offset + self.size}"))
        if self.reply_to is not None:
            latency = "" if self.latency_ms is None else f" after {self.latency_ms} ms"
            rows.append(("reply to", f"{self.answers} in frame {self.reply_to}{latency}"))
        rows += [(k.replace("_", " "), str(v)) for k, v in self.fields.items()]
        return rows

    def title(self) -> str:
        if self.is_request:
            what = f"{self.name} command"
        elif self.value is None:
            what = f"{self.name} reply" if self.role == "reply" or not self.role else self.name
        else:
            what = f"{self.role or 'reply'} {safe(shape(self.value))}"
        return f"RESP {what}  {self.size} bytes at {self.offset}" + ("  (truncated)" * self.truncated)


#: what a RESP3 aggregate is called in a reply's title
AGGREGATE_NAMES = {"*": "array", "%": "map", "~": "set", ">": "push", "|": "attribute"}


def shape(value: tuple) -> str:
    """A server's value in short, as redis-cli users read it: ``+OK``, ``-ERR``, ``$5``,
    ``:42``, ``array of 2``, ``map of 1``, ``null``."""
    kind, payload = value
    if kind in AGGREGATE_NAMES:
        if payload is None:
            return "null array"
        n = len(payload) // 2 if kind in "%|" else len(payload)
        return f"{AGGREGATE_NAMES[kind]} of {n}"
    if payload is None:
        return "null" if kind == "_" else f"{kind}-1"
    if kind in "+-":
        return kind + text(payload, 40)
    if kind in "$!=":
        return f"{kind}{len(payload)}"
    if kind == "#":
        return "#t" if payload else "#f"
    return f"{kind}{text(payload, 40) if isinstance(payload, bytes) else payload}"


def _value_name(value: tuple | None, type_: str) -> str:
    """What summaries count a value that is no command under: a line's first word, else its type."""
    if value is not None and value[0] in "+-" and isinstance(value[1], bytes):
        return safe(value[0] + text(value[1].split(b" ", 1)[0], NAME_CHARS))
    return TYPE_NAMES.get(type_, type_)


class PayloadRecord(Decoded):
    """A piece of an RDB payload sent over a replication connection: its header
    (``head``: the form and length or end mark), or its bytes, with the records the RDB
    decoder completed in them and, on the last piece, the payload's summary."""

    __slots__ = ("offset", "size", "head", "records", "summary", "findings", "truncated", "repl_offset")

    stats_part = RedisStats
    protocol = "rdb"
    name = "RDB payload"

    def __init__(self, offset: int, size: int, head: dict | None = None, truncated: bool = False) -> None:
        self.offset, self.size, self.head, self.truncated = offset, size, head, truncated
        self.records: list = []
        self.summary: dict | None = None
        self.findings: list[Finding] = []
        self.repl_offset: int | None = None

    def add(self, records: list, functions: bool = False) -> None:
        """Records of the RDB decoder: kept for the outputs, their findings gathered;
        ``functions``: function libraries too (read with the data, their code)."""
        for rec in records:
            self.findings.extend(report.findings_of(rec))
            if isinstance(rec, (KeyRecord, AuxRecord, Finding)) or (isinstance(rec, OpRecord) and (
                    rec.opcode in REPLICATION_OPCODES or (functions and rec.opcode in FUNCTION_OPCODES))):
                self.records.append(rec)

    @property
    def keys(self) -> list[KeyRecord]:
        return [r for r in self.records if isinstance(r, KeyRecord)]

    def json_rows(self) -> list[dict[str, Any]]:
        rows = []
        if self.head is not None:
            rows.append({"kind": "payload", "protocol": "rdb", "offset": self.offset, "length": self.size,
                         **self.head, "repl_offset": self.repl_offset,
                         "findings": [f.to_json() for f in self.findings]})
        for rec in self.records:
            if isinstance(rec, KeyRecord):
                row = report.key_json(rec)
                if "digest" in rec.extra:  # read with Options.data: its value whole
                    row["digest"] = rec.extra["digest"]
                    row["value"] = value_json(rec)
                rows.append(row)
            elif isinstance(rec, AuxRecord):
                rows.append(report.aux_json(rec))
            elif isinstance(rec, OpRecord):
                rows.append(function_json(rec) or opcode_json(rec))
            else:
                rows.append({"kind": "finding", "protocol": "rdb", **rec.to_json()})
        if self.summary is not None:
            rows.append(self.summary)
        return rows

    def table_rows(self) -> list[tuple[str, str]]:
        rows = []
        if self.head is not None:
            rows += [(k.replace("_", " "), str(v)) for k, v in self.head.items()]
        for rec in self.records:
            if isinstance(rec, KeyRecord):
                offset, db, key, type_, encoding, elements, size, expiry, _ = report.key_row(rec)
                rows.append((f"key at {offset}", f"db {db} {key} {type_} {encoding} elements {elements or '-'} "
                                                 f"size {size}" + (f" expires {expiry}" if expiry else "")))
            elif isinstance(rec, AuxRecord):
                rows.append((f"aux at {rec.offset}", f"{text(rec.key or b'')} = {text(rec.value or b'')}"))
            elif isinstance(rec, OpRecord):
                fields = opcode_json(rec)
                shown = ([" ".join(e.get("command") or [e["op"]]) for e in fields["journal"]] if "journal" in fields
                         else [f"{k} {v}" for k, v in fields.items() if k == "lsn"])
                rows.append((f"{rec.name} at {rec.offset}", "; ".join(shown)))
        if self.summary is not None:
            s = self.summary
            rows.append(("payload", f"{s['keys']} keys, {s['bytes']} bytes, checksum {s['checksum']}, "
                                    f"{'complete' if s['complete'] else 'incomplete'}"))
        return rows

    def title(self) -> str:
        what = "header" if self.head is not None else f"{len(self.keys)} keys"
        return f"RDB payload ({what})  {self.size} bytes at {self.offset}" + ("  (truncated)" * self.truncated)


def entry_json(entry: JournalEntry) -> dict[str, Any]:
    """A journal record's op and what it carries."""
    out: dict[str, Any] = {"op": entry.name}
    if entry.dbid is not None:
        out["db"] = entry.dbid
    if entry.txid is not None:
        out["txid"] = entry.txid
    if entry.lsn is not None:
        out["lsn"] = entry.lsn
    if entry.args:
        out["command"] = [text(a) for a in entry.args]
    return out


def opcode_json(rec: OpRecord) -> dict[str, Any]:
    """A Dragonfly replication opcode of a flow's snapshot: FULLSYNC_END, JOURNAL_OFFSET
    (its ``lsn``), JOURNAL_BLOB (its ``journal`` records)."""
    row: dict[str, Any] = {"kind": "opcode", "protocol": "rdb", "name": rec.name, "offset": rec.offset,
                           "length": rec.length}
    if rec.blob_offset is not None:
        row["blob_offset"] = rec.blob_offset
    for name, value in rec.fields.items():
        row[name] = [entry_json(e) for e in value] if name == "journal" else value
    row["findings"] = [f.to_json() for f in rec.findings]
    return row


class JournalRecord(Decoded):
    """One record of a Dragonfly flow's stable-sync journal (spec/rdb.md §9, §13.2): its op
    (with the SELECT before it, if any), the LSN it has (``lsn``: counted from the flow's
    JOURNAL_OFFSET or the LSN a partial sync asked for, one a record; an LSN op carries its
    own and takes none), its db (the last SELECT's), the command, and which sync and flow
    it belongs to (``fields``)."""

    __slots__ = ("offset", "size", "entry", "lsn", "db", "fields", "findings", "truncated", "name")

    stats_part = RedisStats
    protocol = "journal"

    def __init__(self, offset: int, size: int, entry: JournalEntry | None, truncated: bool = False) -> None:
        self.offset, self.size, self.entry, self.truncated = offset, size, entry, truncated
        self.lsn: int | None = None
        self.db: int | None = None
        self.fields: dict[str, Any] = {}
        self.findings: list[Finding] = []
        if entry is None:
            self.name = "journal"
        elif entry.args:
            self.name = safe("journal " + text(entry.args[0], NAME_CHARS).upper())
        else:
            self.name = "journal " + OP_NAMES.get(entry.op, str(entry.op))

    @property
    def op(self) -> str | None:
        return None if self.entry is None else self.entry.name

    def json_rows(self) -> list[dict[str, Any]]:
        row: dict[str, Any] = {"kind": "frame", "protocol": "journal", "offset": self.offset, "length": self.size,
                               "op": self.op, "lsn": self.lsn, "db": self.db}
        entry = self.entry
        if entry is not None:
            if entry.txid is not None:
                row["txid"] = entry.txid
            if entry.args:
                row["command"] = [text(a) for a in entry.args]
        row.update(self.fields)
        row["truncated"] = self.truncated
        row["findings"] = [f.to_json() for f in self.findings]
        return [row]

    def table_rows(self) -> list[tuple[str, str]]:
        rows = [("op", self.op or "-"), ("lsn", "-" if self.lsn is None else str(self.lsn)),
                ("db", "-" if self.db is None else str(self.db))]
        entry = self.entry
        if entry is not None and entry.txid is not None:
            rows.append(("txid", str(entry.txid)))
        if entry is not None and entry.args:
            rows.append(("command", " ".join(text(a) for a in entry.args)))
        rows += [(k.replace("_", " "), str(v)) for k, v in self.fields.items()]
        return rows

    def title(self) -> str:
        lsn = "" if self.lsn is None else f" LSN {self.lsn}"
        return f"Dragonfly {self.name}{lsn}  {self.size} bytes at {self.offset}" + ("  (truncated)" * self.truncated)
