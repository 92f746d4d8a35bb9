
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dcpinspect.families.mcbp.messages.codecs.errors import CodecError
from dcpinspect.families.mcbp.messages.codecs.frameinfo import (
    REQUEST_FRAME_IDS,
    RESPONSE_FRAME_IDS,
    FrameInfo,
    describe_frame_info,
    encode_frame_info,
    encode_server_duration,
    parse_frame_infos,
    server_duration_us,
)
from corpus import corpus

CORPUS = corpus("dcp-gomemcached")


def test_name_tables():
    assert REQUEST_FRAME_IDS == {
        0: "barrier",
        1: "durability_requirement",
        2: "dcp_stream_id",
        3: "open_tracing_retired",
        4: "impersonate",
        5: "preserve_ttl",
        6: "impersonate_extra_privilege",
        7: "impersonate_with_token_auth_data_id",
    }
    assert RESPONSE_FRAME_IDS == {
        0: "server_recv_send_duration",
        1: "read_units",
        2: "write_units",
        3: "throttle_duration",
    }


def test_extended_id_and_size_vector():
    # spec §2.1 / §14 row 43 (KV request_test.cc ExtendedIdAndSize)
    data = bytes(range(37))
    raw = encode_frame_info(32, data)
    assert raw == bytes.fromhex("ff1116") + data
    assert parse_frame_infos(raw) == [FrameInfo(0, 32, 37, data, 3)]


def test_stream_id_frame():
    assert encode_frame_info(2, b"\x00\x07") == bytes.fromhex("220007")
    (fi,) = parse_frame_infos(memoryview(bytes.fromhex("220007")))
    assert fi == FrameInfo(0, 2, 2, b"\x00\x07", 1)
    assert describe_frame_info(fi, True) == {
        "id": 2, "name": "dcp_stream_id", "value": 7, "problem": None}


def test_real_system_event_framing():
    paths = [CORPUS / "unitTestData_header.0x5f.bin", CORPUS / "unitTestData_body.0x5f.bin"]
    header, body = (path.read_bytes() for path in paths)
    assert header[0] == 0x08 and header[2] == 3
    (fi,) = parse_frame_infos(body[:header[2]])
    assert describe_frame_info(fi, True)["value"] == 1


