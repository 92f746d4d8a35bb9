"""Fuzz harness of the RDB decoder (dcpinspect/families/redis/rdb/decoder.py): ``check_rdb(data)``.

The first byte of the fuzzer's input picks a header (Redis 11, Redis 9 as Dragonfly
writes it, Valkey 80, Redis 3, or none: the input as it is) and a chunk size; the rest
follows the header. For any input the decoder must:

- raise nothing, and end with its Ending record;
- give the same records fed whole and fed in chunks;
- give the same records, values aside, and the same findings when values are not kept (the
  summary's way: strings passed over, packed layouts counted, and where the C module is
  built, whole records read by its record lane);
- hold no more than the string cap plus one chunk, whatever the lengths claim;
- give the same records, values aside, when the C lane measures keys for the memory model
  (``measure``), and the same memory estimate of each key as from its kept value;
- give records that the jsonl and table outputs turn into text, values and digests too;
- give, with a key selection, the keys it admits (values kept, the lane passing over the
  others), the same records as without it;
- give, when the lane writes the lines of one stripe's keys only (``stripe``: one of two
  processes), those keys' lines as above and none of the others';
- give, when the lane writes keys as Redis commands (``resp``, ``rdb --format resp``), the
  commands and the count the Exporter makes of the values kept.

Run as a campaign with ``python3 fuzz/rdb.py`` (fuzz/campaign.py's options); the test
suite runs it in tests/test_fuzz_rdb.py.
"""

from __future__ import annotations

HEADERS = (b"REDIS0011", b"REDIS0009", b"VALKEY080", b"REDIS0003", b"")
#: the string cap the harness decodes with: lengths past it must not be held
CAP = 4096


def _run(data: bytes, chunk: int | None, keep: bool = True, select=None, measure=None,
         lines=None, stripe=None, resp=None) -> tuple[list, int]:
    from dcpinspect.families.redis.rdb.decoder import RdbParser

    parser = RdbParser(keep=keep, cap=CAP, select=select, measure=measure, lines=lines, stripe=stripe, resp=resp)
    out, held = [], 0
    if chunk is None:
        out += parser.feed(data)
    else:
        for i in range(0, len(data), chunk):
            out += parser.feed(data[i:i + chunk])
            held = max(held, len(parser.buf))
    return out + parser.close(), held


def _signature(out: list, values: bool = True) -> list:
    from dcpinspect.families.redis.rdb.records import Ending
    from dcpinspect.findings import Finding

    sig = []
    for r in out:
        if isinstance(r, Finding):
            sig.append((r.rule, r.offset, r.message))
        elif isinstance(r, Ending):
            sig.append(("end", r.checksum, r.eof_offset, r.stopped, r.bytes_read))
        else:
            sig.append((r.kind, r.offset, r.length, repr(getattr(r, "value", None)) if values else None,
                        [f.rule for f in getattr(r, "findings", ())]))
    return sig


