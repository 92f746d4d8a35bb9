"""One Redis connection, as a replica and its master speak on it (spec/rdb.md §12).

:class:`Replication` is the family's session. It follows the handshake (PING, AUTH,
REPLCONF listening-port / ip-address / capa, PSYNC or SYNC; ``+FULLRESYNC <replid>
<offset>`` or ``+CONTINUE``), feeds the RDB payload's pieces to an
:class:`~.rdb.RdbParser` as they come (its keys are the ``rdb`` command's key records, its
findings the RDB rules': truncation, checksum, a key twice in one payload), then gives
each command of the master's stream its replication offset: the offset ``+FULLRESYNC``
named (or the one PSYNC asked to continue from) plus the command stream's bytes before
it. The replica's ``REPLCONF ACK <offset>`` is checked against those: an ACK names the
end of a whole command the master sent before it (``repl-offset-mismatch``), and never
goes back (``repl-ack-regression``).

A Dragonfly replica's connections (§13) are followed by :mod:`.dragonfly` once their first
Dragonfly command or answer shows them (a control connection, or a FLOW connection with
its snapshot and journal), reporting to the capture's correlator (:class:`~.syncs.Syncs`)
when the engine gives one.

Every connection's replies are paired with the commands they answer (:mod:`.pairing`):
what the client sends is a command, what the server sends a reply (a push, a published
message, a MONITOR line), except the master's replication stream; a line from the server
that is no RESP value is a protocol error, never a command.
"""

from __future__ import annotations

from bisect import bisect_left

from ....findings import Finding
from ....framing.framer import RawFrame
from ..rules import REDIS_RULES
from ..dragonfly import replica as dragonfly
from . import pairing
from ..reports import report
from .frames import JournalRecord, PayloadRecord, RespRecord, text
from ..rdb.decoder import RdbParser
from ..rdb.records import KeyRecord
from .resp import RespFrame

#: what a master's stream sends unasked that no reply starts with: a command array of one of
#: these from the server, when no command waits, shows a replication link joined mid-way
STREAM_STARTS = frozenset({b"SELECT", b"PING", b"REPLCONF", b"MULTI"})
#: command boundaries remembered for checking ACKs (an ACK lags the stream by about a second)
MAX_BOUNDS = 1 << 16


def _int(raw: bytes) -> int | None:
    try:
        return int(raw)
    except ValueError:
        return None


