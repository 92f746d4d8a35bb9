"""Fuzz harnesses of the Redis family's readers that rdb_harness.py does not reach:

- ``check_journal(data)``: Dragonfly's journal (dcpinspect/families/redis/dragonfly/journal.py), as a
  JOURNAL_BLOB's string (``read_entries``) and as a flow streams it in stable sync (the
  framer's journal mode, fed whole and in chunks, its records judged by a flow session);
- ``check_dfs(data)``: a ``.dfs`` snapshot set (dcpinspect/families/redis/dragonfly/dfs.py) made of
  the input: a summary and shard files, their numbers and bodies chosen by the input, read
  as one snapshot;
- ``check_flow(data)``: RESP with a Dragonfly flow: the replica's ``DFLY FLOW``, the
  master's ``*2 +FULL|+PARTIAL +<token>`` answer, then the input as the shard's RDB up to
  the token and the journal after it, through the framer and the Redis session of both
  directions, fed whole and in chunks.

The first byte of the input picks the chunk size and the variant, the rest is the data.
For any input: nothing raises (a damaged input is a finding, a skipped range or an error
frame), the same records come fed whole and in chunks, the framer holds no more than its
caps, a record's JSON Lines and table rows are text, and the work stays linear in the input
(the framer's reading of journal lengths is counted, never timed).

Run as campaigns with ``python3 fuzz/journal.py``, ``fuzz/dfs.py`` and ``fuzz/flow.py``
(fuzz/campaign.py's options); the test suite runs them in tests/test_fuzz_redis.py.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

#: the frame cap the harness reads with: a record past it is passed over, never held
CAP = 4096
#: the eof token of the flow harness's FULL sync
TOKEN = b"t" * 40
#: journal lengths read per input byte at most (the framer's journal mode and resynchronisation)
READS_PER_BYTE = 200


class PropertyFailure(AssertionError):
    """A property of the harness does not hold for the input."""


def _framer_frames(stream: bytes, chunk: int | None) -> tuple[list, int]:
    """The framer's frames of ``stream`` (fed whole, or ``chunk`` bytes at a time) and the most it held."""
    from dcpinspect.families.redis.replication.resp import RespFramer

    framer = RespFramer()
    framer.frame_cap = CAP
    out, held = [], 0
    step = chunk or len(stream) or 1
    for i in range(0, len(stream), step):
        out += framer.feed(stream[i:i + step])
        held = max(held, framer.buffered)
    return out + framer.close(), held


def _frame_sig(frames: list) -> list:
    sig = []
    for f in frames:
        value = getattr(f, "value", None)
        if hasattr(value, "args"):  # a journal entry
            value = (value.op, value.dbid, value.txid, value.lsn, tuple(value.args), value.offset, value.length)
        sig.append((type(f).__name__, getattr(f, "offset", None), getattr(f, "kind", None),
                    len(getattr(f, "data", b"") or b""), getattr(f, "size", None), repr(value)[:2000],
                    getattr(f, "last", None), getattr(f, "truncated", None)))
    return sig


def _counting_reads():
    """Count the journal lengths read while the context is open: (counter, restore)."""
    from dcpinspect.families.redis.dragonfly import journal

    real = journal.read_len
    count = [0]

    def counted(buf, p):
        count[0] += 1
        return real(buf, p)

    journal.read_len = counted
    return count, lambda: setattr(journal, "read_len", real)


def _views(rec) -> None:
    from dcpinspect.outputs.escape import safe
    from dcpinspect.outputs.jsonl import dumps

    for row in rec.json_rows():
        dumps(row)
    for field, value in rec.table_rows():
        safe(field), safe(value)
    safe(rec.title())


def check_journal(data: bytes) -> None:
    from dcpinspect.families.redis.dragonfly import replica as dragonfly
    from dcpinspect.families.redis.dragonfly import journal
    from dcpinspect.families.redis.replication.frames import JournalRecord
    from dcpinspect.families.redis.rdb.primitives import Corrupt
    from dcpinspect.families.redis.replication.resp import RespFrame

    if not data:
        return
    chunk = 1 + (data[0] >> 2)
    body = data[1:]
    try:
        entries = journal.read_entries(body, CAP)
        assert sum(e.length for e in entries) == len(body)
    except Corrupt:
        pass
    prefix = b"*2\r\n+PARTIAL\r\n+" + TOKEN + b"\r\n"
    stream = prefix + body
    count, restore = _counting_reads()
    try:
        whole, _ = _framer_frames(stream, None)
        reads_whole = count[0]
        pieces, held = _framer_frames(stream, chunk)
        reads = max(reads_whole, count[0] - reads_whole)
    finally:
        restore()
    if _frame_sig(whole) != _frame_sig(pieces):
        raise PropertyFailure("the journal's frames differ fed whole and in chunks")
    if held > 2 * CAP + 64 * 1024 + chunk:
        raise PropertyFailure(f"the framer held {held} bytes")
    if reads > READS_PER_BYTE * (len(body) + 1) + 1000:
        raise PropertyFailure(f"{reads} journal lengths read for {len(body)} bytes")
    flow = dragonfly.Flow(None, None, "c2s")
    for raw in pieces:
        if isinstance(raw, RespFrame) and raw.kind == "journal":
            rec = flow.journal(raw)
            assert isinstance(rec, JournalRecord)
            _views(rec)


