"""``rdb`` starts without the typer app: its options are one table (``arguments.RDB``) that
the typer app builds the command from and that the quick parser reads a plain command line
by. The two must take every command line alike: the options the typer app declares are
read here from the app itself, command lines are drawn from them, and wherever the quick
parser takes one, the typer app hands the command the same values. Run for real, both
paths print the same bytes and exit alike, and the quick one imports no typer, click or
rich."""

from __future__ import annotations

import os
import subprocess
import sys
from enum import Enum
from pathlib import Path

import pytest
import typer.main
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

import rdbgen
from dcpinspect import cli
from dcpinspect.arguments import PATH, QUICK, parsed

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpora" / "rdb-librdb"


def _commands():
    return typer.main.get_command(cli.app).commands


@pytest.mark.parametrize("name", sorted(QUICK))
def test_the_quick_table_is_what_the_typer_app_declares(name):
    """Every parameter the typer app gives the command is a row of the table, with the same
    flags, kind, default, range and multiplicity, and no row is left out."""
    table, _ = QUICK[name]
    rows = {o.name: o for o in table}
    params = _commands()[name].params
    assert sorted(p.name for p in params) == sorted(rows)
    for p in params:
        o = rows[p.name]
        assert tuple(p.opts) == (o.flags or (p.name,)), p.name
        assert (p.nargs == -1 if p.param_type_name == "argument" else p.multiple) == o.many, p.name
        if o.kind is bool:
            assert p.is_flag and not p.secondary_opts, p.name
        elif isinstance(o.kind, type) and issubclass(o.kind, Enum):
            assert list(p.type.choices) == [c.value for c in o.kind], p.name
        elif o.kind is int:
            assert _is_int(p) and getattr(p.type, "min", None) == o.min, p.name
        else:
            assert p.type.name == {str: "str", PATH: "path"}[o.kind], p.name
        if not o.many and o.default is not ...:
            assert p.default == o.default, p.name


def _is_int(p) -> bool:
    return p.type.name in ("int", "int range")


def _values(p) -> st.SearchStrategy[str]:
    """Values of an option as a user types them: valid ones mostly, some that are not."""
    odd = st.sampled_from(["", "-1", "+3", "1_0", " 4", "x", "TABLE", "-", "--", "-x", "é", "a=b"])
    if p.type.name == "choice":
        good = st.sampled_from(list(p.type.choices))
    elif _is_int(p):
        low = getattr(p.type, "min", None) or 0
        good = st.one_of(st.integers(max(low - 1, 0), low + 1), st.integers(low, 1 << 40)).map(str)
    else:
        good = st.one_of(st.sampled_from(["a", "key:*", "x y", "0"]), st.text(min_size=1, max_size=6))
    return st.one_of(good, good, good, odd)


@st.composite
def _argv(draw, name: str) -> list[str]:
    """A command line of ``name``'s options, drawn from the typer app's own parameters."""
    params = _commands()[name].params
    options = [p for p in params if p.param_type_name == "option"]
    args: list[str] = []
    for p in draw(st.lists(st.sampled_from(options), max_size=5)):
        flag = draw(st.sampled_from(p.opts))
        if p.is_flag:
            args.append(flag if draw(st.integers(0, 19)) else flag + "=1")
        elif flag.startswith("--") and draw(st.booleans()):
            args.append(f"{flag}={draw(_values(p))}")
        else:
            args += [flag, draw(_values(p))]
    files = draw(st.lists(st.sampled_from(["a.rdb", "-", "dir/b.rdb", "c"]), min_size=int(draw(st.integers(0, 9)) > 0),
                          max_size=3))
    for f in files:
        args.insert(draw(st.integers(0, len(args))), f)
    if draw(st.integers(0, 19)) == 0:
        args.insert(draw(st.integers(0, len(args))), draw(st.sampled_from(["--help", "-h", "--", "--nope", "-q"])))
    return args


def _typer_hands(name: str, argv: list[str], monkeypatch) -> dict | None:
    """What the typer app hands the command for ``argv`` (None: it refused the line)."""
    got = {}
    monkeypatch.setattr(cli, name, lambda options: got.update(options))
    result = CliRunner().invoke(cli.app, [name, *argv])
    return got if result.exit_code == 0 and got else None


@pytest.mark.parametrize("name", sorted(QUICK))
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_quick_parser_takes_a_line_as_the_typer_app_does(name, data, monkeypatch):
    """Where the quick parser takes a command line, the typer app takes it too and hands
    the command the very same values; where it does not, the typer app reads it."""
    argv = data.draw(_argv(name))
    table, _ = QUICK[name]
    quick = parsed(table, argv)
    if quick is not None:
        assert _typer_hands(name, argv, monkeypatch) == quick, argv


