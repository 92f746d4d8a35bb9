"""``rdb --format jsonl --values`` and ``--format resp`` shared between two processes
(``reports/stripes.py``), which write to the same output in turns: the output must be
byte for byte that of one process (every key's line in the file's order, the summary and
the snapshot's digest; each SELECT where one process writes it), on files of many stripes
holding every kind of key, keys the C lane leaves to the readers, keys across stripes and
dbs that change from turn to turn; a helper that stops or disagrees must stop the run with
an error, never a wrong output; an output closed early ends the run as it would alone."""

from __future__ import annotations

import io
import os
import random
import struct
import sys
import tempfile
from pathlib import Path

import pytest
from _pytest.monkeypatch import MonkeyPatch

import rdbgen as g
from dcpinspect.families.redis.rdb.crc64 import crc64
from dcpinspect.families.redis.rdb.native import C
from dcpinspect.families.redis.reports import snapshots, stripes
from dcpinspect.sources.inputs import InputError

needs_c = pytest.mark.skipif(C is None, reason="the _rdb extension is not built")
ROOT = Path(__file__).resolve().parent.parent


def _many_keys(n: int, seed: int, dbs_every: int = 0) -> bytes:
    """A file of ``n`` keys of every common layout, some with expiries, a name that is not
    UTF-8 now and then (the readers' line), big values that cross stripes, two dbs (or,
    with ``dbs_every``, a db of three that changes each ``dbs_every`` keys)."""
    rnd = random.Random(seed)
    body = [g.aux("redis-ver", "7.0.15") + g.aux("ctime", "1700000000") + b"\xfe\x00"]
    for i in range(n):
        if dbs_every and i and i % dbs_every == 0:
            body.append(b"\xfe" + bytes([i // dbs_every % 3]))
        elif not dbs_every and i == n // 2:
            body.append(b"\xfe\x05")
        name = b"\xff key %d" % i if i % 97 == 0 else b"user:%d:%s" % (i, rnd.choice([b"a", b"b", b"c"]))
        expire = 1800000000000 + i if i % 7 == 0 else None
        kind = i % 9
        if kind == 0:
            value = g.key(0, name, g.string(rnd.randbytes(rnd.choice([3, 40, 3000]))), expire)
        elif kind == 1:
            value = g.key(0, name, g.int_string(rnd.randrange(-2**31, 2**31)), expire)
        elif kind == 2:
            items = [b"e%d" % rnd.randrange(10**6) for _ in range(rnd.randrange(1, 60))]
            value = g.key(1, name, g.length(len(items)) + b"".join(g.string(x) for x in items), expire)
        elif kind == 3:
            members = list({b"m%d" % rnd.randrange(10**6) for _ in range(rnd.randrange(1, 40))})
            value = g.key(2, name, g.length(len(members)) + b"".join(g.string(m) for m in members), expire)
        elif kind == 4:
            fields = list({b"f%d" % rnd.randrange(10**6) for _ in range(rnd.randrange(1, 30))})
            value = g.key(4, name, g.length(len(fields)) + b"".join(g.string(f) + g.string(rnd.randbytes(8))
                                                                     for f in fields), expire)
        elif kind == 5:
            members = list({b"z%d" % rnd.randrange(10**6) for _ in range(rnd.randrange(1, 30))})
            value = g.key(5, name, g.length(len(members)) + b"".join(
                g.string(m) + struct.pack("<d", rnd.uniform(-1e6, 1e6)) for m in members), expire)
        elif kind == 6:
            pairs = [x for k in range(rnd.randrange(1, 10)) for x in (b"f%d" % k, rnd.randrange(10**9))]
            value = g.key(16, name, g.string(g.listpack(pairs)), expire)
        elif kind == 7:
            value = g.key(11, name, g.string(g.intset(sorted({rnd.randrange(-30000, 30000) for _ in range(20)}))),
                          expire)
        else:
            big = [b"x%06d" % k * 4 for k in range(rnd.choice([5, 800]))]
            value = g.key(18, name, g.length(1) + g.length(2) + g.string(g.listpack(big)), expire)
        body.append(value)
    raw = g.rdb(b"".join(body), version=10, checksum=False)
    return raw[:-8] + struct.pack("<Q", crc64(raw[:-8]))


def _output() -> io.TextIOWrapper:
    """A standard output on an unnamed temporary file (both processes write to its descriptor)."""
    return io.TextIOWrapper(tempfile.TemporaryFile("w+b"), encoding="ascii")


def _written(out: io.TextIOWrapper) -> bytes:
    out.flush()
    out.buffer.seek(0)
    data = out.buffer.read()
    out.close()
    return data


def _jsonl(path, jobs: int, monkeypatch) -> bytes:
    out = _output()
    monkeypatch.setattr(sys, "stdout", out)
    try:
        snapshots.show(path, "jsonl", values=True, jobs=jobs)
    finally:
        monkeypatch.undo()
        data = _written(out)
    return data


def _resp(path, jobs: int, monkeypatch) -> tuple[bytes, str]:
    out = _output()
    err = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    try:
        snapshots.show(path, "resp", jobs=jobs)
    finally:
        monkeypatch.undo()
        data = _written(out)
    return data, err.getvalue()


@pytest.fixture
def small_stripes(monkeypatch):
    monkeypatch.setattr(stripes, "STRIPE", 8192)
    monkeypatch.setattr(stripes, "LEAST", 0)


@needs_c
@pytest.mark.parametrize("seed", [1, 2])
def test_two_processes_write_what_one_writes(tmp_path, monkeypatch, small_stripes, seed):
    path = tmp_path / "many.rdb"
    path.write_bytes(_many_keys(1500, seed))
    assert os.path.getsize(path) > 40 * 8192  # many stripes
    with monkeypatch.context() as m:
        one = _jsonl(path, 1, m)
    with monkeypatch.context() as m:
        two = _jsonl(path, 2, m)
    assert two == one
    assert one.count(b'"kind":"key"') == 1500
    assert b'"digest":"' + b"0" * 40 not in one.splitlines()[-1]


@needs_c
def test_two_processes_export_what_one_exports(tmp_path, monkeypatch, small_stripes):
    path = tmp_path / "many.rdb"
    path.write_bytes(_many_keys(1200, 6))
    with monkeypatch.context() as m:
        one, said = _resp(path, 1, m)
    with monkeypatch.context() as m:
        two, said_two = _resp(path, 2, m)
    assert two == one
    assert said_two == said
    assert "1200 keys exported in" in said
    assert one.count(b"*2\r\n$6\r\nSELECT\r\n") == 2  # (db 0, then 5)


@needs_c
@pytest.mark.parametrize("every", [7, 60, 400])
def test_the_db_of_each_turn_is_selected_as_one_process_selects_it(tmp_path, monkeypatch, small_stripes, every):
    """dbs that change within turns, at their starts and not at all for several turns: each
    SELECT is where one process writes it, the turn's first key's settled as it is written."""
    path = tmp_path / "dbs.rdb"
    path.write_bytes(_many_keys(1500, 8, dbs_every=every))
    with monkeypatch.context() as m:
        one, said = _resp(path, 1, m)
    with monkeypatch.context() as m:
        two, said_two = _resp(path, 2, m)
    assert two == one
    assert said_two == said
    assert one.count(b"*2\r\n$6\r\nSELECT\r\n") == (1500 - 1) // every + 1  # (db 0, then each change)
    with monkeypatch.context() as m:
        assert _jsonl(path, 2, m) == _jsonl(path, 1, monkeypatch)


@needs_c
def test_two_processes_on_the_repositorys_files(tmp_path, monkeypatch):
    monkeypatch.setattr(stripes, "STRIPE", 1024)
    monkeypatch.setattr(stripes, "LEAST", 0)
    files = sorted(p for d in ("tests", "samples") for p in (ROOT / d).rglob("*.rdb")
                   if "dragonfly" not in p.name and p.stat().st_size > 4096)
    assert files
    for path in files:
        with monkeypatch.context() as m:
            one = _jsonl(path, 1, m)
        with monkeypatch.context() as m:
            two = _jsonl(path, 2, m)
        assert two == one, path
        if b"module" in one:  # (its skipped keys are said by the helper, on its own stderr)
            continue
        with monkeypatch.context() as m:
            one = _resp(path, 1, m)
        with monkeypatch.context() as m:
            two = _resp(path, 2, m)
        assert two == one, path


@needs_c
def test_a_helper_that_stops_stops_the_run(tmp_path, monkeypatch, small_stripes):
    path = tmp_path / "many.rdb"
    path.write_bytes(_many_keys(400, 3))
    monkeypatch.setattr(stripes, "_serve", lambda name, fd, rx, tx, fmt, label: 5)
    with pytest.raises(InputError, match=r"second process .* stopped before its last turn \(status 1280\)"):
        _jsonl(path, 2, monkeypatch)


@needs_c
def test_a_helper_that_disagrees_stops_the_run(tmp_path, monkeypatch, small_stripes):
    path = tmp_path / "many.rdb"
    path.write_bytes(_many_keys(400, 4))

    def wrong(name, fd, rx, tx, fmt, label):  # a turn that is not the one after this process's first
        os.write(tx, stripes.HEAD.pack(999, -1, 0))
        return 0

    monkeypatch.setattr(stripes, "_serve", wrong)
    with pytest.raises(InputError, match="does not agree"):
        _jsonl(path, 2, monkeypatch)


def test_which_files_are_shared(tmp_path, monkeypatch):
    path = tmp_path / "a.rdb"
    path.write_bytes(_many_keys(50, 5))
    gz = tmp_path / "a.rdb.gz"
    import gzip

    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert stripes.shared_path(path, 1) is None
    assert stripes.shared_path(gz, 2) is None  # (not read again from an offset)
    assert stripes.shared_path(path, 2) == str(path)
    assert stripes.shared_path(path, 0) is None  # small
    monkeypatch.setattr(stripes, "LEAST", 0)
    monkeypatch.setattr(stripes, "processors", lambda: 2)
    assert stripes.shared_path(path, 0) == str(path)
    monkeypatch.setattr(stripes, "processors", lambda: 1)
    assert stripes.shared_path(path, 0) is None


@needs_c
@pytest.mark.parametrize("fmt", [["-f", "jsonl", "--values"], ["-f", "resp"]])
def test_the_command_line_takes_jobs(fmt, tmp_path):
    """``rdb --jobs 2`` forks the helper from the command line too (a small file: all its
    keys in the first stripe, the helper's part empty) and writes what ``--jobs 1`` writes."""
    import subprocess

    path = ROOT / "tests" / "corpora" / "rdb-librdb" / "100_lists.rdb"
    runs = [subprocess.run([sys.executable, "-m", "dcpinspect", "rdb", str(path), *fmt, "--jobs", jobs],
                           capture_output=True, timeout=120) for jobs in ("1", "2")]
    assert [r.returncode for r in runs] == [0, 0], runs[1].stderr
    assert runs[0].stdout == runs[1].stdout and runs[0].stdout
    assert runs[0].stderr == runs[1].stderr


@needs_c
@pytest.mark.parametrize("fmt", [["-f", "jsonl", "--values"], ["-f", "resp"]])
@pytest.mark.parametrize("taken", [100, 300_000])
def test_an_output_closed_early_ends_the_run_as_one_process_does(fmt, taken, tmp_path):
    """The reader of the output goes away early or late: the run ends quietly with status
    0, as one process ends it."""
    import subprocess

    path = tmp_path / "many.rdb"
    path.write_bytes(_many_keys(1500, 9))
    code = ("import sys; from dcpinspect.families.redis.reports import stripes; stripes.STRIPE = 8192; "
            "from dcpinspect.__main__ import main; sys.argv[0] = 'dcpinspect'; main()")
    reader = "import sys; sys.stdin.buffer.read(%d)" % taken
    for jobs in ("1", "2"):
        run = subprocess.Popen([sys.executable, "-c", code, "rdb", str(path), *fmt, "--jobs", jobs],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        took = subprocess.run([sys.executable, "-c", reader], stdin=run.stdout, timeout=120)
        run.stdout.close()
        err = run.stderr.read()
        assert run.wait(timeout=120) == 0 and took.returncode == 0, err
        assert b"second process" not in err and b"Traceback" not in err, err


@needs_c
@pytest.mark.parametrize("fmt", ["jsonl", "resp"])
def test_a_helper_whose_output_is_closed_says_so(fmt, tmp_path, small_stripes):
    """The helper writing its first turn to an output closed ends with CLOSED (not killed
    by SIGPIPE, no message); the first process takes that, or SIGPIPE, as its own output
    closed (BrokenPipeError, which ends a run quietly), any other end as an error."""
    import signal

    path = tmp_path / "many.rdb"
    path.write_bytes(_many_keys(400, 10))
    out_r, out_w = os.pipe()
    os.close(out_r)
    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()
    os.write(to_w, stripes.HEAD.pack(0, -1, 0))  # (the first process's turn 0 written)
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.dup2(err_w, 2)
        os._exit(stripes._serve(str(path), out_w, to_r, from_w, fmt, str(path)))
    os.close(err_w)
    _, status = os.waitpid(pid, 0)
    said = os.read(err_r, 4096)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == stripes.CLOSED, status
    assert said == b""
    for fd in (out_w, to_r, to_w, from_r, from_w, err_r):
        os.close(fd)

    for end, raised in ((lambda: os._exit(stripes.CLOSED), BrokenPipeError),
                        (lambda: os.kill(os.getpid(), signal.SIGPIPE), BrokenPipeError),
                        (lambda: os._exit(7), InputError)):
        def serve(name, fd, rx, tx, fmt, label, end=end):
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            end()

        with MonkeyPatch.context() as m:
            m.setattr(stripes, "_serve", serve)
            with pytest.raises(raised):
                _jsonl(path, 2, m)
