"""``rdb --report``: the memory reports (dcpinspect/families/redis/reports/usage.py) and the flame
graph (flame.py) on a file redis-server saved (the dataset of test_memory_usage.py), on
a Dragonfly .dfs set, and on made-up keys for the bounds (a pruned prefix table, a plot
of a million keys)."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import pytest

from frames import invoke_cli
from test_memory_usage import estimates, measured  # noqa: F401 (the fixture)
from dcpinspect.families.redis.reports import memory, usage
from dcpinspect.families.redis.reports.flame import WIDTH, Flame
from dcpinspect.families.redis.rdb.records import KeyRecord
from dcpinspect.families.redis.reports.snapshots import records as rdb_records

SVG = "{http://www.w3.org/2000/svg}"


def run(*args) -> tuple[str, int, str]:
    got = invoke_cli("rdb", *map(str, args))
    return got.stdout.decode(), got.returncode, got.stderr.decode()


def objects(*args) -> list[dict]:
    out, code, err = run("--format", "jsonl", *args)
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


@pytest.fixture(scope="module")
def saved(measured):  # noqa: F811
    path = measured[0]
    return path, estimates(path), {r.key: r for r in rdb_records(path, keep=True) if type(r) is KeyRecord}


def test_memory_report_is_the_top_n_keys_by_the_models_figure(saved):
    path, est, _ = saved
    got = [o for o in objects(path, "--report", "memory", "-n", "7") if o["kind"] == "memory"]
    want = sorted(est.items(), key=lambda kv: -kv[1].total)[:7]
    assert [(o["key"], o["memory"]) for o in got] == [(k.decode(), m.total) for k, m in want]
    assert got[0]["key"] == "zset:20000" and got[0]["encoding"] == "skiplist" and got[0]["elements"] == 20000


def test_csv_has_rdbtools_memory_columns_and_every_key(saved):
    path, est, recs = saved
    out, code, _ = run(path, "--report", "memory", "--format", "csv")
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert tuple(rows[0]) == usage.CSV_COLUMNS
    body = {r[2]: r for r in rows[1:] if r}
    assert set(body) == {k.decode() for k in est}
    row = body["hash:20000"]
    assert row[:2] == ["0", "hash"] and int(row[3]) == est[b"hash:20000"].total
    assert row[4] == "hashtable" and row[5] == "20000"
    assert body["exp:3"][7] and not body["hash:20000"][7]
    assert int(body["str:len:5000"][6]) == 5000


def test_largest_element_of_every_key_the_lane_measured(saved):
    """The report reads keys through the C record lane where it can (packed values,
    quicklists, intsets, hash tables, skiplists, strings: no values made); the largest
    element it gives is the one the readers find in the values, for every key but a
    stream's (which has none)."""
    path, est, recs = saved
    out, code, _ = run(path, "--report", "memory", "--format", "csv")
    assert code == 0
    body = {r[2]: r for r in list(csv.reader(io.StringIO(out)))[1:] if r}
    for k, m in est.items():
        want = "" if m.largest is None else str(m.largest)
        assert body[k.decode()][6] == want, (k, body[k.decode()], m)
        assert want or recs[k].type == "stream", k
    assert {body[k][4] for k in body} >= {"listpack", "intset", "quicklist", "hashtable", "skiplist"}


def test_types_and_prefix_add_up_to_the_keys(saved):
    path, est, recs = saved
    objs = objects(path, "--report", "types", "--report", "prefix", "-n", "1000", "--depth", "2")
    total = next(o for o in objs if o["kind"] == "memory-total")
    assert total["keys"] == len(est) and total["memory"] == sum(m.total for m in est.values())
    types = [o for o in objs if o["kind"] == "types"]
    assert sum(o["memory"] for o in types) == total["memory"]
    assert sum(o["keys"] for o in types) == len(est)
    by_hand = defaultdict(int)
    for k, m in est.items():
        for p in usage.prefixes(k, (b":",), 2):
            by_hand[p.decode()] += m.total
    prefixes = {o["prefix"]: o for o in objs if o["kind"] == "prefix"}
    assert {p: o["memory"] for p, o in prefixes.items()} == dict(by_hand)
    assert prefixes["set:ht:"]["keys"] == 5 and prefixes["set:ht:"]["elements"] == 1 + 5 + 100 + 1000 + 20000


