"""Digests of hashes whose fields expire (Redis 7.4's hash field expiry, Valkey 9's
``HASH_2``, Dragonfly's ``HASH_WITH_EXPIRY``), built as files by the RDB builders.

The installed redis-server (7.0) predates hash field expiry, so these digests are held to
``debug.c``'s algorithm written out here step by step on byte arrays as the server does it
(``xorDigest``, ``mixDigest``, ``xorObjectDigest``, ``computeDatasetDigest``: Redis 7.4
xors ``!!hexpire!!`` into a field's digest when the field has an expiry; Valkey's
``debug.c`` does not). The part of the algorithm a 7.0 server can check, a hash with the
same fields and no field expiry, is checked against the real server's ``DEBUG
DIGEST-VALUE`` and ``DEBUG DIGEST``."""

from __future__ import annotations

import hashlib
import subprocess
import json
import struct

import rdbgen
import servers
from test_rdb_values import loaded

T0 = 4_102_444_800_000  # 2100-01-01, never expired
FIELDS = [(b"a", b"1", None), (b"b", b"two", T0), (b"c", b"3", T0 + 5000)]


# ----------------------------------------------------------------- debug.c, step by step

def xor_digest(digest: bytearray, data: bytes) -> None:
    for i, b in enumerate(hashlib.sha1(data).digest()):
        digest[i] ^= b


def mix_digest(digest: bytearray, data: bytes) -> None:
    xor_digest(digest, data)
    digest[:] = hashlib.sha1(bytes(digest)).digest()


def hash_object_digest(digest: bytearray, fields, key_expires: bool, hexpire: bool) -> None:
    """``xorObjectDigest`` of an OBJ_HASH (type 4), going on from ``digest``."""
    mix_digest(digest, struct.pack(">I", 4))
    for f, v, ttl in fields:
        ele = bytearray(20)
        mix_digest(ele, f)
        mix_digest(ele, v)
        if hexpire and ttl is not None:
            xor_digest(ele, b"!!hexpire!!")
        xor_digest(digest, bytes(ele))
    if key_expires:
        xor_digest(digest, b"!!expire!!")


def dataset_digest(keys: dict, hexpire: bool) -> str:
    """``computeDatasetDigest`` of db 0 holding ``keys`` (name: (fields, key expiry))."""
    final = bytearray(20)
    mix_digest(final, struct.pack(">I", 0))
    for name, (fields, expire) in keys.items():
        d = bytearray(20)
        mix_digest(d, name)
        hash_object_digest(d, fields, expire is not None, hexpire)
        xor_digest(final, bytes(d))
    return final.hex()


def value_digest(fields, expire, hexpire: bool) -> str:
    d = bytearray(20)
    hash_object_digest(d, fields, expire is not None, hexpire)
    return d.hex()


# ----------------------------------------------------------------- the files

metadata, listpack_ex = rdbgen.hash_metadata, rdbgen.hash_listpack_ex
valkey_hash2, dragonfly_hash = rdbgen.valkey_hash2, rdbgen.dragonfly_hash


def digests_of(tmp_path, name: str, data: bytes) -> tuple[dict, str]:
    path = tmp_path / name
    path.write_bytes(data)
    res = servers.dcpinspect("rdb", "-f", "jsonl", "--values", str(path))
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    (summary,) = [r for r in rows if r["kind"] == "summary"]
    assert summary["digest_unknown"] == 0
    return {r["key"]: r["digest"] for r in rows if r["kind"] == "key"}, summary["digest"]


REDIS_KEYS = {
    b"meta": (24, lambda fs: metadata(fs, False), None),
    b"meta-pre-ga": (22, lambda fs: metadata(fs, True), None),
    b"lpex": (25, lambda fs: listpack_ex(fs, False), None),
    b"lpex-pre-ga": (23, lambda fs: listpack_ex(fs, True), T0 + 1),
}


def test_redis_field_expiry_enters_the_digest(tmp_path):
    body = b"".join(rdbgen.key(t, k, make(FIELDS), exp) for k, (t, make, exp) in REDIS_KEYS.items())
    got, snap = digests_of(tmp_path, "hfe.rdb", rdbgen.rdb(rdbgen.aux("redis-ver", "7.4.1") + b"\xfe\x00" + body, 12))
    for k, (_, _, exp) in REDIS_KEYS.items():
        assert got[k.decode()] == value_digest(FIELDS, exp, hexpire=True), k
        # the field expiry counts: the same fields without it give another digest
        assert got[k.decode()] != value_digest(FIELDS, exp, hexpire=False)
    assert snap == dataset_digest({k: (FIELDS, exp) for k, (_, _, exp) in REDIS_KEYS.items()}, hexpire=True)


def test_valkey_field_expiry_stays_out(tmp_path):
    body = b"\xfe\x00" + rdbgen.key(22, "h2", valkey_hash2(FIELDS)) + rdbgen.key(22, "h2x", valkey_hash2(FIELDS), T0)
    got, snap = digests_of(tmp_path, "valkey.rdb", rdbgen.rdb(rdbgen.aux("valkey-ver", "9.0.0") + body,
                                                               magic=b"VALKEY080"))
    assert got == {"h2": value_digest(FIELDS, None, hexpire=False), "h2x": value_digest(FIELDS, T0, hexpire=False)}
    assert snap == dataset_digest({b"h2": (FIELDS, None), b"h2x": (FIELDS, T0)}, hexpire=False)


