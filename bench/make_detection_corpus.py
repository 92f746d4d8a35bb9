"""Captures for measuring detection (``bench/precision.py``), taken with tcpdump from real
servers on free loopback ports, ports no family owns:

    python bench/make_detection_corpus.py [--out DIR]      (root: tcpdump captures loopback)

Writes in ``--out`` (default ``bench/out/detection``, git-ignored):

``positive/``
    ours: memcached speaking the binary protocol to ``memccapable -b`` and to
    ``memcslap --binary`` (many connections); redis-server answering ``redis-benchmark``
    (50 clients, RESP arrays), ``redis-cli`` (one command a connection, a pipeline
    through ``--pipe``), and a replica's full sync from it.
``negative/``
    another protocol no public corpus had on a free port: memcached's text protocol
    (``memcslap`` without ``--binary``, and ``get``/``set`` lines by hand).
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import servers  # noqa: E402
from servers import LOOPBACK, Memcached, TcpDump, wait_until  # noqa: E402


class Redis:
    """``redis-server`` on a free loopback port, without persistence."""

    def __init__(self, workdir: Path, *args: str) -> None:
        self.port = servers.free_port()
        self.dir = workdir / f"redis-{self.port}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", LOOPBACK, "--save", "", "--appendonly", "no",
             "--dir", str(self.dir), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert wait_until(lambda: servers._connectable(self.port), 10), "redis-server did not start"

    def stop(self) -> None:
        servers._stop(self.proc)


def cli(port: int, *args: str, stdin: bytes | None = None) -> None:
    subprocess.run(["redis-cli", "-p", str(port), *args], input=stdin, capture_output=True, check=True, timeout=60)


def redis_captures(out: Path, work: Path) -> None:
    master = Redis(work)
    try:
        with TcpDump(out / "redis-benchmark.pcap", master.port):
            subprocess.run(["redis-benchmark", "-p", str(master.port), "-n", "2000", "-c", "50", "-q",
                            "-t", "set,get,lpush,lrange_100,mset"], capture_output=True, check=True, timeout=120)
        with TcpDump(out / "redis-cli.pcap", master.port):
            for i in range(5):
                cli(master.port, "SET", f"cli:{i}", "value " * i)
                cli(master.port, "GET", f"cli:{i}")
            cli(master.port, "--pipe", stdin=b"".join(b"*3\r\n$3\r\nSET\r\n$5\r\npipe%d\r\n$1\r\nv\r\n" % (i % 10)
                                                      for i in range(1000)))
        with TcpDump(out / "redis-sync.pcap", master.port):
            replica = Redis(work, "--replicaof", LOOPBACK, str(master.port))
            try:
                assert wait_until(lambda: b"master_link_status:up" in subprocess.run(
                    ["redis-cli", "-p", str(replica.port), "INFO", "replication"], capture_output=True).stdout, 30)
                cli(master.port, "SET", "after", "sync")
                time.sleep(1.5)
            finally:
                replica.stop()
    finally:
        master.stop()


def memcached_captures(positive: Path, negative: Path, work: Path) -> None:
    with Memcached(work) as mc:
        with TcpDump(positive / "memcached-memccapable.pcap", mc.port):
            servers.run_memccapable(mc.port)
        with TcpDump(positive / "memcached-memcslap-binary.pcap", mc.port):
            subprocess.run(["memcslap", f"--servers={LOOPBACK}:{mc.port}", "--binary", "--concurrency=8",
                            "--execute-number=400"], capture_output=True, timeout=120)
        with TcpDump(negative / "memcached-text-memcslap.pcap", mc.port):
            subprocess.run(["memcslap", f"--servers={LOOPBACK}:{mc.port}", "--concurrency=8",
                            "--execute-number=400"], capture_output=True, timeout=120)
        with TcpDump(negative / "memcached-text-lines.pcap", mc.port):
            for i in range(3):
                with socket.create_connection((LOOPBACK, mc.port), timeout=5) as s:
                    s.sendall(b"set k%d 0 0 5\r\nhello\r\nget k%d\r\nversion\r\nstats\r\n" % (i, i))
                    time.sleep(0.2)
                    s.recv(65536)
                    s.sendall(b"quit\r\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "detection")
    args = ap.parse_args()
    positive, negative, work = args.out / "positive", args.out / "negative", args.out / "work"
    for d in (positive, negative, work):
        d.mkdir(parents=True, exist_ok=True)
    redis_captures(positive, work)
    memcached_captures(positive, negative, work)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
