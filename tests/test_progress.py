"""The progress line (outputs/progress.py): by bytes read, with the rate and the time left;
bytes and rate alone where the input's size is not known (a pipe)."""

from __future__ import annotations

import io
import os

from dcpinspect.outputs.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_known_size_bar_rate_and_time_left():
    clock, out = Clock(), io.StringIO()
    p = Progress(100 << 20, clock=clock, stream=out)
    clock.now += 10
    p(5000, 25 << 20)  # a quarter in 10 s: 2.5 MiB/s, 30 s left
    line = p.line()
    assert line.startswith("[######------------------]  25% 25.0 MiB of 100.0 MiB")
    assert "2.5 MiB/s" in line and "0:30 left" in line and "5,000 items" in line
    assert out.getvalue().startswith("\r[######")
    clock.now += 20
    p(1, -1)  # the end
    assert " 100% " in p.line() and "0:00 left" in p.line()
    p.close()
    assert out.getvalue().endswith("\r\x1b[K")


def test_unknown_size_bytes_and_rate():
    clock, out = Clock(), io.StringIO()
    p = Progress(None, clock=clock, stream=out)
    clock.now += 4
    p(7, 3 << 30)
    assert p.line() == "3.0 GiB read, 768.0 MiB/s, 7 items"
    p(1, -1)  # the end of a pipe: no size to jump to
    assert p.line().startswith("3.0 GiB read")


def test_redrawn_at_most_twice_a_second():
    clock, out = Clock(), io.StringIO()
    p = Progress(1 << 20, clock=clock, stream=out)
    for _ in range(1000):
        p(1, 1000)
    assert out.getvalue().count("\r") == 1
    clock.now += 0.6
    p(1, 2000)
    assert out.getvalue().count("\r") == 2


def test_long_runs_print_hours():
    clock = Clock()
    p = Progress(1 << 40, clock=clock, stream=io.StringIO())
    clock.now += 60
    p(1, 1 << 30)
    assert "17:03:00 left" in p.line()
