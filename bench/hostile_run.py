"""Hostile inputs of the Redis family, each at a size and at twice it: the time of the
second over the first should stay near 2 (linear), never near 4 (quadratic) or unbounded.

    python bench/hostile_run.py [--scale K] [--runs N] [--only NAME ...]

Each case is one mechanism the hostile-input issue found (a negative stream count,
decompression bombs, nested blobs, a long run of journal SELECTs, a resynchronisation
through one, a payload whose end mark never comes, far-apart .dfs shard numbers, a db per
key, a zipmap inside LZF, a listpack counted off by one), built from the layouts with
tests/rdbgen.py and tests/dflygen.py and read in this process the way the commands read it
(the RDB decoder with values not kept, the framer of a flow, the .dfs set reader). A
bomb's work is bounded by the budget, which doubles with the bytes read: its ratio is the
one to watch. Times are this process's CPU seconds (a shared machine's load moves wall time more than
the work), the least of ``--runs`` runs; the ratios, not the seconds, are what this measures.
"""

from __future__ import annotations

import argparse
import struct
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import dflygen  # noqa: E402
import rdbgen  # noqa: E402

from dcpinspect.families.redis.rdb.decoder import RdbParser  # noqa: E402
from dcpinspect.families.redis.replication.resp import RespFramer  # noqa: E402


def decode(data: bytes) -> int:
    parser = RdbParser(keep=False)
    n = 0
    for i in range(0, len(data), 1 << 20):
        for _ in parser.records(data[i:i + (1 << 20)]):
            n += 1
    return n + len(parser.close())


def flow(stream: bytes, partial: bool = True) -> int:
    framer = RespFramer()
    head = b"*2\r\n+" + (b"PARTIAL" if partial else b"FULL") + b"\r\n+" + b"t" * 40 + b"\r\n"
    out = framer.feed(head)
    for i in range(0, len(stream), 1460):
        out += framer.feed(stream[i:i + 1460])
    return len(out + framer.close())


def dragonfly(body: bytes) -> bytes:
    return b"REDIS0009" + rdbgen.aux("df-ver", "v1.30.0") + body + dflygen.DF_EOF


def stream_key(n: int) -> bytes:
    """``n`` stream keys each of one node whose master entry counts -4 fields."""
    items = [2, 0, -4, b"f", 0]
    node = rdbgen.string(struct.pack(">QQ", 1, 0)) + rdbgen.string(rdbgen.listpack(items))
    two = rdbgen.length(1) + rdbgen.length(0)
    value = rdbgen.length(1) + node + rdbgen.length(1) + two + two + two + rdbgen.length(1) + rdbgen.length(0)
    return rdbgen.rdb(b"\xfe\x00" + b"".join(rdbgen.key(19, f"s{i}", value) for i in range(n)))


def bomb(n: int) -> bytes:
    """A ZSTD blob of 4 MiB of zeros, after ``n`` bytes of aux padding (the budget grows with them)."""
    return dragonfly(rdbgen.aux("pad", "x" * n) + dflygen.zstd_blob(bytes(4 << 20)))


def nested(n: int) -> bytes:
    inner = rdbgen.key(0, "deep", rdbgen.string("x"))
    for i in range(n):
        inner = (dflygen.zstd_blob if i % 2 else dflygen.lz4_blob)(inner)
    return dragonfly(inner)


def selects(n: int) -> bytes:
    return dflygen.select(3) * n + dflygen.command("SET", "k", "v", db=None)


def resync(n: int) -> bytes:
    return b"\x0a\xff" + dflygen.select(6) * n + b"\x0a\xff" + dflygen.select(1) + dflygen.command("SET", "k", "v",
                                                                                                   db=None)


def unended(n: int) -> bytes:
    """A diskless payload of ``n`` keys whose end mark never comes, then commands."""
    payload = rdbgen.rdb(b"\xfe\x00" + b"".join(rdbgen.key(0, f"k{i}", rdbgen.string("v")) for i in range(n)))
    return b"$EOF:" + b"m" * 40 + b"\r\n" + payload + b"*1\r\n$4\r\nPING\r\n" * n


