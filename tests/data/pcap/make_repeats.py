"""Writes tests/data/pcap/dcp-repeats.pcap, the example of docs/validation.md of repeated findings folded
in validate's table: two DCP connections whose every mutation after the first on each
stream goes back in seqno (vbuckets 0 and 1, 40 mutations; vbucket 7, 30)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import dcpgen  # noqa: E402
from test_validate_cli import regressing_connection  # noqa: E402


if __name__ == "__main__":
    out = Path(__file__).with_name("dcp-repeats.pcap")
    dcpgen.write_flows([regressing_connection().frames, regressing_connection((7,), 30).frames], out)
    print(f"wrote {out}")
