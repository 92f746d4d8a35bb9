"""Real servers, captures and clients for end-to-end tests (a plain helper module).

Everything here talks to 127.0.0.1 only, and every wait is bounded:

* :class:`Memcached` — Debian's ``memcached`` on a free loopback port, killed on exit;
* :class:`TcpDump` — ``tcpdump -i lo -w FILE -U 'tcp port PORT'``, started (and
  confirmed listening) before traffic, stopped with SIGINT and waited for;
* :class:`McClient` — a tiny memcached binary-protocol client over a socket that
  records what it sent and what came back, for precise comparisons;
* :func:`run_memccapable`, :func:`run_memcslap` — libmemcached-tools' binary clients;
* :func:`dcpinspect` — the console script as a subprocess, with a timeout.

Tests that need a binary or root call :func:`require` and are skipped cleanly
when it is missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import pytest

LOOPBACK = "127.0.0.1"
HEADER = struct.Struct(">BBHBBHIIQ")  # magic opcode keylen extlen datatype vbucket/status bodylen opaque cas

# opcodes of the memcached binary protocol used below
GET, SET, ADD, REPLACE, DELETE, INCR, DECR, QUIT, FLUSH = 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08
GETQ, NOOP, VERSION, GETK, GETKQ, APPEND, PREPEND, STAT = 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10
SETQ, ADDQ, DELETEQ, INCRQ = 0x11, 0x12, 0x14, 0x15
QUIET = frozenset({GETQ, GETKQ, SETQ, ADDQ, 0x13, DELETEQ, INCRQ, 0x16, 0x17, 0x18, 0x19, 0x1A})

# statuses
SUCCESS, KEY_ENOENT, KEY_EEXISTS, NOT_STORED, DELTA_BADVAL = 0x00, 0x01, 0x02, 0x05, 0x06


# --- environment -------------------------------------------------------------------


def require(*binaries: str, root: bool = False) -> dict[str, str]:
    """Skip the calling test unless every binary is on PATH (and we are root if asked)."""
    if root and (not hasattr(os, "geteuid") or os.geteuid() != 0):
        pytest.skip("needs root (packet capture on lo)")
    found = {}
    for name in binaries:
        path = shutil.which(name)
        if path is None:
            pytest.skip(f"{name} is not installed")
        found[name] = path
    return found


def wait_until(pred: Callable[[], bool], timeout: float, interval: float = 0.02) -> bool:
    """Poll ``pred`` until it is true or ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        if pred():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def server_port() -> int:
    """A free TCP port on 127.0.0.1 below the kernel's ephemeral range: in a capture that
    starts after the connection opened (no SYN), the lower port is taken as the server's,
    and a client's port is an ephemeral one."""
    return free_port_among(range(20000, 32000), "below the ephemeral range")


