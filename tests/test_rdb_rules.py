"""RDB rules (RDB_RULES in rules/registry.py), each firing on bytes built from spec/rdb.md and
silent on the same bytes without the fault; the §14 vectors; Dragonfly's opcodes, types and
blobs; Valkey's numbering; and the ``rdb`` command's outputs and exit codes."""

from __future__ import annotations

import json
import struct

import lz4.frame
import pytest
import zstandard

import dflygen
import rdbgen
from dcpinspect.families.redis.dragonfly.journal import read_entries
from dcpinspect.families.redis.rdb.decoder import RdbParser
from dcpinspect.families.redis.rdb.records import AuxRecord, Ending, KeyRecord, OpRecord
from dcpinspect.findings import Finding
from dcpinspect.families.redis.rules import RDB_RULES
from dcpinspect.families import rule_book
from servers import peak_rss

ALL_RULES = rule_book()

VECTOR_1 = bytes.fromhex(
    "524544495330303131fa0972656469732d76657205372e322e30fa0a72656469732d62697473c040fa056374696d65c26d08bc65"
    "fa08757365642d6d656dc2b0c41000fa08616f662d62617365c000fff06e3bfec0ff5aa2")
VECTOR_2 = bytes.fromhex("524544495330303036fe0000026b6b0276760003"
                         "6d73670568656c6c6fffc3965012680 84bef".replace(" ", ""))
JOURNAL_SET = bytes.fromhex("06000a050103090353455403666f6f03626172")


def run(data: bytes, keep: bool = True) -> list:
    parser = RdbParser(keep=keep)
    return parser.feed(data) + parser.close()


def rules_of(out: list) -> set[str]:
    return {f.rule for f in out if isinstance(f, Finding)} | {
        f.rule for r in out if isinstance(r, (KeyRecord, OpRecord, AuxRecord)) for f in r.findings}


def keys_of(out: list) -> dict:
    return {r.key: r for r in out if isinstance(r, KeyRecord)}


# ------------------------------------------------------------------------- §14 vectors

def test_vector_1_empty_redis_7_2_file():
    out = run(VECTOR_1)
    aux = {r.key: r.value for r in out if isinstance(r, AuxRecord)}
    assert aux == {b"redis-ver": b"7.2.0", b"redis-bits": b"64", b"ctime": b"1706821741", b"used-mem": b"1098928",
                   b"aof-base": b"0"}
    assert out[-1].checksum == "ok" and out[-1].checksum_stored == 0xA25AFFC0FE3B6EF0 and not rules_of(out)


def test_vector_2_two_keys_of_version_6():
    out = run(VECTOR_2)
    assert {k: r.value for k, r in keys_of(out).items()} == {b"kk": b"vv", b"msg": b"hello"}
    assert out[-1].checksum == "ok" and out[-1].checksum_stored == 0xEF4B0868125096C3


def test_vector_8_journal_record():
    (select, command) = read_entries(JOURNAL_SET, 1 << 20)
    assert (select.name, select.dbid) == ("SELECT", 0)
    assert (command.name, command.txid, command.args) == ("COMMAND", 5, [b"SET", b"foo", b"bar"])


# ------------------------------------------------------------------------- each rule, both ways

def _file(body: bytes, version: int = 11, **kw) -> bytes:
    return rdbgen.rdb(body, version, **kw)


CTIME = rdbgen.aux("ctime", "1700000000")
PLAIN = _file(CTIME + rdbgen.key(0, "a", rdbgen.string("1"), expire_ms=1_800_000_000_000)
              + rdbgen.key(0, "b", rdbgen.string("2")))

