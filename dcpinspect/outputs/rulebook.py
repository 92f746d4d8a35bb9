"""The rule book: every rule the validator applies, as a table or JSON Lines."""

from __future__ import annotations

import sys

from ..rules.registry import ALL_RULES
from .console import make_console
from .jsonl import dumps


def print_rule_book(jsonl: bool) -> None:
    """Every rule: id, class, severity, scope, spec reference and what it checks."""
    rules = list(ALL_RULES.values())
    if jsonl:
        for r in rules:
            sys.stdout.write(dumps({"rule": r.id, "class": r.cls, "severity": r.severity, "scope": r.scope,
                                    "ref": r.ref, "summary": r.summary}) + "\n")
        return
    from rich.table import Table

    table = Table("rule", "class", "severity", "scope", "reference", "what it checks", box=None)
    for r in rules:
        table.add_row(r.id, r.cls, r.severity, r.scope, r.ref, r.summary)
    make_console().print(table)
