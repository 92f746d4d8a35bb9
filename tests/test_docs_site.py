"""The documentation site: ``mkdocs build --strict`` builds every page of ``docs/`` with
no warning (links between pages, their anchors, pages left out of the table of contents),
and the table of contents lists every page once."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import yaml  # MkDocs' own dependency; both come with the test extra

TOP = Path(__file__).resolve().parent.parent
DOCS = TOP / "docs"


def nav_pages() -> list[str]:
    def walk(entries):
        for entry in entries:
            for value in entry.values() if isinstance(entry, dict) else [entry]:
                if isinstance(value, list):
                    yield from walk(value)
                else:
                    yield value

    return list(walk(yaml.safe_load((TOP / "mkdocs.yml").read_text())["nav"]))


def test_the_table_of_contents_lists_every_page_once():
    pages = nav_pages()
    assert len(pages) == len(set(pages))
    assert sorted(pages) == sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert pages[0] == "index.md" and len(pages) >= 8


def test_the_site_builds_strictly(tmp_path):
    site = tmp_path / "site"
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                         cwd=TOP, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr
    assert "WARNING" not in res.stderr, res.stderr
    for page in nav_pages():
        built = site / ("index.html" if page == "index.md" else page.removesuffix(".md") + "/index.html")
        title = re.search(r"^# (.+)$", (DOCS / page).read_text(), re.M).group(1)
        assert re.search(r"<h1 id=[^>]*>" + re.escape(html.escape(title, quote=False)) + "<", built.read_text()), page
    # the reference tables arrive as tables, not as text
    assert "<table>" in (site / "limits-and-hostile-input" / "index.html").read_text()


def test_a_broken_link_fails_the_build(tmp_path):
    """What the strict build is there for: a link to an anchor no page has stops it."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# A\n\nSee [B](b.md#no-such-heading).\n")
    (docs / "b.md").write_text("# B\n")
    config = (TOP / "mkdocs.yml").read_text()
    config = re.sub(r"(?ms)^nav:.*", "nav:\n  - A: index.md\n  - B: b.md\n", config)
    (tmp_path / "mkdocs.yml").write_text(config)
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "s")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert res.returncode != 0 and "no-such-heading" in res.stderr, res.stderr
