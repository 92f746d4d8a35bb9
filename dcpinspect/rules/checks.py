"""Declared checks: a rule's condition (``rules/conditions.py``) with where it is judged
and what it says. The rules judge each message by the checks declared for its opcode at
each point of their walk; a fast path asks :func:`for_opcode` for every check a frame of
an opcode could meet and runs their conditions (as C generated from them, or as
programs), so changing a check here changes both."""

from __future__ import annotations

from dataclasses import dataclass
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
    #: for a check of a state that lasts (reported once an episode): what a finding tells
    #: the session, from the context (the session then holds the episode; its condition
    #: reads that fact, and the session ends the episode)
    begins: Callable[[Any], None] | None = None


CHECKS: list[Check] = []
_JUDGES: dict[int, "Judges"] = {}


def declare(rule: str, point: str, when: Expr, say: Callable[[Any], str], on: Iterable[int] | None = None,
            **kw) -> Check:
    check = Check(rule, point, when, say, None if on is None else frozenset(on), **kw)
    CHECKS.append(check)
    changed()
    return check


def changed() -> None:
    """Forget what was made of the checks (after :data:`CHECKS` is changed in place)."""
    _JUDGES.clear()


def replace_check(old: Check, when: Expr) -> Check:
    """``old`` with another condition, in its place (for experiments and tests): both the
    rules and the fast paths made after it judge by the new one."""
    new = Check(old.rule, old.point, when, old.say, old.on, old.severity, old.offset, old.begins)
    CHECKS[CHECKS.index(old)] = new
    changed()
    return new


def at(point: str, opcode: int) -> tuple[Check, ...]:
    """The checks judged at ``point`` for a message of ``opcode``, in declaration order
    (asked once a point and opcode: :class:`Judges` keeps what is made of them)."""
    return tuple(c for c in CHECKS if c.point == point and (c.on is None or opcode in c.on))


class Judges(dict):
    """An opcode's judges by point: ``judges(op)[point]`` is one function judging every
    check of :func:`at` (the conditions inline): it returns those whose condition holds
    for the context (the message, at a ``frame.`` point), in declaration order."""

    def __init__(self, opcode: int) -> None:
        super().__init__()
        self.opcode = opcode

    def __missing__(self, point: str) -> Callable[[Any], tuple[Check, ...]]:
        checks = at(point, self.opcode)
        fn = self[point] = judge_function([c.when for c in checks], point.startswith("frame."), checks,
                                          f"checks at {point} for opcode 0x{self.opcode:02x}")
        return fn


def judges(opcode: int) -> Judges:
    """The judges of ``opcode``'s checks, by point (made once, until the checks change)."""
    got = _JUDGES.get(opcode)
    if got is None:
        got = _JUDGES[opcode] = Judges(opcode)
    return got


def for_opcode(opcode: int) -> tuple[Check, ...]:
    """Every check a request of ``opcode`` can meet, at whatever point."""
    return tuple(c for c in CHECKS if c.on is None or opcode in c.on)
