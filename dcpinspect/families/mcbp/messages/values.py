"""Value decoders, one per kind named in the message tables."""

from __future__ import annotations

import re
import struct
from typing import TYPE_CHECKING, Callable

from ....findings import Problem
from . import problems as P
from . import dcp, tap
from .codecs import jsontext
from .codecs.errors import CodecError
from .codecs.leb128 import decode_uleb128
from .codecs.snappy import inflate
from .codecs.xattr import parse_xattrs
from .codecs.xerror import parse_xerror
from ....messages.text import key_text
from ....messages.layout import Field, Layout, seqno, u16, u64
from .names import DATATYPE_JSON, DATATYPE_SNAPPY, DATATYPE_XATTR, FEATURES
from ....limits import ENTRY_ROWS

if TYPE_CHECKING:
    from .frame import DecodeContext, Message

Decoder = Callable[["Message", bytes, int, "DecodeContext"], list[Field]]

VBUCKET_SEQNO = Layout("vbucket_seqno", u16("vbucket", "Vbucket", show="dec"), seqno("seqno", "Seqno"))
COUNTER = Layout("counter", u64("counter", "Counter", show="both"))
CHECKPOINT_ID = Layout("checkpoint_id", u64("checkpoint_id", "Checkpoint ID", show="both"))
ERROR_MAP_VERSION = Layout("error_map_version", u16("error_map_version", "Version", show="dec"))


_LINE_SPACE = str.maketrans("", "", "\t\r\n")


def _printable(text: str) -> bool:
    return text.isprintable() or text.translate(_LINE_SPACE).isprintable()


_PRINTABLE_ASCII = bytes(range(0x20, 0x7F)) + b"\t\n\r"


def _printable_utf8(text: str, raw: bytes) -> bool:
    """``_printable(text)`` of ``text`` decoded from ``raw``: an ASCII text (known in O(1))
    is judged on its bytes, a third of the time of ``isprintable`` on large documents."""
    if text.isascii():
        return not raw.translate(None, _PRINTABLE_ASCII)
    return _printable(text)


def bytes_field(name: str, label: str, raw: bytes, base: int, ctx: "DecodeContext", children=()) -> Field:
    """A byte string as UTF-8 text when it is text, else as hex (``<name>_hex``)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and _printable_utf8(text, raw):
        shown = _shown(text, ctx)
        return Field(name, label, base, len(raw), shown, shown, tuple(children))
    return Field(f"{name}_hex", label, base, len(raw), raw.hex(), raw.hex(" "), tuple(children))


def _shown(text: str, ctx: "DecodeContext") -> str:
    return text if len(text) <= ctx.max_value_text else text[: ctx.max_value_text] + "…"


def _set_bytes(fields: dict, name: str, raw: bytes, text: str | None, ctx: "DecodeContext") -> None:
    """What ``bytes_field`` would add to ``msg.fields``, without the Field (``text``: raw decoded, or None)."""
    if text is not None and _printable_utf8(text, raw):
        fields.setdefault(name, _shown(text, ctx))
    else:
        fields.setdefault(f"{name}_hex", raw.hex())


#: Rows made for the entries of one list value (failover logs, feature lists, vbucket
#: seqnos): the rest are summed up in one row. The list's value, which JSON carries, is
#: whole; a 30 MiB list value would otherwise become millions of rows in memory.
MAX_ENTRY_ROWS = ENTRY_ROWS.default


def _more_entries(name: str, label: str, base: int, start: int, size: int, shown: int, count: int) -> Field:
    """The one row standing for the entries past :data:`MAX_ENTRY_ROWS`."""
    return Field(f"{name}[{shown}:]", f"{label} …", base + start, size, None,
                 f"{count - shown:,} more entries (JSON Lines carries them all)")


def _repeated(layout: Layout, name: str, label: str, raw: bytes, base: int, msg: "Message") -> list[Field]:
    count, rest = divmod(len(raw), layout.size)
    if rest:
        msg.problems.append(Problem(P.VALUE_SIZE, f"{label}: {len(raw)} bytes is not a multiple of {layout.size}", base))
    rows, values = [], []
    for i in range(count):
        if i < MAX_ENTRY_ROWS:
            parts = layout.describe(raw, i * layout.size, base + i * layout.size)
            rows.append(Field(f"{name}[{i}]", f"{label} [{i}]", base + i * layout.size, layout.size,
                              {p.name: p.value for p in parts}, "", tuple(parts)))
            values.append(rows[-1].value)
        else:
            values.append(layout.decode(raw, i * layout.size)[1])
    if count > MAX_ENTRY_ROWS:
        start = MAX_ENTRY_ROWS * layout.size
        rows.append(_more_entries(name, label, base, start, count * layout.size - start, MAX_ENTRY_ROWS, count))
    return [Field(name, label, base, len(raw), values, f"{count} entries", tuple(rows))]


def value_size(msg: "Message", raw: bytes) -> int:
    """The size of a value as its header declares it: a cut frame's value is measured by
    this, not by the bytes that are there (which may fit a layout by chance)."""
    if not msg.truncated:
        return len(raw)
    declared = (msg.body_length - msg.framing_length - msg.extras_length - msg.key_length
                - msg.values.get("engine_specific_length", 0))
    return max(len(raw), declared)


def fits(msg: "Message", raw: bytes, layout: Layout) -> bool:
    """Whether the value is a whole ``layout``: its bytes all there, and as many declared."""
    return len(raw) == layout.size == value_size(msg, raw)


def _fixed(layout: Layout, raw: bytes, base: int, msg: "Message", what: str) -> list[Field]:
    if not fits(msg, raw, layout):
        size = value_size(msg, raw)
        msg.problems.append(Problem(P.VALUE_SIZE, f"{what}: value is {size} bytes, expected {layout.size}", base))
        return [Field("value_hex", "Value", base, len(raw), raw.hex(), raw.hex(" "))]
    return layout.describe(raw, 0, base)


def _auto_kind(datatype: int) -> str:
    """The value kind a frame's datatype implies when its message says none."""
    if datatype & (DATATYPE_SNAPPY | DATATYPE_XATTR):
        return "document"
    return "json" if datatype & DATATYPE_JSON else "text"


