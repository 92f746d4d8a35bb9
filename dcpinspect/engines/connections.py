"""A capture's TCP connections → decoded, judged records, through the same core as hex input.

Sans-I/O: :class:`CaptureDecoder` takes transport segments (from a file, a live
interface or a Spark partition) and returns :class:`Captured` frames and
:class:`Note`s about the capture itself (gaps, skipped bytes, encrypted flows).
"""

from __future__ import annotations

import json
from dataclasses import replace

from typing import Iterable, Iterator, Mapping

from ..families import FIELDS, Family, Options, family_named, stream_families
from ..families.interfaces import Session, Sniffer
from ..framing.framer import Framer, RawFrame, RawRun
from ..sessions.captured import Captured, Note, flow_label
from ..sessions.captured import captured as _captured
from ..limits import FLOWS, HELD
from ..transport.packet import Segment, reverse_raw
from ..sources.capture import limit_value
from ..transport.reassembly import Data, End, Flow, FlowKey, Gap, Reassembler, Start
from .tails import BUF, DIRECTION, FLOW, SIDE, TS, WANT, Tail, Tails, carried, new_tail, settle

#: What the decoder does with a connection: ask the families' sniffers about its first
#: bytes, decode it (its family known), note it as encrypted, hold its first bytes (every
#: family said no, but its server may yet show one), pass it over, or nothing more (its
#: End handled).
SNIFFING, DECODING, ENCRYPTED, HOLDING, IGNORED, ENDED = ("sniffing", "decoding", "encrypted", "holding", "ignored",
                                                          "ended")

#: Default cap on the bytes held, all connections together, for frames not yet whole (and
#: for the first bytes of connections on unknown ports, until sniffed). Past it the largest
#: holders give theirs up, with a note; ``DCPINSPECT_MAX_HELD`` raises it (bytes, or K/M/G).
MAX_HELD = HELD.default
MAX_HELD_ENV = HELD.env
#: The cap on connections tracked at once (see transport.reassembly.MAX_FLOWS), raised by
#: ``DCPINSPECT_MAX_FLOWS``.
MAX_FLOWS_ENV = FLOWS.env
#: The reader follows a connection in C (tails.py) from its FOLLOW_AFTER-th record on, and at
#: most MAX_FOLLOWED connections at once; a followed direction is handed back at least every
#: FOLLOW_STEP bytes its splitter takes (less when many are followed: see _step).
FOLLOW_AFTER = 2
MAX_FOLLOWED = 16384
FOLLOW_STEP = 1 << 20
#: undecoded connections told one by one at the end of input (the rest in one note)
LISTED = FLOWS.default


def held_cap() -> int:
    """The held-bytes cap: ``$DCPINSPECT_MAX_HELD`` if set, else ``MAX_HELD``."""
    return limit_value(HELD)


def flow_cap() -> int:
    """The cap on connections at once: ``$DCPINSPECT_MAX_FLOWS`` if set, else ``MAX_FLOWS``."""
    return limit_value(FLOWS)


