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
``engines/snapshots.py`` hands it. Its ``filters`` (:class:`RecordFilters`) say which of the
record filters of ``decode`` and ``live`` (``--opcode``, ``--command``, ...) it knows and how
its records meet them.

A family whose connections make sense only together (several connections of one
exchange) has a *correlator* (:class:`Correlator`): one capture-level object its sessions
report to, made by the engine for each capture (for each worker process or Spark task
that decodes part of one), merged across those parts and concluded once the capture ends:
its findings come last, each on the connection it names.

What ``stats`` counts and prints of a family's connections beyond the common table
(frames, bytes, rates, gaps, findings) is its :class:`Statistics`: the parts of the report
it counts (``sessions/stats.py``) and its view (:class:`~dcpinspect.outputs.stats.StatsView`),
which ``engines/stats.py`` hands to ``outputs.stats`` and ``outputs.plot``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Protocol

from ..findings import Finding
from ..framing.framer import Framer, RawFrame

if TYPE_CHECKING:
    from ..outputs.stats import StatsView
    from ..sessions.stats import StatsCollector


class Sniffer(Protocol):
    """One connection's first bytes, both ways, on a port no family claims. It takes the
    connection on strong evidence only: a capture of another protocol must not be
    decoded as this one (the families' sniffers rule out other protocols' openings with
    ``transport/foreign.py``)."""

    def add(self, direction: str, data: bytes) -> bool | None:
        """Is it this family's? Decided from the bytes so far of both directions (``c2s``
        or ``s2c``: which these are); None: need more. Once it says yes the engine decodes
        every byte the connection carried, from its first."""

    def __len__(self) -> int:
        """Bytes held while deciding (the engines count them against their cap)."""


class Session(Protocol):
    """One connection's decoding state: what was negotiated, streams, the rules' state."""

    def decode(self, raw: RawFrame, direction: str | None, ts: float | None, index: int | None) -> Any:
        """The frame decoded and judged (its findings on it)."""

    def gap(self) -> None:
        """Bytes were lost: answers and state carried by them may be missing."""

    def finish(self) -> list[Finding]:
        """The connection is over: what only its end can show."""


class Correlator(Protocol):
    """What a family knows of a whole capture beyond one connection: its sessions report
    to it as they decode. Plain data: it pickles, and :meth:`merge` folds in one fed with
    other connections of the same capture, so that parts decoded apart conclude alike."""

    def merge(self, other: "Correlator") -> None:
        """Take in what ``other`` was told (other connections of the same capture)."""

    def finish(self) -> list[tuple[Any, Finding]]:
        """The capture is over: ``(flow, finding)`` pairs, in a stable order, each finding
        on the connection (a flow key) it concerns, or None for the capture itself."""


class RecordFilters(Protocol):
    """How the record filters of ``decode`` and ``live`` apply to a family's records.

    A filter is a criterion name (the option's, without its dashes: ``opcode``,
    ``vbucket``, ``command``) and the values given. A family knows some criteria: its
    records are kept when they meet every criterion it knows that was given, whatever
    the criteria it does not know; when it knows none of those given, its records are
    dropped (the filter asks for what only other families' records have)."""

    #: the criteria it knows
    criteria: frozenset[str]

    def owns(self, record: Any) -> bool:
        """Whether a decoded record is one of this family's."""

    def matcher(self, given: dict[str, tuple]) -> Callable[[Any], bool]:
        """The test of a record against the criteria of ``given`` this family knows;
        ValueError (its message for the user) for a value it cannot take."""


#: how much of each frame an engine asks the sessions to decode (:attr:`Options.detail`):
#: every field with where it lies (tables, diagrams); every field and value without where
#: (JSON Lines, validation, statistics); the frame's header alone (counting, unjudged)
FIELDS, VALUES, HEADERS = "fields", "values", "headers"