def _auto(msg, raw, base, ctx):
    return DECODERS[_auto_kind(msg.datatype)](msg, raw, base, ctx)


def _text(msg, raw, base, ctx):
    return [bytes_field("value", "Value", raw, base, ctx)]


def json_ok(raw: bytes) -> bool:
    """Strict JSON within the nesting cap: UTF-8 only, no NaN/Infinity (codecs/jsontext)."""
    return jsontext.verdict_bytes(raw) == jsontext.OK


#: :func:`json_ok` of text already decoded from UTF-8 (the decoders' hot path).
json_text_ok = jsontext.ok


_NOT_JSON = {"value": "value is not valid JSON", "body": "datatype JSON but the body is not valid JSON"}


def _json_problem(msg, verdict: str, what: str, base: int) -> None:
    """The finding for a value (``what``: "value") or a body flagged JSON ("body") that
    should be JSON and is not, or is too deep to tell."""
    if verdict == jsontext.TOO_DEEP:
        msg.problems.append(Problem(P.JSON_TOO_DEEP, jsontext.too_deep_message(what), base))
    elif verdict == jsontext.INVALID:
        msg.problems.append(Problem(P.JSON_INVALID, _NOT_JSON[what], base))


def _text_verdict(text: str | None) -> str:
    if text is None:
        return jsontext.INVALID
    return jsontext.OK if jsontext.ok(text) else jsontext.verdict(text)


def _json(msg, raw, base, ctx):
    _json_problem(msg, jsontext.verdict_bytes(raw), "value", base)
    return [bytes_field("value", "Value", raw, base, ctx)]


