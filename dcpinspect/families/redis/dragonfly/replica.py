"""Dragonfly's side of a Redis-family connection (spec/rdb.md §13): a replica's control
connection, or one of its FLOW connections.

:class:`Control` reads the control connection: ``REPLCONF capa dragonfly`` and its answer
(``*5 +<master replid> +SYNC<n> :<flows> :<version> +<lineage id>``, three elements from
masters before 1.4), ``DFLY SYNC`` / ``STARTSTABLE`` / ``TAKEOVER <timeout> [SAVE]
SYNC<n>`` and ``DFLY REPLICAOFFSET`` with its per-shard LSNs, each as fields of its frame,
and tells the capture's :class:`~.syncs.Syncs` of the sync announced and started.

:class:`Flow` reads a ``DFLY FLOW <replid> SYNC<n> <i> [<lsn> | <last master id>
<lsn0-lsn1-…>]`` connection: the master's ``*2 +FULL|+PARTIAL +<eof token>``; after FULL
the shard's RDB, which the framer hands over in pieces up to the eof token, fed to an
:class:`~.rdb.RdbParser` (its keys are the ``rdb`` command's key records and go to the
correlator; FULLSYNC_END, JOURNAL_BLOB and JOURNAL_OFFSET are rows of their own); then
the stable-sync journal, a record a frame, each given its LSN: the JOURNAL_OFFSET of the
snapshot (or the LSN a partial sync asked for) is the first record's, every record but an
LSN op takes the next, and an LSN op says which the last one was (the replica's
``TransactionReader`` counts so). Its rules: ``dfly-lsn-gap`` / ``dfly-lsn-repeat`` (an LSN
op that disagrees with the records before it), ``dfly-fullsync-end-missing`` (a snapshot
that reaches JOURNAL_OFFSET or its end without FULLSYNC_END); the snapshot's own are the RDB
rules (``rdb-duplicate-key`` for a key twice in one flow, ...).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ....findings import Finding
from ..rules import DFLY_RULES, REDIS_RULES
from ..reports import report
from ..replication.frames import JournalRecord, PayloadRecord, RespRecord, text
from .journal import LSN
from ..rdb.decoder import RdbParser
from ..rdb.records import Ending, KeyRecord, OpRecord
from ..replication.resp import RespFrame, flow_answer
from ..rdb.types import DF_FULLSYNC_END, DF_JOURNAL_OFFSET

#: replies remembered as owed to the replica's commands on a control connection
MAX_ASKED = 256
#: the longest master replid, sync id and eof token shown
ID_CHARS = 64


def _int(raw: bytes) -> int | None:
    try:
        return int(raw)
    except ValueError:
        return None


def _id(raw: bytes) -> str:
    return text(raw, ID_CHARS)


def capa_answer(value: tuple | None) -> dict[str, Any] | None:
    """The fields of an answer to ``REPLCONF capa dragonfly`` (None when it is not one)."""
    if value is None or value[0] != "*" or not isinstance(value[1], list) or not 3 <= len(value[1]) <= 5:
        return None
    items = value[1]
    (t1, replid), (t2, sync), (t3, flows) = items[:3]
    if t1 != "+" or t2 != "+" or t3 != ":" or not replid or not sync.startswith(b"SYNC"):
        return None
    out: dict[str, Any] = {"master_replid": _id(replid), "sync_id": _id(sync), "flows": flows}
    if len(items) > 3 and items[3][0] == ":":
        out["dfly_version"] = items[3][1]
    if len(items) > 4 and items[4][0] == "+" and isinstance(items[4][1], bytes):
        out["lineage_id"] = _id(items[4][1])
    return out


def start(rec: RespRecord, direction: str | None, index: int | None, correlator, conn) -> "Control | Flow | None":
    """The Dragonfly side of a connection, if ``rec`` shows it is one (a replica's
    ``REPLCONF capa dragonfly``, ``DFLY`` command, or a master's answer to either)."""
    verb, args = rec.verb, rec.args
    if verb == b"DFLY" and args and args[0].upper() == b"FLOW":
        return Flow(correlator, conn, direction)
    if verb == b"DFLY" or (verb == b"REPLCONF" and [a.lower() for a in args] == [b"capa", b"dragonfly"]):
        return Control(correlator, conn, direction)
    if rec.value is not None and rec.command is None and capa_answer(rec.value) is not None:
        return Control(correlator, conn, None)
    if rec.value is not None and flow_answer(rec.value) is not None:
        return Flow(correlator, conn, None)
    return None


class Control:
    """A Dragonfly replica's control connection (see the module's docstring)."""

    def __init__(self, correlator, conn, replica: str | None) -> None:
        self.correlator, self.conn = correlator, conn
        self.replica = replica  # the direction the replica's commands come in
        self.asked: deque[bytes] = deque(maxlen=MAX_ASKED)
        self.sync: tuple[str, str] | None = None  # (master replid, sync id) announced

    def judge(self, rec: RespRecord, direction: str | None, index: int | None) -> bool:
        """Fields of a frame of the control connection; whether the Redis handshake's rules
        have nothing more to say of it."""
        if rec.command is not None and direction != self._master(direction):
            if self.replica is None:
                self.replica = direction
            return self._command(rec, index)
        asked = self.asked.popleft() if self.asked else None
        fields = capa_answer(rec.value) if rec.value is not None else None
        if fields is not None:
            rec.fields.update(fields)
            self.sync = (fields["master_replid"], fields["sync_id"])
            flows = fields["flows"] if isinstance(fields["flows"], int) and fields["flows"] >= 0 else None
            if self.correlator is not None and index is not None:
                self.correlator.announce(self.conn, index, *self.sync, flows)
            return True
        if asked is None or not asked.startswith(b"DFLY "):
            return False
        rec.fields["answers"] = asked.decode("ascii")
        if asked == b"DFLY REPLICAOFFSET" and rec.type == "*":
            lsns = [v for t, v in rec.value[1] if t == ":"]
            if len(lsns) == len(rec.value[1]):
                rec.fields["lsns"] = lsns
        return True

    def _master(self, direction: str | None) -> str | None:
        """The master's direction, once the replica's is known."""
        if self.replica is None or direction is None:
            return None
        return "s2c" if self.replica == "c2s" else "c2s"

    def _command(self, rec: RespRecord, index: int | None) -> bool:
        verb, args = rec.verb, rec.args
        if verb != b"DFLY" or not args:
            self.asked.append(verb)
            return verb == b"REPLCONF" and [a.lower() for a in args] == [b"capa", b"dragonfly"]
        sub = args[0].upper()
        self.asked.append(b"DFLY " + sub[:32])
        if sub in (b"SYNC", b"STARTSTABLE") and len(args) >= 2:
            rec.fields["sync_id"] = _id(args[1])
            if self.correlator is not None and index is not None and self.sync is not None \
                    and rec.fields["sync_id"] == self.sync[1]:
                self.correlator.start(index, *self.sync)
        elif sub == b"TAKEOVER" and len(args) >= 3:
            rec.fields["timeout_s"] = _number(args[1])
            rec.fields["save"] = any(a.upper() == b"SAVE" for a in args[2:-1])
            rec.fields["sync_id"] = _id(args[-1])
        return True


def _number(raw: bytes) -> float | None:
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


class Flow:
    """A Dragonfly FLOW connection (see the module's docstring)."""

    def __init__(self, correlator, conn, replica: str | None) -> None:
        self.correlator, self.conn = correlator, conn
        self.replica = replica
        self.replid: str | None = None
        self.sync_id: str | None = None
        self.index: int | None = None
        self.asked_lsn: int | None = None  # the LSN a partial sync asked to go on from
        self.full: bool | None = None  # FULL (True) or PARTIAL (False), once answered
        self.parser: RdbParser | None = None
        self.summary: report.Summary | None = None
        self.payload_from: int | None = None  # the stream offset of the snapshot's first byte
        self.cut = False  # bytes of the snapshot were lost
        self.ended = False  # the snapshot's end (the eof token) was reached
        self.fullsync_end: int | None = None  # offset of FULLSYNC_END in the snapshot
        self.missing_said = False
        self.next_lsn: int | None = None  # the LSN the next journal record has
        self.last_lsn_op: int | None = None
        self.db: int | None = None

    @property
    def ids(self) -> dict[str, Any]:
        """Which sync and flow its records belong to."""
        out: dict[str, Any] = {}
        if self.sync_id is not None:
            out["sync_id"] = self.sync_id
        if self.index is not None:
            out["flow_id"] = self.index
        return out

    # -- the FLOW command and its answer ------------------------------------------------------

    def judge(self, rec: RespRecord, direction: str | None, index: int | None) -> bool:
        verb, args = rec.verb, rec.args
        if verb == b"DFLY" and args and args[0].upper() == b"FLOW":
            self.replica = direction
            self._flow(rec, args[1:], index)
            return True
        answer = flow_answer(rec.value) if rec.value is not None and direction != self.replica else None
        if answer is not None:
            directive, token = answer
            self.full = directive == b"FULL"
            rec.command, rec.is_request = None, False
            rec.name = "*" + directive.decode()
            rec.fields.update(sync_type=directive.decode(), eof_token=_id(token), **self.ids)
            if self.full:
                self.parser = RdbParser(keep=False)
                self.summary = report.Summary("flow snapshot")
            else:
                self.next_lsn = self.asked_lsn
            return True
        return False

    def _flow(self, rec: RespRecord, args: list[bytes], index: int | None) -> None:
        fields = rec.fields
        if len(args) >= 3:
            self.replid, self.sync_id, self.index = _id(args[0]), _id(args[1]), _int(args[2])
            fields.update(master_replid=self.replid, sync_id=self.sync_id, flow_id=self.index)
        if len(args) == 4:
            self.asked_lsn = _int(args[3])
            fields["lsn"] = self.asked_lsn
        elif len(args) >= 5:
            fields["last_master_id"] = _id(args[3])
            lsns = [_int(x) for x in args[4].split(b"-")[:1024]]
            fields["lsns"] = lsns
            if self.index is not None and 0 <= self.index < len(lsns):
                self.asked_lsn = lsns[self.index]
        if self.correlator is not None and index is not None and self.index is not None and self.index >= 0:
            self.correlator.flow(self.conn, index, self.replid, self.sync_id, self.index)

    # -- the snapshot (FULL) -------------------------------------------------------------------

    def payload(self, raw: RespFrame) -> PayloadRecord:
        """A piece of the shard's RDB (``payload``), or the eof token after it (``payload-end``)."""
        last = raw.kind == "payload-end" or raw.last
        rec = PayloadRecord(raw.offset, len(raw.data), truncated=raw.truncated)
        parser = self.parser
        if parser is None:
            return rec
        if self.payload_from is None:
            self.payload_from = raw.offset
        if raw.resumed:
            self.cut = True  # the decoder cannot go on past lost bytes
        got: list = []
        if not self.cut and raw.kind == "payload":
            got = parser.feed(raw.data)
        ended = not (last and raw.truncated)
        if last:
            if not self.cut:
                got += parser.close()
            if not ended:
                got.append(report.unended("eof token", raw.offset + len(raw.data) - (self.payload_from or 0)))
            self.parser = None
            self.ended = True
        for r in got:
            self._record(r)
            self.summary.add(r)
        if last and not self.cut and self.fullsync_end is None:
            ending = next((r for r in got if isinstance(r, Ending)), None)
            if ending is not None and ending.eof_offset is not None:
                self._missing(rec.findings, "the snapshot ends (EOF at offset "
                                            f"{ending.eof_offset}) without FULLSYNC_END", ending.eof_offset)
        rec.add(got)
        if last:
            rec.summary = report.payload_json(self.summary, got, self.cut, self.ids, ended=ended)
        return rec

    def _record(self, r) -> None:
        if isinstance(r, KeyRecord):
            if self.correlator is not None and self.index is not None and self.sync_id is not None:
                self.correlator.key(self.replid, self.sync_id, self.index, r.db, r.key, r.offset)
        elif isinstance(r, OpRecord):
            if r.opcode == DF_FULLSYNC_END:
                self.fullsync_end = r.offset
            elif r.opcode == DF_JOURNAL_OFFSET:
                lsn = r.fields.get("lsn")
                self.next_lsn = lsn
                if self.fullsync_end is None:
                    self._missing(r.findings, f"JOURNAL_OFFSET {lsn} (stable sync) comes before any FULLSYNC_END",
                                  r.offset)

    def _missing(self, findings: list[Finding], message: str, offset: int | None) -> None:
        if not self.missing_said:
            self.missing_said = True
            findings.append(DFLY_RULES["dfly-fullsync-end-missing"].finding(message, offset))

    # -- the journal of stable sync ---------------------------------------------------------

    def journal(self, raw: RespFrame) -> JournalRecord:
        entry = raw.value
        size = entry.length if entry is not None and not raw.data else len(raw.data)
        rec = JournalRecord(raw.offset, size, entry, raw.truncated)
        rec.fields.update(self.ids)
        if raw.reason and entry is not None:
            rec.fields["passed_over"] = raw.reason
        if entry is None:
            if raw.truncated:
                rec.findings.append(REDIS_RULES["resp-truncated"].finding(
                    f"the stream ends {len(raw.data)} bytes into a journal record", raw.offset))
            return rec
        if raw.resumed:  # records were lost: the count starts again at the next LSN op
            self.next_lsn = None
        if entry.dbid is not None:
            self.db = entry.dbid
        if entry.args:
            rec.db = self.db
        if entry.op == LSN:
            rec.lsn = entry.lsn
            self._lsn_op(rec, entry.lsn)
        else:
            rec.lsn = self.next_lsn
            if self.next_lsn is not None:
                self.next_lsn += 1
        return rec

    def _lsn_op(self, rec: JournalRecord, lsn: int) -> None:
        """An LSN op names the LSN of the last record before it."""
        last = None if self.next_lsn is None else self.next_lsn - 1
        before = self.last_lsn_op
        if last is not None and lsn > last:
            rec.findings.append(DFLY_RULES["dfly-lsn-gap"].finding(
                f"LSN op {lsn}, yet the flow's records reach LSN {last}: {lsn - last} records skipped", rec.offset))
        elif last is not None and lsn < last:
            rec.findings.append(DFLY_RULES["dfly-lsn-repeat"].finding(
                f"LSN op {lsn}, yet the flow's records already reach LSN {last}: {last - lsn} records "
                "repeated", rec.offset))
        elif before is not None and lsn <= before and last is None:
            rec.findings.append(DFLY_RULES["dfly-lsn-repeat"].finding(
                f"LSN op {lsn} after LSN op {before}: the numbering does not go up", rec.offset))
        self.last_lsn_op = lsn
        self.next_lsn = lsn + 1
