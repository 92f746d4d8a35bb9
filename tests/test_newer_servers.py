"""The checks of tests/test_real_redis_rdb.py, run again on the dumps of newer servers than
Debian 12's Redis 7.0: a Redis of 7.2 or later (``DCPINSPECT_REDIS_72``) and Valkey
(``DCPINSPECT_VALKEY``), both of which ``scripts/test.sh`` unpacks from Debian 13
(scripts/newer_redis.py). Each server writes every type and encoding its version has
(listpack sets, hashes whose fields expire, RDB 11 and 12, Valkey's own aux fields);
``dcpinspect rdb`` must give every key as the server holds it, with no finding, and
the same server, called as ``redis-check-rdb``, must agree on the file and on its damaged
copies.

The test functions are those of test_real_redis_rdb.py, imported here so that pytest runs
them with this module's ``snapshot``: one check, written once, judged by each server.
"""

from __future__ import annotations

import os

import pytest

import test_real_redis_rdb as real
from test_real_redis_rdb import (  # noqa: F401  (collected here, with this module's snapshot)
    test_a_cut_file_reports_every_key_before_the_cut,
    test_a_flipped_byte_in_a_listpack_is_corruption_of_that_key,
    test_a_flipped_byte_in_a_string_value_is_a_checksum_mismatch,
    test_functions_and_aux_fields,
    test_jsonl_has_every_key_with_the_servers_type_encoding_count_and_expiry,
    test_redis_check_rdb_agrees,
    test_streams_groups_pel_and_consumers_are_the_servers,
    test_the_key_view_lays_out_a_real_record,
    test_the_server_run_is_short,
    test_values_are_the_servers,
)

#: the servers, by the variable that names each
SERVERS = {"redis-7.2+": "DCPINSPECT_REDIS_72", "valkey": "DCPINSPECT_VALKEY"}


@pytest.fixture(scope="module", params=sorted(SERVERS))
def snapshot(request, tmp_path_factory) -> real.Snapshot:
    variable = SERVERS[request.param]
    binary = os.environ.get(variable)
    if not binary:
        pytest.skip(f"{variable} names no server (scripts/test.sh sets it: scripts/newer_redis.py)")
    if request.param == "redis-7.2+" and real.server_version(binary) < (7, 2):
        pytest.skip(f"{binary} is older than 7.2")
    return real.take_snapshot(binary, tmp_path_factory.mktemp(request.param))


def test_a_valkey_file_is_named_valkeys_and_its_memory_estimate_says_whose_structures_it_counts(snapshot):
    """Valkey 8 writes ``REDIS0011`` and a ``valkey-ver`` aux field: the file is called
    Valkey's on that evidence, and the memory report, whose model is of Redis's structures,
    says so; a Redis file gets neither."""
    import json

    import servers

    res = servers.dcpinspect("rdb", "-f", "jsonl", "-r", "memory", str(snapshot.path))
    assert res.returncode == 0, res.stderr
    (total,) = [json.loads(line) for line in res.stdout.splitlines() if '"memory-total"' in line]
    res = servers.dcpinspect("rdb", "-f", "summary", str(snapshot.path))
    valkey = "Valkey" in snapshot.binary_version
    assert res.stdout.split(": ", 1)[1].startswith(("valkey" if valkey else "redis") + " RDB version ")
    assert ("note" in total) == valkey and (not valkey or "Redis's structures" in total["note"])