def _document(msg, raw, base, ctx):
    if not ctx.documents:
        return [Field("value_length", "Value length", base, len(raw), len(raw), f"{len(raw)} bytes")]
    data, out, children = raw, [], []
    if msg.datatype & DATATYPE_SNAPPY:
        try:
            data = inflate(raw, ctx.max_inflate)
        except CodecError as exc:
            msg.problems.append(Problem(P.SNAPPY_INVALID, str(exc), base))
            return [Field("value_hex", "Value (snappy, not inflated)", base, len(raw), raw.hex(), raw.hex(" "))]
        out.append(Field("value_inflated_length", "Inflated length", base, len(raw), len(data), f"{len(data)} bytes"))
    if msg.datatype & DATATYPE_XATTR:
        try:
            deep: list[str] = []
            pairs, body_at = parse_xattrs(data, too_deep=deep)
        except CodecError as exc:
            msg.problems.append(Problem(P.XATTR_INVALID, str(exc), base))
        else:
            for k in deep:
                msg.problems.append(Problem(P.JSON_TOO_DEEP, jsontext.too_deep_message(f"xattr {k!r}"), base))
            xattrs = {k: v if k in deep else jsontext.loads(v) for k, v in pairs}
            inner = base if msg.datatype & DATATYPE_SNAPPY else None
            rows = tuple(
                Field(f"xattrs.{k}", k, inner if inner is not None else base, 0, xattrs[k], v) for k, v in pairs
            )
            size = body_at if inner is None else len(raw)
            out.append(Field("xattrs", "Xattrs", base, size, xattrs, f"{len(pairs)} pairs, {body_at} bytes", rows))
            if inner is None:
                base += body_at
            data = data[body_at:]
    if msg.datatype & DATATYPE_JSON and data:
        _json_problem(msg, jsontext.verdict_bytes(data), "body", base)
    out.append(bytes_field("value", "Value", data, base, ctx, children))
    return out


class _FeatureNameTable(dict):
    """A feature code's name, or its hex for codes no document names (at most 65,536)."""

    def __missing__(self, code: int) -> str:
        name = self[code] = FEATURES.get(code, f"0x{code:04x}")
        return name


_FEATURE_NAMES = _FeatureNameTable()


def _features(msg, raw, base, ctx):
    if len(raw) % 2:
        msg.problems.append(Problem(P.VALUE_SIZE, f"feature list has odd length {len(raw)}", base))
    codes = struct.unpack_from(f">{len(raw) // 2}H", raw)
    names = list(map(_FEATURE_NAMES.__getitem__, codes))
    rows = [Field(f"features[{i}]", "Feature", base + 2 * i, 2, names[i], f"0x{code:04x} ({names[i]})")
            for i, code in enumerate(codes[:MAX_ENTRY_ROWS])]
    display = ", ".join(names[:MAX_ENTRY_ROWS]) or "(none)"
    if len(names) > MAX_ENTRY_ROWS:
        start = 2 * MAX_ENTRY_ROWS
        rows.append(_more_entries("features", "Feature", base, start, 2 * len(names) - start, MAX_ENTRY_ROWS,
                                  len(names)))
        display += f", … ({len(names):,} in all)"
    return [Field("features", "Features", base, len(raw), names, display, tuple(rows))]


def _failover_log(msg, raw, base, ctx):
    if msg.status == 0x23:
        return _fixed(dcp.ROLLBACK, raw, base, msg, "rollback seqno")
    if msg.status not in (None, 0):
        return _error(msg, raw, base, ctx)
    return _repeated(dcp.FAILOVER_ENTRY, "failover_log", "Failover log", raw, base, msg)


def _vbucket_seqnos(msg, raw, base, ctx):
    return _repeated(VBUCKET_SEQNO, "vbucket_seqnos", "Vbucket seqnos", raw, base, msg)


