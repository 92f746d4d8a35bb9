"""Dragonfly replication traffic for the tests, built from the layouts of spec/rdb.md
(§8 opcodes, §9 journal records, §13 the control and FLOW connections): journal records
and their LSN ops, the snapshot of one shard as a FULL flow sends it (REDIS0009, its AUX
fields, records in LZ4 / ZSTD blobs made with the real ``lz4`` and ``zstandard``,
JOURNAL_BLOBs, FULLSYNC_END, JOURNAL_OFFSET, EOF, the eof token), and whole syncs (a
control connection and N FLOW connections, their packets in the order the replica and
master exchange them) written as pcap."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import lz4.frame
import zstandard

import rdbgen
from dcpinspect.transport import synth

length = rdbgen.length  # §9: every journal integer is a packed uint, the RDB length encoding
REPLID = "f" * 8 + "0123456789abcdef" * 2
MASTER = ("10.0.0.2", 6379)
REPLICA = "10.0.0.1"


# -- §9 journal records ------------------------------------------------------------------------

def select(db: int) -> bytes:
    return b"\x06" + length(db)


def command(*words: str | bytes, txid: int = 1, db: int | None = 0) -> bytes:
    """A COMMAND record (with the SELECT the writer puts before it, unless ``db`` is None)."""
    strings = [w.encode() if isinstance(w, str) else w for w in words]
    body = (b"\x0a" + length(txid) + length(1) + length(len(strings)) + length(sum(map(len, strings)))
            + b"".join(length(len(s)) + s for s in strings))
    return (select(db) if db is not None else b"") + body


def lsn(n: int) -> bytes:
    return b"\x0f" + length(n)


PING = b"\x0d"


# -- §8.2 opcodes ------------------------------------------------------------------------------

def journal_blob(record: bytes) -> bytes:
    return b"\xd2" + length(1) + rdbgen.string(record)


FULLSYNC_END = b"\xc8" + bytes(8)


def journal_offset(n: int) -> bytes:
    return b"\xd3" + struct.pack("<Q", n)


DF_EOF = b"\xff" + bytes(8)  # a Dragonfly stream's checksum is 0 (not computed)


def lz4_blob(records: bytes) -> bytes:
    frame = lz4.frame.compress(records)
    return b"\xca" + length(len(frame)) + frame


def zstd_blob(records: bytes) -> bytes:
    frame = zstandard.ZstdCompressor(level=3, write_content_size=True).compress(records)
    return b"\xc9" + length(len(frame)) + frame


def string_key(name: str, value: str) -> bytes:
    return rdbgen.key(0, name, rdbgen.string(value))


def blob(keys: list[tuple[str, str]], compress: str | None, db: int = 0) -> bytes:
    """One flushed blob of a shard: SELECTDB then the records, compressed or not (§8.4)."""
    records = b"\xfe" + length(db) + b"".join(string_key(k, v) for k, v in keys)
    if compress == "lz4":
        return lz4_blob(records)
    if compress == "zstd":
        return zstd_blob(records)
    return records


def aux_int(key: str, value: int) -> bytes:
    """An AUX field whose value is integer-encoded (``SaveAuxFieldStrInt``)."""
    return b"\xfa" + rdbgen.string(key) + rdbgen.int_string(value)


def snapshot(shard: int, shards: int, blobs: list[bytes], journal_offset_lsn: int, *, fullsync_end: bool = True,
             during: list[bytes] = (), offset_before_end: bool = False) -> bytes:
    """A FULL flow's RDB (§13.2): header and AUX fields (shard 0 with the summary's), the
    blobs with the journal records of writes during the snapshot between them, FULLSYNC_END,
    then (what STARTSTABLE ends it with) JOURNAL_OFFSET and EOF."""
    head = b"REDIS0009" + rdbgen.aux("redis-ver", "7.4.0") + rdbgen.aux("df-ver", "v1.30.0")
    head += aux_int("redis-bits", 64) + aux_int("ctime", 1_700_000_000)
    if shard == 0:
        head += aux_int("shard-count", shards)
    head += aux_int("shard-id", shard)
    body = b""
    for i, b in enumerate(blobs):
        body += b
        if i < len(during):
            body += journal_blob(during[i])
    tail = journal_offset(journal_offset_lsn)
    if offset_before_end:  # JOURNAL_OFFSET before FULLSYNC_END: the cut came late
        return head + body + tail + (FULLSYNC_END if fullsync_end else b"") + DF_EOF
    return head + body + (FULLSYNC_END if fullsync_end else b"") + tail + DF_EOF


# -- §13 the connections -------------------------------------------------------------------------

def inline(*words: str) -> bytes:
    """Dragonfly replicas send their commands inline (§13)."""
    return " ".join(words).encode() + b"\r\n"


def capa_answer(replid: str, sync: int, flows: int, version: int = 5, lineage: str = "1" * 40) -> bytes:
    return (b"*5\r\n+%s\r\n+SYNC%d\r\n:%d\r\n:%d\r\n+%s\r\n"
            % (replid.encode(), sync, flows, version, lineage.encode()))


def flow_answer(kind: str, token: bytes) -> bytes:
    return b"*2\r\n+" + kind.encode() + b"\r\n+" + token + b"\r\n"


def token_of(i: int) -> bytes:
    """The 40 random hex chars of flow ``i``'s eof token (fixed here)."""
    return (b"%02x" % (0x30 + i)) * 20


