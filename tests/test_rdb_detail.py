"""``dcpinspect rdb FILE --key NAME`` / ``--offset N``: the key's spec-style offset table
(each field of the record with its file offsets) and its byte diagram, capped as MCBP
frames' are (``--max-value``, ``--max-diagram``, rows under one field, ``--full``). Files
built from the layouts of spec/rdb.md; every offset expected is counted from the bytes."""

from __future__ import annotations

import re
import struct

import rdbgen
import servers
from dcpinspect.limits import ROWS_SHOWN, VALUE_SHOWN

EXPIRE = 1_800_000_000_000
ROW = re.compile(r"^(?P<indent>\s*)(?P<label>\S.*?)\s+\((?P<lo>\d+)(?:[-,](?P<hi>\d+))?\)\s+: (?P<value>.*)$")


def table(text: str) -> list[tuple[int, str, int, int, str]]:
    """(depth, label, first offset, last offset, value) of each row of the offset table."""
    part = text.split("Offsets (in the file)", 1)[1].split("Record bytes", 1)[0]
    out = []
    for line in part.splitlines():
        m = ROW.match(line)
        if m:
            lo = int(m["lo"])
            out.append((len(m["indent"]) // 2, m["label"], lo, int(m["hi"] or lo), m["value"].strip()))
    return out


def diagram(text: str) -> str:
    return text.split("Record bytes", 1)[1]


def detail(path, *args) -> str:
    res = servers.dcpinspect("rdb", path, *args)
    assert res.returncode in (0, 1), res.stderr
    return res.stdout


def build(tmp_path, records: list[tuple[str, bytes]]) -> tuple:
    """A version-11 file of ``records`` (name, bytes) in db 0: its path and each record's offset."""
    body, offsets = b"\xfe\x00", {}
    for name, rec in records:
        offsets[name] = 9 + len(body)
        body += rec
    path = tmp_path / "detail.rdb"
    path.write_bytes(rdbgen.rdb(body, 11))
    return path, offsets


HASH_LP = rdbgen.listpack(["f1", "v1", "n", 42])
HASH = rdbgen.key(16, "h", rdbgen.string(HASH_LP), expire_ms=EXPIRE)


def test_a_listpack_hash_with_an_expiry_field_by_field(tmp_path):
    path, at = build(tmp_path, [("h", HASH)])
    o = at["h"]
    rows = table(detail(path, "--key", "h"))
    lp = o + 9 + 1 + 2 + 1  # expiry (9), type, key (length + 1 byte), the listpack's string length
    expected = [
        (0, "EXPIRETIME_MS", o, o + 8), (0, "Type", o + 9, o + 9), (0, "Key", o + 10, o + 11),
        (1, "Length", o + 10, o + 10), (1, "Bytes", o + 11, o + 11), (0, "Value", o + 12, o + len(HASH) - 1),
        (1, "Packed", o + 12, o + len(HASH) - 1), (2, "Length", o + 12, o + 12),
        (2, "Total bytes", lp, lp + 3), (2, "Elements", lp + 4, lp + 5),
        (2, "Entry 0", lp + 6, lp + 9), (2, "Entry 1", lp + 10, lp + 13), (2, "Entry 2", lp + 14, lp + 16),
        (2, "Entry 3", lp + 17, lp + 18), (2, "End", lp + 19, lp + 19)]
    assert [r[:4] for r in rows] == expected
    values = {r[1]: r[4] for r in rows}
    assert values["Type"] == "16 (0x10, HASH_LISTPACK)" and values["Total bytes"] == str(len(HASH_LP))
    assert [r[4] for r in rows if r[1].startswith("Entry")] == ["f1", "v1", "n", "42"]
    assert values["EXPIRETIME_MS"].startswith(f"{EXPIRE} ms (2027-01-15T08:00:00.000Z")
    assert rows[-1][3] == o + len(HASH) - 1  # the table reaches the record's last byte
    # --offset: any byte of the record shows it
    assert table(detail(path, "--offset", str(lp + 12))) == rows


def test_the_diagram_names_the_fields_each_row_starts_and_is_capped(tmp_path):
    path, at = build(tmp_path, [("h", HASH)])
    drawn = diagram(detail(path, "--key", "h"))
    lines = [line for line in drawn.splitlines() if re.match(r"^\s+\d+\|", line)]
    assert len(lines) == -(-len(HASH) // 4)
    assert lines[0].split("|")[1].strip() == "0xfc" and lines[0].endswith("expiretime_ms")
    assert lines[2].rstrip().endswith("type, key_length, key_bytes")  # bytes 8-11
    assert lines[3].rstrip().endswith("packed_length, total_bytes")
    assert f"Total {len(HASH)} bytes" in drawn and f"byte 0 at offset {at['h']} of the file" in drawn
    short = diagram(detail(path, "--key", "h", "--max-diagram", "8"))
    assert len([line for line in short.splitlines() if re.match(r"^\s+\d+\|", line)]) == 2
    assert f"… {len(HASH) - 8:,} more bytes not drawn (--full draws all)" in short


def test_collections_plain_packed_and_compressed(tmp_path):
    zset = rdbgen.key(3, "z", rdbgen.length(2) + rdbgen.string("a") + b"\x031.5" + rdbgen.string("b") + b"\xfe")
    ints = rdbgen.key(11, "i", rdbgen.string(rdbgen.intset([1, -2, 300])))
    text = "abcdefgh" * 8
    lzf = rdbgen.key(0, "s", rdbgen.lzf_string(rdbgen.lzf_literals(text.encode()), len(text)))
    plain = rdbgen.key(18, "q", rdbgen.length(2) + rdbgen.length(1) + rdbgen.string("big element")
                       + rdbgen.length(2) + rdbgen.string(rdbgen.listpack(["x"])))
    path, at = build(tmp_path, [("z", zset), ("i", ints), ("s", lzf), ("q", plain)])
    rows = table(detail(path, "--key", "z"))
    o = at["z"]
    assert [(r[1], r[2], r[3], r[4]) for r in rows[5:]] == [
        ("Count", o + 3, o + 3, "2"), ("Member 0", o + 4, o + 5, "a"), ("Length", o + 4, o + 4, "1"),
        ("Bytes", o + 5, o + 5, "a"), ("Score 0", o + 6, o + 9, "1.5"), ("Member 1", o + 10, o + 11, "b"),
        ("Length", o + 10, o + 10, "1"), ("Bytes", o + 11, o + 11, "b"), ("Score 1", o + 12, o + 12, "inf")]
    rows = {r[1]: r for r in table(detail(path, "--key", "i"))}
    o = at["i"]
    assert rows["Encoding"][2:] == (o + 4, o + 7, "2 bytes a value") and rows["Count"][4] == "3"
    assert [rows[f"Value {i}"][4] for i in range(3)] == ["1", "-2", "300"] and rows["Value 2"][2] == o + 16
    rows = {r[1]: r for r in table(detail(path, "--key", "s"))}
    assert rows["Encoding"][4] == "0xc3 (LZF)" and rows["Length"][4] == "64"
    assert rows["String"][4].endswith(f"for 64: {text}") and rows["LZF data"][3] == at["s"] + len(lzf) - 1
    rows = table(detail(path, "--key", "q"))
    labels = [r[1] for r in rows]
    assert labels[labels.index("Nodes"):labels.index("Nodes") + 3] == ["Nodes", "Container 0", "Node 0"]
    assert [r[4] for r in rows if r[1].startswith("Container")] == ["1 (plain)", "2 (packed)"]
    assert [r[4] for r in rows if r[1] == "Entry 0"] == ["x"]


def test_rows_values_and_escapes_are_capped_as_mcbp_values_are(tmp_path):
    members = [f"m{i}" for i in range(300)]
    big = rdbgen.key(2, "set", rdbgen.length(300) + b"".join(map(rdbgen.string, members)))
    long = rdbgen.key(0, "\x1b[31mred", rdbgen.string("v" * 3000))
    path, at = build(tmp_path, [("set", big), ("long", long)])
    rows = table(detail(path, "--key", "set"))
    elements = [r for r in rows if r[1].startswith("Element")]
    shown = ROWS_SHOWN.default - 2  # under the value: the count, the elements, the rest
    assert len(elements) == shown and elements[-1][4] == f"m{shown - 1}"
    (rest,) = [r for r in rows if r[1] == "(rest)"]
    assert rest[3] == at["set"] + len(big) - 1 and f"from {shown} on" in rest[4]
    everything = table(detail(path, "--key", "set", "--full"))
    assert len([r for r in everything if r[1].startswith("Element")]) == 300
    out = detail(path, "--key", "\x1b[31mred")
    assert "\x1b" not in out and "\\x1b[31mred" in out
    value = [r for r in table(out) if r[1] == "Bytes"][-1]
    assert value[2:4] == (at["long"] + 12, at["long"] + len(long) - 1)  # after type, key and 2-byte length
    left = 3000 - VALUE_SHOWN.default
    assert f"… {left:,} more bytes not shown (--full shows all)" in out
    assert "more bytes not shown" not in detail(path, "--key", "\x1b[31mred", "--full")
    assert f"… {3000 - 10:,} more bytes" in detail(path, "--key", "\x1b[31mred", "--max-value", "10")


def test_a_damaged_record_is_laid_out_up_to_the_damage(tmp_path):
    lp = bytearray(rdbgen.listpack(["a", "b"]))
    lp[9] = 0xF7  # the second entry's encoding byte: none that exists
    bad = rdbgen.key(20, "bad", rdbgen.string(bytes(lp)))
    path, at = build(tmp_path, [("bad", bad), ("after", rdbgen.key(0, "after", rdbgen.string("x")))])
    res = servers.dcpinspect("rdb", path, "--key", "bad")
    assert res.returncode == 1, res.stderr  # the rdb-corrupt finding
    rows = table(res.stdout)
    entry = next(r for r in rows if r[1] == "Entry 0")
    (rest,) = [r for r in rows if r[1] == "(rest)"]
    assert entry[4] == "a" and rest[2] == entry[3] + 1  # the damage starts where entry 0 ends
    assert "0xf7" in rest[4] and rest[3] == at["bad"] + len(bad) - 1
    assert "rdb-corrupt" in res.stdout


def test_a_record_in_a_gzip_file(tmp_path):
    import gzip

    path, at = build(tmp_path, [("h", HASH)])
    packed = tmp_path / "detail.rdb.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert table(detail(packed, "--key", "h")) == table(detail(path, "--key", "h"))


def test_damaged_and_cut_records_never_raise():
    """Any bytes under any type: the fields stay inside the record, in order, and the
    table and the diagram are made."""
    from hypothesis import given, settings, strategies as st

    from dcpinspect.families.redis.reports.anatomy import anatomy
    from dcpinspect.families.redis.rdb.types import TYPES
    from dcpinspect.outputs.diagram import bytes_diagram_lines

    samples = [HASH, rdbgen.key(11, "i", rdbgen.string(rdbgen.intset([1, 2, 3]))),
               rdbgen.key(18, "q", rdbgen.length(1) + rdbgen.length(2) + rdbgen.string(rdbgen.listpack(["x", 5]))),
               rdbgen.key(10, "z", rdbgen.string(rdbgen.ziplist(["a", 7, "b" * 70])))]
    vtypes = list(TYPES["redis"].values())

    @settings(max_examples=300, deadline=None)
    @given(st.sampled_from(samples), st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), max_size=4),
           st.integers(0, 200), st.sampled_from(vtypes), st.sampled_from([None, 2, 256]))
    def check(record, flips, cut, vtype, rows):
        data = bytearray(record)
        for at, byte in flips:
            data[at % len(data)] = byte
        data = bytes(data[:cut % (len(data) + 1)])
        a = anatomy(data, 1000, len(record), vtype, rows, 16)
        table = list(a.table_rows())
        assert table and all(r.offset == -1 or 1000 <= r.offset <= r.offset + r.size <= 1000 + len(record)
                             for r in table)
        assert bytes_diagram_lines(data, 1000, a.fields, 64, len(record))[-1] == f"    Total {len(record)} bytes"

    check()