def _stream_request(msg, raw, base, ctx):
    field = bytes_field("value", "Value", raw, base, ctx)
    try:
        doc = jsontext.loads(raw, what="stream request value")
    except jsontext.JsonTooDeep as exc:
        msg.problems.append(Problem(P.JSON_TOO_DEEP, str(exc), base))
        return [field]
    except CodecError:
        msg.problems.append(Problem(P.STREAM_REQUEST_VALUE, "stream request value is not valid JSON", base))
        return [field]
    if not isinstance(doc, dict):
        msg.problems.append(Problem(P.STREAM_REQUEST_VALUE, "stream request value is not a JSON object", base))
        return [field]
    out = [field]

    def hexnum(v, what, digits=8):
        if isinstance(v, str) and re.fullmatch(f"[0-9a-fA-F]{{1,{digits}}}", v):
            return int(v, 16)
        msg.problems.append(Problem(P.STREAM_REQUEST_VALUE, f"{what} {v!r} is not a hex string", base))
        return None

    if "collections" in doc:
        cids = doc["collections"] if isinstance(doc["collections"], list) else []
        if not isinstance(doc["collections"], list):
            msg.problems.append(Problem(P.STREAM_REQUEST_VALUE, "collections is not an array", base))
        ids = [c for c in (hexnum(v, "collection id") for v in cids) if c is not None]
        out.append(Field("collections", "Collections", base, len(raw), ids, ", ".join(f"0x{c:x}" for c in ids)))
    if "scope" in doc:
        sid = hexnum(doc["scope"], "scope id")
        out.append(Field("scope_id", "Scope ID", base, len(raw), sid, f"0x{sid:x}" if sid is not None else "?"))
        if "collections" in doc:
            msg.problems.append(Problem(P.STREAM_REQUEST_VALUE, "scope and collections are mutually exclusive", base))
    if "uid" in doc:
        uid = hexnum(doc["uid"], "uid", 16)
        out.append(Field("manifest_uid", "Manifest UID", base, len(raw), uid, f"0x{uid:x}" if uid is not None else "?"))
    if "sid" in doc:
        sid = doc["sid"]
        if not isinstance(sid, int) or isinstance(sid, bool) or not 1 <= sid <= 65535:
            msg.problems.append(Problem(P.STREAM_REQUEST_VALUE, f"sid {sid!r} is not an integer in 1..65535", base))
        out.append(Field("stream_id", "Stream ID", base, len(raw), sid, str(sid)))
    if "purge_seqno" in doc:
        ps = doc["purge_seqno"]
        if isinstance(ps, str) and ps.isascii() and ps.isdigit():
            out.append(Field("purge_seqno", "Purge Seqno", base, len(raw), int(ps), ps))
        else:
            msg.problems.append(Problem(P.STREAM_REQUEST_VALUE, f"purge_seqno {ps!r} is not a decimal string", base))
    return out


def _snapshot_marker_layout(msg, raw, base) -> Layout | None:
    """The layout of a v2 marker's value; None (the problem noted) to show the bytes as they are."""
    if msg.extras_length != 1:
        return None
    version = msg.values.get("version")
    layout = dcp.SNAPSHOT_VALUE_BY_VERSION.get(version)
    if version in dcp.SNAPSHOT_REMOVED_VERSIONS:
        name, release = dcp.SNAPSHOT_REMOVED_VERSIONS[version]
        msg.problems.append(Problem(P.SNAPSHOT_MARKER_VERSION, f"version 0x{version:02x} ({name}) was removed in {release}",
                                    base - 1))
    elif layout is None:
        if version is not None:
            msg.problems.append(Problem(P.SNAPSHOT_MARKER_VERSION, f"unknown marker version 0x{version:02x}", base - 1))
        return None
    if not fits(msg, raw, layout):
        msg.problems.append(
            Problem(P.SNAPSHOT_MARKER_VALUE_SIZE,
                    f"{dcp.SNAPSHOT_VERSIONS[version]} value must be {layout.size} bytes, has {value_size(msg, raw)}",
                    base)
        )
        return None
    return layout


def _snapshot_marker(msg, raw, base, ctx):
    layout = _snapshot_marker_layout(msg, raw, base)
    if layout is None:
        return [bytes_field("value", "Value", raw, base, ctx)] if raw else []
    msg.values.update(layout.values(raw))
    return layout.describe(raw, 0, base)


def _system_event(msg, raw, base, ctx):
    event, version = msg.values.get("event"), msg.values.get("version")
    if event is None:
        return [bytes_field("value", "Value", raw, base, ctx)]
    if version in (0, 1):
        layout = dcp.SYSTEM_EVENT_VALUES.get((event, version))
        if layout is None:
            msg.problems.append(Problem(P.SYSTEM_EVENT_VALUE, f"event {event} has no version {version} value", base))
            return [Field("value_hex", "Value", base, len(raw), raw.hex(), raw.hex(" "))]
        if not fits(msg, raw, layout):
            msg.problems.append(
                Problem(P.SYSTEM_EVENT_VALUE,
                        f"{layout.name} value must be {layout.size} bytes, has {value_size(msg, raw)}", base)
            )
            return [Field("value_hex", "Value", base, len(raw), raw.hex(), raw.hex(" "))]
        msg.values.update(layout.values(raw))
        return layout.describe(raw, 0, base)
    from .codecs.sysevent import decode_sysevent_value  # flatbuffers imports numpy: ~0.1 s at start-up

    try:
        decoded = decode_sysevent_value(event, version, raw)
    except CodecError as exc:
        msg.problems.append(Problem(P.SYSTEM_EVENT_VALUE, str(exc), base))
        return [Field("value_hex", "Value", base, len(raw), raw.hex(), raw.hex(" "))]
    rows = tuple(Field(k, k, base, len(raw), v, str(v)) for k, v in decoded.items())
    msg.values.update({k: v for k, v in decoded.items() if isinstance(v, int)})
    return [*rows]