def test_dragonfly_field_expiry_as_redis_counts_it(tmp_path):
    body = rdbgen.aux("df-ver", "v1.30.0") + b"\xfe\x00" + rdbgen.key(31, "dh", dragonfly_hash(FIELDS))
    got, snap = digests_of(tmp_path, "df.rdb", rdbgen.rdb(body, 9, checksum=False))
    assert got == {"dh": value_digest(FIELDS, None, hexpire=True)}
    assert snap == dataset_digest({b"dh": (FIELDS, None)}, hexpire=True)


def test_without_field_expiry_the_real_server_agrees(tmp_path):
    """The same fields with no expiry, in the HFE layouts: the digests a 7.0 server gives
    for the hash it holds by HSET (and the step-by-step algorithm above agrees with it)."""
    plain = [(f, v, None) for f, v, _ in FIELDS]
    body = (b"\xfe\x00" + rdbgen.key(24, "meta", metadata(plain, False)) + rdbgen.key(25, "lpex", listpack_ex(plain, False))
            + rdbgen.key(22, "pre", metadata(plain, True), T0))
    got, snap = digests_of(tmp_path, "plain.rdb", rdbgen.rdb(body, 12))
    with loaded(None, tmp_path / "srv") as c:
        for k in ("meta", "lpex", "pre"):
            c.call("HSET", k, *(x for f, v, _ in plain for x in (f, v)))
        c.call("PEXPIREAT", "pre", str(T0))
        server = c.call("DEBUG", "DIGEST-VALUE", "meta", "lpex", "pre")
        server = [d if isinstance(d, str) else d.decode() for d in server]
        assert [got["meta"], got["lpex"], got["pre"]] == server
        assert server[0] == value_digest(plain, None, hexpire=True) and server[2] == value_digest(plain, T0, True)
        assert snap == c.call("DEBUG", "DIGEST")


def _server(binary: str, workdir, port: int):
    workdir.mkdir(parents=True, exist_ok=True)
    args = [binary, "--port", str(port), "--bind", servers.LOOPBACK, "--save", "", "--appendonly", "no", "--dir",
            str(workdir), "--dbfilename", "dump.rdb", "--daemonize", "no", "--enable-debug-command", "yes"]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)


def test_a_server_with_field_expiry_agrees(tmp_path):
    """Where a Redis 7.4+ is at hand (``DCPINSPECT_REDIS_72``): hashes with expiring fields,
    listpack and hash table, written by the server, digested from its dump as its ``DEBUG
    DIGEST-VALUE`` and ``DEBUG DIGEST`` say; and the RESP export (``HPEXPIREAT``) piped into
    a second such server gives the same digest."""
    import test_real_redis_rdb as real

    binary = servers.redis_server_at_least(7, 4)
    cli = servers.require("redis-cli")["redis-cli"]
    port, port2 = servers.free_port(), servers.free_port()
    procs = [_server(binary, tmp_path / "a", port), _server(binary, tmp_path / "b", port2)]
    try:
        for p in (port, port2):
            assert servers.wait_until(lambda: servers._connectable(p), 20)
        c, c2 = real.Client(port), real.Client(port2)
        c.call("HSET", "small", "a", "1", "b", "two", "c", "3")
        c.call("HPEXPIREAT", "small", str(T0), "FIELDS", "1", "b")
        c.call("HSET", "big", *(x for i in range(600) for x in (f"f{i}", f"v{i}")))
        c.call("HPEXPIREAT", "big", str(T0 + 7), "FIELDS", "3", "f1", "f20", "f300")
        c.call("HSET", "plain", "x", "y")
        c.call("HSET", "both", "x", "y", "z", "w")
        c.call("HPEXPIREAT", "both", str(T0), "FIELDS", "1", "z")
        c.call("PEXPIREAT", "both", str(T0 + 1000))
        assert c.call("SAVE") == "OK"
        names = ["small", "big", "plain", "both"]
        want = dict(zip(names, (d if isinstance(d, str) else d.decode()
                                for d in c.call("DEBUG", "DIGEST-VALUE", *names))))
        got, snap = digests_of(tmp_path, "hfe-real.rdb", (tmp_path / "a" / "dump.rdb").read_bytes())
        assert got == want and snap == c.call("DEBUG", "DIGEST")
        data = subprocess.run([*servers.dcpinspect_argv(), "rdb", "-f", "resp", str(tmp_path / "a" / "dump.rdb")],
                              capture_output=True, timeout=60, stdin=subprocess.DEVNULL).stdout
        res = subprocess.run([cli, "-h", servers.LOOPBACK, "-p", str(port2), "--pipe"], input=data,
                             capture_output=True, timeout=60)
        assert res.returncode == 0 and b"errors: 0" in res.stdout, res.stdout + res.stderr
        assert c2.call("DEBUG", "DIGEST") == snap
        c.close()
        c2.close()
    finally:
        for p in procs:
            servers._stop(p)
