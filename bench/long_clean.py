"""``validate`` on a long, valid capture: frames/s against tshark's field export of the
same file, as ratios from one run.

    python bench/long_clean.py [--out DIR] [--runs N]

The capture is the one ``tests/test_validate_cli.py::test_long_clean_capture`` checks
for its outcome (``dcpgen.long_clean_capture``: three busy connections, 100k frames and
more, one joined mid-conversation; no finding). Here it is timed: ``dcpinspect validate
--format jsonl`` and the table (both finding nothing), and ``tshark -T fields`` as in
``bench/run.py``; runs interleaved, best of ``--runs``, wall and CPU (user + sys, the
workers included) from ``os.wait4`` on each child.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

import dcpgen  # noqa: E402
from run import run_child  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "out" / "long-clean")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    path = a.out / "long.pcap"
    frames = dcpgen.long_clean_capture(path)
    cli = [sys.executable, "-m", "dcpinspect", "validate", str(path)]
    tools = {"validate jsonl": cli + ["--format", "jsonl"], "validate table": cli}
    if shutil.which("tshark"):
        tools["tshark -T fields"] = ["tshark", "-r", str(path), "-d", "tcp.port==11210,couchbase", "-T", "fields",
                                     "-E", "occurrence=a", "-e", "frame.number", "-e", "couchbase.opcode"]
    best: dict[str, tuple[float, float]] = {}
    for _ in range(a.runs):
        for name, cmd in tools.items():
            wall, cpu, _, code = run_child(cmd, None, str(a.out / "stdout"))
            if name.startswith("validate") and code != 0:
                sys.exit(f"{name} exited {code}: the capture is valid, it finds nothing")
            w, c = best.get(name, (wall, cpu))
            best[name] = (min(w, wall), min(c, cpu))
    print(f"{path.name}: {frames:,} MCBP frames, {path.stat().st_size / 2**20:.1f} MiB")
    print(f"{'tool':<18} {'wall s':>8} {'CPU s':>8} {'frames/s':>10} {'× tshark (wall)':>16} {'× tshark (CPU)':>15}")
    yard = best.get("tshark -T fields")
    for name, (wall, cpu) in best.items():
        walls, cpus = (f"{yard[0] / wall:.2f}", f"{yard[1] / cpu:.2f}") if yard else ("-", "-")
        print(f"{name:<18} {wall:8.2f} {cpu:8.2f} {frames / wall:10,.0f} {walls:>16} {cpus:>15}")


if __name__ == "__main__":
    main()