class Replication:
    """A Redis connection's session (see the module's docstring)."""

    def __init__(self, options=None, seen_from_start: bool = True, correlator=None, flow=None) -> None:
        self.master: str | None = None  # the direction the master's stream comes in
        self.base: int | None = None  # replication offset at stream offset ``start``
        self.start: int | None = None  # where the command stream begins in the master's direction
        self.resync: int | None = None  # the offset +FULLRESYNC named, until its payload ends
        self.psync: int | None = None  # the offset PSYNC asked to continue from
        self.parser: RdbParser | None = None
        self.summary: report.Summary | None = None
        self.cut = False  # bytes of the payload were lost
        self.payload_from = 0  # the stream offset of the payload's first byte
        self.payload_end = "end mark"  # what ends the payload, as a finding names it
        self.starts: list[int] = []  # replication offsets of the master's commands, first bytes
        self.ends: list[int] = []  # and after their last
        self.sent: int | None = None  # the replication offset after the master's last command
        self.acked: int | None = None
        self.correlator, self.flow = correlator, flow  # the capture's Dragonfly syncs, this connection
        self.dragonfly: dragonfly.Control | dragonfly.Flow | None = None
        self.pairing = pairing.Pairing()
        self.link = False  # a replication link: the replica ACKs (what the master sends unasked are commands)
        #: the payload's keys are read with their values, and digested (Options.data)
        self.data = bool(getattr(options, "data", False))
        self.digester = None

    # -- the Session interface -------------------------------------------------------------

    def decode(self, raw: RawFrame, direction: str | None, ts, index) -> RespRecord | PayloadRecord | JournalRecord:
        kind = raw.kind if isinstance(raw, RespFrame) else "value"
        if kind.startswith("payload"):
            if isinstance(self.dragonfly, dragonfly.Flow):
                return self.dragonfly.payload(raw)
            return self._payload(raw, direction, kind)
        if kind == "journal":
            if not isinstance(self.dragonfly, dragonfly.Flow):
                self.dragonfly = dragonfly.Flow(self.correlator, self.flow, None)
            return self.dragonfly.journal(raw)
        if kind == "error":
            rec = RespRecord(raw.offset, len(raw.data), "invalid", None)
            rec.findings.append(REDIS_RULES["resp-protocol-error"].finding(raw.reason, raw.offset))
            return rec
        value = raw.value if isinstance(raw, RespFrame) else None
        type_ = kind if kind in ("inline", "keepalive") else (value[0] if value else "invalid")
        rec = RespRecord(raw.offset, len(raw.data), type_, value, raw.truncated)
        if raw.truncated:
            what = {"c2s": "a command", "s2c": "a reply"}.get(direction or "", "a RESP frame")
            rec.findings.append(REDIS_RULES["resp-truncated"].finding(
                f"the capture ends {len(raw.data)} bytes into {what} (bytes {raw.offset} to "
                f"{raw.offset + len(raw.data)} of its direction)", raw.offset))
            if direction == "s2c":
                rec.role = "reply"
        if value is None:
            return rec
        if direction == "s2c" and kind == "inline":
            rec.type, rec.command, rec.is_request, rec.role = "invalid", None, False, "invalid"
            rec.name = "invalid"
            rec.findings.append(REDIS_RULES["resp-protocol-error"].finding(
                f"the server sent a line that is no RESP reply: {text(raw.data, 60)}", raw.offset))
            return rec
        if direction in ("c2s", "s2c") and kind != "keepalive":
            self._pair(rec, direction, ts, index)
        self._judge(rec, direction, index)
        return rec

    def gap(self) -> None:
        """Bytes were lost (a direction's framer says where; offsets stay exact across them)."""

    def finish(self) -> list[Finding]:
        return []

    # -- commands and their replies -------------------------------------------------------

    def _pair(self, rec: RespRecord, direction: str, ts: float | None, index: int | None) -> None:
        """A command remembered, or a reply given the command it answers (pairing.py)."""
        if direction == "c2s":
            if rec.command is not None:
                rec.role = "command"
                if rec.verb == b"REPLCONF" and rec.args[:1] and rec.args[0].upper() == b"ACK":
                    self.link = True
                self.pairing.command(rec.command, rec.name, index or 0, ts)
            return
        if self._streamed(rec, direction):
            rec.role = "command"
            return
        role, waiting = self.pairing.reply(rec.value)
        rec.as_reply(role)
        if waiting is not None:
            rec.reply_to, rec.answers = waiting.frame, waiting.name
            if ts and waiting.ts and ts >= waiting.ts:
                rec.latency_ms = round((ts - waiting.ts) * 1000, 3)

    def _streamed(self, rec: RespRecord, direction: str) -> bool:
        """Whether a command-shaped frame from the server is the master's replication stream."""
        if rec.command is None:
            return False
        if direction == self.master and self.start is not None and rec.offset >= self.start:
            return True
        if not self.link and not self.pairing.waiting and rec.verb in STREAM_STARTS:
            self.link = True  # a master's stream joined mid-way, before the replica's first ACK
        return self.link and not self.pairing.waiting

    # -- the handshake, the stream and ACKs ----------------------------------------------------

    def _judge(self, rec: RespRecord, direction: str | None, index: int | None = None) -> None:
        if direction == self.master and self.start is not None and rec.offset >= self.start:
            self._stream(rec)
            return
        if self.dragonfly is None:
            self.dragonfly = dragonfly.start(rec, direction, index, self.correlator, self.flow)
        if self.dragonfly is not None and self.dragonfly.judge(rec, direction, index):
            return
        verb, args = rec.verb, rec.args
        if verb == b"PSYNC" and len(args) >= 2:
            offset = _int(args[1])
            self.psync = offset if offset is not None and offset > 0 else None
            rec.fields.update(replid=args[0].decode("latin-1")[:40], psync_offset=offset)
        elif verb == b"REPLCONF" and args and args[0].upper() == b"ACK" and len(args) >= 2:
            self._ack(rec, args)
        elif rec.type == "+" and isinstance(rec.value[1], bytes):
            words = rec.value[1].split()
            if words and words[0] == b"FULLRESYNC" and len(words) >= 3:
                self.master = direction
                self.resync = _int(words[2])
                rec.fields.update(replid=words[1].decode("latin-1")[:40], master_offset=self.resync)
            elif words and words[0] == b"CONTINUE":
                self.master = direction
                self._begin(rec.offset + rec.size, None if self.psync is None else self.psync - 1)
                if len(words) > 1:
                    rec.fields["replid"] = words[1].decode("latin-1")[:40]

    def _begin(self, start: int, base: int | None) -> None:
        """The command stream begins at ``start`` in the master's direction."""
        self.start, self.base = start, base
        self.starts, self.ends = [], []
        self.sent = base

    def _stream(self, rec: RespRecord) -> None:
        if self.base is None:
            return
        rec.repl_offset = begin = self.base + rec.offset - self.start
        end = begin + rec.size
        if len(self.ends) >= MAX_BOUNDS:
            del self.starts[:MAX_BOUNDS // 2], self.ends[:MAX_BOUNDS // 2]
        self.starts.append(begin)
        self.ends.append(end)
        self.sent = end

    def _ack(self, rec: RespRecord, args: list[bytes]) -> None:
        offset = _int(args[1])
        rec.fields["ack_offset"] = offset
        if len(args) >= 4 and args[2].upper() == b"FACK":
            rec.fields["fack_offset"] = _int(args[3])
        if offset is None:
            return
        if self.acked is not None and offset < self.acked:
            rec.findings.append(REDIS_RULES["repl-ack-regression"].finding(
                f"REPLCONF ACK {offset} after an ACK of {self.acked}", rec.offset))
        self.acked = offset if self.acked is None else max(self.acked, offset)
        problem = self._ack_problem(offset)
        if problem:
            rec.findings.append(REDIS_RULES["repl-offset-mismatch"].finding(problem, rec.offset))

    def _ack_problem(self, offset: int) -> str:
        """What is wrong with an ACK of ``offset``, given the master's commands so far."""
        if self.base is None:
            return ""
        if offset > self.sent:
            return (f"REPLCONF ACK {offset}: the master had sent up to offset {self.sent} ({self.base} after "
                    f"the resync and {self.sent - self.base} bytes of commands)")
        if offset == self.base or not self.ends or offset < self.starts[0]:
            return ""
        i = bisect_left(self.ends, offset)
        if i < len(self.ends) and self.ends[i] == offset:
            return ""
        if i < len(self.starts) and self.starts[i] < offset:
            return (f"REPLCONF ACK {offset} falls inside the command at offset {self.starts[i]} to {self.ends[i]} "
                    f"(an ACK counts whole commands)")
        return ""  # in bytes the capture did not show as commands: nothing to check against

    # -- the RDB payload ------------------------------------------------------------------

    def _payload(self, raw: RespFrame, direction: str | None, kind: str) -> PayloadRecord:
        if kind == "payload-start":
            self.pairing.take(b"SYNC")
            form, what = raw.value
            head = {"form": form, "payload_length": what} if form == "length" else {"form": form, **_mark(what)}
            rec = PayloadRecord(raw.offset, len(raw.data), head)
            rec.repl_offset = self.resync
            self.master = self.master or direction
            self.parser = RdbParser(keep=self.data)
            self.summary = report.Summary("replication payload")
            self.digester = None
            if self.data:
                from ..rdb.digest import Digester

                self.digester = Digester()
                self.summary.digest = self.digester.snapshot
            self.cut = False
            self.payload_from = raw.offset + len(raw.data)
            self.payload_end = "end mark" if form == "eof" else f"last of its {what:,} bytes"
            return rec
        rec = PayloadRecord(raw.offset, len(raw.data), truncated=raw.truncated)
        if kind == "payload-end" or raw.last:
            self._payload_data(rec, raw, True)
            self._begin(raw.offset + len(raw.data), self.resync)
            self.resync = None
        else:
            self._payload_data(rec, raw, False)
        return rec

    def _payload_data(self, rec: PayloadRecord, raw: RespFrame, last: bool) -> None:
        parser, summary = self.parser, self.summary
        if parser is None:  # the payload's start was not seen
            return
        if raw.resumed and not self.cut:  # the decoder cannot go on past lost bytes
            self.cut = True
        got = []
        if not self.cut and raw.kind == "payload":
            got = parser.feed(raw.data)
        ended = not (last and raw.truncated)
        if last:
            if not self.cut:
                got += parser.close()
            if not ended:
                got.append(report.unended(self.payload_end, raw.offset + len(raw.data) - self.payload_from))
            self.parser = None
        digester = self.digester
        for r in got:
            summary.add(r)
            if digester is not None:
                if isinstance(r, KeyRecord):
                    r.extra["digest"] = digester.key(r)
                else:
                    digester.see(r)
        rec.add(got, self.data)
        if last:
            rec.summary = report.payload_json(summary, got, self.cut, ended=ended)


def _mark(mark: bytes) -> dict[str, str]:
    """A diskless payload's end mark as it was sent: text (Redis sends 40 random hex digits),
    or as hex when it is not printable ASCII."""
    text = mark.decode("ascii", "replace")
    return {"mark": text} if mark.isascii() and text.isprintable() else {"mark_hex": mark.hex()}
