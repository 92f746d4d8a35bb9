"""Server-initiated messages (magics 0x82/0x83, kv_engine `docs/Duplex.md`)."""

from __future__ import annotations

from .catalog import ANY, OPTIONAL, Body, OpSpec, extras
from ....messages.layout import Layout, u32, u64

CLUSTERMAP_REVISION = Layout("clustermap_revision", u32("revision", "Revision", show="dec"))
CLUSTERMAP_EPOCH = Layout(
    "clustermap_epoch", u64("epoch", "Epoch", show="dec"), u64("revision", "Revision", show="dec")
)

SPECS = (
    OpSpec(
        0x01,
        "CLUSTERMAP_CHANGE_NOTIFICATION",
        Body(extras(CLUSTERMAP_REVISION, CLUSTERMAP_EPOCH), key=OPTIONAL, value=OPTIONAL, value_kind="json"),
        ANY,
        "server",
    ),
    OpSpec(0x02, "AUTHENTICATE", Body(value=OPTIONAL, value_kind="json"), Body(value=OPTIONAL, value_kind="json"), "server"),
    OpSpec(0x03, "ACTIVE_EXTERNAL_USERS", Body(value=OPTIONAL, value_kind="json"), ANY, "server"),
    OpSpec(0x04, "GET_AUTHORIZATION", Body(key=OPTIONAL), Body(value=OPTIONAL, value_kind="json"), "server"),
)
