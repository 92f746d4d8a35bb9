"""Declared checks (rules/checks.py): each rule's condition is written once, and the
frame-by-frame rules and the jsonl lane both judge by it. Changing a check moves both."""

from __future__ import annotations

import json
import random

import pytest

from dcpgen import MEMORY, Dcp
from dcpinspect.families.mcbp.messages.opcodes import OP
from dcpinspect.families.mcbp import lane as lane_module
from dcpinspect.families.mcbp import lane_rules
from dcpinspect.rules import checks, conditions
from dcpinspect.families.mcbp.rules import facts as F
from test_lane import capture, docs, run, same

needs_lane = pytest.mark.skipif(not lane_module.available(), reason="built without a C compiler")


def _only(rule: str, point: str) -> checks.Check:
    found = [c for c in checks.CHECKS if c.rule == rule and c.point == point]
    assert len(found) == 1
    return found[0]


@pytest.fixture
def swapped():
    """Replace checks for one test, and put the declared ones back after it."""
    saved = list(checks.CHECKS)
    yield checks.replace_check
    checks.CHECKS[:] = saved
    checks.changed()


def _rules_of(text: str, opcode_name: str = "DCP_MUTATION") -> list[str]:
    """The rules found in the lines of one opcode."""
    lines = [json.loads(line) for line in text.splitlines()]
    return [f["rule"] for r in lines if r.get("opcode_name") == opcode_name for f in r.get("findings", [])]


@needs_lane
@pytest.mark.parametrize("limit", [250, 6])
def test_a_key_length_threshold_moves_both_paths(tmp_path, swapped, limit):
    """key-too-long's limit changed from 250 to 6: an 8-byte key is now a finding in the
    rules' path and the lane's alike, and the lane still takes the other frames."""
    if limit != 250:
        over = (~F.prefixed & (F.key_length > limit)) | (F.prefixed & (F.key_length > limit + 1))
        old = [c for c in checks.CHECKS if c.rule == "key-too-long"][0]
        swapped(old, over)
    d = Dcp().handshake()
    p = d.stream(3)
    p.marker(1, 6, flags=MEMORY)
    for seqno, key in enumerate(["k1", "k2", "longkey8", "k4", "k5", "k6"], 1):
        p.mutation(key=key, seqno=seqno)
    path = capture(tmp_path, d)
    taken = same(path)
    text, _, _ = run(path, True)
    assert _rules_of(text).count("key-too-long") == (limit == 6)
    assert docs(taken) == (6 if limit == 250 else 5)


@needs_lane
@pytest.mark.parametrize("strict", [True, False])
def test_a_seqno_order_check_moves_both_paths(tmp_path, swapped, strict):
    """seqno-regression declared as "not above the last" (the rule) or as "below the last"
    (an equal seqno allowed): a repeated seqno is judged the same way by both paths, and
    the lane takes the repeat exactly when no check objects."""
    if not strict:
        swapped(_only("seqno-regression", "stream.seqno"),
                ~F.in_oso & (F.seqno < F.last_seqno) & ~(F.adopted & F.last_seqno.eq(0)))
    d = Dcp().handshake()
    p = d.stream(4)
    p.marker(1, 9, flags=MEMORY)
    for seqno, key in [(1, "a"), (2, "b"), (2, "c"), (3, "d")]:
        p.mutation(key=key, seqno=seqno)
    path = capture(tmp_path, d)
    taken = same(path)
    text, _, _ = run(path, True)
    assert ("seqno-regression" in _rules_of(text)) == strict
    assert docs(taken) == (3 if strict else 4)


@needs_lane
def test_a_new_check_over_an_unknown_fact_leaves_its_opcode_to_the_rules(tmp_path, swapped):
    """A check over a fact the lane cannot read (a message fact not in _lane.FACTS) takes
    its opcode off the lane: the output is the rules' alone, and still the same."""
    cas = conditions.Fact("cas", "the frame's CAS", "m.cas", "message")
    checks.declare("nmeta-nonzero", "frame.nmeta", cas.eq(12345), lambda m: "CAS 12345",
                   on=(OP.DCP_MUTATION,))
    try:
        d = Dcp().handshake()
        p = d.stream(2)
        p.snapshot(5, kind="mutation")
        taken = same(capture(tmp_path, d))
        assert taken["DCP_MUTATION"] == 0 and taken["DCP_SNAPSHOT_MARKER"] >= 1
    finally:
        checks.CHECKS.pop()
        checks.changed()


