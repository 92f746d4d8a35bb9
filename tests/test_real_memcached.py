"""Real memcached traffic captured with tcpdump, decoded with ``dcpinspect decode``,
and compared frame by frame with tshark's couchbase dissector as an oracle.

Captures (built once per session in conftest.py):

* ``capable`` — ``memccapable -b``: every binary command, with the errors it provokes;
* ``slap`` — ``memcslap --binary``: 4 concurrent connections × 2000 SETs;
* ``precise`` — the Python client in servers.py: quiet ops pipelined in one
  segment, a key with control characters, a 1 MiB value in both directions.

Known tshark (4.0.17) differences, normalised before comparing (spec/landscape-dcp.md §1.4):
the opaque is shown little-endian (bytes 00 00 00 10 → 0x10000000) where dcpinspect
gives the big-endian value, and every key is also split as if collection-prefixed
(``couchbase.key.collection_id`` / ``logical_key``); ``couchbase.key`` keeps the whole
key, so that is the field compared. Both differences are asserted once explicitly.
"""

from __future__ import annotations

import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import pytest

import servers
from dcpinspect.sources.capture import Record, read_records
from dcpinspect.transport.packet import Segment, parse_record

pytestmark = pytest.mark.server

AGG = "\x1f"  # tshark's aggregator between PDUs of one packet (',' can occur in keys)
TSHARK_FIELDS = ("frame.number", "tcp.stream", "tcp.srcport", "tcp.dstport", "couchbase.magic",
                 "couchbase.opcode", "couchbase.opaque", "couchbase.status", "couchbase.key.length",
                 "couchbase.key")

# a server error answer is a warning: "peer-error" on the frame alone, or "answered-error"
# once the validator has paired it with its request (then naming the request)
PEER_ERROR_RULES = {"peer-error", "answered-error"}

NAMES = {0x00: "GET", 0x01: "SET", 0x02: "ADD", 0x03: "REPLACE", 0x04: "DELETE", 0x11: "SETQ",
         0x12: "ADDQ", 0x13: "REPLACEQ", 0x14: "DELETEQ", 0x0C: "GETK"}


# --- helpers -------------------------------------------------------------------------


def tshark(path: Path, port: int, fields=TSHARK_FIELDS) -> list[list[str]]:
    exe = servers.require("tshark")["tshark"]
    argv = [exe, "-r", str(path), "-d", f"tcp.port=={port},couchbase", "-T", "fields"]
    for f in fields:
        argv += ["-e", f]
    argv += ["-E", "occurrence=a", "-E", f"aggregator={AGG}", "-E", "separator=/t"]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                         errors="surrogateescape")
    assert res.returncode == 0, res.stderr
    return [line.split("\t") for line in res.stdout.split("\n") if line]