def resp(stream: bytes) -> int:
    framer = RespFramer()
    out = framer.feed(b"+FULLRESYNC " + b"5d" * 20 + b" 0\r\n")
    for i in range(0, len(stream), 1460):
        out += framer.feed(stream[i:i + 1460])
    return len(out + framer.close())


def dbs(n: int) -> bytes:
    return rdbgen.rdb(b"".join(b"\xfe" + rdbgen.length(db) + rdbgen.key(0, "k", rdbgen.string("v")) for db in range(n)))


def zipmap(pairs: int) -> bytes:
    pairs -= pairs % 88
    data = bytes([3, 254, 0, 0, 0]) + bytes([7 << 5, 264 - 9, 2]) * ((pairs - 1) * 3 // 264)
    rest = 3 * (pairs - 1) - ((pairs - 1) * 3 // 264) * 264
    if rest:
        data += bytes([(rest - 2) << 5, 2]) if rest - 2 < 7 else bytes([7 << 5, rest - 9, 2])
    data += bytes([0, 0xFF])
    return rdbgen.rdb(b"\xfe\x00" + rdbgen.key(9, "zm", rdbgen.lzf_string(data, 3 * pairs + 2)), version=3)


def listpack(n: int) -> bytes:
    lp = bytearray(rdbgen.listpack([b"a"] * n))
    struct.pack_into("<H", lp, 4, min(n + 1, 0xFFFE))
    return rdbgen.rdb(b"\xfe\x00" + rdbgen.key(20, "set", rdbgen.string(bytes(lp))))


def dfs_far(n: int) -> int:
    from dcpinspect.families.redis.dragonfly import dfs

    with tempfile.TemporaryDirectory() as root:
        paths = []
        for shard in (0, n):
            path = Path(root) / f"x-{shard:04d}.dfs"
            path.write_bytes(b"REDIS0009" + dflygen.aux_int("shard-id", shard) + dflygen.DF_EOF)
            paths.append(path)
        members = [dfs.Member(p, dfs.part_of(p)[1]) for p in paths]
        checks = dfs.SetChecks(members)
        return sum(1 for _ in dfs.read_set(members, checks))


#: name, what is doubled, the size, and what makes and reads an input of a size
CASES = [
    ("stream count -4", "keys", 20_000, lambda n: decode, stream_key),
    ("ZSTD bomb", "bytes read before it", 1_000, lambda n: decode, bomb),
    ("nested blobs", "levels", 400, lambda n: decode, nested),
    ("journal SELECTs", "SELECTs", 200_000, lambda n: flow, selects),
    ("journal resync", "SELECTs", 100_000, lambda n: flow, resync),
    ("$EOF: never ended", "keys", 1_000_000, lambda n: resp, unended),
    ("a db per key", "dbs", 100_000, lambda n: decode, dbs),
    ("zipmap in LZF", "pairs", 352_000, lambda n: decode, zipmap),
    ("listpack count +1", "entries", 60_000, lambda n: decode, listpack),
    (".dfs shards far apart", "shard number", 10**8, lambda n: (lambda _: dfs_far(n)), lambda n: b""),
]


def timed(fn, data, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.process_time()
        fn(data)
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every size by this")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", nargs="*", help="the cases whose name starts with one of these")
    args = ap.parse_args()
    print("| case | doubled | size | CPU s | at twice the size | ratio |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, what, size, reader, make in CASES:
        if args.only and not any(name.startswith(o) for o in args.only):
            continue
        n = max(1, int(size * args.scale))
        a = timed(reader(n), make(n), args.runs)
        b = timed(reader(2 * n), make(2 * n), args.runs)
        print(f"| {name} | {what} | {n:,} | {a:.3f} | {b:.3f} | {b / a:.2f} |", flush=True)


if __name__ == "__main__":
    main()
