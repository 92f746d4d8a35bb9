"""The fixed 24-byte MCBP header, classic and flexible (spec/dcp.md §1.1)."""

from __future__ import annotations

import struct
from typing import NamedTuple

from ....limits import FRAME_BODY
from ....messages.layout import Layout, u8, u16, u32, u64
from .names import DATATYPE_FLAGS, MAGICS, OPCODES, SERVER_OPCODES, STATUS

HEADER_SIZE = 24
MAX_BODY_LENGTH = FRAME_BODY.default  # kv_engine max_packet_size
_RAW = struct.Struct(">BBBBBBHIIQ")


class Header(NamedTuple):
    magic: int
    opcode: int
    framing_length: int
    key_length: int
    extras_length: int
    datatype: int
    vbucket_or_status: int
    body_length: int
    opaque: int
    cas: int


def parse_header(buf: bytes | memoryview, offset: int = 0, flex: bool | None = None) -> Header:
    """Unpack a header; ``flex`` defaults to what the magic says."""
    magic, opcode, b2, b3, extlen, datatype, vbs, bodylen, opaque, cas = _RAW.unpack_from(buf, offset)
    if flex is None:
        flex = magic in (0x08, 0x18)
    if flex:
        return Header(magic, opcode, b2, b3, extlen, datatype, vbs, bodylen, opaque, cas)
    return Header(magic, opcode, 0, (b2 << 8) | b3, extlen, datatype, vbs, bodylen, opaque, cas)


def _layout(flex: bool, response: bool, server: bool) -> Layout:
    opcodes = SERVER_OPCODES if server else OPCODES
    lengths = (
        (u8("framing_extras_length", "Framing extlen", show="dec"), u8("key_length", "Key length", show="dec"))
        if flex
        else (u16("key_length", "Key length", show="both"),)
    )
    word = u16("status", "Status", enum=STATUS) if response else u16("vbucket", "Vbucket", show="both")
    return Layout(
        f"header_{'flex' if flex else 'classic'}_{'response' if response else 'request'}",
        u8("magic", "Magic", enum=MAGICS),
        u8("opcode", "Opcode", enum=opcodes),
        *lengths,
        u8("extras_length", "Extra length", show="both"),
        u8("datatype", "Data type", flags=DATATYPE_FLAGS),
        word,
        u32("total_body_length", "Total body", show="both"),
        u32("opaque", "Opaque"),
        u64("cas", "CAS"),
    )


HEADER_LAYOUTS: dict[tuple[bool, bool, bool], Layout] = {
    (flex, response, server): _layout(flex, response, server)
    for flex in (False, True)
    for response in (False, True)
    for server in (False, True)
}


def header_layout(magic: int) -> Layout:
    return HEADER_LAYOUTS[(magic in (0x08, 0x18), magic in (0x81, 0x18, 0x83), magic in (0x82, 0x83))]


def absent_fields(magic: int, have: int) -> dict[str, int]:
    """The header fields a frame cut short after ``have`` bytes lacks wholly or in part,
    by name, with the bytes of each that are there (0: none)."""
    out, at = {}, 0
    for spec in header_layout(magic).fields:
        if at + spec.size > have:
            out[spec.name] = max(0, have - at)
        at += spec.size
    return out
