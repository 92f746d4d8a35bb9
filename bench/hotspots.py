"""Where `dcpinspect decode` spends its time: flat tables of cumulative and own time.

    python bench/hotspots.py [--format jsonl|summary|table] [--sampling] [--top N] FILE
    python bench/hotspots.py --path /tmp/other-tree FILE      # profile another copy of dcpinspect

Default: cProfile, functions ranked by cumulative time as a share of the decode
command (cProfile inflates code that makes many tiny calls, e.g. generator
expressions, several-fold). ``--sampling`` uses pyinstrument instead (``pip install
pyinstrument``): lower distortion, proportions closer to a normal run. Output goes
to stdout; the command's own output is discarded.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import os
import pstats
import sys
from pathlib import Path


def _short(path: str, root: str) -> str:
    path = path.replace(root.rstrip("/") + "/", "")
    marker = "/lib/python3."
    if marker in path:
        path = path.split(marker, 1)[1].split("/", 1)[-1]
    return path


def run_cli(argv: list[str]) -> None:
    import dcpinspect.cli as cli

    sys.argv = ["dcpinspect", *argv]
    real = sys.stdout
    sys.stdout = open(os.devnull, "w")
    try:
        cli.app()
    except SystemExit:
        pass
    finally:
        sys.stdout.close()
        sys.stdout = real


def with_cprofile(argv: list[str], top: int, root: str) -> str:
    prof = cProfile.Profile()
    prof.enable()
    run_cli(argv)
    prof.disable()
    st = pstats.Stats(prof, stream=io.StringIO())
    rows, total = [], None
    for (file, line, fn), (_, ncalls, own, cum, _) in st.stats.items():
        if fn == "decode_command":
            total = cum
        rows.append((cum, own, ncalls, f"{_short(file, root)}:{line}({fn})"))
    total = total or max(r[0] for r in rows)
    cumulative = [(name, cum, f"{own:6.2f}  {ncalls:>8}  ") for cum, own, ncalls, name in sorted(rows, reverse=True)]
    owns = [(name, own) for cum, own, ncalls, name in sorted(rows, key=lambda r: -r[1])]
    return _report(f"cProfile: decode_command {total:.2f} s (profiled)", "   own s     calls  ", total,
                   cumulative, owns, top)


def with_pyinstrument(argv: list[str], top: int, root: str) -> str:
    from pyinstrument import Profiler

    prof = Profiler(interval=0.001, use_timing_thread=True)
    prof.start()
    run_cli(argv)
    prof.stop()
    incl: collections.Counter = collections.Counter()
    own: collections.Counter = collections.Counter()

    def walk(frame, stack: frozenset) -> None:
        key = f"{_short(frame.file_path or '', root)}:{frame.line_no}({frame.function})"
        if key not in stack:  # recursion counts once
            incl[key] += frame.time
        own[key] += frame.time - sum(c.time for c in frame.children)
        for child in frame.children:
            walk(child, stack | {key})

    walk(prof.last_session.root_frame(), frozenset())
    total = max((v for k, v in incl.items() if k.endswith("(decode_command)")), default=None) \
        or max(incl.values())
    return _report(f"pyinstrument: decode_command {total:.2f} s (sampled)", "  ", total,
                   [(name, t, "") for name, t in incl.most_common()], own.most_common(), top)


def _report(title: str, extra_head: str, total: float, cumulative: list[tuple[str, float, str]],
            owns: list[tuple[str, float]], top: int) -> str:
    """Both profilers' flat tables: the package's functions by cumulative time (``extra``:
    more columns), then every function by own time."""
    out = [title, "", f"  cum%     cum s{extra_head}function"]
    shown = 0
    for name, cum, extra in cumulative:
        if "dcpinspect/" not in name and "json" not in name:
            continue
        out.append(f"{100 * cum / total:6.1f}  {cum:8.2f}  {extra}{name}")
        shown += 1
        if shown >= top:
            break
    out += ["", "by own time:", "  own%     own s  function"]
    for name, own in owns[:top]:
        out.append(f"{100 * own / total:6.1f}  {own:8.2f}  {name}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--format", default="jsonl", choices=("jsonl", "summary", "table"))
    ap.add_argument("--sampling", action="store_true", help="pyinstrument instead of cProfile")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--path", help="import dcpinspect from this directory (a copy to compare)")
    args = ap.parse_args(argv)
    root = args.path or str(Path(__file__).resolve().parent.parent)
    sys.path.insert(0, root)
    import dcpinspect.cli  # noqa: F401 - imported before profiling: start-up is not the question here

    # one process: worker processes would leave only the parent's merge in the profile
    cli_argv = ["decode", "--format", args.format, "--jobs", "1", str(args.file)]
    report = (with_pyinstrument if args.sampling else with_cprofile)(cli_argv, args.top, root)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
