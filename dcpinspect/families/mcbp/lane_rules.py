"""The checks the jsonl fast lane judges, in the two forms ``dcpinspect/families/mcbp/_lane.c`` runs them,
both made from the checks' declarations (``rules/checks.py``), never written by hand:

* **programs** (``rules/conditions.py``'s small stack language) over numbered facts,
  which C interprets: whatever the checks are when a process starts, the lane follows;
* **C code**, ``dcpinspect/families/mcbp/_lane_rules.h``, generated from the same checks and compiled
  into the module: the checks' conditions as C expressions, which the compiler turns into
  a few compares and branches a frame. It is used only while the programs are the ones it
  was generated from (their fingerprint, ``_lane.GENERATED``); a check changed since
  (in the source, or at run time) leaves the lane on the programs.

Regenerate the header after changing a check the lane meets, before building::

    python scripts/lane_rules.py

(``tests/test_checks.py`` fails while the header is stale.)
"""

from __future__ import annotations

import re
import textwrap
import zlib
from pathlib import Path
from typing import Sequence

from .messages.keys import RESERVED_COLLECTION_IDS
from .messages.opcodes import OP
from ...rules import checks
from .rules import frame, stream  # noqa: F401 (the checks they declare)
from ...rules.conditions import All, Const, Expr, Fact, NotOnFastPath, program

#: the opcodes the lane judges checks of, in ``_lane.c``'s order (0x56 + i)
RULE_OPCODES = (OP.DCP_SNAPSHOT_MARKER, OP.DCP_MUTATION, OP.DCP_DELETION)
HEADER = Path(__file__).resolve().with_name("_lane_rules.h")
SOURCE = HEADER.with_name("_lane.c")


class Plan:
    """The lane's checks over its facts: ``slots`` numbers the facts C reads (``fact_names``,
    C's order) and then the connection facts the checks name (read in Python as a run
    starts: ``connection``); ``parts[i]`` holds, for ``RULE_OPCODES[i]``, each check's two
    parts (:func:`split`), or is None when a check names a fact the lane cannot know (the
    opcode is left to the rules)."""

    def __init__(self, fact_names: Sequence[str]) -> None:
        self.slots = {name: i for i, name in enumerate(fact_names)}
        self.connection: list[Fact] = []
        self.parts: list[tuple[tuple[Expr, Expr], ...] | None] = []
        self.rules: list[tuple[str, ...]] = []  # each check's rule id, beside its parts
        for op in RULE_OPCODES:
            declared = checks.for_opcode(op)
            found = []
            try:
                for check in declared:
                    for fact in check.when.facts():
                        if fact.scope == "connection" and fact.name not in self.slots:
                            self.slots[fact.name] = len(self.slots)
                            self.connection.append(fact)
                    once, each = split(check.when)
                    once.c(self.slots), each.c(self.slots)  # every fact known, or NotOnFastPath
                    found.append((once, each))
            except NotOnFastPath:
                found = None
            self.parts.append(None if found is None else tuple(found))
            self.rules.append(tuple(c.rule for c in declared))

    def programs(self) -> tuple:
        """Per opcode, the flat program ``_lane.compile_rules`` takes: each check's two
        parts, each closed by END (0, 0); None for an opcode left to the rules."""
        return tuple(None if parts is None else
                     tuple(x for pair in parts for part in pair for x in (*program(part, self.slots), 0, 0))
                     for parts in self.parts)

    def fingerprint(self) -> str:
        """What the generated C was made from: the facts' numbering, the programs, and the
        reserved collection ids (the C key reader's, in its guess of a prefix)."""
        text = repr((sorted(self.slots.items(), key=lambda kv: kv[1]), self.programs(), RESERVED_COLLECTION_IDS))
        data = text.encode()  # (zlib's checksums: hashlib would load OpenSSL into every process)
        return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}"


def split(cond: Expr) -> tuple[Expr, Expr]:
    """A check's condition as the scan judges it: the conjuncts over connection facts alone
    (once a run), then the rest (each frame); both true is the whole condition true."""
    parts = cond.parts if isinstance(cond, All) else (cond,)
    once = tuple(p for p in parts if all(f.scope == "connection" for f in p.facts()))
    each = tuple(p for p in parts if p not in once)
    return tuple(All(ps) if len(ps) > 1 else ps[0] if ps else Const(1) for ps in (once, each))


