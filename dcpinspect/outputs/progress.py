"""A progress line on stderr while a long input is read: by bytes read, with the rate and
the time left; where the size is not known (a pipe), the bytes read and the rate."""

from __future__ import annotations

import sys
import time

from ..sources.inputs import GZIP_MAGIC

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Iterable, Iterator

#: files this big get a progress bar; gzip files sooner, since they may inflate a thousandfold
PROGRESS_BYTES, PROGRESS_GZIP_BYTES = 32 * 1024 * 1024, 1024 * 1024


def progress_for(inp, fmt: str = "summary", printed_between: bool = False) -> "Progress | None":
    """A progress line on stderr for a long input and for a stream (an opened input,
    ``sources/inputs.Input``: a stream has no size, its line says the bytes read and the
    rate), when stderr is a terminal. ``fmt`` names what is printed on standard output: a
    line only goes beside output printed at the end ("summary") or not to the terminal,
    or, with ``printed_between``, that the caller takes the line off before it prints."""
    if not inp.regular:
        return progress_sized(None, fmt=fmt, printed_between=printed_between)
    return progress_sized(inp.size, inp.peek(2) == GZIP_MAGIC, fmt, printed_between)


def progress_sized(size: int | None, gzipped: bool = False, fmt: str = "summary",
                   printed_between: bool = False) -> "Progress | None":
    """:func:`progress_for` of inputs whose bytes come to ``size`` (None: a stream), such
    as the files of a snapshot set read one after the other; ``gzipped``: they are gzip,
    whose bar starts at a smaller size."""
    if not sys.stderr.isatty() or (fmt != "summary" and sys.stdout.isatty() and not printed_between):
        return None
    if size is None:
        return Progress(None)
    if size < (PROGRESS_GZIP_BYTES if gzipped else PROGRESS_BYTES):
        return None
    return Progress(size)


def told(pairs: Iterable[tuple], progress: Callable) -> Iterator[tuple]:
    """The same ``(key, item)`` pairs, each item told to ``progress`` as it passes."""
    for pair in pairs:
        progress(pair[1])
        yield pair


def _bytes(n: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,.0f} B"


def _clock(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    h, m, s = seconds // 3600, seconds // 60 % 60, seconds % 60
    return f"{h}:{m:02}:{s:02}" if h else f"{m}:{s:02}"


class Progress:
    """A bar on stderr: call with an item (one more) or a count of items done since the last
    call, and optionally how far into the input reading has got (-1: the end); or give
    ``where``, a function saying how far, when the caller owns the reader. ``size`` None:
    not known (bytes read and rate, no bar)."""

    WIDTH = 24
    EVERY = 0.5  # seconds between redraws

    def __init__(self, size: int | None, where=None, clock=time.monotonic, stream=None) -> None:
        self.n, self.shown = 0, 0.0
        self.size = None if size is None else max(1, size)
        self.where = where  # () -> bytes read, when the caller owns the reader
        self.read = 0
        self.clock = clock
        self.began = clock()
        self.stream = stream or sys.stderr

    def __call__(self, done=1, read: int | None = None) -> None:
        self.n += done if isinstance(done, int) else getattr(done, "count", 1)  # Lines: several frames
        if read is not None:
            self._at(read)
        now = self.clock()
        if now - self.shown > self.EVERY:
            self.shown = now
            if self.where is not None:
                self._at(self.where())
            self.stream.write("\r" + self.line(now) + "\x1b[K")
            self.stream.flush()

    def _at(self, read: int) -> None:
        if read >= 0:
            self.read = read
        elif self.size is not None:
            self.read = self.size

    def line(self, now: float | None = None) -> str:
        """What the bar says at ``now``."""
        elapsed = max(1e-6, (self.clock() if now is None else now) - self.began)
        rate = self.read / elapsed
        items = f", {self.n:,} items" if self.n else ""  # (none counted: bytes alone)
        if self.size is None:
            return f"{_bytes(self.read)} read, {_bytes(rate)}/s{items}"
        part = min(1.0, self.read / self.size)
        bar = "#" * int(part * self.WIDTH)
        left = f"{_clock((self.size - self.read) / rate)} left" if rate > 0 and self.read else "-:-- left"
        return (f"[{bar:-<{self.WIDTH}}] {part:4.0%} {_bytes(self.read)} of {_bytes(self.size)}, "
                f"{_bytes(rate)}/s, {left}{items}")

    def close(self) -> None:
        """Clear the line (before anything else is printed to the terminal)."""
        if self.shown:
            self.shown = 0.0
            self.stream.write("\r\x1b[K")
            self.stream.flush()
