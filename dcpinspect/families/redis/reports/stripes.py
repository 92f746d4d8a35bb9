"""Two processes for one RDB file's ``rdb --format jsonl --values`` and ``--format resp``.

Writing a key's value as JSON with its digest as the server computes it, or as Redis
commands, costs several times what reading the key costs, and a file's keys can only be
found by reading it from the start. So both processes read the whole file, and each writes
the keys of part of it: the file is cut into stripes of :data:`STRIPE` bytes by the offset
at which each key's record starts; of every :data:`WAYS` stripes, this process writes the
keys of the first one, and a helper forked from it those of the others (``RdbParser``'s
``stripe``: the other keys are read without being written). This process also writes out
every key and takes the helper's from the pipe: so the helper writes more of them.

The helper sends the keys of each of its stripes as one frame through a pipe: the stripe's
number, the offset of its first key, how many keys, their bytes, and where each one's
ends. This process writes each where its key comes in the file, together with everything
that is not a key (aux fields, functions, findings, ``SELECT``), so that the output is
byte for byte that of one process; a frame that does not match the keys it read (another
stripe, another first offset, another number of keys) or a helper that stops stop the run
with an error, never with a wrong or a missing key. Last, the helper sends what it counted
(its keys' part of the snapshot's digest; the commands it wrote), which this process adds
to its own.

Only a regular file, not gzip, of at least :data:`LEAST` bytes, on a machine with two
processors or more, is shared so (``--jobs 1`` keeps it to one process, ``--jobs 2`` shares
any file that can be read again).
"""

from __future__ import annotations

import json
import os
from array import array
import queue
import signal
import struct
import threading

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
#: a frame's head: its stripe (-1: what the helper counted, last), its first key's offset,
#: its keys, the bytes that follow (the keys', then where each ends, 8 bytes each)
HEAD = struct.Struct("<qQQQ")


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


class Helper:
    """The forked helper that writes the keys of its stripes of the file ``name`` as ``fmt``
    ("jsonl" with values, or "resp"), and what this process needs to take them in turn
    (:meth:`take`) and end (:meth:`finish`, and :meth:`close` whatever happens)."""

    @property
    def stripe(self) -> tuple[int, int, int]:
        """RdbParser's stripe for this process's keys."""
        return STRIPE, MINE, WAYS

    def __init__(self, name: str, fmt: str) -> None:
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
            os._exit(_serve(name, w, fmt))
        os.close(w)
        self._r = os.fdopen(r, "rb")
        self._frames: queue.Queue = queue.Queue(AHEAD)
        self._pump = threading.Thread(target=self._take_frames, daemon=True)
        self._pump.start()
        self._at = -1  # the stripe whose keys are being given
        self._body = b""
        self._ends: memoryview | tuple = ()
        self._given = self._n = 0
        self._done = False

    @staticmethod
    def mine(rec) -> bool:
        """Whether the key's line is this process's to write."""
        return owns(MINE, rec.offset)

    def take(self, rec) -> bytes:
        """What the helper wrote of ``rec``, a key of its stripes (empty: it wrote nothing
        of it, and said why)."""
        k = rec.offset // STRIPE
        i = self._given
        if k == self._at and i < self._n:  # (the common case, first)
            self._given = i + 1
            return self._body[self._ends[i - 1] if i else 0:self._ends[i]]
        if k != self._at:
            self._all_given()
            at, first, n, body = self._next()
            if at != k or first != rec.offset:
                self._mismatch(f"its keys of stripe {at} (from offset {first:,}) came where this "
                               f"process read the key at offset {rec.offset:,} (stripe {k})")
            size = len(body) - 8 * n
            ends = memoryview(body)[size:].cast("Q") if n else ()
            if size < 0 or (n and (ends[-1] != size or any(ends[i] > ends[i + 1] for i in range(n - 1)))):
                self._mismatch(f"its frame of stripe {k} does not hold {n:,} keys")
            self._at, self._given, self._body, self._ends, self._n = k, 0, body, ends, n
        i = self._given
        if i >= self._n:
            self._mismatch(f"stripe {k} has more keys here than the {len(self._ends):,} it wrote")
        self._given = i + 1
        return self._body[self._ends[i - 1] if i else 0:self._ends[i]]

    def finish(self) -> dict:
        """What the helper counted (see :func:`_serve`), once every key it wrote was given."""
        self._all_given()
        frame = self._next()
        if frame[0] != -1:
            self._mismatch(f"it wrote the keys of stripe {frame[0]} (from offset {frame[1]:,}), which "
                           "this process did not read")
        counted = json.loads(frame[3])
        _, status = os.waitpid(self.pid, 0)
        self._done = True
        if status != 0:
            raise InputError(f"{self.name}: the second process reading it ended with status {status}")
        return counted

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
        if self._at >= 0 and self._given != len(self._ends):
            self._mismatch(f"stripe {self._at} has {self._given:,} keys here, and it wrote {len(self._ends):,}")

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


