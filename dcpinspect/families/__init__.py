"""Protocol families: what the engines know of a protocol, and all they know of it.

A family is one package, ``dcpinspect/families/<name>/``, whose ``FAMILY`` is a
:class:`Family`. The engines take a connection to a family by its server port, or on
another port by asking each family's sniffer about the connection's first bytes; from
then on they hand each direction's bytes to the family's framer
(:class:`~dcpinspect.framing.framer.Framer`) and each frame to the connection's session.
Nothing outside a family's package names its protocol: engines, outputs and the command
line see families, frames, sessions and findings.

To add a family: write its package (its messages, framer, sessions and rules, in the
layers docs/design.md draws), define ``FAMILY`` in its ``__init__``, and list the package in
:data:`PACKAGES`. Every family has a name, ports, a sniffer, a framer and a session; the
rest are capabilities, each an object of its own (:class:`Family`). One family is the
default (:func:`default_family`): it decodes hex dumps and the ports a user adds with
``--port``. A family may have snapshot files of its own (:class:`SnapshotFiles`), which
``engines/snapshots.py`` hands it. Its ``filters`` (:class:`~.interfaces.RecordFilters`) say which of the
record filters of ``decode`` and ``live`` (``--opcode``, ``--command``, ...) it knows and how
its records meet them.

A family whose connections make sense only together (several connections of one
exchange) has a *correlator* (:class:`~.interfaces.Correlator`): one capture-level object its sessions
report to, made by the engine for each capture (for each worker process or Spark task
that decodes part of one), merged across those parts and concluded once the capture ends:
its findings come last, each on the connection it names.

What ``stats`` counts and prints of a family's connections beyond the common table
(frames, bytes, rates, gaps, findings) is its :class:`Statistics`: the parts of the report
it counts (``sessions/stats.py``) and its view (:class:`~dcpinspect.outputs.stats.StatsView`),
which ``engines/stats.py`` hands to ``outputs.stats`` and ``outputs.plot``.
"""

from __future__ import annotations

from collections import namedtuple
from importlib import import_module

from ..slots import Slots

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from ..framing.framer import Framer
    from ..outputs.stats import StatsView
    from ..sessions.stats import StatsCollector
    from .interfaces import Correlator, HexDumps, RecordFilters, Session, Sniffer


#: how much of each frame an engine asks the sessions to decode (:attr:`Options.detail`):
#: every field with where it lies (tables, diagrams); every field and value without where
#: (JSON Lines, validation, statistics); the frame's header alone (counting, unjudged)
FIELDS, VALUES, HEADERS = "fields", "values", "headers"


class Options(Slots):
    """What an engine asks of every connection's session, in no protocol's words:
    ``detail``, how much of each frame (:data:`FIELDS`, :data:`VALUES`, :data:`HEADERS`);
    ``collections``, what the user said of collection-prefixed keys (``--collections``:
    on, off, or None to decide from the connection); ``value_text``, the longest value text
    a record keeps (None: the cap's default, limits.VALUE_TEXT); ``data``, whether records
    carry the data they move whole (``decode --values``: the keys' values of a snapshot
    sent over a connection, with their digests)."""

    __slots__ = ("detail", "collections", "value_text", "data")

    def __init__(self, detail: str = FIELDS, collections: bool | None = None, value_text: int | None = None,
                 data: bool = False) -> None:
        self.detail = detail
        self.collections = collections
        self.value_text = value_text
        self.data = data

    __hash__ = Slots.hashed


class DataKey(namedtuple("DataKey", "db key type digest expire_ms")):
    """One key of a data set as ``diff`` compares it: its ``db``, its name's bytes
    (``key``), its ``type``, the ``digest`` of its value (None when there is none to
    compare) and its expiry (``expire_ms``, or None)."""

    __slots__ = ()


class DataStart(namedtuple("DataStart", "offset")):
    """Said by a family's ``data_keys`` and ``data_records`` before the keys of a new data
    set in a connection (a full sync's payload begins, at ``offset``): the keys that follow
    on the same connection are that data set's, until the next."""

    __slots__ = ()


class SentData(Slots):
    """A data set sent whole in a capture (a full sync's payload), given to its family's
    ``snapshots`` in place of a file: ``name`` to show, and ``records``, its snapshot
    decoder's records (from ``data_records``) as they come."""

    __slots__ = ("name", "records")

    def __init__(self, name: str, records: Any) -> None:
        self.name = name
        self.records = records

    __hash__ = Slots.hashed

    def __str__(self) -> str:
        return self.name


