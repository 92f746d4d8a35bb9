"""Link / IP / TCP-UDP header parsing of one capture record with ``struct``.

``parse_record`` turns a ``Record`` into a ``Segment`` or a ``Skip`` with a
reason; it never raises, whatever the bytes.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

from dcpinspect.sources.capture import Record

__all__ = [
    "Segment", "Skip", "parse_record", "plain_tcp4", "reverse_raw",
    "FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR", "NS",
    "LINKTYPE_NULL", "LINKTYPE_ETHERNET", "LINKTYPE_RAW", "LINKTYPE_LINUX_SLL",
    "LINKTYPE_LINUX_SLL2", "LINKTYPE_LOOP", "LINKTYPE_IPV4", "LINKTYPE_IPV6",
]

FIN, SYN, RST, PSH, ACK, URG, ECE, CWR, NS = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x100

LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276


@dataclass(slots=True, unsafe_hash=True)
class Segment:
    """A TCP or UDP segment. ``payload_len`` is the payload length on the wire
    (equal to ``len(payload)`` unless ``truncated``; -1 when unknown, e.g. for
    a first IP fragment). ``truncated``: the capture holds less payload than
    was sent (snaplen cut, or a first fragment whose rest was not reassembled).
    Not frozen, as :class:`~dcpinspect.sources.capture.Record`: one is made a packet.
    ``seq``, ``ack`` and ``flags`` are 0 for UDP."""

    ts: float
    src: str
    sport: int
    dst: str
    dport: int
    proto: str
    seq: int
    ack: int
    flags: int
    payload: bytes
    index: int
    truncated: bool
    payload_len: int = -1


@dataclass(frozen=True, slots=True)
class Skip:
    """A record that carries no TCP/UDP segment, and why."""

    index: int
    reason: str


_IP4 = struct.Struct("!BBHHHBBHII").unpack_from
_IP4_FAST = struct.Struct("!BxH2xHxB2xII").unpack_from
_IP6 = struct.Struct("!IHBB16s16s").unpack_from
_TCP = struct.Struct("!HHIIH").unpack_from
_UDP = struct.Struct("!HHH").unpack_from
_U16 = struct.Struct("!H").unpack_from
_ntop = socket.inet_ntop
_AF6 = socket.AF_INET6

_VLAN = frozenset((0x8100, 0x88A8, 0x9100, 0x9200))
_AF_INET6 = frozenset((10, 23, 24, 28, 30))  # Linux, Windows, BSDs, FreeBSD, Darwin
_EXT6 = frozenset((0, 43, 60, 135, 139, 140))

_names4: dict[int, str] = {}
_names6: dict[bytes, str] = {}
_NAMES_MAX = 1 << 16


def _name4(a: int) -> str:
    if len(_names4) >= _NAMES_MAX:
        _names4.clear()
    s = _names4[a] = f"{a >> 24}.{(a >> 16) & 255}.{(a >> 8) & 255}.{a & 255}"
    return s


def _name6(a: bytes) -> str:
    if len(_names6) >= _NAMES_MAX:
        _names6.clear()
    s = _names6[a] = _ntop(_AF6, a)
    return s


def parse_record(rec: Record) -> Segment | Skip:
    """Parse one record's link, IP and TCP/UDP headers."""
    data = rec.data
    lt = rec.linktype
    n = len(data)
    try:
        if lt == 1:
            if n < 14:
                return Skip(rec.index, "truncated Ethernet header")
            et = (data[12] << 8) | data[13]
            off = 14
            if et in _VLAN:
                while et in _VLAN:
                    if n < off + 4:
                        return Skip(rec.index, "truncated VLAN tag")
                    et = (data[off + 2] << 8) | data[off + 3]
                    off += 4
        elif lt == 113:
            if n < 16:
                return Skip(rec.index, "truncated Linux cooked header")
            et = (data[14] << 8) | data[15]
            off = 16
        elif lt == 276:
            if n < 20:
                return Skip(rec.index, "truncated Linux cooked v2 header")
            et = (data[0] << 8) | data[1]
            off = 20
        elif lt in (101, 228, 229) or (lt in (12, 14) and n and (data[0] >> 4) in (4, 6)):
            if not n:
                return Skip(rec.index, "empty raw IP record")
            v = data[0] >> 4
            et = 0x0800 if v == 4 else 0x86DD if v == 6 else -v
            if (lt == 228 and v != 4) or (lt == 229 and v != 6):
                return Skip(rec.index, f"IP version {v} on link type {lt}")
            off = 0
        elif lt in (0, 108, 12, 14):
            if n < 4:
                return Skip(rec.index, "truncated loopback header")
            af = data[0] or data[3]  # the family is stored in either byte order
            if af == 2:
                et = 0x0800
            elif af in _AF_INET6:
                et = 0x86DD
            else:
                return Skip(rec.index, f"not IP (address family {af})")
            off = 4
        else:
            return Skip(rec.index, f"unsupported link type {lt}")

        if et in _VLAN:  # tags after a cooked header
            while et in _VLAN:
                if n < off + 4:
                    return Skip(rec.index, "truncated VLAN tag")
                et = (data[off + 2] << 8) | data[off + 3]
                off += 4
        if et == 0x0800:
            # fast path: a whole, unfragmented IPv4 packet carrying a whole TCP header
            if n >= off + 40:
                vihl, tot, frag, proto, src, dst = _IP4_FAST(data, off)
                end = off + tot
                if vihl == 0x45 and proto == 6 and not frag & 0x3FFF and 40 <= tot and end <= n:
                    sport, dport, seq, ack, offflags = _TCP(data, off + 20)
                    doff = (offflags >> 10) & 0x3C
                    if doff >= 20 and off + 20 + doff <= end:
                        return Segment(rec.ts, _names4.get(src) or _name4(src), sport,
                                       _names4.get(dst) or _name4(dst), dport, "tcp", seq, ack,
                                       offflags & 0x1FF, data[off + 20 + doff:end], rec.index,
                                       False, end - off - 20 - doff)
            return _ipv4(rec, data, off, n)
        if et == 0x86DD:
            return _ipv6(rec, data, off, n)
        if et < 0:
            return Skip(rec.index, f"not IP (version {-et})")
        return Skip(rec.index, f"not IP (ethertype {et:#06x})")
    except (IndexError, ValueError, struct.error) as exc:  # defensive: checks above should prevent this
        return Skip(rec.index, f"malformed record ({exc})")


