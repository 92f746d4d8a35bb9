"""The one kind of console every output prints through."""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.segment import Segment

from .escape import scrub
from .plain import FILE_WIDTH


class OutputConsole(Console):
    """A rich console for dcpinspect's outputs.

    Whatever is printed, every text segment goes through :func:`.escape.scrub` on its way
    out: text that was made safe where it was built passes unchanged, and anything from a
    capture, a file name or an error text that was not still reaches the terminal as
    escapes, never as control sequences. Only rich's own control segments (and the styles
    it renders) write escape codes.

    When the reader of standard output goes away (``dcpinspect decode x.pcap | head``) it
    raises :class:`BrokenPipeError` instead of rich's ``SystemExit(1)``, which would read as
    "findings" to a script: the command line turns it into exit 0.
    """

    def _render_buffer(self, buffer) -> str:
        return super()._render_buffer(
            segment if segment.control or segment.text.isprintable()
            else Segment(scrub(segment.text), segment.style, segment.control)
            for segment in buffer)

    def on_broken_pipe(self) -> None:
        self.quiet = True
        try:  # what is still buffered must not fail again when the interpreter exits
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        raise BrokenPipeError


def make_console(stream=None, stderr: bool = False) -> OutputConsole:
    """A console on ``stream`` (standard output, or standard error): terminal width on a
    terminal, FILE_WIDTH columns otherwise; rich markup, emoji codes and highlighting off, so
    text from a capture is printed as it is."""
    stream = stream or (sys.stderr if stderr else sys.stdout)
    width = None if stream.isatty() else FILE_WIDTH
    return OutputConsole(file=stream, width=width, highlight=False, soft_wrap=False, emoji=False, markup=False)
