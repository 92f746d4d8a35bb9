"""Run one harness of fuzz/harness.py as a coverage-guided atheris (libFuzzer) campaign.

Each fuzz/<entry>.py calls :func:`main` with its entry's name; libFuzzer's options and
corpus directories come from the command line, e.g.::

    python3 fuzz/pcap.py -atheris_runs=1000000 fuzz/corpus/pcap
    python3 fuzz/pcap.py -max_total_time=3600 -rss_limit_mb=1024 fuzz/corpus/pcap

Memory is measured as the growth of the process's peak resident set here (``rss``), which
costs nothing and sees C allocations too; ``DCPINSPECT_FUZZ_MEMORY=tracemalloc`` measures
the Python heap as the test suite does, several times slower.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("DCPINSPECT_FUZZ_MEMORY", "rss")


def main(entry: str) -> None:
    import atheris

    import harness

    with atheris.instrument_imports(include=["dcpinspect"]):
        harness.load()
    check = harness.CHECKS[entry]
    atheris.Setup(sys.argv, check)
    atheris.Fuzz()
