"""Detection on ports no family owns: a connection is taken on strong evidence only, from
both directions (``families/*/sniff.py``), other protocols' openings ruled out first
(``transport/foreign.py``)."""

from __future__ import annotations

import struct

import pytest

from frames import frame, request, response
from dcpinspect.families.mcbp.sniff import Sniffer as McbpSniffer
from dcpinspect.transport.foreign import foreign

GET, SET, NOOP = 0x00, 0x01, 0x0A


def ssl2_client_hello() -> bytes:
    """An SSLv2-compatible ClientHello (RFC 6101 appendix E.1): a two-byte header with the
    top bit set, then CLIENT-HELLO, version 3.1, three cipher specs, a 16-byte challenge."""
    ciphers = bytes.fromhex("00002f 000035 00000a")
    body = b"\x01\x03\x01" + struct.pack(">HHH", len(ciphers), 0, 16) + ciphers + bytes(range(16))
    return struct.pack(">H", 0x8000 | len(body)) + body


def verdict(sniffer, chunks) -> bool | None:
    """What the sniffer says once fed ``chunks`` (direction, bytes), a byte at a time."""
    got = None
    for direction, data in chunks:
        for b in data:
            got = sniffer.add(direction, bytes([b]))
            if got is not None:
                return got
    return got


@pytest.mark.parametrize("head,name", [
    (ssl2_client_hello(), "ssl2"), (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", "tls"),
    (b"\x17\x03\x03\x00\x45", "tls"), (b"GET /index.html HTTP/1.1\r\n", "http"), (b"HTTP/1.1 200 OK\r\n", "http"),
    (b"SSH-2.0-OpenSSH_9.6\r\n", "greeting"), (b"+OK POP3 server ready\r\n", "greeting"),
    (b"220 mail.example.com ESMTP\r\n", "greeting"), (b"* OK IMAP4rev1\r\n", "greeting"),
    (b"STLS\r\n", "mail"), (b"EHLO client\r\n", "mail"), (b"a1 STARTTLS\r\n", "mail"),
    (request(GET, key=b"k"), None), (b"*1\r\n$4\r\nPING\r\n", None),
])
def test_other_protocols_openings(head, name):
    assert foreign(head) == name
    if name == "greeting":  # a greeting is the server speaking first; a reply is not one
        assert foreign(head, first=False) is None


@pytest.mark.parametrize("chunks,expected", [
    # an SSLv2 hello: its first byte is MCBP's request magic, and its lengths could pass
    ([("c2s", ssl2_client_hello())], False),
    ([("c2s", request(GET, key=b"k", opaque=7))], None),  # one frame: not yet
    ([("c2s", request(GET, key=b"k", opaque=7)), ("s2c", response(GET, value=b"v", opaque=7, extras=b"\0" * 4))],
     True),  # answered: the opcode and opaque echoed
    ([("c2s", request(GET, key=b"k", opaque=7)), ("s2c", response(SET, opaque=8))], None),  # answers nothing asked
    ([("c2s", request(NOOP, opaque=1) + request(NOOP, opaque=2) + request(GET, key=b"a", opaque=3))], True),  # a row
    ([("c2s", request(NOOP, opaque=1) + b"\x00" * 24)], False),  # then no header
    ([("c2s", frame(0x80, 0x01, key=b"k", datatype=0x08))], False),  # a datatype bit nobody defined
    ([("c2s", request(NOOP)), ("s2c", frame(0x81, NOOP, status=0x7777))], False),  # a status nobody defined
    ([("c2s", b"\x16\x03\x01\x00\x05hello")], False),
])
def test_mcbp_is_taken_on_evidence_alone(chunks, expected):
    assert verdict(McbpSniffer(False), chunks) is expected


def test_mcbp_joined_midstream_needs_frames_in_a_row():
    tail = b"the end of a value" + request(NOOP, opaque=1)
    assert verdict(McbpSniffer(True), [("c2s", tail)]) is None
    assert verdict(McbpSniffer(True), [("c2s", tail + request(NOOP, opaque=2) + request(NOOP, opaque=3))]) is True


from hypothesis import given, settings, strategies as st  # noqa: E402

from dcpinspect.families.redis.replication.sniff import Sniffer as RedisSniffer  # noqa: E402

_PIECES = st.one_of(st.binary(max_size=64), st.sampled_from([
    b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", b"+OK\r\n", b"$5\r\nhello\r\n", b"*-1\r\n", b"%1\r\n+a\r\n:1\r\n", b"\r\n",
    b"|1\r\n+x\r\n+y\r\n+z\r\n", b"*9999999\r\n", b"$99999\r\n", request(NOOP), response(NOOP), b"\x16\x03\x01"]))


@settings(max_examples=300, deadline=None)
@given(st.booleans(), st.lists(st.tuples(st.sampled_from(["c2s", "s2c"]), st.lists(_PIECES, max_size=6)),
                               max_size=12))
def test_sniffers_take_any_bytes(midstream, chunks):
    """Whatever the bytes and their cuts: a verdict or more please, never an exception, and
    the bytes held bounded by those given."""
    for sniffer in (McbpSniffer(midstream), RedisSniffer(midstream)):
        given_bytes = 0
        for direction, pieces in chunks:
            data = b"".join(pieces)
            given_bytes += len(data)
            got = sniffer.add(direction, data)
            assert got in (True, False, None)
            assert len(sniffer) <= given_bytes + 64
            if got is not None:
                break


def _resp(*words: bytes) -> bytes:
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words)


