"""Real Redis clients captured mid-connection (Debian's redis-server and redis-cli on
loopback, tcpdump started after every connection opened): redis-cli's commands (quoted
arguments, a transaction, a big reply, PUBLISH), a subscriber's messages and a raw client's
pipelined and inline commands are each decoded, and every reply is paired with the command
it answers, with a positive latency."""

from __future__ import annotations

import json
import socket
import subprocess
import time

import servers
from servers import LOOPBACK, Redis, TcpDump, require, server_port, wait_until
from servers import RedisClient as Client

BIG = 300_000


def _read_until(sock: socket.socket, end: bytes, timeout: float = 5) -> bytes:
    buf = b""
    deadline = time.monotonic() + timeout
    while not buf.endswith(end) and time.monotonic() < deadline:
        buf += sock.recv(65536)
    return buf


def _traffic(tmp_path) -> tuple:
    require("redis-server", "redis-cli", "tcpdump", root=True)
    with Redis(tmp_path, port=server_port()) as redis:
        setup = Client(redis.port)
        setup.call("SET", "big", "b" * BIG)
        setup.call("RPUSH", "list", *[f"item-{i}" for i in range(500)])
        setup.close()
        # every connection opens before the capture starts
        cli = subprocess.Popen(["redis-cli", "-p", str(redis.port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        cli.stdin.write(b"PING\n")
        cli.stdin.flush()
        assert cli.stdout.readline() == b"PONG\n"
        sub = subprocess.Popen(["redis-cli", "-p", str(redis.port), "SUBSCRIBE", "news"], stdout=subprocess.PIPE)
        assert sub.stdout.readline() == b"subscribe\n"
        raw = socket.create_connection((LOOPBACK, redis.port), timeout=5)
        raw.sendall(b"PING\r\n")
        assert _read_until(raw, b"\r\n") == b"+PONG\r\n"
        path = tmp_path / "clients.pcap"
        dump = TcpDump(path, redis.port).start()
        try:
            # pipelined: three commands in one write, then inline commands with quotes
            raw.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n"
                        b"*2\r\n$3\r\nGET\r\n$1\r\na\r\n")
            assert _read_until(raw, b"$1\r\n1\r\n") == b"+OK\r\n:1\r\n$1\r\n1\r\n"
            raw.sendall(b'SET ikey "inline \\x41 value"\r\n')
            assert _read_until(raw, b"\r\n") == b"+OK\r\n"
            raw.sendall(b"GET ikey\r\n")
            assert _read_until(raw, b"\r\n").endswith(b"inline A value\r\n")
            script = (b'SET key "my value"\nGET key\nGET big\nLRANGE list 0 -1\nMULTI\nINCR counter\n'
                      b"SET other 'single quoted'\nEXEC\nPUBLISH news hello\nPUBLISH news world\n")
            out, _ = cli.communicate(script, timeout=30)
            assert b"my value" in out and b"QUEUED" in out
            assert wait_until(lambda: True, 0.2)
            time.sleep(0.3)
        finally:
            dump.stop()
            raw.close()
            sub.terminate()
            sub.wait(5)
    return path, redis.port


def test_every_command_and_reply_of_real_clients_joined_midway(tmp_path):
    path, port = _traffic(tmp_path)
    # the port is no Redis port: say so, as with tshark's "decode as" (the sniffer would
    # take the connections too, but only from the direction whose bytes showed them)
    res = servers.dcpinspect("decode", "-f", "jsonl", "--decode-as", f"{port}=redis", str(path))
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    frames = [r for r in rows if r["kind"] == "frame"]
    flows = {r["flow"] for r in frames}
    assert len(flows) == 3
    commands = [r for r in frames if r["role"] == "command"]
    replies = [r for r in frames if r.get("role") == "reply"]
    names = [r["command"][0].upper() for r in commands]
    assert names.count("PUBLISH") == 2 and "EXEC" in names and "LRANGE" in names
    assert ["SET", "ikey", "inline A value"] in [r["command"] for r in commands]
    assert ["SET", "key", "my value"] in [r["command"] for r in commands]
    assert ["SET", "other", "single quoted"] in [r["command"] for r in commands]
    # every command answered once, by a reply on its own connection that names its frame
    answered = [(r["flow"], r["reply_to"]) for r in replies]
    assert sorted(answered) == sorted((c["flow"], c["frame"]) for c in commands)
    assert all(r["latency_ms"] is not None and r["latency_ms"] > 0 for r in replies)
    big = [r for r in replies if r["length"] > BIG]
    assert len(big) == 1 and big[0]["type"] == "bulk"
    lrange = next(r for r in replies if r["type"] == "array" and len(r["value"]) == 500)
    assert lrange["value"][0] == "item-0"
    messages = [r for r in frames if r.get("role") == "message"]
    assert [m["value"] for m in messages] == [["message", "news", "hello"], ["message", "news", "world"]]
    assert not [f for r in rows for f in r.get("findings", [])]
    assert not [r for r in rows if r["kind"] in ("skipped", "gap")]

    res = servers.dcpinspect("stats", "--format", "json", "--decode-as", f"{port}=redis", str(path))
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    latency = report["redis"]["commands"]
    assert latency["PUBLISH"]["count"] == 2 and latency["GET"]["count"] >= 3
    for entry in latency.values():
        assert 0 < entry["latency_ms"]["p50"] <= entry["latency_ms"]["p99"] <= entry["latency_ms"]["max"]
    slowest = report["redis"]["slowest"]
    assert slowest and slowest[0]["latency_ms"] == max(e["latency_ms"]["max"] for e in latency.values())


def _reply(sock: socket.socket) -> bytes:
    buf = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return buf
        buf += chunk
        if buf.startswith((b"-", b":", b"+")) and buf.endswith(b"\r\n"):
            return buf
        if buf.startswith(b"*") and buf.endswith(b"\r\n"):
            try:
                _parse_array(buf)
                return buf
            except (ValueError, IndexError):
                continue


def _parse_array(buf: bytes) -> list[bytes]:
    lines = buf.split(b"\r\n")
    n, out, i = int(lines[0][1:]), [], 1
    for _ in range(n):
        size = int(lines[i][1:])
        data = b"\r\n".join(lines[i + 1:])[:size]
        if len(data) < size:
            raise ValueError
        out.append(data)
        i += 1 + data.count(b"\r\n") + 1
    return out


def test_inline_commands_split_as_the_real_server_splits_them(tmp_path):
    """redis-server is the judge: each inline RPUSH's words, read back with LRANGE, are the
    ones split_args gives; where it answers unbalanced quotes, split_args gives None."""
    import random

    from dcpinspect.families.redis.replication.inline import split_args

    require("redis-server")
    rng = random.Random(22)
    alphabet = [" ", "  ", "\t", "a", "b", "\"", "'", "\\", "\\x41", "\\x4", "\\n", "\\t", "\\'", "\\\"", "x", "\\q",
                "\v", "é"]
    lines = [b'RPUSH l "my value" plain', b"RPUSH l 'it\\'s'", b'RPUSH l "\\x41\\x4a\\n"', b'RPUSH l "a"b',
             b'RPUSH l "open']
    lines += ["RPUSH l " + "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
              for _ in range(150)]
    with Redis(tmp_path) as redis:
        sock = socket.create_connection((LOOPBACK, redis.port), timeout=5)
        checked = unbalanced = 0
        for line in lines:
            raw = line if isinstance(line, bytes) else line.encode()
            words = split_args(raw)
            sock.sendall(b"DEL l\r\n")
            assert _reply(sock).startswith(b":")
            sock.sendall(raw + b"\r\n")
            answer = _reply(sock)
            if answer.startswith(b"-ERR Protocol error: unbalanced quotes"):
                assert words is None, raw
                unbalanced += 1
                sock.close()
                sock = socket.create_connection((LOOPBACK, redis.port), timeout=5)
                continue
            assert words is not None, (raw, answer)
            if answer.startswith(b"-"):  # RPUSH with no value: the arity error
                assert len(words) <= 2, (raw, answer)
                continue
            sock.sendall(b"LRANGE l 0 -1\r\n")
            assert _parse_array(_reply(sock)) == words[2:], raw
            checked += 1
        sock.close()
    assert checked > 50 and unbalanced > 5


ENTRIES = 3000


def _stream_traffic(tmp_path) -> tuple:
    """A client that pipelines XRANGE (a nested reply of some 200 KB, several segments) and
    GET, and one that sends only inline commands, both connected before tcpdump starts."""
    require("redis-server", "tcpdump", root=True)
    with Redis(tmp_path, port=server_port()) as redis:
        setup = socket.create_connection((LOOPBACK, redis.port), timeout=5)
        setup.sendall(b"".join(b"XADD s 1526985054069-%d temperature %d place %s\r\n" % (i + 1, 30 + i % 10, b"x" * 40)
                               for i in range(ENTRIES)) + b"SET k \"after the stream\"\r\n")
        assert _read_until(setup, b"+OK\r\n", 20).count(b"\r\n") == 2 * ENTRIES + 1
        setup.close()
        arrays = socket.create_connection((LOOPBACK, redis.port), timeout=5)
        lines = socket.create_connection((LOOPBACK, redis.port), timeout=5)
        for sock in (arrays, lines):
            sock.sendall(b"PING\r\n")
            assert _read_until(sock, b"\r\n") == b"+PONG\r\n"
        path = tmp_path / "stream.pcap"
        dump = TcpDump(path, redis.port).start()
        try:
            arrays.sendall(b"*4\r\n$6\r\nXRANGE\r\n$1\r\ns\r\n$1\r\n-\r\n$1\r\n+\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
            assert _read_until(arrays, b"$16\r\nafter the stream\r\n", 20).startswith(b"*%d\r\n" % ENTRIES)
            lines.sendall(b'SET ikey "two words"\r\n')
            assert _read_until(lines, b"\r\n") == b"+OK\r\n"
            lines.sendall(b"GET ikey\r\nINCR n\r\n")
            assert _read_until(lines, b":1\r\n") == b"$9\r\ntwo words\r\n:1\r\n"
            time.sleep(0.3)
        finally:
            dump.stop()
            arrays.close()
            lines.close()
    return path, redis.port


def _decoded(path, port) -> list[dict]:
    res = servers.dcpinspect("decode", "-f", "jsonl", "--decode-as", f"{port}=redis", str(path))
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()]


def _paired(frames: list[dict]) -> list[tuple]:
    """Each connection's commands and replies in order: (command, reply type, reply value),
    asserting that each reply names its command's frame, after a positive latency."""
    out = []
    for flow in sorted({r["flow"] for r in frames}):
        commands = [r for r in frames if r["flow"] == flow and r["role"] == "command"]
        replies = [r for r in frames if r["flow"] == flow and r.get("role") == "reply"]
        for c, r in zip(commands, replies):
            assert r["reply_to"] == c["frame"] and r["latency_ms"] > 0
        out += [(c["command"], r["type"], r["value"]) for c, r in zip(commands, replies)]
        out += [(c["command"], None, None) for c in commands[len(replies):]]
        out += [(None, r["type"], r["value"]) for r in replies[len(commands):]]
    return sorted(out, key=repr)


def test_inline_clients_and_a_nested_reply_joined_midway_are_paired(tmp_path):
    path, port = _stream_traffic(tmp_path)
    rows = _decoded(path, port)
    frames = [r for r in rows if r["kind"] == "frame"]
    got = {(tuple(c), t) for c, t, _ in _paired(frames)}
    # the inline client's commands, joined mid-way, are decoded (split as Redis splits them)
    assert got == {(("XRANGE", "s", "-", "+"), "array"), (("GET", "k"), "bulk"), (("SET", "ikey", "two words"), "simple"),
                   (("GET", "ikey"), "bulk"), (("INCR", "n"), "integer")}
    xrange = next(r for r in frames if r.get("type") == "array" and r.get("role") == "reply")
    assert len(xrange["value"]) == ENTRIES and xrange["value"][-1][0] == f"1526985054069-{ENTRIES}"
    assert not [r for r in rows if r["kind"] in ("skipped", "gap")]
    assert not [f for r in rows for f in r.get("findings", [])]


def test_replies_whose_head_the_capture_missed_resynchronise_where_they_pair_with_the_commands(tmp_path):
    """The record that carried the XRANGE reply's head is taken out of the real capture:
    the server's bytes go on inside the nested reply, whose entries read whole as replies;
    the place taken is the one whose replies pair with the commands waiting (XRANGE, an
    array; GET, a string), so that GET is answered by its own reply."""
    from dcpinspect.sources.capture import read_records
    from dcpinspect.transport import synth

    path, port = _stream_traffic(tmp_path)
    records = list(read_records(path))
    head = next(i for i, r in enumerate(records) if b"*%d\r\n*2\r\n$" % ENTRIES in r.data)
    assert b"$16\r\nafter the stream\r\n" not in records[head].data  # the reply goes on after it
    cut = tmp_path / "cut.pcap"
    synth.write_pcap(cut, [(r.ts, r.data) for i, r in enumerate(records) if i != head])
    rows = _decoded(cut, port)
    frames = [r for r in rows if r["kind"] == "frame" and r["flow"].endswith(f":{port}")]
    paired = _paired([r for r in frames if "XRANGE" in str([c.get("command") for c in frames
                                                              if c["flow"] == r["flow"]])])
    assert [(c, t, v) for c, t, v in paired if c == ["GET", "k"]] == [(["GET", "k"], "bulk", "after the stream")]
    assert [t for c, t, _ in paired if c and c[0] == "XRANGE"] in (["array"], [None])
    assert [r for r in rows if r["kind"] in ("gap", "skipped") and r.get("direction") == "s2c"]
