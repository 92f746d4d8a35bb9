"""Record filters of the decode and live commands: criteria by name (``opcode``,
``vbucket``, ``command``, ...), which each protocol family applies to its own records as
its ``filters`` say (:class:`~dcpinspect.families.RecordFilters`), and ``--flow``, which
applies to every record.

A record is kept when its family knows at least one of the criteria given and the record
meets every one of them it knows; the criteria a family does not know are no test for
it. A family that knows none of the criteria given has its records dropped: the filter
asks for what only other families' records carry."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..families import Family, families
from ..sessions.captured import Captured, flow_label
from .inputs import Unusable


def _drop(record: Any) -> bool:
    return False


@dataclass(frozen=True)
class FrameFilter:
    """The filter of one command: ``criteria`` as ``(name, values)`` pairs, ``flow`` a part
    of the connection's label. Plain data (it goes to worker processes); each process
    makes the test of each record type once."""

    criteria: tuple[tuple[str, tuple], ...] = ()
    flow: str = ""
    _tests: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def empty(self) -> bool:
        return not (self.criteria or self.flow)

    def __call__(self, item: Captured) -> bool:
        if self.flow and self.flow not in flow_label(item.flow):
            return False
        if not self.criteria:
            return True
        msg = item.msg
        test = self._tests.get(type(msg))
        if test is None:
            test = self._tests[type(msg)] = self._test_for(msg)
        return test(msg)

    def _test_for(self, msg: Any) -> Callable[[Any], bool]:
        family = next((f for f in families() if f.filters is not None and f.filters.owns(msg)), None)
        return _drop if family is None else family_test(family, dict(self.criteria))

    def __getstate__(self) -> dict:
        return {"criteria": self.criteria, "flow": self.flow}

    def __setstate__(self, state: dict) -> None:
        for name, value in (*state.items(), ("_tests", {})):
            object.__setattr__(self, name, value)


def family_test(family: Family, given: dict[str, tuple]) -> Callable[[Any], bool]:
    """The test of ``family``'s records against ``given``: by its filters, or dropped
    when it knows none of the criteria."""
    known = {name: values for name, values in given.items() if name in family.filters.criteria}
    return family.filters.matcher(known) if known else _drop


def frame_filter(criteria: dict[str, list], flow: str = "") -> FrameFilter:
    """The filter of the options given (``criteria``: option name without its dashes →
    the values given, empty lists for options not used) and ``--flow``. A criterion no
    family knows, or a value a family cannot take (an opcode no name matches), is
    :class:`~.inputs.Unusable`."""
    given = {name: tuple(values) for name, values in criteria.items() if values}
    with_filters = [f for f in families() if f.filters is not None]
    for name in given:
        if not any(name in f.filters.criteria for f in with_filters):
            raise Unusable(f"no protocol family filters records by {name!r}")
    for family in with_filters:
        try:
            family_test(family, given)
        except ValueError as exc:
            raise Unusable(str(exc)) from None
    return FrameFilter(tuple(sorted(given.items())), flow)
