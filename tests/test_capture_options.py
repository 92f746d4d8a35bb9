"""``--port``, ``--decode-as PORT=FAMILY`` and ``--no-heuristic``: one definition that every
command reading captures takes (decode, validate, stats, live, analyze), reaching the
capture decoder the same way. ``samples/memcached-binary.pcap`` is real memcached traffic
on port 22122, a port no family claims: found by the heuristic, or by the options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer.main

import servers
from dcpinspect.cli import DECODE_AS_OPTION, NO_HEURISTIC_OPTION, PORT_OPTION, app
from dcpinspect.engines.options import CaptureOptions, OptionError, capture_options

PCAP = Path(__file__).resolve().parents[1] / "samples" / "memcached-binary.pcap"
COMMANDS = ("decode", "validate", "stats", "live", "analyze")


def test_every_capture_command_takes_the_one_definition():
    group = typer.main.get_command(app)
    for name in COMMANDS:
        params = {p.name: p for p in group.commands[name].params}
        for option, info in (("port", PORT_OPTION), ("decode_as", DECODE_AS_OPTION),
                             ("no_heuristic", NO_HEURISTIC_OPTION)):
            assert params[option].help == info.help, (name, option)
            assert info.param_decls[0] in params[option].opts, (name, option)


def test_options_as_the_decoder_takes_them():
    opts = capture_options([22122], ["6379=redis", "11300=mcbp"], True)
    assert opts == CaptureOptions({22122: "mcbp", 6379: "redis", 11300: "mcbp"}, heuristic=False)
    assert opts.decoder() == {"ports": {22122: "mcbp", 6379: "redis", 11300: "mcbp"}, "heuristic": False}
    for bad, said in (("x=mcbp", "'x' is not a port number"), ("70000=mcbp", "70000 is not a TCP port"),
                      ("1=nope", "'nope' is no protocol family (they are mcbp, redis)")):
        with pytest.raises(OptionError, match=said.replace("(", r"\(").replace(")", r"\)")):
            capture_options([], [bad])


def _frames_of(command: str, *options: str) -> int:
    """Frames the command found in the capture with ``options`` (0: none, exit 2)."""
    args = {"decode": ("decode", "-f", "jsonl"), "validate": ("validate",), "stats": ("stats", "-f", "json")}[command]
    res = servers.dcpinspect(*args, *options, PCAP)
    if res.returncode == 2:
        assert res.stderr.startswith("dcpinspect: no frame found in the input"), res.stderr
        return 0
    assert res.returncode in (0, 1), res.stderr
    if command == "stats":
        return json.loads(res.stdout)["capture"]["frames"]
    if command == "validate":
        checked = [line for line in res.stdout.splitlines() if "frames checked" in line]  # "N frames checked: ..."
        if not checked:  # nothing of ours: what was not decoded is said instead
            assert "not decoded" in res.stdout, res.stdout
            return 0
        return int(checked[-1].split()[0])
    return len(servers.frames_of(servers.jsonl(res.stdout)))


@pytest.mark.parametrize("command", ["decode", "validate", "stats"])
def test_each_option_reaches_the_decoder(command):
    found = _frames_of(command)
    assert found > 500  # by the heuristic
    assert _frames_of(command, "--no-heuristic") == 0
    assert _frames_of(command, "--no-heuristic", "--port", "22122") == found
    assert _frames_of(command, "--no-heuristic", "--decode-as", "22122=mcbp") == found
    assert _frames_of(command, "--decode-as", "22122=redis") < found  # taken as the other family


@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_decode_as_is_the_same_line_everywhere(command):
    args = {"live": ("live", "-i", "lo"), "analyze": ("analyze", str(PCAP), "--out", "/nonexistent/out")}.get(
        command, (command, str(PCAP)))
    res = servers.dcpinspect(*args, "--decode-as", "22122=nope", timeout=60)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr == ("dcpinspect: --decode-as '22122=nope': 'nope' is no protocol family "
                          "(they are mcbp, redis)\n")
