"""``dcpinspect analyze`` on Spark against the single-process streaming engine, on the same files.

    nice python bench/spark_run.py [--corpus DIR] [--out bench/results.md] [--repeat 2]
                                   [--set NAME=FILE,FILE...] [--masters 'local[1]' 'local[2]']

Two inputs by default, from ``bench/make_corpus.py``'s corpus (``--big`` made): the
**several files** ``small-frames.pcap``, ``large-values.pcap`` and ``many-flows.pcap``
(together about 0.8 GiB) and the **large file** ``big.pcap`` (about 1 GiB). For each it
runs, interleaved so that a busy machine slows every run alike, each in a fresh process:

* ``dcpinspect validate -j1 FILE...``: the streaming engine in one process (the reference);
* ``dcpinspect validate FILE...``: as by default (worker processes on large files);
* ``dcpinspect analyze FILE... --out DIR --master local[N]`` for each ``--masters``.

``analyze`` reports its job's seconds (planning, decoding, writing every table) apart from
Spark's start-up (the JVM, the session, the Python workers' first start); the table gives
both, and the ratio to ``validate -j1`` uses the job's seconds (start-up excluded, as the
target says). Memory is sampled every half second over the whole process tree (PSS, see
``run.py``: reading it walks a process's page tables, some 15 ms of CPU for a JVM of 400 MB
and 30 ms for the whole tree, and holds up the process's own page faults, so that sampling
it every 50 ms took a sixth of a 2-core machine from ``analyze``) and split into the JVM,
the executors' Python workers (``pyspark.daemon`` and the workers it forks) and the rest
(the driver's Python): the executors' peak on the large file is the figure of interest (flat
in the file's size). CPU seconds are summed over the same processes (``/proc/PID/stat``, as
last seen): on a machine that other work keeps busy, the executors' Python CPU against
``validate -j1``'s says what free cores would do. The markdown goes between the
``<!-- spark -->`` markers of ``--out`` (added at its end if missing), and to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import _pss_kb, child_env, environment  # noqa: E402

DEFAULT_CORPUS = HERE / "out" / "corpus"
SETS = {"several files": ["small-frames.pcap", "large-values.pcap", "many-flows.pcap"], "large file": ["big.pcap"]}
BEGIN, END = "<!-- spark -->", "<!-- /spark -->"
#: the process tree and its CPU ticks are read every 50 ms, its memory (PSS) every this many
PSS_EVERY = 10
_SUMMARY = re.compile(r"(\d+) frames .* in ([\d.]+)s \(Spark start-up ([\d.]+)s more\)")


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


class Memory(threading.Thread):
    """Peak PSS (KiB) of a process tree, by part: ``jvm``, ``workers`` (pyspark.daemon and its
    children), ``driver`` (the rest), and ``total``, each the peak of its own sum."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = {"jvm": 0, "workers": 0, "driver": 0, "total": 0}
        self._halt = threading.Event()
        self._kinds: dict[int, str] = {}
        self.cpu: dict[int, tuple[str, int]] = {}  # pid → (kind, its CPU ticks when last seen)

    def _kind(self, pid: int, parent_kind: str | None) -> str:
        kind = self._kinds.get(pid)
        if kind is None:
            cmd = _cmdline(pid)
            if parent_kind == "workers" or "pyspark.daemon" in cmd or "pyspark/daemon" in cmd:
                kind = "workers"
            elif os.path.basename(cmd.split(" ", 1)[0]) == "java":
                kind = "jvm"
            else:
                return "driver"  # not kept: a launcher script execs the JVM under the same pid
            self._kinds[pid] = kind
        return kind

    def _walk(self, pid: int, parent_kind: str | None, sums: dict | None) -> None:
        """The tree's processes and their CPU ticks; their PSS into ``sums`` (None: not read)."""
        kind = self._kind(pid, parent_kind)
        if sums is not None:
            sums[kind] += _pss_kb(pid)
        ticks = _cpu_ticks(pid)
        if ticks is not None:
            self.cpu[pid] = (kind, ticks)
        try:  # the children, each with this one's kind to inherit (a worker's forks are workers)
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as fh:
                    for child in fh.read().split():
                        self._walk(int(child), kind, sums)
        except OSError:
            pass

    def run(self) -> None:
        rounds = 0
        while not self._halt.is_set():
            sums = {"jvm": 0, "workers": 0, "driver": 0} if rounds % PSS_EVERY == 0 else None
            self._walk(self.pid, None, sums)
            if sums is not None:
                sums["total"] = sum(sums.values())
                for k, v in sums.items():
                    self.peak[k] = max(self.peak[k], v)
            rounds += 1
            self._halt.wait(0.05)

    def stop(self) -> dict:
        self._halt.set()
        self.join()
        return self.peak

    def cpu_seconds(self) -> dict:
        """CPU seconds (user + system) of each part, as last seen (a process's last 50 ms
        may be missed)."""
        out = {"jvm": 0.0, "workers": 0.0, "driver": 0.0}
        for kind, ticks in self.cpu.values():
            out[kind] += ticks / os.sysconf("SC_CLK_TCK")
        return {k: round(v, 1) for k, v in out.items()}


