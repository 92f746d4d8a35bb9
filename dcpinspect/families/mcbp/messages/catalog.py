"""What each opcode carries: the per-message table every other part reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ....messages.layout import Layout

REQUIRED, FORBIDDEN, OPTIONAL = "required", "forbidden", "optional"


@dataclass(frozen=True)
class Body:
    """Extras, key and value of one direction of one opcode.

    ``extras`` maps each allowed extras length to its layout (``None`` for an
    opaque blob); ``None`` as a whole means "not checked".
    """

    extras: Mapping[int, Layout | None] | None = field(default_factory=lambda: {0: None})
    key: str = FORBIDDEN
    value: str = FORBIDDEN
    key_kind: str = "text"  # "text", "document" (collection-prefixed), "binary"
    value_kind: str = "auto"  # a decoder name in values.py
    engine_specific: bool = False  # TAP: engine bytes between extras and key


ANY = Body(extras=None, key=OPTIONAL, value=OPTIONAL, value_kind="auto")
EMPTY = Body()


@dataclass(frozen=True)
class OpSpec:
    opcode: int
    name: str
    request: Body = ANY
    response: Body = ANY
    family: str = "mcbp"  # "mcbp", "dcp", "tap", "server"
    seqno_field: str | None = None  # the field carrying the stream seqno
    #: a request that belongs to a stream and travels producer → consumer (counted
    #: against the consumer's flow-control buffer)
    stream: bool = False
    #: a data item: its seqno must fall inside the stream's current snapshot
    item: bool = False
    #: a client sends this request first on a new connection (HELO, SASL, bucket
    #: selection, DCP_OPEN, TAP_CONNECT): a conversation that begins with it was seen
    #: from its start
    opens_connection: bool = False


def extras(*layouts: Layout | None, sizes: tuple[int, ...] = ()) -> dict[int, Layout | None]:
    out: dict[int, Layout | None] = {layout.size: layout for layout in layouts if layout is not None}
    for size in sizes:
        out.setdefault(size, None)
    return out
