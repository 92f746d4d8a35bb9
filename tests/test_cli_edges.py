"""What a new user meets first: every command and format behind a closed pipe, one input
sniffer for all commands, the same findings whatever the command, formats offered only
where they do something, one wording for a missing file, and names from outside escaped."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import servers
from dcpinspect.cli import app
from dcpinspect.transport import synth

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "samples"))
from make_samples import dcp_session, directions, hexlines  # noqa: E402

UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    """The DCP sample session as a capture and as a hex dump, and a memcached capture big
    enough that every output overflows a pipe."""
    d = tmp_path_factory.mktemp("edges")
    frames = dcp_session()
    (d / "session.hex").write_text(hexlines(frames))
    synth.write_pcap(d / "session.pcap", synth.tcp_conversation(directions(frames)), "ether", ts0=1763800000.0)
    big = [("c2s" if i % 2 == 0 else "s2c", f) for i, f in enumerate(frames * 200)]
    synth.write_pcap(d / "big.pcap", synth.tcp_conversation(big), "ether", ts0=1763800000.0)
    return {"hex": d / "session.hex", "pcap": d / "session.pcap", "big": d / "big.pcap"}


def _formats(command: str) -> list[str]:
    """The --format choices a command offers, read from the command line itself."""
    import typer.main

    click_cmd = typer.main.get_command(app).commands[command]
    for p in click_cmd.params:
        if "--format" in getattr(p, "opts", ()):
            return list(p.type.choices)
    return []


def _runs(inputs) -> list[list[str]]:
    big, dump = str(inputs["big"]), str(inputs["hex"])
    runs = []
    for fmt in _formats("decode"):
        runs += [["decode", big, "-f", fmt], ["decode", dump, "-f", fmt]]
    runs += [["hex", dump, "-f", fmt] for fmt in _formats("hex")] + [["hex", dump, "--diagram"]]
    runs += [["validate", big, "-f", fmt, "--info"] for fmt in _formats("validate")]
    runs += [["stats", big, "-f", fmt] for fmt in _formats("stats")]
    runs += [["rules", "-f", fmt] for fmt in _formats("rules")]
    return runs


def test_every_command_exits_0_when_the_reader_goes_away(inputs):
    """``| head``: the reader closes before anything is written; stopping early is not a
    failure (rich's own handling would exit 1, which reads as "findings")."""
    runs = _runs(inputs)
    assert len(runs) >= 12
    for args in runs:
        proc = subprocess.Popen(servers.dcpinspect_argv() + args, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 0, (args, err)
        assert "Traceback" not in err and "Exception ignored" not in err, (args, err)


def test_every_command_exits_0_after_a_partial_read(inputs):
    """The reader takes a few lines, then goes (``| head -3``)."""
    for args in (["decode", str(inputs["big"])], ["stats", str(inputs["big"])],
                 ["validate", str(inputs["big"]), "--info"]):
        proc = subprocess.Popen(servers.dcpinspect_argv() + args, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 0, (args, err)
        assert "Traceback" not in err, err


def test_decode_takes_a_hex_dump(inputs):
    got = servers.dcpinspect("decode", inputs["hex"], "-f", "jsonl")
    assert got.returncode == 0, got.stderr
    frames = servers.frames_of(servers.jsonl(got.stdout))
    expected = servers.frames_of(servers.jsonl(servers.dcpinspect("hex", inputs["hex"], "-f", "jsonl").stdout))
    assert [(f["offset"], f["opcode_name"], f["findings"]) for f in frames] == \
        [(f["offset"], f["opcode_name"], f["findings"]) for f in expected]
    assert [f["frame"] for f in frames] == list(range(1, 17)) and {f["ts"] for f in frames} == {None}
    table = servers.dcpinspect("decode", inputs["hex"], "--opcode", "mutation")
    assert table.returncode == 0 and table.stdout.count("DCP_MUTATION request") == 2
    assert "1970" not in table.stdout  # a dump has no times
    summary = servers.dcpinspect("decode", inputs["hex"], "-f", "summary")
    assert summary.returncode == 0 and "16 frames in 1 connections" in summary.stdout


def _findings(records: list[dict]) -> list[tuple]:
    return sorted((f["rule"], r["opcode_name"]) for r in records if r["kind"] == "frame" for f in r["findings"])


def test_one_input_one_set_of_findings(inputs):
    """The same 16 frames as a capture and as a hex dump, through decode, hex, validate and
    stats: the same findings (here a v2.2 marker without max_marker_version=2.2)."""
    via_pcap = _findings(servers.jsonl(servers.dcpinspect("decode", inputs["pcap"], "-f", "jsonl").stdout))
    via_hex = _findings(servers.jsonl(servers.dcpinspect("hex", inputs["hex"], "-f", "jsonl").stdout))
    via_decode_hex = _findings(servers.jsonl(servers.dcpinspect("decode", inputs["hex"], "-f", "jsonl").stdout))
    assert via_pcap == via_hex == via_decode_hex == [("negotiation-missing", "DCP_SNAPSHOT_MARKER")]
    for path in (inputs["pcap"], inputs["hex"]):
        res = servers.dcpinspect("validate", path, "-f", "jsonl", "--info")
        assert sorted((r["rule"], r["opcode_name"]) for r in servers.jsonl(res.stdout)) == via_pcap
        stats = json.loads(servers.dcpinspect("stats", path, "-f", "json").stdout)
        assert sum(c["findings"] for c in stats["connections"].values()) == len(via_pcap)


def test_a_dump_that_does_not_open_a_connection_is_not_judged_for_negotiation(inputs):
    """From the stream request on, nothing shows what was negotiated: no such finding."""
    d = inputs["hex"].parent / "mid.hex"
    d.write_text(hexlines(dcp_session()[8:]))
    res = servers.dcpinspect("validate", d, "-f", "jsonl", "--info")
    assert "negotiation-missing" not in res.stdout


def test_stats_on_a_hex_dump_counts_its_frames(inputs):
    res = servers.dcpinspect("stats", inputs["hex"], "--no-chart")
    assert res.returncode == 0
    assert "16 (no direction)" in res.stdout and not re.search(r"\b0/0\s+0 B/0 B", res.stdout)
    report = json.loads(servers.dcpinspect("stats", inputs["hex"], "-f", "json").stdout)
    (conn,) = report["connections"].values()
    assert conn["frames"]["total"] == 16 and conn["bytes"]["total"] == sum(map(len, dcp_session()))


def test_summary_counts_findings_only_when_judged(inputs):
    plain = servers.dcpinspect("decode", inputs["pcap"], "-f", "summary")
    assert "warnings" not in plain.stdout and "not judged" in plain.stdout
    strict = servers.dcpinspect("decode", inputs["pcap"], "-f", "summary", "--strict")
    assert re.search(r"negotiation-missing\s+1", strict.stdout) and "not judged" not in strict.stdout


@pytest.mark.parametrize("command", ["validate", "rules"])
def test_formats_offered_are_formats_made(command, inputs):
    assert _formats(command) == ["table", "jsonl"]
    args = [command] + ([str(inputs["pcap"])] if command == "validate" else []) + ["-f", "diagram"]
    res = servers.dcpinspect(*args)
    assert res.returncode == 2 and "diagram" in res.stderr


@pytest.mark.parametrize("command", ["decode", "hex", "validate", "stats"])
def test_one_wording_for_a_missing_file(command, tmp_path):
    res = servers.dcpinspect(command, tmp_path / "nope.pcap")
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip().splitlines() == [f"dcpinspect: {tmp_path / 'nope.pcap'}: no such file"]
    res = servers.dcpinspect(command, tmp_path)
    assert res.returncode == 2 and res.stderr.strip() == f"dcpinspect: {tmp_path}: is a directory, not a file"


def test_file_names_reach_the_terminal_escaped(tmp_path):
    """A hex dump named with a terminal escape, a bidi override and a zero-width space, and
    the same name missing: no command prints its raw characters."""
    name = "x\x1b[31mred\x1b[0m\u202egnp.\u200bdump.hex"
    frames = dcp_session()
    broken = frames[8:12]
    broken[2] = broken[2][:27] + bytes([0x01]) + broken[2][28:]  # a removed marker version: errors
    (tmp_path / name).write_text(hexlines(broken))
    runs = [["validate", name], ["validate", name, "--info"], ["stats", name, "--no-chart"], ["decode", name],
            ["decode", name, "-f", "summary"], ["hex", name], ["hex", name, "--diagram"],
            ["stats", name, "--plot", name + ".png"], ["validate", "missing" + name], ["hex", "missing" + name]]
    for args in runs:
        res = subprocess.run(servers.dcpinspect_argv() + args, cwd=tmp_path, capture_output=True, text=True,
                             timeout=120, stdin=subprocess.DEVNULL)
        assert res.returncode in (0, 1, 2) and "Traceback" not in res.stderr, (args, res.stderr)
        for stream in (res.stdout, res.stderr):
            assert not UNSAFE.search(stream), (args, stream)
        if args[0] != "hex":
            assert "\\x1b[31mred" in res.stdout + res.stderr, args


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_validate_says_when_the_capture_itself_is_damaged(inputs, tmp_path, jobs):
    """A capture cut inside its last record: the findings as before, and one note on stderr
    naming the file and the damage (decode says the same)."""
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(inputs["pcap"].read_bytes()[:-30])
    res = servers.dcpinspect("validate", cut, "-j", jobs, "-f", "jsonl")
    assert res.returncode == 0, res.stderr
    assert [r["rule"] for r in servers.jsonl(res.stdout)] == ["negotiation-missing"]
    notes = [line for line in res.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and str(cut) in notes[0] and "left in the file" in notes[0], res.stderr
    decoded = servers.notes_of(servers.jsonl(servers.dcpinspect("decode", cut, "-f", "jsonl").stdout), "capture")
    assert [n["message"] for n in decoded] == [notes[0].split(f"{cut}: ", 1)[1]]


# -- a file given to the command that does not read it ----------------------------------------

def _rdb_file(path: Path, gz: bool = False) -> Path:
    import gzip

    import rdbgen

    data = rdbgen.rdb(b"\xfe\x00" + rdbgen.key(0, "k", rdbgen.string("v")))
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@pytest.mark.parametrize("command", ["decode", "validate", "stats"])
@pytest.mark.parametrize("gz", [False, True])
def test_snapshot_given_to_a_frame_command_points_to_rdb(tmp_path, command, gz):
    """``decode dump.rdb``: one line naming the command that reads it, exit 2."""
    path = _rdb_file(tmp_path / ("dump.rdb.gz" if gz else "dump.rdb"), gz)
    r = servers.dcpinspect(command, str(path))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == (f"dcpinspect: {path}: a snapshot file (redis), not a capture or a hex dump: "
                        f"read it with `dcpinspect rdb {path}`\n")
    assert servers.dcpinspect("rdb", str(path)).returncode == 0  # which does read it


@pytest.mark.parametrize("kind", ["pcap", "hex"])
def test_capture_given_to_rdb_points_to_decode(inputs, kind):
    path = inputs[kind]
    r = servers.dcpinspect("rdb", str(path))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == (f"dcpinspect: {path}: a capture or hex dump, not a snapshot file: read it with "
                        f"`dcpinspect decode {path}` (or validate, stats; --report reads the data a full sync "
                        "in a capture file sends)\n")


def test_rdb_of_other_text_says_it_is_no_rdb(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("nothing here\n")
    r = servers.dcpinspect("rdb", str(path))
    assert r.returncode == 2 and "not an RDB file" in r.stderr


# -- what the closing lines count ---------------------------------------------------------------

def test_summary_counts_what_the_filters_select(inputs):
    """``decode --vbucket 5 -f summary`` counts the frames ``-f jsonl`` shows, and says how
    many more were read."""
    for path in (inputs["pcap"], inputs["big"]):
        shown = servers.frames_of(servers.jsonl(servers.dcpinspect("decode", str(path), "--vbucket", "5",
                                                                   "-f", "jsonl").stdout))
        every = servers.frames_of(servers.jsonl(servers.dcpinspect("decode", str(path), "-f", "jsonl").stdout))
        assert 0 < len(shown) < len(every)
        r = servers.dcpinspect("decode", str(path), "--vbucket", "5", "-f", "summary")
        assert r.returncode == 0
        assert (f"{len(shown)} frames in 1 connections (selected by the filters; {len(every) - len(shown)} "
                "other frames read)") in r.stdout
        opcodes = {}
        for f in shown:
            opcodes[f["opcode_name"]] = opcodes.get(f["opcode_name"], 0) + 1
        for name, n in opcodes.items():
            assert re.search(rf"\b{name}\s+{n}\b", r.stdout), (name, n)


def test_summary_with_a_limit_counts_that_many(inputs):
    r = servers.dcpinspect("decode", str(inputs["big"]), "-n", "3", "-f", "summary")
    assert "3 frames in 1 connections" in r.stdout


def test_table_closing_line_speaks_of_the_frames_shown(inputs):
    """``decode -n 1 -o ...``: one frame shown, and then how many were read to find it, each
    with its findings; without a filter or limit, one count."""
    every = servers.frames_of(servers.jsonl(servers.dcpinspect("decode", str(inputs["pcap"]), "-f", "jsonl").stdout))
    mutations = [i for i, f in enumerate(every) if f["opcode_name"] == "DCP_MUTATION"]
    r = servers.dcpinspect("decode", str(inputs["pcap"]), "-n", "1", "-o", "DCP_MUTATION")
    last = r.stdout.strip().splitlines()[-1]
    assert re.fullmatch(rf"1 frames shown, 0 errors, 0 warnings; {mutations[0] + 1} frames read, \d+ errors, "
                        r"\d+ warnings", last), last
    assert r.stdout.count("DCP_MUTATION request") == 1
    whole = servers.dcpinspect("decode", str(inputs["pcap"])).stdout.strip().splitlines()[-1]
    assert re.fullmatch(rf"{len(every)} frames, \d+ errors, \d+ warnings", whole), whole


# -- the words a new user reads first ---------------------------------------------------------

def test_version():
    import dcpinspect

    for flag in ("--version", "-V"):
        r = servers.dcpinspect(flag)
        assert r.returncode == 0 and r.stdout == f"dcpinspect {dcpinspect.__version__}\n"
    assert 'dynamic = ["version"]' in (ROOT / "pyproject.toml").read_text()  # one home for the number


def test_shell_completion_is_offered():
    r = servers.dcpinspect("--help")
    assert "--install-completion" in r.stdout and "--show-completion" in r.stdout
    # the script --install-completion writes for bash (asked for by name, not by the shell
    # this test runs in)
    import os

    shown = subprocess.run(servers.dcpinspect_argv(), capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, _DCPINSPECT_COMPLETE="source_bash"))
    assert shown.returncode == 0 and "complete " in shown.stdout and "_dcpinspect_completion" in shown.stdout


def test_help_names_every_family():
    top = servers.dcpinspect("--help").stdout
    for word in ("MCBP", "DCP", "TAP", "Redis", "Valkey", "RESP", "RDB", "Dragonfly"):
        assert word in top, word
    for command, words in {"decode": ("MCBP", "DCP", "TAP", "Redis", "RESP"), "validate": ("DCP", "TAP", "Redis"),
                           "stats": ("DCP", "Redis"), "rdb": ("Redis", "Valkey", "Dragonfly")}.items():
        text = " ".join(servers.dcpinspect(command, "--help").stdout.split())
        for word in words:
            assert word in text, (command, word)
