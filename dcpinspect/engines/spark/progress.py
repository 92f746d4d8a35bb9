"""``analyze``'s progress line on stderr while Spark works: the stages running (tasks done
of their tasks), the stages done, and the bytes of input read by the tasks that are done.

Spark's own console progress bar is off (``session.py``); this line is drawn only when
stderr is a terminal. Bytes come from an accumulator that each task adds its share of the
input to as it ends (its part of a file, or its byte range); over Spark Connect, which has
no SparkContext, nothing is drawn.
"""

from __future__ import annotations

import sys
import threading
import time

#: seconds between two redraws
TICK = 0.5


def size_text(n: float) -> str:
    """Bytes as people read them: ``512 B``, ``3.4 MiB``, ``1.1 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def render(active: list[tuple[int, int, int]], stages_done: int, read: int, total: int, elapsed: float,
           width: int = 120) -> str:
    """The progress line: ``active`` the running stages as (stage id, tasks done, tasks);
    ``read`` of ``total`` input bytes read by finished tasks (``total`` 0: unknown)."""
    parts = [f"stage {sid}: {done}/{n} tasks" for sid, done, n in active] or ["starting"]
    if stages_done:
        parts.append(f"{stages_done} stage{'s' * (stages_done != 1)} done")
    if total:
        parts.append(f"{size_text(read)} of {size_text(total)} read ({100 * read // total}%)")
    elif read:
        parts.append(f"{size_text(read)} read")
    parts.append(f"{elapsed:.0f}s")
    text = " · ".join(parts)
    return text if len(text) <= width else text[:width - 1] + "…"


class Progress:
    """Draws :func:`render`'s line on stderr every :data:`TICK` seconds while in use, when
    stderr is a terminal (else it does nothing). ``total``: the input's bytes, once known."""

    def __init__(self, sc, stream=None, force: bool = False) -> None:
        self.sc = sc
        self.stream = stream or sys.stderr
        self.total = 0
        self._acc = None
        self._stop = threading.Event()
        self._began = time.monotonic()
        live = sc is not None and (force or self.stream.isatty())
        self._thread = threading.Thread(target=self._run, daemon=True, name="dcpinspect-progress") if live else None
        self._seen: set[int] = set()

    def accumulator(self):
        """What tasks add their share of the input to (None when nothing is drawn)."""
        if self._thread is None:
            return None
        if self._acc is None:
            self._acc = self.sc.accumulator(0)
        return self._acc

    def __enter__(self) -> "Progress":
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self.stream.write("\r\033[K")
            self.stream.flush()

    def line(self) -> str | None:
        """The line as things stand (None when the context is stopping)."""
        tracker = self.sc.statusTracker()
        try:
            ids = tracker.getActiveStageIds()
            active = []
            for sid in sorted(ids):
                info = tracker.getStageInfo(sid)
                if info is not None:
                    active.append((sid, info.numCompletedTasks, info.numTasks))
        except Exception:  # noqa: BLE001 - the context is stopping
            return None
        self._seen.update(ids)
        done = len(self._seen - set(ids))
        read = self._acc.value if self._acc is not None else 0
        return render(active, done, read, self.total, time.monotonic() - self._began)

    def _run(self) -> None:
        while not self._stop.wait(TICK):
            text = self.line()
            if text is None:
                return
            self.stream.write("\r\033[K" + text)
            self.stream.flush()
