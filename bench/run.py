"""dcpinspect against tshark on the same captures: frames/s ratios and peak memory, in one run.

    python bench/run.py [--corpus DIR] [--big] [--out bench/results.md] [--repeat 3]
                        [--only NAME ...] [--impl LABEL=PYTHONPATH ...] [--no-tshark]

For every corpus file (made by ``bench/make_corpus.py``) it runs, interleaved so
that a busy machine slows every tool alike:

* ``dcpinspect decode --format jsonl FILE``   (stdout to a scratch file, then counted;
  worker processes as by default: one per CPU on files over 16 MiB)
* ``dcpinspect decode --format jsonl --jobs 1 FILE``   (one process: the per-core rate)
* ``dcpinspect decode --format summary FILE``
* ``tshark -r FILE -d tcp.port==11210,couchbase -T fields -E occurrence=a
  -e frame.number -e couchbase.opcode -e couchbase.opaque -e couchbase.key``
  (single pass; frames = all ``couchbase.opcode`` occurrences, several per packet)

each in a fresh child process whose wall time, CPU time (user + sys, worker processes
included) and peak memory are recorded. Memory is the peak over the run of the summed
proportional set size (PSS, ``/proc/PID/smaps_rollup`` sampled every 20 ms) of the child
and all its descendants: pages shared by forked workers count once, so a run with
several workers is charged what it really holds; the best of ``--repeat``
runs counts (one run for files over 256 MiB). frames/s = frames the tool
reported / wall seconds; "× tshark" = that rate over tshark's on the same file
(also given on CPU time, which a loaded machine disturbs less). The markdown
table goes to ``--out`` and stdout; ``results.json`` next to it keeps every run.

Children run without ``PYTHONUNBUFFERED`` (set in some shells and CI images;
it makes every JSON line a write(2)).

``--impl LABEL=DIR`` benchmarks ``python -m dcpinspect`` with ``PYTHONPATH=DIR``
instead of the installed console script (repeatable: compare a prototype
against a baseline copy in the same run); ``--impl LABEL=`` is the installed one.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_CORPUS = HERE / "out" / "corpus"
ORDER = ("small-frames.pcap", "large-values.pcap", "many-flows.pcap", "big.pcap")
BIG_FILE = 256 * 2**20
TSHARK_FIELDS = ("frame.number", "couchbase.opcode", "couchbase.opaque", "couchbase.key")


@dataclass
class Run:
    wall: float
    cpu: float
    rss_kb: int  # peak summed PSS of the process tree (KiB)
    frames: int
    code: int


@dataclass
class Result:
    corpus: str
    tool: str
    cmd: list[str]
    runs: list[Run] = field(default_factory=list)

    @property
    def best(self) -> Run:
        return min(self.runs, key=lambda r: r.wall)

    @property
    def frames(self) -> int:
        return self.best.frames

    @property
    def peak_rss_mb(self) -> float:
        return max(r.rss_kb for r in self.runs) / 1024

    @property
    def cpu(self) -> float:
        return min(r.cpu for r in self.runs)


def _tree(pid: int) -> list[int]:
    out = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                for child in fh.read().split():
                    out.extend(_tree(int(child)))
    except OSError:
        pass
    return out


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class TreeMemory(threading.Thread):
    """Peak summed PSS of a process and its descendants, sampled until :meth:`stop`."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self._halt = pid, 0, threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            self.peak = max(self.peak, sum(_pss_kb(p) for p in _tree(self.pid)))
            self._halt.wait(0.02)

    def stop(self) -> int:
        self._halt.set()
        self.join()
        return self.peak


def run_child(cmd: list[str], env: dict | None, stdout_path: str) -> tuple[float, float, int, int]:
    """Run ``cmd`` with stdout to ``stdout_path``; (wall s, user+sys s, peak tree PSS KiB, exit code)."""
    err_path = stdout_path + ".err"
    with open(stdout_path, "wb") as out, open(err_path, "w+b") as err:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        memory = TreeMemory(p.pid)
        memory.start()
        # rusage of the child includes the workers it waited for (CPU time)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        peak = memory.stop()
        p.returncode = code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):
            err.seek(0)
            tail = err.read().decode("utf-8", "replace")[-500:]
            sys.stderr.write(f"warning: {' '.join(cmd)} exited {code}: {tail}\n")
    os.unlink(err_path)
    return wall, ru.ru_utime + ru.ru_stime, max(peak, 1), code


