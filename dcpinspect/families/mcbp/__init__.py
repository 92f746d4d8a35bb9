"""MCBP: memcached's binary protocol, with DCP and TAP on it (spec/dcp.md, spec/tap.md).

Its layouts are in ``messages``, its framer in ``framing/mcbp.py``, its sessions
(negotiation, DCP streams, TAP) in ``sessions``, its rules in ``rules``; the connection's
session that drives them is :class:`~dcpinspect.families.mcbp.conversation.Conversation`,
the jsonl fast path over ``dcpinspect/_lane.c`` is :mod:`.lane`, and hex dumps of its
bytes are read by :mod:`.dumps`; what ``stats`` shows of DCP and TAP is :mod:`.stats_view`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from .. import HEADERS, VALUES, Family, Options
from .filters import FILTERS
from .tables import TABLES

if TYPE_CHECKING:
    from ...framing.mcbp import FrameSplitter
    from ...messages.frame import DecodeContext
    from .conversation import Conversation
    from .lane import Lane
    from .sniff import Sniffer

# The decoder's modules are imported when a connection or a hex dump first needs them: a
# command that meets no MCBP (``rdb``) pays nothing for them.

#: Couchbase's data ports (plain), and memcached's
PORTS = frozenset({11210, 11209, 11211})
#: Couchbase's TLS data and XDCR ports
TLS_PORTS = frozenset({11207, 18091, 18092, 18093})


def _sniffer(midstream: bool) -> "Sniffer":
    from .sniff import Sniffer

    return Sniffer(midstream)


def _framer(synced: bool, runs: bool) -> "FrameSplitter":
    from ...framing.mcbp import FrameSplitter

    return FrameSplitter(synced=synced, runs=runs)


@lru_cache(maxsize=None)
def context(options: Options) -> "DecodeContext":
    """The decode context that gives what the engine's options ask for."""
    from ...messages.frame import DecodeContext

    kw: dict = {} if options.value_text is None else {"max_value_text": options.value_text}
    if options.detail == HEADERS:
        kw["headers_only"] = True
    elif options.detail == VALUES:
        kw["detail"] = False
    return DecodeContext(**kw)


def _session(options: Options, seen_from_start: bool) -> "Conversation":
    from .conversation import Conversation

    return Conversation.new(options.collections, context(options), seen_from_start)


def _fast_path(options: Options) -> "Lane | None":
    from .lane import Lane

    base = context(options)
    return Lane(base) if Lane.usable(base) else None


def _stats_view():
    from .stats_view import VIEW  # rich: only for a command that prints statistics

    return VIEW


def _refuses(head: bytes) -> str | None:
    from .text import refuses

    return refuses(head)


class _Dumps:
    """:mod:`.dumps`, imported when a hex dump is first read."""

    def __getattr__(self, name: str):
        from . import dumps

        return getattr(dumps, name)


FAMILY = Family("mcbp", PORTS, TLS_PORTS, _sniffer, _framer, _session, _fast_path, dumps=_Dumps(), filters=FILTERS,
                aliases=("dcp", "tap", "memcached"), tables=TABLES,
                stats_view=_stats_view, refuses=_refuses)
