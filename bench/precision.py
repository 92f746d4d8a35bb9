"""Which connections each protocol family claims, capture by capture: the precision of
detection on ports no family owns, and its recall on captures of our own protocols.

    python bench/precision.py NEGATIVES... [--positive DIR_OR_FILE ...] [--all] [--json]

Every capture under the folders given as negatives is of some other protocol (a capture
also given with ``--positive`` is left out of them): a connection any family claims there
is a false positive, unless it is on a port the family owns (``(port)`` in the list). Every capture given with
``--positive`` is of our protocols: each of its TCP connections that carries data should
be claimed. Captures are read as ``decode`` reads them, with the heuristic on and no port
added; a connection is claimed when the engine hands it to a family (by its port, its
server or its first bytes). A capture that cannot be read is counted apart.

The negative corpus docs/detection.md quotes is ntop/nDPI's ``tests/cfgs/default/pcap`` folder
(some 540 public captures of other protocols; its ``resp.pcap`` is Redis, given as a
positive) with what ``bench/make_detection_corpus.py`` captures of memcached's text
protocol; the positives are ``samples/``, that ``resp.pcap``, and the real servers'
captures ``bench/make_detection_corpus.py`` takes. ``--no-ports`` and ``--no-servers``
measure the sniffers alone. Exit 1 when a connection is claimed off its family's ports
in a negative, or missed in a positive.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dcpinspect.engines.connections import CaptureDecoder  # noqa: E402
from dcpinspect.families import HEADERS  # noqa: E402
from dcpinspect.sources.capture import CaptureError, CaptureProblem, read_records  # noqa: E402
from dcpinspect.transport.packet import Skip, parse_record  # noqa: E402

SUFFIXES = (".pcap", ".pcapng", ".cap", ".pcap.gz", ".pcapng.gz")


class Claims(CaptureDecoder):
    """The capture engine, noting each connection it hands to a family and why: its
    ``port``, its ``server`` (shown speaking the family by another connection) or its
    bytes (``sniffed``). ``ports``: False to own no port, so that every connection is sniffed."""

    def __init__(self, ports: bool = True, servers: bool = True) -> None:
        super().__init__(detail=HEADERS)
        self.use_servers = servers
        if not ports:
            self.by_port.clear()
            self.encrypted.clear()
            self.reassembler.server_ports = frozenset()
        self.claimed: dict[tuple, str] = {}
        self.carried: set[tuple] = set()
        self.current = None

    def _decode_as(self, fd, family) -> None:
        how = "port" if fd.key[3] in self.by_port else "sniffed" if fd is self.current else "server"
        self.claimed.setdefault(fd.key, f"{family.name} ({how})")
        super()._decode_as(fd, family)
        if not self.use_servers:
            self.servers.clear()

    def _server_known(self, server, family, out) -> None:
        if self.use_servers:
            super()._server_known(server, family, out)

    def _data(self, fd, ev, out) -> None:
        self.current = fd
        try:
            super()._data(fd, ev, out)
        finally:
            self.current = None
        self.carried.add(fd.key)  # as it stands: turned round if its sides were guessed wrong

    def _turn(self, und) -> None:
        old = und.flow
        super()._turn(und)
        if old in self.carried:
            self.carried.discard(old)
            self.carried.add(und.flow)


def claims(path: Path, ports: bool = True, servers: bool = True) -> tuple[dict[tuple, str], set[tuple]]:
    """The connections of one capture a family claimed (flow → family and why), and those
    that carried any bytes."""
    dec = Claims(ports, servers)
    for rec in read_records(path):
        if isinstance(rec, CaptureProblem):
            continue
        seg = parse_record(rec)
        if isinstance(seg, Skip):
            continue
        dec.feed(seg)
    dec.finish()
    return dec.claimed, dec.carried


def captures(paths: list[str]) -> list[Path]:
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(f for f in p.rglob("*") if f.is_file() and f.name.lower().endswith(SUFFIXES))
        elif p.is_file():
            out.append(p)
    return out


def label(flow: tuple) -> str:
    c, cp, s, sp = flow
    return f"{c}:{cp}-{s}:{sp}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("negatives", nargs="*", help="folders or files of captures of other protocols")
    ap.add_argument("--positive", action="append", default=[], help="a folder or file of captures of ours")
    ap.add_argument("--all", action="store_true", help="list every capture, not only those with claims")
    ap.add_argument("--json", action="store_true", help="one JSON object per capture")
    ap.add_argument("--no-ports", action="store_true",
                    help="own no port: every connection is sniffed (the sniffers' precision and recall alone)")
    ap.add_argument("--no-servers", action="store_true",
                    help="take no connection by its server's other connections: each on its own bytes")
    args = ap.parse_args(argv)
    totals = Counter()
    by_family = Counter()
    positives = captures(args.positive)
    given = {p.resolve() for p in positives}
    negatives = [p for p in captures(args.negatives) if p.resolve() not in given]
    for kind, paths in (("negative", negatives), ("positive", positives)):
        for path in paths:
            try:
                claimed, carried = claims(path, not args.no_ports, not args.no_servers)
            except CaptureError:
                totals[f"{kind} unreadable"] += 1
                continue
            totals[f"{kind} captures"] += 1
            totals[f"{kind} connections"] += len(carried)
            totals[f"{kind} claimed"] += len(claimed)
            missed = sorted(carried - set(claimed)) if kind == "positive" else []
            totals[f"{kind} missed"] += len(missed)
            if kind == "negative":
                by_family.update(claimed.values())
                totals["negative captures with a claim"] += bool(claimed)
            shown = claimed or missed or args.all
            if args.json:
                print(json.dumps({"capture": os.fspath(path), "kind": kind, "connections": len(carried),
                                  "claimed": {label(f): n for f, n in sorted(claimed.items())},
                                  "missed": [label(f) for f in missed]}))
            elif shown:
                text = ", ".join(f"{label(f)} {n}" for f, n in sorted(claimed.items())) or "-"
                extra = f"; missed {', '.join(map(label, missed))}" if missed else ""
                print(f"{kind:8} {path}: {len(carried)} connections, claimed: {text}{extra}")
    summary = dict(sorted(totals.items()))
    summary["negative claims by family"] = dict(sorted(by_family.items()))
    print(json.dumps(summary) if args.json else "\n".join(f"{k}: {v}" for k, v in summary.items()))
    wrong = sum(n for name, n in by_family.items() if not name.endswith("(port)"))
    return 1 if wrong or totals["positive missed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
