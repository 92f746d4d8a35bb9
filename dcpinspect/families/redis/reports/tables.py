"""The Redis family's part in bulk engines (``analyze``): its tables (the commands of
replication connections, RESP and Dragonfly's journal, and the keys of RDB payloads and
files) and its snapshot files as JSON Lines objects, from a file already open."""

from __future__ import annotations


from ... import Table

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO, Iterator

#: commands and replies of Redis connections (RESP frames, Dragonfly journal records): a
#: reply's role, the frame of the command it answers and its latency
COMMANDS = Table("commands", "frame", ("resp", "journal"), (
    ("type", "string", "type"), ("command_name", "string", "command[0]"), ("command", "array<string>", "command"),
    ("repl_offset", "bigint", "repl_offset"), ("op", "string", "op"), ("lsn", "uint64", "lsn"),
    ("db", "bigint", "db"), ("role", "string", "role"), ("reply_to", "bigint", "reply_to"),
    ("latency_ms", "double", "latency_ms"),
))
#: keys of RDB snapshots: files given as inputs, and payloads of full syncs
KEYS = Table("keys", "key", ("rdb",), (
    ("db", "bigint", "db"), ("key_name", "string", "key"), ("key_base64", "string", "key_base64"),
    ("type", "string", "type"),
    ("encoding", "string", "encoding"), ("elements", "bigint", "elements"), ("value_length", "bigint", "value_length"),
    ("size", "bigint", "size"), ("expire_ms", "bigint", "expire_ms"), ("offset", "bigint", "offset"),
    ("digest", "string", "digest"), ("memory", "bigint", "memory"),
))
TABLES = (COMMANDS, KEYS)
#: bytes read from a snapshot file at a time
CHUNK = 1 << 20


def snapshot_rows(fh: BinaryIO, name: str, values: bool = False) -> Iterator[dict]:
    """What ``rdb -f jsonl --digest`` writes of the RDB file open as ``fh``: its keys (each
    with its ``DEBUG DIGEST-VALUE``, and its ``memory`` in the server too, :mod:`.memory`'s
    estimate, as ``rdb --report memory`` gives it), aux fields and findings as they
    complete, then its summary (with ``DEBUG DIGEST``). A file that is no RDB raises
    ``InputError`` (from ``sources.inputs``). Every key's value is read (the digest needs
    it), and its memory is measured from it; ``values``: each key's ``value`` too, as
    ``rdb --values`` gives it."""
    from ....findings import Finding
    from ....sources.inputs import InputError
    from . import report
    from ..rdb.digest import Digester
    from .memory import DEFAULTS, for_version, key_memory, listpack_sets
    from ..rdb.decoder import RdbParser
    from ..rdb.records import AuxRecord, KeyRecord
    from .snapshots import _unusable

    summary = report.Summary(name)
    digester = Digester()
    summary.digest = digester.snapshot
    # the server's thresholds; set listpacks when the file's version or redis-ver has them
    cfg = DEFAULTS

    def header(vendor: str, version: int) -> None:
        nonlocal cfg
        cfg = for_version(cfg, version)

    parser = RdbParser(keep=True, on_header=header)

    def rows(recs) -> Iterator[dict]:
        nonlocal cfg
        for rec in recs:
            _unusable(name, rec)
            summary.add(rec)
            if isinstance(rec, KeyRecord):
                obj = report.key_json(rec, digester, values)
                obj["memory"] = key_memory(rec, cfg).total
                yield obj
            elif isinstance(rec, AuxRecord):
                digester.see(rec)
                if rec.key == b"redis-ver":
                    cfg = listpack_sets(cfg, rec.value)
                yield report.aux_json(rec)
            elif isinstance(rec, Finding):
                yield report.finding_json(rec, name)

    while True:
        try:
            chunk = fh.read(CHUNK)
        except (OSError, EOFError) as exc:
            raise InputError(f"{name}: cannot read ({exc})") from None
        if not chunk:
            break
        yield from rows(parser.records(chunk))
    yield from rows(parser.close())
    yield summary.to_json()
