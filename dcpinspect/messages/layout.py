"""Declarative field layouts: the single description that decodes, renders and encodes.

A :class:`Layout` is a tuple of :class:`FieldSpec` laid end to end, big-endian.
From it come a precompiled ``struct.Struct`` for decoding, the located
:class:`Field` rows the tables and diagrams print, the JSON values, and
``pack`` for building frames in tests and samples.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol

_INT_CODES = {1: "B", 2: "H", 4: "I", 8: "Q"}


@dataclass(frozen=True, slots=True)
class Field:
    """One located, decoded field: what tables, diagrams and JSON are made of."""

    name: str
    label: str
    offset: int
    size: int
    value: Any
    display: str
    children: tuple["Field", ...] = ()


@dataclass(frozen=True, slots=True)
class FieldSpec:
    name: str
    size: int
    label: str
    kind: str = "uint"  # "uint" or "bytes"
    enum: Mapping[int, str] | None = None
    flags: Mapping[int, str] | None = None
    show: str = "hex"  # "hex", "dec" or "both"

    @property
    def code(self) -> str:
        if self.kind == "uint" and self.size in _INT_CODES:
            return _INT_CODES[self.size]
        return f"{self.size}s"

    def json(self, value: Any) -> Any:
        if self.kind == "bytes":
            return value.hex()
        if self.flags is not None:
            return flag_names(value, self.flags)
        if self.enum is not None:
            return self.enum.get(value, value)
        return value

    def display(self, value: Any) -> str:
        if self.kind == "bytes":
            return value.hex(" ") if value else "(empty)"
        text = f"0x{value:0{self.size * 2}x}"
        if self.show == "dec":
            text = str(value)
        elif self.show == "both":
            text = f"{text} ({value})"
        if self.flags is not None:
            names = flag_names(value, self.flags)
            text += f" ({'|'.join(names) if names else 'none'})"
        elif self.enum is not None:
            text += f" ({self.enum.get(value, 'unknown')})"
        return text


def flag_names(value: int, flags: Mapping[int, str]) -> list[str]:
    """Names of the bits set in ``value``; unnamed bits as ``0x..`` strings."""
    names = [name for bit, name in flags.items() if value & bit]
    rest = value & ~sum(flags)
    bit = 1
    while rest:
        if rest & bit:
            names.append(f"0x{bit:x}")
            rest &= ~bit
        bit <<= 1
    return names


def unknown_bits(value: int, flags: Mapping[int, str]) -> int:
    return value & ~sum(flags)


def u8(name: str, label: str, **kw: Any) -> FieldSpec:
    return FieldSpec(name, 1, label, **kw)


def u16(name: str, label: str, **kw: Any) -> FieldSpec:
    return FieldSpec(name, 2, label, **kw)


def u32(name: str, label: str, **kw: Any) -> FieldSpec:
    return FieldSpec(name, 4, label, **kw)


def u64(name: str, label: str, **kw: Any) -> FieldSpec:
    return FieldSpec(name, 8, label, **kw)


def seqno(name: str, label: str) -> FieldSpec:
    return FieldSpec(name, 8, label, show="both")


def raw(name: str, size: int, label: str) -> FieldSpec:
    return FieldSpec(name, size, label, kind="bytes")


@dataclass(frozen=True)
class Layout:
    """Fixed-size record of big-endian fields."""

    name: str
    fields: tuple[FieldSpec, ...]
    size: int = field(init=False)
    offsets: tuple[int, ...] = field(init=False)
    names: tuple[str, ...] = field(init=False)
    _struct: struct.Struct = field(init=False, repr=False, compare=False)
    _convert: tuple[tuple[str, FieldSpec], ...] = field(init=False, repr=False, compare=False)
    _decode: Any = field(init=False, repr=False, compare=False)

    def __init__(self, name: str, *fields: FieldSpec) -> None:
        offsets, off = [], 0
        for spec in fields:
            offsets.append(off)
            off += spec.size
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "fields", tuple(fields))
        object.__setattr__(self, "offsets", tuple(offsets))
        object.__setattr__(self, "names", tuple(f.name for f in fields))
        object.__setattr__(self, "size", off)
        object.__setattr__(self, "_struct", struct.Struct(">" + "".join(f.code for f in fields)))
        # fields whose JSON form is not the raw value (bytes, flags, enums)
        object.__setattr__(self, "_convert", tuple(
            (f.name, f) for f in fields if f.kind != "uint" or f.flags is not None or f.enum is not None))
        object.__setattr__(self, "_decode", None)  # made by the first decode: ~1 ms a layout at start-up otherwise

    def __reduce__(self):  # picklable for Spark executors
        return (Layout, (self.name, *self.fields))

    def unpack(self, buf: bytes | memoryview, offset: int = 0) -> tuple:
        return self._struct.unpack_from(buf, offset)

    def values(self, buf: bytes | memoryview, offset: int = 0) -> dict[str, Any]:
        """Raw values by field name (ints and bytes)."""
        return dict(zip(self.names, self._struct.unpack_from(buf, offset)))

    def json(self, buf: bytes | memoryview, offset: int = 0) -> dict[str, Any]:
        """JSON-ready values by field name (flags as name lists, enums by name)."""
        return {
            spec.name: spec.json(v)
            for spec, v in zip(self.fields, self._struct.unpack_from(buf, offset))
        }

    def decode(self, buf: bytes | memoryview, offset: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
        """(raw values, JSON values) by field name, from one unpack."""
        decode = self._decode
        if decode is None:
            decode = _compile_decode(self)
            object.__setattr__(self, "_decode", decode)
        return decode(buf, offset)

    def describe(self, buf: bytes | memoryview, offset: int, base: int) -> list[Field]:
        """Located fields; ``base`` is the absolute offset of ``buf[offset]``."""
        out = []
        for spec, rel, v in zip(self.fields, self.offsets, self._struct.unpack_from(buf, offset)):
            out.append(Field(spec.name, spec.label, base + rel, spec.size, spec.json(v), spec.display(v)))
        return out

    def pack(self, **values: Any) -> bytes:
        unknown = set(values) - set(self.names)
        if unknown:
            raise TypeError(f"{self.name}: unknown fields {sorted(unknown)}")
        args = []
        for spec in self.fields:
            v = values.get(spec.name, b"\0" * spec.size if spec.kind == "bytes" else 0)
            args.append(v)
        return self._struct.pack(*args)

    def spec(self, name: str) -> FieldSpec:
        return self.fields[self.names.index(name)]


def _compile_decode(layout: Layout):
    """``layout.decode`` unrolled for this layout: one unpack, then both dicts as displays,
    ``FieldSpec.json`` called only for the fields that need it. It runs for the extras of
    nearly every frame; made from the field specs, so the layout stays the one source."""
    names = [f"v{i}" for i in range(len(layout.fields))]
    converted = {name for name, _ in layout._convert}
    raw = ", ".join(f"{spec.name!r}: {v}" for spec, v in zip(layout.fields, names))
    json = ", ".join(f"{spec.name!r}: " + (f"json_{v}({v})" if spec.name in converted else v)
                     for spec, v in zip(layout.fields, names))
    source = (f"def decode(buf, offset=0):\n"
              f"    ({', '.join(names)}{',' if names else ''}) = unpack_from(buf, offset)\n"
              f"    return {{{raw}}}, {{{json}}}\n")
    namespace = {"unpack_from": layout._struct.unpack_from}
    namespace.update({f"json_{v}": spec.json for spec, v in zip(layout.fields, names) if spec.name in converted})
    exec(source, namespace)  # noqa: S102 - the source is built from the layout's own field names
    return namespace["decode"]


def walk(fields, depth: int = 0):
    """Every field of a tree, depth first, with its depth."""
    for f in fields:
        yield depth, f
        yield from walk(f.children, depth + 1)


class Located(Protocol):
    """A decoded frame whose fields lie at known offsets of its bytes: what the tables and
    byte diagrams draw of a family's message (a family's other records are
    :class:`~dcpinspect.sessions.decoded.Decoded`)."""

    offset: int
    data: bytes
    #: its fields by name, JSON-ready
    fields: dict
    findings: list
    truncated: bool
    #: how this view of the bytes was obtained, when not plainly
    note: str
    name: str
    size: int
    is_request: bool
    status: int | None
    status_name: str | None

    def located(self) -> "list[Field]":
        """Its field tree, every offset absolute: the header's, then one group per part of the body."""

    def record(self, **extra) -> dict:
        """Its JSON Lines object (``kind: "frame"``), ``extra`` first."""

    def inflated(self) -> bytes | None:
        """Its value as the document it stands for, where it travelled compressed (None
        where it cannot be had)."""
