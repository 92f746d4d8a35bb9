"""Synthetic TCP conversations and capture files, built with ``struct``.

Typical use::

    frames = synth.tcp_conversation([("c2s", req), ("s2c", resp)], linktype="sll2")
    synth.write_pcap(tmp_path / "x.pcapng", frames, "sll2", fmt="pcapng")

or step by step: ``tcp_segments`` (what is sent), ``impair`` (drop / duplicate /
reorder), ``frames`` (bytes on the wire for a link type), ``write_pcap``.
"""

from __future__ import annotations

import gzip
import ipaddress
import os
import struct
from dataclasses import dataclass
from typing import Iterable, Sequence

__all__ = [
    "TcpSeg", "LINKTYPES", "tcp_segments", "impair", "frame", "frames", "tcp_conversation",
    "write_pcap",
]

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10

#: link type names accepted here -> pcap LINKTYPE_ value
LINKTYPES = {
    "ether": 1, "vlan": 1, "qinq": 1, "ipv6": 1,
    "sll": 113, "sll2": 276, "null": 0, "loop": 108,
    "raw": 101, "raw4": 228, "raw6": 229,
}

Addr = tuple[str, int]


@dataclass(frozen=True, slots=True)
class TcpSeg:
    """One TCP segment of a conversation; ``offset`` is the payload's byte
    offset in its direction's stream (-1 for segments without payload)."""

    direction: str
    seq: int
    ack: int
    flags: int
    payload: bytes = b""
    offset: int = -1