def count_jsonl(path: str) -> int:
    n = 0
    with open(path, "rb") as f:
        for line in f:
            if line.startswith(b'{"kind":"frame"'):
                n += 1
    return n


def count_summary(path: str) -> int:
    text = Path(path).read_text("utf-8", "replace").strip().splitlines()
    for line in reversed(text):
        parts = line.split()
        if len(parts) >= 4 and parts[1] == "frames" and parts[2] == "in":
            return int(parts[0])
    return -1


def count_tshark(path: str) -> int:
    n = 0
    with open(path, "rb") as f:
        for line in f:
            cols = line.split(b"\t")
            if len(cols) > 1 and cols[1].strip():
                n += cols[1].count(b",") + 1
    return n


def child_env(**extra: str) -> dict:
    """The caller's environment without PYTHONUNBUFFERED (an unbuffered stdout costs a
    write(2) per line: not how people run the tool) and without PYTHONDONTWRITEBYTECODE (an
    installed package has its modules compiled; without the caches every run would compile
    every module from source first), plus ``extra``."""
    drop = ("PYTHONUNBUFFERED", "PYTHONPROFILEIMPORTTIME", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra)
    return env


def tools(impls: list[tuple[str, str | None]], use_tshark: bool) -> list[tuple[str, list[str], dict | None, callable]]:
    out = []
    for label, path in impls:
        if not path:  # the installed console script
            base, env = ["dcpinspect"], child_env()
        else:
            base = [sys.executable, "-P", "-m", "dcpinspect"]  # -P: not the cwd's copy
            env = child_env(PYTHONPATH=path)
        out.append((f"{label} jsonl", base + ["decode", "--format", "jsonl"], env, count_jsonl))
        out.append((f"{label} jsonl -j1", base + ["decode", "--format", "jsonl", "--jobs", "1"], env, count_jsonl))
        out.append((f"{label} summary", base + ["decode", "--format", "summary"], env, count_summary))
    if use_tshark:
        fields = [a for f in TSHARK_FIELDS for a in ("-e", f)]
        out.append(("tshark -T fields", ["tshark", "-r", "{file}", "-d", "tcp.port==11210,couchbase", "-T", "fields",
                                         "-E", "occurrence=a", *fields], child_env(), count_tshark))
    return out


def bench_file(path: Path, specs, repeat: int, scratch: str) -> list[Result]:
    results = [Result(path.name, label, [c.replace("{file}", str(path)) for c in cmd]
                      if "{file}" in cmd else cmd + [str(path)]) for label, cmd, _, _ in specs]
    n = 1 if path.stat().st_size > BIG_FILE else repeat
    for i in range(n):
        for res, (label, _, env, counter) in zip(results, specs):
            out = os.path.join(scratch, "stdout")
            wall, cpu, rss, code = run_child(res.cmd, env, out)
            frames = counter(out)
            os.unlink(out)
            res.runs.append(Run(round(wall, 3), round(cpu, 3), rss, frames, code))
            print(f"  {path.name} #{i + 1} {label:28s} {wall:8.2f} s wall {cpu:8.2f} s cpu {rss / 1024:8.1f} MB "
                  f"{frames:>9,} frames", flush=True)
    return results


def table(all_results: list[list[Result]], manifest: dict) -> str:
    head = ("| corpus | tool | frames (expected) | wall s | CPU s | frames/s | × tshark (wall) | × tshark (CPU) "
            "| peak MB |")
    lines = [head, "|" + "|".join(["---"] * 9) + "|"]
    for results in all_results:
        ts = next((r for r in results if r.tool.startswith("tshark")), None)
        ts_rate = ts.frames / ts.best.wall if ts and ts.best.wall else None
        ts_cpu = ts.frames / ts.cpu if ts and ts.cpu else None
        m = manifest.get(results[0].corpus, {})
        for r in results:
            rate = r.frames / r.best.wall if r.best.wall else 0
            ratio = f"{rate / ts_rate:.2f}" if ts_rate and r is not ts else ("1" if r is ts else "—")
            cratio = f"{(r.frames / r.cpu) / ts_cpu:.2f}" if ts_cpu and r is not ts and r.cpu else (
                "1" if r is ts else "—")
            exp = m.get("frames")
            frames = f"{r.frames:,}" + ("" if exp is None or exp == r.frames else f" (≠ {exp:,})")
            size = f" ({m['file_bytes'] / 2**20:,.0f} MiB, {m.get('records', 0):,} pkts)" if m else ""
            lines.append(f"| {r.corpus}{size} | {r.tool} | {frames} | {r.best.wall:.2f} | {r.cpu:.2f} | "
                         f"{rate:,.0f} | {ratio} | {cratio} | {r.peak_rss_mb:.0f} |")
    return "\n".join(lines)


