"""The rule book: every rule the validator applies, as a table or JSON Lines."""

from __future__ import annotations

import sys

from ..rules.registry import Rule
from .console import make_console
from .jsonl import dumps


def print_rule_book(book: dict[str, Rule], jsonl: bool) -> None:
    """Every rule of ``book``: id, class, severity, scope, spec reference, what it checks and,
    where a real server was asked, what the server does with input that triggers it."""
    rules = list(book.values())
    if jsonl:
        for r in rules:
            sys.stdout.write(dumps({"rule": r.id, "class": r.cls, "severity": r.severity, "scope": r.scope,
                                    "ref": r.ref, "summary": r.summary, "server": r.server or None}) + "\n")
        return
    from rich.table import Table

    from rich.text import Text

    table = Table("rule", "class", "severity", "scope", "what it checks (what the server does) and where from",
                  box=None)
    table.columns[-1].overflow = "fold"  # a reference's URL is shown whole, folded where it must be
    for r in rules:
        text = Text(r.summary)
        if r.server:
            text.append(f"\nServer: {r.server}", style="italic")
        text.append(f"\n{r.ref}", style="dim")
        table.add_row(r.id, r.cls, r.severity, r.scope, text)
    make_console().print(table)
