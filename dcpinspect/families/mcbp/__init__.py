"""MCBP: memcached's binary protocol, with DCP and TAP on it (kv_engine's docs/BinaryProtocol.md,
docs/dcp/, and TAP's docs/TAP.md). The whole family is this package, in its layers:

- ``messages/``: each message's declarative layout (``header``, ``dcp``, ``tap``,
  ``memcached``, ``server``; the tables of names, opcodes and what each opcode carries),
  the codecs of its pieces (``codecs/``), and one frame decoded into a ``Message``
  (``frame``), located (``describe``), as a JSON Lines record (``record``) and built back
  (``build``);
- ``framer``: a byte stream cut into frames, resynchronising after garbage or gaps;
- ``sessions/``: what a connection negotiated, its DCP streams and its TAP conversation
  (state only, h11-style);
- ``rules/``: the rule book (``book``), the facts the checks are written in, and the
  frame, stream and TAP rules;
- the connection's session that drives them (``conversation``), the sniffer for unknown
  ports (``sniff``), hex dumps (``dumps``), the record filters (``filters``), the
  statistics it counts (``stats``) and shows (``stats_view``), its tables for bulk engines
  (``tables``), its Scapy layers (``scapy``), and the jsonl fast lane: ``lane`` drives
  ``_lane.c``, whose checks ``lane_rules`` writes into ``_lane_rules.h``.
"""

from __future__ import annotations

from functools import lru_cache

from .. import HEADERS, VALUES, Family, Options, Statistics
from .filters import FILTERS
from .tables import TABLES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .framer import FrameSplitter
    from .messages.frame import DecodeContext
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
    from .framer import FrameSplitter

    return FrameSplitter(synced=synced, runs=runs)


@lru_cache(maxsize=None)
def context(options: Options) -> "DecodeContext":
    """The decode context that gives what the engine's options ask for."""
    from .messages.frame import DecodeContext

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


def _stats_parts() -> tuple:
    from .stats import McbpStats

    return (McbpStats(),)


def _rules() -> dict:
    from .rules.book import RULES

    return RULES


def _refuses(head: bytes) -> str | None:
    from .text import refuses

    return refuses(head)


class _Dumps:
    """:mod:`.dumps`, imported when a hex dump is first read."""

    def __getattr__(self, name: str):
        from . import dumps

        return getattr(dumps, name)


FAMILY = Family("mcbp", PORTS, TLS_PORTS, _sniffer, _framer, _session, aliases=("dcp", "tap", "memcached"),
                default=True, rules=_rules, fast_path=_fast_path, hex_dumps=_Dumps(), filters=FILTERS,
                statistics=Statistics(_stats_view, _stats_parts), tables=TABLES, refuses=_refuses)
