"""Live capture with Scapy: packets arrive as raw records for the capture engine."""

from __future__ import annotations

import os
from typing import Callable

from .capture import Record

LINKTYPE_ETHERNET, LINKTYPE_SLL, LINKTYPE_RAW, LINKTYPE_NULL = 1, 113, 101, 0


class LiveError(Exception):
    """The interface cannot be opened (missing, or not privileged)."""


def check_interface(iface: str) -> None:
    from scapy.all import get_if_list  # loads the platform interface table

    if iface not in get_if_list():
        raise LiveError(f"no interface named {iface!r} (have: {', '.join(get_if_list())})")
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        raise LiveError("live capture needs root (or CAP_NET_RAW): run with sudo or give the capability")


def _linktype(pkt) -> int:
    name = type(pkt).__name__
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
    """Sniff without storing packets; call ``on_record`` for each one."""
    from scapy.error import Scapy_Exception
    from scapy.sendrecv import sniff

    check_interface(iface)
    index = 0

    def handle(pkt) -> None:
        nonlocal index
        data = bytes(pkt)
        on_record(Record(float(pkt.time), _linktype(pkt), data, len(data), index))
        index += 1

    try:
        sniff(iface=iface, filter=bpf, prn=handle, store=False, count=count, timeout=timeout,
              stop_filter=(lambda _p: stop()) if stop else None)
    except (PermissionError, OSError, Scapy_Exception) as exc:
        raise LiveError(f"cannot capture on {iface}: {exc}") from exc
