"""Shared fixtures: real memcached traffic captured with tcpdump (session-scoped, built once).

Each capture gets its own memcached (so memccapable's FLUSH or memcslap's load cannot
disturb the scripted session) and its own tcpdump, started before the traffic.
Tests that need them are skipped when memcached / tcpdump / the client tools are
missing or we are not root.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pytest
from hypothesis import HealthCheck, settings

# CI explores the same examples every run; a developer's runs keep searching for new ones.
# Generation speed depends on the machine's load (two cores shared with servers and
# workers), so slow generation is not a failure.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")

import servers
from servers import RealCapture


@pytest.fixture(scope="session")
def capable_capture(tmp_path_factory) -> RealCapture:
    """memccapable -b against memcached: every binary command, incl. provoked errors."""
    servers.require("memccapable")

    def traffic(port: int, cap: RealCapture) -> None:
        cap.tool = servers.run_memccapable(port)

    cap = servers.capture_traffic(tmp_path_factory.mktemp("capable"), "capable", traffic)
    assert cap.tool.returncode == 0, cap.tool.stdout + cap.tool.stderr
    return cap


@pytest.fixture(scope="session")
def slap_capture(tmp_path_factory) -> RealCapture:
    """memcslap --binary, 4 concurrent connections × 2000 SETs."""
    servers.require("memcslap")

    def traffic(port: int, cap: RealCapture) -> None:
        cap.tool = servers.run_memcslap(port, concurrency=4, execute=2000)

    cap = servers.capture_traffic(tmp_path_factory.mktemp("slap"), "slap", traffic)
    assert cap.tool.returncode == 0, cap.tool.stdout + cap.tool.stderr
    return cap


@pytest.fixture(scope="session")
def precise_capture(tmp_path_factory) -> RealCapture:
    """The Python client's scripted session (see servers.precise_session)."""

    def traffic(port: int, cap: RealCapture) -> None:
        cap.clients.append(servers.precise_session(port))

    return servers.capture_traffic(tmp_path_factory.mktemp("precise"), "precise", traffic)


_decoded: dict[tuple, list[dict]] = {}


@pytest.fixture(scope="session")
def decode_jsonl() -> Callable[..., list[dict]]:
    """``dcpinspect decode FILE --format jsonl ARGS…`` parsed, memoised per (file, args)."""

    def run(path: Path, *args: str) -> list[dict]:
        key = (str(path), args)
        if key not in _decoded:
            res = servers.dcpinspect("decode", path, "--format", "jsonl", *args)
            assert res.returncode == 0, res.stderr
            assert "Traceback" not in res.stderr
            _decoded[key] = servers.jsonl(res.stdout)
        return _decoded[key]

    return run


@pytest.fixture(scope="session")
def spark():
    """One local[2] SparkSession for every Spark test of the run, with the dcpinspect data
    source registered (skipped without pyspark or a Java Spark runs on); stopped at the end."""
    pytest.importorskip("pyspark")
    from dcpinspect.engines.spark.session import java_problem, make_session

    problem = java_problem()
    if problem:
        pytest.skip(problem)
    session = make_session("local[2]", {"spark.sql.shuffle.partitions": "4",
                                        "spark.default.parallelism": "2"})
    yield session
    session.stop()
