"""Rule conditions as data: each written once, judged from that one declaration by the
rules (as Python functions made from it) and by any fast path (as a small program over
numbered facts, which ``dcpinspect/_lane.c`` runs).

A condition is built from :class:`Fact` objects (named quantities of a message and of the
state it meets: ``rules/facts.py`` is the vocabulary) with comparisons
(``seqno <= last_seqno``, ``key_length.eq(0)``), bit tests (``snapshot_type.has(mask)``)
and the logical ``&``, ``|`` and ``~``; a fact where a truth is wanted means "not 0".
Every fact is a number (a truth is 0 or 1; an absent optional field is guarded by a fact
that says whether it is there, so the comparison is never asked without it).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

#: the program's instructions, as ``_lane.c`` numbers them (each an (op, argument) pair)
FACT, CONST, LT, LE, GT, GE, EQ, NE, AND, OR, NOT, BITS = range(1, 13)
_COMPARE = {"<": LT, "<=": LE, ">": GT, ">=": GE, "==": EQ, "!=": NE}
_PY_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
U64 = (1 << 64) - 1


class NotOnFastPath(LookupError):
    """A condition names a fact the fast path does not know: frames it applies to are left
    to the rules."""


class Expr:
    """Part of a condition."""

    __slots__ = ()

    def __lt__(self, other) -> "Expr":
        return Compare("<", self, _lift(other))

    def __le__(self, other) -> "Expr":
        return Compare("<=", self, _lift(other))

    def __gt__(self, other) -> "Expr":
        return Compare(">", self, _lift(other))

    def __ge__(self, other) -> "Expr":
        return Compare(">=", self, _lift(other))

    def eq(self, other) -> "Expr":
        return Compare("==", self, _lift(other))

    def ne(self, other) -> "Expr":
        return Compare("!=", self, _lift(other))

    def has(self, mask: int) -> "Expr":
        """Any of ``mask``'s bits set."""
        return Bits(self, mask)

    def __and__(self, other) -> "Expr":
        return All((self, _lift(other)))

    def __or__(self, other) -> "Expr":
        return Any_((self, _lift(other)))

    def __invert__(self) -> "Expr":
        return Not(self)

    __hash__ = object.__hash__

    # -- what it is made of, and the two ways it is judged ------------------------------

    def facts(self) -> Iterable["Fact"]:
        return ()

    def python(self, on_message: bool) -> Callable[[Any], Any]:
        """A function of the judging context (``on_message``: of the message itself)."""
        raise NotImplementedError

    def program(self, slots: dict[str, int], out: list[int]) -> None:
        """Append the instructions that leave this part's value on the stack."""
        raise NotImplementedError


class Fact(Expr):
    """A named quantity. ``get`` reads it from the judging context of a stream rule (or, for
    ``scope="message"``, from the decoded message itself); ``scope`` also says how a fast
    path knows it: ``"message"`` facts are read from each frame, ``"run"`` facts are state a
    fast path carries from frame to frame, ``"connection"`` facts stay the same over a run
    and are read once with ``get``."""

    __slots__ = ("name", "doc", "get", "scope")

    def __init__(self, name: str, doc: str, get: Callable[[Any], Any], scope: str = "connection") -> None:
        assert scope in ("message", "run", "connection")
        self.name, self.doc, self.get, self.scope = name, doc, get, scope

    def __repr__(self) -> str:
        return self.name

    def facts(self):
        return (self,)

    def python(self, on_message):
        get = self.get
        if self.scope == "message" and not on_message:
            return lambda c: get(c.msg)
        if self.scope != "message" and on_message:
            raise TypeError(f"{self.name}: a fact of the stream state, in a rule of the message alone")
        return get

    def program(self, slots, out):
        if self.name not in slots:
            raise NotOnFastPath(self.name)
        out += (FACT, slots[self.name])


class Const(Expr):
    __slots__ = ("value",)

    def __init__(self, value: int) -> None:
        self.value = int(value)

    def __repr__(self) -> str:
        return str(self.value)

    def python(self, on_message):
        value = self.value
        return lambda c: value

    def program(self, slots, out):
        if not 0 <= self.value <= U64:
            raise NotOnFastPath(f"constant {self.value}")
        out += (CONST, self.value)


