"""What the outputs show of RDB records: JSON Lines objects, table rows, the detail of
one key, and the summary of a file (keys per db and type, biggest keys, expiries, aux
fields). Plain data: the engine prints it with the outputs' printers."""

from __future__ import annotations

import base64
import heapq
from collections import Counter, defaultdict

from ....findings import Finding
from ....messages.text import key_text
from ..rdb.data import value_json, value_length
from ..rdb.records import AuxRecord, Ending, KeyRecord, OpRecord, StreamId

PROTOCOL = "rdb"
KEY_HEADERS = ("offset", "db", "key", "type", "encoding", "elements", "size", "expiry", "findings")
#: the biggest keys a summary lists
BIGGEST = 10


def expiry_text(ms: int | None) -> str:
    if ms is None:
        return ""
    from datetime import datetime, timezone  # (for keys with an expiry)

    try:
        return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, ValueError, OSError):
        return f"{ms} ms"


def _text(raw: bytes | None) -> str | None:
    return None if raw is None else key_text(raw)


def key_json(rec: KeyRecord, digester=None, values: bool = False) -> dict:
    """One key: kind, protocol, db, key (``key_base64`` too when the name is not UTF-8: the
    ``key`` text then escapes its bytes), type, encoding, elements, ``value_length``
    (STRLEN of a string, else the elements), size (bytes serialised), expire_ms, offset,
    length (of the record), findings; with a ``digester`` (:class:`.digest.Digester`,
    values kept) its ``digest``; with ``values``, the ``value`` (:mod:`.data`)."""
    key = rec.key
    out = {"kind": "key", "protocol": PROTOCOL, "db": rec.db, "key": key_text(key), "type": rec.type,
           "encoding": rec.encoding, "elements": rec.elements, "value_length": value_length(rec), "size": rec.size,
           "expire_ms": rec.expire_ms, "offset": rec.offset, "length": rec.length,
           "findings": [f.to_json() for f in rec.findings]}
    if not key.isascii():
        try:
            key.decode("utf-8")
        except UnicodeDecodeError:
            out["key_base64"] = base64.b64encode(key).decode("ascii")
    if rec.blob_offset is not None:
        out["blob_offset"] = rec.blob_offset
    if digester is not None:
        out["digest"] = digester.key(rec)
    if values:
        out["value"] = value_json(rec)
    return out


def aux_json(rec: AuxRecord) -> dict:
    return {"kind": "aux", "protocol": PROTOCOL, "key": _text(rec.key), "value": _text(rec.value),
            "offset": rec.offset, "length": rec.length, "findings": [f.to_json() for f in rec.findings]}


def finding_json(f: Finding, file: str) -> dict:
    return {"kind": "finding", "protocol": PROTOCOL, "file": file, **f.to_json()}


def key_row(rec: KeyRecord) -> tuple[str, ...]:
    """A table row (not yet escaped)."""
    return (str(rec.offset), str(rec.db), key_text(rec.key), rec.type, rec.encoding,
            "" if rec.elements is None else str(rec.elements), str(rec.size), expiry_text(rec.expire_ms),
            " ".join(f.rule for f in rec.findings))


def findings_of(rec) -> list[Finding]:
    """The findings a record carries, or the finding itself."""
    if isinstance(rec, Finding):
        return [rec]
    return list(getattr(rec, "findings", ()))


