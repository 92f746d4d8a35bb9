"""dcpinspect's RDB decoding against redis-check-rdb, rdb-cli, HDT3213/rdb, rdb-py and rdbtools on the same files: MB/s,
ratios and peak memory, in one run.

    python bench/rdb_run.py [--corpus DIR] [--only NAME ...] [--repeat 3] [--big-repeat 2] [--out bench/results.md]
                            [--venv bench/out/rdb/venv] [--no-rdbtools] [--impl LABEL=PYTHONPATH ...]

The files are ``bench/out/rdb/dump-*.rdb``, made by ``bench/make_rdb_corpus.py`` (a real
``redis-server`` filled with a realistic mix, then SAVE; ``--compat`` files hold only what
rdbtools reads). For each file, interleaved so that a busy machine slows every tool alike,
each in a fresh child process:

* ``python -m dcpinspect rdb --format summary FILE``  (keys: its first line)
* ``python -m dcpinspect rdb --format jsonl FILE``    (stdout to a scratch file; keys: its key lines)
* the same with ``--values`` (every key's value and digest), and ``--format resp`` (the data
  as commands for ``redis-cli --pipe``; keys: the commands that make them, a big
  collection's batches counted each)
* ``redis-check-rdb FILE``   (Redis' own checker: reads every key; keys: its "keys read" line)
* rdbtools 0.1.15 (PyPI, with python-lzf), from the virtualenv ``--venv``:
  ``rdb --command justkeys`` (its fastest), ``rdb --command memory`` (a per-key report of
  sizes: what comes nearest to a summary) and ``rdb --command json`` (a line per key).
  rdbtools stops at RDB version 9 and knows no listpack: on a Redis 7 file it fails at
  once ("Invalid RDB version number 10"), which the table says; the ``--compat`` file is
  the one it reads.
* the peers built under ``--peers DIR`` (default ``bench/out/peers``; each one that is not
  there is skipped, and the run says so):
  redis/librdb's ``DIR/librdb/bin/rdb-cli FILE print -k %d,%k`` (a line per key, its
  parse-only pass) and ``rdb-cli FILE json`` (``make`` in a copy of github.com/redis/librdb,
  with github.com/redis/hiredis in ``deps/hiredis``);
  HDT3213/rdb's ``DIR/bin/hdt-rdb -c json`` and ``-c memory`` (``go build`` of
  github.com/HDT3213/rdb with Debian's ``golang-go``, its module dependencies from public
  copies by ``replace`` lines in its go.mod);
  rdb-rs's Python package ``rdb-py`` (PyPI) from the virtualenv ``DIR/venv-rdbpy``: its
  ``RdbDecoder`` iterated over the file (a library without a JSON writer; it passes over
  streams, so that its keys differ);
  and rdbtools from ``DIR/venv-rdbtools`` when ``--venv`` is not there.

The file is read once first, so that every tool finds it in the page cache. Wall time and
CPU time (user + sys) come from ``os.wait4`` on each child (every tool is one process),
peak RSS from GNU ``time -f %M`` around it (the child's own ``ru_maxrss`` would count the
runner's pages until the tool starts). Keys are counted from each tool's output (rdbtools'
justkeys writes a key once per element: its runs are counted). The best of ``--repeat``
runs counts (``--big-repeat`` for files over 256 MiB); MB/s = file bytes / wall seconds
(10^6 bytes); "÷ summary" = a tool's time over ``dcpinspect rdb --format summary``'s on
the same file (above 1: slower). The markdown goes to ``--out`` in place of its RDB
section (between ``<!-- rdb -->`` and ``<!-- /rdb -->``; the rest stays as it is, and
``bench/run.py`` keeps the section when it rewrites the file), and ``rdb_results.json`` next
to it keeps every run.

The virtualenvs: ``python3 -m venv DIR && DIR/bin/pip install rdbtools python-lzf`` (and
``rdb-py`` in its own).
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
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_CORPUS = HERE / "out" / "rdb"
DEFAULT_VENV = DEFAULT_CORPUS / "venv"
DEFAULT_PEERS = HERE / "out" / "peers"
#: where a command takes the file, when not last
FILE = "{file}"
BIG_FILE = 256 * 2**20
#: the RDB section of results.md: between these markers (the other runners keep it)
BEGIN, END = "<!-- rdb -->", "<!-- /rdb -->"
SECTION = "# RDB: dcpinspect vs redis-check-rdb, rdb-cli, HDT3213/rdb, rdb-py and rdbtools"
SUMMARY = "dcpinspect summary"


@dataclass
class Run:
    wall: float
    cpu: float
    rss_kb: int
    keys: int | None
    code: int
    error: str = ""


@dataclass
class Result:
    file: str
    tool: str
    cmd: list[str]
    runs: list[Run] = field(default_factory=list)

    @property
    def best(self) -> Run:
        return min(self.runs, key=lambda r: r.wall)

    @property
    def failed(self) -> bool:
        return all(r.code not in (0, 1) or not r.keys for r in self.runs)

    @property
    def peak_mb(self) -> float:
        return max(r.rss_kb for r in self.runs) / 1024


# --------------------------------------------------------------------------- counting keys
# each reads the tool's output a line at a time (a jsonl output of a 1 GB file is 250 MB:
# the runner stays small, and so do the children it forks)

def keys_summary(lines) -> int | None:
    for line in lines:
        m = re.search(rb"(\d+) keys in \d+ dbs?", line)
        if m:
            return int(m.group(1))
    return None


def keys_resp(lines) -> int:
    """Keys of ``rdb --format resp``: its stderr line says them; here, the commands that make
    a key (a key of a big collection takes several commands, one SET/RPUSH/... first)."""
    n = 0
    want = False
    for line in lines:
        if want:
            n += line.rstrip(b"\r\n") in _FIRST
            want = False
        elif line.startswith(b"$"):
            want = True
    return n


#: the commands a key starts with in ``rdb --format resp``'s output (a batch after the first
#: repeats it, so a key of a big collection counts more than once: good enough for a check)
_FIRST = {b"SET", b"RPUSH", b"SADD", b"ZADD", b"HSET", b"XSETID"}


def keys_jsonl(lines) -> int:
    return sum(line.startswith(b'{"kind":"key"') for line in lines)


def keys_check_rdb(lines) -> int | None:
    for line in lines:
        m = re.search(rb"(\d+) keys read", line)
        if m:
            return int(m.group(1))
    return None


def keys_rdbcli_json(lines) -> int:
    """rdb-cli json: a key a line, indented by four spaces, in each db's object."""
    return sum(line.startswith(b'    "') for line in lines)


