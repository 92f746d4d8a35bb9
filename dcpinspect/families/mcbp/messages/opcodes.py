"""Opcodes and statuses by their spec names, from the name tables: ``OP.DCP_MUTATION`` is
0x57, ``ST.Rollback`` is 0x23. Code outside ``messages`` names an opcode or a status so,
never by its number."""

from __future__ import annotations

from types import SimpleNamespace

from .names import OPCODES, STATUS

#: client opcodes (magics 0x80, 0x81, 0x08, 0x18) by name
OP = SimpleNamespace(**{name: code for code, name in OPCODES.items()})
#: response statuses by name
ST = SimpleNamespace(**{name: code for code, name in STATUS.items()})