CASES = {
    "rdb-magic": b"RUBBISH00" + PLAIN[9:],
    "rdb-version": _file(CTIME, 16),
    "rdb-checksum": PLAIN[:-1] + bytes([PLAIN[-1] ^ 1]),
    "rdb-truncated": PLAIN[:-3],
    "rdb-unknown-type": _file(rdbgen.key(8, "x", b"")),
    "rdb-corrupt": _file(rdbgen.key(10, "zl", rdbgen.string(b"\x00" * 12))),
    "rdb-empty-key": _file(rdbgen.key(2, "s", rdbgen.length(0))),
    "rdb-duplicate-member": _file(rdbgen.key(2, "s", rdbgen.length(2) + rdbgen.string("a") + rdbgen.string("a"))),
    "rdb-duplicate-member-kept": _file(rdbgen.key(11, "i", rdbgen.string(rdbgen.intset([1, 1, 2])))),
    "rdb-stream-length": _file(rdbgen.key(15, "st", rdbgen.stream([rdbgen.stream_node(1, 0, ["n"], [(0, 0, [1])])], 2,
                                                                  (1, 0)))),
    "rdb-module": _file(rdbgen.key(7, "m", rdbgen.length(5) + rdbgen.length(0))),
    "rdb-string-too-long": None,  # with a small cap, below
    "rdb-duplicate-key": _file(rdbgen.key(0, "a", rdbgen.string("1")) + rdbgen.key(0, "a", rdbgen.string("2"))),
    "rdb-expired-key": _file(CTIME + rdbgen.key(0, "old", rdbgen.string("1"), expire_ms=1_600_000_000_000)),
    "rdb-trailing-data": PLAIN + b"junk",
    "rdb-keys-cap": None,  # with a small cap, below
    # a Dragonfly file whose 94-byte ZSTD blob inflates to 3 MB of aux fields
    "rdb-inflate-cap": _file(rdbgen.aux("df-ver", "v1.30.0") + dflygen.zstd_blob(rdbgen.aux("k", "v") * 300_000),
                             9, checksum=False),
}


def test_every_rdb_rule_has_a_case_and_is_in_the_rule_book():
    assert set(CASES) == set(RDB_RULES) and set(RDB_RULES) <= set(ALL_RULES)
    assert all(r.scope == "rdb" for r in RDB_RULES.values())


@pytest.mark.parametrize("rule", sorted(r for r, d in CASES.items() if d is not None))
def test_each_rule_fires_and_nothing_else_does(rule):
    out = run(CASES[rule])
    assert rule in rules_of(out)
    assert rules_of(out) - {rule} <= {"rdb-truncated"} if rule == "rdb-magic" else rules_of(out) == {rule}


def test_the_clean_file_fires_nothing():
    out = run(PLAIN)
    assert not rules_of(out) and set(keys_of(out)) == {b"a", b"b"} and out[-1].checksum == "ok"


def test_string_too_long_fires_past_the_cap_only():
    data = _file(rdbgen.key(0, "big", rdbgen.string(b"x" * 2000)))
    for cap, fires in ((1024, True), (4096, False)):
        parser = RdbParser(cap=cap)
        out = parser.feed(data) + parser.close()
        assert ("rdb-string-too-long" in rules_of(out)) == fires
        assert out[-1].checksum == "ok"


def test_keys_cap_fires_when_the_snapshot_is_bigger(monkeypatch):
    data = _file(b"".join(rdbgen.key(0, f"k{i}", rdbgen.string("v")) for i in range(5)))
    assert "rdb-keys-cap" not in rules_of(run(data))
    monkeypatch.setenv("DCPINSPECT_MAX_RDB_KEYS", "3")
    assert "rdb-keys-cap" in rules_of(run(data))
    dup = _file(b"".join(rdbgen.key(0, f"k{i}", rdbgen.string("v")) for i in range(5)) + rdbgen.key(0, "k4", b"\x00"))
    assert "rdb-duplicate-key" not in rules_of(run(dup))  # k4 came after the cap


def test_a_key_in_another_db_is_no_duplicate():
    data = _file(rdbgen.key(0, "a", rdbgen.string("1")) + b"\xfe\x01" + rdbgen.key(0, "a", rdbgen.string("2")))
    assert not rules_of(run(data))


def test_a_zero_checksum_is_not_computed_and_no_finding():
    out = run(rdbgen.rdb(rdbgen.key(0, "a", rdbgen.string("1")), checksum=False))
    assert out[-1].checksum == "not computed" and not rules_of(out)


def test_corruption_inside_a_packed_string_lets_decoding_go_on():
    data = _file(rdbgen.key(10, "bad", rdbgen.string(b"\x00" * 12)) + rdbgen.key(0, "after", rdbgen.string("ok")))
    out = run(data)
    keys = keys_of(out)
    assert keys[b"after"].value == b"ok" and [f.rule for f in keys[b"bad"].findings] == ["rdb-corrupt"]
    assert not out[-1].stopped