def c_fact_names(source: str | None = None) -> tuple[str, ...]:
    """The facts ``_lane.c`` reads, in its order (its ``FACT_NAMES``): the header is
    generated before the module is built, so from the C source itself."""
    text = SOURCE.read_text() if source is None else source
    body = re.search(r"FACT_NAMES\[N_FACTS\]\s*=\s*\{(.*?)\};", text, re.S)
    if body is None:
        raise ValueError("_lane.c: no FACT_NAMES")
    return tuple(re.findall(r'"(\w+)"', body.group(1)))


def header(plan: Plan) -> str:
    """``_lane_rules.h``: the plan's checks as two C functions of the lane opcode's index
    ``i`` and the facts ``F``: which checks' connection parts hold (a bit a check), and
    whether any check with its bit set holds of a frame."""
    names = ", ".join(f"{n}:{name}" for name, n in plan.slots.items())
    out = [
        "/* The fast lane's checks as C, generated from their declarations (rules/checks.py)",
        " * by dcpinspect/families/mcbp/lane_rules.py: do not edit; regenerate with",
        " * `python scripts/lane_rules.py`. Used only while the programs",
        " * lane.py compiles have this fingerprint. The facts F[n]:",
        *textwrap.wrap(names, 88, initial_indent=" * ", subsequent_indent=" * "),
        " */",
        "",
        f'#define GENERATED_FINGERPRINT "{plan.fingerprint()}"',
        "/* messages/keys.py's RESERVED_COLLECTION_IDS */",
        f"#define RESERVED_COLLECTION_FIRST {RESERVED_COLLECTION_IDS.start}",
        f"#define RESERVED_COLLECTION_LAST {RESERVED_COLLECTION_IDS.stop - 1}",
        "",
        "static uint64_t generated_activate(int i, const uint64_t *F) {",
        "    uint64_t m = 0;",
        "    switch (i) {",
    ]
    out += _cases(plan, 0, "if ({part}) m |= UINT64_C(1) << {j};", always="m = UINT64_C({mask:#x});")
    out += ["    }", "    return m;", "}", "",
            "static int generated_any(int i, uint64_t m, const uint64_t *F) {",
            "    switch (i) {"]
    out += _cases(plan, 1, "if ((m >> {j} & 1) && {part}) return 1;")
    out += ["    }", "    return 0;", "}", ""]
    return "\n".join(out)


def _cases(plan: Plan, which: int, line: str, always: str | None = None) -> list[str]:
    """A switch's cases, one an opcode on the lane: ``line`` for each check, with ``part``
    its connection part (``which`` 0) or its frame part (1) as C, and ``j`` its bit. With
    ``always``, the checks whose part is always true are one statement of their bits'
    ``mask`` (named in a comment), ahead of the others' lines."""
    out: list[str] = []
    for i, parts in enumerate(plan.parts):
        if parts is None:
            continue
        out.append(f"    case {i}: /* 0x{RULE_OPCODES[i]:02x} */")
        checks = list(enumerate(zip(parts, plan.rules[i])))
        if always is not None:
            held = [(j, rule) for j, (pair, rule) in checks if _always(pair[which])]
            if held:
                out.append(f"        {always.format(mask=sum(1 << j for j, _ in held))} /* "
                           + ", ".join(dict.fromkeys(rule for _, rule in held)) + " */")
                checks = [c for c in checks if not _always(c[1][0][which])]
        out += [f"        {line.format(part=pair[which].c(plan.slots), j=j)} /* {rule} */"
                for j, (pair, rule) in checks]
        out.append("        break;")
    return out


def _always(part: Expr) -> bool:
    """Whether a check's part is the constant true (a check with no part of that kind)."""
    return isinstance(part, Const) and part.value != 0


def write() -> bool:
    """Write the header from the checks as they are declared: whether it changed."""
    text = header(Plan(c_fact_names()))
    if HEADER.exists() and HEADER.read_text() == text:
        return False
    HEADER.write_text(text)
    return True
