"""``rdb --values``, ``--digest`` and ``--key NAME -f jsonl`` on the dump a real redis-server
wrote (tests/test_real_redis_rdb.py's fixture: every type and encoding of its version,
three dbs, expiries, binary values, streams with groups and pending entries, a function
library): each value against what the server said of the key, each key's digest against
``DEBUG DIGEST-VALUE`` and the snapshot's against ``DEBUG DIGEST`` of a second server that
loaded the dump; the shapes' binary safety and Redis's way of writing doubles."""

from __future__ import annotations

import base64
import json
import math
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest

import rdbgen
import servers
import test_real_redis_rdb as real
from test_real_redis_rdb import snapshot  # noqa: F401  (the real server's dump, a fixture)
from dcpinspect.families.redis.rdb.data import g17, redis_double, text


def _b(v) -> bytes:
    """A value of a jsonl object back to its bytes."""
    if isinstance(v, dict):
        return base64.b64decode(v["base64"])
    return v.encode()


@contextmanager
def loaded(path: Path | None, workdir: Path):
    """A redis-server (debug commands on) that loaded ``path`` at its start (None: empty)."""
    binary = servers.require("redis-server")["redis-server"]
    workdir.mkdir(parents=True, exist_ok=True)
    if path is not None:
        shutil.copy(path, workdir / "dump.rdb")
    port = servers.free_port()
    args = [binary, "--port", str(port), "--bind", servers.LOOPBACK, "--save", "", "--appendonly", "no", "--dir",
            str(workdir), "--dbfilename", "dump.rdb", "--daemonize", "no", "--enable-debug-command", "yes"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert servers.wait_until(lambda: proc.poll() is not None or servers._connectable(port), 20)
        c = real.Client(port)
        assert servers.wait_until(lambda: c.call("PING") == "PONG", 20)
        yield c
        c.close()
    finally:
        servers._stop(proc)


def jsonl(*args) -> list[dict]:
    res = servers.dcpinspect("rdb", "-f", "jsonl", *args)
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()]


def test_values_are_the_servers(snapshot):
    rows = jsonl(snapshot.path, "--values")
    keys = [r for r in rows if r["kind"] == "key"]
    assert len(keys) == sum(len(f) for f in snapshot.facts.values())
    for row in keys:
        fact = snapshot.facts[row["db"]][row["key"]]
        v, want, where = row["value"], fact["value"], (row["db"], row["key"])
        kind = fact["type"]
        assert row["value_length"] == fact["count"], where
        if kind == "string":
            assert _b(v) == want, where
        elif kind == "list":
            assert [_b(x) for x in v] == want, where
        elif kind == "set":
            assert sorted(_b(x) for x in v) == sorted(want), where
        elif kind == "zset":
            got = {_b(m): float(s) for m, s in v}
            assert got == {m: float(s) for m, s in zip(want[::2], want[1::2])}, where
            assert all(s in ("inf", "-inf") or s == redis_double(float(s)) for _, s in v)
        elif kind == "hash":
            assert {_b(f): _b(x) for f, x, *_ in v} == dict(zip(want[::2], want[1::2])), where
        elif kind == "stream":
            assert [[e[0], [[_b(f), _b(x)] for f, x in e[1]]] for e in v["entries"]] == \
                [[i.decode(), [[a, b] for a, b in zip(fv[::2], fv[1::2])]] for i, fv in want], where
            info = fact["info"]
            assert v["length"] == info["length"] and v["last_id"] == info["last-generated-id"].decode()
            groups = {g["name"]: g for g in v["groups"]}
            assert set(groups) == {g["name"].decode() for g in fact["groups"]}
            for g in fact["groups"]:
                mine = groups[g["name"].decode()]
                assert mine["last_delivered_id"] == g["last-delivered-id"].decode()
                assert [(p["id"], p["consumer"], p["delivery_count"]) for p in mine["pending"]] == \
                    [(i.decode(), c.decode(), n) for i, c, _, n in g["pending_entries"]]
                assert {c["name"]: len(c["pending"]) for c in mine["consumers"]} == \
                    {c["name"].decode(): c["pending"] for c in g["consumer_info"]}
    if snapshot.library:
        (fn,) = [r for r in rows if r["kind"] == "function"]
        assert fn["code"] == snapshot.library
    by = {(r["db"], r["key"]): r for r in keys}
    assert by[(0, "str:binary")]["value"] == {"base64": base64.b64encode(bytes(range(256))).decode()}
    assert by[(0, "str:lzf")]["value_length"] == len(real.COMPRESSIBLE) > by[(0, "str:lzf")]["size"]
    assert ["bottom", "-inf"] in by[(0, "zset:big")]["value"] and ["top", "inf"] in by[(0, "zset:big")]["value"]


