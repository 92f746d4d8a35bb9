"""The memory model (dcpinspect/families/redis/reports/memory.py) judged by a real redis-server:
a dataset of every type and encoding at several sizes (tiny, on each side of each
encoding's conversion threshold, big) is written, SAVEd and loaded back (DEBUG RELOAD, so
that the server holds the keys as a load of the file makes them); for every key
``MEMORY USAGE key SAMPLES 0`` is compared with the estimate read from the saved file.
Targets over the whole set: median absolute error at most 3 %, 95th percentile at most
10 %, the sum within 5 %. The error table is printed (``pytest -s``)."""

from __future__ import annotations

import random
import statistics
import subprocess
import time
from pathlib import Path

import pytest

import servers
from servers import LOOPBACK, free_port, require, wait_until
from test_real_redis_rdb import Client, ReplyError, server_version
from dcpinspect.families.redis.reports import memory
from dcpinspect.families.redis.rdb.records import KeyRecord
from dcpinspect.families.redis.reports.snapshots import records as rdb_records


def _words(rng: random.Random, n: int, lo: int, hi: int, prefix: str = "") -> list[str]:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return [prefix + "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi))) + f"-{i}" for i in range(n)]


def dataset(seed: int = 26) -> list[tuple]:
    """The commands of the dataset: every type, each encoding tiny, at and past its
    threshold (the server's defaults: 512 pairs of hashes, 128 members of sorted sets, 64
    bytes for either, 512 integers for intsets, 8 KB list nodes), and big."""
    rng = random.Random(seed)
    out: list[tuple] = []
    # strings: shared and unshared integers, embstr up to 44 bytes, raw by SDS class, LZF
    for i, v in enumerate(["0", "42", "9999", "10000", "-7", "9876543210123", "-9223372036854775808",
                           "12345678901234567890", "007", "3.14"]):
        out.append(("SET", f"str:int:{i}", v))
    for n in (0, 1, 10, 31, 32, 44, 45, 100, 255, 256, 1000, 5000, 65535, 65536, 300_000):
        out.append(("SET", f"str:len:{n}", "".join(rng.choice("abcdefghij") for _ in range(n))))
        out.append(("SET", f"str:lzf:{n}", "x" * n))
    out.append(("SET", "k" * 300, "long key"))
    out.append(("SET", "k" * 40, "forty"))
    # lists: one node, several, big elements
    for n in (1, 5, 100, 1000, 20000):
        out.append(("RPUSH", f"list:{n}", *_words(rng, n, 1, 12)))
    out.append(("RPUSH", "list:ints", *[str(rng.randint(-10**9, 10**9)) for _ in range(3000)]))
    out.append(("RPUSH", "list:wide", *_words(rng, 300, 100, 600)))
    # sets: intsets at their threshold, hash tables
    for n in (1, 5, 512):
        out.append(("SADD", f"set:intset:{n}", *[str(rng.randint(-10**6, 10**6) * 1000 + i) for i in range(n)]))
    out.append(("SADD", "set:intset:wide", "1", "2", str(1 << 40)))
    out.append(("SADD", "set:ints:513", *[str(i * 7) for i in range(513)]))
    for n in (1, 5, 100, 1000, 20000):
        out.append(("SADD", f"set:ht:{n}", *_words(rng, n, 3, 30)))
    # hashes: listpack up to 512 pairs and 64 bytes, hash tables past either
    for n in (1, 5, 512, 513, 1000, 20000):
        fields = _words(rng, n, 2, 14, "f")
        out.append(("HSET", f"hash:{n}", *[x for f in fields for x in (f, str(rng.randint(0, 10**6)))]))
    out.append(("HSET", "hash:value64", "a", "v" * 64, "b", "1"))
    out.append(("HSET", "hash:value65", "a", "v" * 65, "b", "1"))
    out.append(("HSET", "hash:wide", *[x for f in _words(rng, 50, 5, 10) for x in (f, "w" * rng.randint(70, 400))]))
    # sorted sets: listpack up to 128 members of 64 bytes, skiplists past either
    for n in (1, 5, 128, 129, 1000, 20000):
        members = _words(rng, n, 2, 16, "m")
        out.append(("ZADD", f"zset:{n}", *[x for m in members for x in (str(rng.choice([rng.randint(0, 10**4),
                                                                                      rng.random() * 100])), m)]))
    out.append(("ZADD", "zset:member64", "1", "m" * 64, "2", "b"))
    out.append(("ZADD", "zset:member65", "1", "m" * 65, "2", "b"))
    # streams: one entry, many nodes, consumer groups with pending entries
    for n in (1, 10, 100, 1000, 10000):
        out.extend(("XADD", f"stream:{n}", "*", "field", str(i), "other", "v" * (i % 20)) for i in range(n))
    out.append(("XGROUP", "CREATE", "stream:1000", "g1", "0"))
    out.append(("XGROUP", "CREATE", "stream:1000", "g2", "$"))
    out.append(("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "300", "STREAMS", "stream:1000", ">"))
    out.append(("XREADGROUP", "GROUP", "g1", "bob", "COUNT", "50", "STREAMS", "stream:1000", ">"))
    out.append(("XGROUP", "CREATE", "stream:10", "g", "0"))
    # expiries
    for i in range(20):
        out.append(("SET", f"exp:{i}", "v" * i, "PX", str(1_800_000 + 3_600_000 * i)))  # half an hour on
    out.append(("HSET", "exp:hash", "a", "1"))
    out.append(("EXPIRE", "exp:hash", "100000"))
    return out


def _start(workdir: Path):
    binary = require("redis-server")["redis-server"]
    port = free_port()
    args = [binary, "--port", str(port), "--bind", LOOPBACK, "--save", "", "--appendonly", "no",
            "--dir", str(workdir), "--dbfilename", "dump.rdb", "--rdbcompression", "yes",
            "--daemonize", "no", "--enable-debug-command", "yes"]
    log = open(workdir / "redis.log", "wb")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log.close()
    assert wait_until(lambda: proc.poll() is not None or servers._connectable(port), 10), "redis-server is slow"
    assert proc.poll() is None, (workdir / "redis.log").read_text()
    return proc, port


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """(saved file, {key: MEMORY USAGE after the reload}, {key: the server's encoding})."""
    if server_version() < (7, 0):
        pytest.skip("the model is Redis 7.0's")
    workdir = tmp_path_factory.mktemp("redis-memory")
    proc, port = _start(workdir)
    try:
        c = Client(port)
        commands = dataset()
        for at in range(0, len(commands), 500):
            part = commands[at:at + 500]
            for reply, cmd in zip(c.pipeline(part), part):
                assert not isinstance(reply, ReplyError), (cmd[:3], reply)
        assert c.call("SAVE") == "OK"
        assert c.call("DEBUG", "RELOAD") == "OK"
        keys = c.call("KEYS", "*")
        usage = dict(zip(keys, c.pipeline([("MEMORY", "USAGE", k, "SAMPLES", "0") for k in keys])))
        encodings = dict(zip(keys, c.pipeline([("OBJECT", "ENCODING", k) for k in keys])))
        c.close()
    finally:
        servers._stop(proc)
    return workdir / "dump.rdb", usage, {k: v.decode() for k, v in encodings.items()}


def estimates(path: Path) -> dict[bytes, memory.KeyMemory]:
    return {r.key: memory.key_memory(r) for r in rdb_records(path, keep=True) if type(r) is KeyRecord}


def errors(usage: dict, est: dict) -> list[tuple[bytes, int, int, float]]:
    """(key, server, estimate, relative error) of each key, largest error first."""
    rows = [(k, usage[k], est[k].usage, (est[k].usage - usage[k]) / usage[k]) for k in usage]
    return sorted(rows, key=lambda r: -abs(r[3]))


def figures(rows) -> tuple[float, float, float]:
    """(median absolute error, 95th percentile, error of the sum)."""
    abs_err = sorted(abs(r[3]) for r in rows)
    p95 = abs_err[min(len(abs_err) - 1, int(round(0.95 * (len(abs_err) - 1))))]
    total = sum(r[1] for r in rows)
    return statistics.median(abs_err), p95, (sum(r[2] for r in rows) - total) / total


def test_every_key_is_estimated_within_the_targets(measured):
    path, usage, encodings = measured
    est = estimates(path)
    assert set(est) == set(usage)
    rows = errors(usage, est)
    print(f"\n{'key':<28} {'encoding':<10} {'server':>10} {'estimate':>10} {'error':>8}")
    for k, real, guess, err in rows:
        print(f"{k[:28].decode(errors='replace'):<28} {encodings[k]:<10} {real:>10} {guess:>10} {err:>8.2%}")
    median, p95, total = figures(rows)
    print(f"{len(rows)} keys: median |error| {median:.2%}, p95 {p95:.2%}, sum {total:+.2%}")
    assert median <= 0.03 and p95 <= 0.10 and abs(total) <= 0.05, (median, p95, total)


def test_the_model_names_the_servers_encodings(measured):
    path, usage, encodings = measured
    est = estimates(path)
    wrong = {k: (est[k].encoding, encodings[k]) for k in usage if est[k].encoding != encodings[k]}
    assert not wrong


def test_expiring_keys_carry_their_expires_entry(measured):
    est = estimates(measured[0])
    assert est[b"exp:3"].expires == memory.EXPIRES_ENTRY and est[b"str:len:10"].expires == 0
    assert est[b"exp:3"].total == est[b"exp:3"].usage + memory.EXPIRES_ENTRY


def test_the_c_lane_measures_as_the_values_do(measured):
    """Keys the C record lane measures without their values (memory.LaneMeasure) get the
    same estimate and encoding as from their values; the lane takes most of them."""
    path = measured[0]
    lane = [r for r in rdb_records(path, keep=True, measure=memory.LaneMeasure()) if type(r) is KeyRecord]
    by_lane = {r.key: memory.key_memory(r) for r in lane}
    kept = estimates(path)
    assert {k: (m.total, m.encoding) for k, m in by_lane.items()} == {k: (m.total, m.encoding) for k, m in kept.items()}
    if memory_lane_built():
        assert sum(1 for r in lane if r.value is None) > 0.8 * len(lane)


def memory_lane_built() -> bool:
    from dcpinspect.families.redis.rdb.native import C

    return C is not None
