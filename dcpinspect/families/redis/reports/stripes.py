"""Two processes for one RDB file's ``rdb --format jsonl --values``.

Writing a key's value as JSON and its digest as the server computes it costs some three
times what reading the key costs, and a file's keys can only be found by reading it from
the start. So both processes read the whole file, and each writes the lines of part of
it: the file is cut into stripes of :data:`STRIPE` bytes by the offset at which each key's
record starts; of every :data:`WAYS` stripes, this process writes the lines of the first
one's keys, and a helper forked from it those of the others (``RdbParser``'s ``stripe``),
the other keys read without their values' lines. (This process also writes out every line
and takes the helper's from the pipe: so the helper makes more of them.)

The helper sends the lines of each of its stripes as one frame through a pipe: the
stripe's number, the offset of its first key, how many lines, and the lines. This process
writes them out where their keys come in the file, so that the output is byte for byte
that of one process; a frame that does not match the keys it read (another stripe, another
first offset, another number of lines) or a helper that stops stop the run with an
error, never with a wrong or a missing line. Last, the helper sends its keys' part of the
snapshot's digest (``DEBUG DIGEST``), which this process adds to its own.

Only a regular file, not gzip, of at least :data:`LEAST` bytes, on a machine with two
processors or more, is shared so (``--jobs 1`` keeps it to one process, ``--jobs 2`` shares
any file that can be read again).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import struct
import threading
from pathlib import Path

from ....sources.inputs import InputError, gzipped

#: bytes of the file a stripe covers (by the offset at which a key's record starts)
STRIPE = 1 << 20
#: the least file shared between two processes (below, the fork costs more than it saves)
LEAST = 64 << 20
#: the stripes come in turns of WAYS: of each, this process writes the first stripe's lines,
#: the helper the others' (it is spared the writing of every line and the taking of its
#: own from the pipe, which this process does)
WAYS = 3
MINE, HELPERS = 0b001, 0b110
#: frames the helper may be ahead of this process (each some 2 MB)
AHEAD = 8
#: a frame's head: its stripe (-1: the digest's part, last), its first key's offset, its
#: lines, the bytes that follow
HEAD = struct.Struct("<qQQQ")


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
    if isinstance(path, (str, Path)):
        name = str(path)
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


class Helper:
    """The forked helper that writes the helper's stripes' lines of the file ``name``, and what
    this process needs to take them in turn (:meth:`line`) and end (:meth:`finish`, and
    :meth:`close` whatever happens)."""

    @property
    def stripe(self) -> tuple[int, int, int]:
        """RdbParser's stripe for this process's keys."""
        return STRIPE, MINE, WAYS

    def __init__(self, name: str) -> None:
        self.name = name
        r, w = os.pipe()
        try:
            import fcntl

            fcntl.fcntl(w, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
        except (ImportError, OSError):
            pass  # (the pipe's default size: the helper waits more often)
        self.pid = os.fork()
        if self.pid == 0:  # the helper: never back into the caller's code
            os.close(r)
            os._exit(_serve(name, w))
        os.close(w)
        self._r = os.fdopen(r, "rb")
        self._frames: queue.Queue = queue.Queue(AHEAD)
        self._pump = threading.Thread(target=self._take_frames, daemon=True)
        self._pump.start()
        self._at = -1  # the stripe whose lines are being given
        self._lines: list[bytes] = []
        self._given = 0
        self._done = False

    @staticmethod
    def mine(rec) -> bool:
        """Whether the key's line is this process's to write."""
        return MINE >> (rec.offset // STRIPE % WAYS) & 1 == 1

    def line(self, rec) -> bytes:
        """The line of ``rec``, a key of the helper's stripes, as the helper wrote it."""
        k = rec.offset // STRIPE
        if k != self._at:
            self._all_given()
            frame = self._next()
            if frame[0] != k or frame[1] != rec.offset:
                self._mismatch(f"its lines of stripe {frame[0]} (from offset {frame[1]:,}) came where this "
                               f"process read the key at offset {rec.offset:,} (stripe {k})")
            self._at, self._given = k, 0
            self._lines = frame[3].split(b"\n")
            if len(self._lines) != frame[2] + 1 or self._lines[-1]:
                self._mismatch(f"its frame of stripe {k} holds {len(self._lines) - 1:,} lines, not {frame[2]:,}")
        if self._given >= len(self._lines) - 1:
            self._mismatch(f"stripe {k} has more keys here than the {len(self._lines) - 1:,} lines it wrote")
        line = self._lines[self._given]
        self._given += 1
        return line + b"\n"

    def finish(self, snapshot) -> None:
        """The helper's part of the snapshot's digest added to ``snapshot`` (a
        :class:`~..rdb.digest.SnapshotDigest`), once every line it wrote was given."""
        self._all_given()
        frame = self._next()
        if frame[0] != -1:
            self._mismatch(f"it wrote the lines of stripe {frame[0]} (from offset {frame[1]:,}), for keys "
                           "this process did not read")
        part = json.loads(frame[3])
        for db, value in part["per_db"].items():
            snapshot.per_db[int(db)] = snapshot.per_db.get(int(db), 0) ^ int(value, 16)
        snapshot.unknown += part["unknown"]
        _, status = os.waitpid(self.pid, 0)
        self._done = True
        if status != 0:
            raise InputError(f"{self.name}: the second process reading it ended with status {status}")

    def close(self) -> None:
        """The helper stopped (if it is still running) and its pipe closed."""
        if not self._done:
            self._done = True
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
        try:
            self._r.close()
        except OSError:
            pass

    # ------------------------------------------------------------------ inside

    def _all_given(self) -> None:
        if self._at >= 0 and self._given != len(self._lines) - 1:
            self._mismatch(f"stripe {self._at} has {self._given:,} keys here, and it wrote "
                           f"{len(self._lines) - 1:,} lines")

    def _next(self) -> tuple:
        frame = self._frames.get()
        if frame is None:
            _, status = os.waitpid(self.pid, 0)
            self._done = True
            raise InputError(f"{self.name}: the second process reading it stopped before its last line "
                             f"(status {status})")
        return frame

    def _mismatch(self, what: str) -> None:
        raise InputError(f"{self.name}: the second process reading it does not agree with this one: {what}; "
                         "read it with --jobs 1")

    def _take_frames(self) -> None:
        """(the pump's thread) The helper's frames into the queue, as they come; None at
        the end of the pipe."""
        try:
            while True:
                head = self._r.read(HEAD.size)
                if len(head) < HEAD.size:
                    break
                k, first, n, size = HEAD.unpack(head)
                body = self._r.read(size)
                if len(body) < size:
                    break
                self._frames.put((k, first, n, body))
                if k < 0:
                    return
        except (OSError, ValueError):
            pass
        self._frames.put(None)