def test_a_second_separator_cuts_too():
    assert usage.prefixes(b"a:b/c:d", (b":", b"/"), 5) == [b"a:", b"a:b/", b"a:b/c:"]
    assert usage.prefixes(b"a::b", (b"::",), 3) == [b"a::"]
    assert usage.prefixes(b"plain", (b":",), 2) == []


def test_bigkeys_name_the_biggest_by_elements_and_by_memory(saved):
    path, est, recs = saved
    got = {o["type"]: o for o in objects(path, "--report", "bigkeys") if o["kind"] == "bigkeys"}
    assert set(got) == {"string", "list", "set", "hash", "zset", "stream"}
    assert got["list"]["biggest_by_elements"] == "list:20000" and got["list"]["unit"] == "items"
    assert got["string"]["biggest_by_elements"] in ("str:len:300000", "str:lzf:300000")
    assert got["string"]["its_elements"] == 300000
    zsets = {k: m.total for k, m in est.items() if recs[k].type == "zset"}
    assert got["zset"]["biggest_by_memory"] == max(zsets, key=zsets.get).decode()
    assert got["hash"]["keys"] == sum(1 for r in recs.values() if r.type == "hash")


def test_expiry_buckets_at_the_snapshot_and_at_a_later_time(saved):
    path, est, recs = saved
    rows = {o["expires"]: o for o in objects(path, "--report", "expiry") if o["kind"] == "expiry"}
    assert rows["<1h"]["keys"] == 1  # exp:0, an hour ahead when written
    assert rows["<1day"]["keys"] == 19 and rows["<1week"]["keys"] == 1  # exp:1..19, exp:hash
    assert rows["none"]["keys"] == len(est) - 21
    later = {o["expires"]: o for o in objects(path, "--report", "expiry", "--at", "2200-01-01T00:00:00Z")
             if o["kind"] == "expiry"}
    assert later["expired"]["keys"] == 21
    assert later["expired"]["memory"] == sum(m.total for k, m in est.items() if recs[k].expire_ms is not None)


def test_config_thresholds_change_what_the_server_would_hold(saved, tmp_path):
    path = saved[0]
    conf = tmp_path / "redis.conf"
    conf.write_text("# a server that keeps no hash as a listpack\nhash-max-ziplist-entries 0\nport 6379\n")
    encodings = {(o["type"], o["encoding"]) for o in objects(path, "--report", "types", "--config", conf)
                 if o["kind"] == "types"}
    assert ("hash", "hashtable") in encodings and ("hash", "listpack") not in encodings
    assert memory.Config.read(conf).hash_max_listpack_entries == 0
    conf.write_text("zset-max-listpack-entries many\n")
    out, code, err = run(path, "--report", "types", "--config", conf)
    assert code == 2 and "not a number" in err


def test_unknown_report_and_csv_without_report_are_refused(saved):
    assert run(saved[0], "--report", "nope")[1] == 2
    assert run(saved[0], "--format", "csv")[1] == 2


def test_table_output_names_each_report(saved):
    out, code, _ = run(saved[0], "-r", "memory", "-r", "bigkeys", "-r", "prefix", "-r", "types", "-r", "expiry",
                       "-n", "3")
    assert code == 0
    for title in ("Top 3 keys by memory", "Biggest keys per type", "Top 3 prefixes by memory", "per db, type and",
                  "Keys by time to expiry"):
        assert title in out
    assert "zset:20000" in out


def test_the_prefix_table_is_exact_until_full_then_keeps_the_heaviest():
    t = usage.PrefixTable(cap=4)
    for i in range(4):
        t.add(0, b"p%d:" % i, 100 * (i + 1), 1)
    assert t.pruned == 0 and dict(t.heaviest())[(0, b"p0:")] == [100, 1, 1]
    t.add(0, b"p0:", 5, 2)
    assert dict(t.heaviest())[(0, b"p0:")] == [105, 2, 3]
    t.add(0, b"new:", 1, 1)  # full: the lighter half goes
    assert t.pruned == 2 and set(dict(t.heaviest())) == {(0, b"p3:"), (0, b"p2:"), (0, b"new:")}