def _cpu_ticks(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


@dataclass
class Run:
    label: str
    wall: float
    job: float | None = None  # analyze: the job's seconds, start-up excluded
    startup: float | None = None
    frames: int | None = None
    memory: dict = field(default_factory=dict)
    cpu: dict = field(default_factory=dict)  # CPU seconds by part (jvm, workers, driver)
    code: int = 0


def run(cmd: list[str], env: dict, label: str) -> Run:
    import subprocess

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        began = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, stdin=subprocess.DEVNULL)
        memory = Memory(proc.pid)
        memory.start()
        code = proc.wait()
        wall = time.perf_counter() - began
        peak = memory.stop()
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
        err.seek(0)
        if code not in (0, 1):
            sys.stderr.write(f"warning: {label} exited {code}: {err.read().decode('utf-8', 'replace')[-800:]}\n")
    got = Run(label, round(wall, 2), memory={k: round(v / 1024) for k, v in peak.items()}, code=code,
              cpu=memory.cpu_seconds())
    m = _SUMMARY.search(text)
    if m:
        got.frames, got.job, got.startup = int(m.group(1)), float(m.group(2)), float(m.group(3))
    return got


def bench(name: str, files: list[Path], masters: list[str], repeat: int, scratch: str) -> list[Run]:
    base = [sys.executable, "-m", "dcpinspect"]
    env = child_env()
    specs = [("validate -j1", base + ["validate", "--jobs", "1", *map(str, files)]),
             ("validate", base + ["validate", *map(str, files)])]
    for master in masters:
        specs.append((f"analyze {master}", base + ["analyze", *map(str, files), "--out", os.path.join(scratch, "t"),
                                                  "--master", master]))
    runs: list[Run] = []
    for i in range(repeat):
        for label, cmd in specs:
            got = run(cmd, env, label)
            runs.append(got)
            extra = f" job {got.job:.2f} s + start-up {got.startup:.2f} s" if got.job is not None else ""
            print(f"  {name} #{i + 1} {label:22s} {got.wall:8.2f} s wall{extra}  memory {got.memory} MB  "
                  f"cpu {got.cpu} s", flush=True)
            shutil.rmtree(os.path.join(scratch, "t"), ignore_errors=True)
    return runs


def best(runs: list[Run], label: str) -> Run:
    mine = [r for r in runs if r.label == label]
    return min(mine, key=lambda r: r.job if r.job is not None else r.wall)


def table(results: dict[str, tuple[list[Path], list[Run]]], masters: list[str]) -> str:
    lines = ["| input | run | wall s | job s (start-up apart) | Spark start-up s | × `validate -j1` | "
             "CPU s: all / executors' Python | peak MB: JVM / executors' Python / driver |",
             "|" + "|".join(["---"] * 8) + "|"]
    for name, (files, runs) in results.items():
        size = sum(f.stat().st_size for f in files)
        what = f"{name}: {', '.join(f.name for f in files)} ({size / 2**20:,.0f} MiB)"
        ref = best(runs, "validate -j1").wall
        for label in ["validate -j1", "validate", *[f"analyze {m}" for m in masters]]:
            r = best(runs, label)
            secs = r.job if r.job is not None else r.wall
            mem = r.memory
            mems = (f"{mem.get('jvm', 0)} / {mem.get('workers', 0)} / {mem.get('driver', 0)}" if r.job is not None
                    else f"— / — / {mem.get('total', 0)}")
            cpu = r.cpu or {}
            cpus = (f"{sum(cpu.values()):.1f} / {cpu.get('workers', 0):.1f}" if r.job is not None
                    else f"{sum(cpu.values()):.1f} / —")
            lines.append(f"| {what} | `{label}` | {r.wall:.1f} | {secs:.1f} | "
                         f"{'' if r.startup is None else f'{r.startup:.1f}'} | {ref / secs:.2f} | {cpus} | {mems} |")
    return "\n".join(lines)


def place(text: str, out: Path) -> None:
    """``text`` between the markers of ``out`` (kept apart from what ``run.py`` writes)."""
    old = out.read_text() if out.exists() else ""
    block = f"{BEGIN}\n{text}\n{END}\n"
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + block + old[old.index(END) + len(END):].lstrip("\n")
    else:
        new = old.rstrip("\n") + "\n\n" + block
    out.write_text(new)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--out", type=Path, default=HERE / "results.md")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--masters", nargs="*", default=["local[1]", "local[2]"])
    ap.add_argument("--set", action="append", default=[], metavar="NAME=FILE,FILE...",
                    help="an input of corpus files (replaces the default two)")
    args = ap.parse_args(argv)
    sets = dict(SETS)
    if args.set:
        sets = {name: files.split(",") for name, files in (s.split("=", 1) for s in args.set)}
    missing = [f for files in sets.values() for f in files if not (args.corpus / f).exists()]
    if missing:
        sys.exit(f"missing in {args.corpus}: {', '.join(missing)} (python bench/make_corpus.py --big)")
    results = {}
    with tempfile.TemporaryDirectory(prefix="dcpinspect-spark-bench-") as scratch:
        for name, names in sets.items():
            files = [args.corpus / f for f in names]
            results[name] = (files, bench(name, files, args.masters, args.repeat, scratch))
    text = (f"### Spark: `analyze` against the streaming engine\n\n{environment()}\n\n"
            f"{table(results, args.masters)}\n")
    print(text)
    place(text, args.out)
    raw = {name: [r.__dict__ for r in runs] for name, (_, runs) in results.items()}
    (args.out.parent / "spark_results.json").write_text(json.dumps(raw, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
