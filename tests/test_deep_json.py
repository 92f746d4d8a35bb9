"""JSON of any depth from packet data: a finding, never a RecursionError.

Every place a value is parsed as JSON (a stream request's filter, a document flagged JSON,
plain or snappy, an xattr value, an error body, DCP_OPEN's value) is given documents nested
10 levels, one less than the cap, the cap, one more, and 100,000 levels, as arrays
(``[[[1]]]``) and as objects (``{"a":{"a":1}}``). Up to the cap they decode as before; past
it each gives one ``json-too-deep`` finding that names the cap, and the frames around them
still decode. Through every command that reads them: ``hex``, ``decode`` (table and jsonl),
``validate`` and ``stats``.
"""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given, settings, strategies as st

from dcpgen import PRODUCER, Dcp
from frames import decode, invoke_cli
from dcpinspect.families.mcbp.messages import dcp as L
from dcpinspect.families.mcbp.messages.build import build_frame
from dcpinspect.families.mcbp.messages.codecs import jsontext
from dcpinspect.families.mcbp.messages.codecs.errors import CodecError
from dcpinspect.families.mcbp.messages.codecs.snappy import deflate
from dcpinspect.families.mcbp.messages.codecs.xattr import encode_xattrs, parse_xattrs
from dcpinspect.families.mcbp.messages.codecs.xerror import parse_xerror
from dcpinspect.families.mcbp.messages.frame import DecodeContext, decode_frame
from dcpinspect.families.mcbp.messages.values import json_text_ok
from dcpinspect.families.mcbp.rules.frame import check_frame
from dcpinspect.families.mcbp.rules.book import FRAME_RULES

CAP = jsontext.MAX_JSON_DEPTH
DEPTHS = (10, CAP - 1, CAP, CAP + 1, 100_000)
SHAPES = ("[", "{")


def nested(depth: int, shape: str) -> bytes:
    """A valid document ``depth`` levels deep."""
    if shape == "[":
        return b"[" * depth + b"1" + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


# -- where JSON comes from: one frame builder each ---------------------------------------------

STREAM_REQ_EXTRAS = L.STREAM_REQ.pack(flags=0, start_seqno=0, end_seqno=2**64 - 1, vbucket_uuid=0,
                                      snap_start_seqno=0, snap_end_seqno=0)


def stream_request(doc: bytes) -> bytes:
    return build_frame(0x80, 0x53, vbucket=1, opaque=0x21, extras=STREAM_REQ_EXTRAS, value=doc)


def error_response(doc: bytes) -> bytes:
    return build_frame(0x81, 0x53, status=0x04, opaque=0x21, value=doc, datatype=0x01)


def mutation(value: bytes, datatype: int) -> bytes:
    return build_frame(0x80, 0x57, vbucket=2, opaque=0x22, key=b"k", datatype=datatype,
                       extras=L.MUTATION.pack(by_seqno=1, rev_seqno=1), value=value)


def dcp_open(doc: bytes) -> bytes:
    return build_frame(0x80, 0x50, extras=L.OPEN.pack(flags=PRODUCER), key=b"deep", value=doc,
                       datatype=0x01, opaque=1)


SOURCES = {
    "stream-request": stream_request,
    "error-body": error_response,
    "json-document": lambda doc: mutation(doc, 0x01),
    "snappy-json-document": lambda doc: mutation(deflate(doc), 0x03),
    "xattr-value": lambda doc: mutation(encode_xattrs([("_sync", doc.decode())]) + b"{}", 0x05),
    "dcp-open-value": dcp_open,
}


@pytest.mark.parametrize("source", sorted(SOURCES))
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_source_reports_past_the_cap(source, shape, depth):
    msg = decode_frame(SOURCES[source](nested(depth, shape)), 0, DecodeContext())
    found = check_frame(msg)
    deep = [f for f in found if f.rule == "json-too-deep"]
    if depth > CAP:
        assert len(deep) == 1, [(f.rule, f.message) for f in found]
        assert f"deeper than {CAP} levels" in deep[0].message
        assert jsontext.MAX_JSON_DEPTH_ENV in deep[0].message
        assert deep[0].cls == FRAME_RULES["json-too-deep"].cls
    else:
        assert not deep
        assert "json-invalid" not in {f.rule for f in found}
    assert "value" in msg.fields or "value_hex" in msg.fields  # the bytes are still shown


def test_xattr_value_within_the_cap_is_parsed_past_it_kept_as_text():
    doc = nested(CAP, "[")
    msg = decode_frame(SOURCES["xattr-value"](doc), 0, DecodeContext())
    value = msg.fields["xattrs"]["_sync"]
    depth = 0
    while isinstance(value, list):
        value, depth = value[0], depth + 1
    assert depth == CAP
    msg = decode_frame(SOURCES["xattr-value"](nested(CAP + 1, "[")), 0, DecodeContext())
    assert msg.fields["xattrs"]["_sync"] == nested(CAP + 1, "[").decode()
    assert msg.fields["value"] == "{}"