def test_the_key_selection_is_honoured(saved):
    path, est, recs = saved
    objs = objects(path, "--report", "types", "--report", "prefix", "--type", "hash", "--match", "hash:*")
    want = {k: m for k, m in est.items() if k.startswith(b"hash:")}
    assert next(o for o in objs if o["kind"] == "memory-total") == {
        "kind": "memory-total", "protocol": "rdb", "keys": len(want), "memory": sum(m.total for m in want.values())}
    assert {o["type"] for o in objs if o["kind"] == "types"} == {"hash"}
    expiring = objects(path, "--report", "expiry", "--expiring")
    assert {o["expires"] for o in expiring if o["kind"] == "expiry"} == {"<1h", "<1day", "<1week"}


def _svg_boxes(text: str) -> list[tuple[float, float, float, str]]:
    root = ET.fromstring(text)
    out = []
    for g in root.iter(f"{SVG}g"):
        rect, title = g.find(f"{SVG}rect"), g.find(f"{SVG}title")
        out.append((float(rect.get("y")), float(rect.get("x")), float(rect.get("width")), title.text))
    return out


def _check_icicle(boxes) -> None:
    """Each row of boxes fits under the row above, and the first two fill the width."""
    rows = defaultdict(list)
    for y, x, w, _ in boxes:
        rows[y].append((x, w))
    ys = sorted(rows)
    assert abs(sum(w for _, w in rows[ys[0]]) - WIDTH) < 0.01
    assert abs(sum(w for _, w in rows[ys[1]]) - WIDTH) < 0.01
    for upper, lower in zip(ys, ys[1:]):
        for x, w in rows[lower]:
            assert any(ux - 0.01 <= x and x + w <= ux + uw + 0.01 for ux, uw in rows[upper]), (lower, x, w)
    for y in ys:
        assert sum(w for _, w in rows[y]) <= WIDTH + 0.01


def test_plot_parses_and_its_widths_sum_to_the_total(saved, tmp_path):
    path, est, _ = saved
    svg = tmp_path / "memory.svg"
    out, code, err = run(path, "--plot", svg, "-r", "types")
    assert code == 0, err
    text = svg.read_text()
    assert "<script" not in text and "http://" not in text.replace("http://www.w3.org/2000/svg", "")
    boxes = _svg_boxes(text)
    _check_icicle(boxes)
    total = sum(m.total for m in est.values())
    assert boxes[0][3] == f"all keys: {total:,} bytes, 100.00%"
    assert any(t.startswith("zset:20000: ") for *_, t in boxes)


def _measured(i: int, key: bytes, size: int, vtype: str = "string") -> usage.Measured:
    return usage.Measured(i % 2, key, vtype, "raw", 1, memory.KeyMemory(size, 0, "raw", size), None)


def test_plot_of_many_keys_stays_small_and_escapes_names():
    flame = Flame(cap=10_000)
    seps = (b":",)
    for i in range(100_000):
        key = b"tenant%d:<&\x1b>user:%d" % (i % 40, i)
        flame.add(_measured(i, key, 50 + i % 97, ("string", "hash", "zset")[i % 3]), usage.prefixes(key, seps, 2))
    text = flame.svg()
    assert len(text) < 2_000_000
    boxes = _svg_boxes(text)
    _check_icicle(boxes)
    assert len(boxes) < 5000
    assert any("&lt;&amp;\\x1b&gt;" in text for _ in [0]) and "\x1b" not in text
    assert any(t.startswith("other under ") for *_, t in boxes)


def test_reports_on_a_dfs_set(tmp_path):
    from test_dfs_sets import KEYS, write_set

    files = write_set(tmp_path)
    objs = objects(files["summary"], "--report", "types", "--report", "memory", "-n", "100")
    assert next(o for o in objs if o["kind"] == "memory-total")["keys"] == KEYS
    assert {o["key"] for o in objs if o["kind"] == "memory"} >= {"user:2", "queue", "cfg"}
