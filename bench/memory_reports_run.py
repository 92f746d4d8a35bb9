"""Time ``dcpinspect rdb --report NAME`` against ``rdb --format summary`` and against
HDT3213/rdb's ``-c memory``, ``-c prefix`` and ``-c bigkey`` on the same file, A B A B:
each tool in a fresh process, in turns, ``--repeat`` rounds; the median wall time of
each, its ratio to summary's, and the peak RSS (GNU ``time``).

    python bench/memory_reports_run.py FILE [--repeat 3] [--hdt PATH] [--impl LABEL=PYTHONPATH ...]

``--hdt`` defaults to ``bench/out/peers/bin/hdt-rdb`` (see ``bench/rdb_run.py``: how it is
built); when it is not there HDT3213/rdb is not measured, and the run says so. ``--impl``
times other dcpinspect trees beside this one (``base=/path/to/checkout``), in the same turns.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from rdb_run import child_env, run_child, warm  # noqa: E402

REPORTS = ("memory", "bigkeys", "prefix", "types", "expiry")


def specs(hdt: str | None, scratch: str, impls: list[tuple[str, str]]) -> list[tuple[str, list[str], dict]]:
    out = []
    for label, path in impls:
        env = child_env(PYTHONPATH=path)
        name = "dcpinspect" if label == "dcpinspect" else f"dcpinspect[{label}]"
        base = [sys.executable, "-P", "-m", "dcpinspect", "rdb"]
        out.append((f"{name} summary", base + ["--format", "summary"], env))
        out += [(f"{name} --report {r}", base + ["--report", r], env) for r in REPORTS]
        out.append((f"{name}, the five reports at once", base + [a for r in REPORTS for a in ("-r", r)], env))
        out.append((f"{name} --plot", base + ["--plot", str(Path(scratch) / "plot.svg"), "-r", "types"], env))
    if hdt:
        # -n: the rows of bigkey and prefix (without it, bigkey reads nothing), as many as ours by default
        out += [(f"HDT3213/rdb -c {c}", [hdt, "-c", c, *(["-n", "20"] if c != "memory" else []),
                                         "-o", str(Path(scratch) / f"hdt-{c}.out")], child_env())
                for c in ("memory", "prefix", "bigkey")]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hdt", default=str(HERE / "out" / "peers" / "bin" / "hdt-rdb"), help="HDT3213/rdb's binary")
    ap.add_argument("--impl", action="append", default=[],
                    help="LABEL=PYTHONPATH of a dcpinspect tree to time (repeatable; default: this one)")
    ap.add_argument("--only", action="append", default=[], help="run only the tools whose label holds this")
    args = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="memory-reports-")
    hdt = args.hdt if args.hdt and os.access(args.hdt, os.X_OK) else None
    if hdt is None:
        sys.stderr.write(f"HDT3213/rdb is not at {args.hdt}: not measured\n")
    impls = [(s.partition("=")[0], s.partition("=")[2]) for s in args.impl] or [("dcpinspect", str(HERE.parent))]
    chosen = [s for s in specs(hdt, scratch, impls)
              if not args.only or s[0].endswith(" summary") or any(o in s[0] for o in args.only)]
    runs: dict[str, list[tuple[float, int, int, float]]] = {label: [] for label, _, _ in chosen}
    warm(args.file)
    for i in range(args.repeat):
        for label, cmd, env in chosen:
            wall, cpu, rss, code, err = run_child(cmd + [str(args.file)], env, str(Path(scratch) / "stdout"))
            runs[label].append((wall, rss, code, cpu))
            print(f"#{i + 1} {label:40s} {wall:8.2f} s {cpu:8.2f} s CPU {rss / 1024:8.1f} MB exit {code} "
                  f"{err if code > 1 else ''}", flush=True)
    ref = runs[next(label for label in runs if label.endswith(" summary"))]
    base, base_cpu = statistics.median(r[0] for r in ref), statistics.median(r[3] for r in ref)
    print(f"\n| {args.file.name} | median wall s | ÷ summary | median CPU s | ÷ summary (CPU) | peak RSS MB |\n"
          "|---|---|---|---|---|---|")
    for label, got in runs.items():
        wall, cpu = statistics.median(r[0] for r in got), statistics.median(r[3] for r in got)
        print(f"| {label} | {wall:.2f} | {wall / base:.2f} | {cpu:.2f} | {cpu / base_cpu:.2f} | "
              f"{max(r[1] for r in got) / 1024:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