def test_codecs_raise_codec_errors_past_the_cap():
    doc = nested(CAP + 1, "{")
    with pytest.raises(jsontext.JsonTooDeep, match=f"deeper than {CAP}"):
        parse_xerror(doc)
    with pytest.raises(jsontext.JsonTooDeep, match=f"deeper than {CAP}"):
        parse_xattrs(encode_xattrs([("a", doc.decode())]))
    deep: list[str] = []
    pairs, _ = parse_xattrs(encode_xattrs([("a", doc.decode()), ("b", "1")]), too_deep=deep)
    assert deep == ["a"] and pairs == [("a", doc.decode()), ("b", "1")]
    assert issubclass(jsontext.JsonTooDeep, CodecError) and issubclass(jsontext.JsonInvalid, CodecError)


def test_cap_is_checked_before_parsing():
    """Past the cap the verdict is 'too deep' even where the text is also broken, and the
    parser is never called: no recursion at any depth."""
    assert jsontext.verdict("[" * 1_000_000) == jsontext.TOO_DEEP
    assert jsontext.verdict('{"a":' * 1_000_000) == jsontext.TOO_DEEP
    assert jsontext.verdict("[" * CAP + "]" * CAP) == jsontext.OK
    assert jsontext.verdict("[" * CAP + "]" * (CAP - 1)) == jsontext.INVALID
    assert not json_text_ok("[" * (CAP + 1) + "]" * (CAP + 1))
    assert jsontext.verdict(nested(CAP + 1, "[").decode(), cap=CAP + 1) == jsontext.OK


def test_brackets_inside_strings_do_not_count():
    text = json.dumps(["[" * 10_000, {"k{[": "\\\"[[[" * 1000}])
    assert jsontext.nesting_depth(text) == 2
    assert jsontext.verdict(text) == jsontext.OK


def test_escapes_in_strings_do_not_hide_depth():
    """Every escape (\\n, \\", \\\\, \\u0022, ...) before a deep part: the pre-scan itself sees
    the depth, so the parser is never started on it."""
    head = json.dumps(["\n\t\\", '"', "\\\"", "\x01", "/\u2028", "\\"], ensure_ascii=True)[:-1]
    for deep in (nested(CAP + 1, "["), nested(CAP + 1, "{")):
        text = head + "," + deep.decode() + "]"
        assert json.loads(text)  # valid JSON
        assert jsontext.nesting_depth(text) == CAP + 2
        assert jsontext.exceeds(text)


def test_many_brackets_side_by_side_are_not_deep():
    text = json.dumps([[i] for i in range(10 * CAP)])
    assert jsontext.nesting_depth(text) == 2
    assert jsontext.verdict(text) == jsontext.OK


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab:,\n\t\x01é/'),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\a\nb', max_size=4), c, max_size=3),
    max_leaves=12)


def _depth(doc) -> int:
    if isinstance(doc, list):
        return 1 + max(map(_depth, doc), default=0)
    if isinstance(doc, dict):
        return 1 + max(map(_depth, doc.values()), default=0)
    return 0


@settings(max_examples=500, deadline=None)
@given(_JSON, st.sampled_from([None, 1]), st.booleans())
def test_prescan_depth_is_exact_on_json(doc, indent, ascii):
    text = json.dumps(doc, indent=indent, ensure_ascii=ascii)
    assert jsontext.nesting_depth(text) == _depth(doc)
    assert jsontext.verdict(text, cap=_depth(doc)) == jsontext.OK
    if _depth(doc):
        assert jsontext.verdict(text, cap=_depth(doc) - 1) == jsontext.TOO_DEEP


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet='[]{}"\\a,: ', max_size=60), st.integers(0, 12))
def test_the_cap_check_agrees_with_the_depth_on_any_text(text, cap):
    """``exceeds`` takes shortcuts (length, bracket counts, dropping empty pairs first): its
    answer is still that of the exact depth, on text of any shape, valid or not."""
    assert jsontext.exceeds(text, cap) == (jsontext.nesting_depth(text) > cap)


def test_frames_after_a_deep_one_still_decode():
    deep = SOURCES["json-document"](nested(100_000, "["))
    data = deep + build_frame(0x80, 0x5C, opaque=7)
    first = decode(data[:len(deep)])
    assert "json-too-deep" in {f.rule for f in check_frame(first)}
    second = decode(data[len(deep):], offset=len(deep))
    assert second.name == "DCP_NOOP" and second.opaque == 7 and not second.truncated


# -- through the commands ------------------------------------------------------------------------

#: the frames of a conversation that carry the document, in order, each with its own finding
CARRIERS = 6