def _serve(name: str, w: int) -> int:
    """(the helper) The lines of the keys of its stripes of ``name``, a frame a stripe,
    then the digest's part, into the pipe ``w``; the process's exit status."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # (interrupted with the run: no traceback)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        from ....outputs.jsonl import dumps_line
        from ..rdb.digest import Digester
        from ..rdb.records import KeyRecord
        from . import report
        from .snapshots import records

        out = os.fdopen(w, "wb", buffering=1 << 20)
        digester = Digester()
        at, first, lines = -1, 0, []

        def send(k: int, first: int, n: int, body: bytes) -> None:
            out.write(HEAD.pack(k, first, n, len(body)))
            out.write(body)

        for rec in records(name, True, None, lines=digester.snapshot, stripe=(STRIPE, HELPERS, WAYS)):
            if type(rec) is not KeyRecord:
                digester.see(rec)
                continue
            k = rec.offset // STRIPE
            if not HELPERS >> (k % WAYS) & 1:
                continue
            if k != at:
                if lines:
                    send(at, first, len(lines), b"".join(lines))
                at, first, lines = k, rec.offset, []
            lines.append(rec.line if rec.line is not None else
                         dumps_line(report.key_json(rec, digester, True), False))
        if lines:
            send(at, first, len(lines), b"".join(lines))
        snapshot = digester.snapshot
        send(-1, 0, 0, json.dumps({"per_db": {str(db): f"{v:x}" for db, v in snapshot.per_db.items()},
                                   "unknown": snapshot.unknown}).encode())
        out.close()
        return 0
    except BrokenPipeError:
        return 0  # (this process stopped reading: it says why)
    except BaseException as exc:  # (its own message, unbuffered: the caller's stderr may be mid-line)
        try:
            os.write(2, f"dcpinspect: {name}: the second process reading it stopped: {exc!r}\n".encode())
        except OSError:
            pass
        return 2
