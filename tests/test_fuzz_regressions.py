"""Inputs the fuzz harnesses once failed on, replayed through the same harness: every file
under fuzz/regressions/<entry>/ goes through ``harness.CHECKS[entry]`` (``rdb``: the RDB
decoder's, fuzz/rdb_harness.py; ``resp``: the Redis framer's, fuzz/resp_harness.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
sys.path.insert(0, str(FUZZ))

import harness  # noqa: E402
import rdb_harness  # noqa: E402
import resp_harness  # noqa: E402

CHECKS = {**harness.CHECKS, "rdb": rdb_harness.check_rdb, "resp": resp_harness.check_resp}

REGRESSIONS = sorted(p for p in (FUZZ / "regressions").glob("*/*") if p.is_file() and p.name != "README.md")


def test_regression_folders_name_harnesses() -> None:
    folders = {p.name for p in (FUZZ / "regressions").iterdir() if p.is_dir()}
    assert folders <= set(CHECKS), folders - set(CHECKS)


@pytest.mark.parametrize("path", REGRESSIONS, ids=[f"{p.parent.name}/{p.name}" for p in REGRESSIONS])
def test_regression_input_holds(path: Path) -> None:
    CHECKS[path.parent.name](path.read_bytes())
