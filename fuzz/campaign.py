"""Run one harness of fuzz/harness.py as a coverage-guided atheris (libFuzzer) campaign.

Each fuzz/<entry>.py calls :func:`main` with its entry's name; libFuzzer's options and
corpus directories come from the command line, e.g.::

    python3 fuzz/pcap.py -atheris_runs=1000000 fuzz/corpus/pcap
    python3 fuzz/pcap.py -max_total_time=3600 -rss_limit_mb=1024 fuzz/corpus/pcap

A campaign runs the harness's checks at campaign speed (each default below can be changed
by setting its environment variable before the run):

- memory is not measured on each input (``DCPINSPECT_FUZZ_MEMORY=none``): libFuzzer's
  ``-rss_limit_mb`` (given here as 1024 unless the command line says otherwise) bounds
  the whole process and reports the input that crossed it; ``rss`` measures each input's
  growth of the resident set, ``tracemalloc`` the Python heap as the test suite does;
- the rich terminal views run on one input in 64 (``DCPINSPECT_FUZZ_RICH_EVERY``), the
  gzipped copy of a capture on one in 16 (``DCPINSPECT_FUZZ_GZIP_EVERY``) and the
  commands themselves on one in 4096 (``DCPINSPECT_FUZZ_CLI_EVERY``); jsonl, the diagram
  text and the summary and stats data run on every input;
- a conversation is cut at 64 packets (``DCPINSPECT_FUZZ_MAX_PACKETS``; 4000 in the suite):
  about two thirds the cost of 256 per execution (93 against 64 executions per CPU second)
  for a third of a percent less coverage (3108 edges against 3119 over the same seeds);
- inputs are at most ``MAX_LEN[entry]`` bytes unless ``-max_len`` says otherwise: enough
  for several frames, records or conversation steps, where longer inputs only repeat;
- coverage is traced by branch only: libFuzzer's comparison tracing (atheris' dataflow
  hooks on every ``==``, ``<`` and ``in``) makes each execution about 2.5 times slower, and
  the seeds already hold the magic numbers it would find; ``DCPINSPECT_FUZZ_DATAFLOW=1``
  turns it on.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
#: the campaign's defaults (see above); the environment overrides each
CAMPAIGN_DEFAULTS = {
    "DCPINSPECT_FUZZ_MEMORY": "none",
    "DCPINSPECT_FUZZ_RICH_EVERY": "64",
    "DCPINSPECT_FUZZ_GZIP_EVERY": "16",
    "DCPINSPECT_FUZZ_CLI_EVERY": "4096",
    "DCPINSPECT_FUZZ_MAX_PACKETS": "64",
}
#: modules of the package that only build test inputs (the conversation harness writes its
#: captures with synth): not instrumented, so that coverage and time go to the code under test
NOT_INSTRUMENTED = ["dcpinspect.transport.synth", "dcpinspect.families.mcbp.messages.build"]
#: libFuzzer's resident-set limit when the command line gives none, in MiB
RSS_LIMIT_MB = 1024
#: the longest input per harness when the command line gives no ``-max_len``
MAX_LEN = {"hex": 2048, "frame": 512, "pcap": 2048, "pcapng": 2048, "conversation": 512, "render": 1024}
#: trace comparisons too (slower, finds magic values the seeds do not hold)
DATAFLOW = os.environ.get("DCPINSPECT_FUZZ_DATAFLOW", "") not in ("", "0")


def fuzz(load, check_of, max_len: int) -> None:
    """An atheris campaign: what ``load()`` imports is instrumented, then ``check_of()``
    (the harness's check, looked up once loaded) runs on each input, at most ``max_len``
    bytes long unless the command line says."""
    import atheris
    from atheris.import_hook import HookManager

    # atheris.instrument_imports, with the choice of tracing comparisons
    with HookManager({"dcpinspect"}, set(NOT_INSTRUMENTED), True, trace_dataflow=DATAFLOW):
        load()
    check = check_of()
    argv = list(sys.argv)
    for option, value in (("-rss_limit_mb", RSS_LIMIT_MB), ("-max_len", max_len)):
        if not any(a.startswith(option + "=") for a in argv):
            argv.insert(1, f"{option}={value}")
    atheris.Setup(argv, check)
    atheris.Fuzz()


def main(entry: str) -> None:
    for name, value in CAMPAIGN_DEFAULTS.items():  # before harness reads them
        os.environ.setdefault(name, value)
    import harness

    fuzz(harness.load, lambda: harness.CHECKS[entry], MAX_LEN[entry])


def redis_main(module: str, check: str, loads: tuple[str, ...], max_len: int = 4096) -> None:
    """A campaign of a Redis family harness (``module``'s function ``check``), what ``loads``
    names instrumented."""
    import importlib

    fuzz(lambda: [importlib.import_module(name) for name in loads],
         lambda: getattr(importlib.import_module(module), check), max_len)