def test_an_unknown_type_stops_with_its_offset_after_the_keys_before():
    body = rdbgen.key(0, "first", rdbgen.string("1"))
    data = _file(body + b"\x08" + rdbgen.string("x"))
    out = run(data)
    (bad,) = [f for f in out if isinstance(f, Finding)]
    assert bad.rule == "rdb-unknown-type" and bad.offset == 9 + len(body)
    assert list(keys_of(out)) == [b"first"] and out[-1].stopped


# ------------------------------------------------------------------------- types and layouts

def test_every_plain_and_packed_redis_type():
    body = b"".join([
        rdbgen.key(1, "list", rdbgen.length(2) + rdbgen.string("a") + rdbgen.string("b")),
        rdbgen.key(2, "set", rdbgen.length(1) + rdbgen.string("m")),
        rdbgen.key(3, "zset", rdbgen.length(1) + rdbgen.string("m") + b"\x032.5"),
        rdbgen.key(4, "hash", rdbgen.length(1) + rdbgen.string("f") + rdbgen.string("v")),
        rdbgen.key(5, "zset2", rdbgen.length(1) + rdbgen.string("m") + struct.pack("<d", -1.5)),
        rdbgen.key(12, "zzl", rdbgen.string(rdbgen.ziplist([b"m", 3]))),
        rdbgen.key(13, "hzl", rdbgen.string(rdbgen.ziplist([b"f", b"v"]))),
        rdbgen.key(14, "ql", rdbgen.length(1) + rdbgen.string(rdbgen.ziplist([b"x", 1]))),
        rdbgen.key(17, "zlp", rdbgen.string(rdbgen.listpack([b"m", b"1.5"]))),
        rdbgen.key(20, "slp", rdbgen.string(rdbgen.listpack([b"a", 7]))),
        rdbgen.key(24, "hmeta", struct.pack("<q", 1_000) + rdbgen.length(2) + rdbgen.length(0) + rdbgen.string("f")
                   + rdbgen.string("v") + rdbgen.length(5) + rdbgen.string("g") + rdbgen.string("w")),
        rdbgen.key(25, "hlpex", struct.pack("<q", 1_000) + rdbgen.string(rdbgen.listpack([b"f", b"v", 1234, b"g",
                                                                                        b"w", 0]))),
        rdbgen.key(18, "ql2", rdbgen.length(2) + rdbgen.length(1) + rdbgen.string("plain")
                   + rdbgen.length(2) + rdbgen.string(rdbgen.listpack([b"p", 9]))),
    ])
    keys = keys_of(run(_file(body, 12)))
    assert keys[b"list"].value == [b"a", b"b"] and keys[b"set"].value == [b"m"]
    assert keys[b"zset"].value == [(b"m", 2.5)] and keys[b"zset2"].value == [(b"m", -1.5)]
    assert keys[b"hash"].value == [(b"f", b"v")] and keys[b"zzl"].value == [(b"m", 3.0)]
    assert keys[b"hzl"].value == [(b"f", b"v")] and keys[b"ql"].value == [b"x", b"1"]
    assert keys[b"zlp"].value == [(b"m", 1.5)] and keys[b"slp"].value == [b"a", b"7"]
    assert keys[b"hmeta"].value == [(b"f", b"v", None), (b"g", b"w", 1004)]
    assert keys[b"hlpex"].value == [(b"f", b"v", 1234), (b"g", b"w", None)]
    assert keys[b"ql2"].value == [b"plain", b"p", b"9"] and keys[b"ql2"].elements == 3
    assert {k: r.type for k, r in keys.items()}[b"hmeta"] == "hash"