def conversation(doc: bytes) -> Dcp:
    """HELO, DCP_OPEN whose value is ``doc``, a stream request whose filter is ``doc``
    answered by an error body that is ``doc``, then a stream with the document in a JSON
    mutation, an xattr value and a snappy JSON mutation."""
    d = Dcp().helo()
    d.client(dcp_open(doc))
    d.server(build_frame(0x81, 0x50, opaque=1), counted=False)
    d.control("enable_noop", "true")
    d.client(stream_request(doc))
    d.server(error_response(doc), counted=False)
    p = d.stream(2)
    p.marker(1, 3)
    p.mutation(value=doc)
    p.mutation(value=encode_xattrs([("_sync", doc.decode())]) + b"{}", datatype=0x05)
    p.mutation(value=deflate(doc), datatype=0x03)
    d.noop()
    return d


@pytest.fixture(scope="module", params=[(d, s) for d in DEPTHS for s in SHAPES], ids=lambda p: f"{p[0]}{p[1]}")
def inputs(request, tmp_path_factory):
    depth, shape = request.param
    d = conversation(nested(depth, shape))
    where = tmp_path_factory.mktemp(f"deep{depth}")
    pcap = d.pcap(where / "conv.pcap")
    hexfile = where / "conv.hex"
    hexfile.write_text(d.bytes().hex())
    return depth, len(d.frames), pcap, hexfile


def _expected(depth: int) -> int:
    return CARRIERS if depth > CAP else 0


def test_decode_jsonl(inputs):
    depth, frames, pcap, _ = inputs
    result = invoke_cli("decode", "-f", "jsonl", str(pcap))
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.decode().splitlines()]
    decoded = [r for r in records if r.get("kind") == "frame"]
    assert len(decoded) == frames
    deep = [f for r in decoded for f in r.get("findings", ()) if f["rule"] == "json-too-deep"]
    assert len(deep) == _expected(depth)
    assert not [f for r in decoded for f in r.get("findings", ()) if f["rule"] == "json-invalid"]
    assert decoded[-1]["opcode_name"] == "DCP_NOOP"


@pytest.mark.parametrize("command", ["hex", "decode"])
def test_tables(inputs, command):
    depth, frames, pcap, hexfile = inputs
    result = invoke_cli(command, str(hexfile if command == "hex" else pcap))
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert out.count("json-too-deep") == _expected(depth)
    assert f"{frames} frames" in out
    assert "Traceback" not in out + result.stderr.decode()


def test_validate(inputs):
    depth, frames, pcap, _ = inputs
    result = invoke_cli("validate", str(pcap))
    assert result.returncode in (0, 1), result.stderr
    assert f"{frames} frames checked" in result.stdout.decode()
    # the table folds a rule's repeats on a stream; JSON Lines has every occurrence
    lines = invoke_cli("validate", str(pcap), "--format", "jsonl").stdout.decode().splitlines()
    assert sum('"rule":"json-too-deep"' in line for line in lines) == _expected(depth)


def test_stats(inputs):
    depth, frames, pcap, _ = inputs
    result = invoke_cli("stats", str(pcap))
    assert result.returncode == 0, result.stderr
    assert f"{frames} frames" in result.stdout.decode()
    result = invoke_cli("stats", "-f", "json", str(pcap))
    assert result.returncode == 0, result.stderr
    json.loads(result.stdout)


def test_the_environment_raises_the_cap(tmp_path, monkeypatch):
    """DCPINSPECT_MAX_JSON_DEPTH=2000: a document 2000 deep is parsed (and its xattr written
    in full to jsonl), one 2001 deep is reported with the new cap."""
    import sys

    from frames import run_cli

    monkeypatch.setenv(jsontext.MAX_JSON_DEPTH_ENV, "2000")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(5000)  # for this test's own json.loads of the lines
    try:
        _raised_cap(tmp_path, run_cli)
    finally:
        sys.setrecursionlimit(limit)


def _raised_cap(tmp_path, run_cli):
    for depth, deep in ((2000, 0), (2001, CARRIERS)):
        pcap = conversation(nested(depth, "[")).pcap(tmp_path / f"d{depth}.pcap")
        result = run_cli("decode", "-f", "jsonl", str(pcap))
        assert result.returncode == 0, result.stderr.decode()[-2000:]
        lines = result.stdout.decode().splitlines()
        found = [f for line in lines for f in json.loads(line).get("findings", ()) if f["rule"] == "json-too-deep"]
        assert len(found) == deep
        assert all("deeper than 2000 levels" in f["message"] for f in found)
        if not deep:
            xattrs = [json.loads(line)["fields"]["xattrs"] for line in lines if '"xattrs"' in line]
            assert xattrs and xattrs[0]["_sync"] == json.loads(nested(depth, "["))
        result = run_cli("validate", str(pcap), "--format", "jsonl")
        assert result.returncode in (0, 1)
        assert sum('"rule":"json-too-deep"' in line for line in result.stdout.decode().splitlines()) == deep