def _cache_transfer(msg, raw, base, ctx):
    rec_layout = dcp.CACHE_TRANSFER_RECORD
    if len(raw) < 42:
        msg.problems.append(Problem(P.CACHE_TRANSFER_VALUE, f"value is {len(raw)} bytes, at least 42 required", base))
    records, pos = [], 0
    while pos < len(raw):
        if len(raw) - pos < rec_layout.size:
            msg.problems.append(Problem(P.CACHE_TRANSFER_VALUE, f"record at {pos} is cut short", base + pos))
            break
        head = rec_layout.values(raw, pos)
        parts = rec_layout.describe(raw, pos, base + pos)
        kstart = pos + rec_layout.size
        kend, vend = kstart + head["key_length"], kstart + head["key_length"] + head["value_length"]
        if vend > len(raw) or not 2 <= head["key_length"] <= 251:
            msg.problems.append(Problem(P.CACHE_TRANSFER_VALUE, f"record at {pos}: key/value lengths overrun", base + pos))
            break
        key = raw[kstart:kend]
        rec = {p.name: p.value for p in parts}
        try:
            cid, used = decode_uleb128(key)
            rec["collection_id"] = cid
            rec["key"] = key_text(key[used:])
        except CodecError as exc:
            msg.problems.append(Problem(P.COLLECTION_KEY_LEB128, f"cache transfer key: {exc}", base + kstart))
            rec["key"] = key_text(key)
        value = bytes_field("value", "Value", raw[kend:vend], base + kend, ctx)
        rec[value.name] = value.value
        keyf = Field("key", "Key", base + kstart, len(key), rec["key"], rec["key"])
        records.append(Field(f"records[{len(records)}]", f"Record {len(records)}", base + pos, vend - pos, rec, "",
                             (*parts, keyf, value)))
        pos = vend
    return [Field("records", "Records", base, len(raw), [r.value for r in records], f"{len(records)} records", tuple(records))]


def _counter(msg, raw, base, ctx):
    if msg.status not in (None, 0):
        return _error(msg, raw, base, ctx)
    return _fixed(COUNTER, raw, base, msg, "counter")


def _u16(msg, raw, base, ctx):
    return _fixed(ERROR_MAP_VERSION, raw, base, msg, "error map version")


def _checkpoint_id(msg, raw, base, ctx):
    return _fixed(CHECKPOINT_ID, raw, base, msg, "checkpoint id")


def _sasl(msg, raw, base, ctx):
    if msg.key.upper() == b"PLAIN" and raw.count(b"\0") >= 2:
        authzid, user, _password = raw.split(b"\0", 2)
        shown = f"{key_text(authzid)}\\0{key_text(user)}\\0********"
        return [Field("sasl_user", "User", base, len(raw), key_text(user), shown)]
    return [bytes_field("value", "Value", raw, base, ctx)]


