"""Scapy layers for MCBP and DCP, generated from the layout tables.

One frame dissects as a chain of layers, and the next frame of the same TCP
payload follows as the payload of the last one::

    MCBP                      header (``HEADER_LAYOUTS``) + framing extras
    / MCBP_<layout>_Extras    the opcode's extras ``Layout``, or MCBP_Extras (raw)
    / MCBP_Body               key + value, or MCBP_<layout>_Value (key + value ``Layout``)
    / MCBP ...                the next frame

Building works the same way; the length fields left ``None`` are filled in::

    MCBP(opcode=0x57, vbucket=5) / MCBP_DCP_MUTATION_Extras(by_seqno=4) / MCBP_Body(key=b"k", value=b"v")

``show()`` prints each field with its spec label.  ``bind_default_ports()``
makes Scapy dissect TCP ports 11210, 11209 and 11211 as MCBP.
"""

from __future__ import annotations

import struct
import sys
from typing import Any, Callable, Iterable

from scapy.config import conf
from scapy.fields import (
    ByteEnumField, ByteField, ConditionalField, Field, FlagsField, IntEnumField, IntField, LongEnumField,
    LongField, MultipleTypeField, ShortEnumField, ShortField, StrLenField, XByteField, XIntField, XLongField,
    XShortField, XStrFixedLenField, XStrLenField,
)
from scapy.packet import NoPayload, Packet, bind_layers
from scapy.themes import AnsiColorTheme

from .messages import dcp
from .messages.catalog import Body
from .messages.header import HEADER_LAYOUTS, HEADER_SIZE, header_layout
from ...messages.layout import FieldSpec, Layout
from .messages.names import MAGICS, REQUEST_MAGICS, SUCCESS_LIKE_STATUS
from .messages.registry import CLIENT_SPECS, SERVER_SPECS, lookup, opcode_name

DEFAULT_PORTS = (11210, 11209, 11211)
MAX_FRAMES = 50  # frames dissected per payload (Scapy nests layers; deep chains exhaust the stack)

_UINT = {  # size -> field classes for show="hex", other shows, enums
    1: (XByteField, ByteField, ByteEnumField),
    2: (XShortField, ShortField, ShortEnumField),
    4: (XIntField, IntField, IntEnumField),
    8: (XLongField, LongField, LongEnumField),
}
_LENGTHS = ("framing_extras_length", "key_length", "extras_length", "total_body_length")
_HEADER_DEFAULTS: dict[str, Any] = {"magic": 0x80, **dict.fromkeys(_LENGTHS)}
_BODY_LABELS = {"framing_extras": "Framing extras", "extras": "Extras", "engine_specific": "Engine specific",
                "key": "Key", "value": "Value"}


def scapy_field(spec: FieldSpec, default: Any = 0) -> Field:
    """The Scapy field for one layout field."""
    if spec.kind != "uint" or spec.size not in _UINT:
        return XStrFixedLenField(spec.name, bytes(spec.size), spec.size)
    if spec.flags is not None:
        return FlagsField(spec.name, default, spec.size * 8, dict(spec.flags))
    hex_, plain, enum = _UINT[spec.size]
    if spec.enum is not None:
        return enum(spec.name, default, dict(spec.enum))
    return (hex_ if spec.show == "hex" else plain)(spec.name, default)


def merged_fields(layouts: Iterable[Layout], which: Callable[[Packet], Layout], defaults: dict[str, Any]) -> list:
    """One ``fields_desc`` for alternative layouts of the same bytes.

    ``which(pkt)`` is the layout that applies.  A field all layouts share is
    plain; one some lack is a ``ConditionalField``; one whose type differs is a
    ``MultipleTypeField``.
    """
    layouts = list(layouts)
    order: list[str] = []
    for layout in layouts:
        at = 0
        for name in layout.names:
            if name not in order:
                order.insert(at, name)
            at = order.index(name) + 1

    def cond(ids: frozenset[int]) -> Callable[[Packet], bool]:
        return lambda pkt: id(which(pkt)) in ids

    out = []
    for name in order:
        variants: list[tuple[FieldSpec, set[int]]] = []  # each spec, and the ids of the layouts with it
        for layout in layouts:
            if name not in layout.names:
                continue
            spec = layout.spec(name)
            same = next((ids for s, ids in variants if s == spec), None)
            if same is None:
                variants.append((spec, {id(layout)}))
            else:
                same.add(id(layout))
        fields = [(scapy_field(spec, defaults.get(name, 0)), cond(frozenset(ids))) for spec, ids in variants]
        fld = fields[0][0] if len(fields) == 1 else MultipleTypeField(fields, fields[0][0])
        present = frozenset().union(*(ids for _, ids in variants))
        out.append(fld if len(present) == len(layouts) else ConditionalField(fld, cond(present)))
    return out


