"""``analyze``'s progress line: what it says of running stages, stages done and bytes read,
drawn while a real job runs when asked to, and nothing when stderr is not a terminal."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from dcpinspect.engines.spark.progress import Progress, render, size_text

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def test_render_names_stages_tasks_and_bytes():
    line = render([(3, 5, 8), (4, 0, 2)], 2, 300 << 20, 1 << 30, 12.4)
    assert line == ("stage 3: 5/8 tasks · stage 4: 0/2 tasks · 2 stages done · 300.0 MiB of 1.0 GiB read (29%) · 12s")
    assert render([], 0, 0, 0, 0.2) == "starting · 0s"
    assert render([(0, 1, 1)], 1, 512, 0, 3) == "stage 0: 1/1 tasks · 1 stage done · 512 B read · 3s"
    assert render([(7, 2, 4)], 0, 10 << 20, 40 << 20, 1.6) == "stage 7: 2/4 tasks · 10.0 MiB of 40.0 MiB read (25%) · 2s"


def test_render_stays_within_the_width():
    line = render([(i, i, 100) for i in range(40)], 3, 1, 2, 5, width=60)
    assert len(line) == 60 and line.endswith("…")


def test_sizes():
    assert [size_text(n) for n in (0, 1023, 1024, 5 << 20, 3 << 40, 5 << 50)] == [
        "0 B", "1023 B", "1.0 KiB", "5.0 MiB", "3.0 TiB", "5120.0 TiB"]


def test_quiet_when_stderr_is_no_terminal(spark):
    stream = io.StringIO()
    with Progress(spark.sparkContext, stream=stream) as progress:
        assert progress.accumulator() is None
        spark.range(10).count()
    assert stream.getvalue() == ""


@pytest.mark.spark
def test_drawn_while_a_job_runs(spark, tmp_path):
    """Forced on (as on a terminal): lines of the job's stages, and every input byte read by
    the end (each task adds its share of its file)."""
    from dcpinspect.engines.spark import progress as module
    from dcpinspect.engines.spark.job import run_analysis

    files = [SAMPLES / "dcp-session.pcap", SAMPLES / "dcp-lossy.pcapng", SAMPLES / "tap-backfill.pcap"]
    stream = io.StringIO()
    tick, module.TICK = module.TICK, 0.05
    try:
        with Progress(spark.sparkContext, stream=stream, force=True) as progress:
            run_analysis(spark, [str(f) for f in files], str(tmp_path / "t"), progress=progress)
            total = sum(f.stat().st_size for f in files)
            assert progress.total == total
            assert progress.accumulator().value == total
            last = progress.line()
    finally:
        module.TICK = tick
    drawn = stream.getvalue()
    assert "\r\033[K" in drawn and "stage " in drawn and " tasks" in drawn
    assert drawn.endswith("\r\033[K")  # the line is wiped at the end
    assert f"{size_text(total)} of {size_text(total)} read (100%)" in last
