"""Opcode → message description, for every magic."""

from __future__ import annotations

from . import dcp, memcached, server, tap
from .catalog import ANY, OpSpec
from .names import OPCODES, SERVER_MAGICS, SERVER_OPCODES

CLIENT_SPECS: dict[int, OpSpec] = {op: OpSpec(op, name) for op, name in OPCODES.items()}
CLIENT_SPECS.update({s.opcode: s for s in (*memcached.SPECS, *tap.SPECS, *dcp.SPECS)})
SERVER_SPECS: dict[int, OpSpec] = {op: OpSpec(op, name, ANY, ANY, "server") for op, name in SERVER_OPCODES.items()}
SERVER_SPECS.update({s.opcode: s for s in server.SPECS})


def lookup(magic: int, opcode: int) -> OpSpec | None:
    table = SERVER_SPECS if magic in SERVER_MAGICS else CLIENT_SPECS
    return table.get(opcode)


def opcode_name(magic: int, opcode: int) -> str:
    spec = lookup(magic, opcode)
    return spec.name if spec else f"UNKNOWN_0x{opcode:02x}"