@dataclass
class Capture:
    """Connections to one master, their messages in the order they were exchanged."""

    master: tuple[str, int] = MASTER
    clients: list[tuple[str, int]] = field(default_factory=list)
    steps: list[tuple[int, str, bytes]] = field(default_factory=list)

    def connection(self, port: int, host: str = REPLICA) -> int:
        self.clients.append((host, port))
        return len(self.clients) - 1

    def send(self, conn: int, direction: str, data: bytes) -> None:
        if data:
            self.steps.append((conn, direction, data))

    def write(self, path: Path, mss: int = 1460, drop: dict[int, list[int]] | None = None) -> Path:
        """The pcap: each connection's handshake before its first message, its FIN after
        the last message of all; ``drop``: data segments (numbered per connection) lost."""
        drop = drop or {}
        order: list[tuple[float, int, object]] = []
        for conn, client in enumerate(self.clients):
            mine = [(i, d, data) for i, (c, d, data) in enumerate(self.steps) if c == conn]
            if not mine:
                continue
            segs = synth.tcp_segments([(d, data) for _, d, data in mine], mss=mss, acks=False)
            segs = synth.impair(segs, drop=drop.get(conn, ()))
            ends = {"c2s": [], "s2c": []}  # a direction's message ends, with their steps
            at = {"c2s": 0, "s2c": 0}
            for i, d, data in mine:
                at[d] += len(data)
                ends[d].append((at[d], i))
            first, last = mine[0][0], len(self.steps)
            for n, seg in enumerate(segs):
                if seg.payload:
                    step = next(i for end, i in ends[seg.direction] if seg.offset < end)
                else:
                    step = first - 0.5 if seg.flags & synth.SYN or n < 3 else last + conn
                order.append((step, n, (seg, client)))
        order.sort(key=lambda o: (o[0], o[1]))
        ids = {}
        frames = []
        for _, _, (seg, client) in order:
            key = (client, seg.direction)
            ids[key] = ids.get(key, 0x1000) + 1
            frames.append(synth.frame(seg, client, self.master, "ether", ip_id=ids[key]))
        synth.write_pcap(path, frames, "ether", dt=1e-5)
        return Path(path)


