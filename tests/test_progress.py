"""The progress line (outputs/progress.py): by bytes read, with the rate and the time left;
bytes and rate alone where the input's size is not known (a pipe)."""

from __future__ import annotations

import io
import os

from dcpinspect.outputs.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_known_size_bar_rate_and_time_left():
    clock, out = Clock(), io.StringIO()
    p = Progress(100 << 20, clock=clock, stream=out)
    clock.now += 10
    p(5000, 25 << 20)  # a quarter in 10 s: 2.5 MiB/s, 30 s left
    line = p.line()
    assert line.startswith("[######------------------]  25% 25.0 MiB of 100.0 MiB")
    assert "2.5 MiB/s" in line and "0:30 left" in line and "5,000 items" in line
    assert out.getvalue().startswith("\r[######")
    clock.now += 20
    p(1, -1)  # the end
    assert " 100% " in p.line() and "0:00 left" in p.line()
    p.close()
    assert out.getvalue().endswith("\r\x1b[K")


def test_unknown_size_bytes_and_rate():
    clock, out = Clock(), io.StringIO()
    p = Progress(None, clock=clock, stream=out)
    clock.now += 4
    p(7, 3 << 30)
    assert p.line() == "3.0 GiB read, 768.0 MiB/s, 7 items"
    p(1, -1)  # the end of a pipe: no size to jump to
    assert p.line().startswith("3.0 GiB read")


def test_redrawn_at_most_twice_a_second():
    clock, out = Clock(), io.StringIO()
    p = Progress(1 << 20, clock=clock, stream=out)
    for _ in range(1000):
        p(1, 1000)
    assert out.getvalue().count("\r") == 1
    clock.now += 0.6
    p(1, 2000)
    assert out.getvalue().count("\r") == 2


def test_long_runs_print_hours():
    clock = Clock()
    p = Progress(1 << 40, clock=clock, stream=io.StringIO())
    clock.now += 60
    p(1, 1 << 30)
    assert "17:03:00 left" in p.line()


# -- rdb: a gzip file's bar and a .dfs set's, by the bytes of the files read -------------------

def _on_a_terminal(*args: str) -> tuple[int, bytes]:
    """``dcpinspect ARGS`` with its stderr on a terminal (a pty): exit code and what it wrote there."""
    import pty
    import subprocess

    import servers

    master, slave = pty.openpty()
    try:
        r = subprocess.run(servers.dcpinspect_argv() + list(args), stdout=subprocess.PIPE, stderr=slave,
                           stdin=subprocess.DEVNULL, timeout=300)
    finally:
        os.close(slave)
    return r.returncode, servers.drain(master)


def _bars(err: bytes) -> list[tuple[int, str]]:
    """(percent, "X of Y") of each bar drawn."""
    import re

    return [(int(pct), f"{at.decode()} of {size.decode()}")
            for pct, at, size in re.findall(rb"\]\s+(\d+)% ([\d.,]+ \S+) of ([\d.,]+ \S+),", err)]


def _incompressible_rdb(size: int) -> bytes:
    import rdbgen

    values = [os.urandom(64 << 10) for _ in range(size // (64 << 10) + 1)]
    return rdbgen.rdb(b"\xfe\x00" + b"".join(rdbgen.key(0, f"k{i}", rdbgen.string(v)) for i, v in enumerate(values)),
                      version=9, checksum=False)


def test_a_gzip_rdb_has_a_bar_of_its_compressed_bytes(tmp_path):
    import gzip

    from dcpinspect.families.redis.reports.snapshots import records
    from dcpinspect.outputs.progress import _bytes

    path = tmp_path / "dump.rdb.gz"
    path.write_bytes(gzip.compress(_incompressible_rdb(2 << 20), 1))
    size = path.stat().st_size
    heard: list[int] = []
    assert sum(1 for _ in records(path, progress=lambda done, at: heard.append(at))) > 30
    assert heard == sorted(heard) and 0 < heard[0] < size and heard[-1] == size  # not the inflated bytes
    code, err = _on_a_terminal("rdb", "-f", "summary", str(path))
    bars = _bars(err)
    assert code == 0 and bars and all(f"of {_bytes(size)}" in b and pct <= 100 for pct, b in bars), err
    assert err.endswith(b"\r\x1b[K")  # gone before the summary


def test_a_dfs_set_has_one_bar_of_all_its_files(tmp_path):
    import dflygen
    import rdbgen

    from dcpinspect.families.redis.dragonfly.dfs import SetChecks, members_of, read_set
    from dcpinspect.outputs.progress import _bytes

    head = b"REDIS0009" + rdbgen.aux("redis-ver", "7.4.0") + rdbgen.aux("df-ver", "v1.30.0")
    (tmp_path / "d-summary.dfs").write_bytes(head + dflygen.aux_int("shard-count", 2) + dflygen.DF_EOF)
    big = b"x" * (1 << 20)
    for shard in (0, 1):
        keys = b"".join(rdbgen.key(0, f"s{shard}:{i}", rdbgen.string(big)) for i in range(17))
        (tmp_path / f"d-{shard:04d}.dfs").write_bytes(head + dflygen.aux_int("shard-id", shard) + keys
                                                      + dflygen.DF_EOF)
    files = sorted(tmp_path.iterdir())
    total = sum(f.stat().st_size for f in files)
    assert total > 32 << 20  # a bar from 32 MiB
    members = members_of(tuple(files))
    heard: list[int] = []
    list(read_set(members, SetChecks(members), progress=lambda done, at: heard.append(at)))
    first = (tmp_path / "d-0000.dfs").stat().st_size
    assert heard == sorted(heard) and heard[-1] == total and any(h > first for h in heard)
    code, err = _on_a_terminal("rdb", "-f", "summary", str(tmp_path / "d-summary.dfs"))
    bars = _bars(err)
    assert code == 0 and bars and all(f"of {_bytes(total)}" in b and pct <= 100 for pct, b in bars), err
    assert err.endswith(b"\r\x1b[K")
