"""Every command the documentation shows is run, and its output compared with what is shown.

A shown example is a line starting with ``$ `` in a fenced block whose first line is one:
the command (it goes on over the next lines while its quotes are open or a line ends in a
backslash), then what it prints (standard output and error, as a terminal shows them), up to the next such line. A block of commands with nothing shown
for them is written without the ``$ ``. Lines are compared with runs of white space folded and blank lines left out; a line that is ``...`` alone
stands for any number of lines, and ``...`` inside a line for any text. Commands run from
the repository's top in bash, with no terminal and no standard input.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

import servers

TOP = Path(__file__).resolve().parent.parent
DOCS = [TOP / "README.md", *sorted((TOP / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
# Commands that start a Spark job are run by the Spark tests' marker only.
SLOW = ("dcpinspect analyze",)


def _open(command: str) -> bool:
    """Whether a command's text still goes on: an open quote or a trailing backslash."""
    if command.endswith("\\"):
        return True
    try:
        shlex.split(command)
    except ValueError:
        return True
    return False


def examples(path: Path) -> list[tuple[str, str, list[str]]]:
    """(where, command, shown output lines) for each example in one document: each line of
    a block that starts with ``$ `` begins one, and its output runs to the next."""
    found = []
    text = path.read_text()
    for block in FENCE.finditer(text):
        lines = block.group(1).splitlines()
        if not lines or not lines[0].startswith("$ "):
            continue
        first = text.count("\n", 0, block.start()) + 2
        i = 0
        while i < len(lines):
            where, command = f"{path.relative_to(TOP)}:{first + i}", lines[i][2:]
            i += 1
            while i < len(lines) and _open(command):
                command += "\n" + lines[i]
                i += 1
            shown = []
            while i < len(lines) and not lines[i].startswith("$ "):
                shown.append(lines[i])
                i += 1
            found.append((where, command, shown))
    return found


ALL = [e for doc in DOCS for e in examples(doc)]
#: each example once, where it is first shown: the README shows some of the pages' examples again
RUN = [e for i, e in enumerate(ALL) if all(e[1:] != before[1:] for before in ALL[:i])]


def _fold(line: str) -> str:
    return " ".join(line.split())


def _line_pattern(shown: str) -> re.Pattern:
    parts = [re.escape(p) for p in _fold(shown).split("...")]
    return re.compile(r"\A" + ".*".join(parts) + r"\Z")


def matches(shown: list[str], got: list[str]) -> bool:
    """Whether the output lines fit the shown ones (``...`` lines and inline ``...``)."""
    want = [_fold(s) for s in shown if s.strip()]
    have = [_fold(g) for g in got if g.strip()]
    memo: dict[tuple[int, int], bool] = {}

    def fit(i: int, j: int) -> bool:
        if (i, j) in memo:
            return memo[i, j]
        if i == len(want):
            ok = j == len(have)
        elif want[i] == "...":
            ok = any(fit(i + 1, k) for k in range(j, len(have) + 1))
        else:
            ok = j < len(have) and bool(_line_pattern(want[i]).match(have[j])) and fit(i + 1, j + 1)
        memo[i, j] = ok
        return ok

    return fit(0, 0)


def run(command: str) -> list[str]:
    env = dict(os.environ)
    bindir = str(Path(servers.dcpinspect_argv()[0]).parent) if len(servers.dcpinspect_argv()) == 1 else None
    if bindir:
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.pop("COLUMNS", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TOP), env.get("PYTHONPATH", "")) if p)
    res = subprocess.run(["bash", "-c", command], cwd=TOP, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    return res.stdout.splitlines()


def test_the_documents_show_examples():
    assert len(ALL) >= 8, [where for where, _, _ in ALL]


@pytest.mark.parametrize("where,command,shown", [e for e in RUN if not e[1].startswith(SLOW)],
                         ids=[e[0] for e in RUN if not e[1].startswith(SLOW)])
def test_example_output_is_what_the_document_shows(where, command, shown):
    got = run(command)
    assert matches(shown, got), f"{where}: `{command}` printed:\n" + "\n".join(got)


@pytest.mark.spark
@pytest.mark.parametrize("where,command,shown", [e for e in RUN if e[1].startswith(SLOW)],
                         ids=[e[0] for e in RUN if e[1].startswith(SLOW)])
def test_spark_example_output_is_what_the_document_shows(where, command, shown):
    got = run(command)
    assert matches(shown, got), f"{where}: `{command}` printed:\n" + "\n".join(got)


def test_matching_rules():
    assert matches(["a  b", "...", "z"], ["a b", "x", "y", "z"])
    assert matches(["a ... c"], ["a long b c"])
    assert not matches(["a", "b"], ["a", "c"])
    assert not matches(["a"], ["a", "b"])
    assert matches(["..."], [])
