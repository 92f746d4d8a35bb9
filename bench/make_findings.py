"""Two captures of the same size for the validator's findings path:

    python bench/make_findings.py [--findings N] [--flows F] [--out DIR]

``findings.pcap``: F connections (default 8), each streaming 4 vbuckets, whose N
mutations in all (default 1,000,000) each go back in seqno: a seqno-regression finding
on every one. ``clean.pcap``: the same connections with the seqnos in order, the same
number of frames and bytes, no finding. ``validate`` on the first against the second
measures what a million findings cost in time and memory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import dcpgen  # noqa: E402

TOP = 1 << 40


def connection(mutations: int, regress: bool) -> list:
    d = dcpgen.Dcp().handshake()
    streams = [d.stream(vb) for vb in range(4)]
    for p in streams:
        p.marker(1, TOP)
    for i in range(mutations):
        seqno = TOP - 1 - i if regress else 2 + i
        streams[i % 4].mutation(seqno=seqno)
    return d.frames


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--findings", type=int, default=1_000_000)
    ap.add_argument("--flows", type=int, default=8)
    ap.add_argument("--out", type=Path, default=Path("bench/out/findings"))
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    each = a.findings // a.flows
    for name, regress in (("findings.pcap", True), ("clean.pcap", False)):
        flows = [connection(each, regress) for _ in range(a.flows)]
        path = dcpgen.write_flows(flows, a.out / name)
        print(f"{path}: {path.stat().st_size / 2**20:.1f} MiB, {a.flows * each:,} mutations")


if __name__ == "__main__":
    main()
