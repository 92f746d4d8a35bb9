"""RDB types 27–32 (spec/rdb.md §5, §6.4, §6.6): the hash templates of Redis 8.10, whose
references (30 HASH_TMPL_LP_REF, 32 HASH_TMPL_ARRAY_REF) the spec lays out and are
decoded against the HASH_TEMPLATE records (opcode 242) before them; and the types it
gives no layout for (27 STREAM_LISTPACKS_5, 28 ARRAY, 29 HASH_TMPL_LP, 31 HASH_TMPL_ARRAY),
each an unsupported-type finding at its offset, decoding going on only where the format
has a length around it (a Dragonfly compressed blob). Bytes built from the layouts."""

from __future__ import annotations

import json

import lz4.frame
import pytest

import rdbgen
import servers
from dcpinspect.families.redis.rdb.decoder import RdbParser
from dcpinspect.families.redis.rdb.records import KeyRecord
from dcpinspect.families.redis.rdb import values
from dcpinspect.findings import Finding

FIELDS = ["age", "name", "email"]  # ordered by length, then bytes (§6.6)


def template(template_id: int, fields: list[str]) -> bytes:
    """An 0xF2 HASH_TEMPLATE record: id, field count, the field names."""
    return b"\xf2" + rdbgen.length(template_id) + rdbgen.length(len(fields)) + b"".join(map(rdbgen.string, fields))


def lp_ref(template_id: int, vals: list) -> bytes:
    """Type 30's value: a listpack string, the template id first, then the values."""
    return rdbgen.string(rdbgen.listpack([template_id, *vals]))


def array_ref(template_id: int, vals: list[str]) -> bytes:
    """Type 32's value: the template id, then one string per field."""
    return rdbgen.length(template_id) + b"".join(map(rdbgen.string, vals))


def v15(body: bytes) -> bytes:
    return rdbgen.rdb(template(7, FIELDS) + b"\xfe\x00" + body, 15)


def run(data: bytes, keep=True, chunk: int | None = None) -> list:
    parser = RdbParser(keep=keep)
    out = []
    step = chunk or len(data)
    for i in range(0, len(data), step):
        out += parser.feed(data[i:i + step])
    return out + parser.close()


def keys_of(out) -> dict:
    return {r.key: r for r in out if isinstance(r, KeyRecord)}


def rules_of(out) -> list[str]:
    found = [f.rule for f in out if isinstance(f, Finding)]
    return found + [f.rule for r in out if isinstance(r, KeyRecord) for f in r.findings]


@pytest.mark.parametrize("chunk", [None, 1, 7])
def test_template_references_are_hashes_of_the_templates_fields(chunk):
    body = (rdbgen.key(30, "u:1", lp_ref(7, [42, "Edijs", "e@example.com"]))
            + rdbgen.key(32, "u:2", array_ref(7, ["7", "Ann", "ann@example.com"]))
            + rdbgen.key(0, "after", rdbgen.string("ok")))
    out = run(v15(body), chunk=chunk)
    keys = keys_of(out)
    assert keys[b"u:1"].value == [(b"age", b"42"), (b"name", b"Edijs"), (b"email", b"e@example.com")]
    assert keys[b"u:2"].value == [(b"age", b"7"), (b"name", b"Ann"), (b"email", b"ann@example.com")]
    assert [(keys[k].type, keys[k].elements, keys[k].extra["template_id"]) for k in (b"u:1", b"u:2")] == [
        ("hash", 3, 7), ("hash", 3, 7)]
    assert keys[b"after"].value == b"ok" and not rules_of(out) and not out[-1].stopped
    assert out[-1].checksum == "ok"


def test_the_rdb_command_shows_template_hashes(tmp_path):
    path = tmp_path / "tmpl.rdb"
    path.write_bytes(v15(rdbgen.key(30, "u:1", lp_ref(7, [42, "Edijs", "e"]))
                         + rdbgen.key(32, "u:2", array_ref(7, ["7", "Ann", "a"]))))
    res = servers.dcpinspect("rdb", "-f", "jsonl", path)
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    keys = [(r["key"], r["type"], r["encoding"], r["elements"]) for r in rows if r["kind"] == "key"]
    assert keys == [("u:1", "hash", "listpack", 3), ("u:2", "hash", "hashtable", 3)]
    detail = servers.dcpinspect("rdb", path, "--key", "u:2")
    assert "HASH_TMPL_ARRAY_REF" in detail.stdout and "Ann" in detail.stdout