@dataclass(frozen=True)
class Options:
    """What an engine asks of every connection's session, in no protocol's words."""

    detail: str = FIELDS
    #: what the user said of collection-prefixed keys (``--collections``): on, off, or
    #: None to decide from the connection
    collections: bool | None = None
    #: the longest value text a record keeps (None: the cap's default, limits.VALUE_TEXT)
    value_text: int | None = None
    #: records carry the data they move whole (``decode --values``: the keys' values of a
    #: snapshot sent over a connection, with their digests)
    data: bool = False


class DataKey(NamedTuple):
    """One key of a data set as ``diff`` compares it: its db, its name's bytes, its type,
    the digest of its value (None when there is none to compare) and its expiry."""

    db: int
    key: bytes
    type: str
    digest: str | None
    expire_ms: int | None


class DataStart(NamedTuple):
    """Said by a family's ``data_keys`` and ``data_records`` before the keys of a new data
    set in a connection (a full sync's payload begins): the keys that follow on the same
    connection are that data set's, until the next."""

    offset: int


@dataclass(frozen=True)
class SentData:
    """A data set sent whole in a capture (a full sync's payload), given to its family's
    ``snapshots`` in place of a file: ``name`` to show, and ``records``, its snapshot
    decoder's records (from ``data_records``) as they come."""

    name: str
    records: Any

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Table:
    """A table of a family's records that a bulk engine writes (``analyze``'s Parquet
    tables): one row per JSON Lines object of ``kind`` and of one of ``protocols`` (as
    ``decode -f jsonl`` writes them), its ``columns`` taken from the object: ``(name, type,
    path)``, the type in Spark SQL's words (``uint64``: an unsigned 64-bit number, kept whole),
    the path the object's keys down to the value, dotted (``fields.by_seqno``). The engine
    adds where the row was found (file, frame, time, flow, direction). Tables of one name
    from several families are one table: ``frames`` takes every family's frames."""

    name: str
    kind: str
    protocols: tuple[str, ...]
    columns: tuple[tuple[str, str, str], ...] = ()


class HexDumps(Protocol):
    """How the default family decodes hex dumps of its bytes (``dcpinspect hex``, and
    ``decode`` of a pasted dump)."""

    def frame_at(self, data: bytes, pos: int, end: int) -> bool:
        """Whether a frame starts at ``pos`` (bytes up to ``end``)."""

    def stream(self, data: bytes, blocks, collections: bool | None):
        """The frames of ``blocks`` of ``data`` pasted together, as one connection."""

    def diagram(self, block: bytes, start: int, collections: bool | None, captions):
        """One frame of a protocol document's byte diagram, its captions checked."""


@dataclass(frozen=True)
class SnapshotFiles:
    """A family's own snapshot files (the files ``rdb`` and ``diff`` read), and the snapshots
    its connections carry."""

    #: ``is_snapshot(first bytes)``: whether a file is one
    is_snapshot: Callable[[bytes], bool]
    #: ``show(path, format, key, offset, shown, **extra)`` prints one and returns the worst
    #: severity found (its rank in ``findings.LEVELS``, -1 for none)
    show: Callable[..., int]
    #: which of the files given it reads together, as one snapshot written in several
    #: files: ``sets(items)`` takes the paths given (and tuples another family made, which
    #: it passes on) and returns them with each such set made one tuple of paths, in reading
    #: order, with every member found beside them; ``show`` is then given the tuple
    sets: Callable[[list], list] | None = None
    #: its files as JSON Lines objects, what ``rdb -f jsonl`` writes of one: ``rows(file,
    #: name, values=False)`` from a binary file open at its start (gzip undone; ``values``:
    #: each key with its value); findings come as objects of kind ``finding``
    rows: Callable[..., Any] | None = None
    #: the keys of one of its snapshots (a path, or a tuple from ``sets``) as
    #: :class:`DataKey` s, and notes (strings) on what could not be read, for ``diff``
    data: Callable[[Any], Any] | None = None
    #: the :class:`DataKey` s (and notes) a decoded record carries (read with
    #: :attr:`Options.data`): the data a connection sends whole, for ``diff``
    record_keys: Callable[[Any], Any] | None = None
    #: the records of its snapshot decoder a decoded record carries (read with
    #: :attr:`Options.data`, values kept), after a :class:`DataStart` where a data set sent
    #: whole begins: what ``show`` reports on, given as :class:`SentData`
    record_data: Callable[[Any], Any] | None = None