def keys_hdt_json(lines) -> int:
    return sum(line.startswith(b'{"db"') for line in lines)


def keys_lines(lines) -> int:
    return sum(1 for _ in lines)


def keys_said(lines) -> int | None:
    """A driver's last line: ``N keys``."""
    n = None
    for line in lines:
        m = re.match(rb"(\d+) keys$", line.strip())
        if m:
            n = int(m.group(1))
    return n


#: rdb-py's decoder iterated over the file: its key items counted (the others are its
#: select_db, resize_db, aux_field and checksum items)
RDBPY_DRIVER = ("import sys, rdb\n"
                "n = 0\n"
                "for item in rdb.RdbDecoder(sys.argv[1]):\n"
                "    n += item['type'] not in ('select_db', 'resize_db', 'aux_field', 'checksum')\n"
                "print(n, 'keys')\n")


def keys_rdbtools_json(lines) -> int:
    return sum(line.startswith(b'"') for line in lines)


def keys_rdbtools_memory(lines) -> int:
    return max(sum(1 for _ in lines) - 1, 0)  # a header line


def keys_runs(lines) -> int:
    """rdbtools justkeys writes a key once for each of its elements: the runs of one key."""
    n, last = 0, None
    for line in lines:
        if line != last:
            n, last = n + 1, line
    return n


# --------------------------------------------------------------------------- running

#: peak RSS through GNU time: a child's own ru_maxrss counts the pages of the process that
#: forked it until it executes the tool (a Python runner's tens of MB); time's are a few
TIME = "/usr/bin/time"


