"""Inputs that can be read only once: ``-`` (stdin), ``/dev/stdin``, named FIFOs, bash's
process substitution, gzip through a pipe, for the captures, hex dumps and RDB files of
every command that reads files. Each is run as a user types it (real pipes, a real FIFO, a
real ``bash``), and must print what the same bytes give as a regular file; a capture is
decoded as its records arrive, and garbage on a pipe is refused at once, in bounded memory.
"""

from __future__ import annotations

import gzip
import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import rdbgen
import servers

REPO = Path(__file__).resolve().parents[1]
PCAP = REPO / "samples" / "memcached-binary.pcap"  # real memcached traffic
PCAPNG = REPO / "samples" / "dcp-lossy.pcapng"
HEX = REPO / "samples" / "dcp-session.hex"
CLI = " ".join(map(shlex.quote, servers.dcpinspect_argv()))


def bash(script: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``script`` run by bash (pipes and ``<(...)`` as a user writes them), ``$DCP`` the CLI."""
    env = dict(os.environ, DCP=CLI, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(["bash", "-c", "set -o pipefail; " + script], capture_output=True, text=True,
                          timeout=timeout, env=env, stdin=subprocess.DEVNULL)


def ok(script: str) -> str:
    res = bash(script)
    assert res.returncode == 0 and "Traceback" not in res.stderr, (script, res.stderr)
    return res.stdout


@pytest.fixture(scope="module")
def rdb_file(tmp_path_factory) -> Path:
    body = b"\xfe\x00" + b"".join(rdbgen.key(0, f"key:{i}", rdbgen.string(f"value {i}")) for i in range(200))
    body += rdbgen.key(0, "wanted", rdbgen.string("the value"))
    path = tmp_path_factory.mktemp("rdb") / "dump.rdb"
    path.write_bytes(rdbgen.rdb(body))
    return path


@pytest.fixture(scope="module")
def file_jsonl() -> str:
    return ok(f"$DCP decode -f jsonl {PCAP}")


def test_the_file_itself_decodes(file_jsonl):
    assert len(servers.frames_of(servers.jsonl(file_jsonl))) > 100


@pytest.mark.parametrize("script", [
    "cat {f} | $DCP decode - -f jsonl",
    "cat {f} | $DCP decode /dev/stdin -f jsonl",
    "$DCP decode <(cat {f}) -f jsonl",
    "$DCP decode - -f jsonl < {f}",  # a regular file as stdin
    "gzip -c {f} | $DCP decode - -f jsonl",
    "$DCP decode <(gzip -c {f}) -f jsonl",
    "cat {f} | $DCP decode - -f jsonl -j 2",  # a stream is read by one process
])
def test_a_capture_through_a_pipe_decodes_as_the_file(script, file_jsonl):
    assert ok(script.format(f=PCAP)) == file_jsonl


@pytest.mark.parametrize("command", ["validate -f jsonl", "stats -f json", "decode -f jsonl"])
def test_every_capture_command_reads_a_pipe(command):
    for path in (PCAPNG, HEX):
        whole = ok(f"$DCP {command} {path}")
        piped = ok(f"cat {path} | $DCP {command} -")
        substituted = ok(f"$DCP {command} <(cat {path})")
        # a dump's one connection is named by its input; everything else is the same
        for text in (piped, substituted):
            assert text.replace("stdin", str(path)).replace("/dev/fd/63", str(path)) == whole


def _feed_fifo(path: Path, data: bytes) -> threading.Thread:
    def feed() -> None:
        with open(path, "wb") as fh:  # blocks until the reader opens it
            for i in range(0, len(data), 4096):
                fh.write(data[i:i + 4096])

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    return thread


def test_a_named_fifo_is_read_once(tmp_path, file_jsonl, rdb_file):
    fifo = tmp_path / "capture.fifo"
    os.mkfifo(fifo)
    feeder = _feed_fifo(fifo, PCAP.read_bytes())
    res = servers.dcpinspect("decode", "-f", "jsonl", fifo, timeout=60)
    feeder.join(10)
    assert res.returncode == 0, res.stderr
    assert res.stdout == file_jsonl
    feeder = _feed_fifo(fifo, rdb_file.read_bytes())
    res = servers.dcpinspect("rdb", "-f", "summary", fifo, timeout=60)
    feeder.join(10)
    assert res.returncode == 0, res.stderr
    assert f"{fifo}: redis RDB version 11, 201 keys in 1 db, checksum ok: 0 errors" in res.stdout


def test_frames_are_printed_while_the_capture_runs():
    """The pipe stays open (no EOF) until the first frame has been printed: the records
    were decoded as they arrived, as ``tcpdump -U -w - | dcpinspect decode -`` needs."""
    data = PCAP.read_bytes()
    proc = subprocess.Popen(servers.dcpinspect_argv() + ["decode", "-f", "jsonl", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()), daemon=True)
    reader.start()
    try:
        proc.stdin.write(data[:len(data) // 2])
        proc.stdin.flush()
        reader.join(60)
        assert got and got[0].startswith(b'{"kind":"frame"'), proc.stderr.read1() if not got else got
        assert proc.poll() is None  # still waiting for the rest
        proc.stdin.write(data[len(data) // 2:])
    finally:
        proc.stdin.close()
        rest = proc.stdout.read()
        proc.wait(60)
    assert proc.returncode == 0
    assert len(servers.frames_of(servers.jsonl((got[0] + rest).decode()))) > 100


def test_table_view_of_a_pipe_prints_before_eof():
    data = PCAP.read_bytes()
    proc = subprocess.Popen(servers.dcpinspect_argv() + ["decode", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()), daemon=True)
    reader.start()
    try:
        proc.stdin.write(data[:len(data) // 2])
        proc.stdin.flush()
        reader.join(60)
        assert got and b" request " in got[0] and proc.poll() is None
    finally:
        proc.stdin.close()
        proc.stdout.read()
        proc.wait(60)


# --- RDB files ---------------------------------------------------------------------


@pytest.mark.parametrize("script", [
    "cat {f} | $DCP rdb - -f jsonl",
    "$DCP rdb /dev/stdin -f jsonl < <(cat {f})",
    "$DCP rdb <(cat {f}) -f jsonl",
    "gzip -c {f} | $DCP rdb - -f jsonl",
    "$DCP rdb <(gzip -c {f}) -f jsonl",
])
def test_an_rdb_file_through_a_pipe_decodes_as_the_file(script, rdb_file):
    whole = servers.jsonl(ok(f"$DCP rdb {rdb_file} -f jsonl"))
    piped = servers.jsonl(ok(script.format(f=rdb_file)))
    for rec in piped:
        rec.pop("file", None)
    for rec in whole:
        rec.pop("file", None)
    assert piped == whole
    assert whole[-1]["keys"] == 201 and whole[-1]["checksum"] == "ok"


def test_rdb_key_detail_from_a_pipe_shows_its_bytes(rdb_file):
    whole = ok(f"$DCP rdb {rdb_file} --key wanted")
    piped = ok(f"cat {rdb_file} | $DCP rdb - --key wanted")
    assert "the value" in piped and "Record bytes" in piped
    anatomy = "Offsets (in the file)"  # the title above it wraps by the name's length
    assert piped[piped.index(anatomy):] == whole[whole.index(anatomy):]


def test_a_capture_given_to_rdb_is_refused_clearly():
    res = bash(f"cat {PCAP} | $DCP rdb -")
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr == ("dcpinspect: stdin: a capture or hex dump, not a snapshot file: read it with "
                          "`dcpinspect decode -` (or validate, stats)\n")


# --- garbage on a pipe ---------------------------------------------------------------


@pytest.mark.parametrize("script", [
    "head -c 3000000 /dev/urandom | $DCP decode -",
    "$DCP validate <(head -c 100000 /dev/zero)",
    "$DCP stats /dev/zero",
])
def test_binary_garbage_is_one_line_exit_2(script):
    res = bash(script)
    assert res.returncode == 2 and res.stdout == "" and "Traceback" not in res.stderr
    (line,) = res.stderr.splitlines()
    assert "neither a capture (pcap, pcapng, gzip) nor a hex dump" in line


def test_text_that_is_no_dump_is_one_line_exit_2():
    res = bash("printf 'hello\\nworld\\n' | $DCP decode -")
    assert res.returncode == 2 and res.stderr == "dcpinspect: stdin: neither a capture (pcap, pcapng, gzip) nor a hex dump\n"


def test_an_empty_pipe_is_one_line_exit_2():
    res = bash("$DCP decode - < /dev/null")
    assert res.returncode == 2 and res.stdout == "" and len(res.stderr.splitlines()) == 1
    assert "empty" in res.stderr


#: ``decode /dev/zero`` once held the whole text cap twice over (550 MB) before exiting 2
ZERO_MEMORY_KB = 120 * 1024


def test_decode_dev_zero_exits_at_once_in_little_memory():
    res, peak_kb = servers.peak_rss("decode", "/dev/zero", timeout=120)
    assert res.returncode == 2, res.stderr
    assert b"neither a capture" in res.stderr
    assert peak_kb < ZERO_MEMORY_KB, f"peak RSS {peak_kb} KiB"


def test_endless_text_is_held_once_up_to_the_cap(tmp_path):
    """Text past the cap is refused as soon as the cap is read, the bytes held once: the
    peak stays near the cap, not twice it (a list of chunks and their join, then the text)."""
    cap = 64 << 20
    fifo = tmp_path / "endless.fifo"
    os.mkfifo(fifo)
    stop = threading.Event()

    def feed() -> None:
        line = b"00 11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff\n" * 1024
        try:
            with open(fifo, "wb") as fh:
                while not stop.is_set():
                    fh.write(line)
        except BrokenPipeError:
            pass

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    try:
        res, peak_kb = servers.peak_rss("decode", fifo, env={"DCPINSPECT_MAX_TEXT": str(cap)}, timeout=300)
    finally:
        stop.set()
    assert res.returncode == 2 and f"more than {cap} bytes of text".encode() in res.stderr, res.stderr
    base = 100 * 1024  # the interpreter and its imports, generously
    assert peak_kb < base + 1.5 * (cap >> 10), f"peak RSS {peak_kb} KiB for a {cap >> 20} MiB cap"


def test_progress_of_a_stream_says_bytes_and_rate(capsys):
    from dcpinspect.outputs.progress import Progress

    now = [100.0]
    progress = Progress(None, where=lambda: 3 << 20, clock=lambda: now[0])
    now[0] += 2.0  # two seconds later
    progress(5)
    line = capsys.readouterr().err
    assert "3.0 MiB read, 1.5 MiB/s, 5 items" in line and "%" not in line


@pytest.mark.parametrize("tail", ["head -c 12", "head -c 300; head -c 100 /dev/urandom"])
def test_a_corrupt_gzip_rdb_on_a_pipe_is_one_line_exit_2(tail, rdb_file):
    res = bash(f"gzip -c {rdb_file} | {{ {tail}; }} | $DCP rdb - -f summary")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    (line,) = res.stderr.splitlines()
    assert line.startswith("dcpinspect: stdin: cannot read (")


@pytest.mark.parametrize("script", [
    "cat {pcap} | $DCP analyze - --out {out}",
    "$DCP analyze /dev/stdin --out {out} < <(cat {pcap})",
    "$DCP analyze <(cat {pcap}) --out {out}",
])
def test_analyze_refuses_a_stream_at_once_with_exit_2(tmp_path, script):
    """analyze's tasks open their files by name at the offsets they take: a stream is refused
    before Spark starts, in one line that says what to do instead."""
    res = bash(script.format(pcap=shlex.quote(str(PCAP)), out=shlex.quote(str(tmp_path / "out"))))
    assert res.returncode == 2 and res.stdout == "", res
    line, = res.stderr.splitlines()
    assert "analyze reads files that its Spark tasks open by name" in line and "Traceback" not in line
    assert "decode, validate or stats" in line and not (tmp_path / "out").exists()
