"""Two processes for one RDB file's ``rdb --format jsonl --values`` and ``--format resp``.

Writing a key's value as JSON with its digest as the server computes it, or as Redis
commands, costs several times what reading the key costs, and a file's keys can only be
found by reading it from the start. So both processes read the whole file, and each writes
the keys of part of it: the file is cut into stripes of :data:`STRIPE` bytes by the offset
at which each key's record starts; of every :data:`WAYS` stripes, this process writes the
keys of those in :data:`MINE`, a helper forked from it those in :data:`HELPERS`
(``RdbParser``'s ``stripe``: the other keys are read without being written).

Both write to the same output, in turns (:class:`Turns`). A turn is a run of records whose
keys are one process's; a record that is no key (an aux field, a function, a finding)
belongs to the turn it comes in. The two processes' turns alternate; a thread of each
writes its process's turns whole, each once the other process has written the turn before
it and said so through a pipe, while the process reads on, up to :data:`AHEAD` turns
ahead of its writing. So no output goes from one process to the other, and the output is
byte for byte that of one process: each key's line in the file's order, with everything
that is not a key where one process writes it. The message that hands a turn on carries
the turn's number, which the other process checks against its own count (both must agree
on where each turn starts), and, for RESP, the db the output is in after it: whether the
first key of the next turn needs a ``SELECT`` is settled as that turn is written. A helper
that stops, or a turn that does not match, stops the run with an error, never with a wrong
or a missing key.

This process alone counts what is not a key (aux fields, findings, the end) and writes the
last line (jsonl's summary) or the account on stderr (resp), once the helper has sent what
it counted of its keys: their summary (:meth:`~.report.Summary.keys_part`), and (jsonl)
their part of the snapshot's digest, or (resp) the keys, commands and skipped keys.

Only a regular file, not gzip, of at least :data:`LEAST` bytes, written to an output with
a file descriptor, on a machine with two processors or more, is shared so (``--jobs 1``
keeps it to one process, ``--jobs 2`` shares any file that can be read again).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import struct
import threading

from ....sources.inputs import InputError, gzipped

#: bytes of the file a stripe covers (by the offset at which a key's record starts)
STRIPE = 1 << 20
#: the least file shared between two processes (below, the fork costs more than it saves)
LEAST = 64 << 20
#: the stripes come in turns of WAYS: this process writes the keys of the stripes whose bit
#: is in MINE, the helper those in HELPERS (this process also reads and counts everything
#: that is no key, and writes the last line: so the helper takes the larger share)
WAYS = 2
MINE, HELPERS = 0b01, 0b10
#: turns a process may have ready before it writes them (each some 2 MB of output a stripe)
AHEAD = 8
#: a message from one process to the other: the turn it wrote (-1: what the helper counted,
#: last), the db the output is in after it (-1: none yet), the bytes that follow
HEAD = struct.Struct("<qqQ")
#: the output's db in a turn until its first key: settled as the turn is written
TURN = object()
#: the helper's exit status when the output was closed
CLOSED = 3


def owns(mask: int, offset: int) -> bool:
    """Whether the process of ``mask`` (:data:`MINE` or :data:`HELPERS`) writes the key whose
    record starts at ``offset`` (what ``RdbParser``'s ``stripe`` says the C lane of it)."""
    return mask >> (offset // STRIPE % WAYS) & 1 == 1


def processors() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def shared_path(path, jobs: int) -> str | None:
    """The path the helper opens when the file ``path`` (a path, or the input opened
    already) is to be shared between two processes (``jobs``: 0 as the machine and the
    file's size say, 1 never, 2 or more whenever it can), else None."""
    if jobs == 1:
        return None
    if isinstance(path, (str, os.PathLike)):
        name = os.fspath(path)
        if gzipped(name):
            return None
    else:
        name = getattr(path, "path", None)
        if name is None or getattr(path, "gzipped", True):
            return None
    try:
        size = os.stat(name).st_size
    except OSError:
        return None
    if jobs == 0 and (processors() < 2 or size < LEAST):
        return None
    return name


def _exactly(fd: int, n: int) -> bytes | None:
    """``n`` bytes read from ``fd``, or None at its end."""
    parts, left = [], n
    while left:
        got = os.read(fd, left)
        if not got:
            return None
        parts.append(got)
        left -= len(got)
    return b"".join(parts)


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Turns:
    """One process's side of the turns: whose each key is (:meth:`key`; :attr:`ours`: whether
    the records now are this process's to write), the output of its turn (:meth:`write`,
    or the ``exporter``'s), and the thread that writes its turns to ``fd`` as the other
    process hands them on through ``rx`` and is handed them through ``tx`` (file
    descriptors); ``mask``: :data:`MINE` or :data:`HELPERS`."""

    def __init__(self, fd: int, rx: int, tx: int, mask: int, exporter=None, failed=None) -> None:
        self.fd, self.rx, self.tx, self.mask = fd, rx, tx, mask
        self.turn = 0
        self.ours = mask & 1 == 1  # (turn 0, where the file starts, is the first process's)
        self.out = bytearray()
        self.exporter = exporter
        #: SELECTs the writer put before a turn's first key (resp: counted as commands)
        self.selects = 0
        #: what an end of the pipe ``rx`` means (the other process stopped): an InputError
        self._ended = failed or (lambda: InputError("the other process stopped"))
        self._select_at: tuple[int, int] | None = None
        self._queue: queue.Queue = queue.Queue(AHEAD)
        self._failed: BaseException | None = None
        if exporter is not None:
            exporter.write = self.out.extend
            exporter.turn_start = self._first_select
        self._thread = threading.Thread(target=self._write_turns, daemon=True)
        self._thread.start()

    def key(self, offset: int) -> bool:
        """Whether the key whose record starts at ``offset`` is this process's to write; a
        new turn starts where that changes."""
        mine = owns(self.mask, offset)
        if mine != self.ours:
            if self.ours:
                self._hand_on()
            elif self.exporter is not None:  # (the db the output is in is known as the turn is written)
                self.exporter.db = TURN
            self.ours = mine
            self.turn += 1
        return mine

    @staticmethod
    def stripe_of(offset: int) -> tuple[int, int]:
        """Where the stripe of ``offset`` starts and ends (its keys are one process's)."""
        start = offset - offset % STRIPE
        return start, start + STRIPE

    def write(self, data: bytes) -> None:
        self.out += data

    def finish(self) -> None:
        """The last turn handed on, and every turn written."""
        if self.ours:
            self._hand_on()
        self._queue.put(None)
        self._thread.join()
        if self._failed is not None:
            raise self._failed

    def handed(self, turn: int) -> tuple[int, bytes]:
        """The other process's message that it wrote ``turn`` (-1: what it counted): the db
        the output is in after it and the bytes that came with it."""
        head = _exactly(self.rx, HEAD.size)
        if head is None:
            raise self._ended()
        got, db, size = HEAD.unpack(head)
        body = _exactly(self.rx, size) if size else b""
        if body is None:
            raise self._ended()
        if got != turn:
            what = "its last turn" if got < 0 else f"its turn {got:,}"
            raise InputError(f"the second process reading it does not agree with this one: it wrote {what} where "
                             f"this process waited for turn {turn:,}; read it with --jobs 1")
        return db, body

    def send(self, turn: int, db: int, body: bytes = b"") -> None:
        try:
            _write_all(self.tx, HEAD.pack(turn, db, len(body)) + body)
        except BrokenPipeError:
            pass  # (the other process ended: it needs no more turns, or it says why)

    # ------------------------------------------------------------------ inside

    def _first_select(self, db: int) -> None:
        """(the Exporter, at the first key of a turn) whether ``SELECT db`` goes before it is
        the writer's to say, by the db the output is in when the turn is written."""
        self._select_at = (db, len(self.out))

    def _hand_on(self) -> None:
        if self._failed is not None:
            raise self._failed
        exporter = self.exporter
        db = -1
        if exporter is not None:
            db = exporter.db if exporter.db is not TURN and exporter.db is not None else -2
        self._queue.put((self.turn, self.out, self._select_at, db))
        self.out = bytearray()
        self._select_at = None
        if exporter is not None:
            exporter.write = self.out.extend

    def _write_turns(self) -> None:
        """(the writer's thread) Each turn, once the other process wrote the one before."""
        db = -1
        try:
            while True:
                item = self._queue.get()
                if item is None:
                    return
                turn, data, first, after = item
                if turn:
                    db, _ = self.handed(turn - 1)
                if first is not None and first[0] != db:
                    from .export import command

                    data[first[1]:first[1]] = command(b"SELECT", b"%d" % first[0])
                    self.selects += 1
                _write_all(self.fd, data)
                db = db if after == -2 else after
                self.send(turn, db)
        except BaseException as exc:
            self._failed = exc
            while self._queue.get() is not None:  # (the reading side learns of it at its next turn)
                pass


class Helper:
    """The forked helper that writes the keys of its stripes of the file ``name`` as ``fmt``
    ("jsonl" with values, or "resp") to ``fd`` in turns with this process, and this
    process's side of it (:meth:`turns`, :meth:`finish`, and :meth:`close` whatever
    happens)."""

    @property
    def stripe(self) -> tuple[int, int, int]:
        """RdbParser's stripe for this process's keys."""
        return STRIPE, MINE, WAYS

    def __init__(self, name: str, fmt: str, fd: int, label: str) -> None:
        self.name = name
        to_helper = os.pipe()
        from_helper = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the helper: never back into the caller's code
            os.close(to_helper[1])
            os.close(from_helper[0])
            os._exit(_serve(name, fd, to_helper[0], from_helper[1], fmt, label))
        os.close(to_helper[0])
        os.close(from_helper[1])
        self._rx, self._tx = from_helper[0], to_helper[1]
        self._done = False
        self._turns: Turns | None = None

    def turns(self, fd: int, exporter=None) -> Turns:
        """This process's side of the turns."""
        self._turns = Turns(fd, self._rx, self._tx, MINE, exporter, self._stopped)
        return self._turns

    def finish(self) -> dict:
        """What the helper counted (see :func:`_serve`), once every turn was written."""
        turns = self._turns
        turns.finish()
        last = turns.turn
        if not turns.ours:  # the last turn was the helper's
            turns.handed(last)
        _, body = turns.handed(-1)
        counted = json.loads(body)
        if counted["turns"] != last:
            raise InputError(f"{self.name}: the second process reading it does not agree with this one: it counted "
                             f"{counted['turns']:,} turns and this process {last:,}; read it with --jobs 1")
        _, status = os.waitpid(self.pid, 0)
        self._done = True
        if status != 0:
            raise InputError(f"{self.name}: the second process reading it ended with status {status}")
        return counted

    def close(self) -> None:
        """The helper stopped (if it is still running) and its pipes closed."""
        if not self._done:
            self._done = True
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
        for fd in (self._rx, self._tx):
            try:
                os.close(fd)
            except OSError:
                pass

    def _stopped(self) -> Exception:
        _, status = os.waitpid(self.pid, 0)
        self._done = True
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == CLOSED or (
                os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGPIPE):
            return BrokenPipeError("the output was closed")
        return InputError(f"{self.name}: the second process reading it stopped before its last turn (status {status})")


def _serve(name: str, fd: int, rx: int, tx: int, fmt: str, label: str) -> int:
    """(the helper) The keys of its stripes of ``name`` as ``fmt`` to ``fd``, in turns with
    the first process (through ``rx`` and ``tx``), then what it counted: its keys'
    ``summary`` (:meth:`~.report.Summary.keys_part`: the other process adds none of them to
    its own), the turns, and (jsonl) their part of the snapshot's digest, ``per_db`` and
    ``unknown``, or (resp) the ``keys``, ``commands`` and ``skipped`` keys; the process's
    exit status."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # (interrupted with the run: no traceback)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # (an output closed is a BrokenPipeError, as in this process)
        from . import snapshots
        from .report import Summary

        summary = Summary(label)
        if fmt == "resp":
            from .export import Exporter

            exporter = Exporter(None, snapshots.said_not_exported)
            turns = Turns(fd, rx, tx, HELPERS, exporter)
            snapshots.export(lambda exp: snapshots.records(name, True, None, stripe=(STRIPE, HELPERS, WAYS),
                                                           resp=exp),
                             summary, None, turns=turns, exporter=exporter)
            turns.finish()
            counted = {"keys": exporter.keys, "commands": exporter.commands + turns.selects,
                       "skipped": exporter.skipped}
        else:
            from ..rdb.digest import Digester

            digester = Digester()
            turns = Turns(fd, rx, tx, HELPERS)
            snapshots.write_jsonl(snapshots.records(name, True, None, lines=digester.snapshot,
                                                    stripe=(STRIPE, HELPERS, WAYS)),
                                  label, summary, digester, turns)
            turns.finish()
            snapshot = digester.snapshot
            counted = {"per_db": {str(db): f"{v:x}" for db, v in snapshot.per_db.items()},
                       "unknown": snapshot.unknown}
        turns.send(-1, -1, json.dumps({**counted, "summary": summary.keys_part(), "turns": turns.turn}).encode())
        return 0
    except BrokenPipeError:
        return CLOSED  # (the output was closed: the first process stops as it would alone)
    except InputError:
        return 0  # (the first process stopped, or it reads the same and says why)
    except BaseException as exc:  # (its own message, unbuffered: the caller's stderr may be mid-line)
        try:
            os.write(2, f"dcpinspect: {name}: the second process reading it stopped: {exc!r}\n".encode())
        except OSError:
            pass
        return 2


def add_digest(snapshot, counted: dict) -> None:
    """The helper's keys' part of the snapshot's digest (what :meth:`Helper.finish` gives of
    a jsonl run) added to ``snapshot`` (a :class:`~..rdb.digest.SnapshotDigest`)."""
    for db, value in counted["per_db"].items():
        snapshot.per_db[int(db)] = snapshot.per_db.get(int(db), 0) ^ int(value, 16)
    snapshot.unknown += counted["unknown"]
