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
    """A member of the template that each row fills in: its index in :meth:`FindingLines.of`'s values."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class _NotPlain(Exception):
    """A member that json.dumps writes other than as its plain text."""


def _not_plain() -> str:
    raise _NotPlain


class FindingLines:
    """Writes the JSON lines of the rows of ``row_type`` (``FindingRow``): :meth:`line` is
    ``dumps_line(row.record).decode("ascii")``."""

    __slots__ = ("row_type", "_templates", "_texts", "_ts", "_ts_text")

    def __init__(self, row_type: Callable) -> None:
        self.row_type = row_type
        #: by what rows share (``shape`` in :meth:`of`): the template cut at its slots, and
        #: the picker of the slots' values
        self._templates: dict[tuple, tuple[list[str], Callable]] = {}
        self._texts: dict[str, str] = {}  # flow labels, directions, opcode names as JSON
        self._ts: object = _Slot  # the last time written (a record's frames share it), and its text
        self._ts_text = ""

    def line(self, row) -> str:
        """``row``'s line (its record's, as ``dumps_line`` writes it)."""
        return self.of(row.finding, row.source, row.frame, row.ts, row.flow, row.direction, row.opcode_name,
                       row.vbucket, row.stream_id)

    def of(self, f: Finding, source: str, frame: int | None, ts: float | None, flow: str | None,
           direction: str | None, opcode_name: str | None, vbucket: int | None, stream_id: int | None,
           framed: bool = True) -> str:
        """The line of the row ``row_type(f, source, stamp, frame, ts, flow, direction, opcode_name,
        vbucket, stream_id, framed)``, made without it."""
        shape = (source, f.rule, f.cls, f.severity, f.ref, f.offset is None, f.vbucket is None,
                 f.stream_id is None, f.frame is None)
        made = self._templates.get(shape)
        if made is None:
            made = self._templates[shape] = self._template(f, source)
        parts, pick = made
        try:
            message, offset, related = f.message, f.offset, f.frame
            if ts is not self._ts:
                self._ts_text = (_FLOAT(ts) if type(ts) is float and ts - ts == 0.0 else "null" if ts is None
                                 else _INT(ts) if type(ts) is int else _not_plain())
                self._ts = ts
            texts = self._texts
            values = (_TEXT(message) if type(message) is str else _not_plain(),
                      "null" if offset is None else _INT(offset) if type(offset) is int else _not_plain(),
                      "null" if related is None else _INT(related) if type(related) is int else _not_plain(),
                      "null" if frame is None else _INT(frame) if type(frame) is int else _not_plain(),
                      self._ts_text,
                      texts.get(flow) or self._text(flow), texts.get(direction) or self._text(direction),
                      texts.get(opcode_name) or self._text(opcode_name),
                      "null" if vbucket is None else _INT(vbucket) if type(vbucket) is int else _not_plain(),
                      "null" if stream_id is None else _INT(stream_id) if type(stream_id) is int else _not_plain())
        except (_NotPlain, TypeError):  # (TypeError: a member that is no dict key)
            row = self.row_type(f, source, None, frame, ts, flow, direction, opcode_name, vbucket, stream_id, framed)
            return dumps_line(row.record).decode("ascii")
        line = parts[:]
        line[1::2] = pick(values)
        return "".join(line)

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

    def _template(self, f: Finding, source: str) -> tuple[list[str], Callable]:
        """The template of rows of ``source`` shaped as ``f``: a row's record made with a
        slot for each member a row fills in, as json.dumps writes a record
        (``{"key":value,...}``, ASCII, no spaces), cut at the slots; and the picker of the
        slots' values (in :meth:`of`'s order) in the order they come."""
        slot = [_Slot(i) for i in range(10)]
        marked = (lambda v, s: None if v is None else s)
        finding = Finding(f.rule, f.cls, f.severity, slot[0], marked(f.offset, slot[1]), f.ref,
                          marked(f.vbucket, slot[8]), marked(f.stream_id, slot[9]), marked(f.frame, slot[2]))
        shaped = self.row_type(finding, source, None, *slot[3:], True)
        parts, text, order = [], "{", []
        for i, (key, value) in enumerate(shaped.record.items()):
            text += ("," if i else "") + _TEXT(key) + ":"
            if type(value) is _Slot:
                parts += [text, ""]
                order.append(value.index)
                text = ""
            else:
                text += dumps_line(value)[:-1].decode("ascii")
        parts.append(text + "}\n")
        pick = itemgetter(*order) if len(order) > 1 else (lambda values: (values[order[0]],))
        return parts, pick
