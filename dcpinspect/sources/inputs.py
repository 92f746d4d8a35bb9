"""What a named input holds, told by its first bytes: the one place every command asks.

An input (a file, ``-`` for stdin, ``/dev/stdin``, a FIFO, a process substitution) is
opened once (:func:`open_input`); its first bytes are peeked from that handle and read
again by the reader, so a pipe is never read twice. A capture (pcap, pcapng, gzip) goes to
:mod:`.capture`; text is read as a hex dump for :mod:`.hexdump`; binary bytes that are
neither are refused at once. Problems come back as one-line :class:`InputError` messages
worded the same for every command.
"""

from __future__ import annotations

import os
import sys

from ..limits import TEXT_INPUT, LimitError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

#: the first two bytes of a gzip file
GZIP_MAGIC = b"\x1f\x8b"

CAPTURE, TEXT = "capture", "text"
#: bytes a text input's start is looked at to tell text from binary garbage
TEXT_SNIFF = 4096
#: bytes a stream is read at a time: what has arrived, up to this
STREAM_CHUNK = 1 << 20


class InputError(Exception):
    """An input that cannot be used at all: its message is the one line the user sees."""


class Peeked:
    """A byte stream whose first bytes can be looked at (:meth:`peek`) and are then read
    again by whoever reads it on: the kind of an input is told from the one handle, never
    by opening its name again. ``read(n)`` returns what the stream gives at once (at least
    a byte, at most ``n``; ``b""`` at its end), so records are taken as they arrive."""

    def __init__(self, f) -> None:
        self._f = f
        self._head = b""
        self._handed = False  # the handle went to a reader: peek() only recalls
        self.consumed = 0  # bytes handed on by read()

    def peek(self, n: int) -> bytes:
        """The first ``n`` bytes (fewer when the stream ends first), waiting for them."""
        while len(self._head) < n and not self._handed:
            piece = self._f.read(n - len(self._head))
            if not piece:
                break
            self._head += piece
        return self._head[:n]

    def read(self, n: int = -1) -> bytes:
        if self._head:
            if n is None or n < 0:
                data, self._head = self._head + self._f.read(), b""
            else:
                data, self._head = self._head[:n], self._head[n:]
        else:
            data = self._f.read(STREAM_CHUNK if n is None or n < 0 else n)
        self.consumed += len(data)
        return data

    def seekable(self) -> bool:
        return False

    def __str__(self) -> str:
        return getattr(self, "name", "input")

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._f.close()


class Input(Peeked):
    """One named input (a path, ``-`` for stdin, ``/dev/stdin``, a FIFO, ``/dev/fd/N`` of a
    process substitution), opened once. ``regular``: a regular file, read through its own
    buffered handle (:meth:`handle`) as fast as before, and re-opened by its :attr:`path`
    by worker processes; anything else is a stream, read once, as it arrives."""

    def __init__(self, name: str, raw, regular: bool, size: int | None, reopen: bool = True) -> None:
        super().__init__(raw)
        self.name = name
        self.regular = regular
        self.size = size
        #: the name worker processes may open again (a regular file named by a path)
        self.path = name if regular and reopen else None
        self._file = None

    def handle(self):
        """What readers read: the file itself (at its start) when regular, else this stream."""
        if not self.regular:
            return self
        if self._file is None:
            import io

            self.peek(16)  # what readers may still ask of the first bytes
            self._handed = True
            self._file = io.BufferedReader(self._f)
            self._f.seek(0)
        return self._file

    def tell(self) -> int:
        """Bytes read from the input so far (for progress)."""
        if self._file is not None:
            try:
                return self._file.tell()
            except (OSError, ValueError):
                return -1
        return self.consumed

    def close(self) -> None:
        (self._file or self._f).close()


class Contents(Peeked):
    """The bytes an :class:`Input` holds, inflated when it is gzip (``gzipped``), read once
    from its one handle; ``name`` and ``path`` are the input's (``path``: None for a stream,
    whose bytes cannot be read again)."""

    def __init__(self, inp: Input) -> None:
        import gzip

        self.gzipped = inp.peek(2) == GZIP_MAGIC
        super().__init__(gzip.GzipFile(fileobj=inp.handle(), mode="rb") if self.gzipped else inp)
        self.name, self.path, self._input = inp.name, inp.path, inp

    def close(self) -> None:
        self._f.close()
        self._input.close()


def is_stdin(name) -> bool:
    return name is None or os.fspath(name) == "-"


