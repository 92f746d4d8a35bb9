"""The streaming RDB decoder (spec/rdb.md §1–§11): fed bytes as they come, it gives each
record as it completes and holds no more than the record it is in (one element of it when
the record is a collection streamed in, one string at most, up to the RDB string cap).

    parser = RdbParser()
    for chunk in chunks:
        for record in parser.feed(chunk):
            ...
    for record in parser.close():   # the last one is the Ending
        ...

Records are :class:`~.records.KeyRecord`, :class:`~.records.AuxRecord`,
:class:`~.records.OpRecord`, findings not about one record (:class:`~dcpinspect.findings.Finding`)
and, from ``close``, the :class:`~.records.Ending`. Bad input never raises: truncation, a
lying length, an unknown type or opcode and damaged encodings are findings with the offset
of the damage, every key before it is given, and decoding stops only where the format
leaves no way to go on (an unknown type has no length).
"""

from __future__ import annotations

from functools import lru_cache

from ....limits import RDB_INFLATE_RATIO, RDB_INFLATED, RDB_KEYS, RDB_NESTING, RDB_STRING
from ....messages.text import key_text
from ..rules import RDB_RULES
from . import types
from .crc64 import crc64
from .native import C
from .primitives import (
    LEN_ENC, Cap, Corrupt, LzfOverBudget, NeedMore, TooLong, read_len, read_ms, read_seconds, read_string, read_u32, read_u64,
    skip_string, string_header,
)
from .records import AuxRecord, Ending, KeyRecord, OpRecord
from .values import READERS, HashTemplates, module_body
from ....slots import names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Iterator


class _Eof(Exception):
    """The input ended while more was needed."""


class _Stop(Exception):
    """Decoding cannot go on (the finding is already made)."""


class OverBudget(ValueError):
    """Compressed content inflates past the input's budget (see :meth:`RdbParser.charge`):
    ``args[0]`` bytes of the piece were still within it, ``args[1]`` says what passed it."""


#: records a compressed blob's content makes before they are handed on (see ``records``)
FLUSH = 4096
#: the most bytes of one record the C lane waits for, when the input's bytes so far end
#: inside it, before it leaves the record to the readers (which take it as it comes), and
#: the least it asks for more each time
LANE_REACH = 32 << 20
LANE_STEP = 1 << 20