def check_rdb(data: bytes) -> None:
    from dcpinspect.families.redis.reports import memory, report
    from dcpinspect.families.redis.rdb.data import function_json
    from dcpinspect.families.redis.rdb.digest import Digester, SnapshotDigest
    from dcpinspect.families.redis.rdb.records import AuxRecord, Ending, KeyRecord, OpRecord
    from dcpinspect.families.redis.reports.selection import KeySelection
    from dcpinspect.outputs.escape import safe
    from dcpinspect.outputs.jsonl import dumps, dumps_line

    if not data:
        return
    head = HEADERS[data[0] % len(HEADERS)]
    chunk = 1 + (data[0] >> 3)
    stream = head + data[1:]
    whole, _ = _run(stream, None)
    pieces, held = _run(stream, chunk)
    assert isinstance(whole[-1], Ending) and isinstance(pieces[-1], Ending)
    assert _signature(whole) == _signature(pieces)
    lean, _ = _run(stream, chunk if data[0] & 4 else None, keep=False)
    assert _signature(lean, values=False) == _signature(whole, values=False)
    assert held <= CAP + 64 + chunk + 16, held
    measured, _ = _run(stream, chunk if data[0] & 2 else None, measure=memory.LaneMeasure())
    assert _signature(measured, values=False) == _signature(whole, values=False)
    cfg = memory.for_version(memory.DEFAULTS, whole[-1].version)  # as the lane takes the file's version
    for a, b in zip(measured, whole):
        if isinstance(a, KeyRecord):
            x, y = memory.key_memory(a, cfg), memory.key_memory(b, cfg)
            assert (x.usage, x.expires, x.encoding) == (y.usage, y.expires, y.encoding), (a.key, a.vtype, x, y)
    # the C lane's whole lines (rdb --values): each one the line key_json makes of the key
    lined_digest = SnapshotDigest()
    lined, _ = _run(stream, chunk if data[0] & 1 else None, lines=lined_digest)
    assert _signature(lined, values=False) == _signature(whole, values=False)
    lines = {r.offset: r.line for r in lined if isinstance(r, KeyRecord) and r.line is not None}
    lined_digester = Digester()  # the keys the lane leaves to the readers add their part so
    lined_digester.snapshot = lined_digest
    for rec in lined:
        if isinstance(rec, KeyRecord) and rec.line is None:
            lined_digester.key(rec)
        elif isinstance(rec, AuxRecord):
            lined_digester.see(rec)
    summary = report.Summary("fuzz")
    digester = Digester()
    summary.digest = digester.snapshot
    for rec in whole:
        summary.add(rec)
        if isinstance(rec, KeyRecord):
            dumps(report.key_json(rec))
            obj = report.key_json(rec, digester, values=True)
            dumps(obj)
            if rec.offset in lines:
                assert lines[rec.offset] == dumps_line(obj, False), (rec.key, rec.vtype)
            "".join(safe(c) for c in report.key_row(rec))
            report.detail_rows(rec, 64)
        elif isinstance(rec, AuxRecord):
            digester.see(rec)
            dumps(report.aux_json(rec))
        elif isinstance(rec, OpRecord):
            dumps(function_json(rec))
    dumps(summary.to_json())
    assert lined_digest.hexdigest() == digester.snapshot.hexdigest()
    # one stripe's lines (rdb --jobs): those keys' lines as above, none of the others'
    striped, _ = _run(stream, chunk if data[0] & 1 else None, lines=SnapshotDigest(), stripe=(64, 0b01, 2))
    assert _signature(striped, values=False) == _signature(whole, values=False)
    for rec in striped:
        if isinstance(rec, KeyRecord) and rec.line is not None:
            assert rec.offset // 64 % 2 == 0 and rec.line == lines.get(rec.offset, rec.line), rec.key
    # the lane's commands (rdb --format resp): the Exporter's of the values kept
    from dcpinspect.families.redis.reports.export import Exporter

    def exported(recs, exporter, out):
        for rec in recs:
            if isinstance(rec, KeyRecord):
                exporter.key(rec)
            elif isinstance(rec, OpRecord):
                exporter.op(rec)
        return b"".join(out), exporter.commands, exporter.keys, exporter.skipped

    want_out, got_out = [], []
    want = exported(whole, Exporter(want_out.append), want_out)
    lane_exporter = Exporter(got_out.append)
    commanded, _ = _run(stream, chunk if data[0] & 2 else None, resp=lane_exporter)
    assert _signature(commanded, values=False) == _signature(whole, values=False)
    assert exported(commanded, lane_exporter, got_out) == want
    # a selection: the keys it admits, and no others, whatever the bytes
    select = KeySelection.from_options({"match": "*a*", "min_elements": 1})
    chosen, _ = _run(stream, chunk, keep=True, select=select)
    assert [r.offset for r in chosen if isinstance(r, KeyRecord)] == \
        [r.offset for r in whole if isinstance(r, KeyRecord) and select.admits(r, None)]
