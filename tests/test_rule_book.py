"""Every rule names where it comes from, in a form a user can open: a public URL (an
upstream repository's file pinned to a commit, with the heading or line it rests on, or a
protocol page) or a file of this repository; and ``dcpinspect rules`` shows it whole."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import servers
from dcpinspect.families import rule_book
from dcpinspect.families.mcbp.rules import book as mcbp_book
from dcpinspect.families.redis import rules as redis_book

ALL_RULES = rule_book()

TOP = Path(__file__).resolve().parent.parent
PINNED = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/blob/[0-9a-f]{40}/[\w./-]+\.\w+(#[\w-]+)?")
PAGE = re.compile(r"https://redis\.io/docs/latest/[\w/-]+/")


@pytest.mark.parametrize("rule", sorted(ALL_RULES))
def test_each_rule_points_at_a_document_a_user_can_open(rule):
    ref = ALL_RULES[rule].ref
    if ref.startswith("https://"):
        assert PINNED.fullmatch(ref) or PAGE.fullmatch(ref), ref
        if "/blob/" in ref and ref.rsplit(".", 1)[1].split("#")[0] in ("c", "cc", "h"):
            assert re.search(r"#L\d+$", ref), f"{ref}: a source file is cited at a line"
    else:
        assert (TOP / ref).is_file(), ref


def test_each_upstream_is_pinned_at_one_revision():
    """One commit per repository (one home for each pin), the constants the rows build on."""
    commits: dict[str, set[str]] = {}
    for rule in ALL_RULES.values():
        found = re.match(r"https://github\.com/([\w.-]+/[\w.-]+)/blob/([0-9a-f]{40})/([\w./-]+)", rule.ref)
        if found:
            repo, commit, path = found.groups()
            commits.setdefault(repo if path != "docs/TAP.md" else repo + " TAP", set()).add(commit)
    assert all(len(c) == 1 for c in commits.values()), commits
    assert {next(iter(c)) for c in commits.values()} == {
        re.search(r"[0-9a-f]{40}", getattr(book, name)).group()
        for book, name in ((mcbp_book, "KV"), (mcbp_book, "KV_TAP"), (redis_book, "REDIS"), (redis_book, "DRAGONFLY"))}


def test_the_rule_book_shows_each_reference_whole():
    res = servers.dcpinspect("rules", "-f", "jsonl")
    assert res.returncode == 0
    rows = {r["rule"]: r for r in map(json.loads, res.stdout.splitlines())}
    assert set(rows) == set(ALL_RULES) and all(rows[k]["ref"] == r.ref for k, r in ALL_RULES.items())
    table = servers.dcpinspect("rules").stdout
    folded = "".join(line.strip() for line in table.splitlines())
    assert all(r.ref in folded for r in ALL_RULES.values())
