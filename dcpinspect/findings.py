"""Findings: what the validator says about frames and streams."""

from __future__ import annotations

from collections import namedtuple

from .slots import Slots

SEVERITIES = ("info", "warning", "error")
#: a severity's rank, for "this severity or worse"
LEVELS = {name: level for level, name in enumerate(SEVERITIES)}


class Problem(namedtuple("Problem", "kind message offset", defaults=(None,))):
    """A fact noticed while decoding, named by its kind (``messages/problems.py``); the
    rules say which rule reports it: ``kind``, ``message``, ``offset`` (int or None)."""

    __slots__ = ()


class Finding(Slots):
    """Never changed once made (:meth:`~.slots.Slots.replace` makes another)."""

    __slots__ = ("rule", "cls", "severity", "message", "offset", "ref", "vbucket", "stream_id", "frame")

    def __init__(self, rule: str, cls: str, severity: str, message: str, offset: int | None = None, ref: str = "",
                 vbucket: int | None = None, stream_id: int | None = None, frame: int | None = None) -> None:
        self.rule = rule
        self.cls = cls  # EINVAL, ERANGE, KEY_ENOENT, or another named class
        self.severity = severity  # info, warning, error
        self.message = message
        self.offset = offset
        self.ref = ref
        self.vbucket = vbucket
        self.stream_id = stream_id
        self.frame = frame  # index of the frame that showed it, when not the one it is attached to

    __hash__ = Slots.hashed

    def to_json(self) -> dict:
        out = {"rule": self.rule, "class": self.cls, "severity": self.severity, "message": self.message}
        if self.offset is not None:
            out["offset"] = self.offset
        if self.vbucket is not None:
            out["vbucket"] = self.vbucket
        if self.stream_id is not None:
            out["stream_id"] = self.stream_id
        if self.frame is not None:
            out["frame"] = self.frame
        if self.ref:
            out["ref"] = self.ref
        return out
