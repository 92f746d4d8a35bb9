"""memcached's text protocol (memcached's ``doc/protocol.txt``), which memcached serves on
the port it serves MCBP on (11211): a client's first line that is a text command says the
connection is that protocol, not MCBP. A text command starts with a lowercase letter, never
one of MCBP's magic bytes, so an MCBP connection is never taken for one."""

from __future__ import annotations

import re

#: a text command's name and what follows it: the storage and retrieval commands, the meta
#: commands (``mg``, ``ms``, ...) and those that may stand alone on their line
COMMAND = re.compile(rb"(?:(?:get|gets|gat|gats|set|add|replace|append|prepend|cas|delete|incr|decr|touch|"
                     rb"mg|ms|md|ma|me|mn|verbosity|lru_crawler|slabs|lru|watch|cache_memlimit) "
                     rb"|(?:stats|version|flush_all|quit|shutdown|mn|misbehave|watch|verbosity)(?: |\r?\n))")
NAME = "memcached text protocol"


def refuses(head: bytes) -> str | None:
    """:data:`NAME` when a client's first bytes are a text command, else None."""
    return NAME if COMMAND.match(head) else None
