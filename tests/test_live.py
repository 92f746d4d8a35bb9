"""``dcpinspect live`` on the loopback interface against a real memcached.

The sniffer is started as a subprocess; traffic begins only once it holds a packet
socket (seen in /proc), and the command must then stop by itself when its
--duration is over, having decoded exactly what the Python client sent.
"""

from __future__ import annotations

import ctypes.util
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

import servers

DURATION = 5.0


def _packet_socket_inodes() -> set[str]:
    with open("/proc/net/packet") as fh:
        return {line.split()[-1] for line in fh.read().splitlines()[1:] if line.strip()}


def _holds_packet_socket(pid: int) -> bool:
    try:
        inodes = _packet_socket_inodes()
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in inodes:
            return True
    return False


class Live:
    """``dcpinspect live …`` in the background, output to files, bounded waits."""

    def __init__(self, workdir: Path, *args: str):
        self.out = workdir / "live.jsonl"
        self.err = workdir / "live.stderr"
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.started = time.monotonic()
            self.proc = subprocess.Popen(servers.dcpinspect_argv() + ["live", *args], stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=err)
        self.ready_at: float | None = None

    def wait_ready(self, timeout: float = 20.0) -> None:
        if not os.path.exists("/proc/net/packet"):
            time.sleep(3.0)  # no way to look: give Scapy time to open its socket
        elif not servers.wait_until(lambda: self.proc.poll() is not None or _holds_packet_socket(self.proc.pid),
                                    timeout, 0.05):
            self.kill()
            pytest.fail(f"dcpinspect live did not open a packet socket within {timeout}s")
        if self.proc.poll() is not None:
            pytest.fail(f"dcpinspect live exited early ({self.proc.returncode}): {self.err.read_text()}")
        time.sleep(0.3)  # the socket exists: let Scapy reach its receive loop
        self.ready_at = time.monotonic()

    def wait(self, timeout: float) -> float:
        """Wait for the process to end by itself; returns seconds since it was ready."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"dcpinspect live still running {timeout}s after its traffic")
        return time.monotonic() - (self.ready_at or self.started)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)

    def records(self) -> list[dict]:
        return servers.jsonl(self.out.read_text())


@pytest.fixture
def memcached(tmp_path):
    with servers.Memcached(tmp_path) as mc:
        yield mc


@pytest.fixture
def live(tmp_path):
    started = []

    def start(*args: str) -> Live:
        servers.require(root=True)
        if ctypes.util.find_library("pcap") is None:
            pytest.skip("libpcap is missing: Scapy cannot compile the --filter")
        lv = Live(tmp_path, *args)
        started.append(lv)
        lv.wait_ready()
        return lv

    yield start
    for lv in started:
        lv.kill()


def paced_session(port: int, pause: float = 0.02) -> servers.McClient:
    """Requests one at a time, a little apart (well under what Scapy keeps up with)."""
    c = servers.McClient(port, opaque_base=0x0A000001)
    try:
        steps = [
            lambda: c.noop(),
            lambda: c.set(b"live:1", b"first", flags=7),
            lambda: c.set(b"live:2", b'{"json":true}'),
            lambda: c.get(b"live:1"),
            lambda: c.get(b"live:2", op=servers.GETK),
            lambda: c.get(b"live:none"),
            lambda: c.incr(b"live:n", delta=2, initial=40),
            lambda: c.incr(b"live:n", delta=2),
            lambda: c.set(servers.CONTROL_KEY, b"x"),
            lambda: c.quiet_batch([(servers.SETQ, b"live:q", b"q", b"\0" * 8), (servers.GETKQ, b"live:q", b"", b"")]),
            lambda: c.delete(b"live:1"),
            lambda: c.delete(b"live:1"),
            lambda: c.version(),
            lambda: c.quit(),
        ]
        for step in steps:
            step()
            time.sleep(pause)
    finally:
        c.close()
    return c


@pytest.mark.live
@pytest.mark.server
def test_live_decodes_what_was_sent_and_stops_by_itself(memcached, live):
    port = memcached.port
    lv = live("-i", "lo", "--filter", f"tcp port {port}", "--port", str(port), "--duration", str(DURATION),
              "--format", "jsonl")
    client = paced_session(port)
    elapsed = lv.wait(DURATION + 15)
    assert lv.proc.returncode == 0, lv.err.read_text()
    assert elapsed <= DURATION + 3, f"live ran {elapsed:.1f}s after it was ready (duration {DURATION}s)"
    stderr = lv.err.read_text()
    assert "Traceback" not in stderr
    records = lv.records()
    assert servers.notes_of(records, "gap") == [] and servers.notes_of(records, "skipped") == []
    frames = servers.frames_of(records)
    assert {f["flow"] for f in frames} == {f"127.0.0.1:{client.client_port}-127.0.0.1:{port}"}
    c2s = [(f["opcode"], f["key"], f["opaque"]) for f in frames if f["direction"] == "c2s"]
    s2c = [(f["opcode"], f["status"], f["key"], f["opaque"]) for f in frames if f["direction"] == "s2c"]
    assert c2s == [(s.opcode, servers.key_text(s.key), s.opaque) for s in client.sent]
    assert s2c == [(r.opcode, r.status, servers.key_text(r.key), r.opaque) for r in client.received]
    assert len(c2s) == 16 and len(s2c) == 15  # the quiet SETQ has no answer
    # the error the server gave is a warning, the rest clean
    miss = next(f for f in frames if f["direction"] == "s2c" and f["status"] == servers.KEY_ENOENT
                and f["opcode"] == servers.GET)
    assert [x["severity"] for x in miss["findings"]] == ["warning"]
    # the end-of-run summary goes to stderr, not into the jsonl
    assert "frames in 1 connections" in stderr


@pytest.mark.live
@pytest.mark.server
def test_live_count_stops_after_that_many_packets(memcached, live):
    port = memcached.port
    lv = live("-i", "lo", "--filter", f"tcp port {port}", "--port", str(port), "--count", "3",
              "--duration", "30", "--format", "jsonl")
    c = servers.McClient(port)
    try:
        for _ in range(5):
            c.noop()
            time.sleep(0.05)
    finally:
        c.close()
    elapsed = lv.wait(20)
    assert lv.proc.returncode == 0, lv.err.read_text()
    assert elapsed < 10  # well before --duration
    assert "Traceback" not in lv.err.read_text()


@pytest.mark.live
@pytest.mark.server
def test_live_keeps_up_with_a_one_mib_burst(memcached, live):
    port = memcached.port
    lv = live("-i", "lo", "--filter", f"tcp port {port}", "--port", str(port), "--duration", str(DURATION),
              "--format", "jsonl")
    c = servers.McClient(port)
    big = servers.big_value()
    try:
        for i in range(2):
            assert c.set(b"big%d" % i, big).status == 0
            assert c.get(b"big%d" % i).value == big
        c.quit()
    finally:
        c.close()
    lv.wait(DURATION + 15)
    records = lv.records()
    assert servers.notes_of(records, "gap") == []
    frames = servers.frames_of(records)
    assert [(f["opcode"], f["opaque"]) for f in frames if f["direction"] == "c2s"] == \
        [(s.opcode, s.opaque) for s in c.sent]


@pytest.mark.live
@pytest.mark.server
def test_live_summary_is_printed_on_ctrl_c(memcached, live):
    """``live -f summary`` stopped by Ctrl-C (SIGINT) prints the summary of what it saw,
    counted by the filters as decode counts, and exits 0, as when --duration ends it."""
    import signal

    port = memcached.port
    lv = live("-i", "lo", "--filter", f"tcp port {port}", "--port", str(port), "--format", "summary",
              "--opcode", "GET")
    client = paced_session(port)
    time.sleep(0.5)
    lv.proc.send_signal(signal.SIGINT)
    lv.wait(20)
    assert lv.proc.returncode == 0, lv.err.read_text()
    out = lv.out.read_text()
    assert "Traceback" not in lv.err.read_text()
    gets = sum(1 for s in client.sent if s.opcode == servers.GET)
    answered = sum(1 for r in client.received if r.opcode == servers.GET)
    assert f"{gets + answered} frames in 1 connections (selected by the filters;" in out, out
    assert f"127.0.0.1:{client.client_port}-127.0.0.1:{port}" in out


def test_live_unknown_interface_is_one_line_exit_2():
    res = servers.dcpinspect("live", "-i", "nosuch0", timeout=60)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr and "Traceback" not in res.stdout
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("dcpinspect: ") and "nosuch0" in lines[0]
    assert res.stdout == ""


@pytest.mark.live
@pytest.mark.server
def test_live_write_keeps_what_it_sniffed_as_pcapng(memcached, live, tmp_path):
    """``--write`` keeps every packet as pcapng while decoding, as ``tshark -w`` does: the
    file read back by dcpinspect gives the frames live printed, and tshark reads it too."""
    port = memcached.port
    kept = tmp_path / "kept.pcapng"
    lv = live("-i", "lo", "--filter", f"tcp port {port}", "--port", str(port), "--duration", str(DURATION),
              "--format", "jsonl", "--write", str(kept))
    client = paced_session(port)
    lv.wait(DURATION + 15)
    assert lv.proc.returncode == 0, lv.err.read_text()
    assert kept.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a"
    live_frames = [(f["direction"], f["opcode"], f["opaque"]) for f in servers.frames_of(lv.records())]
    assert len(live_frames) == len(client.sent) + len(client.received) == 31
    back = servers.dcpinspect("decode", "-f", "jsonl", "--port", str(port), kept)
    assert back.returncode == 0, back.stderr
    assert [(f["direction"], f["opcode"], f["opaque"]) for f in servers.frames_of(servers.jsonl(back.stdout))] == \
        live_frames
    packets = int(re.search(r"wrote (\d+) packets", lv.err.read_text()).group(1))
    assert packets >= 31  # the handshake and acks too
    servers.require("tshark")
    shark = subprocess.run(["tshark", "-r", str(kept), "-T", "fields", "-e", "frame.number", "-e", "tcp.dstport"],
                           capture_output=True, text=True, timeout=120)
    assert shark.returncode == 0, shark.stderr
    rows = [line.split("\t") for line in shark.stdout.splitlines()]
    assert len(rows) == packets and {int(r[1]) for r in rows} >= {port}


@pytest.mark.live
@pytest.mark.server
@pytest.mark.parametrize("options, decoded", [(("--no-heuristic",), False),
                                              (("--no-heuristic", "--decode-as", "{port}=mcbp"), True)])
def test_live_takes_the_capture_options(memcached, live, options, decoded):
    """memcached's port here is one no family claims: ``--no-heuristic`` leaves it undecoded,
    ``--decode-as PORT=mcbp`` decodes it, as decode, validate and stats do."""
    port = memcached.port
    lv = live("-i", "lo", "--filter", f"tcp port {port}", "--duration", "3", "--format", "jsonl",
              *(o.format(port=port) for o in options))
    client = paced_session(port)
    lv.wait(20)
    assert lv.proc.returncode == 0, lv.err.read_text()
    frames = servers.frames_of(lv.records())
    assert len(frames) == (len(client.sent) + len(client.received) if decoded else 0)
