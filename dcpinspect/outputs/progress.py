"""A progress line on stderr while a long capture file is read."""

from __future__ import annotations

import sys
import time
from ..sources.capture import GZIP_MAGIC

#: files this big get a progress bar; gzip files sooner, since they may inflate a thousandfold
PROGRESS_BYTES, PROGRESS_GZIP_BYTES = 32 * 1024 * 1024, 1024 * 1024


def progress_for(inp, fmt: str) -> "Progress | None":
    """A progress line on stderr for long files and for streams (an opened input,
    ``sources/inputs.Input``), when stderr is a terminal that frames are not being printed
    to. A stream has no size: its line says the bytes read and the rate."""
    if not sys.stderr.isatty() or (fmt != "summary" and sys.stdout.isatty()):
        return None
    if not inp.regular:
        return Progress(None)
    if inp.size < (PROGRESS_GZIP_BYTES if inp.peek(2) == GZIP_MAGIC else PROGRESS_BYTES):
        return None
    return Progress(inp.size)


class Progress:
    """A bar on stderr: call with an item (one more) or a count of items done since the last
    call, and optionally how far into the file reading has got (-1: the end)."""

    WIDTH = 30

    def __init__(self, size: int | None, where=None) -> None:
        self.n, self.shown, self.size = 0, 0.0, None if size is None else max(1, size)
        self.began = time.monotonic()
        self.where = where  # () -> bytes read, when the caller owns the reader
        self.read = 0

    def __call__(self, done=1, read: int | None = None) -> None:
        self.n += done if isinstance(done, int) else getattr(done, "count", 1)  # Lines: several frames
        if read is not None:
            self.read = (self.size or self.read) if read < 0 else read
        now = time.monotonic()
        if now - self.shown > 0.5:
            self.shown = now
            if self.where is not None:
                at = self.where()
                self.read = (self.size or self.read) if at < 0 else at
            if self.size is None:  # a stream: how much so far, and how fast
                rate = self.read / max(now - self.began, 1e-3) / 2**20
                sys.stderr.write(f"\r{self.read / 2**20:,.1f} MiB read, {rate:,.1f} MiB/s, {self.n:,} items")
                sys.stderr.flush()
                return
            part = min(1.0, self.read / self.size)
            bar = "#" * int(part * self.WIDTH)
            sys.stderr.write(f"\r[{bar:-<{self.WIDTH}}] {part:4.0%} of {self.size / 2**20:,.0f} MiB, "
                             f"{self.n:,} items")
            sys.stderr.flush()

    def close(self) -> None:
        """Clear the line (before anything else is printed to the terminal)."""
        if self.shown:
            self.shown = 0.0
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