def test_module_values_and_module_aux_are_passed_over_with_their_name():
    module_id = 0  # "AAAAAAAAA" version 5
    module_id |= 5
    body = (b"\xf7" + rdbgen.length(module_id) + rdbgen.length(2) + rdbgen.length(2)
            + rdbgen.length(5) + rdbgen.string("aux") + rdbgen.length(0)
            + rdbgen.key(7, "m", rdbgen.length(module_id) + rdbgen.length(2) + rdbgen.length(42)
                         + rdbgen.length(4) + struct.pack("<d", 1.0) + rdbgen.length(0)))
    out = run(_file(body))
    (aux,) = [r for r in out if isinstance(r, OpRecord) and r.name == "MODULE_AUX"]
    assert (aux.fields["module"], aux.fields["module_encver"], aux.fields["when"]) == ("AAAAAAAAA", 5, 2)
    assert keys_of(out)[b"m"].value == [42, 1.0] and rules_of(out) == {"rdb-module"}
    (said,) = [f for r in out if isinstance(r, (KeyRecord, OpRecord)) for f in r.findings]
    assert said.severity == "info" and "'AAAAAAAAA'" in said.message and said.offset == aux.offset  # once a file


def test_valkey_numbering_hash_2():
    body = rdbgen.key(22, "h", rdbgen.length(2) + rdbgen.string("f") + rdbgen.string("v") + struct.pack("<q", -1)
                      + rdbgen.string("g") + rdbgen.string("w") + struct.pack("<q", 1_900_000_000_000))
    out = run(rdbgen.rdb(body, magic=b"VALKEY080"))
    rec = keys_of(out)[b"h"]
    assert rec.vtype.rdb_name == "HASH_2" and rec.value == [(b"f", b"v", None), (b"g", b"w", 1_900_000_000_000)]
    assert out[-1].vendor == "valkey" and not rules_of(out)


def _pairs(n: int, value: bytes = b"v") -> list:
    return [x for i in range(n) for x in (f"m{i}".encode(), value)]


def _lp(type_: int, entries: list) -> bytes:
    return rdbgen.key(type_, "k", rdbgen.string(rdbgen.listpack(entries)))


#: A member (a field) twice, as each vendor's loader does with it where no server of that
#: vendor is at hand to load the file (tests/test_rdb_server.py holds Redis's to the server):
#: Valkey 9 makes a table of a HASH_2 from the start and refuses the repeat; Dragonfly
#: refuses it in its sets, hashes with expiry and plain hashes past 64 fields, stops on a
#: check past an intset of 256, and keeps its listpack hashes and sorted sets as written
#: whatever their size, where Redis stops past 512 and 128 (src/server/rdb_load.cc,
#: set_family.cc, hset_family.cc, zset_family.cc)
VENDOR_TWICE = {
    "valkey HASH_2": (b"VALKEY080", rdbgen.key(22, "k", rdbgen.valkey_hash2([(b"f", b"v", None), (b"f", b"w", None)])),
                      "rdb-duplicate-member"),
    "valkey hash listpack": (b"VALKEY080", _lp(16, [b"f", b"v", b"f", b"w"]), "rdb-duplicate-member-kept"),
    "dragonfly SET_WITH_EXPIRY": ("df", rdbgen.key(32, "k", rdbgen.dragonfly_set([(b"a", None), (b"a", None)])),
                                  "rdb-duplicate-member"),
    "dragonfly SET_WITH_EXPIRY, one copy expired before the snapshot": (
        "df", rdbgen.key(32, "k", rdbgen.dragonfly_set([(b"a", 1_690_000_000_000), (b"a", None)])), None),
    "dragonfly HASH_WITH_EXPIRY": ("df", rdbgen.key(31, "k", rdbgen.dragonfly_hash(
        [(b"f", b"v", None), (b"f", b"w", 4_102_444_800_000)])), "rdb-duplicate-member"),
    "dragonfly plain hash of 2": ("df", rdbgen.key(4, "k", rdbgen.length(2) + b"".join(
        map(rdbgen.string, [b"f", b"v", b"f", b"w"]))), "rdb-duplicate-member-kept"),
    "dragonfly plain hash of 65": ("df", rdbgen.key(4, "k", rdbgen.length(65) + b"".join(
        map(rdbgen.string, [*_pairs(64), b"m0", b"w"]))), "rdb-duplicate-member"),
    "dragonfly intset of 256": ("df", rdbgen.key(11, "k", rdbgen.string(rdbgen.intset([0, *range(255)]))),
                                "rdb-duplicate-member-kept"),
    "dragonfly intset of 257": ("df", rdbgen.key(11, "k", rdbgen.string(rdbgen.intset([0, *range(256)]))),
                                "rdb-duplicate-member"),
    "dragonfly hash listpack of 513": ("df", _lp(16, [b"f", b"v", *_pairs(512), b"f", b"w"]),
                                       "rdb-duplicate-member-kept"),
    "dragonfly sorted set listpack of 129": ("df", _lp(17, [b"a", 1, *_pairs(128, 1), b"a", 2]),
                                             "rdb-duplicate-member-kept"),
    "dragonfly sorted set": ("df", rdbgen.key(5, "k", rdbgen.length(2) + rdbgen.string("a") + struct.pack("<d", 1)
                                              + rdbgen.string("a") + struct.pack("<d", 2)), "rdb-duplicate-member"),
}


