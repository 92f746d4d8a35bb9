"""A findings row's JSON line (``sinks.FindingRow.record`` as ``outputs.jsonl.dumps_line``
writes it) made at the cost of its few members that change from row to row.

A capture can have a finding on every frame, mostly of the same rule: what such rows share
(the file, the rule, its class, severity and reference, which members the finding has, and
so the members' order) is written once, into a template made from ``FindingRow.record``
itself, with a slot for each member that the row fills in (its message, offset, frames,
time, flow, direction, opcode, vbucket and stream id). A row whose member ``json.dumps``
would not write plainly (a float that is not finite, a type other than text, integer or
None) is written the ordinary way, from its record.
"""

from __future__ import annotations

import json
from operator import itemgetter
from typing import Callable

from ..findings import Finding
from ..outputs.jsonl import dumps_line

_TEXT = json.encoder.encode_basestring_ascii  # a string as json.dumps(ensure_ascii=True) writes it
_INT = int.__repr__
_FLOAT = float.__repr__
#: strings kept written (flows, directions, opcode names) before the cache starts again
_TEXTS_KEPT = 4096


class _Slot:
    """A member of the template that each row fills in: its index in :meth:`FindingLines.line`'s values."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class _NotPlain(Exception):
    """A member that json.dumps writes other than as its plain text."""


def _number(v) -> str:
    if v is None:
        return "null"
    if type(v) is int:
        return _INT(v)
    raise _NotPlain


def _literal(text: str) -> str:
    return text.replace("%", "%%")


class FindingLines:
    """Writes the JSON lines of the rows of ``row_type`` (``FindingRow``): :meth:`line` is
    ``dumps_line(row.record).decode("ascii")``."""

    __slots__ = ("row_type", "_templates", "_texts", "_ts", "_ts_text")

    def __init__(self, row_type: Callable) -> None:
        self.row_type = row_type
        #: by what rows share (see _shape): the template and the picker of its slots' values
        self._templates: dict[tuple, tuple[str, Callable]] = {}
        self._texts: dict[str, str] = {}  # flow labels, directions, opcode names as JSON
        self._ts: object = _Slot  # the last time written (a record's frames share it), and its text
        self._ts_text = ""

    def line(self, row) -> str:
        f = row.finding
        shape = (row.source, f.rule, f.cls, f.severity, f.ref, f.offset is None, f.vbucket is None,
                 f.stream_id is None, f.frame is None)
        made = self._templates.get(shape)
        if made is None:
            made = self._templates[shape] = self._template(row)
        template, pick = made
        try:
            message = f.message
            if type(message) is not str:
                raise _NotPlain
            ts = row.ts
            if ts is not self._ts:
                if type(ts) is float and ts - ts == 0.0:
                    text = _FLOAT(ts)
                elif ts is None or type(ts) is int:
                    text = _number(ts)
                else:
                    raise _NotPlain
                self._ts, self._ts_text = ts, text
            values = (_TEXT(message), _number(f.offset), _number(f.frame), _number(row.frame), self._ts_text,
                      self._text(row.flow), self._text(row.direction), self._text(row.opcode_name),
                      _number(row.vbucket), _number(row.stream_id))
        except _NotPlain:
            return dumps_line(row.record).decode("ascii")
        return template % pick(values)

    def _text(self, s) -> str:
        if s is None:
            return "null"
        got = self._texts.get(s)
        if got is None:
            if type(s) is not str:
                raise _NotPlain
            if len(self._texts) >= _TEXTS_KEPT:
                self._texts.clear()
            got = self._texts[s] = _TEXT(s)
        return got

    def _template(self, row) -> tuple[str, Callable]:
        """The template of rows shaped as ``row``: its record made with a slot for each
        member a row fills in, written as json.dumps writes a record (``{"key":value,...}``,
        ASCII, no spaces), each slot as ``%s``; and the picker of the slots' values, in
        the order they come."""
        f = row.finding
        slot = [_Slot(i) for i in range(10)]
        marked = (lambda v, s: None if v is None else s)
        finding = Finding(f.rule, f.cls, f.severity, slot[0], marked(f.offset, slot[1]), f.ref,
                          marked(f.vbucket, slot[8]), marked(f.stream_id, slot[9]), marked(f.frame, slot[2]))
        shaped = self.row_type(finding, row.source, row.stamp, slot[3], slot[4], slot[5], slot[6], slot[7],
                               slot[8], slot[9], row.framed)
        parts, order = [], []
        for key, value in shaped.record.items():
            if type(value) is _Slot:
                order.append(value.index)
                text = "%s"
            else:
                text = _literal(dumps_line(value)[:-1].decode("ascii"))
            parts.append(f"{_literal(_TEXT(key))}:{text}")
        pick = itemgetter(*order) if len(order) > 1 else (lambda values: (values[order[0]],))
        return "{" + ",".join(parts) + "}\n", pick
