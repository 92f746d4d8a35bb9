"""List values (feature lists, failover logs) of any length: every entry reaches the JSON
value, and at most MAX_ENTRY_ROWS rows are made for the views."""

from __future__ import annotations

import tracemalloc

from dcpinspect.families.mcbp.messages import dcp
from dcpinspect.families.mcbp.messages.build import build_frame
from dcpinspect.families.mcbp.messages.frame import DecodeContext, decode_frame
from dcpinspect.families.mcbp.messages.values import MAX_ENTRY_ROWS


def _value_field(msg, name):
    (field,) = [f for sec in msg.sections for f in sec.fields if f.name == name]
    return field


def test_a_huge_feature_list_keeps_every_name_and_few_rows():
    n = MAX_ENTRY_ROWS * 4 + 3
    value = bytes.fromhex("0006") * (n - 1) + bytes.fromhex("7777")
    frame = build_frame(0x81, 0x1F, value=value)
    tracemalloc.start()
    msg = decode_frame(frame, 0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    names = msg.fields["features"]
    assert len(names) == n and names[0] == "Xattr" and names[-1] == "0x7777"
    field = _value_field(msg, "features")
    assert len(field.children) == MAX_ENTRY_ROWS + 1
    more = field.children[-1]
    assert more.display.startswith(f"{n - MAX_ENTRY_ROWS:,} more entries")
    assert more.offset == field.offset + 2 * MAX_ENTRY_ROWS and more.offset + more.size == field.offset + field.size
    assert f"({n:,} in all)" in field.display
    # past the cap an entry costs its place in the names list, not a row: compare with a
    # list four times as long
    tracemalloc.start()
    decode_frame(build_frame(0x81, 0x1F, value=value * 4), 0)
    more_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert more_peak - peak < 40 * 3 * n, (peak, more_peak)
    lean = decode_frame(frame, 0, DecodeContext(detail=False))
    assert lean.fields["features"] == names


def test_a_huge_failover_log_keeps_every_entry_and_few_rows():
    n = MAX_ENTRY_ROWS + 10
    log = b"".join(dcp.FAILOVER_ENTRY.pack(vbucket_uuid=i + 1, seqno=i) for i in range(n))
    msg = decode_frame(build_frame(0x81, 0x53, value=log), 0)
    entries = msg.fields["failover_log"]
    assert len(entries) == n and entries[-1] == {"vbucket_uuid": n, "seqno": n - 1}
    field = _value_field(msg, "failover_log")
    assert len(field.children) == MAX_ENTRY_ROWS + 1 and field.children[-1].display.startswith("10 more entries")
