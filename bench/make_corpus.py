"""Benchmark corpora: synthetic but realistic DCP captures, streamed to disk.

    python bench/make_corpus.py [--frames N] [--flows F] [--out DIR] [--big] [--only NAME ...]

Writes, in ``--out`` (default ``bench/out/corpus``, git-ignored):

``small-frames.pcap``
    N (default 200k) DCP frames with ~100-byte JSON values over F (default 16)
    interleaved flows: many frames per TCP segment (MSS 1460 and 8960).
``large-values.pcap``
    N/10 (default 20k) mutations with 8–64 KiB values spanning segments
    (MSS 1460, and 32 KiB "GRO-coalesced" segments on every other flow).
``many-flows.pcap``
    N/100 (default 2000) flows of 100 frames each, all open at once.
``big.pcap`` (``--big``)
    about 1 GiB of mixed traffic (mostly small values, some 1–4 KiB, a few
    8–64 KiB) over 64 flows, for the peak-memory target.

Each flow is a whole DCP conversation as a consumer sees it (see
``samples/make_samples.py``): TCP handshake, HELO with collections, DCP_OPEN,
DCP_CONTROLs, one STREAM_REQ per vbucket with its failover log, then from the
producer snapshot markers (v2.2), a system event, mutations with
collection-prefixed keys and JSON values (some snappy-compressed), deletions
(v2, with delete times), NOOPs answered by the client, buffer acknowledgements
from the client, STREAM_END per vbucket and a FIN close. Half the flows use
stream ids (flexible framing, magic 0x08).

Nothing holds a whole capture in memory: each flow is a generator of TCP
batches, flows are interleaved lazily and ``synth.write_pcap`` writes as it
goes. ``corpus.json`` next to the files records how many MCBP frames, flows
and packets each one holds (the oracle for ``bench/run.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import struct
import sys
import time
from pathlib import Path
from typing import Iterator

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dcpinspect.families.mcbp.messages import dcp  # noqa: E402
from dcpinspect.families.mcbp.messages.build import build_frame, request, response  # noqa: E402
from dcpinspect.families.mcbp.messages.codecs.frameinfo import encode_frame_info  # noqa: E402
from dcpinspect.families.mcbp.messages.codecs.leb128 import encode_uleb128  # noqa: E402
from dcpinspect.families.mcbp.messages.codecs.snappy import deflate  # noqa: E402
from dcpinspect.families.mcbp.messages.codecs.sysevent import encode_sysevent_value  # noqa: E402
from dcpinspect.transport import synth  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "out" / "corpus"

# --- fast frame packing (checked against build_frame at start-up) ------------------------

_HDR_FLEX = struct.Struct(">BBBBBBHIIQ")  # magic opcode framing_len key_len extras_len datatype vb body opaque cas
_HDR_CLASSIC = struct.Struct(">BBHBBHIIQ")  # magic opcode key_len extras_len datatype vb body opaque cas
_MUTATION = struct.Struct(">QQIIIHB")  # dcp.MUTATION: by_seqno rev_seqno flags expiration lock_time nmeta nru
_DELETION_V2 = struct.Struct(">QQIB")  # dcp.DELETION_V2: by_seqno rev_seqno delete_time unused
_U32 = struct.Struct(">I")

OP_MUTATION, OP_DELETION, OP_SNAPSHOT, OP_NOOP, OP_BUFFER_ACK = 0x57, 0x58, 0x56, 0x5C, 0x5D
OP_STREAM_END, OP_SYSTEM_EVENT, OP_STREAM_REQ, OP_CONTROL = 0x55, 0x5F, 0x53, 0x5E


def pack_request(opcode: int, framing: bytes, extras: bytes, key: bytes, value: bytes, vb: int, opaque: int,
                 cas: int = 0, datatype: int = 0) -> bytes:
    """A request frame: magic 0x08 when ``framing`` is given, else 0x80 (what build_frame makes)."""
    body = len(framing) + len(extras) + len(key) + len(value)
    if framing:
        hdr = _HDR_FLEX.pack(0x08, opcode, len(framing), len(key), len(extras), datatype, vb, body, opaque, cas)
    else:
        hdr = _HDR_CLASSIC.pack(0x80, opcode, len(key), len(extras), datatype, vb, body, opaque, cas)
    return b"".join((hdr, framing, extras, key, value))


def _self_check() -> None:
    sid = encode_frame_info(2, (7).to_bytes(2, "big"))
    key = encode_uleb128(8) + b"k::1"
    for framing in (b"", sid):
        magic = 0x08 if framing else 0x80
        want = build_frame(magic, OP_MUTATION, framing=framing, vbucket=5, opaque=9, key=key, datatype=1, cas=77,
                           extras=dcp.MUTATION.pack(by_seqno=3, rev_seqno=1, flags=2, expiration=4), value=b"{}")
        got = pack_request(OP_MUTATION, framing, _MUTATION.pack(3, 1, 2, 4, 0, 0, 0), key, b"{}", 5, 9, 77, 1)
        assert got == want, (got.hex(), want.hex())
        want = build_frame(magic, OP_DELETION, framing=framing, vbucket=5, opaque=9, key=key, cas=77,
                           extras=dcp.DELETION_V2.pack(by_seqno=3, rev_seqno=2, delete_time=11))
        got = pack_request(OP_DELETION, framing, _DELETION_V2.pack(3, 2, 11, 0), key, b"", 5, 9, 77)
        assert got == want


# --- values ---------------------------------------------------------------------------------

_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")


def json_doc(rng: random.Random, size: int) -> bytes:
    """A JSON object of about ``size`` bytes (padded with a text field)."""
    head = {
        "id": rng.randrange(10**9),
        "name": rng.choice(_WORDS) + "-" + rng.choice(_WORDS),
        "tags": rng.sample(_WORDS, 3),
        "score": round(rng.random() * 100, 3),
        "active": rng.random() < 0.5,
    }
    base = json.dumps(head, separators=(",", ":"))
    pad = max(0, size - len(base) - 10)
    if pad and pad > 64:  # long values: nested records rather than one long string
        items, n = [], 0
        while n < pad:
            item = {"k": rng.choice(_WORDS), "v": rng.randrange(10**6), "t": "x" * rng.randrange(8, 48)}
            items.append(item)
            n += len(json.dumps(item, separators=(",", ":"))) + 1
        head["items"] = items
    elif pad:
        head["pad"] = "p" * pad
    return json.dumps(head, separators=(",", ":")).encode()


class ValuePool:
    """Precomputed values: (datatype, bytes) picked at random, JSON or snappy JSON."""

    def __init__(self, rng: random.Random, sizes, n: int = 256, snappy: float = 0.1) -> None:
        self.items = []
        for _ in range(n):
            doc = json_doc(rng, sizes(rng))
            if rng.random() < snappy:
                self.items.append((0x03, deflate(doc)))
            else:
                self.items.append((0x01, doc))

    def pick(self, rng: random.Random) -> tuple[int, bytes]:
        return self.items[rng.randrange(len(self.items))]


# --- one DCP conversation -----------------------------------------------------------------


class DcpSession:
    """A consumer's DCP connection, as batches of writes ([(direction, bytes)]).

    Stops after ``max_frames`` MCBP frames (exactly, counting the teardown),
    ``max_bytes`` bytes of MCBP or ``max_mutations`` mutations (whichever comes
    first); ``frames`` and ``mutations`` count what it made.
    """

    def __init__(self, fid: int, rng: random.Random, pool: ValuePool, *, max_frames: int | None = None,
                 max_bytes: int | None = None, max_mutations: int | None = None, vbuckets: int = 4, snapshot: tuple[int, int] = (20, 60),
                 stream_ids: bool | None = None, deletions: float = 0.08, noop_every: int = 8,
                 ack_bytes: int = 128 * 1024) -> None:
        self.fid = fid
        self.rng = rng
        self.pool = pool
        self.max_frames = max_frames
        self.max_bytes = max_bytes
        self.vbs = [(fid * 7 + i * 131) % 1024 for i in range(vbuckets)]
        self.snapshot = snapshot
        self.sids = stream_ids if stream_ids is not None else fid % 2 == 1
        self.deletions = deletions
        self.noop_every = noop_every
        self.ack_bytes = ack_bytes
        self.max_mutations = max_mutations
        self.frames = 0
        self.bytes = 0
        self.mutations = 0
        self.cids = (0, 8, 9, 0x1F)

    def _w(self, out: list, direction: str, *frames: bytes) -> None:
        data = frames[0] if len(frames) == 1 else b"".join(frames)
        out.append((direction, data))
        self.frames += len(frames)
        self.bytes += len(data)

    def _setup(self) -> list[tuple[str, bytes]]:
        out: list = []
        name = b"dcpinspect-bench:%d" % self.fid
        feats = bytes.fromhex("0006000a000b0012")
        self._w(out, "c2s", build_frame(0x80, 0x1F, key=b"bench/%d" % self.fid, value=feats, opaque=1))
        self._w(out, "s2c", build_frame(0x81, 0x1F, value=feats, opaque=1))
        self._w(out, "c2s", request(0x50, dcp.OPEN, key=name, flags=0x01 | 0x04 | 0x20, opaque=2))
        self._w(out, "s2c", response(0x50, opaque=2))
        controls = [(b"enable_noop", b"true"), (b"set_noop_interval", b"60"),
                    (b"connection_buffer_size", b"10485760"), (b"max_marker_version", b"2.2")]
        if self.sids:
            controls.append((b"enable_stream_id", b"true"))
        for i, (k, v) in enumerate(controls):
            self._w(out, "c2s", build_frame(0x80, OP_CONTROL, key=k, value=v, opaque=3 + i))
            self._w(out, "s2c", response(OP_CONTROL, opaque=3 + i))
        self.seq = {}
        self.opaque = {}
        self.framing = {}
        for i, vb in enumerate(self.vbs):
            opq = 0x1000 + i
            self.opaque[vb] = opq
            self.seq[vb] = 0
            self.framing[vb] = encode_frame_info(2, (i + 1).to_bytes(2, "big")) if self.sids else b""
            value = b'{"sid":%d}' % (i + 1) if self.sids else b""
            self._w(out, "c2s", request(OP_STREAM_REQ, dcp.STREAM_REQ, vbucket=vb, opaque=opq, start_seqno=0,
                                        end_seqno=2**64 - 1, vbucket_uuid=0, snap_start_seqno=0,
                                        snap_end_seqno=0, value=value))
            uuid = 0x4F2A61D3C000 + self.fid * 16 + i
            self._w(out, "s2c", response(OP_STREAM_REQ, opaque=opq,
                                         value=dcp.FAILOVER_ENTRY.pack(vbucket_uuid=uuid, seqno=0)))
        return out

    def _snapshot(self, vb: int, first: bool) -> list[bytes]:
        rng = self.rng
        n = rng.randint(*self.snapshot)
        start = self.seq[vb] + 1
        end = self.seq[vb] + n + (1 if first else 0)
        framing, opq = self.framing[vb], self.opaque[vb]
        frames = [pack_request(OP_SNAPSHOT, framing, b"\x02", b"", dcp.SNAPSHOT_V22.pack(
            start_seqno=start, end_seqno=end, snapshot_type=0x05,
            max_visible_seqno=end, high_completed_seqno=0, purge_seqno=0, high_prepared_seqno=0), vb, opq)]
        seq = self.seq[vb]
        if first:  # the collections the keys use are created first
            seq += 1
            frames.append(pack_request(OP_SYSTEM_EVENT, framing, dcp.SYSTEM_EVENT.pack(by_seqno=seq, event=0,
                                                                                         version=0),
                                       b"orders", encode_sysevent_value(0, 0, manifest_uid=1, scope_id=0,
                                                                        collection_id=8), vb, opq))
        cas0 = 0x17E3A0B2C4D50000 + (self.fid << 20)
        pick, rand, cids = self.pool.pick, rng.random, self.cids
        for _ in range(n):
            seq += 1
            key = encode_uleb128(cids[seq & 3]) + b"doc::%06d::%010d" % (self.fid, seq)
            if seq > 8 and rand() < self.deletions:
                frames.append(pack_request(OP_DELETION, framing, _DELETION_V2.pack(seq, 2, 1763800000 + seq, 0),
                                           key, b"", vb, opq, cas0 + seq))
            else:
                dt, value = pick(rng)
                frames.append(pack_request(OP_MUTATION, framing, _MUTATION.pack(seq, 1, 0, 0, 0, 0, 0),
                                           key, value, vb, opq, cas0 + seq, dt))
        self.seq[vb] = seq
        return frames

    def _done(self) -> bool:
        return ((self.max_frames is not None and self.frames >= self.max_frames)
                or (self.max_bytes is not None and self.bytes >= self.max_bytes)
                or (self.max_mutations is not None and self.mutations >= self.max_mutations))

    def batches(self) -> Iterator[list[tuple[str, bytes]]]:
        yield self._setup()
        rng = self.rng
        unacked = 0
        first = set(self.vbs)
        k = 0
        reserve = len(self.vbs)  # stream ends at the close
        while True:
            out: list = []
            vb = self.vbs[rng.randrange(len(self.vbs))]
            frames = self._snapshot(vb, vb in first)
            room = None
            if self.max_frames is not None:  # trim the last snapshot to land on max_frames exactly
                room = self.max_frames - self.frames - reserve
            if self.max_mutations is not None:
                left = self.max_mutations - self.mutations + 1  # + the marker
                room = left if room is None else min(room, left)
            if room is not None:
                if room < len(frames):
                    if room < 1:
                        break
                    frames = frames[:room]
            first.discard(vb)
            self.mutations += sum(1 for f in frames if f[1] == OP_MUTATION)
            self._w(out, "s2c", *frames)
            unacked += len(out[-1][1])
            k += 1
            if unacked >= self.ack_bytes and (self.max_frames is None or
                                              self.frames + reserve + 1 <= self.max_frames):
                # the consumer acknowledges what it has processed
                self._w(out, "c2s", pack_request(OP_BUFFER_ACK, b"", _U32.pack(unacked), b"", b"", 0, 0))
                unacked = 0
            if k % self.noop_every == 0 and (self.max_frames is None or
                                             self.frames + reserve + 2 <= self.max_frames):
                self._w(out, "s2c", pack_request(OP_NOOP, b"", b"", b"", b"", 0, 0x7000 + k))
                self._w(out, "c2s", build_frame(0x81, OP_NOOP, opaque=0x7000 + k))
            yield out
            if self._done():
                break
        out = []
        ends = [pack_request(OP_STREAM_END, self.framing[vb], _U32.pack(0), b"", b"", vb, self.opaque[vb])
                for vb in self.vbs]
        self._w(out, "s2c", *ends)
        yield out


# --- TCP --------------------------------------------------------------------------------------


def flow_packets(session: DcpSession, client: tuple[str, int], server: tuple[str, int], mss: int,
                 isn: tuple[int, int], counts: dict) -> Iterator[list[bytes]]:
    """Link-layer frames of one connection, a batch of writes at a time, with continuous seqs."""
    nxt = isn
    M = 2**32
    prev = None
    first = True

    def emit(writes, last):
        nonlocal nxt, first
        segs = synth.tcp_segments(writes, mss=mss, isn=nxt, handshake=first, close="fin" if last else None)
        first = False
        c, s = nxt
        for seg in segs:
            step = len(seg.payload) + (1 if seg.flags & (synth.SYN | synth.FIN) else 0)
            if seg.direction == "c2s":
                c = (seg.seq + step) % M
            else:
                s = (seg.seq + step) % M
        nxt = (c, s)
        counts["packets"] += len(segs)
        return synth.frames(segs, client, server, "ether", checksum=False)

    for writes in session.batches():
        if prev is not None:
            yield emit(prev, False)
        prev = writes
    yield emit(prev, True)
    counts["frames"] += session.frames
    counts["mutations"] += session.mutations
    counts["flows"] += 1


def interleave(flows: list[Iterator[list[bytes]]], rng: random.Random) -> Iterator[bytes]:
    """Frames of all flows, one batch of a random live flow at a time."""
    live = list(flows)
    while live:
        i = rng.randrange(len(live))
        try:
            batch = next(live[i])
        except StopIteration:
            live[i] = live[-1]
            live.pop()
            continue
        yield from batch


class Sized:
    """Counts the frames and bytes written through it."""

    def __init__(self, it: Iterator[bytes], counts: dict) -> None:
        self.it = it
        self.counts = counts

    def __iter__(self):
        n = 0
        size = 0
        for f in self.it:
            n += 1
            size += len(f)
            yield f
        self.counts["records"] = n
        self.counts["wire_bytes"] = size


def _addr(i: int) -> tuple[tuple[str, int], tuple[str, int]]:
    return (f"10.1.{(i >> 8) & 255}.{(i & 255) + 1 if (i & 255) < 254 else 1}", 40000 + i % 20000), \
           (f"10.2.0.{i % 4 + 1}", 11210)


def _write(path: Path, flows: list, rng: random.Random, counts: dict) -> dict:
    t = time.perf_counter()
    synth.write_pcap(path, Sized(interleave(flows, rng), counts), "ether")
    counts["seconds"] = round(time.perf_counter() - t, 1)
    counts["file_bytes"] = path.stat().st_size
    return counts


def _counts() -> dict:
    return {"frames": 0, "flows": 0, "packets": 0, "mutations": 0}


def small_frames(path: Path, frames: int, nflows: int, seed: int = 1) -> dict:
    rng = random.Random(seed)
    pool = ValuePool(rng, lambda r: r.randint(80, 120))
    counts = _counts()
    per = [frames // nflows + (1 if i < frames % nflows else 0) for i in range(nflows)]
    flows = []
    for i in range(nflows):
        c, s = _addr(i)
        sess = DcpSession(i, random.Random(seed * 1000 + i), pool, max_frames=per[i])
        flows.append(flow_packets(sess, c, s, (1460, 8960)[i % 2], (rng.getrandbits(32), rng.getrandbits(32)),
                                  counts))
    return _write(path, flows, rng, counts)


def large_values(path: Path, mutations: int, nflows: int = 8, seed: int = 2) -> dict:
    rng = random.Random(seed)
    pool = ValuePool(rng, lambda r: r.randint(8 * 1024, 64 * 1024), n=48)
    counts = _counts()
    flows = []
    per = [mutations // nflows + (1 if i < mutations % nflows else 0) for i in range(nflows)]
    for i in range(nflows):
        c, s = _addr(i)
        sess = DcpSession(i, random.Random(seed * 1000 + i), pool, max_mutations=per[i], snapshot=(1, 4),
                          deletions=0.0, noop_every=64, ack_bytes=1 << 20)
        flows.append(flow_packets(sess, c, s, (1460, 32768)[i % 2], (rng.getrandbits(32), rng.getrandbits(32)),
                                  counts))
    return _write(path, flows, rng, counts)


def many_flows(path: Path, nflows: int, per_flow: int = 100, seed: int = 3) -> dict:
    rng = random.Random(seed)
    pool = ValuePool(rng, lambda r: r.randint(60, 400))
    counts = _counts()
    flows = []
    for i in range(nflows):
        c, s = _addr(i)
        sess = DcpSession(i, random.Random(seed * 100000 + i), pool, max_frames=per_flow, vbuckets=2,
                          snapshot=(5, 20), noop_every=4, ack_bytes=4096)
        flows.append(flow_packets(sess, c, s, 1460, (rng.getrandbits(32), rng.getrandbits(32)), counts))
    return _write(path, flows, rng, counts)


def big(path: Path, size: int = 1 << 30, nflows: int = 64, seed: int = 4) -> dict:
    rng = random.Random(seed)

    def sizes(r: random.Random) -> int:
        x = r.random()
        if x < 0.70:
            return r.randint(60, 300)
        if x < 0.95:
            return r.randint(1024, 4096)
        return r.randint(8 * 1024, 64 * 1024)

    pool = ValuePool(rng, sizes, n=512)
    counts = _counts()
    flows = []
    for i in range(nflows):
        c, s = _addr(i)
        sess = DcpSession(i, random.Random(seed * 1000 + i), pool, max_bytes=size // nflows)
        flows.append(flow_packets(sess, c, s, (1460, 8960, 1460, 32768)[i % 4],
                                  (rng.getrandbits(32), rng.getrandbits(32)), counts))
    return _write(path, flows, rng, counts)


CORPORA = ("small-frames", "large-values", "many-flows", "big")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=200_000, help="frames in small-frames (others scale: /10, /100)")
    ap.add_argument("--flows", type=int, default=16, help="flows in small-frames")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--big", action="store_true", help="also write big.pcap (about 1 GiB)")
    ap.add_argument("--big-size", type=int, default=1 << 30, help="bytes of MCBP in big.pcap")
    ap.add_argument("--only", nargs="*", choices=CORPORA, help="only these corpora")
    args = ap.parse_args(argv)
    _self_check()
    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out / "corpus.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    todo = list(args.only) if args.only else [c for c in CORPORA if c != "big" or args.big]
    for name in todo:
        path = args.out / f"{name}.pcap"
        if name == "small-frames":
            counts = small_frames(path, args.frames, args.flows)
        elif name == "large-values":
            counts = large_values(path, max(1, args.frames // 10))
        elif name == "many-flows":
            counts = many_flows(path, max(1, args.frames // 100))
        else:
            counts = big(path, args.big_size)
        manifest[path.name] = counts
        manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        print(f"{path}: {counts['frames']:,} MCBP frames ({counts['mutations']:,} mutations), {counts['flows']:,} flows, {counts['records']:,} packets, "
              f"{counts['file_bytes'] / 2**20:,.1f} MiB in {counts['seconds']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