class RdbParser:
    """One RDB stream's decoder. ``keep``: whether to keep each key's decoded value (True,
    False, or a test of the key's bytes); ``cap``: the longest string held (the RDB string
    limit); ``trailing_ok``: bytes after the checksum are the caller's (a replication
    stream), not a finding; ``nested``: the decompressed content of a Dragonfly blob, read
    with the state of the parser given; ``select``: a :class:`~.selection.KeySelection`,
    whose keys alone are given (the others are read, counted and judged for duplicates,
    their values passed over unmade); ``measure``: a :class:`~.memory.LaneMeasure`, with
    which the C lane gives the keys it can measure for the memory model without values
    (what the model needs in their ``extra``), the readers the others; ``on_header``: called
    with the file's vendor and RDB version once its header is read; ``lines``: a
    :class:`~.digest.SnapshotDigest`, with which (values kept of every key, no selection)
    the C lane writes each key it reads as its whole JSON Lines line, value and digest in
    it (:attr:`~.records.KeyRecord.line`, the value not kept) and adds the key's part to
    that digest, the readers keep the others' values; ``stripe``: (stripe, mine, ways), with
    ``lines``: the lane writes the lines of only the keys whose offset // stripe modulo
    ``ways`` is one of the bits of ``mine`` (and adds only their parts to the digest), the
    others come as they do without ``lines`` (processes reading the same file, each writing
    its share); ``resp``: an :class:`~..reports.export.Exporter`, with which (values kept of
    every key, no selection) the C lane writes each key it reads, but streams, as the
    Exporter's commands (:attr:`~.records.KeyRecord.line`, the value not kept) and adds how
    many to its ``commands``."""

    def __init__(self, keep: bool | Callable[[bytes], bool] = False, cap: int | None = None,
                 trailing_ok: bool = False, nested: "RdbParser | None" = None, select=None,
                 depth: int = 0, measure=None, on_header: Callable[[str, int], None] | None = None,
                 lines=None, stripe: tuple[int, int, int] | None = None, resp=None) -> None:
        self.buf = bytearray()
        self.base = 0  # the input offset of buf[0]
        self.cap = RDB_STRING.value() if cap is None else cap
        if nested is None:  # a blob's content is charged to the input's budget by its parser's Cap
            self.cap = Cap(self.cap)
            self.cap.inflates = self._lzf_inflates
        self._keep_test = callable(keep)
        self._keep = keep if self._keep_test else bool(keep)
        self.keeping = False
        #: (member, longest) of the value just read when a member of it repeats (values.py)
        self.duplicate: tuple[bytes, int | None] | None = None
        self.select = select
        #: what the memory model asks the C lane to measure (memory.LaneMeasure), or None
        self.measure = measure
        self.on_header = on_header
        self.lines = lines if keep is True and select is None and measure is None else None
        #: with values kept of every key: the lane writes the keys it reads as Redis commands
        #: (their line) and adds how many to this Exporter's ``commands``
        self.resp = resp if keep is True and select is None and measure is None and lines is None else None
        #: with lines or resp: (stripe, mine, ways): the lane writes only the keys whose
        #: offset // stripe modulo ways is one of mine's bits (the others come unwritten)
        self.stripe = stripe
        self.trailing_ok = trailing_ok
        self._out: list = []
        self._need = 1
        self._closed = False
        self.done = False
        self.stopped = False
        self.leftover = bytearray()
        self.trailing = 0
        self._ignored = 0
        self._crc = 0
        self._current: KeyRecord | OpRecord | None = None
        #: what is being decoded, for messages: text, or the parts of it (see ``what``)
        self._what: str | tuple = "the header"
        self._keys_cap = RDB_KEYS.value()
        #: the C record lane (see _lane), when values are not kept or are kept of some keys
        #: only (those it leaves to the readers): its table of layouts and
        #: the value types it names, for the (vendor, version) they were made for
        self._lane_on = C is not None and (self._keep is False or select is not None or self._keep_test
                                           or measure is not None or self.lines is not None
                                           or self.resp is not None)
        self._lane_for: tuple | None = None
        self._lane_table: tuple | None = None
        self.nested = nested
        self.depth = depth  # how many compressed blobs this content is inside
        if nested is None:
            #: bytes the input's compressed blobs and LZF strings inflated to so far, and their
            #: bounds; whether an LZF string past them was said
            self.inflated = 0
            self.lzf_over = False
            self._ratio, self._inflated_cap = RDB_INFLATE_RATIO.value(), RDB_INFLATED.value()
            self.vendor: str | None = None
            self.version: int | None = None
            self.db = 0
            self.ctime_ms: int | None = None
            #: the redis-ver aux field (how the server writes scores into digests)
            self.redis_ver: bytes | None = None
            #: the keys serialised so far, of every db in one table: each key's hash XOR its
            #: db's salt (:func:`db_salt`), so that it grows with the keys, never with the dbs
            self._seen: Seen | _SeenSet = Seen() if C is not None else _SeenSet()
            self._seen_count = 0
            self.keys = 0
            self.templates = HashTemplates()
            self.modules: set[str] = set()  # the modules whose data the file holds (rdb-module, once each)
        self.ending = Ending(None, None)
        self.eof_offset: int | None = None
        self._gen = self._run()

    # ------------------------------------------------------------------ feeding

    def feed(self, data: bytes) -> list:
        """Take the next bytes; the records they complete."""
        return list(self.records(data))

    def records(self, data: bytes):
        """Take the next bytes; the records they complete, handed on as they complete (those
        of a compressed blob while it inflates, :data:`FLUSH` at a time, never all held)."""
        if self.done:
            self._after_end(data)
            yield from self._take()
            return
        self.buf += data
        # the decoder pauses for bytes (then the buffer is short of what it needs) or to
        # hand on what a blob made (then it is not)
        while not self.done and len(self.buf) >= self._need:
            self._resume()
            yield from self._take()

    def close(self) -> list:
        """The input is over: what is left, and the :class:`Ending` last."""
        if not self.done:
            self._closed = True
            while not self.done:  # it pauses only to hand records on now
                self._resume()
        end = self.ending
        end.vendor, end.version = self._state.vendor, self._state.version
        end.bytes_read = self.base + len(self.buf) + self.trailing + self._ignored
        end.stopped = self.stopped
        if self.trailing and not self.trailing_ok and self.nested is None:
            self._finding("rdb-trailing-data", f"{self.trailing:,} bytes follow the checksum",
                          self.base + len(self.buf))
        self._out.append(end)
        return self._take()

    def charge(self, n: int, what: str, rest: str = "the rest of the blob is passed over") -> None:
        """``n`` more bytes inflated from ``what`` (a blob's name, or LZF strings): counted
        against the input's budget, the ratio to the bytes read so far and the absolute cap
        (RDB_INFLATE_RATIO, RDB_INFLATED); :class:`OverBudget` past either (``rest``: what
        then becomes of it)."""
        state = self._state
        allowed = self._allowed()
        claimed = state.inflated + n
        if claimed > allowed:
            left = max(0, allowed - state.inflated)
            state.inflated += left
            raise OverBudget(left, self._over(claimed, what, rest))
        state.inflated += n

    def _over(self, claimed: int, what: str, rest: str) -> str:
        state = self._state
        return (f"{what} inflates past the input's budget: {claimed:,} bytes inflated from "
                f"{state.base + len(state.buf):,} read, more than {state._ratio:,} times those (DCPINSPECT_MAX_RDB_"
                f"INFLATE_RATIO) or {state._inflated_cap:,} in all (DCPINSPECT_MAX_RDB_INFLATED); {rest}")

    def _allowed(self) -> int:
        """The bytes the input's compressed content may inflate to, its bytes read so far."""
        state = self._state
        return min(state._inflated_cap, state._ratio * (state.base + len(state.buf)))

    def _lzf_inflates(self, n: int) -> bool:
        """Whether an LZF string's ``n`` bytes are within the input's budget (charged if
        so): :class:`~.primitives.Cap`'s question, for every reading of a string."""
        state = self._state
        if state.inflated + n > self._allowed():
            return False
        state.inflated += n
        return True

    def take_leftover(self) -> bytes:
        """The bytes after the end so far (a replication stream's next bytes), given once."""
        out = bytes(self.leftover)
        self.leftover.clear()
        return out

    def _after_end(self, data: bytes) -> None:
        if self.stopped:
            self._ignored += len(data)
            return
        self.trailing += len(data)
        if self.trailing_ok:
            self.leftover += data

    def _take(self) -> list:
        out, self._out = self._out, []
        return out

    @property
    def _state(self) -> "RdbParser":
        return self.nested if self.nested is not None else self

    def _resume(self) -> None:
        try:
            self._gen.send(None)
        except StopIteration:
            self.done = True
        except _Eof:
            self.done = True
            self.stopped = True
            if self.nested is None:
                self._finding("rdb-truncated", f"the input ends in {self.what}", self.base + len(self.buf))
            else:
                self._finding("rdb-corrupt", f"a compressed blob ends in {self.what}", self.base + len(self.buf))
        except Corrupt as exc:
            self.done = True
            self.stopped = True
            self._finding("rdb-corrupt", f"{exc.args[0]} (in {self.what}); decoding stops",
                          self.base + exc.at)
        except _Stop:
            self.done = True
            self.stopped = True

    # ------------------------------------------------------------------ helpers the readers use

    def wait(self, p: int, need: int):
        """Wait until the buffer reaches index ``need``; drops what is before ``p`` first
        (counted into the checksum), so the index of ``p`` becomes 0: returns it."""
        if p:
            self._drop(p)
            need -= p
        while len(self.buf) < need:
            if self._closed:
                raise _Eof
            self._need = need
            yield
        return 0

    def _drop(self, p: int) -> None:
        if self.nested is None:
            self._crc = crc64(memoryview(self.buf)[:p], self._crc)
        del self.buf[:p]
        self.base += p

    def get(self, fn, p: int, *args):
        """``fn(buf, p, *args)``, waiting for as many bytes as it needs."""
        while True:
            try:
                return fn(self.buf, p, *args)
            except NeedMore as more:
                p = yield from self.wait(p, more.args[0])

    def string(self, p: int):
        """A string: (bytes, next index), or (None, next index) when it is longer than the
        cap (its bytes passed over) or its LZF data is damaged (a finding either way)."""
        while True:
            try:
                return read_string(self.buf, p, self.cap)
            except NeedMore as more:
                p = yield from self.wait(p, more.args[0])
            except LzfOverBudget as over:
                state = self._state
                if not state.lzf_over:  # said once an input: the strings past the budget after it are passed over too
                    state.lzf_over = True
                    self.note("rdb-inflate-cap", self._over(state.inflated + over.inflated,
                                                            f"an LZF string of {over.length:,} bytes in {self.what}",
                                                            "it is passed over unread, as is any later one past the "
                                                            "budget"), self.base + p)
                p = yield from self.skip(over.start, over.length)
                return None, p
            except TooLong as long:
                self.note("rdb-string-too-long", f"a {long.what} of {long.length:,} bytes in {self.what} is more "
                                                 f"than the {self.cap:,} held: passed over", self.base + p)
                p = yield from self.skip(long.start, long.length)
                return None, p
            except Corrupt as exc:
                if exc.resume is None:
                    raise
                self.note("rdb-corrupt", f"{exc.args[0]} (in {self.what})", self.base + p)
                return None, exc.resume

    def string_size(self, p: int):
        """A string's length as :meth:`string` would give it (None where it gives None), and
        the next index, with the same findings; a plain string's bytes are passed over as
        they come, never held."""
        try:
            return skip_string(self.buf, p, self.cap)
        except NeedMore:
            pass
        except (TooLong, Corrupt):
            raw, p = yield from self.string(p)
            return (None if raw is None else len(raw)), p
        while True:
            try:
                size, q, _ = string_header(self.buf, p)
                break
            except NeedMore as more:
                p = yield from self.wait(p, more.args[0])
        if self.buf[p] >> 6 == LEN_ENC or size > self.cap:
            raw, p = yield from self.string(p)
            return (None if raw is None else len(raw)), p
        p = yield from self.skip(q, size)
        return size, p

    def pass_string(self, p: int):
        """A string passed over unread: (its stored size, next index)."""
        size, q, _ = yield from self.get(string_header, p)
        p = yield from self.skip(q, size)
        return size, p

    def skip(self, p: int, n: int):
        """Pass over ``n`` bytes from ``p`` as they come, holding none of them."""
        while True:
            avail = len(self.buf) - p
            if n <= avail:
                return p + n
            n -= avail
            p = yield from self.wait(len(self.buf), len(self.buf) + 1)

    @property
    def what(self) -> str:
        """What is being decoded, as messages say it."""
        what = self._what
        if type(what) is str:
            return what
        kind, a, b = what
        if kind == "value":
            return f"the value of key {self.key_text(a)} at offset {b}"
        if kind == "key":
            return f"the key of type {a.rdb_name} at offset {b}"
        return f"the {types.OPCODE_NAMES.get(a)} at offset {b}"

    def note(self, rule: str, message: str, offset: int | None) -> None:
        """A finding on the record being decoded (or on its own when there is none)."""
        finding = RDB_RULES[rule].finding(message, offset)
        if self._current is not None:
            self._current.findings.append(finding)
        else:
            self._out.append(finding)

    def stop(self, rule: str, message: str, offset: int | None) -> None:
        self._finding(rule, message + "; decoding stops", offset)
        raise _Stop

    def _finding(self, rule: str, message: str, offset: int | None) -> None:
        self._out.append(RDB_RULES[rule].finding(message, offset))

    @staticmethod
    def key_text(rec: KeyRecord) -> str:
        return repr(key_text(rec.key[:64]))

    # ------------------------------------------------------------------ the stream

    def _run(self):
        buf = self.buf
        state = self._state
        p = 0
        if self.nested is None:
            if len(buf) < 9:
                p = yield from self.wait(p, 9)
            found = types.header(bytes(buf[:9]))
            if found is None:
                self.stop("rdb-magic", f"the input starts with {bytes(buf[:9])!r}, not REDIS and 4 digits or "
                                       "VALKEY and 3", 0)
            state.vendor, state.version = found
            newest = types.VALKEY_VERSION if state.vendor == types.VALKEY else types.NEWEST_REDIS
            if state.version > newest or state.version < 1:
                self._finding("rdb-version", f"{bytes(buf[:9]).decode()}: version {state.version} is not one known "
                                             f"(1 to {newest}); decoded as version {newest}", 5)
            if self.on_header is not None:
                self.on_header(state.vendor, state.version)
            p = 9
        pending: dict = {}
        pending_start = None
        while True:
            if len(self._out) >= FLUSH:  # hand on what is made (see records)
                self._need = 0
                yield
            if p >= len(buf):
                self._what = "the record after offset " + str(self.base + p - 1)
                try:
                    p = yield from self.wait(p, p + 1)
                except _Eof:
                    if self.nested is not None and not pending:
                        return  # a compressed blob's content ends between records
                    raise
            if self._lane_on and pending_start is None:
                p = yield from self._lane_whole(p)
                if p >= len(buf):
                    continue
            op = buf[p]
            start = self.base + p
            if state.version == 9 and state.vendor == types.REDIS and types.looks_dragonfly(state.vendor, 9, op):
                state.vendor = types.DRAGONFLY
            if op >= 200 or op == types.ENT_RAM_LRU or op == types.ENT_SLOT_NUM:
                if op == types.EOF:
                    p = yield from self._eof(p)
                    return
                prefix = _PREFIXES.get(op)
                if op == types.KEY_META and state.vendor != types.VALKEY:
                    prefix = _key_meta
                if prefix is not None and (op not in types.DF_RANGE or state.vendor == types.DRAGONFLY):
                    if pending_start is None:
                        pending_start = start
                    self._what = ("opcode", op, start)
                    p = yield from prefix(self, p + 1, pending)
                    continue
                handler = _OPCODES.get(op)
                if handler is None or (op in types.DF_RANGE and state.vendor != types.DRAGONFLY):
                    self.stop("rdb-unknown-type", f"opcode {op} (0x{op:02x}) at offset {start} is not one of "
                                                  f"{state.vendor} version {state.version}", start)
                self._what = f"the {types.OPCODE_NAMES.get(op, op)} at offset {start}"
                rec = OpRecord(op, types.OPCODE_NAMES.get(op, str(op)), start, 0)
                self._current = rec
                if op in _BLOBS:  # before the records inside it
                    self._out.append(rec)
                p = yield from handler(self, p + 1, rec)
                self._current = None
                rec.length = self.base + p - start
                if op == types.AUX:
                    self._out.append(AuxRecord(rec.fields["key"], rec.fields["value"], start, rec.length,
                                               rec.findings))
                elif op not in _BLOBS:
                    self._out.append(rec)
                continue
            p = yield from self._key(p, op, pending_start if pending_start is not None else start, pending)
            if pending:
                pending = {}
            pending_start = None

    def _lane_whole(self, p: int):
        """:meth:`_lane` from ``p``, and again as more bytes come while the buffer ends
        inside the record it stopped before (a key read across two reads of the input):
        as soon as the bytes it said it needs are there, then, past :data:`LANE_STEP` bytes
        of the record, when they double (each try reads the record from its start), up to
        :data:`LANE_REACH`; a stream that goes on after the snapshot (``trailing_ok``) waits
        for at most ``LANE_STEP``, so that no key is held back for bytes that may be long in
        coming. It never holds more of the record than the string cap: what the record claims
        past that (a length or a count that lies) is the readers' to say. The index of the
        first record left to the readers."""
        reach = min(LANE_STEP if self.trailing_ok else LANE_REACH, self.cap)
        while True:
            p, need = self._lane(p)
            span = len(self.buf) - p
            if need <= len(self.buf) or self._closed or span >= reach:  # (need 0: it did not stop for bytes)
                return p
            if p:
                self._drop(p)
                need -= p
                p = 0
            if span >= LANE_STEP:
                need = max(need, 2 * span)
            need = min(need, reach)
            while len(self.buf) < need and not self._closed:
                self._need = need
                yield

    def _lane(self, p: int) -> tuple[int, int]:
        """The keys from ``p`` that the C lane reads straight from the buffer (dcpinspect/families/redis/rdb/_rdb.c,
        ``scan``), as the readers and ``_judge`` would make and judge them; the index of the
        first record it leaves to them, and the bytes of the buffer that record needs at least
        when the buffer ends inside it (else 0)."""
        state = self._state
        if self._lane_for != (state.vendor, state.version):
            self._lane_for = (state.vendor, state.version)
            self._lane_table = lane_table(state.vendor, state.version)
        if self._lane_table is None or _MAKER is None:
            return p, 0
        codes, vtypes = self._lane_table
        if state.ctime_ms is not None and not -1 << 63 <= state.ctime_ms < 1 << 63:
            return p, 0  # a ctime no expiry can be compared with in C
        db, remembered = state.db, state._seen_count
        seen = state._seen if remembered < self._keys_cap else None
        select = self.select
        want = measured = lines = None
        if self.resp is not None:  # the lane writes the commands of the keys it reads, the readers keep the others
            lines = (False, bytearray(20), *(self.stripe or ()))
        elif self.lines is not None:  # the lane writes whole lines of the keys it reads, the readers keep the others
            from .data import g17
            from .digest import scores_of

            lines = (scores_of(state.redis_ver) is g17, bytearray(20), *(self.stripe or ()))
        elif self.measure is not None:  # the lane measures the keys it can, the readers keep the others
            measured = self.measure(vtypes, state.version)
        elif self._keep is not False:  # values are kept: the lane reads only the keys passed over
            keep, keep_test, ctime = self._keep, self._keep_test, state.ctime_ms

            def wanted(key, op, expire):
                return (not keep_test or keep(key)) and (select is None or
                                                         select.wanted(db, key, vtypes[op].type, expire, ctime))
            want = wanted
        q, found, inflated, need = C.scan(self.buf, p, codes, self.cap, seen, self._keys_cap - remembered - 1,
                                    state.ctime_ms, _MAKER, self.base, db, vtypes, db_salt(db), want, measured,
                                    max(0, self._allowed() - state.inflated), lines, self.resp is not None)
        state.inflated += inflated  # the LZF strings of the keys it made, within the budget
        state.keys += len(found)
        if seen is not None:
            state._seen_count += len(found)
        if lines is not None and found:
            if self.resp is not None:
                self.resp.commands += int.from_bytes(lines[1][:8], "little")
            else:
                self.lines.add(db, int.from_bytes(lines[1], "big"))
        if select is None:
            self._out += found
        else:
            admits, ctime = select.admits, state.ctime_ms
            self._out += [rec for rec in found if admits(rec, ctime)]
        return q, need

    def _key(self, p: int, op: int, start: int, pending: dict):
        state = self._state
        vtype = types.value_type(state.vendor, state.version, op)
        if vtype is None or not vtype.layout:
            known = f" ({vtype.rdb_name}, whose layout is not known)" if vtype is not None else ""
            self.stop("rdb-unknown-type", f"type {op} (0x{op:02x}) at offset {self.base + p}{known} is not one "
                                          f"of {state.vendor} version {state.version}", self.base + p)
        self._what = ("key", vtype, self.base + p)
        try:
            key, p = read_string(self.buf, p + 1, self.cap)
        except (NeedMore, TooLong, Corrupt):
            key, p = yield from self.string(p + 1)
        rec = KeyRecord(state.db, key if key is not None else b"", op, vtype, start, encoding=vtype.encoding)
        self._what = ("value", rec, start)
        self._current = rec
        if pending:
            rec.expire_ms = pending.get("expire_ms")
            rec.idle = pending.get("idle")
            rec.freq = pending.get("freq")
            for name in ("flags", "mc_flags", "slot", "key_meta"):
                if name in pending:
                    rec.extra[name] = pending[name]
        keep, select = self._keep, self.select
        self.keeping = keep(rec.key) if self._keep_test else keep
        if self.keeping and select is not None:
            self.keeping = select.wanted(rec.db, rec.key, vtype.type, rec.expire_ms, state.ctime_ms)
        value_start = self.base + p
        self.duplicate = None
        p = yield from READERS[vtype.layout](self, p, rec)
        end = self.base + p
        rec.size = end - value_start
        rec.length = end - start
        self._judge(rec)
        self._current = None
        if select is None or select.admits(rec, state.ctime_ms):
            self._out.append(rec)
        return p

    def module_data(self, name: str, what: str, offset: int) -> None:
        """Data of module ``name`` (a key's value or a MODULE_AUX): said once a file."""
        modules = self._state.modules
        if name not in modules:
            modules.add(name)
            self.note("rdb-module", f"{what} holds data of module {name!r}: a server without it refuses the file",
                      offset)

    def _judge(self, rec: KeyRecord) -> None:
        state = self._state
        if rec.elements == 0 and rec.vtype.type in _COLLECTIONS:
            self.note("rdb-empty-key", f"{rec.vtype.type} {self.key_text(rec)} holds no element", rec.offset)
        if self.duplicate is not None:
            member, longest = self.duplicate
            self.duplicate = None
            most = _KEPT_PACKED[state.vendor].get(rec.vtype.layout)
            kept = (most is not None and rec.elements is not None and rec.elements <= most
                    and longest is not None and longest <= _KEPT_PACKED_VALUE)
            what = "field" if rec.vtype.type == "hash" else "member"
            self.note("rdb-duplicate-member-kept" if kept else "rdb-duplicate-member",
                      f"{rec.vtype.type} {self.key_text(rec)} ({rec.vtype.rdb_name}) holds the {what} "
                      f"{key_text(member[:64])!r} twice", rec.offset)
        if rec.expire_ms is not None and state.ctime_ms is not None and rec.expire_ms < state.ctime_ms:
            self.note("rdb-expired-key", f"key {self.key_text(rec)} expired at {rec.expire_ms} ms, before the "
                                         f"snapshot's ctime {state.ctime_ms // 1000} s", rec.offset)
        state.keys += 1
        if state._seen_count < self._keys_cap:
            h = hash(rec.key)
            if not state._seen.add(h ^ db_salt(rec.db) if rec.db else h):
                self.note("rdb-duplicate-key", f"key {self.key_text(rec)} of db {rec.db} is serialised again",
                          rec.offset)
            else:
                state._seen_count += 1
                if state._seen_count == self._keys_cap:
                    self._finding("rdb-keys-cap", f"{state._seen_count:,} keys remembered (DCPINSPECT_MAX_RDB_KEYS): "
                                                  "the keys after this one are not checked for duplicates", rec.offset)

    def _eof(self, p: int):
        state = self._state
        self.eof_offset = self.ending.eof_offset = self.base + p
        if self.nested is not None:
            self.stop("rdb-corrupt", "an EOF opcode inside a compressed blob", self.base + p)
        self._what = "the checksum"
        self._drop(p + 1)
        p = 0
        if state.version is not None and state.version >= 5:
            self.ending.checksum_computed = self._crc
            stored, p = yield from self.get(read_u64, p)
            self.ending.checksum_stored = stored
            if stored and stored != self._crc:
                self._finding("rdb-checksum", f"the file's CRC-64 is {self._crc:016x}, the stored one {stored:016x}",
                              self.base)
        rest = self.buf[p:]
        if rest:
            self._after_end(bytes(rest))
        del self.buf[p:]
        return p