def _ipv4(rec: Record, data: bytes, off: int, n: int) -> Segment | Skip:
    if n < off + 20:
        return Skip(rec.index, "truncated IPv4 header")
    vihl, _, tot, _, frag, _, proto, _, src, dst = _IP4(data, off)
    if vihl >> 4 != 4:
        return Skip(rec.index, f"bad IPv4 version {vihl >> 4}")
    ihl = (vihl & 15) << 2
    if ihl < 20:
        return Skip(rec.index, f"bad IPv4 header length {ihl}")
    if frag & 0x1FFF:
        return Skip(rec.index, "non-first IPv4 fragment")
    fragment = bool(frag & 0x2000)
    if tot == 0:  # segmentation offload: the length is left to the NIC
        end = n
        cut = len(data) < rec.wirelen
        lost = rec.wirelen - len(data)
    else:
        if tot < ihl:
            return Skip(rec.index, f"bad IPv4 total length {tot}")
        end = off + tot
        cut = end > n
        lost = end - n
        if cut:
            end = n
    start = off + ihl
    if start > end:
        return Skip(rec.index, "truncated IPv4 options")
    s = _names4.get(src) or _name4(src)
    d = _names4.get(dst) or _name4(dst)
    return _transport(rec, data, start, end, proto, s, d, cut, lost, fragment)


