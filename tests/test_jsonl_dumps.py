"""``outputs.jsonl.dumps`` writes exactly what ``json.dumps(..., ensure_ascii=True,
separators=(",", ":"), default=str)`` writes, whichever encoder it uses underneath."""

from __future__ import annotations

import datetime
import enum
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcpinspect.families.mcbp.messages import record
from dcpinspect.outputs import jsonl


def reference(record) -> str:
    return json.dumps(record, ensure_ascii=True, separators=(",", ":"), default=str)


@pytest.fixture(autouse=True)
def _fast_encoder():
    """orjson as a long run has it (it is imported once a run has written some lines)."""
    jsonl.load_orjson()


class Colour(enum.IntEnum):
    RED = 1


class Name(str, enum.Enum):
    ALPHA = "alpha"


scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(), st.integers(min_value=-2**70, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=1e-6, max_value=1e-3), st.floats(min_value=1e14, max_value=1e18),
    st.text(), st.text(alphabet=st.characters(max_codepoint=0x80)),
    st.binary(max_size=8), st.sampled_from([Colour.RED, Name.ALPHA, datetime.datetime(2026, 11, 22, 12, 0)]),
)
trees = st.recursive(
    scalars,
    lambda kids: st.one_of(st.lists(kids, max_size=4),
                           st.dictionaries(st.text(max_size=6), kids, max_size=4),
                           st.dictionaries(st.integers(0, 9), kids, max_size=2)),
    max_leaves=12,
)


@settings(max_examples=2000)
@given(st.dictionaries(st.text(max_size=8), trees, max_size=6))
def test_same_text_as_the_standard_library(record):
    assert jsonl.dumps(record) == reference(record)


@pytest.mark.parametrize("value", [1e-5, 9.99e-5, 1e-4, 1e15, 9.999999999999998e15, 1e16, 1e300, 5e-324,
                                   float("nan"), float("inf"), -float("inf"), -0.0, 1700000000.0003])
def test_floats_at_the_edges_of_the_two_encoders(value):
    assert jsonl.dumps({"v": value, "w": [value]}) == reference({"v": value, "w": [value]})


def test_real_frame_records_are_written_alike():
    """Every record the shipped samples produce, through both paths."""
    from dcpinspect.engines.records import decode_capture_file
    from dcpinspect.engines.connections import Captured

    samples = Path(__file__).resolve().parent.parent / "samples"
    n = 0
    for name in ("dcp-session.pcap", "dcp-lossy.pcapng", "memcached-binary.pcap"):
        for item in decode_capture_file(samples / name):
            if isinstance(item, Captured):
                rec = record.frame_record(item.msg, kind="frame", frame=item.number, ts=item.ts, flow="f",
                                         direction=item.direction)
                assert jsonl.dumps(rec) == reference(rec)
                n += 1
    assert n > 100


def test_fast_encoder_is_in_use_when_installed():
    """The comparison above exercised the fast path, not only the fallback."""
    orjson = pytest.importorskip("orjson")
    rec = {"kind": "frame", "ts": 1700000000.0003, "key": "doc::1", "fields": {"by_seqno": 7}}
    assert orjson.dumps(rec, option=jsonl._ORJSON_OPTS).decode() == jsonl.dumps(rec)


_TOKENS = st.sampled_from([b"null", b"nul", b"0.0000", b"0.000", b"1e5,", b"1e-5}", b"e-]", b"e5", b"1E5,",
                           b"\x7f", b"\x80", b"e", b"-", b",", b"}", b"]", b"0", b"a", b'"'])


@pytest.mark.skipif(jsonl._plain is jsonl.plain_orjson, reason="built without the C lane")
@settings(max_examples=3000, deadline=None)
@given(st.one_of(st.lists(_TOKENS, max_size=12).map(b"".join), st.binary(max_size=40)))
def test_the_one_pass_check_is_the_python_one(out):
    assert jsonl._plain(out) == jsonl.plain_orjson(out)
    assert jsonl._plain(out, True) == jsonl.plain_orjson(out, True)


@settings(max_examples=2000)
@given(trees)
def test_the_finite_walks_agree(tree):
    """orjson's null is None or a NaN or infinity: the C walk and the Python one say alike
    whether a record holds one of the latter."""
    assert jsonl._finite(tree) == jsonl.finite(tree)
    assert jsonl.finite({"a": [1, {"b": (2.5, float("nan"))}]}) is False and jsonl.finite({"a": None}) is True


def test_finding_rows_with_nulls_take_the_fast_encoder(monkeypatch):
    """A finding's row holds None (stream_id, related_frame): written by orjson, not twice."""
    pytest.importorskip("orjson")
    row = {"rule": "seqno-regression", "frame": 13, "ts": 1700000000.00012, "stream_id": None, "related_frame": None}
    want = reference(row)

    def refused(record):
        raise AssertionError("written by the standard library")

    monkeypatch.setattr(jsonl, "_stdlib", refused)
    assert jsonl.dumps(row) == want
    with pytest.raises(AssertionError):
        jsonl.dumps({**row, "ts": float("nan")})


def test_a_short_run_writes_without_orjson_and_a_long_one_with_it():
    """A run's first lines are the standard library's (orjson is not imported for a small
    file's few), then orjson writes: the same bytes either way."""
    pytest.importorskip("orjson")
    code = ("import json, sys\nfrom dcpinspect.outputs import jsonl\nrec = {'k': 'v', 'n': [1, 2.5, None]}\n"
            "lines = [jsonl.dumps_line(dict(rec, i=i)) for i in range(jsonl.STDLIB_LINES)]\n"
            "before = 'orjson' in sys.modules\n"
            "lines += [jsonl.dumps_line(dict(rec, i=i)) for i in range(jsonl.STDLIB_LINES, 2 * jsonl.STDLIB_LINES)]\n"
            "want = [(json.dumps(dict(rec, i=i), separators=(',', ':')) + '\\n').encode() for i in range(len(lines))]\n"
            "print(before, 'orjson' in sys.modules, lines == want)")
    root = Path(__file__).resolve().parents[1]
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(root)})
    assert got.stdout.split() == ["False", "True", "True"], got.stderr
