"""The RESP framer (families/redis/resp.py): RESP2 and RESP3 values and inline commands
built from their layouts (spec/rdb.md §12), the same frames however the bytes are cut,
lying lengths bounded, and the RDB payload in both forms handed on in pieces."""

from __future__ import annotations

import random

import pytest

import rdbgen
from dcpinspect.families.redis.replication.resp import MARK, MAX_DEPTH, MAX_LINE, PIECE, RespFrame, RespFramer
from dcpinspect.framing.framer import Skipped


def bulk(b: bytes | str) -> bytes:
    b = b.encode() if isinstance(b, str) else b
    return b"$%d\r\n%s\r\n" % (len(b), b)


def command(*words) -> bytes:
    return b"*%d\r\n" % len(words) + b"".join(bulk(w) for w in words)


def frames_of(data: bytes, synced: bool = True, cuts=None) -> list:
    f = RespFramer(synced)
    if cuts is None:
        return f.feed(data) + f.close()
    out, prev = [], 0
    for c in list(cuts) + [len(data)]:
        out += f.feed(data[prev:c])
        prev = c
    return out + f.close()


def values(items) -> list:
    return [(i.kind, i.value) for i in items if isinstance(i, RespFrame)]


RESP2 = [
    (b"+OK\r\n", ("+", b"OK")),
    (b"-ERR unknown command\r\n", ("-", b"ERR unknown command")),
    (b":-42\r\n", (":", -42)),
    (b"$5\r\nhe\r\no\r\n", ("$", b"he\r\no")),  # a bulk's bytes are counted, not scanned
    (b"$0\r\n\r\n", ("$", b"")),
    (b"$-1\r\n", ("$", None)),
    (b"*-1\r\n", ("*", None)),
    (b"*0\r\n", ("*", [])),
    (b"*2\r\n*1\r\n:1\r\n$1\r\nx\r\n", ("*", [("*", [(":", 1)]), ("$", b"x")])),
]

RESP3 = [
    (b"_\r\n", ("_", None)),
    (b",3.25\r\n", (",", b"3.25")),
    (b"#t\r\n", ("#", True)),
    (b"#f\r\n", ("#", False)),
    (b"!9\r\nERR what?\r\n", ("!", b"ERR what?")),
    (b"=8\r\ntxt:some\r\n", ("=", b"txt:some")),
    (b"(3492890328409238509324850943850943825024385\r\n", ("(", b"3492890328409238509324850943850943825024385")),
    (b"%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n", ("%", [("+", b"a"), (":", 1), ("+", b"b"), (":", 2)])),
    (b"~2\r\n+x\r\n+y\r\n", ("~", [("+", b"x"), ("+", b"y")])),
    (b">2\r\n+message\r\n+hi\r\n", (">", [("+", b"message"), ("+", b"hi")])),
    # an attribute describes the value after it, which is the frame's value
    (b"|1\r\n+ttl\r\n:3\r\n+v\r\n", ("+", b"v")),
    # streamed string and aggregate
    (b"$?\r\n;4\r\nHell\r\n;2\r\no!\r\n;0\r\n", ("$", b"Hello!")),
    (b"*?\r\n:1\r\n+two\r\n.\r\n", ("*", [(":", 1), ("+", b"two")])),
]


@pytest.mark.parametrize("data,value", RESP2 + RESP3, ids=lambda x: repr(x)[:30])
def test_each_type_is_one_frame_with_its_value(data, value):
    items = frames_of(data + b"+NEXT\r\n")
    assert values(items) == [("value", value), ("value", ("+", b"NEXT"))]
    assert [(i.offset, len(i.data)) for i in items] == [(0, len(data)), (len(data), 7)]


def test_inline_commands_and_keepalive_newlines():
    data = b"PING\r\nREPLCONF listening-port 6380\n\n\r\nSYNC\r\n"
    assert values(frames_of(data)) == [
        ("inline", ("inline", [b"PING"])), ("inline", ("inline", [b"REPLCONF", b"listening-port", b"6380"])),
        ("keepalive", ("inline", [])), ("keepalive", ("inline", [])), ("inline", ("inline", [b"SYNC"]))]


STREAM = b"".join(d for d, _ in RESP2 + RESP3) + command("SET", "k", "v" * 300) + b"PING\r\n"


def test_the_same_frames_however_the_bytes_are_cut():
    whole = frames_of(STREAM)
    assert len(whole) == len(RESP2) + len(RESP3) + 2
    assert b"".join(i.data for i in whole) == STREAM
    for cut in range(1, len(STREAM)):
        assert frames_of(STREAM, cuts=[cut]) == whole, cut
    assert frames_of(STREAM, cuts=range(1, len(STREAM))) == whole


