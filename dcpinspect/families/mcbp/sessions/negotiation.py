"""What a connection negotiated: HELO features, DCP_OPEN, DCP controls (sans-I/O).

Fed every decoded message of one TCP connection in order, it answers how the
next frame must be decoded (``context()``): above all whether keys carry a
collection-id prefix, which only the HELO exchange says for sure.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..messages.frame import DecodeContext, Message
from ..messages.names import FEATURE_COLLECTIONS, FEATURES, SERVER_MAGICS
from ..messages.opcodes import OP

_COLLECTION_ONLY_OPCODES = frozenset({OP.DCP_SYSTEM_EVENT, OP.DCP_SEQNO_ADVANCED, OP.DCP_OSO_SNAPSHOT})


@dataclass(slots=True)
class Negotiation:
    collections_override: bool | None = None
    seen_from_start: bool = False  # the connection's first bytes were seen
    features_requested: dict[int, list[str]] = field(default_factory=dict)  # HELO opaque → names asked
    features: list[str] | None = None  # enabled by the HELO response
    collections: bool | None = None
    collections_source: str = ""
    dcp_name: str | None = None
    dcp_open_flags: int | None = None
    controls: dict[str, str] = field(default_factory=dict)
    bucket: str | None = None
    buffer_size: int = 0  # connection_buffer_size accepted by the producer (0: no flow control)
    stream_ids: bool = False  # enable_stream_id=true accepted
    _pending_controls: dict[int, tuple[str, str]] = field(default_factory=dict)
    #: what messages needed and the connection had not negotiated (a control's name, or
    #: "collections"): each said once, until the control or HELO settles it again
    unmet: set[str] = field(default_factory=set)
    #: the last context made, and the base it was made from (one base a connection, in practice)
    _context: DecodeContext | None = field(default=None, repr=False, compare=False)
    _context_base: DecodeContext | None = field(default=None, repr=False, compare=False)

    def context(self, base: DecodeContext | None = None) -> DecodeContext:
        collections = self.collections_override if self.collections_override is not None else self.collections
        if collections is None and self.seen_from_start:
            collections = False  # keys carry a collection prefix only after a HELO that says so
        base = base or DecodeContext()
        if base.collections == collections:
            return base
        cached = self._context
        if cached is None or self._context_base is not base or cached.collections != collections:
            cached = self._context = replace(base, collections=collections)
            self._context_base = base
        return cached

    def observe(self, msg: Message) -> None:
        op = msg.opcode
        if msg.magic in SERVER_MAGICS:
            return
        if op == OP.HELO:
            if msg.is_request:
                self.features_requested[msg.opaque] = list(msg.fields.get("features", []))
            elif msg.status == 0:
                self.features = list(msg.fields.get("features", []))
                self._set_collections(FEATURES[FEATURE_COLLECTIONS] in self.features, "HELO")
                self.unmet.discard("collections")
        elif op == OP.DCP_OPEN and msg.is_request:
            self.dcp_name = msg.fields.get("key")
            self.dcp_open_flags = msg.values.get("flags")
        elif op == OP.DCP_CONTROL:
            if msg.is_request:
                self._pending_controls[msg.opaque] = (msg.fields.get("key", ""), msg.fields.get("value", ""))
            elif msg.opaque in self._pending_controls:
                key, value = self._pending_controls.pop(msg.opaque)
                if msg.status == 0:
                    self.controls[key] = value
                    self.unmet.discard(key)
                    if key == "connection_buffer_size":
                        self.buffer_size = int(value) if value.isdigit() else 0
                    elif key == "enable_stream_id":
                        self.stream_ids = value == "true"
        elif op == OP.SELECT_BUCKET and msg.is_request:
            self.bucket = msg.fields.get("key")
        if self.collections is None and msg.is_request and (
            op in _COLLECTION_ONLY_OPCODES or msg.stream_id is not None
            or (op == OP.DCP_STREAM_REQ and msg.body_length > msg.extras_length)
        ):
            self._set_collections(True, msg.name)

    def went_without(self, key: str) -> None:
        """A message needed ``key`` (a control, or "collections") the connection had not
        negotiated."""
        self.unmet.add(key)

    def _set_collections(self, on: bool, source: str) -> None:
        if self.collections_source != "HELO":
            self.collections = on
            self.collections_source = source
