"""The RDB fuzz harness (fuzz/rdb_harness.py) on the corpus files with every header and
chunk choice, and on hypothesis' bytes: the same checks an atheris campaign runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))
from rdb_harness import CAP, HEADERS, check_rdb  # noqa: E402
from corpus import corpus

CORPUS = corpus("rdb-librdb")
SMALL = sorted(p for p in CORPUS.glob("*.rdb") if p.stat().st_size < 2000)


@pytest.mark.parametrize("path", SMALL, ids=lambda p: p.name)
def test_corpus_files_pass_the_harness(path):
    body = path.read_bytes()
    for first in (len(HEADERS) - 1, 4 * len(HEADERS) + len(HEADERS) - 1, 255 - (255 % len(HEADERS)) - 1):
        check_rdb(bytes([first]) + body)


def test_the_harness_sees_a_broken_decoder(monkeypatch):
    """The check itself: a decoder whose chunked records differ is caught."""
    import rdb_harness

    real = rdb_harness._run
    monkeypatch.setattr(rdb_harness, "_run", lambda data, chunk: real(data, chunk) if chunk is None
                        else real(data[:-1], chunk))
    with pytest.raises(AssertionError):
        check_rdb(bytes([len(HEADERS) - 1]) + (CORPUS / "single_key.rdb").read_bytes())


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600))
def test_arbitrary_inputs_pass_the_harness(data):
    check_rdb(data)


def test_a_lying_length_is_not_held():
    check_rdb(b"\x00\x00\x03key\x80\xff\xff\xff\xff" + b"x" * (3 * CAP))