def _serve(name: str, w: int, fmt: str) -> int:
    """(the helper) The keys of its stripes of ``name`` as ``fmt``, a frame a stripe, then
    what it counted: its keys' ``summary`` (:meth:`~.report.Summary.keys_part`: the other
    process adds none of them to its own), and (jsonl) their part of the snapshot's digest,
    ``per_db`` and ``unknown``, or (resp) the ``commands`` it wrote; into the pipe ``w``;
    the process's exit status."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # (interrupted with the run: no traceback)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        from ..rdb.records import KeyRecord
        from .report import Summary

        out = os.fdopen(w, "wb", buffering=1 << 20)
        at, first, keys, ends, size = -1, 0, [], array("Q"), 0

        def send(k: int, first: int, n: int, body: bytes) -> None:
            out.write(HEAD.pack(k, first, n, len(body)))
            out.write(body)

        write_key, see, stream, counted = _writer(name, fmt)
        summary = Summary(name)
        for rec in stream:
            if type(rec) is not KeyRecord:
                see(rec)
                continue
            if not owns(HELPERS, rec.offset):
                continue
            k = rec.offset // STRIPE
            summary.add(rec)
            if k != at:
                if keys:
                    send(at, first, len(keys), b"".join(keys) + ends.tobytes())
                at, first, keys, ends, size = k, rec.offset, [], array("Q"), 0
            data = write_key(rec)
            keys.append(data)
            size += len(data)
            ends.append(size)
        if keys:
            send(at, first, len(keys), b"".join(keys) + ends.tobytes())
        send(-1, 0, 0, json.dumps({**counted(), "summary": summary.keys_part()}).encode())
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


def _writer(name: str, fmt: str):
    """(the helper) What writes one key of ``name`` as ``fmt`` (bytes), what takes the
    records that are no keys, the records, and what gives what was counted at the end."""
    from .snapshots import records

    if fmt == "resp":
        import sys

        from ....messages.text import key_text
        from ....outputs.escape import safe
        from .export import Exporter

        parts: list[bytes] = []

        def skip(rec, why: str) -> None:
            sys.stderr.write(safe(f"not exported: db {rec.db} key {key_text(rec.key)!r} at offset {rec.offset}: "
                                  f"{why}") + "\n")
            sys.stderr.flush()

        exporter = Exporter(parts.append, skip)

        def write_key(rec) -> bytes:
            exporter.db = rec.db  # (SELECT is the other process's)
            exporter.key(rec)
            data = b"".join(parts)
            parts.clear()
            return data

        def see(rec) -> None:
            pass

        stream = records(name, True, None, stripe=(STRIPE, HELPERS, WAYS), resp=exporter)
        return write_key, see, stream, lambda: {"commands": exporter.commands}
    from ....outputs.jsonl import dumps_line
    from ..rdb.digest import Digester
    from . import report

    digester = Digester()

    def write_line(rec) -> bytes:
        return rec.line if rec.line is not None else dumps_line(report.key_json(rec, digester, True), False)

    def counted() -> dict:
        snapshot = digester.snapshot
        return {"per_db": {str(db): f"{v:x}" for db, v in snapshot.per_db.items()}, "unknown": snapshot.unknown}

    stream = records(name, True, None, lines=digester.snapshot, stripe=(STRIPE, HELPERS, WAYS))
    return write_line, digester.see, stream, counted


def add_digest(snapshot, counted: dict) -> None:
    """The helper's keys' part of the snapshot's digest (what :meth:`Helper.finish` gives of
    a jsonl run) added to ``snapshot`` (a :class:`~..rdb.digest.SnapshotDigest`)."""
    for db, value in counted["per_db"].items():
        snapshot.per_db[int(db)] = snapshot.per_db.get(int(db), 0) ^ int(value, 16)
    snapshot.unknown += counted["unknown"]