def test_the_quick_parser_takes_the_plain_lines():
    """The lines people type are the quick path's (else it would save nothing)."""
    table, _ = QUICK["rdb"]
    for argv in (["a.rdb"], ["a.rdb", "-f", "jsonl"], ["--format=summary", "a.rdb", "b.rdb"],
                 ["-", "--values", "-f", "jsonl", "--match", "user:*", "--type", "hash", "--type", "set"],
                 ["a.rdb", "-r", "memory", "-n", "5", "--db", "0", "--db", "3", "--key", "-"]):
        assert parsed(table, argv) is not None, argv
    for argv in ([], ["--help"], ["a.rdb", "-h"], ["a.rdb", "-f"], ["a.rdb", "--top", "0"], ["a.rdb", "--", "b"],
                 ["a.rdb", "--key", "--full"], ["a.rdb", "--full=1"], ["a.rdb", "-fjsonl"], ["a", "--key", "x", "--key", "y"]):
        assert parsed(table, argv) is None, argv


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}


def _quick(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dcpinspect", *args], capture_output=True, env=_env(), cwd=ROOT,
                          timeout=120, **kw)


def _typer(*args: str) -> subprocess.CompletedProcess:
    code = "import sys; sys.argv[0] = 'dcpinspect'; from dcpinspect.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, env=_env(), cwd=ROOT, timeout=120)


@pytest.fixture(scope="module")
def damaged(tmp_path_factory) -> Path:
    """An RDB file whose checksum is wrong: an error finding, exit 1."""
    data = bytearray(rdbgen.rdb(rdbgen.key(0, "k", rdbgen.string("v")) + rdbgen.key(0, "k2", rdbgen.string("w"))))
    data[-1] ^= 0xFF
    path = tmp_path_factory.mktemp("quick") / "damaged.rdb"
    path.write_bytes(bytes(data))
    return path


def test_both_paths_print_the_same(damaged):
    """Table, jsonl (with values), summary, RESP, one key, filters, reports, findings,
    a file that is no RDB, a missing file, options the quick parser leaves to typer:
    the same bytes on both streams and the same exit status."""
    stream = str(CORPUS / "misc_with_stream.rdb")
    lists = str(CORPUS / "100_lists.rdb")
    runs = [[stream], [stream, "-f", "jsonl", "--values"], [stream, "-f", "summary"], [lists, "-f", "resp"],
            [stream, "--format=jsonl", "--type", "stream", "--type", "hash"], [lists, "-f", "summary", "--digest"],
            [stream, "--key", "mystream"], [stream, "--key", "no-such-key"], [lists, "-r", "memory", "-n", "3"],
            [str(damaged)], [str(damaged), "-f", "jsonl"], [str(ROOT / "README.md")], ["/nonexistent.rdb"],
            [stream, "-f", "csv"], [stream, "--top", "0"], [stream, "-f", "xml"], [stream, "--nope"], []]
    for args in runs:
        quick, slow = _quick("rdb", *args), _typer("rdb", *args)
        said = quick.stderr.replace(b"python -m dcpinspect", b"dcpinspect")  # click names the program so
        assert (quick.returncode, quick.stdout, said) == (slow.returncode, slow.stdout, slow.stderr), args
    assert _quick("rdb", str(damaged)).returncode == 1 and _quick("rdb", "/nonexistent.rdb").returncode == 2


def test_the_quick_path_imports_no_typer_click_or_rich():
    code = ("import sys\nfrom dcpinspect.__main__ import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write(repr(sorted({m.split('.')[0] for m in sys.modules} & {'typer', 'click', 'rich'})))")
    for fmt in ("jsonl",):
        got = subprocess.run([sys.executable, "-c", code, "rdb", "-f", fmt, str(CORPUS / "misc_with_stream.rdb")],
                             capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=120)
        assert got.stderr.endswith("[]") and got.stdout, (fmt, got.stderr)


def test_the_quick_path_exits_0_when_the_reader_goes_away():
    """``| head -1``: exit 0, nothing on stderr."""
    path = CORPUS / "100_lists.rdb"
    for args in (["-f", "jsonl", "--values"], ["-f", "resp"], []):
        proc = subprocess.Popen([sys.executable, "-m", "dcpinspect", "rdb", str(path), *args], env=_env(), cwd=ROOT,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 0 and err == "", (args, err)
