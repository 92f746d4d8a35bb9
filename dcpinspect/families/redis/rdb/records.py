"""What the RDB decoder gives, as each completes: keys, aux fields, other opcodes, and the
file's end."""

from __future__ import annotations

from collections import namedtuple

from ....slots import Slots

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ....findings import Finding
    from .types import ValueType


class StreamId(namedtuple("StreamId", "ms seq")):
    """A stream entry's ID, a pair (milliseconds, sequence) like any other; shown as Redis
    writes it (``XADD``, ``XINFO``): ``1795757513708-0``."""

    __slots__ = ()

    def __str__(self) -> str:
        return f"{self.ms}-{self.seq}"


class KeyRecord(Slots):
    """One key: where it is (``offset`` of its first prefix opcode, or of its type byte
    when it has none; ``length`` through the end of its value), what it is, and how big
    (``size``: bytes of its serialised value). ``value``: the decoded value, when the parser
    was asked to keep it; ``extra``: what else the record says (slot, Dragonfly flags, stream
    metadata, module name, ...); ``blob_offset``: the offset inside a Dragonfly compressed
    blob (``offset`` is then the blob's); ``line``: the key's whole JSON Lines line with its
    value and digest, when the parser was asked for lines (``RdbParser(lines=...)``) and its
    C lane wrote it (the value is then not kept)."""

    kind = "key"
    __slots__ = ("db", "key", "type_id", "vtype", "offset", "length", "size", "elements", "encoding", "expire_ms",
                 "idle", "freq", "value", "extra", "findings", "blob_offset", "line")

    def __init__(self, db: int, key: bytes, type_id: int, vtype: ValueType, offset: int, length: int = 0,
                 size: int = 0, elements: int | None = None, encoding: str = "", expire_ms: int | None = None,
                 idle: int | None = None, freq: int | None = None, value: Any = None, extra: dict | None = None,
                 findings: list[Finding] | None = None, blob_offset: int | None = None,
                 line: bytes | None = None) -> None:
        self.db = db
        self.key = key
        self.type_id = type_id
        self.vtype = vtype
        self.offset = offset
        self.length = length
        self.size = size
        self.elements = elements
        self.encoding = encoding
        self.expire_ms = expire_ms
        self.idle = idle
        self.freq = freq
        self.value = value
        self.extra = {} if extra is None else extra
        self.findings = [] if findings is None else findings
        self.blob_offset = blob_offset
        self.line = line

    @property
    def type(self) -> str:
        return self.vtype.type


class AuxRecord(Slots):
    """An AUX field (opcode 0xFA): a key and a value, both strings."""

    kind = "aux"
    __slots__ = ("key", "value", "offset", "length", "findings")

    def __init__(self, key: bytes, value: bytes, offset: int, length: int,
                 findings: list[Finding] | None = None) -> None:
        self.key = key
        self.value = value
        self.offset = offset
        self.length = length
        self.findings = [] if findings is None else findings


class OpRecord(Slots):
    """Any other opcode, with what it carries: SELECTDB, RESIZEDB, SLOT_INFO, FUNCTION2,
    MODULE_AUX, Dragonfly's journal blobs and offsets, ..."""

    kind = "opcode"
    __slots__ = ("opcode", "name", "offset", "length", "fields", "findings", "blob_offset")

    def __init__(self, opcode: int, name: str, offset: int, length: int, fields: dict | None = None,
                 findings: list[Finding] | None = None, blob_offset: int | None = None) -> None:
        self.opcode = opcode
        self.name = name
        self.offset = offset
        self.length = length
        self.fields = {} if fields is None else fields
        self.findings = [] if findings is None else findings
        self.blob_offset = blob_offset


class Ending(Slots):
    """How the input ended: the header, the EOF opcode and the checksum (None where the
    input did not reach them), and the bytes after the end."""

    kind = "end"
    __slots__ = ("vendor", "version", "eof_offset", "checksum_stored", "checksum_computed", "bytes_read", "trailing",
                 "stopped", "findings")

    def __init__(self, vendor: str | None, version: int | None, eof_offset: int | None = None,
                 checksum_stored: int | None = None, checksum_computed: int | None = None, bytes_read: int = 0,
                 trailing: int = 0, stopped: bool = False, findings: list[Finding] | None = None) -> None:
        self.vendor = vendor
        self.version = version
        self.eof_offset = eof_offset
        self.checksum_stored = checksum_stored
        self.checksum_computed = checksum_computed
        self.bytes_read = bytes_read
        self.trailing = trailing
        self.stopped = stopped
        self.findings = [] if findings is None else findings

    @property
    def checksum(self) -> str:
        """"ok", "mismatch", "not computed" (stored as 0), "absent" (before version 5),
        or "unchecked" (the input did not reach it)."""
        if self.checksum_stored is None:
            before_5 = self.eof_offset is not None and self.version is not None and self.version < 5
            return "absent" if before_5 else "unchecked"
        if self.checksum_stored == 0:
            return "not computed"
        if self.checksum_computed is None:
            return "unchecked"
        return "ok" if self.checksum_stored == self.checksum_computed else "mismatch"
