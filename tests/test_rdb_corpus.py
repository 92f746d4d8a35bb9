"""Every RDB file of tests/corpora/rdb-librdb decodes, and where librdb gives the JSON its
converter prints for a file (``*_data.json`` and friends, at the "data" level), the keys,
types and values decoded here are the ones that JSON gives, and so are the aux fields,
functions, slot info and database sizes it lists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcpinspect.families.redis.rdb.decoder import RdbParser
from dcpinspect.families.redis.rdb.records import AuxRecord, Ending, KeyRecord, OpRecord
from dcpinspect.findings import Finding
from corpus import corpus

CORPUS = corpus("rdb-librdb")
FILES = sorted(CORPUS.glob("*.rdb"))

#: librdb's tests (test/test_rdb_to_json.c, test_rdb_to_redis.c): expected JSON → the file it is for
EXPECTED = {
    "ziplist_data.json": "ziplist_v3.rdb", "plain_list_v6_data.json": "plain_list_v6.rdb",
    "hash_data.json": "hash_v3.rdb", "hash_ex_v12_data.json": "hash_with_expire_v12.rdb",
    "hash_zl_v6_data.json": "hash_zl_v6.rdb", "hash_lp_v11_data.json": "hash_lp_v11.rdb",
    "hash_lp_ex_v12_data.json": "hash_lp_with_hexpire_v12.rdb", "hash_zm_v2_data.json": "hash_zm_v2.rdb",
    "plain_set_v6_data.json": "plain_set_v6.rdb", "set_is_v11_data.json": "set_is_v11.rdb",
    "set_lp_v11_data.json": "set_lp_v11.rdb", "plain_zset_v6_data.json": "plain_zset_v6.rdb",
    "plain_zset_2_v11_data.json": "plain_zset_2_v11.rdb", "zset_lp_v11_data.json": "zset_lp_v11.rdb",
    "zset_zl_v6_data.json": "zset_zl_v6.rdb", "quicklist_data.json": "quicklist.rdb",
    "single_list_data.json": "quicklist2_v11.rdb", "multiple_lists_strings_data.json": "multiple_lists_strings.rdb",
    "single_key_data.json": "single_key.rdb", "multiple_dbs_data.json": "multiple_dbs.rdb",
    "function2.json": "function2.rdb", "module_data.json": "module.rdb", "module_aux_data.json": "module_aux.rdb",
    "string_int_encoded.json": "string_int_encoded.rdb", "stream_data.json": "stream_v11.rdb",
    "stream_data_with_meta.json": "stream_v11.rdb", "cluster_slot_info.json": "cluster_slot_info.rdb",
    "mem_policy_lfu.json": "mem_policy_lfu.rdb", "mem_policy_lru.json": "mem_policy_lru.rdb",
    "set_not_expired.json": "set_not_expired_v11.rdb",
}
#: files with damage on purpose, and what is said of them
DAMAGED = {"invalid_chksum_v8.rdb": {"rdb-checksum"}, "future_v19.rdb": {"rdb-version", "rdb-checksum"}}
#: sound files holding a module's data, which only a server with the module loads (rdb-module, info)
MODULES = {"misc_with_stream.rdb", "module.rdb", "module_aux.rdb", "module_aux_empty.rdb", "module_aux_v12.rdb"}


def decode(path: Path) -> list:
    parser = RdbParser(keep=True)
    return parser.feed(path.read_bytes()) + parser.close()


def load_expected(name: str):
    """librdb's JSON files are the inside of an object (or a list of them, one per db)."""
    text = (CORPUS / name).read_text()
    return json.loads(text if text.lstrip().startswith("[") else "{" + text + "}")


def _s(raw: bytes) -> str:
    return raw.decode("latin-1")  # librdb writes each byte as itself or as \u00XX


def _sid(sid) -> str:
    return f"{sid[0]}-{sid[1]}"


def as_librdb(rec: KeyRecord):
    """A key's value the way librdb's "data" level prints it."""
    t, v = rec.type, rec.value
    if t == "string":
        return _s(v)
    if t == "list":
        return [_s(x) for x in v]
    if t == "set":
        return sorted(_s(x) for x in v)
    if t == "zset":
        return {_s(m): s for m, s in v}
    if t == "hash":
        return {_s(f[0]): _s(f[1]) for f in v}
    if t == "stream":
        return {"entries": [{"id": _sid(i), "items": {_s(f): _s(x) for f, x in items}} for i, items in v]}
    if t == "module":
        return f"<Content of Module '{rec.extra['module']}'. Occupies a serialized size of {rec.size} bytes>"
    raise AssertionError(t)