@needs_lane
@pytest.mark.parametrize("native", [True, False], ids=["generated C", "programs"])
def test_the_c_evaluators_are_the_reference_one(native):
    """_lane.c judges the checks as conditions.evaluate runs their programs, both ways: by
    the C generated from them and by interpreting the programs; on every lane opcode's
    checks, over random fact values (edges of the 64-bit range included)."""
    plan = lane_rules.Plan(lane_module._lane.FACTS)
    rules = lane_module._lane.compile_rules(plan.programs(), len(plan.slots), native)
    rng = random.Random(7)
    edges = [0, 1, 2, 5, 250, 251, 2**63, 2**64 - 1]
    for op in (0x56, 0x57, 0x58):
        programs = [conditions.program(c.when, plan.slots) for c in checks.for_opcode(op)]
        for _ in range(3000):
            values = tuple(rng.choice(edges) if rng.random() < 0.5 else rng.randrange(4) for _ in range(len(plan.slots)))
            want = any(conditions.evaluate(code, list(values)) for code in programs)
            assert lane_module._lane.check_facts(rules, op, values) is want


def test_the_generated_c_is_made_from_the_declared_checks():
    """_lane_rules.h is what lane_rules makes of the checks as declared now (regenerate
    it with scripts/lane_rules.py), and the module was built from it."""
    text = lane_rules.header(lane_rules.Plan(lane_rules.c_fact_names()))
    assert lane_rules.HEADER.read_text() == text, "stale _lane_rules.h: run python scripts/lane_rules.py"
    if lane_module.available():
        assert lane_module._lane.FACTS == lane_rules.c_fact_names()
        assert lane_module._lane.GENERATED == lane_rules.Plan(lane_module._lane.FACTS).fingerprint()


@needs_lane
def test_a_changed_check_turns_the_generated_c_off(swapped):
    """The lane runs the generated C while the checks are those it was made from, and the
    programs once one changes (which the tests above show follow the change)."""
    assert lane_module.compile_rules()[2] is True
    swapped(_only("seqno-zero", "frame.seqno"), F.seqno.eq(1))
    assert lane_module.compile_rules()[2] is False


def test_programs_are_checked_before_they_run():
    """A malformed program (stack underflow, a fact slot out of range, no END) is refused
    when compiled, never run."""
    if not lane_module.available():
        pytest.skip("built without a C compiler")
    c = lane_module._lane
    n = len(c.FACTS)
    for bad in [(conditions.LT, 0, 0, 0), (conditions.FACT, n + 5, 0, 0), (conditions.FACT, 0), (99, 0, 0, 0)]:
        with pytest.raises(ValueError):
            c.compile_rules((bad, None, None), n)


def test_conditions_judge_as_python_does():
    """A condition's Python function and its program agree (the same facts, read from an
    object for one and numbered for the other)."""
    a = conditions.Fact("a", "", "c['a']")
    b = conditions.Fact("b", "", "c['b']")
    cond = ((a <= b) & ~a.has(4)) | (a.eq(0) & b.ne(3))
    test = cond.python(False)
    code = conditions.program(cond, {"a": 0, "b": 1})
    for x in range(8):
        for y in range(8):
            assert bool(test({"a": x, "b": y})) == conditions.evaluate(code, [x, y])


def test_every_problem_the_decoder_notices_has_a_rule():
    """The decoder names what it notices by kind (messages/problems.py); the rules map each
    kind to the rule that reports it, and every kind has one."""
    from dcpinspect.families.mcbp.messages import problems
    from dcpinspect.families.mcbp.rules.frame import PROBLEM_RULES
    from dcpinspect.families.mcbp.rules.book import FRAME_RULES

    assert set(PROBLEM_RULES) == problems.KINDS and len(problems.KINDS) >= 16
    assert all(rule in FRAME_RULES for rule in PROBLEM_RULES.values())
