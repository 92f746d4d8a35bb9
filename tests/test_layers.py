"""Layers only look down, and a protocol family is one package that nothing else names.

The order is the design's (docs/design.md): ``sources`` → ``transport`` → ``messages`` →
``framing`` → ``sessions`` → ``rules`` → ``outputs`` → ``families`` → ``engines``, with the
command line on top and ``limits`` and ``findings`` beneath them all. Everything outside
``families/`` is protocol-free: no module there imports a family's package by name (the
registry, ``families/__init__.py``, finds them by the names it lists), and no family imports
another. Inside a family the same order holds for its parts: ``messages`` → ``sessions`` →
``rules`` → the rest of the family.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dcpinspect"
ORDER = ("slots", "limits", "findings", "sources", "transport", "messages", "framing", "sessions", "rules",
         "outputs", "families", "engines", "arguments", "cli", "__main__")
#: the order of a family's own parts (subpackages); its other modules come after them all
FAMILY_ORDER = ("messages", "sessions", "rules")


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path):
    """(line, imported module) of every import of the package's own modules in ``path``,
    at the top or inside functions."""
    module = "dcpinspect." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
    package = module.removesuffix(".__init__") if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            yield node.lineno, ".".join(base + ([node.module] if node.module else []))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dcpinspect"):
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("dcpinspect"):
                    yield node.lineno, alias.name


def test_every_module_has_a_layer():
    for path in PACKAGE.rglob("*.py"):
        layer = _layer("dcpinspect." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts))
        assert layer in ORDER or layer == "__init__", path


def test_no_module_imports_from_a_layer_above_its_own():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        mine = _layer("dcpinspect." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts))
        if mine == "__init__":
            continue
        for line, target in _imports(path):
            theirs = _layer(target)
            if theirs in ORDER and ORDER.index(theirs) > ORDER.index(mine):
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({mine}) imports {target} ({theirs})")
    assert upward == []


def _family(module: str) -> str | None:
    """The family a module belongs to (``dcpinspect.families.<name>...``, a package), if any:
    a module of the families package itself (``families/interfaces.py``) is no family's."""
    parts = module.removesuffix(".__init__").split(".")
    family = parts[2] if len(parts) > 2 and parts[1] == "families" else None
    return family if family is not None and (PACKAGE / "families" / family).is_dir() else None


def _family_part(module: str) -> int:
    """Where a module of a family stands among its parts (:data:`FAMILY_ORDER`)."""
    parts = module.removesuffix(".__init__").split(".")
    part = parts[3] if len(parts) > 3 else None
    return FAMILY_ORDER.index(part) if part in FAMILY_ORDER else len(FAMILY_ORDER)


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, "dcpinspect." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)


def test_nothing_outside_a_family_names_one():
    """Sources, transport, messages, framing, sessions, rules, outputs, engines and the
    command line are protocol-free: none imports from a family's package."""
    naming = [f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}"
              for path, module in _modules() if _family(module) is None
              for line, target in _imports(path) if _family(target) is not None]
    assert naming == []


def test_no_family_imports_another():
    crossing = [f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}"
                for path, module in _modules() if _family(module) is not None
                for line, target in _imports(path) if _family(target) not in (None, _family(module))]
    assert crossing == []


def test_a_family_s_parts_only_look_down():
    upward = [f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}"
              for path, module in _modules() if _family(module) is not None
              for line, target in _imports(path)
              if _family(target) == _family(module) and _family_part(target) > _family_part(module)]
    assert upward == []


