"""Declared checks: a rule's condition (``rules/conditions.py``) with where it is judged
and what it says. The rules judge each message by the checks declared for its opcode at
each point of their walk; a fast path asks :func:`for_opcode` for every check a frame of
an opcode could meet and runs their conditions as programs, so changing a check here
changes both."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .conditions import Expr, judge_function


@dataclass(frozen=True, eq=False)
class Check:
    #: the rule id (rules/registry.py) a finding is reported under
    rule: str
    #: the point of the rules' walk that judges it ("frame.seqno", "stream.item", ...)
    point: str
    #: the condition: true means a finding
    when: Expr
    #: the finding's text, from the judging context (the message, for frame checks)
    say: Callable[[Any], str]
    #: the request opcodes it applies to (None: every message at its point)
    on: frozenset[int] | None = None
    #: the finding's severity from the context, where it is not the rule's
    severity: Callable[[Any], str | None] | None = None
    #: the finding's offset from the message (frame checks), where it is not the rule's
    offset: Callable[[Any], int | None] | None = None
    #: the condition as a Python function of the context
    test: Callable[[Any], Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "test", self.when.python(self.point.startswith("frame.")))


CHECKS: list[Check] = []
_AT: dict[tuple[str, int], tuple[Check, ...]] = {}
_JUDGE: dict[tuple[str, int], Callable[[Any], tuple[Check, ...]]] = {}


def declare(rule: str, point: str, when: Expr, say: Callable[[Any], str], on: Iterable[int] | None = None,
            **kw) -> Check:
    check = Check(rule, point, when, say, None if on is None else frozenset(on), **kw)
    CHECKS.append(check)
    _AT.clear()
    _JUDGE.clear()
    return check


def replace_check(old: Check, when: Expr) -> Check:
    """``old`` with another condition, in its place (for experiments and tests): both the
    rules and the fast paths made after it judge by the new one."""
    new = Check(old.rule, old.point, when, old.say, old.on, old.severity, old.offset)
    CHECKS[CHECKS.index(old)] = new
    _AT.clear()
    _JUDGE.clear()
    return new


def at(point: str, opcode: int) -> tuple[Check, ...]:
    """The checks judged at ``point`` for a message of ``opcode``, in declaration order."""
    key = (point, opcode)
    got = _AT.get(key)
    if got is None:
        got = _AT[key] = tuple(c for c in CHECKS if c.point == point and (c.on is None or opcode in c.on))
    return got


def judge(point: str, opcode: int) -> Callable[[Any], tuple[Check, ...]]:
    """One function judging every check of :func:`at`: it returns those whose condition
    holds for the context (the message, at a ``frame.`` point), in declaration order."""
    key = (point, opcode)
    fn = _JUDGE.get(key)
    if fn is None:
        checks = at(point, opcode)
        fn = _JUDGE[key] = judge_function([c.when for c in checks], point.startswith("frame."), checks,
                                          f"checks at {point} for opcode 0x{opcode:02x}")
    return fn


def for_opcode(opcode: int) -> tuple[Check, ...]:
    """Every check a request of ``opcode`` can meet, at whatever point."""
    return tuple(c for c in CHECKS if c.on is None or opcode in c.on)
