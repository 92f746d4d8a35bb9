"""What the RDB decoder gives, as each completes: keys, aux fields, other opcodes, and the
file's end."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from ....findings import Finding
from .types import ValueType


class StreamId(NamedTuple):
    """A stream entry's ID, a pair (milliseconds, sequence) like any other; shown as Redis
    writes it (``XADD``, ``XINFO``): ``1795757513708-0``."""

    ms: int
    seq: int

    def __str__(self) -> str:
        return f"{self.ms}-{self.seq}"


@dataclass(slots=True)
class KeyRecord:
    """One key: where it is (``offset`` of its first prefix opcode, or of its type byte
    when it has none; ``length`` through the end of its value), what it is, and how big
    (``size``: bytes of its serialised value)."""

    kind: ClassVar[str] = "key"
    db: int
    key: bytes
    type_id: int
    vtype: ValueType
    offset: int
    length: int = 0
    size: int = 0
    elements: int | None = None
    encoding: str = ""
    expire_ms: int | None = None
    idle: int | None = None
    freq: int | None = None
    #: the decoded value, when the parser was asked to keep it
    value: Any = None
    #: what else the record says (slot, Dragonfly flags, stream metadata, module name, ...)
    extra: dict = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    #: the offset inside a Dragonfly compressed blob (``offset`` is then the blob's)
    blob_offset: int | None = None
    #: the key's whole JSON Lines line with its value and digest, when the parser was asked
    #: for lines (``RdbParser(lines=...)``) and its C lane wrote it (the value is then not kept)
    line: bytes | None = None

    @property
    def type(self) -> str:
        return self.vtype.type


@dataclass(slots=True)
class AuxRecord:
    """An AUX field (opcode 0xFA): a key and a value, both strings."""

    kind: ClassVar[str] = "aux"
    key: bytes
    value: bytes
    offset: int
    length: int
    findings: list[Finding] = field(default_factory=list)


@dataclass(slots=True)
class OpRecord:
    """Any other opcode, with what it carries: SELECTDB, RESIZEDB, SLOT_INFO, FUNCTION2,
    MODULE_AUX, Dragonfly's journal blobs and offsets, ..."""

    kind: ClassVar[str] = "opcode"
    opcode: int
    name: str
    offset: int
    length: int
    fields: dict = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    blob_offset: int | None = None


@dataclass(slots=True)
class Ending:
    """How the input ended: the header, the EOF opcode and the checksum (None where the
    input did not reach them), and the bytes after the end."""

    kind: ClassVar[str] = "end"
    vendor: str | None
    version: int | None
    eof_offset: int | None = None
    checksum_stored: int | None = None
    checksum_computed: int | None = None
    bytes_read: int = 0
    trailing: int = 0
    stopped: bool = False
    findings: list[Finding] = field(default_factory=list)

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