def test_the_family_checks_see_a_family_named_outside_and_crossed(tmp_path, monkeypatch):
    fake = tmp_path / "dcpinspect"
    for d in ("engines", "families/one/messages", "families/one/rules", "families/two"):
        (fake / d).mkdir(parents=True)
    (fake / "engines" / "x.py").write_text("from ..families.one import messages\n")
    (fake / "families" / "two" / "y.py").write_text("from ..one.rules import z\n")
    (fake / "families" / "one" / "messages" / "w.py").write_text("from ..rules import z\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    with pytest.raises(AssertionError, match=r"engines/x.py:1 imports dcpinspect.families.one"):
        test_nothing_outside_a_family_names_one()
    with pytest.raises(AssertionError, match=r"families/two/y.py:1 imports dcpinspect.families.one.rules"):
        test_no_family_imports_another()
    with pytest.raises(AssertionError, match=r"families/one/messages/w.py:1 imports dcpinspect.families.one.rules"):
        test_a_family_s_parts_only_look_down()


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    """The check itself: an outputs module that reaches up into the engines is caught."""
    fake = tmp_path / "dcpinspect"
    (fake / "outputs").mkdir(parents=True)
    (fake / "outputs" / "x.py").write_text("from ..engines.connections import Captured\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    try:
        test_no_module_imports_from_a_layer_above_its_own()
    except AssertionError as exc:
        assert "imports dcpinspect.engines.connections (engines)" in str(exc)
    else:
        raise AssertionError("an upward import went unseen")


def test_outputs_import_no_engine_and_no_family():
    """Outputs print what they are given: no module under ``outputs`` reaches for an engine
    or a protocol family (what they print is computed below them, in sessions and rules)."""
    reaching = []
    for path in sorted((PACKAGE / "outputs").rglob("*.py")):
        for line, target in _imports(path):
            if _layer(target) in ("engines", "families"):
                reaching.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}")
    assert reaching == []


#: the protocols' names and the words of their own vocabularies (``vb``: a vbucket), as a
#: word or a part of a name (``DCP_MUTATION``, ``vb_rows``), in any case
PROTOCOL_WORDS = re.compile(r"(?<![A-Za-z])(mcbp|dcp|tap|vbuckets?|vb|resp|rdb|redis|valkey|dragonfly|memcached|"
                            r"couchbase)(?![A-Za-z])", re.I)


def _protocols_named(package: Path) -> list[str]:
    """``path:line: word`` of every protocol word in the modules under ``outputs``: in
    their names, strings, docstrings and comments."""
    named = []
    for path in sorted((package / "outputs").rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            named += [f"{path.relative_to(package.parent)}:{n}: {m.group(0)}" for m in PROTOCOL_WORDS.finditer(line)]
    return named


def test_outputs_name_no_protocol():
    """Outputs print what any family gives them: no module under ``outputs`` names a
    protocol (what a family shows of its own is its ``statistics.view``, its records'
    ``counted``, its messages' layouts)."""
    assert _protocols_named(PACKAGE) == []


def test_the_check_sees_a_protocol_named_in_an_output(tmp_path, monkeypatch):
    fake = tmp_path / "dcpinspect"
    (fake / "outputs").mkdir(parents=True)
    (fake / "outputs" / "x.py").write_text('"""Responses, taps and tapes: no protocol."""\n\n'
                                           'def vb_sort(k):\n    return "no DCP items"  # per vbucket\n')
    assert _protocols_named(fake) == ["dcpinspect/outputs/x.py:3: vb", "dcpinspect/outputs/x.py:4: DCP",
                                      "dcpinspect/outputs/x.py:4: vbucket"]
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    with pytest.raises(AssertionError):
        test_outputs_name_no_protocol()


#: the libraries that print or draw, and the layers allowed to import them
RENDERING = ("rich", "matplotlib", "typer")
RENDERING_LAYERS = ("outputs", "cli")


def _third_party(path: Path):
    """(line, top-level module) of every absolute import in ``path`` that is not the package's own."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.lineno, node.module.split(".")[0]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")[0]


def test_only_outputs_and_the_command_line_render():
    """Rich, matplotlib and typer are imported only by outputs and the command line: what
    computes (the stats collector, the sessions, the rules) runs where nothing prints."""
    rendering = []
    for path in sorted(PACKAGE.rglob("*.py")):
        mine = _layer("dcpinspect." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts))
        if mine in RENDERING_LAYERS:
            continue
        for line, name in _third_party(path):
            if name in RENDERING:
                rendering.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({mine}) imports {name}")
    assert rendering == []


def test_the_checks_see_an_output_reaching_up_and_a_session_rendering(tmp_path, monkeypatch):
    fake = tmp_path / "dcpinspect"
    (fake / "outputs").mkdir(parents=True)
    (fake / "sessions").mkdir()
    (fake / "outputs" / "x.py").write_text("def f():\n    from ..families.mcbp import lane\n")
    (fake / "sessions" / "y.py").write_text("from rich.text import Text\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    with pytest.raises(AssertionError, match=r"outputs/x.py:2 imports dcpinspect.families.mcbp"):
        test_outputs_import_no_engine_and_no_family()
    with pytest.raises(AssertionError, match=r"sessions/y.py:1 \(sessions\) imports rich"):
        test_only_outputs_and_the_command_line_render()
