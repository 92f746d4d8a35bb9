"""Write samples/redis-dump.rdb, the snapshot the RDB examples of the README and docs/rdb.md read: a real
redis-server (Debian's, on a free loopback port) is given a few keys of each type (two
dbs, an expiry, a binary key and value, a stream with a consumer group and pending
entries, a function library) and saves them; then, after a few changes, its later dump
samples/redis-dump-later.rdb (run: python samples/make_rdb_sample.py)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMANDS = {
    0: [("SET", "user:1:name", "Ada"), ("SET", "user:2:name", "Grace"), ("SET", "visits", "1024"),
        ("SET", b"bin:\xff\x00", b"\x00\x01\xfe\xff"), ("SET", "session:9", "token"),
        ("PEXPIREAT", "session:9", "4102444800000"),
        ("RPUSH", "queue", "a", "b", "c"), ("SADD", "tags", "redis", "rdb", "dcp"),
        ("ZADD", "scores", "1.5", "ada", "inf", "grace", "-2", "alan"),
        ("HSET", "user:1", "name", "Ada", "born", "1815"),
        ("XADD", "events", "1700000000000-0", "type", "login"), ("XADD", "events", "1700000000001-0", "type", "logout"),
        ("XGROUP", "CREATE", "events", "workers", "0"),
        ("XREADGROUP", "GROUP", "workers", "w1", "COUNT", "1", "STREAMS", "events", ">")],
    1: [("SET", "other", "db one")],
}
LATER = [("SELECT", 0), ("INCR", "visits"), ("DEL", "tags"), ("SET", "user:3:name", "Alan"), ("PERSIST", "session:9")]
LIBRARY = "#!lua name=samplelib\nredis.register_function('hello', function() return 'hi' end)"


def _command(*words) -> bytes:
    parts = [w if isinstance(w, bytes) else str(w).encode() for w in words]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


def main() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    work = Path(tempfile.mkdtemp())
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir",
                             str(work), "--dbfilename", "dump.rdb"], stdout=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                conn = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.05)
        words = [("FUNCTION", "LOAD", LIBRARY)]
        for db, commands in COMMANDS.items():
            words += [("SELECT", db), *commands]
        words.append(("SAVE",))
        conn.sendall(b"".join(_command(*w) for w in words))
        time.sleep(1)
        shutil.copy(work / "dump.rdb", HERE / "redis-dump.rdb")
        conn.sendall(b"".join(_command(*w) for w in [*LATER, ("SAVE",)]))
        time.sleep(1)
        conn.close()
        shutil.copy(work / "dump.rdb", HERE / "redis-dump-later.rdb")
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