def test_digests_are_the_servers(snapshot, tmp_path):
    rows = jsonl(snapshot.path, "--values")
    keys = [r for r in rows if r["kind"] == "key"]
    (summary,) = [r for r in rows if r["kind"] == "summary"]
    with loaded(snapshot.path, tmp_path / "loaded") as c:
        assert summary["digest"] == c.call("DEBUG", "DIGEST") and summary["digest_unknown"] == 0
        for db in sorted({r["db"] for r in keys}):
            c.call("SELECT", db)
            mine = [r for r in keys if r["db"] == db]
            theirs = c.call("DEBUG", "DIGEST-VALUE", *[r["key"] for r in mine])
            for r, d in zip(mine, theirs):
                assert r["digest"] == (d if isinstance(d, str) else d.decode()), (db, r["key"], r["type"], r["encoding"])
    # the summary says it too (its line folded where the file's name makes it long), and
    # --digest alone costs no values on the rows
    res = servers.dcpinspect("rdb", "-f", "summary", "--digest", snapshot.path)
    assert f"digest {summary['digest']}" in " ".join(res.stdout.split())
    lean = [r for r in jsonl(snapshot.path, "--digest") if r["kind"] == "key"]
    assert all("value" not in r for r in lean) and [r["digest"] for r in lean] == [r["digest"] for r in keys]


def test_digests_of_a_selection_are_its_keys(snapshot, tmp_path):
    """The summary's digest covers the keys chosen: a server holding them alone agrees."""
    rows = jsonl(snapshot.path, "--digest", "--db", "5")
    (summary,) = [r for r in rows if r["kind"] == "summary"]
    with loaded(snapshot.path, tmp_path / "loaded") as c:
        for db in (0, 1):
            c.call("SELECT", db)
            c.call("FLUSHDB")
        assert summary["digest"] == c.call("DEBUG", "DIGEST")


def test_key_as_jsonl_by_its_bytes_or_its_escaped_text(tmp_path):
    body = b"\xfe\x00" + rdbgen.key(0, b"k\xff\x1b", rdbgen.string(b"\xc3\xa9t\xc3\xa9")) + \
        rdbgen.key(0, "k\\xff\\x1b", rdbgen.string("backslashes"))
    path = tmp_path / "keys.rdb"
    path.write_bytes(rdbgen.rdb(body))
    rows = jsonl(path, "--values")
    raw, plain = [r for r in rows if r["kind"] == "key"]
    assert base64.b64decode(raw["key_base64"]) == b"k\xff\x1b" and "key_base64" not in plain
    assert raw["value"] == "été" and plain["value"] == "backslashes"
    table = servers.dcpinspect("rdb", path).stdout
    shown = next(line.split()[2] for line in table.splitlines() if line.split()[:2] == [str(raw["offset"]), "0"])
    (got,) = jsonl(path, "--key", shown)
    assert got["value"] == "été" and got["digest"] == raw["digest"]
    (got,) = jsonl(path, "--key", "k\\xff\\x1b")  # the jsonl text of the first, the bytes of the second
    assert got["value"] in ("été", "backslashes")
    res = servers.dcpinspect("rdb", "-f", "jsonl", path, "--key", "missing")
    assert res.returncode == 2 and "no key at key 'missing'" in res.stderr and res.stdout == ""
    res = servers.dcpinspect("rdb", path, "--key", "missing")
    assert res.returncode == 2


@pytest.mark.parametrize("d,redis", [
    (1.5, "1.5"), (0.1, "0.1"), (-3.0, "-3"), (1e20, "1e+20"), (1.5e-7, "1.5e-7"), (123456.789, "123456.789"),
    (2.0 ** 62, "4611686018427387904"), (2.0 ** 63, "9223372036854776000"), (1e-300, "1e-300"),
    (float("inf"), "inf"), (float("-inf"), "-inf"), (-0.0, "-0"), (0.000123, "0.000123"),
    (1.7976931348623157e308, "1.7976931348623157e+308"), (5e-324, "5e-324"),
])
def test_doubles_as_redis_writes_them(d, redis):
    assert redis_double(d) == redis
    assert math.isinf(d) or float(redis) == d


def test_doubles_of_old_servers():
    assert g17(0.1) == "0.10000000000000001" and g17(float("-inf")) == "-inf" and g17(3.0) == "3"


def test_text_is_utf8_or_base64():
    assert text(b"plain") == "plain" and text("é".encode()) == "é"
    assert text(b"\\xff") == "\\xff" and text(b"\xff") == {"base64": "/w=="}
