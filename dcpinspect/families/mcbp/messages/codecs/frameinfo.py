"""Flexible framing extras: FrameInfo objects of magic 0x08/0x18 frames (spec §2)."""

from dataclasses import dataclass

from .errors import CodecError

REQUEST_FRAME_IDS = {
    0: "barrier",
    1: "durability_requirement",
    2: "dcp_stream_id",
    3: "open_tracing_retired",
    4: "impersonate",
    5: "preserve_ttl",
    6: "impersonate_extra_privilege",
    7: "impersonate_with_token_auth_data_id",
}

RESPONSE_FRAME_IDS = {
    0: "server_recv_send_duration",
    1: "read_units",
    2: "write_units",
    3: "throttle_duration",
}

DURABILITY_LEVELS = {
    1: "majority",
    2: "majority_and_persist_on_master",
    3: "persist_to_majority",
}

ESCAPE = 0x0F
MAX_ESCAPED = ESCAPE + 0xFF  # largest id or length expressible


@dataclass(frozen=True)
class FrameInfo:
    offset: int  # of the tag byte, relative to the start of the framing extras
    id: int
    length: int
    data: bytes
    header_size: int  # tag byte plus any escape bytes


def parse_frame_infos(buf: bytes | memoryview) -> list[FrameInfo]:
    """Split a framing-extras section into its FrameInfo objects."""
    data = bytes(buf)
    infos = []
    pos = 0
    while pos < len(data):
        start = pos
        tag = data[pos]
        pos += 1
        fid, length = tag >> 4, tag & 0x0F
        if fid == ESCAPE:
            if pos >= len(data):
                raise CodecError("frame info runs past framing extras")
            fid += data[pos]
            pos += 1
        if length == ESCAPE:
            if pos >= len(data):
                raise CodecError("frame info runs past framing extras")
            length += data[pos]
            pos += 1
        if pos + length > len(data):
            raise CodecError("frame info runs past framing extras")
        infos.append(FrameInfo(start, fid, length, data[pos:pos + length], pos - start))
        pos += length
    return infos


def encode_frame_info(id: int, data: bytes) -> bytes:
    """Encode one FrameInfo with the canonical escapes."""
    data = bytes(data)
    if not 0 <= id <= MAX_ESCAPED:
        raise CodecError(f"frame info id {id} out of range 0..{MAX_ESCAPED}")
    if len(data) > MAX_ESCAPED:
        raise CodecError(f"frame info data of {len(data)} bytes exceeds {MAX_ESCAPED}")
    id_nibble, len_nibble = min(id, ESCAPE), min(len(data), ESCAPE)
    out = bytearray([(id_nibble << 4) | len_nibble])
    if id_nibble == ESCAPE:
        out.append(id - ESCAPE)
    if len_nibble == ESCAPE:
        out.append(len(data) - ESCAPE)
    return bytes(out) + data


def server_duration_us(encoded: int) -> int:
    """Decode a u16 server/throttle duration to microseconds (rounded)."""
    return round(encoded ** 1.74 / 2)


def encode_server_duration(us: float) -> int:
    """Encode microseconds as the u16 duration form, saturating at 0xFFFF."""
    return min(round((max(us, 0) * 2) ** (1 / 1.74)), 0xFFFF)


def _u16(data: bytes) -> int:
    return int.from_bytes(data, "big")


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="backslashreplace")


def _exact_len(fi: FrameInfo, size: int) -> str | None:
    if fi.length != size:
        return f"{REQUEST_FRAME_IDS.get(fi.id, 'frame info')} must be {size} bytes (got {fi.length})"
    return None


def _describe_durability(data: bytes) -> tuple[object, str | None]:
    if len(data) not in (1, 3):
        return data.hex(), f"durability_requirement must be 1 or 3 bytes (got {len(data)})"
    level = data[0]
    value = {"level": level, "level_name": DURABILITY_LEVELS.get(level), "timeout_ms": None}
    problem = None if level in DURABILITY_LEVELS else f"invalid durability level {level}"
    if len(data) == 3:
        timeout = _u16(data[1:])
        value["timeout_ms"] = timeout
        if timeout in (0x0000, 0xFFFF) and problem is None:
            problem = f"durability timeout 0x{timeout:04x} is reserved"
    return value, problem


def _describe_request(fi: FrameInfo) -> tuple[object, str | None]:
    data = fi.data
    if fi.id in (0, 5):  # barrier, preserve_ttl
        if fi.length:
            return data.hex(), f"{REQUEST_FRAME_IDS[fi.id]} must have no data (got {fi.length} bytes)"
        return None, None
    if fi.id == 1:
        return _describe_durability(data)
    if fi.id in (2, 7):  # dcp_stream_id, impersonate_with_token_auth_data_id
        problem = _exact_len(fi, 2)
        if problem:
            return data.hex(), problem
        value = _u16(data)
        if fi.id == 2 and value == 0:
            return value, "stream id 0 is reserved (means no stream id)"
        return value, None
    if fi.id in (4, 6):  # impersonate, impersonate_extra_privilege
        problem = None if data else f"{REQUEST_FRAME_IDS[fi.id]} must not be empty"
        return _text(data), problem
    if fi.id == 3:
        return data.hex(), "retired frame info id 3 (unknown to current servers)"
    return data.hex(), f"unknown request frame info id {fi.id}"


def _describe_response(fi: FrameInfo) -> tuple[object, str | None]:
    name = RESPONSE_FRAME_IDS.get(fi.id)
    if name is None:
        return fi.data.hex(), f"unknown response frame info id {fi.id}"
    if fi.length != 2:
        return fi.data.hex(), f"{name} must be 2 bytes (got {fi.length})"
    raw = _u16(fi.data)
    if fi.id in (0, 3):  # durations
        return server_duration_us(raw), None
    return raw, None


def describe_frame_info(fi: FrameInfo, is_request: bool) -> dict:
    """Decode and validate one FrameInfo.

    Returns ``{"id", "name", "value", "problem"}``; ``problem`` is None when the
    frame info is valid, else a short description of the rule it breaks.
    """
    names = REQUEST_FRAME_IDS if is_request else RESPONSE_FRAME_IDS
    value, problem = (_describe_request if is_request else _describe_response)(fi)
    return {"id": fi.id, "name": names.get(fi.id), "value": value, "problem": problem}