def open_input(name: str | os.PathLike | None) -> Input:
    """``name`` (``-`` or None: standard input) opened once, for reading bytes."""
    import stat

    shown = "stdin" if is_stdin(name) else os.fspath(name)
    try:
        if is_stdin(name):
            if sys.stdin is None or sys.stdin.closed:
                raise InputError("no input: standard input is closed")
            raw = os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0)
        else:
            raw = open(name, "rb", buffering=0)
        st = os.fstat(raw.fileno())
    except OSError as exc:
        raise _problem(shown, exc) from None
    if stat.S_ISDIR(st.st_mode):
        raw.close()
        raise InputError(f"{shown}: is a directory, not a file")
    regular = stat.S_ISREG(st.st_mode) and raw.seekable()
    if regular and is_stdin(name):
        regular = raw.tell() == 0  # a file redirected to stdin and read from its start
    return Input(shown, raw, regular, st.st_size if regular else None, reopen=not is_stdin(name))


def kind_of_head(inp: Peeked) -> str:
    """:data:`CAPTURE` or :data:`TEXT`, by the input's first bytes (peeked, read again
    later). Bytes that are neither (a NUL in the first :data:`TEXT_SNIFF` bytes: binary
    garbage, ``/dev/zero``) are refused at once, before any text is read."""
    from .capture import looks_like_capture  # (the capture readers: for the commands that read captures)

    try:
        if looks_like_capture(inp.peek(4)):
            return CAPTURE
        head = inp.peek(TEXT_SNIFF)
    except OSError as exc:
        raise _problem(getattr(inp, "name", "input"), exc) from None
    if b"\0" in head:
        raise InputError(f"{getattr(inp, 'name', 'input')}: neither a capture (pcap, pcapng, gzip) nor a hex dump "
                         f"(binary data that is no capture format)")
    return TEXT


def _problem(path: str | os.PathLike, exc: OSError) -> InputError:
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{os.fspath(path)}: no such file")
    if isinstance(exc, IsADirectoryError):
        return InputError(f"{os.fspath(path)}: is a directory, not a file")
    if isinstance(exc, PermissionError):
        return InputError(f"{os.fspath(path)}: permission denied")
    return InputError(f"{os.fspath(path)}: cannot read ({exc.strerror or exc})")


def gzipped(path: str | os.PathLike) -> bool:
    """Whether the file is gzip-compressed (False when it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == GZIP_MAGIC
    except OSError:
        return False


def read_text(inp: Peeked | str | os.PathLike | None, stdin: BinaryIO | None = None) -> str:
    """A text input as UTF-8 with undecodable bytes replaced: an opened :class:`Input`, a
    file, or (``None`` or ``-``) ``stdin``; at most :data:`dcpinspect.limits.TEXT_INPUT`
    bytes, held once: more is refused as soon as it is read, before any of it is decoded."""
    try:
        cap = TEXT_INPUT.value()
    except LimitError as exc:
        raise InputError(str(exc)) from None
    where = str(inp) if isinstance(inp, Peeked) else "stdin" if is_stdin(inp) else os.fspath(inp)
    try:
        if isinstance(inp, Peeked):
            data = _read_upto(inp, cap + 1)
        elif is_stdin(inp):
            if stdin is None:
                raise InputError("no input: give a file or pipe a hex dump on stdin")
            data = _read_upto(stdin, cap + 1)
        else:
            with open(inp, "rb") as fh:
                data = _read_upto(fh, cap + 1)
    except OSError as exc:
        raise _problem(where, exc) from None
    if len(data) > cap:
        del data
        raise InputError(f"{'stdin' if where == '-' else where}: more than {cap} bytes of text "
                         f"({TEXT_INPUT.env} raises the cap)")
    text = data.decode("utf-8", "replace")
    del data
    return text


def _read_upto(stream, limit: int, chunk: int = 1 << 20) -> bytearray:
    """At most ``limit`` bytes, read a chunk at a time into one buffer: memory follows what
    is there, not the cap (``read(limit)`` would reserve the whole cap up front), and the
    bytes are held once (no list of chunks joined into a second copy)."""
    data = bytearray()
    while len(data) < limit:
        piece = stream.read(min(chunk, limit - len(data)))
        if not piece:
            break
        data += piece
    return data


def stdin_binary() -> BinaryIO | None:
    """Standard input's byte stream, or None when there is none (closed, or not given)."""
    stream = sys.stdin
    if stream is None or stream.closed:
        return None
    return getattr(stream, "buffer", None)
