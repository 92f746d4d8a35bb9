"""Findings: what the validator says about frames and streams."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

SEVERITIES = ("info", "warning", "error")
#: a severity's rank, for "this severity or worse"
LEVELS = {name: level for level, name in enumerate(SEVERITIES)}


class Problem(NamedTuple):
    """A fact noticed while decoding, named by its kind (``messages/problems.py``); the
    rules say which rule reports it."""

    kind: str
    message: str
    offset: int | None = None


@dataclass(slots=True, unsafe_hash=True)
class Finding:
    """Not frozen, as ``sessions.captured.Captured``: a capture can have one a frame, and a
    frozen dataclass is made at three times the cost. Never changed once made (``replace``)."""

    rule: str
    cls: str  # EINVAL, ERANGE, KEY_ENOENT, or another named class
    severity: str  # info, warning, error
    message: str
    offset: int | None = None
    ref: str = ""
    vbucket: int | None = None
    stream_id: int | None = None
    frame: int | None = None  # index of the frame that showed it, when not the one it is attached to

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