def _num(pkt: Packet, name: str) -> int:
    """A field as a plain int (0 for None; random values under ``fuzz()`` are drawn)."""
    value = pkt.getfieldval(name)
    return 0 if value is None else int(value)


def _header(pkt: Packet) -> Layout:
    return header_layout(_num(pkt, "magic"))


def _labels(*layouts: Layout) -> dict[str, str]:
    return {spec.name: spec.label for layout in layouts for spec in layout.fields}


class _Labelled(Packet):
    """Shows each field as ``name = value  # Label``."""

    labels: dict[str, str] = {}

    def _show_or_dump(self, dump=False, indent=3, lvl="", label_lvl="", first_call=True):
        ct = AnsiColorTheme() if dump else conf.color_theme
        s = f"{label_lvl}{ct.punct('###[')} {ct.layer_name(self.name)} {ct.punct(']###')}\n"
        rows = [(f.name, str(f.i2repr(self, self.getfieldval(f.name))), self.labels.get(f.name, ""))
                for f in self.fields_desc if not (isinstance(f, ConditionalField) and not f._evalcond(self))]
        width = max((len(name) for name, _, _ in rows), default=0)
        values = min(max((len(value) for _, value, _ in rows), default=0), 24)
        for name, value, label in rows:
            s += (f"{label_lvl}{lvl}  {ct.field_name(name.ljust(width))} {ct.punct('=')} "
                  f"{ct.field_value(value.ljust(values))}  {ct.punct('# ' + label) if label else ''}").rstrip() + "\n"
        if self.payload:
            s += self.payload._show_or_dump(dump=dump, indent=indent, lvl=lvl + " " * indent * self.show_indent,
                                            label_lvl=label_lvl, first_call=False)
        if first_call and not dump:
            print(s)
            return None
        return s