def db_salt(db: int) -> int:
    """What the hash of a key of ``db`` is XORed with in the one table of keys seen: 0 for
    db 0, a 64-bit odd multiple of the db for the others (signed, as hashes are), so that
    one key in two dbs is two entries."""
    v = (db * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    return v - (1 << 64) if v >> 63 else v


class _SeenSet:
    """The hashes of the keys serialised so far (see :func:`db_salt`), in a Python set (when
    dcpinspect.families.redis.rdb._rdb, whose :class:`Seen` takes a tenth of the memory, is not built)."""

    __slots__ = ("hashes",)

    def __init__(self) -> None:
        self.hashes: set[int] = set()

    def add(self, h: int) -> bool:
        """True when ``h`` was not in the set (it is now)."""
        if h in self.hashes:
            return False
        self.hashes.add(h)
        return True

    def __len__(self) -> int:
        return len(self.hashes)


Seen = C.Seen if C is not None else _SeenSet


# ---------------------------------------------------------------------- the C record lane

#: the layouts the lane reads (``scan``'s codes in dcpinspect/families/redis/rdb/_rdb.c)
_LANE_CODES = {"string": 1, "list": 2, "set": 18, "hash": 3, "zset2": 4, "ziplist_list": 5, "intset": 6,
               "ziplist_zset": 7, "ziplist_hash": 8, "quicklist": 9, "listpack_hash": 10, "listpack_zset": 11,
               "quicklist2": 12, "listpack_set": 13, "stream1": 14, "stream2": 15, "stream3": 16, "stream4": 17}
#: the KeyRecord fields ``scan`` gives, in its order
_LANE_FIELDS = ("db", "key", "type_id", "vtype", "offset", "length", "size", "elements", "encoding", "expire_ms",
                "idle", "freq", "extra", "line")


def _maker():
    """What makes the lane's KeyRecords in C (their other fields get their defaults), or
    None, and the lane stays off, when the record's fields no longer allow it."""
    if C is None:
        return None
    rest, made = [], KeyRecord(0, b"", 0, None, 0)  # (what __init__ gives the fields the lane does not set)
    for name in names(KeyRecord):
        if name not in _LANE_FIELDS:
            value = getattr(made, name)
            mutable = type(value) in (dict, list)  # (each record has one of its own)
            rest.append((name, type(value) if mutable else value, mutable))
    try:
        return C.Maker(KeyRecord, _LANE_FIELDS, rest)
    except TypeError:
        return None


_MAKER = _maker()


@lru_cache(maxsize=64)  # (a parser per file: a .dfs set's shards, a capture's syncs; the list is never changed)
def lane_table(vendor: str, version: int) -> tuple[bytes, list] | None:
    """The lane's layout of each type byte for a file of ``vendor`` and ``version`` (0: left
    to the readers), and the value types; None when the lane reads none of its keys
    (Dragonfly's). A type byte that would tell a version-9 file is Dragonfly's (§11) is left
    to the readers, which tell."""
    if vendor == types.DRAGONFLY:
        return None
    codes, vtypes = bytearray(256), [None] * 256
    for op in range(200):
        if op in (types.ENT_RAM_LRU, types.ENT_SLOT_NUM) or types.looks_dragonfly(vendor, version, op):
            continue
        vtype = types.value_type(vendor, version, op)
        code = _LANE_CODES.get(vtype.layout) if vtype is not None else None
        if code and (vtype.layout != "string" or vtype.type == "string"):
            codes[op], vtypes[op] = code, vtype
    return bytes(codes), vtypes


# ---------------------------------------------------------------------- prefix opcodes (apply to the next key)

def _expire_ms(r: RdbParser, p: int, pending: dict):
    pending["expire_ms"], p = yield from r.get(read_ms, p)
    return p


def _expire_s(r: RdbParser, p: int, pending: dict):
    s, p = yield from r.get(read_seconds, p)
    pending["expire_ms"] = s * 1000
    return p


def _idle(r, p, pending):
    pending["idle"], p = yield from r.get(read_len, p)
    return p


def _freq(r, p, pending):
    if p >= len(r.buf):
        p = yield from r.wait(p, p + 1)
    pending["freq"] = r.buf[p]
    return p + 1


def _ent_len(r, p, pending):
    """Redis Enterprise's RAM_LRU and SLOT_NUM: one length each, as librdb reads them."""
    _, p = yield from r.get(read_len, p)
    return p


def _df_mask(r, p, pending):
    mask, p = yield from r.get(read_u32, p)
    pending["flags"] = mask
    if mask & 2:
        pending["mc_flags"], p = yield from r.get(read_u32, p)
    return p


def _key_meta(r, p, pending):
    """KEY_META (Redis 8.6): classes of module-style data on the next key; SLOT_IMPORT in
    Valkey files is an opcode of its own."""
    if r._state.vendor == types.VALKEY:
        raise Corrupt("SLOT_IMPORT between a key's prefix opcodes", p)
    n, p = yield from r.get(read_len, p)
    classes = []
    for _ in range(n):
        spec, p = yield from r.get(_raw4, p)
        values, p = yield from module_body(r, p)
        classes.append(spec.hex())
    pending["key_meta"] = classes
    return p


def _raw4(buf, p):
    if p + 4 > len(buf):
        raise NeedMore(p + 4)
    return bytes(buf[p:p + 4]), p + 4


#: the types whose keys a server skips when they hold no element (``rdb-empty-key``)
_COLLECTIONS = frozenset(("list", "set", "zset", "hash"))
#: The layouts in which a server at its defaults (sanitize-dump-payload no) loads a value
#: whose member (or field) repeats, keeping it packed as written (rdb-duplicate-member-kept),
#: and the most entries (pairs, triplets) it keeps packed, by the file's vendor. Redis (and
#: Valkey): set-max-intset-entries, set-max-listpack-entries, zset-max-listpack-entries and
#: hash-max-listpack-entries; a plain hash, and a hash with field expiry (Redis 7.4's
#: HASH_METADATA, HASH_LISTPACK_EX and their pre-GA types), is packed as it loads while its
#: fields and values are at most hash-max-listpack-value bytes. Past them it makes a table of
#: the value, which refuses the repeat or stops the server on an assertion; every other
#: layout is checked as it loads (rdb-duplicate-member), Valkey 9's HASH_2 too (a table from
#: the start). Dragonfly checks every set, sorted set and hash it makes a table of (a plain
#: hash past 64 fields, its SET_WITH_EXPIRY and HASH_WITH_EXPIRY, a listpack set always), and
#: keeps an intset of at most 256 (past them it stops on a check), a listpack sorted set or
#: hash (a listpack hash past 1,024 bytes becomes a table holding the field once) and a plain
#: hash of at most 64 fields as written.
_REDIS_KEPT = {"intset": 512, "listpack_set": 128, "listpack_zset": 128, "listpack_hash": 512, "hash": 512,
               "hash_metadata": 512, "hash_metadata_pre_ga": 512, "listpack_ex": 512, "listpack_ex_pre_ga": 512}
_KEPT_PACKED = {types.REDIS: _REDIS_KEPT, types.VALKEY: _REDIS_KEPT,
                types.DRAGONFLY: {"intset": 256, "listpack_zset": 1 << 32, "listpack_hash": 1 << 32, "hash": 64}}
_KEPT_PACKED_VALUE = 64
_BLOBS = (types.DF_LZ4_BLOB, types.DF_ZSTD_BLOB)
_PREFIXES = {types.EXPIRETIME_MS: _expire_ms, types.EXPIRETIME: _expire_s, types.IDLE: _idle, types.FREQ: _freq,
             types.ENT_RAM_LRU: _ent_len, types.ENT_SLOT_NUM: _ent_len, types.DF_MASK: _df_mask}


# ---------------------------------------------------------------------- opcodes

def _aux(r: RdbParser, p: int, rec: OpRecord):
    key, p = yield from r.string(p)
    value, p = yield from r.string(p)
    rec.fields.update(key=key, value=value)
    state = r._state
    if key == b"ctime" and value is not None:
        try:
            state.ctime_ms = int(value) * 1000
        except ValueError:
            pass
    if key == b"redis-ver":
        state.redis_ver = value
    if key == b"df-ver" and state.vendor == types.REDIS:
        state.vendor = types.DRAGONFLY
    if key == b"valkey-ver" and state.vendor == types.REDIS:  # Valkey 8 writes REDIS0011 and this
        state.vendor = types.VALKEY
    return p


def _selectdb(r, p, rec):
    db, p = yield from r.get(read_len, p)
    r._state.db = rec.fields["db"] = db
    return p


def _resizedb(r, p, rec):
    rec.fields["db_size"], p = yield from r.get(read_len, p)
    rec.fields["expires_size"], p = yield from r.get(read_len, p)
    return p


def _slot_info(r, p, rec):
    for name in ("slot", "slot_size", "expires_slot_size"):
        rec.fields[name], p = yield from r.get(read_len, p)
    return p


def _function2(r, p, rec):
    rec.fields["code"], p = yield from r.string(p)
    return p


def _function_pre_ga(r, p, rec):
    rec.fields["name"], p = yield from r.string(p)
    rec.fields["engine"], p = yield from r.string(p)
    has_desc, p = yield from r.get(read_len, p)
    if has_desc:
        rec.fields["description"], p = yield from r.string(p)
    rec.fields["code"], p = yield from r.string(p)
    return p


def _module_aux(r, p, rec):
    from .values import module_name

    module_id, p = yield from r.get(read_len, p)
    rec.fields["module"], rec.fields["module_encver"] = module_name(module_id)
    r.module_data(rec.fields["module"], f"the MODULE_AUX at offset {rec.offset}", rec.offset)
    when_opcode, p = yield from r.get(read_len, p)
    if when_opcode != 2:
        raise Corrupt(f"MODULE_AUX's 'when' comes with opcode {when_opcode}, not 2 (UINT)", p)
    rec.fields["when"], p = yield from r.get(read_len, p)
    start = r.base + p
    _, p = yield from module_body(r, p)
    rec.fields["size"] = r.base + p - start
    return p


def _hash_template(r, p, rec):
    rec.fields["template_id"], p = yield from r.get(read_len, p)
    n, p = yield from r.get(read_len, p)
    names = []
    for _ in range(n):
        name, p = yield from r.string(p)
        names.append(name)
    rec.fields["fields"] = names
    r._state.templates.add(rec.fields["template_id"], names)
    return p


def _slot_import(r, p, rec):
    """Valkey 9's SLOT_IMPORT (243 in VALKEY files): job, then slot ranges."""
    rec.name = "SLOT_IMPORT"
    rec.fields["job"], p = yield from r.string(p)
    n, p = yield from r.get(read_len, p)
    ranges = []
    for _ in range(n):
        lo, p = yield from r.get(read_len, p)
        hi, p = yield from r.get(read_len, p)
        ranges.append((lo, hi))
    rec.fields["ranges"] = ranges
    return p


def _key_meta_or_import(r, p, rec):
    if r._state.vendor == types.VALKEY:
        return (yield from _slot_import(r, p, rec))
    raise Corrupt("KEY_META without a key after it", p)


def _df_zero8(r, p, rec):
    """FULLSYNC_END: 8 zero bytes."""
    value, p = yield from r.get(read_u64, p)
    if value:
        r.note("rdb-corrupt", f"FULLSYNC_END is followed by {value:#x}, not 8 zero bytes", rec.offset + 1)
    return p


def _df_journal_offset(r, p, rec):
    rec.fields["lsn"], p = yield from r.get(read_u64, p)
    return p


def _df_journal_blob(r, p, rec):
    rec.fields["entries"], p = yield from r.get(read_len, p)
    at = r.base + p
    blob, p = yield from r.string(p)
    if blob is not None:
        try:
            from ..dragonfly import journal  # (Dragonfly's replication alone sends journal blobs)

            rec.fields["journal"] = journal.read_entries(blob, r.cap)
        except Corrupt as exc:
            r.note("rdb-corrupt", f"journal blob: {exc.args[0]}", at)
    return p


def _df_blob(r: RdbParser, p: int, rec: OpRecord):
    """A compressed blob (§8.2): its content is records, read with this stream's state and
    handed on as they complete, the bytes it inflates to charged to the input's budget."""
    size, q = yield from r.get(read_len, p)
    if size > r.cap:
        r.note("rdb-string-too-long", f"a compressed blob of {size:,} bytes is more than the {r.cap:,} held: "
                                      "passed over", rec.offset)
        return (yield from r.skip(q, size))
    limit = RDB_NESTING.value()
    if r.depth >= limit:
        r.note("rdb-inflate-cap", f"{rec.name} inside {r.depth} compressed blobs, more than the {limit} levels "
                                  "decoded: passed over", rec.offset)
        return (yield from r.skip(q, size))
    data, p = yield from r.get(_raw, q, size)
    child = RdbParser(r._keep, r.cap, nested=r._state, select=r.select, depth=r.depth + 1, measure=r.measure)
    handed = False  # records of the blob were handed on: its own findings come on their own
    problem = None
    try:
        for piece in _inflate(rec.opcode, data, r.cap, lambda n: r.charge(n, rec.name)):
            for item in child.records(piece):  # the content goes to the child as it inflates
                _in_blob(item, rec)
                r._out.append(item)
                if len(r._out) >= FLUSH:
                    handed = True
                    r._need = 0
                    yield  # handed on (see RdbParser.records)
    except OverBudget as exc:
        problem = ("rdb-inflate-cap", exc.args[1])
    except ValueError as exc:
        problem = ("rdb-corrupt", f"{rec.name}: {exc}")
    if problem is None or problem[0] != "rdb-inflate-cap":  # what is left of the content, but a cut it made
        for item in child.close():
            if not isinstance(item, Ending):
                _in_blob(item, rec)
                r._out.append(item)
    if problem is not None:
        if handed:
            r._finding(problem[0], problem[1], rec.offset)
        else:
            r.note(problem[0], problem[1], rec.offset)
    return p


def _in_blob(item, rec: OpRecord) -> None:
    """A record of a blob's content: its offset is the blob's, its own one inside it."""
    if isinstance(item, (KeyRecord, OpRecord)):
        item.blob_offset, item.offset = item.offset, rec.offset


def _raw(buf, p, size):
    if p + size > len(buf):
        raise NeedMore(p + size)
    return bytes(buf[p:p + size]), p + size


def _inflate(opcode: int, data: bytes, cap: int, charge: Callable[[int], None] | None = None) -> Iterator[bytes]:
    """The content of an LZ4 frame or a ZSTD frame, a piece at a time (at most about
    ``INFLATE_PIECE`` bytes, so that a blob that inflates a thousandfold is never held
    whole), each piece given to ``charge`` first (which raises past the input's budget);
    ValueError once it passes ``cap`` bytes, or if the frame is cut short."""
    total = 0
    if opcode == types.DF_LZ4_BLOB:
        import lz4.frame

        dec = lz4.frame.LZ4FrameDecompressor()
        try:
            piece = dec.decompress(data, max_length=INFLATE_PIECE)
            while True:
                total += len(piece)
                if total > cap:
                    raise ValueError(f"the LZ4 frame inflates past the RDB string cap ({cap:,} bytes)")
                if piece:
                    yield from _charged(piece, charge)
                if dec.eof or dec.needs_input:
                    break
                piece = dec.decompress(b"", max_length=INFLATE_PIECE)
        except RuntimeError as exc:
            raise ValueError(f"LZ4 frame: {exc}") from None
        if not dec.eof:
            raise ValueError("the LZ4 frame is cut short")
        return
    import zstandard

    # fed a little at a time: what a piece inflates to (a block of one repeated byte stands
    # for up to 128 KiB in 4 bytes) is handed on and checked before the next; once pieces
    # inflate to more than INFLATE_PIECE, fewer bytes are fed at a time
    dec = zstandard.ZstdDecompressor().decompressobj()
    step = ZSTD_PIECE
    try:
        at = 0
        while at < len(data):
            piece = dec.decompress(data[at:at + step])
            at += step
            total += len(piece)
            if total > cap:
                raise ValueError(f"the ZSTD frame inflates past the RDB string cap ({cap:,} bytes)")
            if len(piece) > INFLATE_PIECE // 2:
                step = ZSTD_SMALL_PIECE
            if piece:
                yield from _charged(piece, charge)
            if dec.eof:
                break
    except zstandard.ZstdError as exc:
        raise ValueError(f"ZSTD frame: {exc}") from None
    if not dec.eof:
        raise ValueError("the ZSTD frame is cut short")


def _charged(piece: bytes, charge: Callable[[int], None] | None) -> Iterator[bytes]:
    """``piece``, charged to the budget first: past it, the part still within it, then
    :class:`OverBudget` again."""
    try:
        if charge is not None:
            charge(len(piece))
    except OverBudget as over:
        if over.args[0]:
            yield piece[:over.args[0]]
        raise
    yield piece


#: inflated bytes of an LZ4 blob handed on at a time, and compressed bytes of a ZSTD blob
#: inflated at a time (see _inflate): 256, or 16 (at most 4 blocks of 128 KiB) once they
#: inflate to more than half a piece
INFLATE_PIECE = 1 << 20
ZSTD_PIECE = 256
ZSTD_SMALL_PIECE = 16


def _df_blob_end(r, p, rec):
    """COMPRESSED_BLOB_END is never on the wire (§8.2)."""
    raise Corrupt("COMPRESSED_BLOB_END (0xcb) is not written to a stream", p - 1)
    yield


def _df_vector_index(r, p, rec):
    rec.fields["index_key"], p = yield from r.string(p)
    rec.fields["enterpoint"], p = yield from r.get(read_len, p)
    n, p = yield from r.get(read_len, p)
    rec.fields["elements"] = n
    for _ in range(n):
        p = yield from r.skip(p, 4 + 8)  # internal id, global id
        level, p = yield from r.get(read_u32, p)
        for _ in range(level + 1):
            links, p = yield from r.get(read_u32, p)
            p = yield from r.skip(p, 4 * links)
    return p


def _df_shard_doc_index(r, p, rec):
    rec.fields["shard_id"], p = yield from r.get(read_len, p)
    rec.fields["index_name"], p = yield from r.string(p)
    n, p = yield from r.get(read_len, p)
    rec.fields["count"] = n
    for _ in range(n):
        _, p = yield from r.string(p)
        _, p = yield from r.get(read_len, p)
    return p


def _df_tagged_chunk(r, p, rec):
    """A continuation of a split entry (§8.4): its stream id and payload, passed over."""
    rec.fields["stream_id"], p = yield from r.get(read_u32, p)
    size, p = yield from r.get(read_u32, p)
    rec.fields["size"] = size
    return (yield from r.skip(p, size))


_OPCODES = {
    types.AUX: _aux, types.SELECTDB: _selectdb, types.RESIZEDB: _resizedb, types.SLOT_INFO: _slot_info,
    types.FUNCTION2: _function2, types.FUNCTION_PRE_GA: _function_pre_ga, types.MODULE_AUX: _module_aux,
    types.HASH_TEMPLATE: _hash_template, types.KEY_META: _key_meta_or_import,
    types.DF_FULLSYNC_END: _df_zero8, types.DF_JOURNAL_OFFSET: _df_journal_offset,
    types.DF_JOURNAL_BLOB: _df_journal_blob, types.DF_LZ4_BLOB: _df_blob, types.DF_ZSTD_BLOB: _df_blob,
    types.DF_BLOB_END: _df_blob_end, types.DF_VECTOR_INDEX: _df_vector_index,
    types.DF_SHARD_DOC_INDEX: _df_shard_doc_index, types.DF_TAGGED_CHUNK: _df_tagged_chunk,
}
