"""The memory estimate against redis-server's ``MEMORY USAGE key SAMPLES 0`` and against
rdbtools' (``rdb -c memory``) and HDT3213/rdb's (``rdb -c memory``), on the same keys.

    python bench/memory_vs_rdbtools.py [--rdbtools PATH] [--hdt PATH]

HDT3213/rdb (Go) reads Redis 7 files: it is judged on the whole dataset of
tests/test_memory_usage.py, as the server loads it back (``DEBUG RELOAD``).

rdbtools 0.1.15 stops at RDB version 9 and knows no listpack, so the file is the dataset
of tests/test_memory_usage.py without lists and streams (Redis 7 writes them only as
quicklists of listpacks and listpack streams), written by a server that keeps hashes and
sorted sets out of listpacks (``hash-max-listpack-entries 0``, ``zset-max-listpack-entries
0``), saved, loaded back (``DEBUG RELOAD``) and measured, then its header turned to
version 9 (bench/make_rdb_corpus.py's ``make_compat``). dcpinspect reads it with a
redis.conf giving the same two thresholds (``--config``). Prints the per-key errors of
both and their median, 95th percentile and sum."""

from __future__ import annotations

import argparse
import csv
import io
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests"), str(HERE)]

import servers  # noqa: E402
import test_memory_usage as dataset  # noqa: E402
from make_rdb_corpus import make_compat  # noqa: E402
from test_real_redis_rdb import Client  # noqa: E402
from dcpinspect.families.redis.reports import memory  # noqa: E402
from dcpinspect.families.redis.rdb.records import KeyRecord  # noqa: E402
from dcpinspect.families.redis.reports.snapshots import records  # noqa: E402

THRESHOLDS = "hash-max-listpack-entries 0\nzset-max-listpack-entries 0\n"


def measure(workdir: Path, compat: bool = True) -> tuple[Path, dict]:
    workdir.mkdir(parents=True, exist_ok=True)
    proc, port = dataset._start(workdir)
    try:
        c = Client(port)
        commands = dataset.dataset()
        if compat:
            c.call("CONFIG", "SET", "hash-max-listpack-entries", "0")
            c.call("CONFIG", "SET", "zset-max-listpack-entries", "0")
            commands = [cmd for cmd in commands if cmd[0] not in ("RPUSH", "XADD", "XGROUP", "XREADGROUP")]
        for at in range(0, len(commands), 500):
            c.pipeline(commands[at:at + 500])
        c.call("SAVE")
        c.call("DEBUG", "RELOAD")
        keys = c.call("KEYS", "*")
        usage = dict(zip(keys, c.pipeline([("MEMORY", "USAGE", k, "SAMPLES", "0") for k in keys])))
        c.close()
    finally:
        servers._stop(proc)
    path = workdir / "dump.rdb"
    if compat:
        make_compat(path)
    return path, usage


def figures(errors: list[float]) -> tuple[float, float]:
    a = sorted(abs(e) for e in errors)
    return statistics.median(a), a[min(len(a) - 1, round(0.95 * (len(a) - 1)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rdbtools", default="rdb", help="rdbtools' rdb script")
    ap.add_argument("--hdt", help="HDT3213/rdb's binary (Redis 7 files)")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="memory-vs-rdbtools-"))
    path, usage = measure(workdir)
    conf = workdir / "redis.conf"
    conf.write_text(THRESHOLDS)
    cfg = memory.Config.read(conf)
    ours = {r.key: memory.key_memory(r, cfg).usage for r in records(path, keep=True) if type(r) is KeyRecord}
    got = subprocess.run([args.rdbtools, "-c", "memory", str(path)], capture_output=True, text=True, check=True)
    theirs = {}
    for row in csv.DictReader(io.StringIO(got.stdout)):
        theirs[row["key"].encode()] = int(row["size_in_bytes"])
    compare(usage, {"dcpinspect": ours, "rdbtools 0.1.15": theirs})
    if args.hdt:
        path, usage = measure(workdir / "redis7", compat=False)
        ours = {r.key: memory.key_memory(r).usage for r in records(path, keep=True) if type(r) is KeyRecord}
        got = subprocess.run([args.hdt, "-c", "memory", "-o", str(workdir / "hdt.csv"), str(path)],
                             capture_output=True, text=True, check=True)
        with open(workdir / "hdt.csv", newline="") as fh:
            hdt = {row["key"].encode(): int(row["size"]) for row in csv.DictReader(fh)}
        print()
        compare(usage, {"dcpinspect": ours, "HDT3213/rdb": hdt})
    return 0


def compare(usage: dict, estimates: dict) -> None:
    keys = sorted(usage)
    names = list(estimates)
    print("| key | MEMORY USAGE | " + " | ".join(f"{n} | error" for n in names) + " |")
    print("|---|---|" + "---|---|" * len(names))
    for k in sorted(keys, key=lambda k: -usage[k])[:12]:
        cells = " | ".join(f"{e[k]:,} | {(e[k] - usage[k]) / usage[k]:+.1%}" for e in estimates.values())
        print(f"| {k[:24].decode()} | {usage[k]:,} | {cells} |")
    total = sum(usage[k] for k in keys)
    for name, est in estimates.items():
        med, p95 = figures([(est[k] - usage[k]) / usage[k] for k in keys])
        print(f"{name}: {len(keys)} keys, median |error| {med:.1%}, p95 {p95:.1%}, "
              f"sum {(sum(est[k] for k in keys) - total) / total:+.1%}")


if __name__ == "__main__":
    sys.exit(main())