class MCBP(_Labelled):
    """One MCBP frame header and its framing extras; what follows is chosen by opcode and lengths."""

    name = "MCBP"
    fields_desc = [
        *merged_fields(HEADER_LAYOUTS.values(), _header, _HEADER_DEFAULTS),
        ConditionalField(
            XStrLenField("framing_extras", b"", length_from=lambda pkt: pkt.sizes()[0]),
            lambda pkt: "framing_extras_length" in _header(pkt).names,
        ),
    ]
    labels = {**_labels(*HEADER_LAYOUTS.values()), **_BODY_LABELS}

    def sizes(self) -> tuple[int, int, int]:
        """Framing extras, extras and the rest of the body, cut to the declared body as ``decode_frame`` does."""
        body = _num(self, "total_body_length")
        framing = min(_num(self, "framing_extras_length"), body) if self._has("framing_extras_length") else 0
        extras = min(_num(self, "extras_length"), body - framing)
        return framing, extras, body - framing - extras

    def body(self) -> Body | None:
        """The registry's description of this frame's body (None: not checked)."""
        magic = _num(self, "magic")
        spec = lookup(magic, _num(self, "opcode"))
        if spec is None:
            return None
        if magic in REQUEST_MAGICS:
            return spec.request
        word = _num(self, "status" if self._has("status") else "vbucket")
        return spec.response if word in SUCCESS_LIKE_STATUS else None

    def _has(self, name: str) -> bool:
        return name in _header(self).names

    def do_dissect(self, s: bytes) -> bytes:
        if len(s) >= HEADER_SIZE:
            return super().do_dissect(s)
        super().do_dissect(s + bytes(HEADER_SIZE - len(s)))  # a header cut short: the bytes present
        self.raw_packet_cache = s
        return b""

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        _, extras, rest = self.sizes()
        if extras:
            body = self.body()
            table = body.extras if body is not None and body.extras and extras == self.extras_length else {}
            layout = table.get(extras)
            return extras_layer(layout) if layout is not None and len(payload) >= layout.size else MCBP_Extras
        return MCBP_Body if rest else _next_frame(self)

    def frame_layers(self) -> list[Packet]:
        """The layers after this header up to the next frame."""
        out, layer = [], self.payload
        while not isinstance(layer, (NoPayload, MCBP)):
            out.append(layer)
            layer = layer.payload
        return out

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        extras = rest = key = 0
        for layer in self.frame_layers():
            size = len(layer.self_build())
            if isinstance(layer, ExtrasLayer):
                extras += size
            else:
                rest += size
            if "key" in layer.fieldtype:
                key += len(layer.getfieldval("key") or b"")
        framing = len(self.framing_extras or b"") if self._has("framing_extras_length") else 0
        computed = dict(zip(_LENGTHS, (framing, key, extras, framing + extras + rest)))
        layout = _header(self)
        buf = bytearray(pkt)
        for name, value in computed.items():
            if name in layout.names and self.getfieldval(name) is None:
                i = layout.names.index(name)
                struct.pack_into(">" + layout.fields[i].code, buf, layout.offsets[i], value)
        return bytes(buf) + pay

    def mysummary(self) -> str:
        magic = _num(self, "magic")
        return f"MCBP {MAGICS.get(magic, hex(magic))} {opcode_name(magic, _num(self, 'opcode'))}"


def _frame(pkt: Packet) -> MCBP | None:
    layer = pkt.underlayer
    while layer is not None and not isinstance(layer, MCBP):
        layer = layer.underlayer
    return layer


def _split(frame: MCBP | None, extras: Packet | None) -> tuple[int, int, int]:
    """Engine-specific, key and value sizes of a frame's body after its extras."""
    if frame is None:
        return 0, 0, sys.maxsize  # a body layer on its own: everything is value
    rest = frame.sizes()[2]
    engine = 0
    body = frame.body()
    if body is not None and body.engine_specific and "engine_specific_length" in getattr(extras, "fields", {}):
        engine = min(_num(extras, "engine_specific_length"), rest)
    key = min(_num(frame, "key_length"), rest - engine)
    return engine, key, rest - engine - key


def _next_frame(pkt: Packet) -> type[Packet]:
    frames, layer = 0, pkt
    while layer is not None:
        frames += isinstance(layer, MCBP)
        layer = layer.underlayer
    return MCBP if frames < MAX_FRAMES else conf.raw_layer


def _extras_size(pkt: Packet) -> int:
    frame = _frame(pkt)
    return frame.sizes()[1] if frame is not None else sys.maxsize


def _body_split(pkt: Packet) -> tuple[int, int, int]:
    return _split(_frame(pkt), pkt.underlayer)


def _key() -> StrLenField:
    return StrLenField("key", b"", length_from=lambda pkt: _body_split(pkt)[1])


class ExtrasLayer(_Labelled):
    """Base of the extras layers; ``layout`` is the table a generated one comes from."""

    layout: Layout | None = None

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        frame = _frame(self)
        engine, key, value = _split(frame, self)
        if not engine + key + value:
            return _next_frame(self)
        body = frame.body() if frame is not None and self.layout is not None else None
        find = _VALUE_LAYOUTS.get(body.value_kind) if body is not None else None
        layout = find(self) if find is not None else None
        if layout is not None and value == layout.size and len(payload) >= key + value:
            return value_layer(layout)
        return MCBP_Body


class MCBP_Extras(ExtrasLayer):
    """Extras without a layout for this opcode and length."""

    name = "MCBP extras"
    fields_desc = [XStrLenField("extras", b"", length_from=lambda pkt: _extras_size(pkt))]
    labels = _BODY_LABELS


