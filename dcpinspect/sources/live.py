"""Live capture with Scapy: packets arrive as raw records for the capture engine."""

from __future__ import annotations

import os
from typing import Callable

from .capture import Record

LINKTYPE_ETHERNET, LINKTYPE_SLL, LINKTYPE_RAW, LINKTYPE_NULL = 1, 113, 101, 0
SOCKET_BUFFER = 32 * 1024 * 1024
MAX_FRAME = 262144
BPF_RET_K, SO_ATTACH_FILTER = 0x06, 26
#: most packets dropped from the socket's queue once its filter is attached
DRAINED = 100_000


class LiveError(Exception):
    """The interface cannot be opened (missing, or not privileged)."""


def check_interface(iface: str) -> None:
    from scapy.all import get_if_list  # loads the platform interface table

    if iface not in get_if_list():
        raise LiveError(f"no interface named {iface!r} (have: {', '.join(get_if_list())})")
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        raise LiveError("live capture needs root (or CAP_NET_RAW): run with sudo or give the capability")


def _attach_filter(sock, bpf: str, iface: str) -> None:
    """Compile with libpcap through Scapy, but keep whole frames: libpcap's program
    returns at most 65535 bytes, and loopback carries 64 KiB segments plus headers."""
    import socket

    from scapy.arch.common import compile_filter

    program = compile_filter(bpf, iface)
    for i in range(program.bf_len):
        ins = program.bf_insns[i]
        if ins.code == BPF_RET_K and ins.k:
            ins.k = MAX_FRAME
    sock.ins.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, program)


def _drain(sock) -> None:
    """Drop what the socket queued before its filter was attached (as libpcap does when it
    sets a filter): packets the filter would have refused must not reach the decoder, nor
    the file ``--write`` keeps."""
    import select

    for _ in range(DRAINED):  # bounded: on a busy interface new packets keep coming
        if not select.select([sock], [], [], 0)[0]:
            break
        try:
            sock.ins.recv(MAX_FRAME)
        except (BlockingIOError, InterruptedError):
            break


def _linktype_of(cls) -> int:
    name = getattr(cls, "__name__", "")
    return {"Ether": LINKTYPE_ETHERNET, "CookedLinux": LINKTYPE_SLL, "Loopback": LINKTYPE_NULL}.get(
        name, LINKTYPE_RAW if name in ("IP", "IPv6") else LINKTYPE_ETHERNET
    )


def sniff_records(
    iface: str,
    on_record: Callable[[Record], None],
    bpf: str | None = None,
    count: int = 0,
    timeout: float | None = None,
    stop: Callable[[], bool] | None = None,
) -> None:
    """Read raw frames from Scapy's listening socket (no per-packet dissection) into ``on_record``."""
    import select
    import time

    from scapy.config import conf
    from scapy.error import Scapy_Exception

    check_interface(iface)
    conf.bufsize = max(conf.bufsize, SOCKET_BUFFER)  # bursts of large values must not overflow the kernel queue
    try:
        sock = conf.L2listen(iface=iface)
        if bpf:
            _attach_filter(sock, bpf, iface)
            _drain(sock)
    except (PermissionError, OSError, Scapy_Exception, ImportError) as exc:
        raise LiveError(f"cannot capture on {iface}: {exc}") from exc
    deadline = None if timeout is None else time.monotonic() + timeout
    index = 0
    try:
        while not (count and index >= count) and not (stop and stop()):
            wait = 0.2 if deadline is None else min(0.2, deadline - time.monotonic())
            if wait <= 0:
                break
            if not select.select([sock], [], [], wait)[0]:
                continue
            cls, data, ts = sock.recv_raw(MAX_FRAME)
            if data is None:
                continue
            on_record(Record(float(ts or time.time()), _linktype_of(cls), data, len(data), index))
            index += 1
    except (OSError, Scapy_Exception) as exc:
        raise LiveError(f"capture on {iface} failed: {exc}") from exc
    finally:
        sock.close()
