"""Every ``protocol`` value the code writes into a JSON Lines object is in the JSON Lines
schema (docs/jsonl-schema.md): the values are read from the code (string constants given
to a ``"protocol"`` key of a dict literal, and the module-level constants those name),
not listed here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dcpinspect"


def _strings(node: ast.AST, module: ast.Module) -> set[str]:
    """String constants in ``node``, and in the module-level values of the names it uses."""
    out: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            out.add(sub.value)
        elif isinstance(sub, ast.Name):
            for stmt in module.body:
                if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    if any(isinstance(t, ast.Name) and t.id == sub.id for t in targets) and stmt.value is not None:
                        out |= {c.value for c in ast.walk(stmt.value)
                                if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return out


def emitted_protocols() -> set[str]:
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        module = ast.parse(path.read_text())
        for node in ast.walk(module):
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if isinstance(key, ast.Constant) and key.value == "protocol" and value is not None:
                        found |= _strings(value, module)
    return found


def schema_section() -> str:
    return (ROOT / "docs" / "jsonl-schema.md").read_text()


def test_the_scan_finds_the_known_protocols():
    assert {"mcbp", "dcp", "tap", "resp", "rdb", "journal"} <= emitted_protocols()


def test_the_schema_lists_every_protocol_value():
    section = schema_section()
    listed = set(re.findall(r"`([a-z]+)`", section))
    missing = emitted_protocols() - listed
    assert not missing, f"protocol values written but not in docs/jsonl-schema.md: {sorted(missing)}"