def tcp_segments(messages: Iterable[tuple[str, bytes]], *, mss: int = 1460, split: int = 1,
                 isn: int | tuple[int, int] = (0x1A2B3C4D, 0x5E6F7081), handshake: bool = True,
                 close: str | None = "fin", acks: bool = True) -> list[TcpSeg]:
    """Segments of a conversation carrying ``messages`` ('c2s'|'s2c', bytes) in order.

    Each message is cut into ``split`` near-equal parts, each part into chunks of
    at most ``mss`` bytes. ``acks``: the receiver acknowledges every message
    with a pure ACK. ``close``: 'fin' (FIN both ways), 'rst' (client RST) or None.
    Sequence numbers wrap at 2**32.
    """
    cisn, sisn = (isn, isn ^ 0x5A5A5A5A) if isinstance(isn, int) else isn
    nxt = {"c2s": cisn % 2**32, "s2c": sisn % 2**32}
    off = {"c2s": 0, "s2c": 0}
    other = {"c2s": "s2c", "s2c": "c2s"}
    out: list[TcpSeg] = []
    M = 2**32
    if handshake:
        out.append(TcpSeg("c2s", nxt["c2s"], 0, SYN))
        out.append(TcpSeg("s2c", nxt["s2c"], (nxt["c2s"] + 1) % M, SYN | ACK))
        nxt["c2s"] = (nxt["c2s"] + 1) % M
        nxt["s2c"] = (nxt["s2c"] + 1) % M
        out.append(TcpSeg("c2s", nxt["c2s"], nxt["s2c"], ACK))
    for direction, msg in messages:
        if direction not in nxt:
            raise ValueError(f"direction must be 'c2s' or 's2c', not {direction!r}")
        peer = other[direction]
        chunks = []
        n = max(1, split)
        bounds = [len(msg) * i // n for i in range(n + 1)]
        for a, b in zip(bounds, bounds[1:]):
            for c in range(a, b, mss):
                chunks.append(msg[c:min(b, c + mss)])
        chunks = [c for c in chunks if c]
        for i, chunk in enumerate(chunks):
            flags = ACK | (PSH if i == len(chunks) - 1 else 0)
            out.append(TcpSeg(direction, nxt[direction], nxt[peer], flags, chunk, off[direction]))
            nxt[direction] = (nxt[direction] + len(chunk)) % M
            off[direction] += len(chunk)
        if acks and chunks:
            out.append(TcpSeg(peer, nxt[peer], nxt[direction], ACK))
    if close == "fin":
        out.append(TcpSeg("c2s", nxt["c2s"], nxt["s2c"], FIN | ACK))
        nxt["c2s"] = (nxt["c2s"] + 1) % M
        out.append(TcpSeg("s2c", nxt["s2c"], nxt["c2s"], FIN | ACK))
        nxt["s2c"] = (nxt["s2c"] + 1) % M
        out.append(TcpSeg("c2s", nxt["c2s"], nxt["s2c"], ACK))
    elif close == "rst":
        out.append(TcpSeg("c2s", nxt["c2s"], nxt["s2c"], RST | ACK))
    elif close is not None:
        raise ValueError(f"close must be 'fin', 'rst' or None, not {close!r}")
    return out


def impair(segs: Sequence[TcpSeg], *, drop: Iterable[int] = (), duplicate: Iterable[int] = (),
           reorder: Iterable[int] = ()) -> list[TcpSeg]:
    """Drop, duplicate or reorder data segments, numbered 0.. over the segments
    that carry payload. ``reorder``: segment k is sent after data segment k+1."""
    drop, duplicate, reorder = set(drop), set(duplicate), set(reorder)
    out: list[TcpSeg] = []
    held: list[TcpSeg] = []
    k = -1
    for s in segs:
        if not s.payload:
            out.append(s)
            continue
        k += 1
        if k in drop:
            continue
        batch = [s, s] if k in duplicate else [s]
        if k in reorder:
            held.extend(batch)
            continue
        out.extend(batch)
        if held:
            out.extend(held)
            held = []
    out.extend(held)
    return out


def _csum(data: bytes) -> int:
    """Internet checksum in host byte order (pack it with '=H')."""
    if len(data) & 1:
        data += b"\0"
    s = sum(memoryview(data).cast("H"))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


_MAC_C = b"\x02\x00\x00\x00\x00\x01"
_MAC_S = b"\x02\x00\x00\x00\x00\x02"
_TCP_HDR = struct.Struct("!HHIIHHHH")
_IP4_HDR = struct.Struct("!BBHHHBBH4s4s")
_IP6_HDR = struct.Struct("!IHBB16s16s")
_HOST_H = struct.Struct("=H")


def _addr_bytes(ip: str, v6: bool) -> bytes:
    a = ipaddress.ip_address(ip)
    if v6 and a.version == 4:
        return b"\xfd" + b"\0" * 11 + a.packed  # fd00::a.b.c.d
    return a.packed


def frame(seg: TcpSeg, client: Addr = ("10.0.0.1", 50000), server: Addr = ("10.0.0.2", 11210),
          linktype: str = "ether", *, ip_id: int = 0, checksum: bool = True) -> bytes:
    """The bytes of one segment as captured on ``linktype``."""
    if linktype not in LINKTYPES:
        raise ValueError(f"unknown link type {linktype!r}; one of {sorted(LINKTYPES)}")
    (sip, sport), (dip, dport) = (client, server) if seg.direction == "c2s" else (server, client)
    v6 = linktype in ("ipv6", "raw6") or ":" in sip or ":" in dip
    src, dst = _addr_bytes(sip, v6), _addr_bytes(dip, v6)
    opts = b"\x02\x04\x05\xb4" if seg.flags & SYN else b""  # MSS 1460 on SYNs
    doff = (20 + len(opts)) // 4
    tcp_len = 20 + len(opts) + len(seg.payload)
    tcp = _TCP_HDR.pack(sport, dport, seg.seq % 2**32, seg.ack % 2**32, (doff << 12) | seg.flags,
                        65535, 0, 0) + opts + seg.payload
    if checksum:
        if v6:
            pseudo = src + dst + struct.pack("!IxxxB", tcp_len, 6)
        else:
            pseudo = src + dst + struct.pack("!xBH", 6, tcp_len)
        tcp = tcp[:16] + _HOST_H.pack(_csum(pseudo + tcp)) + tcp[18:]
    if v6:
        ip = _IP6_HDR.pack(0x60000000, tcp_len, 6, 64, src, dst) + tcp
        ethertype, af_null, af_loop = 0x86DD, 30, 24
    else:
        hdr = _IP4_HDR.pack(0x45, 0, 20 + tcp_len, ip_id & 0xFFFF, 0x4000, 64, 6, 0, src, dst)
        if checksum:
            hdr = hdr[:10] + _HOST_H.pack(_csum(hdr)) + hdr[12:]
        ip = hdr + tcp
        ethertype, af_null, af_loop = 0x0800, 2, 2
    mac_src, mac_dst = (_MAC_C, _MAC_S) if seg.direction == "c2s" else (_MAC_S, _MAC_C)
    if linktype in ("ether", "ipv6", "vlan", "qinq"):
        tags = b""
        if linktype == "vlan":
            tags = struct.pack("!HH", 0x8100, 100)
        elif linktype == "qinq":
            tags = struct.pack("!HHHH", 0x88A8, 200, 0x8100, 100)
        f = mac_dst + mac_src + tags + struct.pack("!H", ethertype) + ip
        return f if len(f) >= 60 else f + b"\0" * (60 - len(f))
    pkttype = 4 if seg.direction == "c2s" else 0  # sent by us / to us, as seen on the client
    if linktype == "sll":
        return struct.pack("!HHH8sH", pkttype, 1, 6, mac_src + b"\0\0", ethertype) + ip
    if linktype == "sll2":
        return struct.pack("!HHIHBB8s", ethertype, 0, 2, 1, pkttype, 6, mac_src + b"\0\0") + ip
    if linktype == "null":
        return struct.pack("<I", af_null) + ip
    if linktype == "loop":
        return struct.pack("!I", af_loop) + ip
    return ip  # raw, raw4, raw6


def frames(segs: Iterable[TcpSeg], client: Addr = ("10.0.0.1", 50000),
           server: Addr = ("10.0.0.2", 11210), linktype: str = "ether", *,
           checksum: bool = True) -> list[bytes]:
    """``frame`` for each segment, with per-direction IP ids."""
    ids = {"c2s": 0x1000, "s2c": 0x7000}
    out = []
    for s in segs:
        ids[s.direction] += 1
        out.append(frame(s, client, server, linktype, ip_id=ids[s.direction], checksum=checksum))
    return out


def tcp_conversation(messages: Iterable[tuple[str, bytes]], client: Addr = ("10.0.0.1", 50000),
                     server: Addr = ("10.0.0.2", 11210), *, mss: int = 1460, split: int = 1,
                     isn: int | tuple[int, int] = (0x1A2B3C4D, 0x5E6F7081), linktype: str = "ether",
                     handshake: bool = True, close: str | None = "fin", acks: bool = True,
                     drop: Iterable[int] = (), duplicate: Iterable[int] = (),
                     reorder: Iterable[int] = (), checksum: bool = True) -> list[bytes]:
    """Frames of a whole TCP conversation carrying ``messages``; see ``tcp_segments`` and ``impair``."""
    segs = tcp_segments(messages, mss=mss, split=split, isn=isn, handshake=handshake, close=close,
                        acks=acks)
    segs = impair(segs, drop=drop, duplicate=duplicate, reorder=reorder)
    return frames(segs, client, server, linktype, checksum=checksum)


def write_pcap(path: str | os.PathLike, frames: Iterable[bytes | tuple], linktype: str | int = "ether",
               ts0: float = 1_700_000_000.0, fmt: str = "pcap", *, dt: float = 1e-4,
               snaplen: int = 262144, nanos: bool = False) -> None:
    """Write ``frames`` to a pcap or pcapng file (gzip-compressed if ``path`` ends in .gz).

    A frame is ``bytes`` (timestamped ``ts0 + i*dt``), ``(ts, bytes)``, or for
    pcapng ``(ts, bytes, linktype)`` (one interface per link type). Frames
    longer than ``snaplen`` are cut, keeping their wire length.
    """
    if fmt not in ("pcap", "pcapng"):
        raise ValueError("fmt must be 'pcap' or 'pcapng'")
    lt0 = LINKTYPES[linktype] if isinstance(linktype, str) else int(linktype)
    opener = gzip.open if os.fspath(path).endswith(".gz") else open
    scale = 1_000_000_000 if nanos else 1_000_000
    with opener(path, "wb") as f:
        if fmt == "pcap":
            f.write(struct.pack("<IHHiIII", 0xA1B23C4D if nanos else 0xA1B2C3D4, 2, 4, 0, 0, snaplen, lt0))
        else:
            f.write(_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)))
        ifaces: dict[int, int] = {}
        buf = []
        for i, item in enumerate(frames):
            lt = lt0
            if isinstance(item, (bytes, bytearray, memoryview)):
                ts, data = ts0 + i * dt, bytes(item)
            elif len(item) == 2:
                ts, data = item
            else:
                ts, data, lt = item
                lt = LINKTYPES[lt] if isinstance(lt, str) else int(lt)
                if fmt == "pcap" and lt != lt0:
                    raise ValueError("a pcap file has one link type; use fmt='pcapng'")
            cap = data[:snaplen]
            ticks = round(ts * scale)
            if fmt == "pcap":
                sec, frac = divmod(ticks, scale)
                buf.append(struct.pack("<IIII", sec, frac, len(cap), len(data)))
                buf.append(cap)
            else:
                if lt not in ifaces:
                    ifaces[lt] = len(ifaces)
                    opts = struct.pack("<HHB3x", 9, 1, 9 if nanos else 6) + b"\0\0\0\0"
                    buf.append(_block(1, struct.pack("<HHI", lt, 0, snaplen) + opts))
                pad = b"\0" * (-len(cap) % 4)
                buf.append(_block(6, struct.pack("<IIIII", ifaces[lt], ticks >> 32, ticks & 0xFFFFFFFF,
                                                 len(cap), len(data)) + cap + pad))
            if len(buf) >= 4096:
                f.write(b"".join(buf))
                buf.clear()
        f.write(b"".join(buf))


def _block(btype: int, body: bytes) -> bytes:
    n = 12 + len(body)
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)