def _tap_connect(msg, raw, base, ctx):
    flags = msg.values.get("flags", 0)
    out, pos = [], 0

    def need(n: int, what: str) -> bool:
        if pos + n > len(raw):
            msg.problems.append(Problem(P.TAP_CONNECT_VALUE, f"{what}: value ends at {len(raw)}", base + pos))
            return False
        return True

    if flags & 0x01 and need(8, "backfill time"):
        t = int.from_bytes(raw[pos : pos + 8], "big")
        shown = "future changes only" if t == 0xFFFFFFFFFFFFFFFF else str(t)
        out.append(Field("backfill_time", "Backfill time", base + pos, 8, t, f"0x{t:016x} ({shown})"))
        pos += 8
    if flags & 0x04 and need(2, "vbucket count"):
        n = int.from_bytes(raw[pos : pos + 2], "big")
        if need(2 + 2 * n, "vbucket list"):
            vbs = [int.from_bytes(raw[pos + 2 + 2 * i : pos + 4 + 2 * i], "big") for i in range(n)]
            out.append(Field("vbuckets", "Vbuckets", base + pos, 2 + 2 * n, vbs, ", ".join(map(str, vbs)) or "(none)"))
            pos += 2 + 2 * n
    if flags & 0x40 and need(2, "checkpoint count"):
        n = int.from_bytes(raw[pos : pos + 2], "big")
        if need(2 + 10 * n, "checkpoint list"):
            cps = [
                {"vbucket": int.from_bytes(raw[p : p + 2], "big"), "checkpoint_id": int.from_bytes(raw[p + 2 : p + 10], "big")}
                for p in range(pos + 2, pos + 2 + 10 * n, 10)
            ]
            out.append(Field("checkpoints", "Checkpoints", base + pos, 2 + 10 * n, cps, f"{n} entries"))
            pos += 2 + 10 * n
    if flags & 0x80 and pos < len(raw):  # ep-engine 2.x: one optional "closed checkpoints only" byte
        out.append(Field("closed_checkpoint_only", "Closed checkpoint only", base + pos, 1, raw[pos], str(raw[pos])))
        pos += 1
    if pos < len(raw):
        msg.problems.append(Problem(P.TAP_CONNECT_VALUE, f"{len(raw) - pos} bytes left after the flag values", base + pos))
        out.append(Field("value_hex", "Rest", base + pos, len(raw) - pos, raw[pos:].hex(), raw[pos:].hex(" ")))
    return out


def _error(msg, raw, base, ctx):
    if msg.datatype & DATATYPE_JSON or raw[:1] == b"{":
        try:
            err = parse_xerror(raw)
        except jsontext.JsonTooDeep as exc:
            msg.problems.append(Problem(P.JSON_TOO_DEEP, str(exc), base))
        except jsontext.JsonInvalid:
            if msg.datatype & DATATYPE_JSON:
                msg.problems.append(Problem(P.JSON_INVALID, "datatype JSON but the body is not valid JSON", base))
        except CodecError:
            pass  # JSON, but not an error body: shown as it is
        else:
            out = [bytes_field("value", "Value", raw, base, ctx)]
            for k in ("context", "ref"):
                if err.get(k) is not None:
                    out.append(Field(f"error_{k}", f"Error {k}", base, len(raw), err[k], str(err[k])))
            return out
    return [bytes_field("value", "Value", raw, base, ctx)]


DECODERS: dict[str, Decoder] = {
    "auto": _auto,
    "text": _text,
    "json": _json,
    "document": _document,
    "features": _features,
    "failover_log": _failover_log,
    "vbucket_seqnos": _vbucket_seqnos,
    "stream_request": _stream_request,
    "snapshot_marker": _snapshot_marker,
    "system_event": _system_event,
    "cache_transfer": _cache_transfer,
    "counter": _counter,
    "u16": _u16,
    "checkpoint_id": _checkpoint_id,
    "sasl": _sasl,
    "tap_connect": _tap_connect,
    "error": _error,
}


def decode_value(kind: str, msg: "Message", raw: bytes, base: int, ctx: "DecodeContext") -> list[Field]:
    return DECODERS.get(kind, _auto)(msg, raw, base, ctx)


# -- without Field rows ------------------------------------------------------------------
# jsonl (any decode with ``DecodeContext(detail=False)``) needs only names, values and
# problems: for the kinds that carry the documents (most frames of a DCP capture) and the
# few every connection has, these put them straight into ``msg.fields``, saving the Field
# objects. Each does exactly what its decoder above adds to msg.fields and problems
# (tests/test_speed_lean.py compares them), or returns False, having touched nothing, to
# leave a case it does not cover (xattrs, snappy errors, ...) to that decoder.

def _text_lean(msg, raw, base, ctx) -> bool:
    _set_bytes(msg.fields, "value", raw, _utf8(raw), ctx)
    return True


def _json_lean(msg, raw, base, ctx) -> bool:
    text = _utf8(raw)
    _json_problem(msg, _text_verdict(text), "value", base)
    _set_bytes(msg.fields, "value", raw, text, ctx)
    return True


