"""MCBP: memcached's binary protocol, with DCP and TAP on it (spec/dcp.md, spec/tap.md).

Its layouts are in ``messages``, its framer in ``framing/mcbp.py``, its sessions
(negotiation, DCP streams, TAP) in ``sessions``, its rules in ``rules``; the connection's
session that drives them is :class:`~dcpinspect.families.mcbp.conversation.Conversation`,
the jsonl fast path over ``dcpinspect/_lane.c`` is :mod:`.lane`, and hex dumps of its
bytes are read by :mod:`.dumps`; what ``stats`` shows of DCP and TAP is :mod:`.stats_view`.
"""

from __future__ import annotations

from ...framing.mcbp import FrameSplitter
from .. import Family
from . import dumps
from .filters import FILTERS
from .conversation import Conversation
from .lane import Lane
from .sniff import Sniffer
from .tables import TABLES, line_message

#: Couchbase's data ports (plain), and memcached's
PORTS = frozenset({11210, 11209, 11211})
#: Couchbase's TLS data and XDCR ports
TLS_PORTS = frozenset({11207, 18091, 18092, 18093})


def _framer(synced: bool, runs: bool) -> FrameSplitter:
    return FrameSplitter(synced=synced, runs=runs)


def _session(options: tuple, seen_from_start: bool) -> Conversation:
    collections, base = options
    return Conversation.new(collections, base, seen_from_start)


def _fast_path(base) -> Lane | None:
    return Lane(base) if Lane.usable(base) else None


def _stats_view():
    from .stats_view import VIEW  # rich: only for a command that prints statistics

    return VIEW


FAMILY = Family("mcbp", PORTS, TLS_PORTS, Sniffer, _framer, _session, _fast_path, dumps=dumps, filters=FILTERS,
                aliases=("dcp", "tap", "memcached"), tables=TABLES, line_message=line_message,
                stats_view=_stats_view)
