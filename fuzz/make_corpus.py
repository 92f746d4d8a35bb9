"""Write the seed corpora of the fuzz campaigns: fuzz/corpus/<entry>/, from the samples/
and the spec vectors (tests/frames.py). Run again at any time; it rewrites only its seeds.

    python3 fuzz/make_corpus.py [DIR]       # DIR defaults to fuzz/corpus

Every seed starts with the decision bytes its harness reads (see ``Choices`` in
harness.py), then the input itself, so a seed is one input as the harness sees it.
"""

from __future__ import annotations

import hashlib
import random
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402  (puts tests/ on the path)
from dcpgen import Dcp  # noqa: E402
from frames import TAP_VECTORS, VECTORS  # noqa: E402

from dcpinspect.sources.capture import read_records  # noqa: E402
from dcpinspect.transport import synth  # noqa: E402

SAMPLES = harness.REPO / "samples"
#: capture seeds are cut to this many bytes of records (libFuzzer's -max_len follows the seeds)
MAX_SEED = 8192


def frames() -> dict[str, bytes]:
    out = {f"vector-{k}": bytes.fromhex(v) for k, v in VECTORS.items()}
    out.update({f"tap-{k}": bytes.fromhex(v) for k, v in TAP_VECTORS.items()})
    return out


def conversation(n: int) -> Dcp:
    d = Dcp(collections=n % 2 == 0).handshake(("max_marker_version", "2.2"), stream_ids=n % 3 == 0,
                                              buffer=4000 if n % 4 == 0 else 0)
    p = d.stream(5 + n, sid=1 if n % 3 == 0 else None)
    p.snapshot(3, version=("v1", "2.0", "2.2")[n % 3])
    p.snapshot(2, kind="deletion")
    p.system_event()
    d.noop()
    p.end()
    return d


def captures(fmt: str) -> dict[str, bytes]:
    """Small captures: samples cut to MAX_SEED bytes, and conversations over each link type."""
    out: dict[str, bytes] = {}
    root = harness._scratch()
    try:
        for sample in sorted(SAMPLES.glob(f"*.{fmt}")):
            out[f"sample-{sample.stem}"] = _cut(sample, fmt, root)
        for n, linktype in enumerate(("ether", "vlan", "ipv6", "sll", "sll2", "null", "raw")):
            packets = synth.tcp_conversation(conversation(n).frames, linktype=linktype, mss=(1460, 100, 40)[n % 3],
                                             reorder=[1] if n % 2 else [], duplicate=[2] if n % 3 else [])
            path = root / f"c.{fmt}"
            synth.write_pcap(path, packets, linktype, fmt=fmt, nanos=n % 2 == 1)
            out[f"dcp-{linktype}"] = _cut(path, fmt, root)
        if fmt == "pcapng":
            out.update(pcapng_options())
    finally:
        for p in root.iterdir():
            p.unlink()
        root.rmdir()
    return out


def _cut(path: Path, fmt: str, root: Path) -> bytes:
    """The file's first records, re-written, up to MAX_SEED bytes."""
    records = []
    size = 0
    for rec in read_records(path):
        if not hasattr(rec, "data"):
            continue
        size += len(rec.data) + 32
        if size > MAX_SEED and records:
            break
        records.append((rec.ts, rec.data, rec.linktype) if fmt == "pcapng" else (rec.ts, rec.data))
    out = root / f"cut.{fmt}"
    synth.write_pcap(out, records, records[0][2] if fmt == "pcapng" else _linktype(path), fmt=fmt)
    return out.read_bytes()


def _linktype(path: Path) -> int:
    return next(rec.linktype for rec in read_records(path) if hasattr(rec, "linktype"))


def pcapng_options() -> dict[str, bytes]:
    """pcapng files whose interface options set the time resolution and offset, with a
    simple packet block and an unknown block between the packets."""
    packets = synth.tcp_conversation(conversation(1).frames)
    shb = synth._block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    out = {}
    for name, opts in {"tsresol-ms": struct.pack("<HHB3x", 9, 1, 3),
                       "tsresol-pow2": struct.pack("<HHB3x", 9, 1, 0x80 | 20),
                       "tsoffset": struct.pack("<HHq", 14, 8, 1_000_000)}.items():
        idb = synth._block(1, struct.pack("<HHI", 1, 0, 65535) + opts + b"\0\0\0\0")
        body = [shb, idb]
        for i, p in enumerate(packets[:12]):
            pad = b"\0" * (-len(p) % 4)
            if i == 5:
                body.append(synth._block(3, struct.pack("<I", len(p)) + p + pad))  # simple packet block
                body.append(synth._block(0x0BAD, b"\1\2\3\4"))
            else:
                body.append(synth._block(6, struct.pack("<IIIII", 0, 0, i * 1000, len(p), len(p)) + p + pad))
        out[f"options-{name}"] = b"".join(body)
    return out


