"""How the record filters of ``decode`` and ``live`` match MCBP frames: ``--opcode`` (a
number, a name of the catalog, or a part of one) and ``--vbucket`` (frames that carry
one: requests, and the responses whose header field is a vbucket)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from .messages.frame import Message

#: the criteria MCBP frames are matched by
CRITERIA = frozenset({"opcode", "vbucket"})


def parse_opcode(text: str) -> set[int]:
    """``0x57``, ``87``, ``DCP_MUTATION`` or a unique-enough part like ``mutation``."""
    from .messages.registry import CLIENT_SPECS

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


class Filters:
    """The MCBP family's :class:`~dcpinspect.families.RecordFilters`."""

    criteria = CRITERIA

    @staticmethod
    def owns(record: Any) -> bool:
        from .messages.frame import Message  # (imported once a record is decoded)

        return isinstance(record, Message)

    @staticmethod
    def matcher(given: dict[str, tuple]) -> Callable[[Any], bool]:
        opcodes: set[int] = set()
        for text in given.get("opcode", ()):
            opcodes |= parse_opcode(str(text))
        vbuckets = frozenset(int(v) for v in given.get("vbucket", ()))

        def test(msg: Message) -> bool:
            if opcodes and msg.opcode not in opcodes:
                return False
            return not vbuckets or (msg.vbucket is not None and msg.vbucket in vbuckets)

        return test


FILTERS = Filters()
