"""Rule conditions as data: each written once, judged from that one declaration by the
rules (as Python functions generated from it: :func:`judge_function`) and by any fast path
(as a small program over numbered facts, which ``dcpinspect/families/mcbp/_lane.c`` runs).

A condition is built from :class:`Fact` objects (named quantities of a message and of the
state it meets: ``rules/facts.py`` is the vocabulary) with comparisons
(``seqno <= last_seqno``, ``key_length.eq(0)``), bit tests (``snapshot_type.has(mask)``)
and the logical ``&``, ``|`` and ``~``; a fact where a truth is wanted means "not 0".
Every fact is a number (a truth is 0 or 1; an absent optional field is guarded by a fact
that says whether it is there, so the comparison is never asked without it).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

#: the program's instructions, as ``_lane.c`` numbers them (each an (op, argument) pair)
FACT, CONST, LT, LE, GT, GE, EQ, NE, AND, OR, NOT, BITS = range(1, 13)
_COMPARE = {"<": LT, "<=": LE, ">": GT, ">=": GE, "==": EQ, "!=": NE}
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

    def source(self, on_message: bool) -> str:
        """This part as a Python expression over the judging context ``c`` and its message
        ``m`` (``on_message``: over the message alone)."""
        raise NotImplementedError

    def env(self) -> dict[str, Any]:
        """The names its source reads besides ``c`` and ``m``."""
        out: dict[str, Any] = {}
        for f in self.facts():
            out.update(f.names)
        return out

    def python(self, on_message: bool) -> Callable[[Any], Any]:
        """A function of the judging context (``on_message``: of the message itself)."""
        of_message = not on_message and any(f.scope == "message" for f in self.facts())
        return _function(self.source(on_message), "m" if on_message else "c", self.env(), repr(self), of_message)

    def program(self, slots: dict[str, int], out: list[int]) -> None:
        """Append the instructions that leave this part's value on the stack."""
        raise NotImplementedError

    def c(self, slots: dict[str, int]) -> str:
        """This part as a C expression over ``uint64_t F[]``, the facts numbered by
        ``slots`` (the program's meaning, for code generated from it)."""
        raise NotImplementedError


class Fact(Expr):
    """A named quantity, read by ``src``: a Python expression over the judging context ``c``
    of a stream rule (or, for ``scope="message"``, over the decoded message ``m``), with
    ``names`` the other names it reads. ``get`` is that expression as a function. ``scope``
    also says how a fast path knows it: ``"message"`` facts are read from each frame,
    ``"run"`` facts are state a fast path carries from frame to frame, ``"connection"``
    facts stay the same over a run and are read once as a run starts."""

    __slots__ = ("name", "doc", "src", "scope", "names", "get")

    def __init__(self, name: str, doc: str, src: str, scope: str = "connection", **names: Any) -> None:
        assert scope in ("message", "run", "connection")
        self.name, self.doc, self.src, self.scope, self.names = name, doc, src, scope, names
        self.get = _function(src, "m" if scope == "message" else "c", names, name)

    def __repr__(self) -> str:
        return self.name

    def facts(self):
        return (self,)

    def source(self, on_message):
        if self.scope != "message" and on_message:
            raise TypeError(f"{self.name}: a fact of the stream state, in a rule of the message alone")
        return f"({self.src})"

    def program(self, slots, out):
        if self.name not in slots:
            raise NotOnFastPath(self.name)
        out += (FACT, slots[self.name])

    def c(self, slots):
        if self.name not in slots:
            raise NotOnFastPath(self.name)
        return f"F[{slots[self.name]}]"


class Const(Expr):
    __slots__ = ("value",)

    def __init__(self, value: int) -> None:
        self.value = int(value)

    def __repr__(self) -> str:
        return str(self.value)

    def source(self, on_message):
        return repr(self.value)

    def program(self, slots, out):
        if not 0 <= self.value <= U64:
            raise NotOnFastPath(f"constant {self.value}")
        out += (CONST, self.value)

    def c(self, slots):
        if not 0 <= self.value <= U64:
            raise NotOnFastPath(f"constant {self.value}")
        return f"UINT64_C({self.value})"