def free_port_among(ports: range, where: str) -> int:
    """A free TCP port on 127.0.0.1 among ``ports`` (200 tried at random)."""
    for port in random.Random().sample(ports, min(200, len(ports))):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((LOOPBACK, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port {where}")


def _connectable(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=0.2):
            return True
    except OSError:
        return False


def _stop(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 5.0) -> int | None:
    """Signal one process we started, wait a bounded time, then kill it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(5)
    return proc.returncode


# --- memcached ---------------------------------------------------------------------


class Memcached:
    """``memcached -u root -l 127.0.0.1 -p PORT`` for the length of a ``with`` block."""

    def __init__(self, workdir: Path, item_max: str = "2m", memory_mb: int = 64, threads: int = 4):
        self.binary = require("memcached", root=True)["memcached"]
        self.workdir = Path(workdir)
        self.item_max = item_max
        self.memory_mb = memory_mb
        self.threads = threads
        self.port = 0
        self.proc: subprocess.Popen | None = None

    def start(self) -> "Memcached":
        for _attempt in range(3):  # the free port can be taken between probe and bind
            self.port = free_port()
            log = open(self.workdir / f"memcached-{self.port}.log", "wb")
            self.proc = subprocess.Popen(
                [self.binary, "-u", "root", "-l", LOOPBACK, "-p", str(self.port), "-U", "0",
                 "-I", self.item_max, "-m", str(self.memory_mb), "-t", str(self.threads)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
            log.close()
            if wait_until(lambda: self.proc.poll() is not None or _connectable(self.port), 10):
                if self.proc.poll() is None:
                    return self
            _stop(self.proc)
        raise RuntimeError("memcached did not start on a loopback port (see memcached-*.log)")

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc)
            self.proc = None

    def __enter__(self) -> "Memcached":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# --- tcpdump -----------------------------------------------------------------------


@dataclass
class CaptureStats:
    captured: int | None = None
    dropped: int | None = None


class TcpDump:
    """``tcpdump -i lo -w FILE -U 'tcp port PORT'``: confirmed listening before traffic,
    stopped with SIGINT once the file has stopped growing."""

    def __init__(self, path: Path, port: int, iface: str = "lo"):
        self.binary = require("tcpdump", root=True)["tcpdump"]
        self.path = Path(path)
        self.port = port
        self.iface = iface
        self.err_path = self.path.with_suffix(self.path.suffix + ".stderr")
        self.proc: subprocess.Popen | None = None
        self.stats = CaptureStats()

    def _stderr(self) -> str:
        try:
            return self.err_path.read_text(errors="replace")
        except OSError:
            return ""

    def start(self) -> "TcpDump":
        err = open(self.err_path, "wb")
        # -U: write each packet as soon as libpcap hands it over; -B: a large kernel buffer
        # (packed blocks, not --immediate-mode's one ring slot per packet, which drops under
        # load); -s: the loopback MTU fits; -Z root: keep the file ours; -n: no name lookups.
        # Blocks reach tcpdump within its 1 s timeout: stop() waits for the file to settle.
        self.proc = subprocess.Popen(
            [self.binary, "-i", self.iface, "-w", str(self.path), "-U", "-B", "131072", "-s", "262144",
             "-Z", "root", "-n", f"tcp port {self.port}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        err.close()
        if not wait_until(lambda: self.proc.poll() is not None or "listening on" in self._stderr(), 10):
            _stop(self.proc, signal.SIGINT)
            raise RuntimeError(f"tcpdump did not start listening: {self._stderr()!r}")
        if self.proc.poll() is not None:
            raise RuntimeError(f"tcpdump exited with {self.proc.returncode}: {self._stderr()!r}")
        return self

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def stop(self, settle: float = 1.5, limit: float = 15.0) -> CaptureStats:
        """SIGINT once the file has not grown for ``settle`` seconds (at most ``limit`` s of waiting)."""
        if self.proc is None:
            return self.stats
        deadline = time.monotonic() + limit
        size, since = self._size(), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.1)
            now = self._size()
            if now != size:
                size, since = now, time.monotonic()
            elif time.monotonic() - since >= settle:
                break
        _stop(self.proc, signal.SIGINT, 10)
        self.proc = None
        text = self._stderr()
        m = re.search(r"(\d+) packets? captured", text)
        d = re.search(r"(\d+) packets? dropped by kernel", text)
        self.stats = CaptureStats(int(m.group(1)) if m else None, int(d.group(1)) if d else None)
        return self.stats

    def __enter__(self) -> "TcpDump":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# --- a binary-protocol client ------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """One frame as sent or received by :class:`McClient`."""

    magic: int
    opcode: int
    key: bytes
    opaque: int
    status: int | None = None  # responses
    vbucket: int | None = None  # requests
    extras: bytes = b""
    value: bytes = b""
    cas: int = 0

    @property
    def is_request(self) -> bool:
        return self.magic == 0x80


def pack_request(opcode: int, key: bytes = b"", value: bytes = b"", extras: bytes = b"", opaque: int = 0,
                 cas: int = 0, vbucket: int = 0, datatype: int = 0) -> bytes:
    body = extras + key + value
    return HEADER.pack(0x80, opcode, len(key), len(extras), datatype, vbucket, len(body), opaque, cas) + body


class McClient:
    """A memcached binary client over one TCP connection to 127.0.0.1.

    Every request sent and every response read is kept in ``sent`` / ``received``
    (in wire order) so a test can compare them with what a decoder saw.
    """

    def __init__(self, port: int, timeout: float = 10.0, opaque_base: int = 0x00000010):
        self.sock = socket.create_connection((LOOPBACK, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(timeout)
        self.client_port = self.sock.getsockname()[1]
        self.server_port = port
        self.sent: list[Frame] = []
        self.received: list[Frame] = []
        self._opaque = opaque_base
        self._buf = bytearray()

    # -- transport

    def next_opaque(self) -> int:
        o = self._opaque
        self._opaque += 1
        return o

    def send(self, opcode: int, key: bytes = b"", value: bytes = b"", extras: bytes = b"",
             opaque: int | None = None, cas: int = 0, vbucket: int = 0) -> int:
        return self.send_many([(opcode, key, value, extras, opaque, cas, vbucket)])[0]

    def send_many(self, requests: Iterable[tuple]) -> list[int]:
        """Pipeline several requests in one write: (opcode, key, value, extras, opaque, cas, vbucket)."""
        out, opaques = [], []
        for opcode, key, value, extras, opaque, cas, vbucket in requests:
            opaque = self.next_opaque() if opaque is None else opaque
            out.append(pack_request(opcode, key, value, extras, opaque, cas, vbucket))
            self.sent.append(Frame(0x80, opcode, key, opaque, vbucket=vbucket, extras=extras, value=value, cas=cas))
            opaques.append(opaque)
        self.sock.sendall(b"".join(out))
        return opaques

    def _read(self, n: int) -> bytes:
        while len(self._buf) < n:
            chunk = self.sock.recv(max(65536, n - len(self._buf)))  # bounded by the socket timeout
            if not chunk:
                raise ConnectionError("server closed the connection")
            self._buf += chunk
        data = bytes(self._buf[:n])
        del self._buf[:n]
        return data

    def recv(self) -> Frame:
        magic, opcode, keylen, extlen, _dt, status, bodylen, opaque, cas = HEADER.unpack(self._read(24))
        body = self._read(bodylen)
        f = Frame(magic, opcode, body[extlen:extlen + keylen], opaque, status=status, extras=body[:extlen],
                  value=body[extlen + keylen:], cas=cas)
        self.received.append(f)
        return f

    def call(self, opcode: int, key: bytes = b"", value: bytes = b"", extras: bytes = b"", **kw) -> Frame:
        opaque = self.send(opcode, key, value, extras, **kw)
        reply = self.recv()
        assert reply.opaque == opaque, f"reply opaque {reply.opaque:#x} for request {opaque:#x}"
        return reply

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def __enter__(self) -> "McClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- commands

    def set(self, key: bytes, value: bytes, flags: int = 0, expiry: int = 0, op: int = SET) -> Frame:
        return self.call(op, key, value, struct.pack(">II", flags, expiry))

    def get(self, key: bytes, op: int = GET) -> Frame:
        return self.call(op, key)

    def delete(self, key: bytes) -> Frame:
        return self.call(DELETE, key)

    def incr(self, key: bytes, delta: int = 1, initial: int = 0, expiry: int = 0, op: int = INCR) -> Frame:
        return self.call(op, key, extras=struct.pack(">QQI", delta, initial, expiry))

    def noop(self) -> Frame:
        return self.call(NOOP)

    def version(self) -> Frame:
        return self.call(VERSION)

    def quiet_batch(self, requests: list[tuple]) -> list[Frame]:
        """Pipeline quiet requests plus a NOOP in one write; read replies up to the NOOP's."""
        reqs = [(op, key, value, extras, None, 0, 0) for op, key, value, extras in requests]
        opaques = self.send_many(reqs + [(NOOP, b"", b"", b"", None, 0, 0)])
        out = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            f = self.recv()
            out.append(f)
            if f.opaque == opaques[-1]:
                return out
        raise TimeoutError("no NOOP reply after a quiet batch")

    def quit(self) -> Frame | None:
        opaque = self.send(QUIT)
        try:
            f = self.recv()
        except (ConnectionError, OSError):
            return None
        assert f.opaque == opaque
        return f


CONTROL_KEY = b"ctl\x01\x02\x1b[31mred\x7f\tkey"
BIG_VALUE_SIZE = 1 << 20


def big_value(size: int = BIG_VALUE_SIZE) -> bytes:
    """A value whose bytes are not all alike (misplaced segments would show)."""
    block = bytes(range(256))
    return (block * (size // 256 + 1))[:size]


def precise_session(port: int) -> McClient:
    """The Python client's scripted session; returns the (closed) client with its record.

    Set/get/getk/delete, incr/decr with initial values, quiet ops pipelined with a
    NOOP, a key with control characters, add/append errors, a 1 MiB value (set and
    read back: both frames span many segments), version, quit.
    """
    c = McClient(port)
    try:
        assert c.noop().status == SUCCESS
        assert c.set(b"alpha", b"one", flags=0xCAFE).status == SUCCESS
        r = c.get(b"alpha")
        assert (r.status, r.value) == (SUCCESS, b"one")
        r = c.get(b"alpha", op=GETK)
        assert (r.status, r.key) == (SUCCESS, b"alpha")
        assert c.get(b"no-such-key").status == KEY_ENOENT
        assert c.set(b"alpha", b"two", op=ADD).status == KEY_EEXISTS
        assert c.call(APPEND, b"never-set", b"tail").status == NOT_STORED
        r = c.incr(b"counter", delta=5, initial=10)
        assert (r.status, struct.unpack(">Q", r.value)[0]) == (SUCCESS, 10)
        r = c.incr(b"counter", delta=5)
        assert struct.unpack(">Q", r.value)[0] == 15
        r = c.incr(b"counter", delta=3, op=DECR)
        assert struct.unpack(">Q", r.value)[0] == 12
        assert c.incr(b"alpha", delta=1).status == DELTA_BADVAL
        batch = c.quiet_batch([
            (SETQ, b"q1", b"v1", struct.pack(">II", 0, 0)),
            (SETQ, b"q2", b"v2", struct.pack(">II", 0, 0)),
            (SETQ, b"q3", b"v3", struct.pack(">II", 0, 0)),
            (GETQ, b"q1", b"", b""),
            (GETQ, b"q-missing", b"", b""),  # a quiet miss: no reply at all
            (GETKQ, b"q2", b"", b""),
            (DELETEQ, b"q3", b"", b""),
        ])
        assert [(f.opcode, f.status) for f in batch] == [(GETQ, 0), (GETKQ, 0), (NOOP, 0)]
        assert c.set(CONTROL_KEY, b"ctl-value").status == SUCCESS
        r = c.get(CONTROL_KEY, op=GETK)
        assert (r.status, r.key, r.value) == (SUCCESS, CONTROL_KEY, b"ctl-value")
        big = big_value()
        assert c.set(b"big", big).status == SUCCESS
        r = c.get(b"big")
        assert (r.status, r.value) == (SUCCESS, big)
        assert c.delete(b"alpha").status == SUCCESS
        assert c.delete(b"alpha").status == KEY_ENOENT
        assert c.version().value
        c.quit()
    finally:
        c.close()
    return c


# --- libmemcached-tools ------------------------------------------------------------


def run_memccapable(port: int, timeout: float = 90) -> subprocess.CompletedProcess:
    """``memccapable -b -h 127.0.0.1 -p PORT``: every binary-protocol test (flushes the server)."""
    exe = require("memccapable")["memccapable"]
    return subprocess.run([exe, "-b", "-h", LOOPBACK, "-p", str(port)], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def run_memcslap(port: int, concurrency: int = 4, execute: int = 2000, timeout: float = 90) -> subprocess.CompletedProcess:
    """``memcslap --binary --servers=127.0.0.1:PORT --concurrency=C --execute-number=N``:
    C connections, each sending N SETs then QUIT (libmemcached 1.1)."""
    exe = require("memcslap")["memcslap"]
    return subprocess.run([exe, "--binary", f"--servers={LOOPBACK}:{port}", f"--concurrency={concurrency}",
                           f"--execute-number={execute}"], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


# --- dcpinspect ---------------------------------------------------------------------


def dcpinspect_argv() -> list[str]:
    """The console script of this interpreter's environment (not a pyenv shim), else ``-m``."""
    beside = Path(sys.executable).parent / "dcpinspect"
    if beside.exists() and os.access(beside, os.X_OK):
        return [str(beside)]
    exe = shutil.which("dcpinspect")
    return [exe] if exe else [sys.executable, "-m", "dcpinspect"]


def dcpinspect(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the CLI; stdout/stderr as text."""
    return subprocess.run(dcpinspect_argv() + [str(a) for a in args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def frames_of(records: list[dict]) -> list[dict]:
    return [r for r in records if r["kind"] == "frame"]


def notes_of(records: list[dict], kind: str | None = None) -> list[dict]:
    return [r for r in records if r["kind"] != "frame" and (kind is None or r["kind"] == kind)]


def key_text(raw: bytes) -> str:
    """How dcpinspect renders a plain (non-collection) key."""
    return raw.decode("utf-8", "backslashreplace")


@dataclass
class RealCapture:
    """A capture of real traffic and what produced it."""

    path: Path
    port: int
    stats: CaptureStats
    clients: list[McClient] = field(default_factory=list)
    tool: subprocess.CompletedProcess | None = None


def capture_traffic(workdir: Path, name: str, traffic: Callable[[int, "RealCapture"], None]) -> RealCapture:
    """Start a memcached and a tcpdump on its port, run ``traffic(port, capture)``, stop both."""
    require("memcached", "tcpdump", root=True)
    workdir.mkdir(parents=True, exist_ok=True)
    with Memcached(workdir) as mc:
        path = workdir / f"{name}.pcap"
        cap = RealCapture(path, mc.port, CaptureStats())
        dump = TcpDump(path, mc.port).start()
        try:
            traffic(mc.port, cap)
        finally:
            cap.stats = dump.stop()
    assert path.exists() and path.stat().st_size > 24, f"tcpdump wrote nothing to {path}"
    return cap


_PEAK_PROBE = """\
import os, resource, subprocess, sys
out, err = int(sys.argv[1]), int(sys.argv[2])
p = subprocess.run(sys.argv[3:], stdin=subprocess.DEVNULL, stdout=out, stderr=err)
print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def peak_rss(*args: str, env: dict | None = None, timeout: float = 600) -> tuple[subprocess.CompletedProcess, int]:
    """``dcpinspect ARGS`` and its peak resident set in KiB (workers included), measured by a
    small process of its own whose only child is the command: a child forked straight from
    the test process would count the test's own memory until it execs."""
    import tempfile

    full = dict(os.environ)
    repo = str(Path(__file__).resolve().parents[1])
    full["PYTHONPATH"] = repo + (os.pathsep + full["PYTHONPATH"] if full.get("PYTHONPATH") else "")
    full.update(env or {})
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        probe = subprocess.run([sys.executable, "-c", _PEAK_PROBE, str(out.fileno()), str(err.fileno()),
                                sys.executable, "-m", "dcpinspect", *map(str, args)],
                               capture_output=True, env=full, timeout=timeout, pass_fds=(out.fileno(), err.fileno()))
        code, peak = map(int, probe.stdout.split())
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(args, code, out.read(), err.read()), peak


# --- redis-server ------------------------------------------------------------------


class Redis:
    """``redis-server`` on a free loopback port, without persistence, for a ``with`` block."""

    def __init__(self, workdir, *args: str, port: int | None = None) -> None:
        self.port = free_port() if port is None else port
        self.dir = workdir / f"redis-{self.port}"
        self.dir.mkdir(parents=True)
        self.args = args

    def __enter__(self) -> "Redis":
        binary = require("redis-server")["redis-server"]
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", LOOPBACK, "--save", "", "--appendonly", "no",
             "--dir", str(self.dir), "--daemonize", "no", *self.args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert wait_until(lambda: _connectable(self.port), 10), "redis-server did not start"
        return self

    def __exit__(self, *exc) -> None:
        _stop(self.proc)


def _resp(*words: str) -> bytes:
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w.encode()), w.encode()) for w in words)


class RedisClient:
    """Just enough RESP to write keys and read INFO."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection((LOOPBACK, port), timeout=5)
        self.buf = b""

    def call(self, *words: str) -> bytes:
        self.sock.sendall(_resp(*words))
        while b"\r\n" not in self.buf:
            self.buf += self.sock.recv(65536)
        line, _, rest = self.buf.partition(b"\r\n")
        if line.startswith(b"$") and int(line[1:]) >= 0:
            n = int(line[1:])
            while len(rest) < n + 2:
                rest += self.sock.recv(65536)
            self.buf = rest[n + 2:]
            return rest[:n]
        self.buf = rest
        return line

    def info(self, field: str) -> str:
        for line in self.call("INFO", "replication").decode().splitlines():
            if line.startswith(field + ":"):
                return line.split(":", 1)[1]
        return ""

    def close(self) -> None:
        self.sock.close()


# --- redis-server as the judge of an RDB file ------------------------------------------


@dataclass
class RedisLoad:
    """What ``redis-server`` did with an RDB file at start: whether it came up serving, its
    DBSIZE of each db it reports (``INFO keyspace``), its log, and its exit status when
    it refused the file; and what ``redis-check-rdb`` said of the same file."""

    serving: bool
    keyspace: dict[int, int]
    log: str
    returncode: int | None
    check_code: int
    check_out: str
    asked: object = None

    @property
    def keys(self) -> int:
        return sum(self.keyspace.values())


def redis_load(rdb: Path, workdir: Path, *config: str, ask: Callable[[int], object] | None = None,
               timeout: float = 20, binary: str | None = None) -> RedisLoad:
    """Start ``redis-server --dir WORKDIR --dbfilename f.rdb`` on a copy of ``rdb`` (on a free
    loopback port, nothing saved back), wait until it serves or exits, read its keyspace
    (and what ``ask(port)`` returns), stop it; then run ``redis-check-rdb`` on the same copy.
    ``binary``: another redis-server than the one on the PATH (:func:`redis_server_at_least`),
    run as redis-check-rdb too (the one program is both, by the name it is called by)."""
    if binary is not None:
        found = {"redis-server": binary, "redis-check-rdb": binary}
    else:
        found = require("redis-server", "redis-check-rdb")
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(rdb, workdir / "f.rdb")
    log_path = workdir / "redis.log"
    port = free_port()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([found["redis-server"], "--port", str(port), "--bind", LOOPBACK, "--save", "",
                                 "--appendonly", "no", "--dir", str(workdir), "--dbfilename", "f.rdb",
                                 "--daemonize", "no", *config],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    keyspace: dict[int, int] = {}
    serving, asked = False, None
    try:
        assert wait_until(lambda: proc.poll() is not None or b"Ready to accept" in log_path.read_bytes(), timeout), \
            "redis-server neither served nor exited"
        if proc.poll() is None:
            with socket.create_connection((LOOPBACK, port), timeout=10) as s:
                s.sendall(b"INFO keyspace\r\n")
                reply = b""
                while not reply.startswith(b"$") or reply.count(b"\r\n") < 2 or \
                        len(reply) < reply.index(b"\r\n") + 2 + int(reply[1:reply.index(b"\r\n")]) + 2:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    reply += chunk
            serving = reply.startswith(b"$")
            for db, keys in re.findall(rb"^db(\d+):keys=(\d+),", reply, re.M):
                keyspace[int(db)] = int(keys)
            if serving and ask is not None:
                asked = ask(port)
    finally:
        code = _stop(proc) if proc.poll() is None else proc.returncode
    check = subprocess.run(["redis-check-rdb", str(workdir / "f.rdb")], executable=found["redis-check-rdb"],
                           capture_output=True, text=True, timeout=60)
    return RedisLoad(serving, keyspace, log_path.read_text(errors="replace"), None if serving else code,
                     check.returncode, check.stdout + check.stderr, asked)


def drain(fd: int) -> bytes:
    """Everything left to read on ``fd`` (a pty's master once its slave is closed), then
    closes it; a pty says it has ended by an OSError (EIO)."""
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(fd)
    return out


def redis_server_at_least(major: int, minor: int) -> str:
    """A redis-server of ``major.minor`` or later: ``DCPINSPECT_REDIS_72`` (a path to a
    newer build than the distribution's), else the one on the PATH when it is that new;
    the test is skipped without one."""
    binary = os.environ.get("DCPINSPECT_REDIS_72") or require("redis-server")["redis-server"]
    got = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
    m = re.search(r"v=(\d+)\.(\d+)", got)
    if not m or (int(m[1]), int(m[2])) < (major, minor):
        pytest.skip(f"no redis-server of {major}.{minor} or later (set DCPINSPECT_REDIS_72): {got.strip()}")
    return binary
