"""The RESP fuzz harness (fuzz/resp_harness.py) on real conversations with every cut and
chunk choice, and on hypothesis' bytes: the same checks an atheris campaign runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))
from resp_harness import CHUNKS, check_resp  # noqa: E402

from test_redis_resp import bulk, command  # noqa: E402

CLIENT = (command("SET", "k", "v") + b'SET key "my value" \'x\'\r\n' + command("SUBSCRIBE", "a") + b"GET \"bad\r\n"
          + command("GET", "k") + b"PING\r\n")
SERVER = (b"+OK\r\n+OK\r\n*3\r\n" + bulk("subscribe") + bulk("a") + b":1\r\n*3\r\n" + bulk("message") + bulk("a")
          + bulk("hi") + b"-ERR Protocol error\r\n$1\r\nv\r\n*2\r\n*2\r\n$3\r\n1-0\r\n*0\r\n%1\r\n+a\r\n:1\r\n"
          + b">2\r\n+x\r\n+y\r\nnot resp at all\r\n$10\r\nshort")


@pytest.mark.parametrize("synced", [0, 1])
@pytest.mark.parametrize("chunk", range(len(CHUNKS)))
@pytest.mark.parametrize("skip", [0, 3, 17, 40])
def test_real_conversations_pass_the_harness(synced, chunk, skip):
    body = CLIENT + SERVER[skip:]
    cut = len(CLIENT) * 256 // len(body) + 1
    check_resp(bytes([synced | chunk << 1, cut]) + body)


def test_the_harness_sees_a_framer_that_loses_bytes(monkeypatch):
    """The check itself: a framer whose frames leave a byte uncovered is caught."""
    import resp_harness

    real = resp_harness._frames
    monkeypatch.setattr(resp_harness, "_frames", lambda data, synced, chunk, *told: real(data[:-1], synced, chunk, *told))
    with pytest.raises(AssertionError):
        check_resp(bytes([1, 128]) + CLIENT + SERVER)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600))
def test_arbitrary_inputs_pass_the_harness(data):
    check_resp(data)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([b"*", b"$", b"+", b":", b"%", b">", b"-", b"\r\n", b"\n", b"1", b"2", b"-1", b"?",
                                 b"OK", b"\"", b"'", b"\\x4", b" ", b"SET", b"_", b",", b"#t", b"|1", b".", b";0"]),
                max_size=120), st.integers(0, 255), st.integers(0, 255))
def test_resp_shaped_inputs_pass_the_harness(parts, first, cut):
    check_resp(bytes([first, cut]) + b"".join(parts))