@pytest.mark.parametrize("name", list(VENDOR_TWICE))
@pytest.mark.parametrize("keep", [False, True])
def test_a_member_twice_as_each_vendor_loads_it(name, keep):
    magic, body, rule = VENDOR_TWICE[name]
    if magic == "df":
        data = _df(rdbgen.aux("ctime", "1700000000") + b"\xfe\x00" + body)
    else:
        data = rdbgen.rdb(b"\xfe\x00" + body, magic=magic)
    out = run(data, keep)
    assert rules_of(out) == ({rule} if rule else set())
    assert keys_of(out)[b"k"].elements is not None


# ------------------------------------------------------------------------- Dragonfly

def _df(body: bytes, with_aux: bool = True) -> bytes:
    aux = rdbgen.aux("df-ver", "v1.30.0") if with_aux else b""
    return rdbgen.rdb(aux + body, 9, checksum=False)


def test_dragonfly_types_and_prefix_opcodes():
    body = (b"\xfe\x00" + b"\xdc\x02\x00\x00\x00" + struct.pack("<I", 77) + rdbgen.key(0, "mc", rdbgen.string("v"))
            + rdbgen.key(30, "json", rdbgen.string('{"a":1}'))
            + rdbgen.key(32, "sx", rdbgen.length(2) + rdbgen.string("m") + rdbgen.int_string(-1)
                         + rdbgen.string("n") + rdbgen.int_string(100))
            + rdbgen.key(31, "hx", rdbgen.length(1) + rdbgen.string("f") + rdbgen.string("v") + rdbgen.string("3600"))
            + rdbgen.key(35, "cms", rdbgen.length(2) + rdbgen.length(3) + rdbgen.length(10) + b"\x00" * 48)
            + b"\xd3" + struct.pack("<Q", 1000))
    for with_aux in (True, False):  # without df-ver, the Dragonfly opcode tells (§11 rule 2)
        out = run(_df(body, with_aux))
        keys = keys_of(out)
        assert (keys[b"mc"].extra["flags"], keys[b"mc"].extra["mc_flags"]) == (2, 77)
        assert keys[b"json"].type == "ReJSON-RL" and keys[b"json"].value == b'{"a":1}'
        assert keys[b"sx"].value == [(b"m", None), (b"n", (100 + 1675209600) * 1000)]
        assert keys[b"hx"].value == [(b"f", b"v", (3600 + 1675209600) * 1000)]
        assert keys[b"cms"].extra["filter"] == {"width": 2, "depth": 3, "total_count": 10}
        (offset,) = [r for r in out if isinstance(r, OpRecord) and r.name == "JOURNAL_OFFSET"]
        assert offset.fields["lsn"] == 1000 and out[-1].vendor == "dragonfly" and not rules_of(out)


@pytest.mark.parametrize("compress", ["lz4", "zstd"])
def test_dragonfly_compressed_blobs_hold_records(compress):
    inner = b"\xfe\x02" + rdbgen.key(0, "k1", rdbgen.string("v1")) + rdbgen.key(0, "k2", rdbgen.string("v" * 300))
    frame = lz4.frame.compress(inner) if compress == "lz4" else zstandard.ZstdCompressor().compress(inner)
    opcode = b"\xca" if compress == "lz4" else b"\xc9"
    blob = opcode + rdbgen.string(frame)
    body = blob + rdbgen.key(0, "outside", rdbgen.string("x"))
    out = run(_df(body))
    keys = keys_of(out)
    assert keys[b"k2"].value == b"v" * 300 and keys[b"k1"].db == 2 and keys[b"outside"].db == 2
    assert keys[b"k1"].blob_offset == 2 and keys[b"k1"].offset == keys[b"k2"].offset
    assert not rules_of(out)
    damaged = _df(opcode + rdbgen.string(frame[:-6]) + rdbgen.key(0, "outside", rdbgen.string("x")))
    out = run(damaged)
    assert "rdb-corrupt" in rules_of(out) and b"outside" in keys_of(out)