def environment() -> str:
    def out(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
        except Exception:  # noqa: BLE001 - best effort
            return "?"

    commit = out(["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"])
    load = os.getloadavg()
    return (f"{time.strftime('%Y-%m-%d %H:%M:%S')} · Python {platform.python_version()} · "
            f"{out(['tshark', '--version'])} · {os.cpu_count()} CPUs · load {load[0]:.2f} · commit {commit} "
            f"(plus uncommitted work)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--big", action="store_true", help="include big.pcap")
    ap.add_argument("--out", type=Path, default=HERE / "results.md")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", nargs="*", help="corpus file names (e.g. small-frames.pcap)")
    ap.add_argument("--impl", action="append", default=[],
                    help="LABEL=PYTHONPATH to benchmark (repeatable; LABEL= is the installed dcpinspect)")
    ap.add_argument("--no-tshark", action="store_true")
    args = ap.parse_args(argv)

    manifest_path = args.corpus / "corpus.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    names = args.only or [n for n in ORDER if n != "big.pcap" or args.big]
    files = [args.corpus / n for n in names if (args.corpus / n).exists()]
    missing = [n for n in names if not (args.corpus / n).exists()]
    if missing:
        sys.stderr.write(f"missing (run bench/make_corpus.py{' --big' if args.big else ''}): {', '.join(missing)}\n")
    if not files:
        return 2
    impls = [(s.partition("=")[0], s.partition("=")[2]) for s in args.impl] or [("dcpinspect", None)]
    specs = tools(impls, not args.no_tshark)
    env_line = environment()
    all_results = []
    with tempfile.TemporaryDirectory(prefix="dcpinspect-bench-") as scratch:
        for path in files:
            all_results.append(bench_file(path, specs, args.repeat, scratch))
    text = "\n".join([
        "# dcpinspect vs tshark",
        "",
        env_line,
        "",
        f"Best of {args.repeat} runs (1 for files over {BIG_FILE // 2**20} MiB); frames/s on wall time; "
        "peak MB is the largest over the runs of the summed PSS of every process of the run. "
        "Made by `python bench/run.py`.",
        "",
        table(all_results, manifest),
        "",
        targets(all_results),
        "",
    ])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    old = args.out.read_text() if args.out.exists() else ""
    # the other runners' sections (rdb_run.py, spark_run.py), each between its markers, stay
    kept = "".join(m.group(0) for m in re.finditer(r"<!-- ([\w-]+) -->\n.*?<!-- /\1 -->\n", old, re.S))
    args.out.write_text(text + ("\n" + kept if kept else ""))
    args.out.with_suffix(".json").write_text(json.dumps(
        {"environment": env_line, "results": [[{**asdict(r), "runs": [asdict(x) for x in r.runs]} for r in rs]
                                              for rs in all_results]}, indent=1) + "\n")
    print()
    print(text)
    return 0


def targets(all_results: list[list[Result]]) -> str:
    lines = ["Targets: dcpinspect ≥ 2× tshark's frames/s; peak memory < 150 MB on a 1 GB capture.", ""]
    for results in all_results:
        ts = next((r for r in results if r.tool.startswith("tshark")), None)
        for r in results:
            if r is ts:
                continue
            bits = []
            if ts and ts.frames and r.best.wall:
                ratio = (r.frames / r.best.wall) / (ts.frames / ts.best.wall)
                bits.append(f"speed {ratio:.2f}× {'✓' if ratio >= 2 else '✗'}")
            if r.corpus == "big.pcap":
                bits.append(f"peak memory {r.peak_rss_mb:.0f} MB {'✓' if r.peak_rss_mb < 150 else '✗'}")
            if bits:
                lines.append(f"- {r.corpus} {r.tool}: " + ", ".join(bits))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
