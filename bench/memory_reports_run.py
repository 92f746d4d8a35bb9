"""Time ``dcpinspect rdb --report NAME`` against ``rdb --format summary`` and against
HDT3213/rdb's ``-c memory``, ``-c prefix`` and ``-c bigkey`` on the same file, A B A B:
each tool in a fresh process, in turns, ``--repeat`` rounds; the median wall time of
each, its ratio to summary's, and the peak RSS (GNU ``time``).

    python bench/memory_reports_run.py FILE [--repeat 3] [--hdt PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from rdb_run import child_env, run_child, warm  # noqa: E402

REPORTS = ("memory", "bigkeys", "prefix", "types", "expiry")


def specs(hdt: str | None, scratch: str) -> list[tuple[str, list[str]]]:
    base = [sys.executable, "-P", "-m", "dcpinspect", "rdb"]
    out = [("dcpinspect summary", base + ["--format", "summary"])]
    out += [(f"dcpinspect --report {r}", base + ["--report", r]) for r in REPORTS]
    out.append(("dcpinspect, the five reports at once", base + [a for r in REPORTS for a in ("-r", r)]))
    out.append(("dcpinspect --plot", base + ["--plot", str(Path(scratch) / "plot.svg"), "-r", "types"]))
    if hdt:
        out += [(f"HDT3213/rdb -c {c}", [hdt, "-c", c, "-o", str(Path(scratch) / f"hdt-{c}.out")])
                for c in ("memory", "prefix", "bigkey")]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hdt", help="HDT3213/rdb's binary")
    ap.add_argument("--only", action="append", default=[], help="run only the tools whose label holds this")
    args = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="memory-reports-")
    env = child_env(PYTHONPATH=str(HERE.parent))
    chosen = [s for s in specs(args.hdt, scratch)
              if not args.only or s[0] == "dcpinspect summary" or any(o in s[0] for o in args.only)]
    runs: dict[str, list[tuple[float, int, int]]] = {label: [] for label, _ in chosen}
    warm(args.file)
    for i in range(args.repeat):
        for label, cmd in chosen:
            wall, cpu, rss, code, err = run_child(cmd + [str(args.file)], env, str(Path(scratch) / "stdout"))
            runs[label].append((wall, rss, code))
            print(f"#{i + 1} {label:40s} {wall:8.2f} s {rss / 1024:8.1f} MB exit {code} {err if code > 1 else ''}",
                  flush=True)
    base = statistics.median(w for w, _, _ in runs["dcpinspect summary"])
    print(f"\n| {args.file.name} | median wall s | ÷ summary | peak RSS MB |\n|---|---|---|---|")
    for label, got in runs.items():
        wall = statistics.median(w for w, _, _ in got)
        print(f"| {label} | {wall:.2f} | {wall / base:.2f} | {max(r for _, r, _ in got) / 1024:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