def _members(data: bytes) -> list[tuple[str, bytes]]:
    """(file name, bytes) of the set's files the input makes: its first byte chooses the
    shard numbers (a summary or not, numbers near or far apart); the rest is the files, each
    starting at an RDB header (``REDIS0009``), or cut in equal parts when it holds none."""
    if len(data) < 2:
        return []
    choice, rest = data[0], data[1:]
    head = b"REDIS0009"
    parts = [head + part for part in rest.split(head)[1:5]] if rest.startswith(head) else []
    if not parts:
        n = 1 + (choice & 3)
        size = len(rest) // n + 1
        parts = [rest[i * size:(i + 1) * size] for i in range(n)]
    summary = bool(choice & 8) and len(parts) > 1
    far = 123_456_789 if choice & 4 else 1
    shards = len(parts) - summary
    names = (["x-summary.dfs"] if summary else []) + [f"x-{i * far + (choice >> 5) * i:04d}.dfs"
                                                      for i in range(shards)]
    return list(zip(names, parts))


def check_dfs(data: bytes) -> None:
    from dcpinspect.families.redis.dragonfly import dfs
    from dcpinspect.families.redis.reports import report
    from dcpinspect.families.redis.rdb.records import AuxRecord, KeyRecord
    from dcpinspect.outputs.jsonl import dumps
    from dcpinspect.sources.inputs import InputError

    files = _members(data)
    if not files:
        return
    root = Path(tempfile.mkdtemp(prefix="dcpfuzz-dfs-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    try:
        for name, body in files:
            (root / name).write_bytes(body)
        paths = [root / name for name, _ in files]
        grouped = dfs.gather(paths)
        for item in grouped:
            if not isinstance(item, tuple):
                continue
            members = [dfs.Member(p, dfs.part_of(p)[1]) for p in item]
            checks = dfs.SetChecks(members)
            figures = dfs.SetFigures(members, checks)
            try:
                for i, rec in dfs.read_set(members, checks):
                    figures.add(i, rec)
                    if isinstance(rec, KeyRecord):
                        dumps(report.key_json(rec))
                    elif isinstance(rec, AuxRecord):
                        dumps(report.aux_json(rec))
            except InputError:
                continue
            figures.close()
            dumps(figures.total.to_json())
            for f in (f for fs in [checks.finish()] for _, f in fs):
                if len(f.message) > 2000:
                    raise PropertyFailure(f"a set finding of {len(f.message)} characters")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _flow_stream(data: bytes) -> tuple[bytes, bytes, int]:
    """(the replica's bytes, the master's, the chunk size) of the input's flow."""
    choice, body = data[0], data[1:]
    full = choice & 1
    replica = b"*6\r\n$4\r\nDFLY\r\n$4\r\nFLOW\r\n$40\r\n" + b"f" * 40 + b"\r\n$5\r\nSYNC1\r\n$1\r\n0\r\n$1\r\n7\r\n"
    answer = b"*2\r\n+" + (b"FULL" if full else b"PARTIAL") + b"\r\n+" + TOKEN + b"\r\n"
    if full and TOKEN in body:  # the input says where the snapshot ends
        master = answer + b"REDIS0009" + body
    elif full:  # the token after the first 0xff (an EOF opcode) and 8 bytes (its checksum)
        cut = body.find(b"\xff")
        cut = len(body) if cut < 0 else min(len(body), cut + 9)
        master = answer + b"REDIS0009" + body[:cut] + TOKEN + body[cut:]
    else:
        master = answer + body
    return replica, master, 1 + (choice >> 3)


def _session_records(replica: bytes, master: bytes, chunk: int | None) -> list:
    from dcpinspect.families.redis.replication.resp import RespFramer
    from dcpinspect.families.redis.replication.session import Replication

    session = Replication()
    out = []
    index = 0
    for direction, stream in (("c2s", replica), ("s2c", master)):
        framer = RespFramer()
        framer.frame_cap = CAP
        step = chunk or len(stream) or 1
        frames = []
        for i in range(0, len(stream), step):
            frames += framer.feed(stream[i:i + step])
        frames += framer.close()
        for raw in frames:
            if hasattr(raw, "kind"):
                index += 1
                out.append(session.decode(raw, direction, None, index))
    out += session.finish()
    return out


def _record_sig(recs: list) -> list:
    sig = []
    for r in recs:
        rows = r.json_rows() if hasattr(r, "json_rows") else [{"rule": r.rule, "offset": r.offset}]
        sig.append([{k: v for k, v in row.items() if k != "ts"} for row in rows])
    return sig


def check_flow(data: bytes) -> None:
    from dcpinspect.outputs.jsonl import dumps

    if not data:
        return
    replica, master, chunk = _flow_stream(data)
    whole = _session_records(replica, master, None)
    pieces = _session_records(replica, master, chunk)
    a, b = _record_sig(whole), _record_sig(pieces)
    if a != b:
        raise PropertyFailure("the flow's records differ fed whole and in chunks")
    for rec in pieces:
        if hasattr(rec, "json_rows"):
            _views(rec)
            for row in rec.json_rows():
                dumps(row)