class FlowDecoder(Flow):
    """One TCP connection: its reassembly (the :class:`Flow` it extends, so that a
    connection is one record in the reassembler's one table), its family, one session,
    one framer per direction.

    Compact while idle: the session (negotiation, stream state, rules) is made by its
    first frame, a framer by its direction's first bytes, the sniffing buffers by the
    first bytes of a port that needs them."""

    __slots__ = ("_session", "_options", "midstream", "state", "family", "c2s_side", "s2c_side", "first",
                 "pending", "first_index", "_label", "runs", "correlator", "watched", "guessed")

    def __init__(self, key: FlowKey, ts: float) -> None:
        Flow.__init__(self, key, ts)
        self._session: Session | None = None
        self._options = None  # the decoder's options, for the family's session
        self.midstream = False
        self.state = SNIFFING  # SNIFFING, DECODING, ENCRYPTED, IGNORED, ENDED
        self.family: Family | None = None
        self.c2s_side: Framer | None = None
        self.s2c_side: Framer | None = None
        self.first = ""  # the direction whose framer was made first
        self.pending: _Undecided | None = None  # what an undecoded connection carried
        self.first_index = 0  # the capture record that began the connection
        self._label: str | None = None
        self.runs = False  # framers hand whole frames over as runs, for the family's fast path
        self.correlator = None  # the capture's correlator of the family, if it has one
        #: another decoder's connection (a worker's part of a capture), only sniffed here for
        #: what it shows of its server: never decoded, never told
        self.watched = False
        #: joined without its SYN on ports that did not tell which side is the server: its
        #: sides are the reassembler's guess (the lower port the server's)
        self.guessed = False

    def end(self) -> None:
        """The decoder is done with the connection (its End): what it kept goes; the
        reassembler may keep the record a while (a closed flow's late segments)."""
        self.state = ENDED
        self._session = self.pending = self._label = None
        self.drop_sides()

    def begin(self, options, midstream: bool, first_index: int, guessed: bool = False) -> None:
        """The decoder takes the connection on (its Start)."""
        self._options, self.midstream, self.first_index, self.guessed = options, midstream, first_index, guessed

    def decode_as(self, family: Family, runs: bool, correlator=None) -> None:
        """The connection is ``family``'s (``runs``: the family's fast path takes it;
        ``correlator``: the capture's, which the session reports to)."""
        self.family, self.state, self.runs, self.correlator = family, DECODING, runs, correlator

    @property
    def session(self) -> Session:
        session = self._session
        if session is None:
            if self.correlator is None:
                session = self.family.session(self._options, not self.midstream)
            else:
                session = self.family.session(self._options, not self.midstream, self.correlator, self.key)
            self._session = session
        return session

    def _made_session(self) -> Session:
        return self.session

    @property
    def started(self) -> bool:
        """A frame (or a gap) has been seen: there is a session."""
        return self._session is not None

    @property
    def label(self) -> str:
        """flow_label(flow) as a JSON string, for the lines of the jsonl lane."""
        if self._label is None:
            self._label = json.dumps(flow_label(self.key))
        return self._label

    def side(self, direction: str) -> Framer:
        sd = self.c2s_side if direction == "c2s" else self.s2c_side
        if sd is None:
            sd = self.family.framer(not self.midstream, self.runs)
            sd.follows(direction, self._made_session)
            if direction == "c2s":
                self.c2s_side = sd
            else:
                self.s2c_side = sd
            if not self.first:
                self.first = direction
        return sd

    def made(self, direction: str) -> Framer | None:
        """The side of ``direction`` if its bytes have begun."""
        return self.c2s_side if direction == "c2s" else self.s2c_side

    def sides(self) -> list[tuple[str, Framer]]:
        """The sides made, in the order they were made."""
        order = ("c2s", "s2c") if self.first == "c2s" else ("s2c", "c2s")
        return [(d, sd) for d, sd in ((d, self.made(d)) for d in order) if sd is not None]

    def drop_sides(self) -> None:
        self.c2s_side = self.s2c_side = None
        self.first = ""


def _reused(events: list) -> dict:
    """The connections of a batch of events whose ports a new one took within it (an End,
    then a Start of the same key), by key: their Data and Gap before the End are theirs,
    though by then the reassembler's table holds the new connection under that key."""
    ended: dict = {}
    reused: dict = {}
    for ev in events:
        kind = type(ev)
        if kind is End:
            ended.setdefault(ev.flow, ev.state)
        elif kind is Start and ev.flow in ended:
            reused[ev.flow] = ended[ev.flow]
    return reused