@dataclass(frozen=True)
class Statistics:
    """What a family adds to ``dcpinspect stats``."""

    #: gives its part of the report on a console: a
    #: :class:`~dcpinspect.outputs.stats.StatsView` (which report entries and connections
    #: are its own, its columns of the connections table, its tables, its lines of the
    #: chart and its panel of the plot)
    view: Callable[[], StatsView] | None = None
    #: the parts of the report it makes with every collector, whose entries every report
    #: has (``sessions/stats.py``): ``parts()`` makes them
    parts: Callable[[], tuple] | None = None


@dataclass(frozen=True, eq=False)
class Family:
    """A protocol family, as the engines use it.

    What every family has: a name, the server ports that carry it, and what a connection is
    decoded with: a ``sniffer`` for its first bytes on a port no family claims, a ``framer``
    for each direction and a ``session`` for the connection. What only some families do is a
    capability of its own, None (or empty) where the family has none."""

    name: str
    #: server ports that carry it
    ports: frozenset[int] = frozenset()
    #: server ports that carry it encrypted: noted, not decoded
    encrypted_ports: frozenset[int] = frozenset()
    #: a sniffer for a connection's first bytes (``midstream``: the connection's start was not seen)
    sniffer: Callable[[bool], Sniffer] | None = None
    #: a framer for one direction (``synced``: it starts at a frame boundary; ``runs``: the
    #: family's fast path takes whole runs of frames); a family without one is not looked
    #: for in captures
    framer: Callable[[bool, bool], Framer] | None = None
    #: a connection's session: ``session(options, seen_from_start)``, options the engine's
    #: :class:`Options`; for a family with a correlator, ``session(options, seen_from_start, correlator,
    #: flow)``: the capture's correlator and the connection's flow key, to report to it
    session: Callable[..., Session] | None = None
    #: other names a user may call it by (``--decode-as PORT=NAME``)
    aliases: tuple[str, ...] = ()
    #: the most bytes of a connection the sniffer may see before the answer is "no"
    sniff_bytes: int = 64 * 1024
    #: the family that decodes hex dumps and the ports a user adds with ``--port`` without
    #: naming a family (one family is: :func:`default_family`)
    default: bool = False
    #: its rules (:class:`~dcpinspect.rules.registry.Rule` s by id), read when the rule book is asked for
    rules: Callable[[], dict] | None = None
    #: on its own ports, what a connection opens with that another protocol sharing the port
    #: speaks: ``refuses(first bytes of the client)`` names it (the connection is then not
    #: decoded, and told as such) or gives None
    refuses: Callable[[bytes], str | None] | None = None

    # -- capabilities --------------------------------------------------------------------

    #: the fast path for whole runs of frames: ``fast_path(options)`` returns it, or None
    #: where it cannot serve those :class:`Options`
    fast_path: Callable[[Any], Any] | None = None
    #: its snapshot files (:class:`SnapshotFiles`)
    snapshots: SnapshotFiles | None = None
    #: makes the family's capture-level object (:class:`Correlator`), if it has one
    correlator: Callable[[], Correlator] | None = None
    #: how hex dumps of its bytes are decoded (:class:`HexDumps`): the default family's
    hex_dumps: HexDumps | None = None
    #: how the decode and live commands' record filters match its records (:class:`RecordFilters`)
    filters: RecordFilters | None = None
    #: what it adds to ``stats`` (:class:`Statistics`)
    statistics: Statistics | None = None
    #: the tables of its records that bulk engines write (see :class:`Table`)
    tables: tuple[Table, ...] = ()


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