def test_dragonfly_journal_blob_fullsync_end_and_vector_9():
    body = (b"\xd2\x01" + rdbgen.string(JOURNAL_SET) + bytes.fromhex("c80000000000000000")
            + b"\xe0" + struct.pack("<II", 3, 4) + b"abcd")
    out = run(_df(body))
    ops = {r.name: r for r in out if isinstance(r, OpRecord)}
    assert [e.args for e in ops["JOURNAL_BLOB"].fields["journal"]] == [[], [b"SET", b"foo", b"bar"]]
    assert "FULLSYNC_END" in ops and ops["TAGGED_CHUNK"].fields == {"stream_id": 3, "size": 4}
    assert not rules_of(out)
    out = run(rdbgen.rdb(bytes.fromhex("c80000000000000000"), 11))  # not a Dragonfly file: unknown
    assert "rdb-unknown-type" in rules_of(out)


# ------------------------------------------------------------------------- the command

def test_the_command_table_jsonl_summary_and_exit_codes(tmp_path):
    clean, bad, junk = tmp_path / "clean.rdb", tmp_path / "bad.rdb", tmp_path / "junk.rdb"
    clean.write_bytes(_file(CTIME + rdbgen.key(0, "k\x1b[31m", rdbgen.string("v"), expire_ms=1_800_000_000_000)
                            + b"\xfe\x03" + rdbgen.key(2, "s", rdbgen.length(1) + rdbgen.string("m"))))
    bad.write_bytes(CASES["rdb-checksum"])
    junk.write_bytes(b"not an rdb file at all")
    res, _ = peak_rss("rdb", "-f", "jsonl", clean)
    assert res.returncode == 0
    rows = [json.loads(line) for line in res.stdout.decode().splitlines()]
    keys = [r for r in rows if r["kind"] == "key"]
    assert [tuple(r) for r in keys][0] == ("kind", "protocol", "db", "key", "type", "encoding", "elements",
                                            "value_length", "size", "expire_ms", "offset", "length", "findings")
    assert [(r["db"], r["key"], r["type"], r["expire_ms"]) for r in keys] == [
        (0, "k\x1b[31m", "string", 1_800_000_000_000), (3, "s", "set", None)]
    assert rows[-1]["kind"] == "summary" and rows[-1]["dbs"] == {"0": {"string": 1}, "3": {"set": 1}}
    assert [r["key"] for r in rows if r["kind"] == "aux"] == ["ctime"]
    res, _ = peak_rss("rdb", clean)
    out = res.stdout.decode()
    assert res.returncode == 0 and "k\\x1b[31m" in out and "\x1b" not in out and "2027-01-15T08:00:00.000Z" in out
    res, _ = peak_rss("rdb", "-f", "summary", bad)
    assert res.returncode == 1 and "rdb-checksum" in res.stdout.decode()
    res, _ = peak_rss("rdb", "--fail-on", "error", clean, bad)
    assert res.returncode == 1
    res, _ = peak_rss("rdb", junk)
    assert res.returncode == 2 and b"not an RDB file" in res.stderr and res.stdout == b""
    res, _ = peak_rss("rdb", "--key", "s", clean)
    assert res.returncode == 0 and "set (RDB type 2, SET)" in res.stdout.decode()
    res, _ = peak_rss("rdb", "--offset", "9", clean)
    assert res.returncode == 2 and "no key at offset 9" in res.stderr.decode()  # 9 is the aux field
    first = 9 + len(CTIME)
    res, _ = peak_rss("rdb", "--offset", str(first + 12), clean)
    assert f"key at offset {first}" in res.stdout.decode() and "1800000000000 ms" in res.stdout.decode()
