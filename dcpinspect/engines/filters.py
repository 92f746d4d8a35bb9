"""Frame filters for the decode and live commands."""

from __future__ import annotations

from dataclasses import dataclass

from ..messages.registry import CLIENT_SPECS
from .capture import Captured, flow_label
from .inputs import Unusable


def parse_opcode(text: str) -> set[int]:
    """``0x57``, ``87``, ``DCP_MUTATION`` or a unique-enough part like ``mutation``."""
    t = text.strip()
    try:
        return {int(t, 0)}
    except ValueError:
        pass
    want = t.upper().replace("-", "_")
    exact = {op for op, s in CLIENT_SPECS.items() if s.name == want or s.name == "DCP_" + want}
    if exact:
        return exact
    found = {op for op, s in CLIENT_SPECS.items() if want in s.name}
    if not found:
        raise ValueError(f"unknown opcode {text!r}")
    return found


@dataclass(frozen=True)
class FrameFilter:
    opcodes: frozenset[int] = frozenset()
    vbuckets: frozenset[int] = frozenset()
    flow: str = ""

    @property
    def empty(self) -> bool:
        return not (self.opcodes or self.vbuckets or self.flow)

    def __call__(self, item: Captured) -> bool:
        msg = item.msg
        if self.opcodes and msg.opcode not in self.opcodes:
            return False
        if self.vbuckets and (msg.vbucket is None or msg.vbucket not in self.vbuckets):
            return False
        if self.flow and self.flow not in flow_label(item.flow):
            return False
        return True


def frame_filter(opcodes: list[str], vbuckets: list[int], flow: str) -> FrameFilter:
    """The filter of ``--opcode`` (names, parts of names or numbers), ``--vbucket`` and
    ``--flow``; an opcode no name matches is :class:`~.inputs.Unusable`."""
    ops: set[int] = set()
    for o in opcodes:
        try:
            ops |= parse_opcode(o)
        except ValueError as exc:
            raise Unusable(str(exc)) from None
    return FrameFilter(frozenset(ops), frozenset(vbuckets), flow)