def hex_texts() -> dict[str, bytes]:
    from test_hexdump import _diagram, _hexdump_c_like, _plain, _xxd_like

    out = {f"sample-{p.stem}": p.read_bytes() for p in sorted(SAMPLES.glob("*.hex"))}
    for name, data in list(frames().items())[::3]:
        out[f"plain-{name}"] = _plain(data, len(name) % 5).encode()
    for name, data in list(frames().items())[1::6]:
        out[f"xxd-{name}"] = _xxd_like(data).encode()
        out[f"hexdump-C-{name}"] = _hexdump_c_like(data).encode()
        out[f"diagram-{name}"] = _diagram(data, 4, "    ").encode()
    packet = synth.tcp_conversation([("c2s", bytes.fromhex(VECTORS["14"]))], handshake=False, close=None,
                                    acks=False)[0]
    out["tcpdump-X"] = "".join(
        f"\t0x{i:04x}:  " + " ".join(packet[j:j + 2].hex() for j in range(i, min(i + 16, len(packet)), 2)) + "\n"
        for i in range(0, len(packet), 16)).encode()
    return out


def seeds() -> dict[str, dict[str, bytes]]:
    fr = frames()
    rng = random.Random(11)
    return {
        "frame": {f"{name}-m{mode}": bytes([mode]) + data for name, data in fr.items() for mode in (0, 0x45)},
        "render": {f"{name}": bytes([0, 100, 0x18]) + data for name, data in fr.items()}
        | {"stream": bytes([0, 60, 0x50]) + b"".join(fr.values())},
        "hex": {name: bytes([0]) + text for name, text in hex_texts().items()},
        "pcap": captures("pcap"),
        "pcapng": captures("pcapng"),
        "conversation": {f"random-{n}": rng.randbytes(n) for n in (16, 64, 200, 400, 800, 1600)},
    } | redis_seeds()


def redis_seeds() -> dict[str, dict[str, bytes]]:
    """Seeds of fuzz/redis_harness.py's journal, dfs and flow harnesses: records, sets and
    syncs as tests/dflygen.py builds them from spec/rdb.md's layouts."""
    import dflygen
    import rdbgen

    records = (dflygen.select(0) + dflygen.command("SET", "k", "v") + dflygen.lsn(1) + dflygen.PING
               + dflygen.select(3) + dflygen.command("DEL", "a", "b", txid=2) + dflygen.lsn(2))
    snapshot = dflygen.snapshot(0, 2, [dflygen.blob([("user:1", "alice"), ("n", "7")], "lz4"),
                                       dflygen.blob([("user:2", "bob" * 30)], "zstd"),
                                       dflygen.blob([("cfg", "y")], None)], 5)
    summary = (b"REDIS0009" + rdbgen.aux("df-ver", "v1.30.0") + rdbgen.aux("snapshot-id", "s1")
               + dflygen.aux_int("shard-count", 2) + dflygen.DF_EOF)
    shard = (b"REDIS0009" + rdbgen.aux("snapshot-id", "s1") + dflygen.aux_int("shard-id", 0)
             + dflygen.blob([("a", "1"), ("b", "2")], "lz4") + dflygen.DF_EOF)
    other = shard.replace(b"shard-id\xc0\x00", b"shard-id\xc0\x01").replace(b"a", b"c")
    return {
        "journal": {"records": bytes([8]) + records, "one-byte-chunks": bytes([0]) + records},
        "dfs": {"set": bytes([8]) + summary + shard + other, "far": bytes([12]) + summary + shard + other,
                "no-summary": bytes([0]) + shard + other},
        "flow": {"full": bytes([1 | 8 << 3]) + snapshot[9:] + b"t" * 40 + records, "partial": bytes([2 << 3]) + records},
    }


def main(argv: list[str]) -> None:
    root = Path(argv[1]) if len(argv) > 1 else HERE / "corpus"
    for entry, items in seeds().items():
        folder = root / entry
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in items.items():
            (folder / f"seed-{name}-{hashlib.sha1(data).hexdigest()[:8]}").write_bytes(data)
        print(f"{entry}: {len(items)} seeds in {folder}")


if __name__ == "__main__":
    main(sys.argv)
