"""The JSON body of an error response when XERROR was negotiated (spec §6).

Shape: ``{"error": {"context": "...", "ref": "<uuid>"}}``; servers may add other
top-level members (e.g. ``manifest_uid`` for unknown-collection errors).
"""

import json

from . import jsontext
from .errors import CodecError


def parse_xerror(value: bytes | memoryview) -> dict:
    """Parse an error body.

    Returns ``{"context": str | None, "ref": str | None, "extra": dict}`` where
    ``extra`` holds the top-level members other than ``error``. A body that is not JSON
    raises :class:`jsontext.JsonInvalid`, one nested deeper than the cap
    :class:`jsontext.JsonTooDeep`, a JSON body of another shape :class:`CodecError`.
    """
    doc = jsontext.loads(value, what="error body")
    if not isinstance(doc, dict):
        raise CodecError("error body is not a JSON object")
    error = doc.get("error", {})
    if not isinstance(error, dict):
        raise CodecError('"error" member is not a JSON object')
    out = {}
    for member in ("context", "ref"):
        text = error.get(member)
        if text is not None and not isinstance(text, str):
            raise CodecError(f'"error.{member}" is not a string')
        out[member] = text
    out["extra"] = {k: v for k, v in doc.items() if k != "error"}
    return out


def encode_xerror(context: str | None = None, ref: str | None = None, **extra) -> bytes:
    """Build an error body; members that are None are left out."""
    error = {k: v for k, v in (("context", context), ("ref", ref)) if v is not None}
    return json.dumps({"error": error, **extra}, separators=(",", ":")).encode("utf-8")