def normalise(expected, rec: KeyRecord):
    if rec.type == "set":
        return sorted(expected)
    if rec.type == "zset":
        return {m: float(s) for m, s in expected.items()}
    if rec.type == "stream":
        return {"entries": expected["entries"]}
    return expected


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_file_decodes_to_its_end(path: Path):
    out = decode(path)
    end = out[-1]
    assert isinstance(end, Ending) and not end.stopped and end.eof_offset is not None
    assert end.bytes_read == path.stat().st_size and end.trailing == 0
    findings = {f.rule for f in out if isinstance(f, Finding)} | {
        f.rule for r in out if isinstance(r, (KeyRecord, OpRecord, AuxRecord)) for f in r.findings}
    assert findings == DAMAGED.get(path.name, set()) | ({"rdb-module"} if path.name in MODULES else set())
    if path.name not in DAMAGED and end.version >= 5:
        assert end.checksum in ("ok", "not computed")


@pytest.mark.parametrize("name", sorted(EXPECTED), ids=str)
def test_keys_and_values_are_the_ones_librdb_gives(name: str):
    out = decode(CORPUS / EXPECTED[name])
    expected = load_expected(name)
    keys = [r for r in out if isinstance(r, KeyRecord)]
    if isinstance(expected, list):  # one object per db, in db order
        dbs = sorted({k.db for k in keys})
        assert len(dbs) == len(expected)
        for db, want in zip(dbs, expected):
            assert {_s(k.key): as_librdb(k) for k in keys if k.db == db} == want
        return
    meta = {k: expected.pop(k) for k in list(expected) if k.startswith("__")}
    got = {_s(k.key): k for k in keys}
    assert set(got) == set(expected)
    for key, want in expected.items():
        assert as_librdb(got[key]) == normalise(want, got[key]), key
    if "__aux__" in meta:
        aux = {_s(r.key): _s(r.value) for r in out if isinstance(r, AuxRecord)}
        assert aux == meta["__aux__"]
    ops = [r for r in out if isinstance(r, OpRecord)]
    if "__func__" in meta:
        assert sorted(_s(r.fields["code"]) for r in ops if r.name == "FUNCTION2") == sorted(meta["__func__"].values())
    if "__slotinfo__" in meta:
        (slot,) = [r.fields for r in ops if r.name == "SLOT_INFO"]
        want = meta["__slotinfo__"]
        assert (slot["slot"], slot["slot_size"], slot["expires_slot_size"]) == (
            want["slotId"], want["slotSize"], want["slotSExpiresSize"])
    if "__dbsize__" in meta:
        (size,) = [r.fields for r in ops if r.name == "RESIZEDB"]
        assert (size["db_size"], size["expires_size"]) == (meta["__dbsize__"]["size"], meta["__dbsize__"]["expires"])


def test_stream_metadata_is_the_one_librdb_gives():
    (rec,) = [r for r in decode(CORPUS / "stream_v11.rdb") if isinstance(r, KeyRecord)]
    want = load_expected("stream_data_with_meta.json")["mystream"]
    meta = rec.extra["stream"]
    assert (meta["length"], meta["entries_added"], _sid(meta["first_id"]), _sid(meta["last_id"]),
            _sid(meta["max_deleted_id"])) == (want["length"], want["entriesAdded"], want["firstID"], want["lastID"],
                                              want["maxDelEntryID"])
    got = [{"name": _s(g["name"]), "lastid": _sid(g["last_id"]), "entriesRead": g["entries_read"],
            "pending": [{"sent": e["delivery_time"], "id": _sid(e["id"]), "count": e["delivery_count"]}
                        for e in g["pel"]],
            "consumers": [{"name": _s(c["name"]), "activeTime": c["active_time"], "seenTime": c["seen_time"],
                           **({"pending": [{"id": _sid(i)} for i in c["pel"]]} if c["pel"] else {})}
                          for c in g["consumers"]]}
           for g in meta["groups"]]
    assert got == want["groups"]


def test_hash_field_expiry_of_redis_7_4_release_candidates():
    """Both files were written by 7.4 release candidates (types 22 and 23): two of three
    fields carry an expiry, below Redis' largest (2^48 - 1)."""
    for name, rdb_name in (("hash_with_expire_v12.rdb", "HASH_METADATA_PRE_GA"),
                           ("hash_lp_with_hexpire_v12.rdb", "HASH_LISTPACK_EX_PRE_GA")):
        (rec,) = [r for r in decode(CORPUS / name) if isinstance(r, KeyRecord)]
        assert rec.vtype.rdb_name == rdb_name and rec.elements == 3
        expiring = {f[0] for f in rec.value if f[2] is not None and 0 < f[2] < 1 << 48}
        assert expiring == {b"field1", b"field2"}, rec.value


def test_the_damaged_files_say_what_is_wrong():
    out = decode(CORPUS / "invalid_chksum_v8.rdb")
    (bad,) = [f for f in out if isinstance(f, Finding)]
    assert bad.rule == "rdb-checksum" and bad.severity == "error"
    assert len([r for r in out if isinstance(r, KeyRecord)]) == 3  # every key still given
    out = decode(CORPUS / "future_v19.rdb")
    rules = [f.rule for f in out if isinstance(f, Finding)]
    assert rules[0] == "rdb-version" and [r.key for r in out if isinstance(r, KeyRecord)] == [b"xxx"]
