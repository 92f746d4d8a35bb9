"""The public corpora copied into tests/corpora (each folder's README names its source,
commit and licence). A missing or empty folder is an error, never a skip: the tests that
rest on independent data must run wherever the repository is cloned."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent / "corpora"


def corpus(name: str) -> Path:
    """The folder ``tests/corpora/<name>``, which must hold files besides its README."""
    path = ROOT / name
    if not path.is_dir() or not any(p.name != "README.md" for p in path.iterdir()):
        raise FileNotFoundError(f"the corpus {path} is missing: it ships with the repository (tests/corpora/README.md)")
    return path
