"""Build frames from the layouts: the encoder used by samples, benchmarks and tests."""

from __future__ import annotations

from typing import Any

from .header import header_layout
from ....messages.layout import Layout


def build_frame(
    magic: int,
    opcode: int,
    *,
    extras: bytes = b"",
    key: bytes = b"",
    value: bytes = b"",
    framing: bytes = b"",
    vbucket: int = 0,
    status: int = 0,
    opaque: int = 0,
    cas: int = 0,
    datatype: int = 0,
    body_length: int | None = None,
) -> bytes:
    """Header + body; ``body_length`` overrides the computed length (to build liars)."""
    layout = header_layout(magic)
    fields: dict[str, Any] = dict(
        magic=magic,
        opcode=opcode,
        key_length=len(key),
        extras_length=len(extras),
        datatype=datatype,
        total_body_length=len(framing) + len(extras) + len(key) + len(value) if body_length is None else body_length,
        opaque=opaque,
        cas=cas,
    )
    if "framing_extras_length" in layout.names:
        fields["framing_extras_length"] = len(framing)
    if "vbucket" in layout.names:
        fields["vbucket"] = vbucket
    else:
        fields["status"] = status
    return layout.pack(**fields) + framing + extras + key + value


def request(opcode: int, layout: Layout | None = None, *, magic: int = 0x80, **kw: Any) -> bytes:
    """A request whose extras are ``layout`` packed from the keyword arguments it names."""
    frame_kw = {k: kw.pop(k) for k in list(kw) if k in _FRAME_ARGS}
    extras = layout.pack(**kw) if layout is not None else b""
    return build_frame(magic, opcode, extras=extras, **frame_kw)


def response(opcode: int, *, magic: int = 0x81, **kw: Any) -> bytes:
    return build_frame(magic, opcode, **kw)


_FRAME_ARGS = frozenset({"key", "value", "framing", "vbucket", "status", "opaque", "cas", "datatype", "body_length"})