class MCBP_Body(_Labelled):
    """Key and value (and TAP's engine-specific bytes before the key)."""

    name = "MCBP body"
    fields_desc = [
        ConditionalField(
            XStrLenField("engine_specific", b"", length_from=lambda pkt: _body_split(pkt)[0]),
            lambda pkt: bool(pkt.getfieldval("engine_specific")) or _body_split(pkt)[0] > 0,
        ),
        _key(),
        StrLenField("value", b"", length_from=lambda pkt: _body_split(pkt)[2]),
    ]
    labels = _BODY_LABELS

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        return _next_frame(self)


class ValueLayer(_Labelled):
    """Base of the key + fixed-layout value layers."""

    layout: Layout | None = None

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        return _next_frame(self)


#: How a value with a fixed layout is found from the extras, by the body's ``value_kind``.
_VALUE_LAYOUTS: dict[str, Callable[[Packet], Layout | None]] = {
    "snapshot_marker": lambda ext: dcp.SNAPSHOT_VALUE_BY_VERSION.get(ext.fields.get("version")),
    "system_event": lambda ext: dcp.SYSTEM_EVENT_VALUES.get((ext.fields.get("event"), ext.fields.get("version"))),
}

#: Every generated layer and alias, by class name.
LAYERS: dict[str, type[Packet]] = {}


def _generate(layout: Layout, base: type[Packet], suffix: str, head: list) -> type[Packet]:
    name = f"MCBP_{layout.name.upper().removesuffix('_EXTRAS')}_{suffix}"
    cls = LAYERS.get(name)
    if cls is None:
        cls = type(name, (base,), {
            "__module__": __name__,
            "__doc__": f"{suffix} of {layout.name}, from its layout.",
            "name": f"MCBP {suffix.lower()}: {layout.name}",
            "fields_desc": [*head, *(scapy_field(spec) for spec in layout.fields)],
            "labels": {**_BODY_LABELS, **_labels(layout)},
            "layout": layout,
        })
        LAYERS[name] = cls
    elif cls.layout != layout:
        raise ValueError(f"two layouts named {layout.name}")
    return cls


def extras_layer(layout: Layout) -> type[Packet]:
    """The extras layer made from ``layout``."""
    return _generate(layout, ExtrasLayer, "Extras", [])


def value_layer(layout: Layout) -> type[Packet]:
    """The key + value layer whose value is ``layout``."""
    key = ConditionalField(_key(), lambda pkt: bool(pkt.getfieldval("key")) or _body_split(pkt)[1] > 0)
    return _generate(layout, ValueLayer, "Value", [key])


for _spec in (*CLIENT_SPECS.values(), *SERVER_SPECS.values()):
    for _body in (_spec.request, _spec.response):
        for _layout in (_body.extras or {}).values():
            if _layout is not None:
                extras_layer(_layout)
for _layout in (*dcp.SNAPSHOT_VALUE_BY_VERSION.values(), *dcp.SYSTEM_EVENT_VALUES.values()):
    value_layer(_layout)
for _spec in (*CLIENT_SPECS.values(), *SERVER_SPECS.values()):  # MCBP_<OPCODE>_Extras: the first request layout
    _first = next((x for x in (_spec.request.extras or {}).values() if x is not None), None)
    if _first is not None:
        LAYERS.setdefault(f"MCBP_{_spec.name}_Extras", extras_layer(_first))
del _spec, _body, _layout, _first
globals().update(LAYERS)


def bind_default_ports(ports: Iterable[int] = DEFAULT_PORTS) -> None:
    """Dissect TCP payloads from or to ``ports`` as MCBP."""
    from scapy.layers.inet import TCP

    for port in ports:
        bind_layers(TCP, MCBP, sport=port)
        bind_layers(TCP, MCBP, dport=port)


__all__ = ["DEFAULT_PORTS", "LAYERS", "MAX_FRAMES", "MCBP", "MCBP_Body", "MCBP_Extras", "ExtrasLayer", "ValueLayer",
           "bind_default_ports", "extras_layer", "merged_fields", "scapy_field", "value_layer", *LAYERS]