class Compare(Expr):
    __slots__ = ("op", "a", "b")

    def __init__(self, op: str, a: Expr, b: Expr) -> None:
        self.op, self.a, self.b = op, a, b

    def __repr__(self) -> str:
        return f"({self.a!r} {self.op} {self.b!r})"

    def facts(self):
        return (*self.a.facts(), *self.b.facts())

    def source(self, on_message):
        return f"({self.a.source(on_message)} {self.op} {self.b.source(on_message)})"

    def program(self, slots, out):
        self.a.program(slots, out)
        self.b.program(slots, out)
        out += (_COMPARE[self.op], 0)

    def c(self, slots):
        return f"({self.a.c(slots)} {self.op} {self.b.c(slots)})"


class Bits(Expr):
    __slots__ = ("a", "mask")

    def __init__(self, a: Expr, mask: int) -> None:
        self.a, self.mask = a, int(mask)

    def __repr__(self) -> str:
        return f"({self.a!r} has 0x{self.mask:x})"

    def facts(self):
        return self.a.facts()

    def source(self, on_message):
        return f"({self.a.source(on_message)} & {self.mask})"

    def program(self, slots, out):
        self.a.program(slots, out)
        out += (BITS, self.mask & U64)

    def c(self, slots):
        return f"(({self.a.c(slots)} & UINT64_C({self.mask & U64})) != 0)"


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

    def source(self, on_message):
        return "(" + f" {self._word} ".join(p.source(on_message) for p in self.parts) + ")"

    def program(self, slots, out):
        self.parts[0].program(slots, out)
        for p in self.parts[1:]:
            p.program(slots, out)
            out += (self._code, 0)

    def c(self, slots):
        return "(" + f" {self._c} ".join(p.c(slots) for p in self.parts) + ")"


class All(_Junction):
    __slots__ = ()
    _symbol, _code, _word, _c = "&", AND, "and", "&&"


class Any_(_Junction):
    __slots__ = ()
    _symbol, _code, _word, _c = "|", OR, "or", "||"


class Not(Expr):
    __slots__ = ("a",)

    def __init__(self, a: Expr) -> None:
        self.a = a

    def __repr__(self) -> str:
        return f"~{self.a!r}"

    def facts(self):
        return self.a.facts()

    def source(self, on_message):
        return f"(not {self.a.source(on_message)})"

    def program(self, slots, out):
        self.a.program(slots, out)
        out += (NOT, 0)

    def c(self, slots):
        return f"(!{self.a.c(slots)})"


def _lift(value) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"a condition compares facts and whole numbers, not {value!r}")
    return Const(value)


def _function(expr: str, arg: str, names: dict[str, Any], label: str, of_message: bool = False) -> Callable[[Any], Any]:
    """``lambda arg: expr``, compiled once (``of_message``: the expression reads the
    message ``m`` of the judging context ``c`` too)."""
    body = f"lambda c: (lambda m: {expr})(c.msg)" if of_message else f"lambda {arg}: {expr}"
    return eval(compile(body, f"<condition {label}>", "eval"), dict(names))


def judge_function(conditions: Sequence[Expr], on_message: bool, results: Sequence[Any] | None = None,
                   label: str = "checks") -> Callable[[Any], tuple]:
    """One function asking every condition in turn, each one's source inline (no call per
    part): it returns, in order, the ``results`` (by default the indices) of those that
    hold; ``()`` for none."""
    if not conditions:
        return _none
    names: dict[str, Any] = {}
    arg = "m" if on_message else "c"
    lines = [f"def judge({arg}):"] + ([] if on_message else ["    m = c.msg"]) + ["    hit = ()"]
    for i, cond in enumerate(conditions):
        lines.append(f"    if {cond.source(on_message)}: hit += (_{i},)")
        names.update(cond.env())
        names[f"_{i}"] = i if results is None else results[i]
    lines.append("    return hit")
    exec(compile("\n".join(lines), f"<{label}>", "exec"), names)
    return names["judge"]


def reader(facts: Sequence[Fact]) -> Callable[[Any], tuple]:
    """One function reading ``facts`` (none of them a message's) from a judging context,
    as a tuple in their order."""
    names: dict[str, Any] = {}
    for f in facts:
        names.update(f.names)
    return eval(compile("lambda c: (" + "".join(f.source(False) + ", " for f in facts) + ")",
                        "<facts>", "eval"), names)


def _none(c) -> tuple:
    return ()


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
