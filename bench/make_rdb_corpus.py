"""An RDB benchmark corpus written by a real ``redis-server``: a realistic mix of types.

    python bench/make_rdb_corpus.py [--size MB] [--out FILE] [--seed N] [--compat]

Starts Debian's ``redis-server`` on a free loopback port (no persistence of its own,
a scratch ``--dir``), fills it over one pipelined connection (``CLIENT REPLY OFF``: the
server sends nothing back until the end, so the fill runs at the server's speed), checks
that every key arrived (``INFO keyspace`` against the keys sent), runs ``SAVE`` and
copies the dump to ``--out`` (default ``bench/out/rdb/dump-<size>mb.rdb``, git-ignored).
The fill is repeated in rounds until the saved file is within 3 % of ``--size``
megabytes (default 64 for quick runs; ``--size 1024`` for the 1 GB file of the
benchmark); ``<out>.json`` records what was put in.

The mix, by keys (by bytes the big values weigh most; keys spread over db 0 and 1, a
fifth of them with an expiry days ahead):

* strings: short text and tokens (8–120 bytes), counters (integer-encoded), JSON
  documents of 0.2–4 KiB (LZF-compressed by the server), a few big values of
  64 KiB–1 MiB (half text, half random bytes);
* hashes: small ones (5–30 fields: listpack) and big ones (200–1500 fields: hashtable);
* lists: small (listpack in one quicklist node) and long (1k–8k elements: many nodes);
* sets: small of integers (intset), small and big of strings (hashtable);
* sorted sets: small (listpack) and big (300–3000 members: skiplist);
* streams: 50–500 entries, most with a consumer group, some with pending entries
  (XREADGROUP without acknowledging) and a second consumer.

``--compat`` writes what ``rdbtools`` 0.1.15 (the newest on PyPI, which stops at RDB
version 9 and knows no listpack) can read: the same strings, sets, hashes and sorted
sets with listpacks turned off (hashtable and skiplist encodings), no lists and no
streams (Redis 7 writes every list as QUICKLIST_2 and every stream as
STREAM_LISTPACKS_2), and the header's version rewritten from 0010 to 0009 with the
CRC-64 recomputed. Every tool of ``bench/rdb_run.py`` reads that file.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dcpinspect.families.redis.rdb.crc64 import crc64  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_DIR = HERE / "out" / "rdb"
LOOPBACK = "127.0.0.1"
#: seconds from now of the expiries (1 to 30 days ahead: none lapses before SAVE)
EXPIRY_RANGE = (86_400, 30 * 86_400)

WORDS = ("alpha beta gamma delta epsilon user order item price status active pending shipped cart "
         "session token region europe america asia name email address city street country phone "
         "created updated deleted version count total amount currency EUR USD GBP product category "
         "books music video games garden kitchen sports outdoor red green blue small medium large "
         "true false null id ref parent child tags notes comment rating review score level").split()
TOKEN = string.ascii_letters + string.digits


class Mix:
    """Keys of a realistic mix, drawn from one seeded random generator; each as the
    commands that make it."""

    def __init__(self, seed: int, compat: bool) -> None:
        self.rnd = random.Random(seed)
        self.compat = compat
        self.serial = 0
        self.words = [w.encode() for w in WORDS]
        kinds = [
            (30, self.short_string), (8, self.counter), (12, self.json_string), (0.03, self.big_string),
            (10, self.small_hash), (0.1, self.big_hash),
            (5, self.small_int_set), (3, self.small_set), (0.05, self.big_set),
            (6, self.small_zset), (0.05, self.big_zset),
        ]
        if not compat:
            kinds += [(8, self.small_list), (0.05, self.long_list), (0.1, self.stream)]
        self.kinds = [k for _, k in kinds]
        self.weights = [w for w, _ in kinds]

    # ------------------------------------------------------------------ pieces

    def name(self, prefix: str) -> bytes:
        self.serial += 1
        return f"{prefix}:{self.serial:09d}:{self.rnd.choice(WORDS)}".encode()

    def token(self, n: int) -> bytes:
        return "".join(self.rnd.choices(TOKEN, k=n)).encode()

    def text(self, n: int) -> bytes:
        out = b" ".join(self.rnd.choices(self.words, k=n // 6 + 1))
        return out[:n]

    def doc(self, n: int) -> bytes:
        """A JSON-like document of about ``n`` bytes (repetitive keys: LZF shrinks it)."""
        parts, size = [], 2
        rnd = self.rnd
        while size < n:
            field = rnd.choice(WORDS)
            kind = rnd.random()
            if kind < 0.4:
                value = f'"{rnd.choice(WORDS)} {rnd.choice(WORDS)}"'
            elif kind < 0.7:
                value = str(rnd.randrange(1_000_000))
            elif kind < 0.85:
                value = f"{rnd.random() * 1000:.2f}"
            else:
                value = '"' + "".join(rnd.choices(TOKEN, k=rnd.randrange(8, 40))) + '"'
            piece = f'"{field}":{value}'
            parts.append(piece)
            size += len(piece) + 1
        return ("{" + ",".join(parts) + "}").encode()

    def member(self) -> bytes:
        r = self.rnd.random()
        if r < 0.5:
            return self.token(self.rnd.randrange(6, 24))
        if r < 0.8:
            return self.text(self.rnd.randrange(8, 48))
        return str(self.rnd.randrange(10**12)).encode()

    # ------------------------------------------------------------------ kinds of key

    def short_string(self):
        key = self.name("session" if self.rnd.random() < 0.5 else "cache")
        value = self.token(self.rnd.randrange(8, 40)) if self.rnd.random() < 0.5 else \
            self.text(self.rnd.randrange(8, 120))
        return key, [[b"SET", key, value]]

    def counter(self):
        key = self.name("counter")
        return key, [[b"SET", key, str(self.rnd.randrange(-10**9, 10**12)).encode()]]

    def json_string(self):
        key = self.name("doc")
        return key, [[b"SET", key, self.doc(int(self.rnd.triangular(200, 4096, 600)))]]

    def big_string(self):
        key = self.name("blob")
        n = self.rnd.randrange(64 << 10, 1 << 20)
        value = self.text(n) if self.rnd.random() < 0.5 else self.rnd.randbytes(n)
        return key, [[b"SET", key, value]]

    def _hash(self, prefix: str, n: int, value_max: int):
        key = self.name(prefix)
        cmds, args = [], [b"HSET", key]
        for i in range(n):
            args += [self.rnd.choice(self.words) + b"_%d" % i,
                     self.text(self.rnd.randrange(1, value_max)) if self.rnd.random() < 0.7
                     else str(self.rnd.randrange(10**6)).encode()]
            if len(args) > 1000:
                cmds.append(args)
                args = [b"HSET", key]
        if len(args) > 2:
            cmds.append(args)
        return key, cmds

    def small_hash(self):
        return self._hash("user", self.rnd.randrange(5, 30), 48)

    def big_hash(self):
        return self._hash("profile", self.rnd.randrange(200, 1500), 120)

    def _batched(self, command: bytes, key: bytes, items: list[bytes]):
        return [[command, key, *items[i:i + 1000]] for i in range(0, len(items), 1000)]

    def small_list(self):
        key = self.name("queue")
        return key, self._batched(b"RPUSH", key, [self.member() for _ in range(self.rnd.randrange(3, 30))])

    def long_list(self):
        key = self.name("log")
        items = [self.doc(self.rnd.randrange(60, 300)) if self.rnd.random() < 0.3 else self.member()
                 for _ in range(self.rnd.randrange(1000, 8000))]
        return key, self._batched(b"RPUSH", key, items)

    def small_int_set(self):
        key = self.name("ids")
        members = {str(self.rnd.randrange(10**7)).encode() for _ in range(self.rnd.randrange(3, 200))}
        return key, self._batched(b"SADD", key, sorted(members))

    def small_set(self):
        key = self.name("tags")
        return key, self._batched(b"SADD", key, [self.member() for _ in range(self.rnd.randrange(3, 100))])

    def big_set(self):
        key = self.name("members")
        return key, self._batched(b"SADD", key, [self.member() for _ in range(self.rnd.randrange(600, 4000))])

    def _zset(self, prefix: str, n: int):
        key = self.name(prefix)
        items = []
        for _ in range(n):
            score = self.rnd.randrange(10**6) if self.rnd.random() < 0.5 else self.rnd.random() * 1e4
            items += [repr(score).encode(), self.member()]
        return key, [[b"ZADD", key, *items[i:i + 1000]] for i in range(0, len(items), 1000)]

    def small_zset(self):
        return self._zset("rank", self.rnd.randrange(3, 40))

    def big_zset(self):
        return self._zset("leaderboard", self.rnd.randrange(300, 3000))

    def stream(self):
        key = self.name("events")
        n = self.rnd.randrange(50, 500)
        cmds = []
        for i in range(n):
            fields = [b"type", self.rnd.choice(self.words), b"user", str(self.rnd.randrange(10**6)).encode()]
            if self.rnd.random() < 0.5:
                fields += [b"payload", self.doc(self.rnd.randrange(40, 200))]
            cmds.append([b"XADD", key, b"*", *fields])
        if self.rnd.random() < 0.7:
            cmds.append([b"XGROUP", b"CREATE", key, b"workers", b"0"])
            cmds.append([b"XREADGROUP", b"GROUP", b"workers", b"w1", b"COUNT", str(n // 3).encode(),
                         b"STREAMS", key, b">"])
            if self.rnd.random() < 0.5:
                cmds.append([b"XREADGROUP", b"GROUP", b"workers", b"w2", b"COUNT", b"10", b"STREAMS", key, b">"])
        return key, cmds

    # ------------------------------------------------------------------ the fill

    def key(self):
        kind = self.rnd.choices(self.kinds, self.weights)[0]
        key, cmds = kind()
        if self.rnd.random() < 0.2:
            at = int(time.time()) + self.rnd.randrange(*EXPIRY_RANGE)
            cmds.append([b"EXPIREAT", key, str(at).encode()])
        return kind.__name__, cmds


def resp(args: list[bytes]) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Server:
    """``redis-server`` on a free loopback port with a scratch directory, stopped on exit."""

    def __init__(self, compat: bool) -> None:
        self.dir = tempfile.mkdtemp(prefix="dcpinspect-rdb-corpus-")
        with socket.socket() as s:
            s.bind((LOOPBACK, 0))
            self.port = s.getsockname()[1]
        args = ["redis-server", "--port", str(self.port), "--bind", LOOPBACK, "--dir", self.dir,
                "--dbfilename", "dump.rdb", "--save", "", "--appendonly", "no", "--daemonize", "no",
                "--protected-mode", "no", "--logfile", os.path.join(self.dir, "redis.log")]
        if compat:
            args += ["--hash-max-listpack-entries", "0", "--zset-max-listpack-entries", "0"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            try:
                self.sock = socket.create_connection((LOOPBACK, self.port), timeout=600)
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise SystemExit(f"redis-server did not start (log in {self.dir})")
                time.sleep(0.05)
        self.reader = self.sock.makefile("rb")

    def call(self, *args: bytes):
        self.sock.sendall(resp(list(args)))
        return self.reply()

    def reply(self):
        line = self.reader.readline()
        kind, rest = line[:1], line[1:-2]
        if kind in (b"+", b":"):
            return rest
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.reader.read(n + 2)[:-2]
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        raise RuntimeError(f"unexpected reply {line!r}")

    def info(self, section: bytes) -> dict[str, str]:
        text = self.call(b"INFO", section).decode()
        return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)

    def close(self) -> None:
        try:
            self.proc.terminate()
            self.proc.wait(timeout=60)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def fill(server: Server, mix: Mix, approx_bytes: int, counts: dict[str, int], per_db: list[int]) -> None:
    """Send keys until about ``approx_bytes`` of commands went out, without replies."""
    server.sock.sendall(resp([b"CLIENT", b"REPLY", b"OFF"]))
    sent, batch, db = 0, [], 0
    while sent < approx_bytes:
        want = 1 if mix.rnd.random() < 0.1 else 0
        if want != db:
            batch.append(resp([b"SELECT", str(want).encode()]))
            db = want
        kind, cmds = mix.key()
        counts[kind] = counts.get(kind, 0) + 1
        per_db[db] += 1
        for c in cmds:
            data = resp(c)
            batch.append(data)
            sent += len(data)
        if len(batch) > 2000:
            server.sock.sendall(b"".join(batch))
            batch = []
    if db:
        batch.append(resp([b"SELECT", b"0"]))
    batch.append(resp([b"CLIENT", b"REPLY", b"ON"]))
    server.sock.sendall(b"".join(batch))
    server.reply()  # the +OK of CLIENT REPLY ON


def keyspace(server: Server) -> list[int]:
    info = server.info(b"keyspace")
    out = [0, 0]
    for db in (0, 1):
        entry = info.get(f"db{db}")
        if entry:
            out[db] = int(dict(kv.split("=") for kv in entry.split(","))["keys"])
    return out


def make_compat(path: Path) -> None:
    """Rewrite a REDIS0010 file's version as 0009 and its CRC-64 to match."""
    with open(path, "r+b") as fh:
        head = fh.read(9)
        if head != b"REDIS0010":
            raise SystemExit(f"{path}: starts with {head!r}, not REDIS0010")
        fh.seek(0)
        fh.write(b"REDIS0009")
        fh.seek(0)
        size = path.stat().st_size
        crc, left = 0, size - 8
        while left:
            chunk = fh.read(min(left, 1 << 22))
            crc = crc64(chunk, crc)
            left -= len(chunk)
        fh.write(crc.to_bytes(8, "little"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=64, help="megabytes of RDB to make (default 64)")
    ap.add_argument("--out", type=Path, help="where the dump goes (default bench/out/rdb/dump-<size>mb.rdb)")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--compat", action="store_true",
                    help="only what rdbtools 0.1.15 reads: no listpacks, lists or streams; version 9")
    args = ap.parse_args(argv)
    if shutil.which("redis-server") is None:
        sys.stderr.write("redis-server is not installed (apt-get install redis-server)\n")
        return 2
    out = args.out or DEFAULT_DIR / f"dump-{args.size}mb{'-compat' if args.compat else ''}.rdb"
    out.parent.mkdir(parents=True, exist_ok=True)
    target = args.size * 10**6
    mix = Mix(args.seed, args.compat)
    counts: dict[str, int] = {}
    per_db = [0, 0]
    server = Server(args.compat)
    t0 = time.monotonic()
    try:
        dump = Path(server.dir) / "dump.rdb"
        ratio, size = 1.0, 0  # RDB bytes per command byte sent, learnt from each SAVE
        while size < target * 0.97:
            want = int((target - size) / ratio)
            fill(server, mix, want, counts, per_db)
            found = keyspace(server)
            if found != per_db:
                raise SystemExit(f"the server holds {found} keys in db 0 and 1, {per_db} were sent "
                                 f"(log in {server.dir})")
            server.call(b"SAVE")
            new = dump.stat().st_size
            ratio = max((new - size) / max(want, 1), 0.05)
            size = new
            print(f"  {sum(per_db):,} keys, RDB {size / 1e6:,.1f} MB after {time.monotonic() - t0:.0f} s",
                  flush=True)
        memory = server.info(b"memory").get("used_memory_human", "?")
        version = server.info(b"server").get("redis_version", "?")
        shutil.copyfile(dump, out)
    finally:
        server.close()
    if args.compat:
        make_compat(out)
    manifest = {"file": out.name, "bytes": out.stat().st_size, "keys": sum(per_db), "keys_per_db": per_db,
                "kinds": dict(sorted(counts.items())), "seed": args.seed, "compat": args.compat,
                "redis_version": version, "used_memory": memory, "seconds": round(time.monotonic() - t0, 1)}
    out.with_suffix(".json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{out}: {manifest['bytes']:,} bytes, {manifest['keys']:,} keys (redis {version}, {memory} in memory)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