def run_child(cmd: list[str], env: dict | None, out_path: str) -> tuple[float, float, int, int, str]:
    """(wall s, user+sys s, peak RSS KiB, exit code, stderr's last line) of ``cmd``, stdout to ``out_path``."""
    with open(out_path, "wb") as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r") as peak:
        timed = [TIME, "-f", "%M", "-o", peak.name, *cmd] if os.access(TIME, os.X_OK) else cmd
        t = time.perf_counter()
        p = subprocess.Popen(timed, stdout=out, stderr=err, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        p.returncode = code = os.waitstatus_to_exitcode(status)
        err.seek(0)
        lines = err.read().decode("utf-8", "replace").strip().splitlines()
        said = peak.read().split()
        rss = int(said[-1]) if timed is not cmd and said and said[-1].isdigit() else ru.ru_maxrss
    return wall, ru.ru_utime + ru.ru_stime, rss, code, lines[-1][:160] if lines else ""


def child_env(**extra: str) -> dict:
    """The caller's environment without PYTHONUNBUFFERED and PYTHONDONTWRITEBYTECODE (as
    bench/run.py: not how an installed tool runs), plus ``extra``."""
    drop = ("PYTHONUNBUFFERED", "PYTHONPROFILEIMPORTTIME", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra)
    return env


def peers(root: Path) -> tuple[list[tuple[str, list[str], dict, callable]], list[str]]:
    """The peers found under ``root`` (see the module's text), and a line for each one not there."""
    out, missing = [], []
    rdb_cli = root / "librdb" / "bin" / "rdb-cli"
    if os.access(rdb_cli, os.X_OK):
        quiet = [str(rdb_cli), FILE, "-l", "/dev/null"]
        out.append(("rdb-cli print", quiet + ["print", "-k", "%d,%k"], child_env(), keys_lines))
        out.append(("rdb-cli json", quiet + ["json"], child_env(), keys_rdbcli_json))
    else:
        missing.append(f"redis/librdb's rdb-cli is not at {rdb_cli}: not measured")
    hdt = root / "bin" / "hdt-rdb"
    if os.access(hdt, os.X_OK):
        out.append(("HDT3213/rdb json", [str(hdt), "-c", "json", "-o", "/dev/stdout", FILE], child_env(),
                    keys_hdt_json))
        out.append(("HDT3213/rdb memory", [str(hdt), "-c", "memory", "-o", "/dev/stdout", FILE], child_env(),
                    keys_rdbtools_memory))
    else:
        missing.append(f"HDT3213/rdb is not at {hdt}: not measured")
    rdbpy = root / "venv-rdbpy" / "bin" / "python"
    if os.access(rdbpy, os.X_OK):
        out.append(("rdb-py iterate", [str(rdbpy), "-c", RDBPY_DRIVER, FILE], child_env(), keys_said))
    else:
        missing.append(f"rdb-py is not in {rdbpy.parent.parent}: not measured")
    return out, missing


def tools(impls: list[tuple[str, str]], venv: Path | None) -> list[tuple[str, list[str], dict, callable]]:
    out = []
    for label, path in impls:
        env = child_env(PYTHONPATH=path)
        base = [sys.executable, "-P", "-m", "dcpinspect", "rdb"]  # -P: not the cwd's copy
        name = "dcpinspect" if label == "dcpinspect" else f"dcpinspect[{label}]"
        out.append((f"{name} summary", base + ["--format", "summary"], env, keys_summary))
        out.append((f"{name} jsonl", base + ["--format", "jsonl"], env, keys_jsonl))
        out.append((f"{name} jsonl --values", base + ["--format", "jsonl", "--values"], env, keys_jsonl))
        out.append((f"{name} resp", base + ["--format", "resp"], env, keys_resp))
    out.append(("redis-check-rdb", ["redis-check-rdb"], child_env(), keys_check_rdb))
    if venv is not None:
        rdb = str(venv / "bin" / "rdb")
        out.append(("rdbtools justkeys", [rdb, "--command", "justkeys"], child_env(), keys_runs))
        out.append(("rdbtools memory", [rdb, "--command", "memory"], child_env(), keys_rdbtools_memory))
        out.append(("rdbtools json", [rdb, "--command", "json"], child_env(), keys_rdbtools_json))
    return out


def warm(path: Path) -> None:
    """Read the file once, so that no tool pays for reading it from the disk."""
    with open(path, "rb") as fh:
        while fh.read(1 << 24):
            pass


def bench_file(path: Path, specs, repeat: int, big_repeat: int, scratch: str) -> list[Result]:
    results = [Result(path.name, label, [str(path) if a == FILE else a for a in cmd] if FILE in cmd
                      else cmd + [str(path)]) for label, cmd, _, _ in specs]
    n = big_repeat if path.stat().st_size > BIG_FILE else repeat
    warm(path)
    for i in range(n):
        for res, (label, _, env, counter) in zip(results, specs):
            if res.runs and res.failed:
                continue  # a tool that cannot read the file is not run again
            out = os.path.join(scratch, "stdout")
            wall, cpu, rss, code, error = run_child(res.cmd, env, out)
            with open(out, "rb") as fh:
                keys = counter(fh)
            os.unlink(out)
            failed = code not in (0, 1) or not keys
            res.runs.append(Run(round(wall, 3), round(cpu, 3), rss, keys, code, error if failed else ""))
            said = f"exit {code}: {error}" if failed else f"{keys:>9,} keys"
            print(f"  {path.name} #{i + 1} {label:28s} {wall:8.2f} s wall {cpu:8.2f} s cpu {rss / 1024:8.1f} MB  {said}",
                  flush=True)
    return results


# --------------------------------------------------------------------------- the table

def manifest(path: Path) -> dict:
    meta = path.with_suffix(".json")
    return json.loads(meta.read_text()) if meta.exists() else {}


def table(all_results: list[list[Result]], corpus: Path) -> str:
    head = ("| file | tool | keys | wall s | CPU s | MB/s | ÷ summary (wall) | ÷ summary (CPU) | peak RSS MB |")
    lines = [head, "|" + "|".join(["---"] * 9) + "|"]
    for results in all_results:
        path = corpus / results[0].file
        size = path.stat().st_size
        meta = manifest(path)
        expected = meta.get("keys")
        what = f"{results[0].file} ({size / 1e6:,.0f} MB, {expected:,} keys)" if expected else results[0].file
        ref = next((r for r in results if r.tool.endswith("summary") and not r.failed), None)
        for r in results:
            if r.failed:
                lines.append(f"| {what} | {r.tool} | fails: {r.best.error or f'exit {r.best.code}'} "
                             f"| {r.best.wall:.2f} | {r.best.cpu:.2f} | — | — | — | {r.peak_mb:.0f} |")
                continue
            b = r.best
            keys = "?" if b.keys is None else f"{b.keys:,}" + ("" if expected in (None, b.keys) else " (≠)")
            ratio = f"{b.wall / ref.best.wall:.2f}" if ref else "—"
            cratio = f"{b.cpu / ref.best.cpu:.2f}" if ref and ref.best.cpu else "—"
            lines.append(f"| {what} | {r.tool} | {keys} | {b.wall:.2f} | {b.cpu:.2f} | {size / 1e6 / b.wall:,.1f} | "
                         f"{ratio} | {cratio} | {r.peak_mb:.0f} |")
    return "\n".join(lines)


def targets(all_results: list[list[Result]], corpus: Path) -> str:
    lines = ["Targets: `rdb --format summary` ≥ 50 MB/s, ahead of every peer measured on the same file, "
             "peak memory < 150 MB.", ""]
    for results in all_results:
        size = (corpus / results[0].file).stat().st_size
        for ref in results:
            if not ref.tool.startswith("dcpinspect") or ref.failed:
                continue
            b = ref.best
            bits = []
            if ref.tool.endswith("summary"):
                rate = size / 1e6 / b.wall
                bits.append(f"{rate:.1f} MB/s {'✓' if rate >= 50 else '✗'}")
                peers = [r for r in results if not r.tool.startswith("dcpinspect") and not r.failed]
                if peers:
                    slowest = min(p.best.wall / b.wall for p in peers)
                    bits.append(f"ahead of every peer that reads it ({', '.join(p.tool for p in peers)}): "
                                f"{'✓' if slowest > 1 else '✗'} (the nearest takes {slowest:.2f}× its time)")
            if ref.tool.endswith("--values"):
                json_peers = [r for r in results if not r.tool.startswith("dcpinspect") and not r.failed
                              and r.tool.endswith("json")]
                if json_peers:
                    fastest = min(json_peers, key=lambda r: r.best.wall)
                    times = fastest.best.wall / b.wall
                    bits.append(f"{times:.2f}× the speed of the fastest peer's JSON ({fastest.tool}) "
                                f"{'✓' if times >= 2 else '✗'} (target 2×)")
            bits.append(f"peak {ref.peak_mb:.0f} MB {'✓' if ref.peak_mb < 150 else '✗'}")
            lines.append(f"- {results[0].file} {ref.tool}: " + ", ".join(bits))
    return "\n".join(lines)


def environment(venv: Path | None) -> str:
    def out(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
        except Exception:  # noqa: BLE001 - best effort
            return "?"

    commit = out(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    rdbtools = "not measured"
    if venv is not None:
        rdbtools = out([str(venv / "bin" / "python"), "-c",
                        "import importlib.metadata as m; print('rdbtools', m.version('rdbtools'), "
                        "'+ python-lzf', m.version('python-lzf'))"])
    load = os.getloadavg()
    return (f"{time.strftime('%Y-%m-%d %H:%M:%S')} · Python {platform.python_version()} · "
            f"{out(['redis-server', '--version'])} · {rdbtools} · {os.cpu_count()} CPUs · load {load[0]:.2f} · "
            f"commit {commit}")


def write_section(out: Path, text: str) -> None:
    """``text`` between the RDB markers of ``out``, in place of what they held (appended when
    it has none); the rest of the file as it was."""
    old = out.read_text() if out.exists() else ""
    block = f"{BEGIN}\n{text.rstrip()}\n{END}\n"
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + block + old[old.index(END) + len(END):].lstrip("\n")
    else:
        new = (old.rstrip("\n") + "\n\n" if old else "") + block
    out.write_text(new)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--only", nargs="*", help="file names in --corpus (default: every dump-*.rdb)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--big-repeat", type=int, default=2, help=f"runs of files over {BIG_FILE // 2**20} MiB")
    ap.add_argument("--out", type=Path, default=HERE / "results.md")
    ap.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="the virtualenv rdbtools is installed in")
    ap.add_argument("--no-rdbtools", action="store_true")
    ap.add_argument("--peers", type=Path, default=DEFAULT_PEERS,
                    help="the directory the peers are built in (rdb-cli, HDT3213/rdb, rdb-py; see above)")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--impl", action="append", default=[],
                    help="LABEL=PYTHONPATH of a dcpinspect tree to time (repeatable; default: this one)")
    args = ap.parse_args(argv)

    names = args.only or sorted(p.name for p in args.corpus.glob("dump-*.rdb"))
    files = [args.corpus / n for n in names if (args.corpus / n).exists()]
    if not files:
        sys.stderr.write(f"no RDB file in {args.corpus} (run bench/make_rdb_corpus.py)\n")
        return 2
    venv = None if args.no_rdbtools else args.venv
    if venv is not None and not (venv / "bin" / "rdb").exists() and (args.peers / "venv-rdbtools" / "bin" / "rdb").exists():
        venv = args.peers / "venv-rdbtools"
    if venv is not None and not (venv / "bin" / "rdb").exists():
        sys.stderr.write(f"rdbtools is not in {venv} (python3 -m venv {venv} && {venv}/bin/pip install rdbtools "
                         "python-lzf); going on without it\n")
        venv = None
    impls = [(s.partition("=")[0], s.partition("=")[2]) for s in args.impl] or [("dcpinspect", str(ROOT))]
    specs = tools(impls, venv)
    missing: list[str] = []
    if not args.no_peers:
        found, missing = peers(args.peers)
        specs += found
        for line in missing:
            sys.stderr.write(line + "\n")
    env_line = environment(venv)
    all_results = []
    with tempfile.TemporaryDirectory(prefix="dcpinspect-rdb-bench-") as scratch:
        for path in files:
            all_results.append(bench_file(path, specs, args.repeat, args.big_repeat, scratch))
    mixes = []
    for results in all_results:
        meta = manifest(args.corpus / results[0].file)
        if meta:
            kinds = ", ".join(f"{k} {v:,}" for k, v in meta.get("kinds", {}).items())
            mixes.append(f"- {results[0].file}: redis {meta.get('redis_version')}, {meta.get('keys', 0):,} keys "
                         f"(db 0 and 1: {meta.get('keys_per_db')}), seed {meta.get('seed')}"
                         f"{', rdbtools-compatible' if meta.get('compat') else ''}: {kinds}")
    text = "\n".join([
        SECTION,
        "",
        env_line,
        "",
        f"Best of {args.repeat} runs ({args.big_repeat} for files over {BIG_FILE // 2**20} MiB), each tool in a fresh "
        "process, the file read once before them (in the page cache for every tool); "
        "MB/s = file bytes (10^6) per wall second; \"÷ summary\" = the tool's time over `dcpinspect rdb "
        "--format summary`'s on the same file (above 1: slower); peak RSS from GNU time. Made by "
        "`python bench/rdb_run.py`, on files of `python bench/make_rdb_corpus.py`.",
        "",
        table(all_results, args.corpus),
        "",
        *([f"Not measured: {'; '.join(missing)}.", ""] if missing else []),
        "The files:",
        "",
        *mixes,
        "",
        targets(all_results, args.corpus),
        "",
    ])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_section(args.out, text)
    (args.out.parent / "rdb_results.json").write_text(json.dumps(
        {"environment": env_line, "results": [[{**asdict(r), "runs": [asdict(x) for x in r.runs]} for r in rs]
                                              for rs in all_results]}, indent=1) + "\n")
    print()
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
