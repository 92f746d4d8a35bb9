"""The loops that feed a capture's items to what prints them: frame tables one by one, or
sinks whose payloads (JSON lines) and totals (summaries, tallies) are printed in capture
order. Each returns whether ``--strict`` found an error finding."""

from __future__ import annotations

import sys
from typing import Callable, Iterable, Iterator

from ..outputs.shown import Shown
from ..outputs.tally import Tally
from ..sessions.captured import Captured, Note, flow_label
from ..outputs.progress import told
from .sinks import combine_summaries, combine_tallies, recipe, run_sink


def show_capture(keyed: Iterator[tuple[int, Captured | Note]], fmt: str, keep, limit: int | None, strict: bool,
                 progress=None, shown: Shown | None = None) -> bool:
    """Print ``(key, item)`` pairs of a capture decoded in this process in ``fmt``."""
    if progress is not None:
        keyed = told(keyed, progress)
    if fmt == "table":
        from ..outputs.console import make_console  # the terminal views' imports, for them alone

        failed = show_table(keyed, make_console(), keep, limit, strict, shown)
        clear(progress)
        return failed
    sink = recipe(fmt, keep, limit)()
    return show_sinks(fmt, run_sink(sink, keyed), lambda: [sink.result()], strict, progress)


def show_sinks(fmt: str, payloads: Iterable, results: Callable[[], list], strict: bool, progress=None) -> bool:
    """Print jsonl or summary from sink ``payloads`` (in capture order) and, once they are
    all read, ``results()``: every sink's totals."""
    if fmt == "jsonl":
        write = binary_out()
        for _, line in payloads:
            write(line)
        clear(progress)
        tally = combine_tallies(results())
    else:
        for _ in payloads:
            pass
        clear(progress)
        summaries = results()
        done = summaries[0] if len(summaries) == 1 else combine_summaries(summaries)
        from ..outputs.console import make_console

        done.summary.render(make_console())
        tally = done.tally
    return judged_failed(tally, strict)


def show_table(keyed: Iterator[tuple[int, Captured | Note]], console, keep, limit: int | None, strict: bool,
               shown: Shown | None = None) -> bool:
    """One frame table a kept frame (at most ``limit``), notes on stderr, then the tally."""
    from ..outputs.console import make_console
    from ..outputs.escape import safe
    from ..outputs.render import Renderer
    from ..outputs.stamp import stamp
    from ..outputs.table import frame_table

    renderer = Renderer("table", console, shown=shown or Shown())
    err = make_console(stderr=True)
    printed = Tally()  # the frames shown (the renderer's tally: every frame read)
    for _, item in keyed:
        if isinstance(item, Captured):
            if limit is not None and printed.frames >= limit:
                break
            renderer.tally.add(item.msg)
            if not keep(item):
                continue
            printed.add(item.msg)
            when = "" if item.ts is None else f"{stamp(item.ts)}  "  # hex dumps have no times
            console.print(frame_table(item.msg, f"{when}{flow_label(item.flow)} {item.direction}"
                                                f"  frame {item.number}", renderer.shown))
            console.print()
        elif item.kind != "start":
            where = f" {flow_label(item.flow)} {item.direction or ''}" if item.flow else ""
            err.print(safe(f"note:{where} {item.kind}: {item.message}"), markup=False)
    renderer.summary(printed.shown_line(renderer.tally))
    return judged_failed(renderer.tally, strict)


def judged_failed(tally: Tally, strict: bool) -> bool:
    """Whether ``--strict`` fails the run: an error finding on any frame."""
    return strict and bool(tally.severities["error"])


def binary_out() -> Callable[[bytes], object]:
    """A write for ASCII bytes onto stdout, past the text layer when there is one."""
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is not None:
        return buffer.write
    text = sys.stdout.write
    return lambda data: text(data.decode("ascii"))


def clear(progress) -> None:
    """Take a progress bar off the terminal before anything else is printed there."""
    if hasattr(progress, "close"):  # the live command's progress is a plain callback
        progress.close()