class CaptureDecoder:
    def __init__(
        self,
        ports: Iterable[int] = (),
        collections: bool | None = None,
        heuristic: bool = True,
        detail: str = FIELDS,
        value_text: int | None = None,
        data: bool = False,
        max_buffer: int = 4 * 1024 * 1024,
        lane: bool = False,
        max_flows: int | None = None,
        max_held: int | None = None,
        correlators: dict | None = None,
        conclude: bool = True,
        servers: Mapping[tuple[str, int], str] | None = None,
    ) -> None:
        self.families = stream_families()
        #: server port → family (the ports given here are the first family's); encrypted ones
        self.by_port: dict[int, Family] = {}
        self.encrypted: dict[int, Family] = {}
        for family in reversed(self.families):  # the first family listed wins a shared port
            self.by_port.update(dict.fromkeys(family.ports, family))
            self.encrypted.update(dict.fromkeys(family.encrypted_ports, family))
        if isinstance(ports, Mapping):  # port → the name of its family
            self.by_port.update((port, family_named(name)) for port, name in ports.items())
        else:
            self.by_port.update(dict.fromkeys(ports, self.families[0]))
        self.ports = frozenset(self.by_port)
        self.heuristic = heuristic
        self.max_flows = flow_cap() if max_flows is None else max_flows
        self.reassembler = Reassembler(server_ports=self.ports | frozenset(self.encrypted), max_buffer=max_buffer,
                                       max_flows=self.max_flows, flow_type=FlowDecoder)
        #: what every connection's session is asked (families.Options)
        self.options = Options(detail, collections, value_text, data)
        #: bytes held for frames not yet whole, all connections together (see _shed)
        self.max_held = held_cap() if max_held is None else max_held
        self.held = 0
        #: jsonl only (``lane=True``): each family's fast path, where it has one that serves
        #: these options; what it takes becomes Lines, not Captured
        self.fast: dict[Family, object] = {}
        if lane:
            for family in self.families:
                fast = family.fast_path(self.options) if family.fast_path is not None else None
                if fast is not None:
                    self.fast[family] = fast
        #: the directions a reader follows in C (see tails.py); None: it follows none
        self.tails: Tails | None = None
        #: the families' correlators (family name → its capture-level object), made as their
        #: first connections are decoded; several decoders of one capture may share the dict
        #: (a Spark task's connections). ``conclude``: their findings come at the end of
        #: :meth:`finishing` (else the caller merges and concludes them: see :func:`concluded`)
        self.correlators: dict = {} if correlators is None else correlators
        self.conclude = conclude
        #: servers (address, port) a connection showed to speak a family: their other
        #: connections are that family's from their first byte
        self.servers: dict[tuple[str, int], Family] = {}
        if servers:  # known before the capture is read (by a first pass over it: engines/spark/servers.py)
            self.servers.update((server, family_named(name)) for server, name in servers.items())
            self.reassembler.server_ports = self.reassembler.server_ports | {port for _, port in servers}
        #: the connections no family took (yet), in the order their bytes began, and by
        #: server; told at the end of input (:meth:`finishing`) as ``undecoded`` notes
        self.undecided: dict[int, _Undecided] = {}
        self.by_server: dict[tuple[str, int], dict[int, _Undecided]] = {}
        #: the most bytes of a connection held while no family takes it
        self.hold = max((f.sniff_bytes for f in self.families if f.sniffer is not None), default=0)
        self._watching = False  # feeding a watched connection's segment (see watch)
        #: connections turned round (see _turn) while their segment's events were handled,
        #: by the key those events still carry
        self.turned: dict[FlowKey, FlowDecoder] = {}

    def watch(self, seg: Segment) -> list[Captured | Note]:
        """A segment of a connection another decoder decodes (another worker's part of the
        capture): sniffed while undecided, for what it shows of its server, so that every
        part takes that server's connections as one decoder of the whole capture would.
        What it returns is of this decoder's own connections (those the evidence let it
        decode, from what it held)."""
        fd = self.reassembler.record((seg.src, seg.sport, seg.dst, seg.dport)) or \
            self.reassembler.record((seg.dst, seg.dport, seg.src, seg.sport))
        if fd is not None:
            if not fd.watched or fd.state is ENDED:
                return []
            if fd.state is not SNIFFING and fd.state is not HOLDING and not seg.flags & 0x05:
                return []  # decided: only its end (FIN, RST) is still of use, to let the record go
        elif (seg.sport in self.ports or seg.dport in self.ports or seg.sport in self.encrypted
              or seg.dport in self.encrypted or not seg.payload and not seg.flags & 0x02):
            return []  # a known port, or neither a connection's start nor its bytes
        self._watching = True
        try:
            return self.feed(seg)
        finally:
            self._watching = False

    def feed(self, seg: Segment) -> list[Captured | Note]:
        tails = self.tails
        if tails is not None and tails.raw:
            if self.reassembler.full:  # eviction looks at every flow
                self._settle(tails.drop_all())
            else:
                self._settle(tails.drop((seg.src, seg.sport, seg.dst, seg.dport)))
        out: list[Captured | Note] = []
        evicted = 0
        if self.turned:
            self.turned.clear()
        events = self.reassembler.feed(seg)
        reused = _reused(events) if len(events) > 2 else None
        for ev in events:
            if type(ev) is End and ev.reason == "evicted":
                evicted += 1
            self._event(ev, out, reused)
        if evicted:
            out.append(Note("capture", f"more than {self.max_flows} connections at once: the {evicted} least "
                                       f"recently active were ended early (their partial frames reported "
                                       f"as they stood); raise the cap with {MAX_FLOWS_ENV}=N", seg.ts))
        if self.held > self.max_held:
            self._shed(out, seg.ts)
        return out

    def finish(self) -> list[Captured | Note]:
        return list(self.finishing())

    def finishing(self) -> Iterator[Captured | Note]:
        """What the end of input says (:meth:`finish`), a connection at a time: a capture
        that ends with many connections open never holds all their last items at once."""
        if self.tails is not None:
            self._settle(self.tails.drop_all())
        out: list[Captured | Note] = []
        for evs in self.reassembler.flushing():
            for ev in evs:
                self._event(ev, out)
            yield from out
            out.clear()
        for fd in self.open_flows():
            self._close_flow(fd, out, None)
            yield from out
            out.clear()
        yield from self.undecoded()
        if self.conclude:
            yield from concluded(self.correlators)

    def undecoded(self) -> list[Note]:
        """The connections no family took, an ``undecoded`` note each, in the order they began
        (``offset``: the capture record that began it; ``size`` and ``sides``: its bytes in
        all and each way); past :data:`LISTED` of them, one note for the rest."""
        notes, rest, rest_bytes = [], 0, 0
        for und in sorted((u for u in self.undecided.values() if not u.watched), key=lambda u: u.first_index):
            c2s, s2c = und.bytes
            if len(notes) >= LISTED:
                rest += 1
                rest_bytes += c2s + s2c
                continue
            notes.append(Note("undecoded", f"{und.why}: {c2s} bytes c2s, {s2c} bytes s2c not decoded", und.ts,
                              und.flow, None, und.first_index, c2s + s2c, None, (c2s, s2c)))
        if rest:
            notes.append(Note("undecoded", f"{rest} more connections not decoded ({rest_bytes} bytes)", None, None,
                              None, None, rest_bytes))
        self.undecided.clear()
        self.by_server.clear()
        return notes

    def _decode_as(self, fd: FlowDecoder, family: Family) -> None:
        correlator = None
        if family.correlator is not None:
            correlator = self.correlators.get(family.name)
            if correlator is None:
                correlator = self.correlators[family.name] = family.correlator()
        fd.decode_as(family, family in self.fast, correlator)
        self.servers.setdefault((fd.key[2], fd.key[3]), family)

    # -- directions followed by the reader ----------------------------------------------

    def follow_with(self, raw: dict) -> None:
        """A reader takes the records of followed directions, by their 12 raw address and
        port bytes in ``raw`` (see tails.py): from now on :meth:`follow` fills it."""
        self.tails = Tails(raw)

    def follow(self, raw: bytes, seg: Segment) -> None:
        """After ``seg`` (whose plain Ethernet/IPv4/TCP record had ``raw`` as its 12 address
        and port bytes) went the ordinary way: follow its connection, both ways, if it is
        tracked and open; a direction's bytes too when they are in order and go to a splitter."""
        key = (seg.src, seg.sport, seg.dst, seg.dport)  # feed dropped its tails, if any
        reassembler = self.reassembler
        if len(self.tails.by_key) >= 2 * MAX_FOLLOWED or reassembler.packets(key) < FOLLOW_AFTER:
            return  # one record is no connection under way; and the table stays bounded
        mine = reassembler.in_order(key)
        if mine is None:
            return
        fd = reassembler.record(mine[0])
        if fd is None or fd.state is ENDED:
            return
        back = (seg.dst, seg.dport, seg.src, seg.sport)
        theirs = reassembler.in_order(back)
        if theirs is None:
            return
        # a direction's bytes are taken once it has a splitter (made by its first bytes: the
        # order sides are made in is the order a closing connection flushes them in)
        decoding = fd.state is DECODING
        pair = [new_tail(k, r, nxt, fd.made(direction) if decoding else None, fd, direction)
                for k, r, (_, direction, nxt) in ((key, raw, mine), (back, reverse_raw(raw), theirs))]
        step = self._step()
        for tail in pair:
            if tail[BUF] is not None:
                tail[WANT] = min(tail[WANT], len(tail[BUF]) + step)
        self.tails.add(pair)

    def taken(self, tail: Tail) -> list[Captured | Note]:
        """What the frames a followed direction's buffer now holds make (the reader's hit)."""
        carried(tail)
        splitter = tail[SIDE]
        out: list[Captured | Note] = []
        self._items(tail[FLOW], tail[DIRECTION], splitter.feed(b""), tail[TS], out)
        tail[WANT] = min(splitter.wanted, splitter.buffered + self._step())
        if self.held > self.max_held:
            self._shed(out, tail[TS])
        return out

    def _step(self) -> int:
        """How many bytes the reader may append to a followed direction's buffer before it
        hands the direction back: all of them together stay within a quarter of the
        held-bytes cap (or 1 KiB each), so the held-bytes total is never far behind."""
        return max(1024, min(FOLLOW_STEP, self.max_held // (4 * len(self.tails.raw) + 8)))

    def _settle(self, tails: list[Tail]) -> None:
        for tail in tails:
            settle(tail, self.reassembler)

    # -- events ------------------------------------------------------------------------

    @property
    def flows(self) -> dict[FlowKey, FlowDecoder]:
        """The connections being decoded, by flow key, oldest first."""
        return {fd.key: fd for fd in self.open_flows()}

    def open_flows(self) -> list[FlowDecoder]:
        """The connections being decoded (begun, not yet ended), oldest first."""
        return [fd for fd in self.reassembler.records() if fd.state is not ENDED]

    def _event(self, ev, out: list, reused: dict | None = None) -> None:
        """One event of the reassembler's. ``reused``: the records of connections whose
        ports a new connection took in the same batch of events (see _reused)."""
        if isinstance(ev, Start):
            fd = ev.state
            known = self.reassembler.server_ports
            fd.begin(self.options, ev.midstream, ev.index,
                     ev.midstream and (ev.flow[1] in known) == (ev.flow[3] in known))
            if self._watching:
                fd.watched = True
            sport = ev.flow[3]
            family = self.by_port.get(sport) or self.by_port.get(ev.flow[1]) or self.servers.get(ev.flow[2:])
            if sport in self.encrypted:
                fd.state = ENCRYPTED
                out.append(Note("encrypted", f"port {sport} carries TLS: not decoded", ev.ts, ev.flow))
            elif family is not None:
                if fd.watched:
                    fd.state = IGNORED
                else:
                    self._decode_as(fd, family)
            elif not self.heuristic:
                fd.state = IGNORED
            return
        if type(ev) is End:
            fd = ev.state
            if fd.state is not ENDED:
                self._close_flow(fd, out, ev.ts)
                fd.end()
            if reused:
                reused.pop(ev.flow, None)  # what follows is the new connection's
            return
        fd = reused.get(ev.flow) if reused else None
        if fd is None:
            fd = self.reassembler.record(ev.flow)
        if fd is None:
            if not self.turned or ev.flow not in self.turned:
                return
            fd, ev = self.turned[ev.flow], _turned(ev)  # turned by an event before it in its batch
        if isinstance(ev, Data):
            self._data(fd, ev, out)
        elif isinstance(ev, Gap):
            if fd.state is DECODING:
                out.append(Note("gap", f"{ev.missing} bytes lost ({ev.reason})", ev.ts, ev.flow, ev.direction,
                                ev.offset, ev.missing))
                fd.session.gap()
                sd = fd.side(ev.direction)
                items = sd.gap(ev.missing)
                sd.lost(ev.missing)
                self._items(fd, ev.direction, items, ev.ts, out)
            elif fd.pending is not None:
                self._let_go(fd.pending)  # its first bytes are no longer whole
                fd.state = IGNORED

    def _data(self, fd: FlowDecoder, ev: Data, out: list) -> None:
        state = fd.state
        if state is DECODING and (fd.first or fd.family.refuses is None or not self._refused(fd, ev)):
            sd = fd.side(ev.direction)
            sd.carried(len(ev.data), ev.index)
            self._items(fd, ev.direction, sd.feed(ev.data), ev.ts, out)
            return
        state = fd.state
        if state is ENCRYPTED or state is ENDED:
            return
        und = fd.pending
        if und is None:
            und = fd.pending = _Undecided(fd, self.families if state is SNIFFING else (), ev.ts,
                                          "no family took it" if state is SNIFFING else "no known port")
            self.undecided[id(und)] = und
            self.by_server.setdefault(fd.key[2:], {})[id(und)] = und
        und.bytes[ev.direction == "s2c"] += len(ev.data)
        if und.chunks is None:
            return
        before = len(und)
        won = und.add(ev.direction, ev.data, ev.index, ev.ts, self.hold)
        self.held += len(und) - before
        if won is not None:
            if und.client == "s2c" and fd.guessed:  # its bytes show the guess was wrong
                self._turn(und)
            self.servers.setdefault(fd.key[2:], won)
            self._take(und, won, out)
            self._server_known(fd.key[2:], won, out)
        elif not und.sniffers and fd.state is SNIFFING:
            fd.state = HOLDING if und.chunks is not None else IGNORED
        elif und.chunks is None:
            fd.state = IGNORED

    def _refused(self, fd: FlowDecoder, ev: Data) -> bool:
        """A connection on its family's port opens as another protocol sharing the port does
        (the family's ``refuses``): it is not decoded, and is told at the end as undecoded
        (never taken for its server's family, as the server speaks both)."""
        if ev.direction != "c2s":
            return False
        other = fd.family.refuses(ev.data)
        if other is None:
            return False
        fd.state = IGNORED
        und = fd.pending = _Undecided(fd, (), ev.ts, f"{other} on port {fd.key[3]}")
        self.undecided[id(und)] = und
        return True

    def _take(self, und: "_Undecided", family: Family, out: list) -> None:
        """A connection no family had taken is ``family``'s: decoded from the bytes held (if
        they are whole), then from its next bytes; decoded and closed, if it is over."""
        self.undecided.pop(id(und), None)
        self.by_server.get(und.flow[2:], {}).pop(id(und), None)
        fd = und.fd
        chunks = und.chunks
        self._let_go(und)
        if und.watched:  # another decoder's: it decodes it
            if fd is not None:
                fd.state, fd.pending = IGNORED, None
            return
        if fd is None:  # over: decoded apart, from what was held
            if chunks is None:
                return
            fd = FlowDecoder(und.flow, und.ts)
            fd.begin(self.options, und.midstream, und.first_index)
        fd.pending = None
        if chunks is None:  # its start is lost: joined where it stands
            fd.midstream = True
        self._decode_as(fd, family)
        for direction, data, index, ts in chunks or ():  # in the order they came
            sd = fd.side(direction)
            sd.carried(len(data), index)
            self._items(fd, direction, sd.feed(data), ts, out)
        if und.fd is None:
            self._close_flow(fd, out, und.end_ts)

    def _server_known(self, server: tuple, family: Family, out: list) -> None:
        """A connection showed ``server`` speaking ``family``: its other connections, earlier
        ones held or still open, are that family's too (and later ones: see _event)."""
        if server not in self.reassembler.server_ports:  # new connections to it face it
            self.reassembler.server_ports = self.reassembler.server_ports | {server[1]}
        for und in [u for u in self.undecided.values() if u.guessed and u.flow[:2] == server]:
            self._turn(und)  # joined mid-stream, the server taken for the client
        for und in list(self.by_server.get(server, {}).values()):
            self._take(und, family, out)

    def _turn(self, und: "_Undecided") -> None:
        """An undecoded connection joined mid-stream is the other way round from the guess
        its ports made: its record (while it is open), what it held and its counts turned,
        before anything of it is decoded or told."""
        self.by_server.get(und.flow[2:], {}).pop(id(und), None)
        old = und.flow
        und.flow = (old[2], old[3], old[0], old[1])
        und.guessed = False
        und.bytes.reverse()
        if und.chunks is not None:
            und.chunks = [(_OTHER[d], data, index, ts) for d, data, index, ts in und.chunks]
        fd = und.fd
        if fd is not None:
            if self.tails is not None:  # the reader follows it by its directions' names
                self._settle(self.tails.drop_all())
            self.reassembler.turn(old)
            fd.guessed, fd._label = False, None
            self.turned[old] = fd
        self.by_server.setdefault(und.flow[2:], {})[id(und)] = und

    def _let_go(self, und: "_Undecided") -> None:
        """What an undecoded connection held goes (its bytes are still counted)."""
        self.held -= len(und)
        und.chunks = None
        und.sniffers = []
        und.size = 0

    def _items(self, fd: FlowDecoder, direction: str, items, ts: float, out: list) -> None:
        sd = fd.made(direction)
        n = sd.buffered
        if n != sd.counted:
            self.held += n - sd.counted
            sd.counted = n
        for item in items:
            if isinstance(item, RawFrame):
                out.append(self._frame(fd, sd, direction, item, ts))
            elif type(item) is RawRun:
                self._run(fd, sd, direction, item, ts, out)
            else:
                sd.record_of(item.offset + item.size)
                out.append(Note("skipped", item.reason, ts, fd.key, direction, item.offset, item.size))

    def _frame(self, fd: FlowDecoder, sd: Framer, direction: str, raw: RawFrame, ts: float) -> Captured:
        number = sd.record_of(raw.offset + len(raw.data)) + 1
        return _captured(ts, fd.key, direction, fd.session.decode(raw, direction, ts, number), number)

    def _run(self, fd: FlowDecoder, sd: Framer, direction: str, run: RawRun, ts: float, out: list) -> None:
        """Whole frames in a row: what the family's fast path takes, and the rest frame by frame."""
        data, offset, take = run.data, run.offset, self.fast[fd.family].take
        pos, n = 0, len(data)
        while pos < n:
            end, got = take(fd, sd, direction, data, pos, offset, ts)
            if got is None:
                got = self._frame(fd, sd, direction, RawFrame(offset + pos, data[pos:end]), ts)
            elif type(got) is tuple:  # decoded and judged with findings: the ordinary record
                got = _captured(ts, fd.key, direction, *got)
            out.append(got)
            pos = end

    def _close_flow(self, fd: FlowDecoder, out: list, ts: float | None) -> None:
        und = fd.pending
        if und is not None:  # not decoded: what it held waits for its server to be known
            und.fd = None
            und.end_ts = ts
            fd.pending = None
        if fd.state is not DECODING:
            return
        for direction, sd in fd.sides():
            if sd.buffered:
                self._items(fd, direction, sd.close(), ts if ts is not None else 0.0, out)
            self.held -= sd.counted
            sd.counted = 0
        fd.drop_sides()
        if fd.started:  # an idle connection that never made a frame has nothing to say
            for f in fd.session.finish():
                out.append(Note("finding", f.message, ts, fd.key, None, None, 0, f))

    # -- the held-bytes cap ------------------------------------------------------------

    def _shed(self, out: list, ts: float | None) -> None:
        """More than ``max_held`` bytes are held for frames not yet whole (and for sniffing
        unknown ports): the largest holders, oldest first among equals, give theirs up until
        three quarters of the cap are left. A splitter's partial frame comes out as it
        stands (truncated) and its direction resynchronises on the bytes after it, as after
        lost bytes; a sniffing buffer's connection is left undecoded. One note says how
        much went."""
        if self.tails is not None:  # what the reader appended is counted, and settled
            self._settle(self.tails.drop_all())
        holders = []
        held = 0
        for fd in self.open_flows():
            for direction, sd in fd.sides():
                n = sd.buffered
                held += n - sd.counted
                sd.counted = n
                if n and fd.state is DECODING:
                    holders.append((-n, fd.first_index, direction, fd))
        for und in self.undecided.values():
            if und.chunks is not None and len(und):
                holders.append((-len(und), und.first_index, "", und))
        self.held += held
        if self.held <= self.max_held:
            return
        holders.sort(key=lambda h: h[:2])
        target = self.max_held * 3 // 4
        dropped = flows = 0
        for size, _, direction, fd in holders:
            if self.held <= target:
                break
            flows += 1
            dropped -= size
            if not direction:  # an undecoded connection's first bytes
                self._let_go(fd)
                if fd.fd is not None:
                    fd.fd.state = IGNORED
                continue
            fd.session.gap()  # answers may have gone with the bytes
            self._items(fd, direction, fd.made(direction).gap(0), ts, out)
        out.append(Note("capture", f"held bytes over the cap: the partial frames of {flows} connections "
                                   f"({dropped} bytes) were given up, largest first, as more than {self.max_held} "
                                   f"bytes were held for frames not yet whole; raise the cap with "
                                   f"{MAX_HELD_ENV}=BYTES", ts, None, None, None, dropped))


class _Undecided:
    """A connection no family has taken: its bytes each way, and, while the families may
    yet take it (their sniffers, or evidence about its server from another connection),
    every chunk it carried in the order they came, up to ``hold`` bytes. Its length is
    every byte held, the sniffers' own included."""

    __slots__ = ("fd", "flow", "sniffers", "chunks", "size", "bytes", "ts", "end_ts", "first_index", "midstream",
                 "why", "watched", "guessed", "client")

    def __init__(self, fd: FlowDecoder, families: tuple[Family, ...], ts: float, why: str) -> None:
        self.fd: FlowDecoder | None = fd  # None once the connection is over
        self.flow = fd.key
        self.sniffers: list[tuple[Family, Sniffer]] = [(f, f.sniffer(fd.midstream)) for f in families
                                                      if f.sniffer is not None]
        #: (direction, data, record, time) of each chunk; None once given up
        self.chunks: list[tuple[str, bytes, int, float]] | None = [] if self.sniffers else None
        self.size = 0
        self.bytes = [0, 0]  # c2s, s2c
        self.ts, self.end_ts = ts, None
        self.first_index, self.midstream = fd.first_index, fd.midstream
        self.why = why
        self.watched = fd.watched
        self.guessed = fd.guessed
        #: the direction the sniffer that took it found the client's ("": its bytes did not tell)
        self.client = ""

    def __len__(self) -> int:
        return self.size + sum(len(sn) for _, sn in self.sniffers)

    def add(self, direction: str, data: bytes, index: int, ts: float, hold: int) -> Family | None:
        """The family whose sniffer says yes; None while undecided, and once every family
        has said no (no sniffer is left). Past ``hold`` bytes the chunks go."""
        self.size += len(data)
        if self.size > hold:
            self.chunks = None
            self.sniffers = []
            self.size = 0
            return None
        self.chunks.append((direction, data, index, ts))
        left = []
        for family, sniffer in self.sniffers:
            verdict = sniffer.add(direction, data)
            if verdict:
                self.client = getattr(sniffer, "client", "")
                return family
            if verdict is None and self.size < family.sniff_bytes:
                left.append((family, sniffer))
        self.sniffers = left
        return None


_OTHER = {"c2s": "s2c", "s2c": "c2s"}


def _turned(ev):
    """A Data or Gap event of a connection turned round after it was made: as it reads now."""
    return replace(ev, flow=(ev.flow[2], ev.flow[3], ev.flow[0], ev.flow[1]), direction=_OTHER[ev.direction])


def merge_correlators(parts: Iterable[dict]) -> dict:
    """The correlators of several decoders of one capture (worker processes, Spark tasks),
    each family's merged into one, in the order given."""
    out: dict = {}
    for part in parts:
        for name, correlator in part.items():
            mine = out.get(name)
            if mine is None:
                out[name] = correlator
            else:
                mine.merge(correlator)
    return out


def concluded(correlators: dict) -> list[Note]:
    """What the families' correlators find once the capture is over: a finding note each,
    on the connection it names."""
    out = []
    for correlator in correlators.values():
        for flow, finding in correlator.finish():
            out.append(Note("finding", finding.message, None, flow, None, None, 0, finding))
    return out


def decode_segments(segments: Iterable[Segment], **kw) -> Iterator[Captured | Note]:
    dec = CaptureDecoder(**kw)
    for seg in segments:
        yield from dec.feed(seg)
    yield from dec.finishing()