def test_a_redis_connection_joined_midway_is_turned_round_when_its_bytes_name_the_client(tmp_path):
    """A server on port 61000, its clients on lower ports, captured without their SYNs: the
    lower port is guessed the server's. A client's command arrays answered by replies, and a
    master's stream acknowledged by its replica, say which side is the client; an inline
    client (whose lines alone say nothing) is then decoded as the server's, each connection
    the right way round."""
    from dcpinspect.engines.records import decode_capture_file
    from dcpinspect.sessions.captured import Captured
    from dcpinspect.transport import synth

    server = ("10.0.0.2", 61000)
    conns = [
        (("10.0.0.1", 40001), [("c2s", _resp(b"SET", b"k", b"v")), ("s2c", b"+OK\r\n"), ("c2s", _resp(b"GET", b"k")),
                               ("s2c", b"$1\r\nv\r\n")]),
        (("10.0.0.3", 40002), [("s2c", _resp(b"SELECT", b"0") + _resp(b"SET", b"a", b"1")),
                               ("c2s", _resp(b"REPLCONF", b"ACK", b"42"))]),
        (("10.0.0.1", 40003), [("c2s", b"SET x 1\r\n"), ("s2c", b"+OK\r\n"), ("c2s", b"INCR n\r\n"),
                               ("s2c", b":1\r\n")]),
    ]
    frames = []
    for client, messages in conns:
        frames += synth.tcp_conversation(messages, client=client, server=server, handshake=False, close=None)
    path = tmp_path / "midway.pcap"
    synth.write_pcap(path, frames)
    got = [(item.flow, item.direction, item.msg.name) for item in decode_capture_file(path)
           if isinstance(item, Captured)]
    flows = {flow for flow, _, _ in got}
    assert flows == {(*client, *server) for client, _ in conns}  # every one, the server's side its own
    by_flow = {f: [(d, n) for g, d, n in got if g == f] for f in flows}
    assert by_flow[("10.0.0.1", 40001, *server)] == [("c2s", "SET"), ("s2c", "+OK"), ("c2s", "GET"), ("s2c", "bulk")]
    assert [d for d, n in by_flow[("10.0.0.3", 40002, *server)] if n == "REPLCONF"] == ["c2s"]
    assert by_flow[("10.0.0.1", 40003, *server)] == [("c2s", "SET"), ("s2c", "+OK"), ("c2s", "INCR"), ("s2c", "integer")]