class Table(Slots):
    """A table of a family's records that a bulk engine writes (``analyze``'s Parquet
    tables): one row per JSON Lines object of ``kind`` and of one of ``protocols`` (as
    ``decode -f jsonl`` writes them), its ``columns`` taken from the object: ``(name, type,
    path)``, the type in Spark SQL's words (``uint64``: an unsigned 64-bit number, kept whole),
    the path the object's keys down to the value, dotted (``fields.by_seqno``). The engine
    adds where the row was found (file, frame, time, flow, direction). Tables of one name
    from several families are one table: ``frames`` takes every family's frames."""

    __slots__ = ("name", "kind", "protocols", "columns")

    def __init__(self, name: str, kind: str, protocols: tuple[str, ...],
                 columns: tuple[tuple[str, str, str], ...] = ()) -> None:
        self.name = name
        self.kind = kind
        self.protocols = protocols
        self.columns = columns

    __hash__ = Slots.hashed


class SnapshotFiles(Slots):
    """A family's own snapshot files (the files ``rdb`` and ``diff`` read), and the snapshots
    its connections carry.

    - ``is_snapshot(first bytes)``: whether a file is one.
    - ``show(path, format, key, offset, shown, **extra)`` prints one and returns the worst
      severity found (its rank in ``findings.LEVELS``, -1 for none).
    - ``sets``: which of the files given it reads together, as one snapshot written in
      several files: ``sets(items)`` takes the paths given (and tuples another family made,
      which it passes on) and returns them with each such set made one tuple of paths, in
      reading order, with every member found beside them; ``show`` is then given the tuple.
    - ``rows``: its files as JSON Lines objects, what ``rdb -f jsonl`` writes of one:
      ``rows(file, name, values=False)`` from a binary file open at its start (gzip undone;
      ``values``: each key with its value); findings come as objects of kind ``finding``.
    - ``data``: the keys of one of its snapshots (a path, or a tuple from ``sets``) as
      :class:`DataKey` s, and notes (strings) on what could not be read, for ``diff``.
    - ``record_keys``: the :class:`DataKey` s (and notes) a decoded record carries (read
      with :attr:`Options.data`): the data a connection sends whole, for ``diff``.
    - ``record_data``: the records of its snapshot decoder a decoded record carries (read
      with :attr:`Options.data`, values kept), after a :class:`DataStart` where a data set
      sent whole begins: what ``show`` reports on, given as :class:`SentData`.
    """

    __slots__ = ("is_snapshot", "show", "sets", "rows", "data", "record_keys", "record_data")

    def __init__(self, is_snapshot: Callable[[bytes], bool], show: Callable[..., int],
                 sets: Callable[[list], list] | None = None, rows: Callable[..., Any] | None = None,
                 data: Callable[[Any], Any] | None = None, record_keys: Callable[[Any], Any] | None = None,
                 record_data: Callable[[Any], Any] | None = None) -> None:
        self.is_snapshot = is_snapshot
        self.show = show
        self.sets = sets
        self.rows = rows
        self.data = data
        self.record_keys = record_keys
        self.record_data = record_data

    __hash__ = Slots.hashed


class Statistics(Slots):
    """What a family adds to ``dcpinspect stats``: ``view`` gives its part of the report on
    a console, a :class:`~dcpinspect.outputs.stats.StatsView` (which report entries and
    connections are its own, its columns of the connections table, its tables, its lines
    of the chart and its panel of the plot); ``parts()`` makes the parts of the report it
    makes with every collector, whose entries every report has (``sessions/stats.py``)."""

    __slots__ = ("view", "parts")

    def __init__(self, view: Callable[[], StatsView] | None = None, parts: Callable[[], tuple] | None = None) -> None:
        self.view = view
        self.parts = parts

    __hash__ = Slots.hashed