class Summary:
    """A file's figures, gathered record by record."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.keys = 0
        #: [keys, bytes] of each (db, type, encoding)
        self.groups: dict[tuple[int, str, str], list[int]] = {}
        self.expiring = 0
        self.expired = 0
        self.biggest: list[tuple[int, int, str, str, int]] = []  # (size, -offset, key, type, db)
        self.aux: dict[str, str] = {}
        self.opcodes: Counter = Counter()
        self.findings: Counter = Counter()
        self.severities: Counter = Counter()
        self.ending: Ending | None = None
        #: the snapshot's digest when values are read (a :class:`.digest.SnapshotDigest`)
        self.digest = None
        #: the size of the smallest of the biggest keys once there are BIGGEST of them
        self._least = 0

    def add(self, rec) -> None:
        if type(rec) is KeyRecord:  # the common case, first
            self.add_key(rec)
            return
        for f in findings_of(rec):
            self.findings[f.rule] += 1
            self.severities[f.severity] += 1
        if isinstance(rec, KeyRecord):
            self.add_key(rec)
        elif isinstance(rec, AuxRecord):
            if len(self.aux) < 256:
                self.aux[_text(rec.key) or ""] = _text(rec.value) or ""
        elif isinstance(rec, OpRecord):
            self.opcodes[rec.name] += 1
        elif isinstance(rec, Ending):
            self.ending = rec

    def add_key(self, rec: KeyRecord) -> None:
        """:meth:`add` of a key."""
        findings = rec.findings
        if findings:
            for f in findings:
                self.findings[f.rule] += 1
                self.severities[f.severity] += 1
            if any(f.rule == "rdb-expired-key" for f in findings):
                self.expired += 1
        t = rec.vtype.type
        self.keys += 1
        size = rec.size
        group = self.groups.get((rec.db, t, rec.encoding))
        if group is None:
            self.groups[(rec.db, t, rec.encoding)] = [1, size]
        else:
            group[0] += 1
            group[1] += size
        if rec.expire_ms is not None:
            self.expiring += 1
        if size < self._least:  # (smaller than the smallest of the biggest: no key text)
            return
        biggest = self.biggest
        if len(biggest) < BIGGEST:
            heapq.heappush(biggest, (size, -rec.offset, key_text(rec.key[:256]), t, rec.db))
        elif (size, -rec.offset) >= biggest[0][:2]:
            item = (size, -rec.offset, key_text(rec.key[:256]), t, rec.db)
            if item > biggest[0]:
                heapq.heapreplace(biggest, item)
        if len(biggest) == BIGGEST:
            self._least = biggest[0][0]


    def keys_part(self) -> dict:
        """What the keys added made of the figures, as plain data (for :meth:`merge`)."""
        return {"keys": self.keys, "groups": [[*k, *v] for k, v in self.groups.items()],
                "expiring": self.expiring, "expired": self.expired, "biggest": self.biggest,
                "findings": dict(self.findings), "severities": dict(self.severities)}

    def merge(self, part: dict) -> None:
        """The figures another Summary's keys made (:meth:`keys_part`) added to these, as if
        its keys had been added here (the biggest keys too: ranked by size, then offset)."""
        self.keys += part["keys"]
        for db, t, enc, n, size in part["groups"]:
            group = self.groups.setdefault((db, t, enc), [0, 0])
            group[0] += n
            group[1] += size
        self.expiring += part["expiring"]
        self.expired += part["expired"]
        for item in part["biggest"]:
            item = tuple(item)
            if len(self.biggest) < BIGGEST:
                heapq.heappush(self.biggest, item)
            elif item > self.biggest[0]:
                heapq.heapreplace(self.biggest, item)
        self.findings.update(part["findings"])
        self.severities.update(part["severities"])

    @property
    def per_db(self) -> dict[int, Counter]:
        """Keys per type, per db."""
        out: dict[int, Counter] = defaultdict(Counter)
        for (db, t, _), (n, _) in self.groups.items():
            out[db][t] += n
        return out

    @property
    def encodings(self) -> Counter:
        """Keys per "type/encoding"."""
        out: Counter = Counter()
        for (_, t, enc), (n, _) in self.groups.items():
            out[f"{t}/{enc}"] += n
        return out

    @property
    def bytes_per_type(self) -> Counter:
        """Serialised bytes per type."""
        out: Counter = Counter()
        for (_, t, _), (_, size) in self.groups.items():
            out[t] += size
        return out

    def biggest_keys(self) -> list[dict]:
        return [{"db": db, "key": key, "type": t, "size": size}
                for size, _, key, t, db in sorted(self.biggest, reverse=True)]

    def to_json(self) -> dict:
        end = self.ending
        return {
            "kind": "summary", "protocol": PROTOCOL, "file": self.file,
            "vendor": end.vendor if end else None, "version": end.version if end else None,
            "bytes": end.bytes_read if end else 0, "checksum": end.checksum if end else "unchecked",
            "complete": bool(end and end.eof_offset is not None and not end.stopped),
            "keys": self.keys,
            "dbs": {str(db): dict(sorted(c.items())) for db, c in sorted(self.per_db.items())},
            "encodings": dict(sorted(self.encodings.items())),
            "bytes_per_type": dict(sorted(self.bytes_per_type.items())),
            "expiring": self.expiring, "expired": self.expired,
            "biggest": self.biggest_keys(), "aux": self.aux, "opcodes": dict(sorted(self.opcodes.items())),
            "findings": dict(sorted(self.findings.items())),
            **self.digest_json(),
        }

    def digest_json(self) -> dict:
        """``digest`` (as ``DEBUG DIGEST`` gives it) and ``digest_unknown`` (keys of module
        values, whose digest only their module makes: with any, the digest is not the
        server's), when values were read."""
        if self.digest is None:
            return {}
        return {"digest": self.digest.hexdigest(), "digest_unknown": self.digest.unknown}


def detail_rows(rec: KeyRecord, value_limit: int | None) -> list[tuple[str, str]]:
    """(field, value) rows of one key for the ``--key``/``--offset`` view; the value cut at
    ``value_limit`` characters (the caller escapes them)."""
    rows = [("offset", str(rec.offset)), ("length", str(rec.length)), ("db", str(rec.db)),
            ("key", key_text(rec.key)), ("type", f"{rec.type} (RDB type {rec.type_id}, {rec.vtype.rdb_name})"),
            ("encoding", rec.encoding), ("elements", "" if rec.elements is None else str(rec.elements)),
            ("value length", "" if value_length(rec) is None else str(value_length(rec))),
            ("size", f"{rec.size} bytes serialised")]
    if rec.blob_offset is not None:
        rows.append(("offset in blob", str(rec.blob_offset)))
    if rec.expire_ms is not None:
        rows.append(("expiry", f"{rec.expire_ms} ms ({expiry_text(rec.expire_ms)})"))
    if rec.idle is not None:
        rows.append(("idle", f"{rec.idle} s"))
    if rec.freq is not None:
        rows.append(("LFU frequency", str(rec.freq)))
    for name, value in rec.extra.items():
        rows.append((name.replace("_", " "), _short(value, value_limit)))
    if rec.value is not None:
        rows.append(("value", _short(_shown_value(rec.value), value_limit)))
    for f in rec.findings:
        rows.append((f"{f.severity}: {f.rule}", f.message))
    return rows


def _shown_value(value) -> str:
    if isinstance(value, bytes):
        return key_text(value)
    if isinstance(value, StreamId):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_shown_value(v) for v in value[:1000]) + (", …" if len(value) > 1000 else "") + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_shown_value(v)}" for k, v in list(value.items())[:1000]) + "}"
    return str(value)


