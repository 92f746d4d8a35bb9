"""Writes tests/data/pcap/redis-two-syncs.pcap, the README's example of reports on a
capture of several full syncs: a real redis-server master (20 strings ``k:0`` ... ``k:19``
and a list ``l``), two replicas synced one after the other, ``k:3`` set to ``changed``
between them, captured with tcpdump on loopback (needs root)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import servers  # noqa: E402
from test_diff import TWO_SYNCS_WRITES, two_full_syncs  # noqa: E402


if __name__ == "__main__":
    out = Path(__file__).with_name("redis-two-syncs.pcap")
    servers.require("redis-server", "tcpdump", root=True)
    with tempfile.TemporaryDirectory() as tmp:
        two_full_syncs(Path(tmp), TWO_SYNCS_WRITES, Path(tmp) / "syncs.pcap")
        shutil.copy(Path(tmp) / "syncs.pcap", out)
    print(f"wrote {out}")