def test_a_listpack_reference_to_an_unknown_template_is_corrupt_and_decoding_goes_on():
    body = rdbgen.key(30, "u:1", lp_ref(9, [1, "x", "y"])) + rdbgen.key(0, "after", rdbgen.string("ok"))
    keys = keys_of(out := run(v15(body)))
    assert [f.rule for f in keys[b"u:1"].findings] == ["rdb-corrupt"] and "template 9" in keys[b"u:1"].findings[0].message
    assert keys[b"u:1"].elements == 3 and keys[b"after"].value == b"ok" and not out[-1].stopped
    # the values do not fit the template's fields
    keys = keys_of(run(v15(rdbgen.key(30, "u:1", lp_ref(7, [1, "x"])) + rdbgen.key(0, "after", rdbgen.string("ok")))))
    assert [f.rule for f in keys[b"u:1"].findings] == ["rdb-corrupt"] and b"after" in keys
    assert "2 values for the 3 fields" in keys[b"u:1"].findings[0].message


def test_an_array_reference_to_an_unknown_template_stops_decoding():
    first = rdbgen.key(0, "first", rdbgen.string("1"))
    data = v15(first + rdbgen.key(32, "u:2", array_ref(9, ["a", "b", "c"])) + rdbgen.key(0, "after", rdbgen.string("x")))
    out = run(data)
    assert list(keys_of(out)) == [b"first"] and out[-1].stopped
    (bad,) = [f for f in out if isinstance(f, Finding)]
    assert bad.rule == "rdb-corrupt" and "template" in bad.message


def test_templates_past_the_cap_are_not_remembered(monkeypatch):
    monkeypatch.setattr(values, "TEMPLATE_FIELDS", 4)
    body = template(8, ["a", "b"]) + rdbgen.key(30, "u:1", lp_ref(8, ["1", "2"]))
    out = run(v15(body))  # template 7 takes 3 of the 4 names: template 8 is not remembered
    (rec,) = [r for r in out if isinstance(r, KeyRecord)]
    assert [f.rule for f in rec.findings] == ["rdb-corrupt"] and "not remembered" in rec.findings[0].message


@pytest.mark.parametrize("type_id, name", [(27, "STREAM_LISTPACKS_5"), (28, "ARRAY"), (29, "HASH_TMPL_LP"),
                                           (31, "HASH_TMPL_ARRAY")])
def test_types_without_a_layout_are_unsupported_at_their_offset(tmp_path, type_id, name):
    first = rdbgen.key(0, "first", rdbgen.string("1"))
    head = template(7, FIELDS) + b"\xfe\x00" + first
    data = rdbgen.rdb(head + rdbgen.key(type_id, "k", rdbgen.length(1) + rdbgen.string("x")), 15)
    out = run(data)
    (bad,) = [f for f in out if isinstance(f, Finding)]
    assert bad.rule == "rdb-unknown-type" and bad.offset == 9 + len(head) and name in bad.message
    assert list(keys_of(out)) == [b"first"] and out[-1].stopped
    path = tmp_path / "unsupported.rdb"
    path.write_bytes(data)
    res = servers.dcpinspect("rdb", "-f", "jsonl", path)
    assert res.returncode == 1
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert [r["key"] for r in rows if r["kind"] == "key"] == ["first"]
    assert [(r["rule"], r["offset"]) for r in rows if r["kind"] == "finding"] == [("rdb-unknown-type", 9 + len(head))]


def test_an_unsupported_type_inside_a_compressed_blob_stops_the_blob_only():
    inner = rdbgen.key(0, "k1", rdbgen.string("v1")) + rdbgen.key(28, "arr", rdbgen.length(1) + rdbgen.string("x"))
    blob = b"\xca" + rdbgen.string(lz4.frame.compress(inner))
    body = rdbgen.aux("df-ver", "v1.30.0") + b"\xfe\x00" + blob + rdbgen.key(0, "outside", rdbgen.string("x"))
    out = run(rdbgen.rdb(body, 9, checksum=False))
    assert list(keys_of(out)) == [b"k1", b"outside"] and rules_of(out) == ["rdb-unknown-type"]
    assert not out[-1].stopped and out[-1].eof_offset is not None