def _ipv6(rec: Record, data: bytes, off: int, n: int) -> Segment | Skip:
    if n < off + 40:
        return Skip(rec.index, "truncated IPv6 header")
    vtf, plen, nh, _, src, dst = _IP6(data, off)
    if vtf >> 28 != 6:
        return Skip(rec.index, f"bad IPv6 version {vtf >> 28}")
    start = off + 40
    if plen == 0:  # jumbogram or segmentation offload
        end = n
        cut = len(data) < rec.wirelen
        lost = rec.wirelen - len(data)
    else:
        end = start + plen
        cut = end > n
        lost = end - n
        if cut:
            end = n
    fragment = False
    while nh in _EXT6 or nh == 44 or nh == 51:
        if start + 8 > end:
            return Skip(rec.index, "truncated IPv6 extension header")
        if nh == 44:
            fo = _U16(data, start + 2)[0]
            if fo & 0xFFF8:
                return Skip(rec.index, "non-first IPv6 fragment")
            fragment = bool(fo & 1)
            nh = data[start]
            start += 8
        elif nh == 51:
            nh, hl = data[start], data[start + 1]
            start += (hl + 2) << 2
        else:
            nh, hl = data[start], data[start + 1]
            start += (hl + 1) << 3
    if start > end:
        return Skip(rec.index, "truncated IPv6 extension header")
    if nh == 59:
        return Skip(rec.index, "IPv6 with no next header")
    s = _names6.get(src) or _name6(src)
    d = _names6.get(dst) or _name6(dst)
    return _transport(rec, data, start, end, nh, s, d, cut, lost, fragment)


def _transport(rec, data, start, end, proto, s, d, cut, lost, fragment):
    if proto == 6:
        if start + 20 > end:
            return Skip(rec.index, "truncated TCP header" if cut or fragment else "bad TCP header")
        sport, dport, seq, ack, offflags = _TCP(data, start)
        doff = (offflags >> 10) & 0x3C
        if doff < 20:
            return Skip(rec.index, f"bad TCP data offset {doff}")
        pstart = start + doff
        if pstart > end:
            return Skip(rec.index, "truncated TCP options" if cut or fragment else "bad TCP data offset")
        payload = data[pstart:end]
        if fragment:
            plen = -1
        elif cut:
            plen = len(payload) + lost
        else:
            plen = len(payload)
        return Segment(rec.ts, s, sport, d, dport, "tcp", seq, ack, offflags & 0x1FF, payload,
                       rec.index, cut or fragment, plen)
    if proto == 17:
        if start + 8 > end:
            return Skip(rec.index, "truncated UDP header" if cut or fragment else "bad UDP header")
        sport, dport, ulen = _UDP(data, start)
        uend = end
        if ulen >= 8 and not fragment:
            if start + ulen <= end:
                uend = start + ulen
                cut = False
            elif cut:
                lost = start + ulen - end
        payload = data[start + 8:uend]
        plen = -1 if fragment else len(payload) + lost if cut else len(payload)
        return Segment(rec.ts, s, sport, d, dport, "udp", 0, 0, 0, payload, rec.index,
                       cut or fragment, plen)
    return Skip(rec.index, f"not TCP or UDP (protocol {proto})")


def plain_tcp4(rec) -> bytes | None:
    """The IPv4 addresses and TCP ports (12 bytes, as on the wire) of an Ethernet record that
    ``parse_record`` takes on its fast path, so surely to a Segment of those; else None."""
    data = rec.data
    if (rec.linktype != 1 or len(data) < 54 or data[12] != 8 or data[13] or data[14] != 0x45 or data[23] != 6
            or data[20] & 0x3F or data[21]):
        return None
    tot = (data[16] << 8) | data[17]
    doff = (data[46] >> 2) & 0x3C
    if tot < 40 or 14 + tot > len(data) or doff < 20 or doff > tot - 20:
        return None
    return data[26:38]


def reverse_raw(raw: bytes) -> bytes:
    """The 12 address and port bytes (IPv4 source, destination, TCP ports) the other way."""
    return raw[4:8] + raw[:4] + raw[10:12] + raw[8:10]
