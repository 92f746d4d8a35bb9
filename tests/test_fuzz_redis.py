"""The Redis family's fuzz harnesses of fuzz/redis_harness.py (the Dragonfly journal reader,
.dfs sets, RESP with Dragonfly flows) on their seeds and on hypothesis' bytes: the checks an
atheris campaign runs, and each check seen to fail when its property breaks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))
import redis_harness  # noqa: E402
from make_corpus import redis_seeds  # noqa: E402

SEEDS = [(entry, name, data) for entry, items in redis_seeds().items() for name, data in items.items()]
CHECKS = {"journal": redis_harness.check_journal, "dfs": redis_harness.check_dfs, "flow": redis_harness.check_flow}


@pytest.mark.parametrize("entry,name,data", SEEDS, ids=[f"{e}-{n}" for e, n, _ in SEEDS])
def test_the_seeds_pass_their_harness(entry, name, data):
    CHECKS[entry](data)


def test_a_flow_seed_decodes_keys_and_journal_records():
    data = redis_seeds()["flow"]["full"]
    recs = redis_harness._session_records(*redis_harness._flow_stream(data)[:2], None)
    rows = [row for r in recs if hasattr(r, "json_rows") for row in r.json_rows()]
    assert [r["key"] for r in rows if r["kind"] == "key"] == ["user:1", "n", "user:2", "cfg"]
    assert [r["op"] for r in rows if r.get("protocol") == "journal"] == ["COMMAND", "LSN", "PING", "COMMAND", "LSN"]


def test_the_journal_harness_sees_a_framer_that_reads_again(monkeypatch):
    """The linear-work check: a framer that reads a record's SELECTs from their start again
    for every segment (as it once did) is caught."""
    from dcpinspect.families.redis.dragonfly import journal

    real = journal.selects
    monkeypatch.setattr(journal, "selects", lambda buf, q, dbid, most=None: real(buf, 0, None, most))
    with pytest.raises(redis_harness.PropertyFailure, match="journal lengths read"):
        redis_harness.check_journal(bytes([0]) + b"\x06\x01" * 1000 + b"\x0d")


def test_the_flow_harness_sees_chunks_decoded_otherwise(monkeypatch):
    real = redis_harness._session_records
    monkeypatch.setattr(redis_harness, "_session_records",
                        lambda r, m, chunk: real(r, m[:-1] if chunk else m, chunk))
    with pytest.raises(redis_harness.PropertyFailure):
        redis_harness.check_flow(redis_seeds()["flow"]["partial"])


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=500))
def test_arbitrary_journals_pass(data):
    redis_harness.check_journal(data)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=500))
def test_arbitrary_sets_pass(data):
    redis_harness.check_dfs(data)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=500))
def test_arbitrary_flows_pass(data):
    redis_harness.check_flow(data)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SEEDS), st.binary(max_size=64), st.integers(0, 400))
def test_seeds_with_bytes_changed_pass(seed, noise, at):
    entry, _, data = seed
    at = min(at, len(data))
    CHECKS[entry](data[:at] + noise + data[at + len(noise):])