@pytest.mark.parametrize(
    "fid, length, header",
    [
        (0, 0, "00"),
        (14, 14, "ee"),
        (14, 15, "ef00"),
        (15, 0, "f000"),
        (15 + 255, 0, "f0ff"),
        (17, 18, "ff0203"),
        (3, 15 + 255, "3fff"),
        (15 + 255, 15 + 255, "ffffff"),
    ],
)
def test_escapes(fid, length, header):
    data = bytes(length)
    raw = encode_frame_info(fid, data)
    assert raw == bytes.fromhex(header) + data
    assert parse_frame_infos(raw) == [FrameInfo(0, fid, length, data, len(header) // 2)]


def test_back_to_back_offsets():
    raw = bytes.fromhex("00" "220007" "1301000a" "f001")
    assert parse_frame_infos(raw) == [
        FrameInfo(0, 0, 0, b"", 1),
        FrameInfo(1, 2, 2, b"\x00\x07", 1),
        FrameInfo(4, 1, 3, b"\x01\x00\x0a", 1),
        FrameInfo(8, 16, 0, b"", 2),
    ]
    assert parse_frame_infos(b"") == []


@pytest.mark.parametrize("hexstr", ["22", "2200", "f0", "0f", "ff00", "ff", "3f05aabb", "00" "21"])
def test_overflow(hexstr):
    with pytest.raises(CodecError, match="^frame info runs past framing extras$"):
        parse_frame_infos(bytes.fromhex(hexstr))


@pytest.mark.parametrize("fid, size", [(-1, 0), (271, 0), (0, 271)])
def test_encode_out_of_range(fid, size):
    with pytest.raises(CodecError):
        encode_frame_info(fid, bytes(size))


def describe(hexstr, is_request=True):
    (fi,) = parse_frame_infos(bytes.fromhex(hexstr))
    return describe_frame_info(fi, is_request)


@pytest.mark.parametrize(
    "hexstr, name, value",
    [
        ("00", "barrier", None),
        ("1101", "durability_requirement", {"level": 1, "level_name": "majority", "timeout_ms": None}),
        ("1102", "durability_requirement",
         {"level": 2, "level_name": "majority_and_persist_on_master", "timeout_ms": None}),
        ("13030064", "durability_requirement",
         {"level": 3, "level_name": "persist_to_majority", "timeout_ms": 100}),
        ("22ffff", "dcp_stream_id", 65535),
        ("43626f62", "impersonate", "bob"),
        ("455e6c646170", "impersonate", "^ldap"),
        ("50", "preserve_ttl", None),
        ("6461626364", "impersonate_extra_privilege", "abcd"),
        ("720102", "impersonate_with_token_auth_data_id", 0x0102),
    ],
)
def test_describe_valid_requests(hexstr, name, value):
    assert describe(hexstr) == {"id": int(hexstr[0], 16), "name": name, "value": value, "problem": None}


@pytest.mark.parametrize(
    "hexstr, problem",
    [
        ("0100", "barrier must have no data"),
        ("10", "must be 1 or 3 bytes"),
        ("120100", "must be 1 or 3 bytes"),
        ("1100", "invalid durability level 0"),
        ("1104", "invalid durability level 4"),
        ("13010000", "timeout 0x0000 is reserved"),
        ("1301ffff", "timeout 0xffff is reserved"),
        ("2101", "dcp_stream_id must be 2 bytes"),
        ("23000001", "dcp_stream_id must be 2 bytes"),
        ("220000", "stream id 0 is reserved"),
        ("3101", "retired frame info id 3"),
        ("40", "impersonate must not be empty"),
        ("5101", "preserve_ttl must have no data"),
        ("60", "impersonate_extra_privilege must not be empty"),
        ("7101", "impersonate_with_token_auth_data_id must be 2 bytes"),
        ("80", "unknown request frame info id 8"),
        ("f00a", "unknown request frame info id 25"),
    ],
)
def test_describe_request_problems(hexstr, problem):
    described = describe(hexstr)
    assert described["problem"] is not None and problem in described["problem"]


@pytest.mark.parametrize(
    "encoded, micros",
    [(93, 1331), (452, 20841), (1236, 119973), (0x0010, 62), (0, 0)],
)
def test_server_duration_vectors(encoded, micros):
    assert server_duration_us(encoded) == micros
    raw = encode_frame_info(0, encoded.to_bytes(2, "big"))
    assert describe_frame_info(parse_frame_infos(raw)[0], False) == {
        "id": 0, "name": "server_recv_send_duration", "value": micros, "problem": None}
    throttle = describe_frame_info(parse_frame_infos(encode_frame_info(3, raw[1:]))[0], False)
    assert throttle["name"] == "throttle_duration" and throttle["value"] == micros


@given(st.integers(2, 0xFFFF))
def test_server_duration_round_trip(encoded):
    assert encode_server_duration(server_duration_us(encoded)) == encoded


def test_server_duration_encode_saturates():
    assert encode_server_duration(10**12) == 0xFFFF
    assert encode_server_duration(-5) == 0


@pytest.mark.parametrize(
    "hexstr, name, value",
    [
        ("120005", "read_units", 5),
        ("22ffff", "write_units", 0xFFFF),
        ("02005d", "server_recv_send_duration", 1331),
    ],
)
def test_describe_responses(hexstr, name, value):
    assert describe(hexstr, False) == {
        "id": int(hexstr[0], 16), "name": name, "value": value, "problem": None}


@pytest.mark.parametrize(
    "hexstr, problem",
    [
        ("0100", "server_recv_send_duration must be 2 bytes"),
        ("13000001", "read_units must be 2 bytes"),
        ("20", "write_units must be 2 bytes"),
        ("3101", "throttle_duration must be 2 bytes"),
        ("420000", "unknown response frame info id 4"),
    ],
)
def test_describe_response_problems(hexstr, problem):
    described = describe(hexstr, False)
    assert described["problem"] is not None and problem in described["problem"]


frame_infos = st.lists(
    st.tuples(st.integers(0, 270), st.binary(max_size=270)), max_size=6)


@given(frame_infos)
def test_round_trip(items):
    raw = b"".join(encode_frame_info(fid, data) for fid, data in items)
    parsed = parse_frame_infos(raw)
    assert [(fi.id, fi.data) for fi in parsed] == items
    offset = 0
    for fi in parsed:
        assert fi.offset == offset and fi.length == len(fi.data)
        assert raw[offset:offset + fi.header_size] == encode_frame_info(fi.id, fi.data)[:fi.header_size]
        offset += fi.header_size + fi.length
    assert offset == len(raw)


@given(st.binary(max_size=64))
def test_random_bytes_raise_only_codec_error(raw):
    try:
        infos = parse_frame_infos(raw)
    except CodecError:
        return
    for fi in infos:
        for is_request in (True, False):
            described = describe_frame_info(fi, is_request)
            assert set(described) == {"id", "name", "value", "problem"}
