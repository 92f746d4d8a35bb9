"""The table of limits: the documentation shows it as it is, each variable is read the same way,
and a value that is not one stops every command before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

import servers
from dcpinspect.limits import LIMITS, Limit, LimitError, markdown_table

PAGE = Path(__file__).resolve().parents[1] / "docs" / "limits-and-hostile-input.md"
WITH_ENV = [lim for lim in LIMITS if lim.env]


def test_the_limits_page_shows_the_table_of_limits():
    assert markdown_table() in PAGE.read_text()


def test_every_limit_says_what_it_bounds_and_how_it_is_changed_or_that_it_is_fixed():
    names = [lim.name for lim in LIMITS]
    assert len(set(names)) == len(names)
    for lim in LIMITS:
        assert lim.default >= lim.least and lim.what
        assert lim.env.startswith("DCPINSPECT_MAX_") or not lim.env


@pytest.mark.parametrize("lim", WITH_ENV, ids=lambda lim: lim.env)
def test_a_variable_sets_its_limit(lim: Limit, monkeypatch):
    assert lim.value() == lim.default
    monkeypatch.setenv(lim.env, str(lim.least + 1))
    assert lim.value() == lim.least + 1
    if lim.unit == "bytes":
        monkeypatch.setenv(lim.env, "3M")
        assert lim.value() == 3 << 20
        monkeypatch.setenv(lim.env, "2 kib")
        assert lim.value() == 2048  # every byte limit takes 2 KiB
    for bad in ("lots", "-5", "1.5", str(lim.least - 1)) + ((str(lim.most + 1),) if lim.most else ()):
        monkeypatch.setenv(lim.env, bad)
        with pytest.raises(LimitError, match=lim.env):
            lim.value()


@pytest.mark.parametrize("lim", WITH_ENV, ids=lambda lim: lim.env)
def test_a_bad_value_stops_every_command_at_once(lim: Limit, tmp_path):
    hexdump = tmp_path / "x.hex"
    hexdump.write_text("80 0a 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00\n")
    for args in (["decode", hexdump], ["hex", hexdump], ["validate", hexdump], ["stats", hexdump], ["rules"]):
        res, _ = servers.peak_rss(*args, env={lim.env: "not-a-number"})
        err = res.stderr.decode()
        assert res.returncode == 2 and res.stdout == b"", (args, err)
        assert err.startswith(f"dcpinspect: {lim.env}='not-a-number' is not a number of") and "Traceback" not in err