class Family:
    """A protocol family, as the engines use it (one object each: equal only to itself).

    What every family has: a ``name``, the server ``ports`` that carry it, and what a
    connection is decoded with: a ``sniffer`` for its first bytes on a port no family
    claims, a ``framer`` for each direction and a ``session`` for the connection. What only
    some families do is a capability of its own, None (or empty) where the family has none.
    The parts' interfaces are in :mod:`.interfaces`.

    - ``encrypted_ports``: server ports that carry it encrypted: noted, not decoded.
    - ``sniffer(midstream)``: a :class:`~.interfaces.Sniffer` for a connection's first bytes
      (``midstream``: the connection's start was not seen).
    - ``framer(synced, runs)``: a framer for one direction (``synced``: it starts at a frame
      boundary; ``runs``: the family's fast path takes whole runs of frames); a family
      without one is not looked for in captures.
    - ``session(options, seen_from_start)``: a connection's :class:`~.interfaces.Session`,
      options the engine's :class:`Options`; for a family with a correlator,
      ``session(options, seen_from_start, correlator, flow)``: the capture's correlator
      and the connection's flow key, to report to it.
    - ``aliases``: other names a user may call it by (``--decode-as PORT=NAME``).
    - ``sniff_bytes``: the most bytes of a connection the sniffer may see before the answer
      is "no".
    - ``default``: the family that decodes hex dumps and the ports a user adds with
      ``--port`` without naming a family (one family is: :func:`default_family`).
    - ``rules()``: its rules (:class:`~dcpinspect.rules.registry.Rule` s by id), read when
      the rule book is asked for.
    - ``refuses(first bytes of the client)``: on its own ports, what a connection opens with
      that another protocol sharing the port speaks: it names it (the connection is then not
      decoded, and told as such) or gives None.

    Capabilities:

    - ``fast_path(options)``: the fast path for whole runs of frames, or None where it
      cannot serve those :class:`Options`.
    - ``snapshots``: its snapshot files (:class:`SnapshotFiles`).
    - ``correlator()``: makes the family's capture-level object
      (:class:`~.interfaces.Correlator`), if it has one.
    - ``hex_dumps``: how hex dumps of its bytes are decoded
      (:class:`~.interfaces.HexDumps`): the default family's.
    - ``filters``: how the decode and live commands' record filters match its records
      (:class:`~.interfaces.RecordFilters`).
    - ``statistics``: what it adds to ``stats`` (:class:`Statistics`).
    - ``tables``: the tables of its records that bulk engines write (see :class:`Table`).
    """

    __slots__ = ("name", "ports", "encrypted_ports", "sniffer", "framer", "session", "aliases", "sniff_bytes",
                 "default", "rules", "refuses", "fast_path", "snapshots", "correlator", "hex_dumps", "filters",
                 "statistics", "tables")

    def __init__(self, name: str, ports: frozenset[int] = frozenset(), encrypted_ports: frozenset[int] = frozenset(),
                 sniffer: Callable[[bool], Sniffer] | None = None,
                 framer: Callable[[bool, bool], Framer] | None = None, session: Callable[..., Session] | None = None,
                 aliases: tuple[str, ...] = (), sniff_bytes: int = 64 * 1024, default: bool = False,
                 rules: Callable[[], dict] | None = None, refuses: Callable[[bytes], str | None] | None = None, *,
                 fast_path: Callable[[Any], Any] | None = None, snapshots: SnapshotFiles | None = None,
                 correlator: Callable[[], Correlator] | None = None, hex_dumps: HexDumps | None = None,
                 filters: RecordFilters | None = None, statistics: Statistics | None = None,
                 tables: tuple[Table, ...] = ()) -> None:
        self.name = name
        self.ports = ports
        self.encrypted_ports = encrypted_ports
        self.sniffer = sniffer
        self.framer = framer
        self.session = session
        self.aliases = aliases
        self.sniff_bytes = sniff_bytes
        self.default = default
        self.rules = rules
        self.refuses = refuses
        self.fast_path = fast_path
        self.snapshots = snapshots
        self.correlator = correlator
        self.hex_dumps = hex_dumps
        self.filters = filters
        self.statistics = statistics
        self.tables = tables

    def __repr__(self) -> str:
        return f"Family({self.name!r})"


#: the family packages, in the order the sniffers ask: a name of a package here, or the
#: full name of a module elsewhere
PACKAGES = ("mcbp", "redis")


def families() -> tuple[Family, ...]:
    """Every family, in :data:`PACKAGES` order."""
    return tuple(import_module(name if "." in name else f"{__name__}.{name}").FAMILY for name in PACKAGES)


def family_named(name: str) -> Family | None:
    """The family called ``name`` (or one of its aliases), whatever the case."""
    name = name.lower()
    return next((f for f in families() if name == f.name or name in f.aliases), None)


def default_family() -> Family:
    """The family that decodes hex dumps and ``--port`` ports given without a family's name
    (the one whose :attr:`Family.default` says so)."""
    chosen = [f for f in families() if f.default]
    if len(chosen) != 1:
        raise LookupError(f"{len(chosen)} families are the default: {', '.join(f.name for f in chosen)}")
    return chosen[0]


def rule_book() -> dict:
    """Every family's rules by id, family by family in :data:`PACKAGES` order: the book
    ``dcpinspect rules`` prints."""
    return {rid: rule for f in families() if f.rules is not None for rid, rule in f.rules().items()}


def stats_collector(**kw: Any) -> "StatsCollector":
    """A statistics collector with every family's standing parts (``kw``: the collector's own)."""
    from ..sessions.stats import StatsCollector

    return StatsCollector(parts=[p for f in families() if f.statistics is not None and f.statistics.parts is not None
                                 for p in f.statistics.parts()], **kw)


def stream_families() -> tuple[Family, ...]:
    """The families that captures are decoded by (those with a framer)."""
    return tuple(f for f in families() if f.framer is not None)
