import pytest
from hypothesis import given
from hypothesis import strategies as st

from dcpinspect.families.mcbp.messages.codecs.errors import CodecError
from dcpinspect.families.mcbp.messages.codecs.xerror import encode_xerror, parse_xerror

# spec §14 row 41: ERANGE (0x22) STREAM_REQ response with an XERROR body
ROW_41 = bytes.fromhex(
    "8153000000012200000000550000100100000000000000007b226572726f72223a7b22636f6e7465787422"
    "3a22736e6170207374617274207365716e6f203c3d207374617274207365716e6f203c3d20736e617020"
    "656e64207365716e6f206973207265717569726564227d7d"
)


def test_row_41():
    assert ROW_41[1] == 0x53 and ROW_41[5] == 0x01  # datatype JSON
    body = ROW_41[24:]
    assert len(body) == 0x55
    assert parse_xerror(memoryview(body)) == {
        "context": "snap start seqno <= start seqno <= snap end seqno is required",
        "ref": None,
        "extra": {},
    }


def test_context_ref_and_extra_members():
    body = b'{"error":{"context":"Request must include extras of length 48",' \
           b'"ref":"8c3c7a7e-6a34-4a8c-9e0c-2b1b7b2a1c11"},"manifest_uid":"1a"}'
    assert parse_xerror(body) == {
        "context": "Request must include extras of length 48",
        "ref": "8c3c7a7e-6a34-4a8c-9e0c-2b1b7b2a1c11",
        "extra": {"manifest_uid": "1a"},
    }
    assert parse_xerror(b'{"manifest_uid":"0"}') == {
        "context": None, "ref": None, "extra": {"manifest_uid": "0"}}


@pytest.mark.parametrize(
    "body, message",
    [
        (b"", "not valid JSON"),
        (b"\xff", "not valid JSON"),
        (b'{"error":', "not valid JSON"),
        (b'{"error":NaN}', "not valid JSON"),
        (b"[" * 100_000, "nests deeper than 512 levels"),
        (b'["error"]', "not a JSON object"),
        (b'{"error":"oops"}', '"error" member is not a JSON object'),
        (b'{"error":{"context":5}}', '"error.context" is not a string'),
        (b'{"error":{"ref":[]}}', '"error.ref" is not a string'),
    ],
)
def test_invalid(body, message):
    with pytest.raises(CodecError, match=message):
        parse_xerror(body)


@given(st.none() | st.text(), st.none() | st.text())
def test_round_trip(context, ref):
    assert parse_xerror(encode_xerror(context, ref)) == {"context": context, "ref": ref, "extra": {}}


@given(st.binary(max_size=64))
def test_random_bytes_raise_only_codec_error(raw):
    try:
        parse_xerror(raw)
    except CodecError:
        pass