def test_a_bulk_over_the_frame_cap_is_passed_over_as_it_comes(monkeypatch):
    monkeypatch.setenv("DCPINSPECT_MAX_RESP_FRAME", "2048")
    big = command("SET", "k", b"x" * 100_000)
    data = command("PING") + big + command("DEL", "k")
    f = RespFramer()
    out = []
    for i in range(0, len(data), 1000):
        out += f.feed(data[i:i + 1000])
        assert f.buffered <= 2048
    out += f.close()
    first = len(command("PING"))
    assert [type(i).__name__ for i in out] == ["RespFrame", "Skipped", "RespFrame"]
    assert (out[1].offset, out[1].size) == (first, len(big)) and "cap" in out[1].reason
    assert out[2].offset == first + len(big) and out[2].value[1][0] == ("$", b"DEL")


def test_a_lying_count_is_passed_over_holding_nothing():
    f = RespFramer()
    out = f.feed(b"*99999999\r\n")
    for _ in range(200):
        out += f.feed(b":1\r\n" * 100)
        assert f.buffered < 1024
    out += f.close()
    assert [type(i) for i in out] == [Skipped] and out[0].offset == 0 and out[0].size == 11 + 200 * 400
    assert "element cap" in out[0].reason


@pytest.mark.parametrize("bad,reason", [
    (b"$abc\r\n", "no bulk length"), (b"*-5\r\n", "no element count"), (b"$-2\r\n", "no bulk length"),
    (b":12x\r\n", "no RESP integer"), (b"#maybe\r\n", "no RESP3 boolean"), (b"+OK\n", "bare newline"),
    (b"*1\r\n?what\r\n", "no RESP type"), (b"$3\r\nabcXY", "CRLF"),
    (b"*1\r\n" * (MAX_DEPTH + 1), "nested"),
])
def test_bytes_that_are_no_resp_are_an_error_frame_then_the_next_command(bad, reason):
    after = command("SET", "k", "v")
    out = frames_of(bad + b"junk" + after)
    errors = [i for i in out if isinstance(i, RespFrame) and i.kind == "error"]
    assert len(errors) == 1 and reason in errors[0].reason and errors[0].offset == 0
    assert values(out)[-1] == ("value", ("*", [("$", b"SET"), ("$", b"k"), ("$", b"v")]))
    assert out[-1].offset == len(bad) + 4
    # every byte is in a frame or a skipped range
    assert sum(len(i.data) if isinstance(i, RespFrame) else i.size for i in out) == len(bad) + 4 + len(after)


def test_a_line_with_no_end_is_bounded():
    f = RespFramer()
    out = []
    for _ in range(40):
        out += f.feed(b"+" + b"x" * 4095)
        assert f.buffered <= MAX_LINE + 4096 + 2
    assert [i.kind for i in out if isinstance(i, RespFrame)] == ["error"]
    assert "no end" in out[0].reason


def test_a_well_formed_stream_has_no_error():
    assert not [i for i in frames_of(STREAM) if getattr(i, "kind", "") == "error" or isinstance(i, Skipped)]


# -- the RDB payload ------------------------------------------------------------------------

def _rdb(n: int = 3000) -> bytes:
    return rdbgen.rdb(b"\xfe\x00" + b"".join(rdbgen.key(0, f"key:{i}", rdbgen.string(f"{i:08d}" * 8))
                                            for i in range(n)))


MARK_BYTES = bytes(random.Random(13).choice(b"0123456789abcdef") for _ in range(MARK))
RDB = _rdb()
RESYNC_LINE = b"+FULLRESYNC " + b"ab" * 20 + b" 1000\r\n"
AFTER = command("SELECT", "0") + command("SET", "k", "v")


def _payload(form: str) -> bytes:
    if form == "length":
        return b"$%d\r\n" % len(RDB) + RDB
    return b"$EOF:" + MARK_BYTES + b"\r\n" + RDB + MARK_BYTES


@pytest.mark.parametrize("form", ["length", "eof"])
def test_the_payload_goes_on_in_pieces_then_the_commands(form):
    data = RESYNC_LINE + b"\n\n" + _payload(form) + AFTER
    out = frames_of(data)
    kinds = [i.kind for i in out]
    assert kinds[:4] == ["value", "keepalive", "keepalive", "payload-start"]
    pieces = [i for i in out if i.kind == "payload"]
    assert b"".join(p.data for p in pieces) == RDB and len(RDB) > 3 * PIECE
    assert all(len(p.data) <= PIECE for p in pieces)
    start = out[3]
    assert start.value == (("length", len(RDB)) if form == "length" else ("eof", MARK_BYTES))
    assert pieces[0].offset == start.offset + len(start.data)
    if form == "length":
        assert pieces[-1].last and kinds[-3] == "payload"
    else:
        end = out[-3]
        assert end.kind == "payload-end" and end.data == MARK_BYTES and end.offset == pieces[-1].offset + len(
            pieces[-1].data)
    assert values(out[-2:]) == [("value", ("*", [("$", b"SELECT"), ("$", b"0")])),
                                ("value", ("*", [("$", b"SET"), ("$", b"k"), ("$", b"v")]))]
    assert out[-2].offset == len(data) - len(AFTER)


