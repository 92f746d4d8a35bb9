"""A progress line on stderr while a long capture file is read."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ..sources.inputs import gzipped

#: files this big get a progress bar; gzip files sooner, since they may inflate a thousandfold
PROGRESS_BYTES, PROGRESS_GZIP_BYTES = 32 * 1024 * 1024, 1024 * 1024


def progress_for(path: Path, fmt: str) -> "Progress | None":
    """A progress line on stderr for long files, when stderr is a terminal that frames are
    not being printed to."""
    size = path.stat().st_size
    if not sys.stderr.isatty() or size < (PROGRESS_GZIP_BYTES if gzipped(path) else PROGRESS_BYTES):
        return None
    if fmt != "summary" and sys.stdout.isatty():
        return None
    return Progress(size)


class Progress:
    """A bar on stderr: call with an item (one more) or a count of items done since the last
    call, and optionally how far into the file reading has got (-1: the end)."""

    WIDTH = 30

    def __init__(self, size: int, where=None) -> None:
        self.n, self.shown, self.size = 0, 0.0, max(1, size)
        self.where = where  # () -> bytes read, when the caller owns the reader
        self.read = 0

    def __call__(self, done=1, read: int | None = None) -> None:
        self.n += done if isinstance(done, int) else getattr(done, "count", 1)  # Lines: several frames
        if read is not None:
            self.read = self.size if read < 0 else read
        now = time.monotonic()
        if now - self.shown > 0.5:
            self.shown = now
            if self.where is not None:
                at = self.where()
                self.read = self.size if at < 0 else at
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
