"""RDB's inner loops in C (``dcpinspect/families/redis/rdb/_rdb.c``: LZF, ziplists and listpacks), when the
extension is built and ``DCPINSPECT_PURE`` is not set; None otherwise, and the Python
readings do all the work. The C functions answer only for input the Python readings
accept and return None for anything else, so that the Python reading says what is wrong."""

from __future__ import annotations

import os


def _load():
    if os.environ.get("DCPINSPECT_PURE"):
        return None
    try:
        from . import _rdb
    except ImportError:
        return None
    return _rdb


C = _load()
