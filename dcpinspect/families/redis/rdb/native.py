"""RDB's inner loops in C (``dcpinspect/families/redis/rdb/_rdb.c``: LZF, ziplists and listpacks), when the
extension is built and ``DCPINSPECT_PURE`` is not set; None otherwise, and the Python
readings do all the work. The C functions answer only for input the Python readings
accept and return None for anything else, so that the Python reading says what is wrong."""

from __future__ import annotations

import importlib
import os


def optional(name: str):
    """The C module ``name`` (a dotted path) when it is built and ``DCPINSPECT_PURE`` is
    not set, else None (the family's other C parts load the same way)."""
    if os.environ.get("DCPINSPECT_PURE"):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


C = optional(f"{__package__}._rdb")
