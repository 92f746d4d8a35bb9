"""The rule book: every rule the validator applies, as a table or JSON Lines."""

from __future__ import annotations

import sys

from ..rules.registry import ALL_RULES
from .console import make_console
from .jsonl import dumps


def print_rule_book(jsonl: bool) -> None:
    """Every rule: id, class, severity, scope, spec reference, what it checks and, where a real
    server was asked, what the server does with input that triggers it."""
    rules = list(ALL_RULES.values())
    if jsonl:
        for r in rules:
            sys.stdout.write(dumps({"rule": r.id, "class": r.cls, "severity": r.severity, "scope": r.scope,
                                    "ref": r.ref, "summary": r.summary, "server": r.server or None}) + "\n")
        return
    from rich.table import Table

    table = Table("rule", "class", "severity", "scope", "reference", "what it checks", "what the server does",
                  box=None)
    for r in rules:
        table.add_row(r.id, r.cls, r.severity, r.scope, r.ref, r.summary, r.server)
    make_console().print(table)
