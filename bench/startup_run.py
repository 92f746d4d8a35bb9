"""The start-up of ``dcpinspect rdb`` on a small file: what a run costs when the file is
nothing, against the interpreter's own start.

    python bench/startup_run.py [--file samples/redis-dump.rdb] [--runs 15] [--impl LABEL=PYTHONPATH ...]
                                [--no-instructions]

Each command runs in a fresh child process (``python -m dcpinspect``, with the package's
bytecode compiled first, as an install has it), interleaved with the others round after
round, so that a busy machine slows them alike: ``rdb FILE`` as a table, ``-f jsonl``,
``-f summary``, and ``rdb --help`` (typer's), with ``python -c pass`` as the yardstick.
Wall and CPU seconds (user + sys) come from ``os.wait4``; the median of the runs is
printed, and "÷ python" is the median of each round's ratio to ``python -c pass``'s CPU.
Where valgrind is installed, each command's instructions are counted once by callgrind:
the same on a busy machine as on an idle one, so that two trees (``--impl``, each a
PYTHONPATH) can be told apart by a few percent. The interpreter's count includes the
``site`` hooks of this environment (``.pth`` files); ``python -c pass`` shows what they
are.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORMATS = (("table", []), ("jsonl", ["-f", "jsonl"]), ("summary", ["-f", "summary"]))


def _commands(path: str, impls: dict[str, str]) -> list[tuple[str, str | None, list[str]]]:
    runs: list[tuple[str, str | None, list[str]]] = [("python -c pass", None, [sys.executable, "-c", "pass"])]
    for label, tree in impls.items():
        for name, extra in FORMATS:
            runs.append((f"{label}: rdb {name}", tree, [sys.executable, "-m", "dcpinspect", "rdb", path, *extra]))
        runs.append((f"{label}: rdb --help", tree, [sys.executable, "-m", "dcpinspect", "rdb", "--help"]))
    return runs


def _env(tree: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED")}
    if tree is not None:
        env["PYTHONPATH"] = tree
    return env


def _timed(argv: list[str], env: dict) -> tuple[float, float]:
    start = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/")
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{' '.join(argv)}: exit {os.waitstatus_to_exitcode(status)}")
    return wall, ru.ru_utime + ru.ru_stime


def _instructions(argv: list[str], env: dict) -> int | None:
    got = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd="/")
    for line in got.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1])
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", default=str(ROOT / "samples" / "redis-dump.rdb"))
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--impl", action="append", default=[], metavar="LABEL=PYTHONPATH",
                    help="a tree to measure (default: this one, as 'dcpinspect')")
    ap.add_argument("--no-instructions", action="store_true", help="skip callgrind's counts")
    args = ap.parse_args()
    impls = dict(i.split("=", 1) for i in args.impl) or {"dcpinspect": str(ROOT)}
    for tree in impls.values():  # compiled as an install has it: else every run compiles the package
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(tree) / "dcpinspect")], check=True,
                       env=_env(tree))
    commands = _commands(os.path.abspath(args.file), impls)
    times: dict[str, list[tuple[float, float]]] = {label: [] for label, _, _ in commands}
    for label, tree, argv in commands:  # one warm-up each
        _timed(argv, _env(tree))
    for _ in range(args.runs):
        for label, tree, argv in commands:
            times[label].append(_timed(argv, _env(tree)))
    base = [cpu for _, cpu in times["python -c pass"]]
    counts = {}
    if not args.no_instructions and shutil.which("valgrind"):
        counts = {label: _instructions(argv, _env(tree)) for label, tree, argv in commands}
    print(f"{Path(args.file).name}, {args.runs} rounds, medians\n")
    print("| command | wall s | CPU s | ÷ python (CPU) | instructions (M) |")
    print("|---|---|---|---|---|")
    for label, runs in times.items():
        ratio = statistics.median(cpu / b for (_, cpu), b in zip(runs, base))
        n = counts.get(label)
        print(f"| {label} | {statistics.median(w for w, _ in runs):.3f} | {statistics.median(c for _, c in runs):.3f} "
              f"| {ratio:.2f} | {'' if n is None else f'{n / 1e6:,.0f}'} |")


if __name__ == "__main__":
    main()