def full_sync(shards: list[list[list[tuple[str, str]]]], *, path: Path, replid: str = REPLID, sync: int = 1,
              announced: int | None = None, opened: list[int] | None = None, flow_sync: dict[int, int] | None = None,
              compress: str | None = "lz4", start_lsn: int = 1000, stable: dict[int, list[bytes]] | None = None,
              during: dict[int, list[bytes]] | None = None, fullsync_end: set[int] | None = None,
              control: bool = True, sync_command: bool = True, partial: dict[int, int] | None = None,
              drop: dict[int, list[int]] | None = None, mss: int = 1460, acks: bool = True,
              port: int = MASTER[1]) -> Capture:
    """A whole Dragonfly full sync, as pcap: the control connection's handshake (announcing
    ``announced`` flows, len(shards) by default), a FLOW connection per shard in ``opened``
    (all by default; ``flow_sync`` gives a flow another SYNC id), DFLY SYNC, each shard's
    snapshot (``shards[i]``: its blobs, each a list of keys; ``during[i]``: journal records
    sent between them), DFLY STARTSTABLE, then each flow's end of snapshot (JOURNAL_OFFSET
    ``start_lsn + 100*i``, EOF, token) and its stable-sync journal (``stable[i]``), with a
    REPLCONF ACK of the records executed. ``sync_command`` False: the control connection
    sends neither DFLY SYNC nor STARTSTABLE (the capture missed them). ``partial``: flows that ask for (and get) a
    partial sync from an LSN. ``fullsync_end``: the flows whose snapshot has FULLSYNC_END
    (all by default)."""
    n = len(shards)
    announced = n if announced is None else announced
    opened = list(range(n)) if opened is None else opened
    flow_sync = flow_sync or {}
    stable = stable or {}
    during = during or {}
    partial = partial or {}
    fullsync_end = set(range(n)) if fullsync_end is None else fullsync_end
    cap = Capture((MASTER[0], port))
    ctl = cap.connection(40000)
    if control:
        for cmd, answer in ((inline("PING"), b"+PONG\r\n"), (inline("REPLCONF", "listening-port", "6380"), b"+OK\r\n"),
                            (inline("REPLCONF", "capa", "eof", "capa", "psync2"), b"+OK\r\n"),
                            (inline("REPLCONF", "capa", "dragonfly"), capa_answer(replid, sync, announced)),
                            (inline("REPLCONF", "CLIENT-ID", "r" * 40), b"+OK\r\n"),
                            (inline("REPLCONF", "CLIENT-VERSION", "5"), b"+OK\r\n")):
            cap.send(ctl, "c2s", cmd)
            cap.send(ctl, "s2c", answer)
    flows = {}
    for i in opened:
        conn = flows[i] = cap.connection(40001 + i)
        words = ["DFLY", "FLOW", replid, f"SYNC{flow_sync.get(i, sync)}", str(i)]
        if i in partial:
            words.append(str(partial[i]))
        cap.send(conn, "c2s", inline(*words))
        cap.send(conn, "s2c", flow_answer("PARTIAL" if i in partial else "FULL", token_of(i)))
    if sync_command and control:
        cap.send(ctl, "c2s", inline("DFLY", "SYNC", f"SYNC{sync}"))
        cap.send(ctl, "s2c", b"+OK\r\n")
    bodies = {}
    for i in opened:
        if i in partial or i >= n:
            continue
        blobs = [blob(keys, compress) for keys in shards[i]]
        whole = snapshot(i, n, blobs, start_lsn + 100 * i, fullsync_end=i in fullsync_end,
                         during=during.get(i, []))
        tail = journal_offset(start_lsn + 100 * i) + DF_EOF
        assert whole.endswith(tail)
        bodies[i] = tail + token_of(i)
        cap.send(flows[i], "s2c", whole[:-len(tail)])
    if sync_command and control:
        cap.send(ctl, "c2s", inline("DFLY", "STARTSTABLE", f"SYNC{sync}"))
        cap.send(ctl, "s2c", b"+OK\r\n")
    for i in opened:
        if i in bodies:
            cap.send(flows[i], "s2c", bodies[i])
    for i in opened:
        records = stable.get(i, [])
        if records:
            cap.send(flows[i], "s2c", b"".join(records))
            if acks:
                first = partial.get(i, start_lsn + 100 * i)
                executed = first + sum(1 for r in records if r[:1] != b"\x0f")
                cap.send(flows[i], "c2s", inline("REPLCONF", "ACK", str(executed)))
    cap.write(path, mss=mss, drop=drop)
    return cap
