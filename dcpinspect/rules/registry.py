"""A rule of the rule book: its id, class, severity, scope, upstream reference and, where a
real server was asked, what the server does with input that triggers it. Each family keeps
its own rules as tables of these (``rules_table``); ``families.rule_book()`` gathers them."""

from __future__ import annotations

from ..findings import Finding
from ..slots import Slots


class Rule(Slots):
    __slots__ = ("id", "cls", "severity", "ref", "summary", "scope", "server")

    def __init__(self, id: str, cls: str, severity: str, ref: str, summary: str, scope: str = "frame",
                 server: str = "") -> None:
        self.id = id
        self.cls = cls
        self.severity = severity
        self.ref = ref
        self.summary = summary
        self.scope = scope  # "frame", "stream", "tap" or "rdb"
        self.server = server  # what the real server does with such input, where one was asked

    __hash__ = Slots.hashed

    def finding(self, message: str, offset: int | None = None, severity: str | None = None, vbucket: int | None = None,
                stream_id: int | None = None, frame: int | None = None) -> Finding:
        return Finding(self.id, self.cls, severity or self.severity, message, offset, self.ref, vbucket, stream_id, frame)



#: the reference of a rule on a limit of the decoder's own: this repository's file of limits
LIMITS = "dcpinspect/limits.py"


def rules_table(*rows: tuple) -> dict[str, Rule]:
    return {row[0]: Rule(*row) for row in rows}