@pytest.mark.parametrize("form", ["length", "eof"])
def test_the_payload_is_never_held_whole_and_cuts_do_not_matter(form):
    data = RESYNC_LINE + _payload(form) + AFTER
    whole = frames_of(data)
    rng = random.Random(form)
    for _ in range(5):
        cuts = sorted(rng.sample(range(1, len(data)), 50))
        f = RespFramer()
        out, prev = [], 0
        for c in cuts + [len(data)]:
            out += f.feed(data[prev:c])
            prev = c
            assert f.buffered < PIECE + MARK
        assert out + f.close() == whole


def test_the_end_mark_split_at_every_byte_is_found():
    data = RESYNC_LINE + _payload("eof") + AFTER
    end = len(RESYNC_LINE) + len(_payload("eof"))
    whole = frames_of(data)
    for cut in range(end - MARK - 2, end + 2):
        assert frames_of(data, cuts=[cut]) == whole, cut
        assert frames_of(data, cuts=[cut - 20, cut]) == whole, cut
    # a byte at a time: the framer keeps no more than the piece being made and 39 bytes
    f = RespFramer()
    out = []
    for b in data:
        out += f.feed(bytes([b]))
        assert f.buffered < PIECE + MARK
    assert out + f.close() == whole


def test_a_payload_that_looks_like_the_mark_but_is_not_goes_on():
    near = MARK_BYTES[:-1] + b"!"
    rdb_like = rdbgen.rdb(b"\xfe\x00" + rdbgen.key(0, "k", rdbgen.string(near)))
    data = RESYNC_LINE + b"$EOF:" + MARK_BYTES + b"\r\n" + rdb_like + MARK_BYTES + AFTER
    out = frames_of(data)
    assert b"".join(i.data for i in out if i.kind == "payload") == rdb_like


def test_the_reply_to_sync_is_a_bare_payload():
    data = command("SYNC") + b"$%d\r\n" % len(RDB) + RDB + AFTER
    out = frames_of(data)
    assert [i.kind for i in out][:2] == ["value", "payload-start"]
    assert b"".join(i.data for i in out if i.kind == "payload") == RDB
    # a bulk that is no RDB stays a bulk
    assert values(frames_of(bulk("REDIS-like, and no version") + bulk("plain text value")))[1] == (
        "value", ("$", b"plain text value"))


def test_lost_payload_bytes_keep_the_offsets_and_mark_the_piece_after():
    data = RESYNC_LINE + _payload("length") + AFTER
    f = RespFramer()
    cut = len(RESYNC_LINE) + 1000
    out = f.feed(data[:cut]) + f.gap(500) + f.feed(data[cut + 500:]) + f.close()
    pieces = [i for i in out if i.kind == "payload"]
    # what was held comes out at the gap; the piece after the lost bytes says so, at its place
    assert [p.resumed for p in pieces][:3] == [False, True, False]
    assert pieces[1].offset == pieces[0].offset + len(pieces[0].data) + 500
    assert values(out[-2:])[1][1][1][0] == ("$", b"SET") and out[-2].offset == len(data) - len(AFTER)


def test_a_stream_joined_midway_resynchronises_on_a_whole_value():
    # the tail of a line that is no value is passed over; the bulk after it reads whole and
    # the commands after it read whole too, so the bulk is where the stream goes on
    data = b"tail of something\r\n$3\r\nabc\r\n" + AFTER
    out = frames_of(data, synced=False)
    assert isinstance(out[0], Skipped) and out[0].offset == 0 and out[0].size == 19
    assert values(out[1:3]) == [("value", ("$", b"abc")), ("value", ("*", [("$", b"SELECT"), ("$", b"0")]))]


def test_the_end_of_the_stream_inside_a_frame_or_payload():
    out = frames_of(command("SET", "k", "v")[:-3])
    assert len(out) == 1 and out[0].truncated and out[0].value is None
    out = frames_of(RESYNC_LINE + _payload("length")[:5000])
    assert out[-1].kind == "payload" and out[-1].last and out[-1].truncated