class Compare(Expr):
    __slots__ = ("op", "a", "b")

    def __init__(self, op: str, a: Expr, b: Expr) -> None:
        self.op, self.a, self.b = op, a, b

    def __repr__(self) -> str:
        return f"({self.a!r} {self.op} {self.b!r})"

    def facts(self):
        return (*self.a.facts(), *self.b.facts())

    def python(self, on_message):
        a, compare = self.a.python(on_message), _PY_COMPARE[self.op]
        if isinstance(self.b, Const):  # the common shape: a fact against a number
            value = self.b.value
            return lambda c: compare(a(c), value)
        b = self.b.python(on_message)
        return lambda c: compare(a(c), b(c))

    def program(self, slots, out):
        self.a.program(slots, out)
        self.b.program(slots, out)
        out += (_COMPARE[self.op], 0)


class Bits(Expr):
    __slots__ = ("a", "mask")

    def __init__(self, a: Expr, mask: int) -> None:
        self.a, self.mask = a, int(mask)

    def __repr__(self) -> str:
        return f"({self.a!r} has 0x{self.mask:x})"

    def facts(self):
        return self.a.facts()

    def python(self, on_message):
        a, mask = self.a.python(on_message), self.mask
        return lambda c: a(c) & mask

    def program(self, slots, out):
        self.a.program(slots, out)
        out += (BITS, self.mask & U64)


class _Junction(Expr):
    """Parts joined by one logical operator (nested joins of the same operator flattened)."""

    __slots__ = ("parts",)
    _symbol = ""
    _code = 0

    def __init__(self, parts: tuple[Expr, ...]) -> None:
        kind = type(self)
        self.parts = tuple(q for p in parts for q in (p.parts if isinstance(p, kind) else (p,)))

    def __repr__(self) -> str:
        return "(" + f" {self._symbol} ".join(map(repr, self.parts)) + ")"

    def facts(self):
        return tuple(f for p in self.parts for f in p.facts())

    def python(self, on_message):
        # nested pairs, right to left: each part asked in order, no generator per call
        parts = [p.python(on_message) for p in self.parts]
        joined = parts.pop()
        while parts:
            joined = self._pair(parts.pop(), joined)
        return joined

    def program(self, slots, out):
        self.parts[0].program(slots, out)
        for p in self.parts[1:]:
            p.program(slots, out)
            out += (self._code, 0)


class All(_Junction):
    __slots__ = ()
    _symbol, _code = "&", AND
    _pair = staticmethod(lambda a, b: lambda c: a(c) and b(c))


class Any_(_Junction):
    __slots__ = ()
    _symbol, _code = "|", OR
    _pair = staticmethod(lambda a, b: lambda c: a(c) or b(c))


class Not(Expr):
    __slots__ = ("a",)

    def __init__(self, a: Expr) -> None:
        self.a = a

    def __repr__(self) -> str:
        return f"~{self.a!r}"

    def facts(self):
        return self.a.facts()

    def python(self, on_message):
        a = self.a.python(on_message)
        return lambda c: not a(c)

    def program(self, slots, out):
        self.a.program(slots, out)
        out += (NOT, 0)


def _lift(value) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"a condition compares facts and whole numbers, not {value!r}")
    return Const(value)


def program(cond: Expr, slots: dict[str, int]) -> tuple[int, ...]:
    """``cond`` as instructions over the facts numbered by ``slots`` (raises
    :class:`NotOnFastPath` if it names a fact not among them)."""
    out: list[int] = []
    cond.program(slots, out)
    return tuple(out)


def evaluate(code: tuple[int, ...], values: list[int]) -> bool:
    """Run a program over fact values as ``_lane.c`` does (unsigned 64-bit numbers): the
    reference the tests hold the C evaluator to."""
    stack: list[int] = []
    for i in range(0, len(code), 2):
        op, arg = code[i], code[i + 1]
        if op == FACT:
            stack.append(values[arg] & U64)
        elif op == CONST:
            stack.append(arg)
        elif op == NOT:
            stack.append(int(not stack.pop()))
        elif op == BITS:
            stack.append(int(bool(stack.pop() & arg)))
        else:
            b, a = stack.pop(), stack.pop()
            if op == AND:
                stack.append(int(bool(a) and bool(b)))
            elif op == OR:
                stack.append(int(bool(a) or bool(b)))
            else:
                stack.append(int({LT: a < b, LE: a <= b, GT: a > b, GE: a >= b, EQ: a == b, NE: a != b}[op]))
    return bool(stack.pop())