def _short(value, limit: int | None) -> str:
    text = value if isinstance(value, str) else _shown_value(value)
    if limit is not None and len(text) > limit:
        return text[:limit] + f" … {len(text) - limit:,} more characters (--full shows all)"
    return text


def unended(what: str, size: int) -> Finding:
    """The finding on a payload whose end (``what``) never came: the connection ended
    ``size`` bytes into it (the finding's offset, inside the payload as the decoder's are),
    and whatever followed the snapshot in them was taken for its bytes."""
    from ..rules import RDB_RULES

    return RDB_RULES["rdb-truncated"].finding(
        f"the connection ends {size:,} bytes into the payload before its {what} came: the payload is cut "
        "short (bytes after the snapshot's EOF are the master's, taken as payload)", size)


def payload_json(summary: "Summary", last: list, cut: bool, ids: dict | None = None, ended: bool = True) -> dict:
    """The closing summary object of an RDB payload read from a connection: the summary
    without a file name, then ``ids`` (what names the payload), marked incomplete when bytes
    were lost (``cut``) or its end never came (not ``ended``), with the bytes the decoder
    read when ``last`` (the final records) holds its Ending."""
    out = summary.to_json()
    out.pop("file", None)
    if ids:
        out.update(ids)
    if not ended:
        out["complete"] = False
    if cut:
        out["complete"] = False
        out["lost_bytes"] = True
    ending = next((r for r in last if isinstance(r, Ending)), None)
    if ending is not None:
        out["bytes"] = ending.bytes_read
    return out