def _document_lean(msg, raw, base, ctx) -> bool:
    datatype = msg.datatype
    if datatype & DATATYPE_XATTR or not ctx.documents:
        return False
    data, fields = raw, msg.fields
    if datatype & DATATYPE_SNAPPY:
        try:
            data = inflate(raw, ctx.max_inflate)
        except CodecError:
            return False
        fields.setdefault("value_inflated_length", len(data))
    text = _utf8(data)
    if datatype & DATATYPE_JSON and data:
        _json_problem(msg, _text_verdict(text), "body", base)
    _set_bytes(fields, "value", data, text, ctx)
    return True


def _snapshot_marker_lean(msg, raw, base, ctx) -> bool:
    layout = _snapshot_marker_layout(msg, raw, base)
    fields = msg.fields
    if layout is None:
        if raw:
            _set_bytes(fields, "value", raw, _utf8(raw), ctx)
        return True
    _put_layout(msg, layout, raw)
    return True


def _put_layout(msg, layout: Layout, raw: bytes) -> None:
    """A fixed value layout's raw values, and its JSON ones where the frame has none yet."""
    values, shown = layout.decode(raw)
    msg.values.update(values)
    fields = msg.fields
    for name, value in shown.items():
        fields.setdefault(name, value)


def _utf8(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _repeated_lean(layout: Layout, name: str, label: str, raw: bytes, base: int, msg: "Message") -> bool:
    count, rest = divmod(len(raw), layout.size)
    if rest:
        msg.problems.append(Problem(P.VALUE_SIZE, f"{label}: {len(raw)} bytes is not a multiple of {layout.size}", base))
    msg.fields.setdefault(name, [layout.decode(raw, i * layout.size)[1] for i in range(count)])
    return True


def _failover_log_lean(msg, raw, base, ctx) -> bool:
    if msg.status not in (None, 0):
        return False
    return _repeated_lean(dcp.FAILOVER_ENTRY, "failover_log", "Failover log", raw, base, msg)


def _vbucket_seqnos_lean(msg, raw, base, ctx) -> bool:
    return _repeated_lean(VBUCKET_SEQNO, "vbucket_seqnos", "Vbucket seqnos", raw, base, msg)


def _features_lean(msg, raw, base, ctx) -> bool:
    if len(raw) % 2:
        msg.problems.append(Problem(P.VALUE_SIZE, f"feature list has odd length {len(raw)}", base))
    codes = struct.unpack_from(f">{len(raw) // 2}H", raw)
    msg.fields.setdefault("features", list(map(_FEATURE_NAMES.__getitem__, codes)))
    return True


def _system_event_lean(msg, raw, base, ctx) -> bool:
    version = msg.values.get("version")
    layout = dcp.SYSTEM_EVENT_VALUES.get((msg.values.get("event"), version)) if version in (0, 1) else None
    if layout is None or not fits(msg, raw, layout):
        return False  # no event, a wrong size or a FlatBuffers (v2) value
    _put_layout(msg, layout, raw)
    return True


def _auto_lean(msg, raw, base, ctx) -> bool:
    return LEAN_DECODERS[_auto_kind(msg.datatype)](msg, raw, base, ctx)


LEAN_DECODERS: dict[str, Callable[["Message", bytes, int, "DecodeContext"], bool]] = {
    "auto": _auto_lean,
    "text": _text_lean,
    "json": _json_lean,
    "document": _document_lean,
    "snapshot_marker": _snapshot_marker_lean,
    # one or two a connection, but a connection may be short
    "features": _features_lean,
    "failover_log": _failover_log_lean,
    "vbucket_seqnos": _vbucket_seqnos_lean,
    "system_event": _system_event_lean,
}


def decode_value_fields(kind: str, msg: "Message", raw: bytes, base: int, ctx: "DecodeContext") -> None:
    """What :func:`decode_value`'s rows add to ``msg.fields`` (and its problems), rows unbuilt."""
    lean = LEAN_DECODERS.get(kind)
    if lean is not None and lean(msg, raw, base, ctx):
        return
    fields = msg.fields
    for f in DECODERS.get(kind, _auto)(msg, raw, base, ctx):
        if f.name not in fields:
            fields[f.name] = f.value