def _tshark_key(text: str) -> str:
    """Undo tshark's -T fields escaping of a string field (\\t, \\n, \\r, \\\\)."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in "tnr\\":
            out.append({"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}[text[i + 1]])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _bswap32(v: int) -> int:
    return int.from_bytes(v.to_bytes(4, "big"), "little")


def tshark_pdus(path: Path, port: int) -> dict[tuple[int, str], list[tuple]]:
    """tshark's couchbase PDUs per (client port, direction), in wire order, as
    (magic, opcode, opaque as dcpinspect shows it, status or None, key)."""
    out: dict[tuple[int, str], list[tuple]] = defaultdict(list)
    for row in tshark(path, port):
        row += [""] * (len(TSHARK_FIELDS) - len(row))
        _num, _stream, sport, dport, magic, opcode, opaque, status, keylen, key = row
        if not magic:
            continue
        magics = magic.split(AGG)
        n = len(magics)
        opcodes, opaques, keylens = opcode.split(AGG), opaque.split(AGG), keylen.split(AGG)
        assert len(opcodes) == len(opaques) == len(keylens) == n, row
        keys = iter(key.split(AGG) if key else [])
        statuses = status.split(AGG) if status else []
        direction = "s2c" if int(sport) == port else "c2s"
        cport = int(dport) if direction == "s2c" else int(sport)
        if direction == "s2c":
            assert len(statuses) == n, row  # every response PDU has a status
        for i in range(n):
            k = _tshark_key(next(keys)) if int(keylens[i]) else ""
            out[(cport, direction)].append((
                int(magics[i], 16), int(opcodes[i], 16),
                _bswap32(int(opaques[i], 16)),  # tshark shows the opaque little-endian
                int(statuses[i], 16) if direction == "s2c" else None, k))
        assert next(keys, None) is None, f"more keys than key lengths in {row}"
    return dict(out)


def ours(records: list[dict]) -> dict[tuple[int, str], list[tuple]]:
    out: dict[tuple[int, str], list[tuple]] = defaultdict(list)
    for r in servers.frames_of(records):
        cport = int(r["flow"].split("-")[0].rsplit(":", 1)[1])
        out[(cport, r["direction"])].append(
            (r["magic"], r["opcode"], r["opaque"], r.get("status"), r["key"]))
    return dict(out)


def _capture(request, name: str) -> servers.RealCapture:
    return request.getfixturevalue(f"{name}_capture")


def _segments(path: Path) -> list[Segment]:
    return [s for s in (parse_record(r) for r in read_records(path) if isinstance(r, Record))
            if isinstance(s, Segment)]


def _no_drops(cap: servers.RealCapture) -> None:
    if cap.stats.dropped:
        pytest.skip(f"tcpdump reports {cap.stats.dropped} packets dropped by the kernel")


# --- every frame decodes -------------------------------------------------------------


@pytest.mark.parametrize("name", ["capable", "slap", "precise"])
def test_every_frame_decodes_without_error(request, decode_jsonl, name):
    cap = _capture(request, name)
    _no_drops(cap)
    records = decode_jsonl(cap.path, "--port", str(cap.port))
    frames = servers.frames_of(records)
    assert frames
    assert servers.notes_of(records) == []  # no gaps, no skipped bytes, nothing undecodable
    for f in frames:
        assert f["protocol"] == "mcbp" and not f["truncated"], f
        assert f["magic"] == (0x80 if f["direction"] == "c2s" else 0x81), f
        assert f["opcode_name"] and not f["opcode_name"].startswith("0x"), f
        rules = [(x["rule"], x["severity"]) for x in f["findings"]]
        if f["direction"] == "s2c" and f["status"] != 0:
            # a legitimate error from the server: exactly one peer-error warning
            assert len(rules) == 1 and rules[0][0] in PEER_ERROR_RULES and rules[0][1] == "warning", f
        else:
            assert rules == [], f


def test_memccapable_peer_errors(capable_capture, decode_jsonl):
    """memccapable provokes KEY_ENOENT / KEY_EEXISTS: reported as peer-error warnings of that class."""
    frames = servers.frames_of(decode_jsonl(capable_capture.path, "--port", str(capable_capture.port)))
    errors = Counter()
    for f in frames:
        if f["direction"] == "s2c" and f["status"]:
            (finding,) = f["findings"]
            assert finding["rule"] in PEER_ERROR_RULES and finding["severity"] == "warning"
            assert f["status_name"] in finding["message"]
            errors[(NAMES.get(f["opcode"], f["opcode_name"]), finding["class"])] += 1
    # a few that memccapable's binary tests always provoke
    for want in [("GET", "KEY_ENOENT"), ("GETK", "KEY_ENOENT"), ("ADD", "KEY_EEXISTS"), ("ADDQ", "KEY_EEXISTS"),
                 ("REPLACE", "KEY_ENOENT"), ("DELETE", "KEY_ENOENT"), ("DELETEQ", "KEY_ENOENT"),
                 ("SET", "KEY_EEXISTS")]:  # SET with a stale CAS
        assert errors[want] >= 1, (want, errors)
    assert set(c for _, c in errors) <= {"KEY_ENOENT", "KEY_EEXISTS", "NOT_STORED", "DELTA_BADVAL"}
    # the opcode name is also in the message
    get_miss = next(f for f in frames if f["direction"] == "s2c" and f["opcode"] == 0x00 and f["status"] == 1)
    assert get_miss["findings"][0]["message"].startswith("GET")
    assert get_miss["status_name"] == "KeyEnoent"


def test_memccapable_requests_and_responses_pair_up(capable_capture, decode_jsonl):
    """Counts per direction without an oracle: every non-quiet request has one response of
    the same opcode and opaque; quiet requests answer only errors and GETQ/GETKQ hits; STAT
    answers with a stream of responses ended by one with an empty key."""
    frames = servers.frames_of(decode_jsonl(capable_capture.path, "--port", str(capable_capture.port)))
    flows = defaultdict(lambda: {"c2s": [], "s2c": []})
    for f in frames:
        flows[f["flow"]][f["direction"]].append(f)
    assert len(flows) == 3  # noop+quit, quitq, then everything else
    total = Counter()
    for flow, d in flows.items():
        req = Counter(f["opcode"] for f in d["c2s"])
        resp = Counter(f["opcode"] for f in d["s2c"])
        total.update({"c2s": len(d["c2s"]), "s2c": len(d["s2c"])})
        for op in set(req) | set(resp):
            quiet = op in servers.QUIET or op in (0x17, 0x1A, 0x1B)  # QUITQ, APPENDQ, PREPENDQ
            if op == servers.STAT:
                assert resp[op] > req[op]
            elif quiet:
                assert resp[op] <= req[op], (flow, hex(op))
            else:
                assert resp[op] == req[op], (flow, hex(op), req[op], resp[op])
        for r in d["s2c"]:
            if r["opcode"] in servers.QUIET:
                assert r["status"] != 0 or r["opcode"] in (servers.GETQ, servers.GETKQ), r
        stats = [r for r in d["s2c"] if r["opcode"] == servers.STAT]
        if stats:
            assert stats[-1]["key"] == "" and all(r["key"] for r in stats[:-1])
    assert total["c2s"] > 200 and total["s2c"] > 150


def test_memcslap_counts(slap_capture, decode_jsonl):
    _no_drops(slap_capture)
    frames = servers.frames_of(decode_jsonl(slap_capture.path, "--port", str(slap_capture.port)))
    per = Counter((f["flow"], f["direction"], f["opcode_name"]) for f in frames)
    flows = {f["flow"] for f in frames}
    assert len(flows) == 4
    for flow in flows:
        assert per[(flow, "c2s", "SET")] == 2000 and per[(flow, "s2c", "SET")] == 2000
        assert per[(flow, "c2s", "QUIT")] == 1 and per[(flow, "s2c", "QUIT")] == 1
    assert len(frames) == 4 * 2 * 2001
    assert all(f["status"] == 0 for f in frames if f["direction"] == "s2c")
    # each response answers the request before it (memcslap waits for each reply)
    by_flow = defaultdict(lambda: {"c2s": [], "s2c": []})
    for f in frames:
        by_flow[f["flow"]][f["direction"]].append((f["opcode"], f["opaque"]))
    for d in by_flow.values():
        assert d["c2s"] == d["s2c"]


def test_precise_session_matches_what_the_client_sent(precise_capture, decode_jsonl):
    (client,) = precise_capture.clients
    records = decode_jsonl(precise_capture.path, "--port", str(precise_capture.port))
    frames = servers.frames_of(records)
    flows = {f["flow"] for f in frames}
    assert flows == {f"127.0.0.1:{client.client_port}-127.0.0.1:{precise_capture.port}"}
    c2s = [f for f in frames if f["direction"] == "c2s"]
    s2c = [f for f in frames if f["direction"] == "s2c"]
    assert len(c2s) == len(client.sent) and len(s2c) == len(client.received)
    assert [(f["opcode"], f["key"], f["opaque"], f["vbucket"]) for f in c2s] == \
        [(s.opcode, servers.key_text(s.key), s.opaque, s.vbucket) for s in client.sent]
    assert [(f["opcode"], f["status"], f["key"], f["opaque"]) for f in s2c] == \
        [(r.opcode, r.status, servers.key_text(r.key), r.opaque) for r in client.received]
    # offsets are the byte positions in each direction's stream
    for side, sent in ((c2s, client.sent), (s2c, client.received)):
        pos = 0
        for f, s in zip(side, sent):
            assert f["offset"] == pos
            size = 24 + len(s.extras) + len(s.key) + len(s.value)
            assert f["length"] == size
            pos += size
    # decoded fields
    incr = [f["fields"].get("counter") for f in s2c if f["opcode"] in (servers.INCR, servers.DECR)]
    assert incr == [10, 15, 12, None]  # the last one: DELTA_BADVAL on a non-numeric value
    assert next(f for f in c2s if f["opcode"] == servers.SET)["fields"]["flags"] == 0xCAFE
    assert next(f for f in s2c if f["opcode"] == servers.VERSION)["fields"]["value"] == \
        client.received[-2].value.decode()
    # the key with control characters, both ways, as the exact text
    ctl = servers.key_text(servers.CONTROL_KEY)
    assert [f["direction"] for f in frames if f["key"] == ctl] == ["c2s", "c2s", "s2c"]
    # the quiet miss (GETQ q-missing) got no response; the pipelined batch is in order
    quiet = [f["opcode_name"] for f in c2s if f["opcode"] in servers.QUIET]
    assert quiet == ["SETQ", "SETQ", "SETQ", "GETQ", "GETQ", "GETKQ", "DELETEQ"]
    missing = next(f for f in c2s if f["key"] == "q-missing")
    assert not [f for f in s2c if f["opaque"] == missing["opaque"]]


def test_one_mib_value_reassembled_across_segments(precise_capture, decode_jsonl):
    frames = servers.frames_of(decode_jsonl(precise_capture.path, "--port", str(precise_capture.port)))
    big = servers.big_value()
    set_req = next(f for f in frames if f["direction"] == "c2s" and f["key"] == "big" and f["opcode"] == servers.SET)
    get_opaque = next(f for f in frames if f["direction"] == "c2s" and f["key"] == "big" and f["opcode"] == servers.GET)["opaque"]
    get_resp = next(f for f in frames if f["direction"] == "s2c" and f["opaque"] == get_opaque)
    assert set_req["length"] == 24 + 8 + 3 + len(big)
    assert get_resp["length"] == 24 + 4 + len(big)
    for f in (set_req, get_resp):
        assert not f["truncated"] and f["findings"] == []
        assert bytes.fromhex(f["fields"]["value_hex"]) == big  # exact length, bytes in order
    # it really was split: no segment of the capture carries anywhere near the whole frame
    segs = _segments(precise_capture.path)
    port = precise_capture.port
    for direction, want in (("c2s", set_req), ("s2c", get_resp)):
        data = [s for s in segs if s.payload and (s.dport == port) == (direction == "c2s")]
        biggest = max(len(s.payload) for s in data)
        assert biggest < len(big) // 4
        assert sum(len(s.payload) for s in data) >= want["length"]


# --- the tshark oracle ---------------------------------------------------------------


@pytest.mark.tshark
@pytest.mark.parametrize("name", ["capable", "slap", "precise"])
def test_tshark_agrees_frame_by_frame(request, decode_jsonl, name):
    cap = _capture(request, name)
    _no_drops(cap)
    theirs = tshark_pdus(cap.path, cap.port)
    mine = ours(decode_jsonl(cap.path, "--port", str(cap.port)))
    assert sorted(mine) == sorted(theirs)
    for k in sorted(mine):
        a, b = mine[k], theirs[k]
        i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
        if i is None and len(a) == len(b):
            continue
        i = min(len(a), len(b)) if i is None else i
        trouble = _tshark_trouble(cap.path, cap.port)
        if trouble:  # the oracle itself says it could not dissect the capture
            pytest.skip(f"{name} flow {k} PDU {i}: tshark reports {trouble[:3]}")
        segs = _segments(cap.path)
        assert False, (f"{name} flow {k} PDU {i} of {len(a)}/{len(b)}: dcpinspect {a[max(0, i - 2):i + 3]} "
                       f"against tshark {b[max(0, i - 2):i + 3]} (normalised); segments: {len(segs)}, truncated: "
                       f"{sum(s.truncated for s in segs)}")
    assert sum(map(len, mine.values())) > 10


def _tshark_trouble(path: Path, port: int) -> list[tuple[str, str]]:
    """The frames tshark itself marks with an error (malformed, reassembly): where it cannot
    serve as the oracle."""
    exe = servers.require("tshark")["tshark"]
    argv = [exe, "-r", str(path), "-d", f"tcp.port=={port},couchbase", "-Y", "_ws.expert.severity >= error",
            "-T", "fields", "-e", "frame.number", "-e", "_ws.expert.message"]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                         errors="surrogateescape")
    return [tuple(line.split("\t", 1)) for line in res.stdout.splitlines() if line]


@pytest.mark.tshark
@pytest.mark.parametrize("name", ["capable", "slap", "precise"])
def test_frame_numbers_are_the_ones_tshark_shows(request, decode_jsonl, name):
    """Each frame is named by the capture frame that completed it, as tshark places a
    reassembled PDU (the 1 MiB values of ``precise`` span many packets)."""
    cap = _capture(request, name)
    _no_drops(cap)
    theirs: dict[tuple[int, str], list[int]] = defaultdict(list)
    for num, sport, dport, magic in tshark(cap.path, cap.port, ("frame.number", "tcp.srcport", "tcp.dstport",
                                                                 "couchbase.magic")):
        if magic:
            direction = "s2c" if int(sport) == cap.port else "c2s"
            cport = int(dport) if direction == "s2c" else int(sport)
            theirs[(cport, direction)] += [int(num)] * len(magic.split(AGG))
    mine: dict[tuple[int, str], list[int]] = defaultdict(list)
    for r in servers.frames_of(decode_jsonl(cap.path, "--port", str(cap.port))):
        mine[(int(r["flow"].split("-")[0].rsplit(":", 1)[1]), r["direction"])].append(r["frame"])
    assert dict(mine) == dict(theirs)
    assert len({n for ns in mine.values() for n in ns}) > 10


@pytest.mark.tshark
def test_tshark_opaque_is_little_endian_regression(precise_capture, decode_jsonl):
    """Landscape §1.4 item 4: bytes 00 00 00 10 → tshark 0x10000000, dcpinspect 0x10 (big-endian)."""
    servers.require("tshark")
    first = next(s for s in _segments(precise_capture.path) if s.payload and s.dport == precise_capture.port)
    assert first.payload[:2] == b"\x80\x0a" and first.payload[12:16] == b"\x00\x00\x00\x10"
    rows = [r for r in tshark(precise_capture.path, precise_capture.port,
                              ("couchbase.opcode", "couchbase.opaque")) if r and r[0]]
    assert rows[0][:2] == ["0x0a", "0x10000000"]
    frame = servers.frames_of(decode_jsonl(precise_capture.path, "--port", str(precise_capture.port)))[0]
    assert (frame["opcode_name"], frame["opaque"]) == ("NOOP", 0x10)


@pytest.mark.tshark
def test_tshark_memccapable_opaque_is_byte_swapped(capable_capture, decode_jsonl):
    """memccapable writes 0xdeadbeef in host order (ef be ad de): tshark shows 0xdeadbeef, we 0xefbeadde."""
    servers.require("tshark")
    frames = servers.frames_of(decode_jsonl(capable_capture.path, "--port", str(capable_capture.port)))
    assert {f["opaque"] for f in frames} == {0xEFBEADDE}
    rows = [r for r in tshark(capable_capture.path, capable_capture.port, ("couchbase.opaque",)) if r and r[0]]
    assert {v for r in rows for v in r[0].split(AGG)} == {"0xdeadbeef"}


@pytest.mark.tshark
def test_tshark_splits_every_key_as_collection_prefixed(precise_capture, decode_jsonl):
    """Landscape §1.4 item 1: on a connection that never negotiated collections tshark
    still splits 'alpha' into collection 0x61 + 'lpha'; dcpinspect keeps the whole key."""
    servers.require("tshark")
    rows = tshark(precise_capture.path, precise_capture.port,
                  ("couchbase.key", "couchbase.key.collection_id", "couchbase.key.logical_key"))
    alpha = [r for r in rows if r and r[0] == "alpha"]
    assert alpha and all(r[1:] == ["0x00000061", "lpha"] for r in alpha)
    frames = servers.frames_of(decode_jsonl(precise_capture.path, "--port", str(precise_capture.port)))
    mine = [f for f in frames if f["key"] == "alpha"]
    assert len(mine) == len(alpha)
    assert all("collection_id" not in f for f in mine)


# --- keys that begin with a control byte, on a connection that never sent HELO ----------

LEADING_CTL_KEYS = [b"\tkey", b"\nline", b"\x1b[0m"]


@pytest.fixture(scope="module")
def leading_ctl_capture(tmp_path_factory) -> servers.RealCapture:
    def traffic(port: int, cap: servers.RealCapture) -> None:
        c = servers.McClient(port)
        try:
            for k in LEADING_CTL_KEYS:
                assert c.set(k, b"v").status == servers.SUCCESS
                assert c.get(k, op=servers.GETK).key == k
            c.quit()
        finally:
            c.close()
        cap.clients.append(c)

    return servers.capture_traffic(tmp_path_factory.mktemp("ctl"), "ctl", traffic)


def test_leading_control_byte_keys_with_collections_off(leading_ctl_capture, decode_jsonl):
    cap = leading_ctl_capture
    frames = servers.frames_of(decode_jsonl(cap.path, "--port", str(cap.port), "--collections", "off"))
    keys = [f["key"] for f in frames if f["key"]]
    assert keys == [servers.key_text(k) for k in LEADING_CTL_KEYS for _ in range(3)]  # SET, GETK, GETK reply
    assert not any("collection_id" in f for f in frames)


def test_leading_control_byte_keys_on_a_connection_without_helo(leading_ctl_capture, decode_jsonl):
    cap = leading_ctl_capture
    frames = servers.frames_of(decode_jsonl(cap.path, "--port", str(cap.port)))
    keys = [f["key"] for f in frames if f["key"]]
    assert keys == [servers.key_text(k) for k in LEADING_CTL_KEYS for _ in range(3)]
    assert not any("collection_id" in f for f in frames)
